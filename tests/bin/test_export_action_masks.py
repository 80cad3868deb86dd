"""Exported masked policies never take an illegal action.

PPO, DQN and discrete SAC (``alf/examples/{ppo,dqn,sac}_masked_choice_conf.py``) are
trained on ``MaskedChoice-v0`` (half of 4 actions legal each step, given in
``observation['action_mask']``; an illegal action ends the episode with -10; optimum 10 per
10-step episode) by ``alf.bin.train``, exported by ``alf.bin.export`` to ONNX, TorchScript
and ``torch.export`` as a user does, and each file is stepped by
``alf.export.runtime.ExportedPolicy``:

- for 10,000 env steps of 50 ``MaskedChoice-v0`` envs, with the illegal actions counted at
  the gymnasium env (the wrapper of ``tests/algorithms/test_masked_choice_learning.py``)
  and from the masks the file was given: none;
- the file reads the mask: given all-ones masks instead, it takes an action the real mask
  forbids on a quarter of the steps or more;
- on 5 episodes, its actions are ``predict_step``'s exactly and its returns are
  ``alf.bin.play``'s on the same seed (``alf.export.parity.episode_parity``).

``sample_observations`` (the random observations of ``alf.bin.export``'s check) gives a
mask leaf at least one legal action per row.
"""

import collections
import os
import time

import numpy as np
import pytest
import torch

import alf
from alf.bin.play import play_episodes
from alf.data_structures import StepType
from alf.export import policy_export
from alf.export.parity import episode_parity
from alf.export.policy_inputs import NamedSpecs, is_action_mask, sample_observations
from alf.export.runtime import ExportedPolicy
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from tests.algorithms.test_masked_choice_learning import COUNTS, _env
from tests.bin.test_export import FORMATS, NOISE, _export, _restored
from tests.bin.test_train_play import REPO, finish, start

