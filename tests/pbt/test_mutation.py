"""Tests of alf.pbt.mutation: bounds, at least one change, determinism, the checks of the
specs and the JSON / YAML files."""

from __future__ import annotations

import json
import math
import random
import sys

import pytest

from alf.pbt.mutation import (
    Mutation,
    load_mutations,
    mutate,
    mutation_from_dict,
    mutations_from_config,
)

CONFIG = {
    "Adam.lr": {"kind": "perturb", "min": 1.0e-5, "max": 1.0e-2},
    "PPOLoss.entropy_regularization": {"kind": "perturb", "min": 0.0, "max": 0.1},
    "PPOLoss.gamma": {"kind": "discount", "min": 0.9, "max": 0.999},
    "TrainerConfig.mini_batch_size": {"kind": "int", "min": 8, "max": 512, "multiply": True},
    "TrainerConfig.num_updates_per_train_iter": {"kind": "int", "min": 1, "max": 10, "step": 2},
    "PPOLoss.normalize_advantages": {"kind": "choice", "values": [True, False]},
    "ActorDistributionNetwork.activation": {"kind": "choice", "values": ["relu", "tanh", "elu"]},
}
VALUES = {
    "Adam.lr": 3.0e-4,
    "PPOLoss.entropy_regularization": 0.01,
    "PPOLoss.gamma": 0.99,
    "TrainerConfig.mini_batch_size": 64,
    "TrainerConfig.num_updates_per_train_iter": 4,
    "PPOLoss.normalize_advantages": True,
    "ActorDistributionNetwork.activation": "relu",
    "TrainerConfig.unroll_length": 8,
}


def _in_bounds(spec: Mutation, value) -> bool:
    if spec.kind == "choice":
        return value in spec.values
    low = -math.inf if spec.min is None else spec.min
    high = math.inf if spec.max is None else spec.max
    return low <= value <= high


def _changed(old: dict, new: dict) -> list[str]:
    return [k for k in old if type(old[k]) is not type(new[k]) or old[k] != new[k]]


def test_mutations_stay_in_bounds_and_change_at_least_one_value():
    specs = mutations_from_config(CONFIG)
    by_name = {s.name: s for s in specs}
    rng = random.Random(0)
    values = dict(VALUES)
    for _ in range(500):
        new = mutate(values, specs, rng, mutation_rate=0.2, change_min=1.1, change_max=1.5)
        changed = _changed(values, new)
        assert changed, "every call changes at least one value"
        assert "TrainerConfig.unroll_length" not in changed
        for name in changed:
            spec = by_name[name]
            assert _in_bounds(spec, new[name]), (name, new[name])
            if spec.kind == "int":
                assert type(new[name]) is int
            if spec.kind in ("perturb", "discount"):
                assert isinstance(new[name], float)
        assert 0.0 < new["PPOLoss.gamma"] < 1.0
        values = new
    assert values["TrainerConfig.unroll_length"] == 8


def test_rate_zero_changes_exactly_one_value_and_leaves_the_input_alone():
    specs = mutations_from_config(CONFIG)
    before = dict(VALUES)
    for seed in range(50):
        new = mutate(VALUES, specs, random.Random(seed), mutation_rate=0.0)
        assert len(_changed(VALUES, new)) == 1
    assert before == VALUES


def test_rate_one_changes_every_value():
    specs = mutations_from_config(CONFIG)
    for seed in range(20):
        new = mutate(VALUES, specs, random.Random(seed), mutation_rate=1.0)
        assert sorted(_changed(VALUES, new)) == sorted(CONFIG)


def test_perturb_numbers_follow_the_draws():
    spec = Mutation("Adam.lr", "perturb")
    for seed in range(20):
        draws = random.Random(seed)
        draws.random()  # the mutation_rate draw
        factor = draws.uniform(1.2, 1.4)
        up = draws.random() < 0.5
        expected = 0.5 * factor if up else 0.5 / factor
        new = mutate({"Adam.lr": 0.5}, [spec], random.Random(seed), 1.0, 1.2, 1.4)
        assert new["Adam.lr"] == expected


def test_discount_perturbs_one_minus_gamma():
    spec = Mutation("PPOLoss.gamma", "discount")
    ratios = set()
    for seed in range(100):
        new = mutate({"PPOLoss.gamma": 0.99}, [spec], random.Random(seed), 1.0, 1.1, 1.5)
        ratio = (1.0 - new["PPOLoss.gamma"]) / 0.01
        assert 1.1 - 1e-9 <= ratio <= 1.5 + 1e-9 or 1 / 1.5 - 1e-9 <= ratio <= 1 / 1.1 + 1e-9
        ratios.add(ratio > 1)
    assert ratios == {True, False}
    # without bounds gamma still stays in (0, 1), even next to 0 and 1
    for gamma in (1e-12, 0.5, 1 - 1e-12):
        for seed in range(50):
            new = mutate({"g.gamma": gamma}, [Mutation("g.gamma", "discount")], random.Random(seed))
            assert 0.0 < new["g.gamma"] < 1.0 and new["g.gamma"] != gamma


