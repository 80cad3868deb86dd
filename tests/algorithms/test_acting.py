"""The acting contract (``alf/learners/acting.py``): both actors declare ``Actor`` with its
signatures; ``ActorCore`` steps any subset of its rows as it steps the whole batch; the
public hand-over of data-transformer statistics and of the actor context that remote
actors use.

(The two actors giving the same ``Unroll`` from the same seed, on a stateless and a
recurrent policy: ``tests/samplers/test_actors.py``.)
"""

from __future__ import annotations

import functools
import inspect

import pytest
import torch

import alf.nest as nest
from alf.data_structures import StepType, TimeStep
from alf.data_transformers import (
    ObservationNormalizer,
    RewardNormalizer,
    SequentialDataTransformer,
)
from alf.data_transformers.frame_stacker import FrameStacker
from alf.learners.acting import Actor, ActorCore
from alf.learners.unroller import AlgorithmPolicy, Unroller
from alf.samplers.remote_unroller import SamplerUnroller
from alf.tensor_specs import TensorSpec
from tests.algorithms.algorithm_test_utils import counting_env
from tests.algorithms.test_sac_algorithm import _config, _sac
from tests.algorithms.test_unroller import ProbeAlgorithm


def test_both_actors_declare_the_interface_with_its_signatures():
    assert Actor.__abstractmethods__ == {"unroll", "restart", "prenormalize"}
    for cls in (Unroller, SamplerUnroller):
        assert issubclass(cls, Actor) and not inspect.isabstract(cls), cls
        # the shared properties read what every implementation sets when built
        assert all(
            isinstance(getattr(cls, name), property) for name in ("env", "policy", "metrics")
        )
        for name in Actor.__abstractmethods__:
            declared, implemented = getattr(Actor, name), getattr(cls, name)
            if isinstance(declared, property):
                assert isinstance(implemented, property), (cls, name)
            else:
                assert inspect.signature(implemented) == inspect.signature(declared), (cls, name)


def test_set_unroller_takes_only_an_actor():
    env = counting_env(num_envs=2)
    try:
        alg = ProbeAlgorithm(env, recurrent=False)
        assert isinstance(alg.unroller, Actor) and alg.unroller.batch_size == 2
        with pytest.raises(TypeError, match="needs an alf.learners.acting.Actor, got object"):
            alg.set_unroller(object())
        other = Unroller(AlgorithmPolicy(alg), env)
        alg.set_unroller(other)
        assert alg.unroller is other
    finally:
        env.close()


def _rows(value, rows):
    return nest.map_structure(lambda x: x[rows], value)


def test_actor_core_steps_any_rows_as_the_whole_batch():
    # a recurrent probe (state: steps since FIRST) with a FrameStacker (transform state):
    # one core steps all 4 rows at once, another steps rows [2, 3] then [0, 1]; each row's
    # action, state and stacked frames are the same; a row reset starts it over
    env = counting_env(num_envs=4, terminate_at=3)
    try:
        alg = ProbeAlgorithm(env, True, functools.partial(FrameStacker, stack_size=2))
        policy = AlgorithmPolicy(alg)
        whole, parts = ActorCore(policy, 4), ActorCore(policy, 4)
        time_step = env.reset()
        for t in range(6):
            taken = whole.step(time_step)
            late = parts.step(_rows(time_step, slice(2, 4)), torch.tensor([2, 3]))
            early = parts.step(_rows(time_step, slice(0, 2)), torch.tensor([0, 1]))
            for name, rows in (("early", early), ("late", late)):
                index = slice(0, 2) if name == "early" else slice(2, 4)
                assert torch.equal(rows.step.output, taken.step.output[index]), (t, name)
                assert torch.equal(rows.state, taken.state[index]), (t, name)
                assert torch.equal(
                    rows.transformed.observation, taken.transformed.observation[index]
                )
            assert taken.state.tolist() == [[0, 1, 2, 3, 0, 1][t]] * 4  # steps since FIRST
            time_step = env.step(taken.step.output)
        parts.reset_rows(slice(0, 2))
        taken, reset = whole.step(time_step), parts.step(time_step)
    finally:
        env.close()
    assert taken.state.tolist() == [2.0] * 4  # step 6 is the 3rd of its episode
    assert reset.state.tolist() == [0.0, 0.0, 2.0, 2.0]
    # the reset rows' frame history is zeros (a replaced env's next step is a FIRST anyway)
    assert reset.transformed.observation[:2].tolist() == [[0.0, 2.0]] * 2
    assert taken.transformed.observation[:2].tolist() == [[1.0, 2.0]] * 2


