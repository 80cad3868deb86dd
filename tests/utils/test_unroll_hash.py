"""``alf.utils.unroll_hash``: per-environment digests of an ``Unroll`` and the run's hash of
them, checked against sha256 expanded by hand, and their invariance to the layout (the
environments split over ranks or samplers, numbered from 0 in each part)."""

import hashlib

import torch

from alf.data_structures import Experience, StepType, TimeStep
from alf.learners.acting import Unroll
from alf.utils.unroll_hash import DIGEST_BYTES, env_digests, unroll_hash


def _experience(t: int, env_ids, obs_dtype=torch.float32):
    """An ``Experience`` ``[B]`` at step ``t`` whose values depend on the env id."""
    ids = torch.as_tensor(env_ids, dtype=torch.int32)
    obs = torch.stack([ids * 10.0 + t, -(ids * 10.0 + t)], dim=1).to(obs_dtype)
    time_step = TimeStep(
        step_type=torch.full((len(env_ids),), int(StepType.MID), dtype=torch.int32),
        reward=ids.float() + 0.5 * t,
        discount=torch.ones(len(env_ids)),
        observation=obs,
        prev_action=(ids + t) % 2,
        env_id=ids,
    )
    return Experience(time_step=time_step, action=(ids + t + 1) % 2, rollout_info=())


def _unroll(env_ids, length=3, bootstrap=True, **kwargs):
    experiences = [_experience(t, env_ids, **kwargs) for t in range(length)]
    last = _experience(length, env_ids, **kwargs) if bootstrap else None
    return Unroll(experiences, last)


def _leaf_bytes(header: str, values: torch.Tensor) -> bytes:
    return header.encode() + values.contiguous().numpy().tobytes()


def test_an_environments_digest_is_sha256_of_its_columns_expanded_by_hand():
    unroll = _unroll([0, 1], length=2)
    digests = env_digests(unroll)
    assert len(digests) == 2 and all(len(d) == DIGEST_BYTES for d in digests)
    # env 1's leaves in nest order (Experience: time_step (step_type, reward, discount,
    # observation, prev_action; env_id left out), action), steps 0 and 1, then bootstrap
    steps = [
        ("torch.int32(2,);", torch.tensor([1, 1], dtype=torch.int32)),
        ("torch.float32(2,);", torch.tensor([1.0, 1.5])),
        ("torch.float32(2,);", torch.tensor([1.0, 1.0])),
        ("torch.float32(2, 2);", torch.tensor([[10.0, -10.0], [11.0, -11.0]])),
        ("torch.int32(2,);", torch.tensor([1, 0], dtype=torch.int32)),
        ("torch.int32(2,);", torch.tensor([0, 1], dtype=torch.int32)),
    ]
    bootstrap = [
        ("torch.int32();", torch.tensor(1, dtype=torch.int32)),
        ("torch.float32();", torch.tensor(2.0)),
        ("torch.float32();", torch.tensor(1.0)),
        ("torch.float32(2,);", torch.tensor([12.0, -12.0])),
        ("torch.int32();", torch.tensor(1, dtype=torch.int32)),
        ("torch.int32();", torch.tensor(0, dtype=torch.int32)),
    ]
    expected = hashlib.sha256(b"".join(_leaf_bytes(h, v) for h, v in steps + bootstrap))
    assert digests[1] == expected.digest()
    assert unroll_hash(digests) == hashlib.sha256(digests[0] + digests[1]).hexdigest()


def test_the_hash_is_the_same_for_the_environments_split_over_two_ranks():
    whole = _unroll([0, 1, 2, 3])
    # each rank (or sampler) numbers its own envs from 0; the values are the global env's
    first, second = _unroll([0, 1]), _unroll([2, 3])
    renumbered = [
        e._replace(time_step=e.time_step._replace(env_id=e.time_step.env_id - 2))
        for e in second.experiences
    ]
    second = Unroll(renumbered, second.bootstrap)
    gathered = env_digests(first) + env_digests(second)
    assert gathered == env_digests(whole)
    assert unroll_hash(gathered) == unroll_hash(env_digests(whole))
    assert unroll_hash(env_digests(second) + env_digests(first)) != unroll_hash(gathered)


def test_a_changed_value_changes_that_environments_digest_only():
    unroll = _unroll([0, 1, 2])
    before = env_digests(unroll)
    step = unroll.experiences[1]
    reward = step.time_step.reward.clone()
    reward[2] += 1e-6
    changed = step._replace(time_step=step.time_step._replace(reward=reward))
    after = env_digests(Unroll([unroll.experiences[0], changed, unroll.experiences[2]], None))
    no_bootstrap = env_digests(Unroll(unroll.experiences, None))
    assert after[:2] == no_bootstrap[:2] and after[2] != no_bootstrap[2]
    assert no_bootstrap != before  # the bootstrap row is hashed


def test_a_changed_dtype_or_shape_changes_the_hash_with_the_same_bytes():
    base = env_digests(_unroll([0, 1], obs_dtype=torch.int32))
    as_float = _unroll([0, 1], obs_dtype=torch.int32)
    # the same bytes viewed as float32: only the header differs
    experiences = [
        e._replace(time_step=e.time_step._replace(observation=e.observation.view(torch.float32)))
        for e in as_float.experiences
    ]
    assert env_digests(Unroll(experiences, as_float.bootstrap)) != base
    flat = [
        e._replace(time_step=e.time_step._replace(observation=e.observation.reshape(2, 2, 1)))
        for e in as_float.experiences
    ]
    assert env_digests(Unroll(flat, as_float.bootstrap)) != base


def test_strided_bool_bfloat16_and_empty_leaves_are_hashed_by_their_values():
    values = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    exp = Experience(
        time_step=TimeStep(observation=values[:, ::2]),  # not contiguous
        action=(values[:, 0] > 5, values[:, :2].to(torch.bfloat16), torch.zeros(4, 0)),
    )
    dense = Experience(
        time_step=TimeStep(observation=values[:, ::2].clone()),
        action=(values[:, 0].clone() > 5, values[:, :2].to(torch.bfloat16), torch.zeros(4, 0)),
    )
    assert env_digests(Unroll([exp, exp])) == env_digests(Unroll([dense, dense]))
    assert len(set(env_digests(Unroll([exp])))) == 4
    assert env_digests(Unroll([])) == []


def test_the_trajectory_hash_leaves_out_the_policys_outputs():
    unroll = _unroll([0, 1, 2])

    def with_info(u, value):
        def add(e):
            return e._replace(rollout_info=torch.full((3,), value))

        return Unroll([add(e) for e in u.experiences], add(u.bootstrap))

    a, b = with_info(unroll, 0.25), with_info(unroll, 0.25 + 2**-20)
    assert env_digests(a) != env_digests(b)
    assert env_digests(a, trajectory=True) == env_digests(b, trajectory=True)
    assert env_digests(a, trajectory=True) == env_digests(unroll, trajectory=True)
    changed = Unroll(
        [e._replace(action=1 - e.action) for e in unroll.experiences], unroll.bootstrap
    )
    assert env_digests(changed, trajectory=True) != env_digests(unroll, trajectory=True)