def test_a_value_at_its_bound_moves_the_other_way():
    at_max = Mutation("Adam.lr", "perturb", min=1e-4, max=1e-2)
    at_min = Mutation("TrainerConfig.mini_batch_size", "int", min=8, max=512, step=4)
    at_gamma_max = Mutation("PPOLoss.gamma", "discount", max=0.99)
    for seed in range(100):
        rng = random.Random(seed)
        assert 1e-4 <= mutate({"Adam.lr": 1e-2}, [at_max], rng, 1.0)["Adam.lr"] < 1e-2
        new = mutate({"TrainerConfig.mini_batch_size": 8}, [at_min], rng, 1.0)
        assert new["TrainerConfig.mini_batch_size"] == 12
        assert mutate({"PPOLoss.gamma": 0.99}, [at_gamma_max], rng, 1.0)["PPOLoss.gamma"] < 0.99


def test_int_step_and_multiply():
    step = Mutation("T.n", "int", min=0, max=10, step=3)
    seen = {mutate({"T.n": 5}, [step], random.Random(s), 1.0)["T.n"] for s in range(50)}
    assert seen == {2, 8}
    multiply = Mutation("T.n", "int", min=1, max=1000, multiply=True)
    for seed in range(50):
        new = mutate({"T.n": 100}, [multiply], random.Random(seed), 1.0, 1.1, 1.5)["T.n"]
        assert type(new) is int and (110 <= new <= 150 or 67 <= new <= 91)
    # a factor too small to change a small int: the step is used
    for seed in range(20):
        new = mutate({"T.n": 2}, [multiply], random.Random(seed), 1.0, 1.1, 1.2)["T.n"]
        assert new in (1, 3)


def test_choice_picks_another_value():
    spec = Mutation("N.activation", "choice", values=("relu", "tanh", "elu"))
    seen = set()
    for seed in range(60):
        new = mutate({"N.activation": "relu"}, [spec], random.Random(seed), 1.0)
        seen.add(new["N.activation"])
    assert seen == {"tanh", "elu"}
    flag = Mutation("L.normalize", "choice", values=(True, False))
    assert mutate({"L.normalize": True}, [flag], random.Random(1), 1.0) == {"L.normalize": False}
    # True is not 1 here: a value 1 is not the choice True
    numbers = Mutation("L.k", "choice", values=(1, True))
    assert mutate({"L.k": True}, [numbers], random.Random(0), 1.0) == {"L.k": 1}


def test_same_seed_same_result():
    specs = mutations_from_config(CONFIG)

    def run(seed):
        rng, values, trail = random.Random(seed), dict(VALUES), []
        for _ in range(30):
            values = mutate(values, specs, rng, 0.3, 1.1, 1.5)
            trail.append(values)
        return trail

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_per_spec_change_bounds_override_the_global_ones():
    spec = mutation_from_dict("Adam.lr", {"kind": "perturb", "change_min": 2.0, "change_max": 2.0})
    for seed in range(20):
        new = mutate({"Adam.lr": 1.0}, [spec], random.Random(seed), 1.0, 1.1, 1.5)
        assert new["Adam.lr"] in (2.0, 0.5)


@pytest.mark.parametrize(
    "spec, match",
    [
        ({"kind": "gaussian"}, r"'Adam\.lr': unknown kind 'gaussian'"),
        ({"min": 0.1}, r"'Adam\.lr': key 'kind' is missing"),
        ({"kind": "perturb", "low": 0.1}, r"'Adam\.lr': unknown key 'low'"),
        ({"kind": "perturb", "values": [1, 2]}, r"'Adam\.lr': unknown key 'values'"),
        ({"kind": "perturb", "min": 0.1, "max": 0.01}, r"'Adam\.lr': min \(0\.1\) must be <"),
        ({"kind": "perturb", "min": "1e-5"}, r"'Adam\.lr': min must be .* write 1\.0e-5"),
        ({"kind": "perturb", "change_min": 0.9}, r"'Adam\.lr': change_min must be >= 1"),
        ({"kind": "perturb", "change_max": 1.0}, r"'Adam\.lr': change_max must be > 1"),
        (
            {"kind": "perturb", "change_min": 1.5, "change_max": 1.2},
            r"'Adam\.lr': change_max \(1\.2\) must be >= change_min",
        ),
        ({"kind": "discount", "max": 1.0}, r"'Adam\.lr': max of a discount must be in \(0, 1\)"),
        ({"kind": "int", "min": 0.5}, r"'Adam\.lr': min must be an int"),
        ({"kind": "int", "step": 0}, r"'Adam\.lr': step must be an int >= 1"),
        ({"kind": "int", "multiply": "yes"}, r"'Adam\.lr': multiply must be true or false"),
        ({"kind": "choice", "values": [1]}, r"'Adam\.lr': values must be a list of at least 2"),
        ({"kind": "choice", "values": [1, 2, 1]}, r"'Adam\.lr': values\[2\] \(1\) is repeated"),
        ({"kind": "choice", "values": [1, [2]]}, r"'Adam\.lr': values\[1\] must be a JSON"),
    ],
)
def test_bad_specs_are_rejected_naming_the_argument_and_the_key(spec, match):
    with pytest.raises(ValueError, match=match):
        mutations_from_config({"Adam.lr": spec})