EXAMPLES = os.path.join(REPO, "alf", "examples")
#: name -> training iterations (each reaches the optimum, 10, by then)
RUNS = {"ppo": 30, "dqn": 150, "sac": 150}
ENV_STEPS = 10_000
NUM_ENVS = 50
EPISODES = 5
DURATIONS = collections.defaultdict(float)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The trained runs ``{name: root_dir}`` (trained side by side, without evaluations)."""
    parent = tmp_path_factory.mktemp("masked_runs")
    dirs = {name: str(parent / name) for name in RUNS}
    procs = [
        start(
            "alf.bin.train",
            "--conf",
            os.path.join(EXAMPLES, f"{name}_masked_choice_conf.py"),
            "--root_dir",
            dirs[name],
            "--nostore_snapshot",
            "--conf_param",
            f"TrainerConfig.num_iterations={iterations}",
            "--conf_param",
            "TrainerConfig.evaluate=False",
            "--conf_param",
            "TrainerConfig.random_seed=0",
        )
        for name, iterations in RUNS.items()
    ]
    for proc in procs:
        code, _, stderr = finish(proc, timeout=240)
        assert code == 0, stderr[-3000:]
    return dirs


@pytest.fixture(autouse=True)
def clean_configs():
    num_threads = torch.get_num_threads()
    alf.reset_configs()
    yield
    alf.reset_configs()
    torch.set_num_threads(num_threads)


class _Steps:
    """``on_step`` of ``ExportedPolicy.run_episodes``: counts the steps acted on (not LAST:
    the env ignores that action), the actions their mask forbids, and those the file would
    take on the same observation with an all-ones mask that the real mask forbids."""

    def __init__(self, policy: ExportedPolicy):
        self._policy = policy
        self.steps = self.illegal = self.illegal_without_mask = 0

    def __call__(self, time_step, action):
        observation = {k: v.numpy() for k, v in time_step.observation.items()}
        mask = observation["action_mask"]
        acted = time_step.step_type.numpy() != int(StepType.LAST)
        rows = np.arange(len(action))
        unmasked, _ = self._policy.step(dict(observation, action_mask=np.ones_like(mask)))
        self.steps += int(acted.sum())
        self.illegal += int((mask[rows, action] == 0)[acted].sum())
        self.illegal_without_mask += int((mask[rows, unmasked] == 0)[acted].sum())


def _export_with_cli(root_dir, output):
    start_time = time.perf_counter()
    code, stdout, stderr = _export(
        "--root_dir", root_dir, "--output", output, "--verify", 1000, "--verify_episodes", 5
    )
    assert code == 0, stderr[-3000:]
    assert not [line for line in stderr.splitlines() if any(n in line for n in NOISE)], stderr
    assert "inputs: observation.action_mask int8[B, 4], observation.observation float32[B, 4]" in (
        stdout
    )
    assert "checked on 1000 random observations: max |action difference| 0\n" in stdout
    assert "checked on 5 episodes" in stdout and "max |action difference| 0;" in stdout
    return time.perf_counter() - start_time


@pytest.mark.parametrize("name", list(RUNS))
@pytest.mark.parametrize("fmt, ext", FORMATS)
def test_exported_masked_policy_takes_no_illegal_action(runs, tmp_path, name, fmt, ext):
    output = tmp_path / f"policy{ext}"
    export_seconds = _export_with_cli(runs[name], output)
    policy = ExportedPolicy.load(str(output))
    assert not policy.stateful

    start_time = time.perf_counter()
    key = f"{name}_{fmt}"
    COUNTS.clear()
    env = _env(key, NUM_ENVS, seed=3)
    steps = _Steps(policy)
    try:
        episodes = policy.run_episodes(env, ENV_STEPS // 10, on_step=steps)
    finally:
        env.close()
    run_seconds = time.perf_counter() - start_time

    env, algorithm = _restored(runs[name])  # its env seeded 0, as alf.bin.play's
    try:
        played = play_episodes(algorithm, env, EPISODES)
        parity = episode_parity(algorithm, policy, env, EPISODES, seed=0)
    finally:
        env.close()
    print(
        f"{name} {fmt}: {steps.steps} steps, {COUNTS[key + '_illegal']} illegal at the env, "
        f"{steps.illegal} by the masks, {steps.illegal_without_mask} with all-ones masks; "
        f"average return {np.mean([r for r, _ in episodes]):.3f}; play {played}, exported "
        f"{parity.exported_returns}, max action difference {parity.max_action_difference}; "
        f"export {export_seconds:.1f} s, {ENV_STEPS} steps {run_seconds:.1f} s"
    )
    assert steps.steps >= ENV_STEPS and COUNTS[key] >= ENV_STEPS
    assert steps.illegal == 0 and COUNTS[key + "_illegal"] == 0
    assert steps.illegal_without_mask >= steps.steps // 4  # the file reads the mask
    assert [length for _, length in episodes] == [10] * len(episodes)
    assert np.mean([r for r, _ in episodes]) >= 9.8  # the optimum is 10
    assert parity.max_action_difference == 0 and parity.steps >= EPISODES * 10
    assert parity.exported_returns == played == parity.reference_returns
    assert [length for _, length in played] == [10] * EPISODES


# -- the random observations of the export's check --------------------------------------

MASK = BoundedTensorSpec((4,), torch.int8, 0, 1)


def test_sampled_masks_have_a_legal_action_in_every_row():
    specs = NamedSpecs([MASK, TensorSpec((3,))], ["observation.action_mask", "observation.x"])
    mask, x = sample_observations(specs, 15_000, seed=2)
    assert mask.dtype == torch.int8 and mask.shape == (15_000, 4)
    assert set(mask.unique().tolist()) == {0, 1}
    assert bool((mask.sum(-1) >= 1).all())
    # uniform over the 15 nonempty sets of legal actions: each about 1,000 times
    codes = (mask.long() * torch.tensor([1, 2, 4, 8])).sum(-1)
    counts = torch.bincount(codes, minlength=16)
    assert counts[0] == 0 and 850 <= int(counts[1:].min()) <= int(counts[1:].max()) <= 1150
    assert x.dtype == torch.float32 and abs(float(x.std()) - 1) < 0.05
    # same seed, same draws
    again = sample_observations(specs, 15_000, seed=2)
    assert torch.equal(again[0], mask) and torch.equal(again[1], x)


def test_unnamed_or_other_leaves_are_sampled_as_before():
    """Without names (or under another name) an int mask is uniform bits: a sixteenth of
    its rows have no legal action."""
    for names in (None, ["observation.legal", "observation.x"]):
        specs = [MASK, TensorSpec((3,))] if names is None else NamedSpecs([MASK, MASK], names)
        mask = sample_observations(specs, 16_000, seed=2)[0]
        assert 800 <= int((mask.sum(-1) == 0).sum()) <= 1200
    assert not is_action_mask("observation") and not is_action_mask("action_mask")
    assert is_action_mask("observation.action_mask")
    assert is_action_mask("observation.agent.action_mask")


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32, torch.int64, torch.uint8])
def test_sampled_masks_of_any_dtype(dtype):
    if dtype == torch.bool:
        spec = TensorSpec((5,), dtype)
    else:
        spec = BoundedTensorSpec((2, 5), dtype, 0, 1)
    (mask,) = sample_observations([spec], 500, seed=0, names=["observation.action_mask"])
    assert mask.dtype == dtype and mask.shape == (500, *spec.shape)
    assert set(mask.double().unique().tolist()) == {0.0, 1.0}
    assert bool((mask.double().sum(-1) >= 1).all())


def test_bad_names_are_one_line():
    with pytest.raises(ValueError, match="^sample_observations: 1 specs but 2 names$"):
        sample_observations([MASK], 3, names=["a", "b"])
    with pytest.raises(ValueError, match="^NamedSpecs: 1 specs but 0 names$"):
        NamedSpecs([MASK], [])
    with pytest.raises(ValueError, match="an action mask needs a shape"):
        sample_observations([TensorSpec((), torch.int8)], 3, names=["observation.action_mask"])


def test_the_export_check_sees_real_masks(runs):
    """The observations ``alf.bin.export`` checks a masked policy on: every mask has a
    legal action, the policy's action is legal on every row, and on a third of the rows or
    more it is not the action the policy takes with every action legal."""
    env, algorithm = _restored(runs["ppo"])
    try:
        policy = policy_export.ExportablePolicy(algorithm, env.observation_spec())
    finally:
        env.close()
    specs = policy.observation_specs
    assert (
        specs.names
        == policy.observation_names
        == [
            "observation.action_mask",
            "observation.observation",
        ]
    )
    mask, ranks = sample_observations(specs, 1000, seed=1)  # as alf.bin.export draws them
    assert bool((mask.sum(-1) >= 1).all()) and bool((mask.sum(-1) < 4).any())
    with torch.no_grad():
        action = policy(mask, ranks)
        unmasked = policy(torch.ones_like(mask), ranks)
    assert bool((mask.gather(1, action.unsqueeze(1)) == 1).all())
    assert int((action != unmasked).sum()) >= 1000 // 3
