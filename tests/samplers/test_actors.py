"""The two ``Actor`` s give the same ``Unroll`` from the same seed.

The in-process ``Unroller`` and the samplers' ``SamplerUnroller`` (process backend) are
asked for the same unrolls — raw and transformed, with the bootstrap row, the data
transformers' statistics applied between them as a training iteration does — on a
stateless policy (PPO with MLPs and an ``ObservationNormalizer`` updated from rollouts,
``tests/confs/tiny_ppo_obs_norm_conf.py``) and a recurrent one (PPO with LSTMs,
``alf/examples/ppo_rnn_memory_conf.py``). Bit for bit:

- server inference, 2 samplers: the in-process actor on all envs (the global stream);
- local inference, 1 sampler: the in-process actor (each env draws from its own
  counter-based stream wherever it runs: ``alf.utils.random_streams``).

Unrolls, rollout states, bootstrap rows, normalizer statistics and episode metrics are
compared.
"""

from __future__ import annotations

import pytest

import alf.nest as nest
from alf.learners.acting import Actor
from alf.learners.unroller import Unroller
from alf.samplers.remote_unroller import SamplerUnroller
from tests.samplers.conftest import (
    TINY_PPO_OBS_NORM,
    assert_identical,
    build_trainer,
    module_state,
    sampler_params,
)

POLICIES = {
    "stateless": (TINY_PPO_OBS_NORM, ["create_environment.num_parallel_environments=2"]),
    "recurrent": (
        "ppo_rnn_memory_conf.py",
        [
            "create_environment.num_parallel_environments=2",
            "TrainerConfig.evaluate=False",
            "TrainerConfig.random_seed=2",
        ],
    ),
}
#: (raw, bootstrap) of the unrolls asked for, in turn
REQUESTS = [(True, True), (False, True), (True, False), (True, True)]


def _unrolls(conf, params, root_dir):
    """The unrolls of ``REQUESTS`` (each stacked with its bootstrap row), the module state
    and the episode metrics after them, and the actor's class."""
    trainer = build_trainer(conf, params, root_dir)
    try:
        algorithm = trainer.algorithm
        actor = algorithm.unroller
        assert isinstance(actor, Actor)
        stacked = []
        for raw, bootstrap in REQUESTS:
            unroll = actor.unroll(5, raw=raw, bootstrap=bootstrap)
            rows = unroll.experiences + ([unroll.bootstrap] if bootstrap else [])
            stacked.append(nest.map_structure(lambda x: x.cpu().clone(), nest.stack_nests(rows)))
            algorithm.data_transformer.after_train_iter()  # rollout statistics, as train_iter
        return stacked, module_state(algorithm), algorithm.metrics.results(), type(actor)
    finally:
        trainer.close()


@pytest.mark.parametrize("inference", ["server", "local"])
@pytest.mark.parametrize("policy", list(POLICIES))
def test_in_process_and_sampler_actors_give_the_same_unrolls(tmp_path, policy, inference):
    conf, params = POLICIES[policy]
    num_samplers = 2 if inference == "server" else 1
    expected = _unrolls(conf, params, tmp_path / "in_process")
    got = _unrolls(conf, params + sampler_params(num_samplers, inference), tmp_path / inference)
    assert expected[3] is Unroller and got[3] is SamplerUnroller
    for x, y in zip(expected[0], got[0]):
        assert_identical(x, y)
    assert expected[0][0].time_step.env_id[0].tolist() == [0, 1]
    if policy == "recurrent":  # the rollout states the steps were taken from
        assert any(bool(s.abs().sum() > 0) for s in nest.flatten(expected[0][-1].state))
    else:  # the normalizer applied the unrolls' 2 x 5 steps each (not the bootstrap rows)
        counts = [float(v) for k, v in expected[1].items() if k.endswith("count")]
        assert counts == [2.0 * 5 * len(REQUESTS)]
    assert expected[1].keys() == got[1].keys()
    for name, value in expected[1].items():
        assert value.equal(got[1][name]), name
    assert expected[2] == got[2]