def test_bad_configs_and_calls_are_rejected():
    with pytest.raises(ValueError, match="must look like 'Name.arg', got 'lr'"):
        Mutation("lr", "perturb")
    with pytest.raises(ValueError, match=r"key 'values' does not apply to kind 'perturb'"):
        Mutation("Adam.lr", "perturb", values=(1, 2))
    with pytest.raises(ValueError, match=r"'Adam\.lr' is given twice"):
        mutations_from_config([{"name": "Adam.lr", "kind": "perturb"}] * 2)
    with pytest.raises(ValueError, match=r"'Adam\.lr' is listed under 'Adam\.eps'"):
        mutations_from_config({"Adam.eps": Mutation("Adam.lr", "perturb")})
    with pytest.raises(ValueError, match="must be a mapping or a list"):
        mutations_from_config("Adam.lr")
    specs = [Mutation("Adam.lr", "perturb")]
    rng = random.Random(0)
    with pytest.raises(ValueError, match=r"values has no entry for 'Adam\.lr'"):
        mutate({}, specs, rng)
    with pytest.raises(ValueError, match=r"value of 'Adam\.lr' is 0"):
        mutate({"Adam.lr": 0.0}, specs, rng)
    with pytest.raises(ValueError, match=r"value of 'Adam\.lr' must be a finite number"):
        mutate({"Adam.lr": "0.1"}, specs, rng)
    with pytest.raises(ValueError, match=r"value of 'T\.n' must be an int"):
        mutate({"T.n": 2.0}, [Mutation("T.n", "int")], rng)
    with pytest.raises(ValueError, match="mutation_rate must be in"):
        mutate({"Adam.lr": 0.1}, specs, rng, mutation_rate=1.5)
    with pytest.raises(ValueError, match="change_min must be >= 1"):
        mutate({"Adam.lr": 0.1}, specs, rng, change_min=0.5)


def test_shorthand_list_and_mapping_forms_agree():
    mapping = mutations_from_config({"Adam.lr": "perturb", "T.n": {"kind": "int", "step": 2}})
    listed = mutations_from_config(
        [{"name": "Adam.lr", "kind": "perturb"}, {"name": "T.n", "kind": "int", "step": 2}]
    )
    assert mapping == listed
    assert mutations_from_config([s.to_dict() for s in mapping]) == mapping


YAML_TEXT = """\
Adam.lr: {kind: perturb, min: 1.0e-5, max: 1.0e-2}
PPOLoss.entropy_regularization: {kind: perturb, min: 0.0, max: 0.1}
PPOLoss.gamma: {kind: discount, min: 0.9, max: 0.999}
TrainerConfig.mini_batch_size: {kind: int, min: 8, max: 512, multiply: true}
TrainerConfig.num_updates_per_train_iter:
  kind: int
  min: 1
  max: 10
  step: 2
PPOLoss.normalize_advantages: {kind: choice, values: [true, false]}
ActorDistributionNetwork.activation:
  kind: choice
  values: [relu, tanh, elu]
"""


def test_json_and_yaml_files_load_to_the_same_specs(tmp_path):
    pytest.importorskip("yaml")
    json_path = tmp_path / "mutations.json"
    json_path.write_text(json.dumps(CONFIG))
    yaml_path = tmp_path / "mutations.yaml"
    yaml_path.write_text(YAML_TEXT)
    from_json = load_mutations(str(json_path))
    assert from_json == mutations_from_config(CONFIG)
    assert load_mutations(str(yaml_path)) == from_json


def test_file_errors_name_the_file(tmp_path, monkeypatch):
    bad = tmp_path / "bad.json"
    bad.write_text('{"Adam.lr": {"kind": "perturb", "min": NaN}}')
    with pytest.raises(ValueError, match=r"bad\.json is not valid JSON: NaN"):
        load_mutations(str(bad))
    unknown = tmp_path / "unknown.json"
    unknown.write_text('{"Adam.lr": {"kind": "lognormal"}}')
    with pytest.raises(ValueError, match=r"unknown\.json: Mutation 'Adam\.lr': unknown kind"):
        load_mutations(str(unknown))
    with pytest.raises(ValueError, match=r"expected a \.json, \.yaml or \.yml file"):
        load_mutations(str(tmp_path / "mutations.py"))
    with pytest.raises(ValueError, match="cannot be read"):
        load_mutations(str(tmp_path / "missing.json"))
    monkeypatch.setitem(sys.modules, "yaml", None)  # as if PyYAML were not installed
    yaml_path = tmp_path / "m.yml"
    yaml_path.write_text(YAML_TEXT)
    with pytest.raises(ImportError, match=r"m\.yml needs PyYAML \(pip install pyyaml"):
        load_mutations(str(yaml_path))


def test_yaml_tags_are_not_constructed(tmp_path):
    pytest.importorskip("yaml")
    path = tmp_path / "evil.yaml"
    path.write_text("Adam.lr: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(ValueError, match="is not valid YAML"):
        load_mutations(str(path))
