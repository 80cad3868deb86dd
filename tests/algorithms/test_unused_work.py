"""Work nothing reads is skipped: the entropy (no bonus, no summaries) and PPO's approx_kl
(no target_kl, no summaries); the loss and learning stay the same."""

import torch

import alf.summary
from alf.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf.algorithms.actor_critic_loss import ActorCriticLoss
from alf.algorithms.config import TrainerConfig
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import counting_env, make_algorithm


class _NullWriter:
    def add_scalar(self, *args, **kwargs):
        pass


def _ppo(seed=0, **kwargs):
    seeding.set_random_seed(seed)
    env = counting_env(num_envs=2, seed=seed)
    config = TrainerConfig(
        unroll_length=4,
        mini_batch_size=8,
        mini_batch_length=1,
        num_updates_per_train_iter=2,
        replay_buffer_length=4,
        whole_replay_buffer_training=True,
        clear_replay_buffer=True,
    )
    return make_algorithm(PPOAlgorithm, env, config, **kwargs), env


def _recorded_infos(alg):
    """The ``train_step`` infos and losses of one training iteration."""
    infos, losses = [], []
    calc_loss = alg.calc_loss

    def recording_calc_loss(info):
        infos.append(info)
        losses.append(calc_loss(info))
        return losses[-1]

    alg.calc_loss = recording_calc_loss
    alg.train_iter()
    return infos, losses


def test_entropy_and_approx_kl_only_when_used():
    alg, env = _ppo(loss=PPOLoss(gamma=0.9))
    try:
        infos, losses = _recorded_infos(alg)
        assert all(info.entropy == () for info in infos)
        assert all(loss.extra.approx_kl == () for loss in losses)
        alf.summary.set_default_writer(_NullWriter())
        try:
            with alf.summary.record_if(True):
                infos, losses = _recorded_infos(alg)
        finally:
            alf.summary.set_default_writer(None)
        assert all(torch.is_tensor(info.entropy) for info in infos)
        assert all(torch.is_tensor(loss.extra.neg_entropy) for loss in losses)
        assert all(torch.is_tensor(loss.extra.approx_kl) for loss in losses)
    finally:
        env.close()
    alg, env = _ppo(loss=PPOLoss(gamma=0.9, entropy_regularization=0.01), target_kl=10.0)
    try:
        infos, losses = _recorded_infos(alg)
        assert all(torch.is_tensor(info.entropy) for info in infos)
        assert all(torch.is_tensor(loss.extra.approx_kl) for loss in losses)
    finally:
        env.close()


def test_actor_critic_loss_without_entropy_equals_zero_bonus():
    seeding.set_random_seed(0)
    env = counting_env(num_envs=2)
    try:
        alg = make_algorithm(
            ActorCriticAlgorithm,
            env,
            TrainerConfig(unroll_length=4),
            loss=ActorCriticLoss(gamma=0.9),
        )
        infos, losses = _recorded_infos(alg)
        (info,), (loss,) = infos, losses
        assert info.entropy == () and loss.extra.neg_entropy == ()
        with_entropy = ActorCriticLoss(gamma=0.9)(
            info._replace(entropy=torch.ones_like(info.value))
        )
        assert torch.equal(with_entropy.loss, loss.loss)
    finally:
        env.close()
