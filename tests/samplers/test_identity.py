"""Remote samplers give the learner exactly the in-process experience.

Every env draws from its own counter-based stream wherever it runs
(``alf.utils.random_streams``). Server inference with 2 samplers of 1 env: the server's
batched ``rollout_step`` on ``[2]`` rows in sampler order is the in-process step on 2
envs, so a whole run (prenormalization, checkpoints with env restarts, evaluation) trains
on bit-identical unrolls and ends with bit-identical weights, normalizer statistics,
episode metrics and random state. Local inference: one sampler of 2 envs is the in-process
actor, and 2 samplers are 2 in-process actors over envs 0 and 1.
"""

from __future__ import annotations

import torch

import alf.nest as nest
from alf.environments.utils import create_environment
from alf.learners.unroller import AlgorithmPolicy, Unroll, Unroller
from alf.metrics import EpisodeMetrics
from alf.samplers.server import cat_nests
from alf.utils.normalizers import RunningMeanVar
from tests.samplers.conftest import (
    TINY_PPO,
    TINY_PPO_OBS_NORM,
    assert_identical,
    build_trainer,
    module_state,
    record_unrolls,
    sampler_params,
)


def _train(conf, params, root_dir):
    """A whole run; returns (unrolls, module state, metrics, torch RNG state, trainer)."""
    trainer = build_trainer(conf, params, root_dir)
    algorithm = trainer.algorithm
    unrolls = record_unrolls(algorithm)
    trainer.train()
    return unrolls, module_state(algorithm), algorithm.metrics.results(), torch.get_rng_state()


def _assert_same_run(expected, got):
    unrolls, state, metrics, rng = expected
    assert len(got[0]) == len(unrolls) == 16
    for x, y in zip(unrolls, got[0]):
        assert_identical(x, y)
    assert state.keys() == got[1].keys()
    for name in state:
        assert torch.equal(state[name], got[1][name]), name
    assert metrics == got[2]
    assert torch.equal(rng, got[3])


def test_server_inference_run_is_bit_identical_to_in_process(tmp_path):
    # 16 iterations with an ObservationNormalizer (rollout updates), prenormalization,
    # a checkpoint (and env restart) every 4 iterations and evaluations
    expected = _train(TINY_PPO_OBS_NORM, [], tmp_path / "in_process")
    got = _train(TINY_PPO_OBS_NORM, sampler_params(2, "server"), tmp_path / "server")
    _assert_same_run(expected, got)
    normalizer = [k for k in expected[1] if k.endswith("mean")]
    assert normalizer and not torch.equal(expected[1][normalizer[0]], torch.zeros(4).double())


def test_local_inference_one_sampler_is_bit_identical_to_in_process(tmp_path):
    expected = _train(TINY_PPO_OBS_NORM, [], tmp_path / "in_process")
    got = _train(TINY_PPO_OBS_NORM, sampler_params(1, "local"), tmp_path / "local")
    _assert_same_run(expected, got)


def test_local_inference_two_samplers_equal_two_in_process_actors(tmp_path):
    trainer = build_trainer(TINY_PPO, sampler_params(2, "local"), tmp_path / "local")
    got = record_unrolls(trainer.algorithm)
    for _ in range(3):
        trainer.algorithm.train_iter()
    trainer.close()

    reference = build_trainer(TINY_PPO, [], tmp_path / "reference")
    algorithm, seed = reference.algorithm, reference.random_seed
    actors = [
        Unroller(
            AlgorithmPolicy(algorithm),
            create_environment(num_parallel_environments=1, seed=seed, first_env_id=w),
        )
        for w in range(2)
    ]
    for w, actor in enumerate(actors):
        actor.set_streams(seed, first_env_id=w)
    try:
        for iteration in range(3):
            parts = [actor.unroll(16, raw=True, bootstrap=True) for actor in actors]
            merged = Unroll(
                [cat_nests([p.experiences[t] for p in parts]) for t in range(16)],
                cat_nests([p.bootstrap for p in parts]),
            )
            expected = nest.stack_nests(merged.experiences + [merged.bootstrap])
            assert_identical(expected, got[iteration])
            algorithm.learner.train(merged)
            algorithm.data_transformer.after_train_iter()
        assert got[0].time_step.env_id[0].tolist() == [0, 1]
    finally:
        for actor in actors:
            actor.env.close()
        reference.close()


def test_server_keeps_recurrent_state_per_env(tmp_path):
    # an LSTM policy (alf/examples/ppo_rnn_memory_conf.py) on 4 envs, 2 samplers of 2: the
    # server gathers and scatters each env's policy state; the unrolls (with the rollout
    # states) and the trained weights are those of the in-process run
    params = [
        "create_environment.num_parallel_environments=4",
        "TrainerConfig.num_iterations=3",
        "TrainerConfig.evaluate=False",
        "TrainerConfig.random_seed=2",
    ]
    runs = []
    for extra in ([], sampler_params(2, "server")):
        trainer = build_trainer("ppo_rnn_memory_conf.py", params + extra, tmp_path / str(len(runs)))
        unrolls = record_unrolls(trainer.algorithm)
        for _ in range(3):
            trainer.algorithm.train_iter()
        runs.append((unrolls, module_state(trainer.algorithm)))
        trainer.close()
    (expected, expected_state), (got, state) = runs
    assert nest.flatten(expected[0].state) and expected[-1].state is not None
    assert any(bool(x.abs().sum() > 0) for x in nest.flatten(expected[-1].state))
    for x, y in zip(expected, got):
        assert_identical(x, y)
    for name, value in expected_state.items():
        assert torch.equal(value, state[name]), name


def test_local_inference_two_samplers_update_the_statistics_as_in_process(tmp_path, monkeypatch):
    # ObservationNormalizer in rollout mode: each sampler collects the values of its rows,
    # the learner applies them as one [S*E] update per step, in step order, when the
    # iteration ends: exactly the updates the in-process actor would make from these steps
    # (the raw time steps, which the learner's episode metrics see step by step)
    seen = []
    count_episodes = EpisodeMetrics.__call__

    def recording(metrics, time_step):
        seen.append(time_step.observation.clone())
        return count_episodes(metrics, time_step)

    monkeypatch.setattr(EpisodeMetrics, "__call__", recording)
    trainer = build_trainer(TINY_PPO_OBS_NORM, sampler_params(2, "local"), tmp_path / "local")
    try:
        algorithm = trainer.algorithm
        (member,) = algorithm.data_transformer.statistics_transformers()
        learner_statistics = member.normalizer.statistics[0]
        expected = RunningMeanVar(learner_statistics.mean.shape)
        for iteration in range(3):
            seen.clear()
            algorithm.train_iter()
            assert len(seen) == 16
            for observation in seen:
                expected.update(observation)
            assert int(expected.count) == 32 * (iteration + 1)
            for name in ("mean", "var", "count"):
                assert torch.equal(getattr(expected, name), getattr(learner_statistics, name))
    finally:
        trainer.close()