def test_actor_core_bootstrap_changes_nothing_and_counts_no_statistics():
    env = counting_env(num_envs=2, terminate_at=3)
    ctor = functools.partial(ObservationNormalizer, update_mode="rollout")
    try:
        alg = ProbeAlgorithm(env, True, ctor)
        core, twin = ActorCore(AlgorithmPolicy(alg), 2), ActorCore(AlgorithmPolicy(alg), 2)
        time_step = env.reset()
        first = core.step(time_step)
        twin.step(time_step)
        alg.data_transformer.take_pending_statistics()
        time_step = env.step(first.step.output)
        boot = core.bootstrap(time_step, raw=True)
        assert alg.data_transformer.take_pending_statistics() == [[]]
        assert boot.state.tolist() == [1.0, 1.0] and torch.equal(
            boot.time_step.reward, time_step.reward
        )
        after, plain = core.step(time_step), twin.step(time_step)
    finally:
        env.close()
    assert torch.equal(after.state, plain.state) and after.state.tolist() == [1.0, 1.0]
    assert torch.equal(after.step.state, plain.step.state)


def _time_steps(num: int):
    generator = torch.Generator().manual_seed(0)
    return [
        TimeStep(
            step_type=torch.full((3,), StepType.MID, dtype=torch.int32),
            reward=torch.randn(3, generator=generator),
            discount=torch.ones(3),
            observation=torch.randn(3, 2, generator=generator) * 5 + 1,
        )
        for _ in range(num)
    ]


def _transformer():
    return SequentialDataTransformer(
        [
            functools.partial(ObservationNormalizer, update_mode="rollout"),
            functools.partial(RewardNormalizer, update_mode="rollout"),
        ],
        TensorSpec((2,)),
    )


def test_pending_statistics_move_from_one_copy_to_another():
    # an actor's copy transforms the steps; the learner's copy applies what it collected
    # at after_train_iter: the same statistics as a copy that transformed them itself
    actor, learner, itself = _transformer(), _transformer(), _transformer()
    assert [type(m).__name__ for m in actor.statistics_transformers()] == [
        "ObservationNormalizer",
        "RewardNormalizer",
    ]
    for time_step in _time_steps(5):
        actor.transform_timestep(time_step, [(), ()])
        itself.transform_timestep(time_step, [(), ()])
    pending = actor.take_pending_statistics()
    assert [len(values) for values in pending] == [5, 5]
    assert actor.take_pending_statistics() == [[], []]  # taken away
    learner.add_pending_statistics(pending)
    learner.after_train_iter()
    itself.after_train_iter()
    expected, got = itself.state_dict(), learner.state_dict()
    counts = [float(v) for k, v in expected.items() if k.endswith("count")]
    assert counts == [15.0, 15.0]  # 5 steps of 3 rows, in both
    for name, value in expected.items():
        assert torch.equal(value, got[name]), name
    with pytest.raises(ValueError, match="1 lists for 2 statistics transformers"):
        learner.add_pending_statistics([[]])


def test_an_off_policy_copy_acts_by_the_learners_context():
    # the learner's replay buffer still fills (initial_collect_steps): a copy with no
    # learner of its own acts at random too once told, without consulting its actor
    env = counting_env(num_envs=2)
    try:
        learner = _sac(env, _config(initial_collect_steps=8), random_initial_collect=True)
        copy = _sac(env, _config(initial_collect_steps=0), random_initial_collect=True)
        assert learner.actor_context() == {"initial_collect_pending": True}
        assert not copy.initial_collect_pending()
        calls = []
        copy.actor_network.register_forward_hook(lambda *args: calls.append(1))
        copy.set_actor_context(learner.actor_context())
        assert copy.initial_collect_pending()
        inputs = TimeStep(
            step_type=torch.ones(4, dtype=torch.int32),
            observation=env.observation_spec().zeros((4,)),
        )
        with torch.no_grad():
            copy.rollout_step(inputs, ())
        assert not calls
        copy.set_actor_context({"initial_collect_pending": False})
        with torch.no_grad():
            copy.rollout_step(inputs, ())
        assert calls
        assert ProbeAlgorithm(env, False).actor_context() == {}
    finally:
        env.close()
