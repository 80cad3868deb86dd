"""Where the off-policy family's features meet: each combination works or is refused in one
line, never silently wrong."""

from __future__ import annotations

import functools

import pytest
import torch

import alf
from alf.algorithms.crossq_algorithm import CrossQAlgorithm
from alf.algorithms.dqn_algorithm import DqnInfo
from alf.algorithms.dsac_algorithm import DSacAlgorithm
from alf.algorithms.qrdqn_algorithm import QrdqnAlgorithm
from alf.algorithms.sac_algorithm import SacAlgorithm, SacRolloutInfo
from alf.algorithms.td_loss import LowerBoundedTDLoss
from alf.data_structures import Experience, StepType, TimeStep
from alf.data_transformers.hindsight_relabeler import HindsightExperienceTransformer
from alf.experience_replayers.replay_buffer import ReplayBuffer
from alf.layers import BatchRenorm1d
from alf.learners.replay_learner import _check_episodic_returns_with_relabelling
from alf.networks import CriticNetwork
from alf.networks.q_networks import QNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils.periodic_reset import PeriodicReset

OBS_SPEC = TensorSpec((2,))
ACTION_SPEC = BoundedTensorSpec((1,), minimum=-1.0, maximum=1.0)
DISCRETE_SPEC = BoundedTensorSpec((), torch.int64, minimum=0, maximum=2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(reproduce_locomotion=True), "reproduce_locomotion"),
        (dict(parameter_reset_period=10), "parameter_reset_period"),
    ],
)
def test_crossq_refuses_what_it_replaces(kwargs, match):
    """An ALF conf sets these on ``SacAlgorithm``; they reach its subclasses."""
    alf.reset_configs()  # values other tests used
    alf.config("SacAlgorithm", **kwargs)
    try:
        with pytest.raises(ValueError, match=f"SacAlgorithm.{match} is not supported by CrossQ"):
            CrossQAlgorithm(OBS_SPEC, ACTION_SPEC)
    finally:
        alf.reset_configs()


def test_dsac_refuses_reproduce_locomotion():
    alf.reset_configs()  # values other tests used
    alf.config("SacAlgorithm", reproduce_locomotion=True)
    try:
        with pytest.raises(ValueError, match="reproduce_locomotion is not supported by DSAC"):
            DSacAlgorithm(OBS_SPEC, ACTION_SPEC)
    finally:
        alf.reset_configs()


@pytest.mark.parametrize("option", [dict(noisy=True), dict(num_quantiles=4)])
def test_discrete_sac_refuses_noisy_and_quantile_q_networks(option):
    with pytest.raises(ValueError, match="quantile or noisy QNetwork"):
        SacAlgorithm(
            OBS_SPEC,
            DISCRETE_SPEC,
            q_network_ctor=functools.partial(QNetwork, fc_layer_params=(8,), **option),
        )


def test_crossq_bounds_its_targets_by_the_episodic_returns():
    """CrossQ hands the replayed returns to its critic loss as SAC does, on actor and
    critic-only updates alike, and a known return above the target raises it
    (``lb_target_q=1``)."""
    torch.manual_seed(0)
    alg = _small_crossq()
    seen = []
    critic_loss = alg._critic_loss

    def spy(*args, discounted_return=()):
        loss = critic_loss(*args, discounted_return=discounted_return)
        seen.append((discounted_return, loss.extra.target))
        return loss

    alg._critic_loss = spy
    mid = StepType.MID
    ts = TimeStep(
        step_type=torch.tensor([[mid, mid], [mid, mid]]),
        reward=torch.zeros(2, 2),
        discount=torch.ones(2, 2),
        observation=torch.randn(2, 2, 2),
    )
    returns = torch.tensor([[1000.0, -1000.0], [0.0, 0.0]])  # known for env 0, unknown for 1
    info = SacRolloutInfo(action=torch.zeros(2, 2, 1), discounted_return=returns)
    for update in range(2):  # an actor update, then a critic-only one (policy_delay=2)
        alg.calc_loss(alg.train_steps(Experience(time_step=ts, rollout_info=info)))
        alg.after_update(None, None)
        given, target = seen[update]
        assert given is returns
        assert torch.all(target[0, 0] == 1000.0)  # bounded
        assert torch.all(target[0, 1].abs() < 100.0)  # unknown: as is


def _small_crossq():
    from alf.algorithms.crossq_algorithm import CrossQActorNetwork, CrossQCriticNetwork

    return CrossQAlgorithm(
        OBS_SPEC,
        ACTION_SPEC,
        actor_network_ctor=functools.partial(CrossQActorNetwork, fc_layer_params=(8,)),
        critic_network_ctor=functools.partial(CrossQCriticNetwork, joint_fc_layer_params=(8,)),
        critic_loss_ctor=functools.partial(LowerBoundedTDLoss, lb_target_q=1.0, td_lambda=0.0),
        policy_delay=2,
    )


def test_a_parameter_reset_restarts_batch_renorm_warm_up():
    """The reset copies fresh buffers in; the layer's host-side call count (which decides the
    renormalization bounds) must restart with them."""
    network = CriticNetwork(
        (OBS_SPEC, ACTION_SPEC),
        joint_fc_layer_params=(8,),
        use_fc_bn=True,
        fc_bn_ctor=functools.partial(BatchRenorm1d, warmup_steps=2),
    )
    norms = [m for m in network.modules() if isinstance(m, BatchRenorm1d)]
    assert norms
    for _ in range(5):
        network((torch.randn(16, 2), torch.rand(16, 1)))
    assert all(m._steps == 5 and m.clip_bounds(m._steps)[0] > 1 for m in norms)
    reset = PeriodicReset([network], period=1)
    reset()
    assert all(m._steps == 0 and int(m.num_batches_tracked) == 0 for m in norms)
    assert all(m.clip_bounds(m._steps) == (1.0, 0.0) for m in norms)


def test_episodic_returns_are_refused_with_hindsight_relabelling():
    spec = TimeStep(
        step_type=TensorSpec((), torch.int32), reward=TensorSpec(()), discount=TensorSpec(())
    )
    plain = ReplayBuffer(spec, 1, 4)
    recording = ReplayBuffer(spec, 1, 4, keep_episodic_info=True, record_episodic_return=True)
    # the check only asks what a transformer is: no goal env is needed to build one
    her = HindsightExperienceTransformer.__new__(HindsightExperienceTransformer)
    _check_episodic_returns_with_relabelling(plain, her)
    _check_episodic_returns_with_relabelling(recording, object())
    with pytest.raises(ValueError, match="record_episodic_return with Hindsight"):
        _check_episodic_returns_with_relabelling(recording, her)


def test_qrdqn_gives_no_priority_to_a_last_row_0():
    alg = QrdqnAlgorithm(
        OBS_SPEC,
        DISCRETE_SPEC,
        q_network_ctor=functools.partial(QNetwork, fc_layer_params=(8,), num_quantiles=3),
    )
    step_type = torch.tensor([[StepType.MID, StepType.LAST], [StepType.MID, StepType.FIRST]])
    info = DqnInfo(
        reward=torch.ones(2, 2),
        step_type=step_type,
        discount=torch.ones(2, 2),
        q_value=torch.cat([torch.zeros(1, 2, 3), torch.zeros(1, 2, 3)]),
        target_q_value=torch.zeros(2, 2, 3),
    )
    priority = alg.calc_loss(info).priority
    assert priority[0] > 0 and priority[1] == 0
