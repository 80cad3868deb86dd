"""``HindsightExperienceTransformer``: hindsight experience replay with "future" goals.

Andrychowicz et al. 2017, "Hindsight Experience Replay" (arXiv:1707.01495). The
observation is a dict with ``observation``, ``achieved_goal`` and ``desired_goal``
(the gymnasium-robotics convention). On replay, a fraction ``her_proportion`` of
the sampled sequences get a new desired goal: the achieved goal at a step drawn
uniformly from the last row of the sequence to the end of its episode (the
"future" strategy), read from the replay buffer by position. Every row of a
relabeled sequence gets that goal, and its reward is recomputed by ``reward_fn``
from the row's achieved goal and the new goal (the reward at FIRST stays 0, as the
``TimeStep`` layout says). Rows before an episode boundary inside the sequence get
the goal too; their rewards are recomputed the same way, so they stay valid
goal-conditioned transitions, and no transition across the boundary is trained.

Rollout is unchanged (``transform_timestep`` is the identity): the policy acts on
the environment's goal.
"""

from __future__ import annotations

import torch

import alf
from alf.data_structures import StepType
from alf.data_transformers.base import DataTransformer


@alf.configurable
def l2_distance_reward_fn(achieved_goal, desired_goal, distance_threshold: float = 0.05):
    """Sparse goal reward: 0 within ``distance_threshold`` (L2) of the goal, -1 otherwise.

    The gymnasium-robotics convention (``compute_reward`` of the Fetch tasks).

    Args:
        achieved_goal: ``[..., G]`` achieved goals.
        desired_goal: ``[..., G]`` desired goals.
        distance_threshold: success radius.

    Returns:
        ``[...]`` float32 rewards.
    """
    distance = torch.linalg.vector_norm(achieved_goal - desired_goal, dim=-1)
    return -(distance > distance_threshold).to(torch.float32)


@alf.configurable
class HindsightExperienceTransformer(DataTransformer):
    """Relabel replayed goals with achieved future goals (see the module doc).

    Args:
        observation_spec: a dict observation spec with ``achieved_goal_field`` and
            ``desired_goal_field`` of the same shape.
        her_proportion: fraction of the replayed sequences relabeled.
        achieved_goal_field: key of the achieved goal in the observation.
        desired_goal_field: key of the desired goal in the observation.
        reward_fn: ``reward_fn(achieved_goal [..., G], desired_goal [..., G]) -> [...]``
            reward (e.g. ``l2_distance_reward_fn`` with the env's threshold).
    """

    reads_replay_buffer = True

    def __init__(
        self,
        observation_spec,
        her_proportion: float = 0.8,
        achieved_goal_field: str = "achieved_goal",
        desired_goal_field: str = "desired_goal",
        reward_fn=l2_distance_reward_fn,
    ):
        if not isinstance(observation_spec, dict):
            raise ValueError(
                f"HindsightExperienceTransformer needs a dict observation with "
                f"'{achieved_goal_field}' and '{desired_goal_field}', got {observation_spec}"
            )
        for key in (achieved_goal_field, desired_goal_field):
            if key not in observation_spec:
                raise ValueError(
                    f"HindsightExperienceTransformer: '{key}' is not in the observation "
                    f"(its keys: {sorted(observation_spec)})"
                )
        achieved, desired = (
            observation_spec[achieved_goal_field],
            observation_spec[desired_goal_field],
        )
        if achieved.shape != desired.shape:
            raise ValueError(
                f"HindsightExperienceTransformer: achieved goal {achieved} and desired goal "
                f"{desired} differ in shape"
            )
        if not 0.0 <= her_proportion <= 1.0:
            raise ValueError(f"HindsightExperienceTransformer: her_proportion {her_proportion}")
        super().__init__(observation_spec)
        self._her_proportion = her_proportion
        self._achieved_field = achieved_goal_field
        self._desired_field = desired_goal_field
        self._reward_fn = reward_fn

    def transform_timestep(self, time_step, state):
        return time_step, state

    def transform_experience(self, experience):
        batch_info = experience.batch_info
        buffer = self._replay_buffer_of(experience)
        time_step = experience.time_step
        num_steps, batch_size = time_step.step_type.shape[:2]
        env_ids = batch_info.env_ids.cpu()
        newest = buffer.current_pos[env_ids] - 1
        last_pos = torch.minimum(batch_info.positions.cpu() + num_steps - 1, newest)
        to_end = buffer.steps_to_episode_end(env_ids, last_pos)
        future = last_pos + (torch.rand(batch_size) * (to_end + 1)).long().clamp(max=to_end)
        field = f"time_step.observation.{self._achieved_field}"
        device = time_step.step_type.device
        goal = buffer.get_field(field, env_ids, future).to(device)  # [B, G]
        relabel = (torch.rand(batch_size) < self._her_proportion).to(device)  # [B]
        observation = dict(time_step.observation)
        desired = observation[self._desired_field]
        mask = relabel.reshape(1, batch_size, *([1] * (desired.ndim - 2)))
        desired = torch.where(mask, goal.unsqueeze(0).to(desired.dtype), desired)
        observation[self._desired_field] = desired
        new_reward = self._reward_fn(observation[self._achieved_field], desired)
        keep = ~relabel.unsqueeze(0) | (time_step.step_type == StepType.FIRST)
        reward = torch.where(keep, time_step.reward, new_reward.to(time_step.reward.dtype))
        time_step = time_step._replace(observation=observation, reward=reward)
        return experience._replace(time_step=time_step)
