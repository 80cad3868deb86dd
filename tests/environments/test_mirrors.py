"""``MirrorWrapper`` and the mirror maps of ``alf.environments.mirrors`` (Walker2d-v5)."""

import importlib.util

import gymnasium as gym
import numpy as np
import pytest

from alf.environments import suite_gym
from alf.environments.gym_wrappers import ContinuousActionClip, MirrorWrapper, mirror_of
from alf.environments.mirrors import WALKER2D_V5_MIRROR
from alf.environments.toy_envs import MIRROR_POINT_MIRROR, ImageEnv, MirrorPointEnv
from alf.utils.mirror import Mirror

needs_mujoco = pytest.mark.skipif(
    importlib.util.find_spec("mujoco") is None, reason="needs mujoco (pip install -e '.[mujoco]')"
)


def test_mirror_wrapper_exposes_the_declaration_and_passes_data_through():
    env = ContinuousActionClip(MirrorWrapper(MirrorPointEnv(), mirror=MIRROR_POINT_MIRROR))
    plain = MirrorPointEnv()
    assert mirror_of(env) is MIRROR_POINT_MIRROR
    assert mirror_of(plain) is None
    assert list(env.get_wrapper_attr("mirror_observation_signs")) == [-1, 1]
    assert list(env.get_wrapper_attr("mirror_action_indices")) == [0, 1]
    obs, _ = env.reset(seed=5)
    plain_obs, _ = plain.reset(seed=5)
    np.testing.assert_array_equal(obs, plain_obs)
    step = env.step(np.array([0.3, -0.2], np.float32))
    plain_step = plain.step(np.array([0.3, -0.2], np.float32))
    np.testing.assert_array_equal(step[0], plain_step[0])
    assert step[1:4] == plain_step[1:4]


def test_mirror_point_env_commutes_with_its_mirror():
    """Dynamics and reward of MirrorPointEnv are symmetric under x -> -x."""
    m = MIRROR_POINT_MIRROR
    env, mirrored_env = MirrorPointEnv(), MirrorPointEnv()
    obs, _ = env.reset(seed=1)
    mirrored_env.reset(seed=1)
    mirrored_env._position = m.observation.numpy(env._position)
    for action in ([0.5, -1.0], [-0.3, 0.2], [1.0, 1.0]):
        action = np.array(action, np.float32)
        obs, reward, *_ = env.step(action)
        mirrored_obs, mirrored_reward, *_ = mirrored_env.step(m.action.numpy(action))
        np.testing.assert_allclose(mirrored_obs, m.observation.numpy(obs), atol=1e-7)
        assert mirrored_reward == pytest.approx(reward)


def test_mirror_wrapper_rejects_mismatched_spaces():
    with pytest.raises(
        ValueError,
        match=r"MirrorWrapper\(MirrorPointEnv\): wrong mirror_observation has 3 entries but "
        "the observation has 2",
    ):
        MirrorWrapper(MirrorPointEnv(), mirror=Mirror([0, 1, 2], [0, 1], name="wrong"))
    with pytest.raises(ValueError, match="the observation space must be a flat Box"):
        MirrorWrapper(ImageEnv(dict_obs=True), mirror=MIRROR_POINT_MIRROR)
    with pytest.raises(TypeError, match="MirrorWrapper needs an alf.utils.mirror.Mirror"):
        MirrorWrapper(MirrorPointEnv(), mirror=[0, 1])


def test_walker2d_mirror_is_an_involution():
    for permutation in (WALKER2D_V5_MIRROR.observation, WALKER2D_V5_MIRROR.action):
        x = np.arange(permutation.size, dtype=np.float64) * 1.5 - 3.0
        np.testing.assert_array_equal(permutation.numpy(permutation.numpy(x)), x)
        assert not np.array_equal(permutation.numpy(x), x)  # it does swap something
        assert set(permutation.signs) == {1.0}  # planar walker: no sign flips


def _swap_side(name: str) -> str:
    """``thigh_joint`` <-> ``thigh_left_joint``; torso/root names unchanged."""
    if "_left" in name:
        return name.replace("_left", "")
    if name.endswith("_joint"):
        return name.replace("_joint", "_left_joint")
    return name


def _walker_names(model):
    """Names of Walker2d-v5's observation (qpos[1:], qvel) and action entries."""
    qpos_names = {int(model.jnt_qposadr[j]): model.joint(j).name for j in range(model.njnt)}
    qvel_names = {int(model.jnt_dofadr[j]): model.joint(j).name for j in range(model.njnt)}
    observation = [f"pos:{qpos_names[i]}" for i in range(1, model.nq)]
    observation += [f"vel:{qvel_names[i]}" for i in range(model.nv)]
    action = [model.joint(int(model.actuator_trnid[a, 0])).name for a in range(model.nu)]
    return observation, action


@needs_mujoco
def test_walker2d_mirror_pairs_left_and_right_joints_of_the_model():
    env = gym.make("Walker2d-v5")
    try:
        model, data = env.unwrapped.model, env.unwrapped.data
        observation_names, action_names = _walker_names(model)
        assert len(observation_names) == 17 and len(action_names) == 6
        # the assumed layout is the env's: obs == concat(qpos[1:], qvel)
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        env.unwrapped.set_state(rng.normal(size=model.nq), rng.normal(size=model.nv))
        np.testing.assert_array_equal(
            env.unwrapped._get_obs(), np.concatenate([data.qpos[1:], data.qvel])
        )
        m = WALKER2D_V5_MIRROR
        mirrored_obs = [observation_names[i] for i in m.observation.indices]
        assert mirrored_obs == [_swap_side(n) for n in observation_names]
        assert [action_names[i] for i in m.action.indices] == [_swap_side(n) for n in action_names]
        assert "pos:thigh_left_joint" in mirrored_obs[:5]  # a real swap, not the identity
        MirrorWrapper(env, mirror=m)  # the spaces agree
    finally:
        env.close()


@needs_mujoco
def test_walker2d_left_and_right_legs_are_physically_identical():
    """The mirror is an exact symmetry only if both legs have the same bodies, geoms,
    joints and actuators (Walker2d-v5 gives both feet friction 1.9)."""
    env = gym.make("Walker2d-v5")
    try:
        model = env.unwrapped.model
        for part in ("thigh", "leg", "foot"):
            right, left = model.body(part).id, model.body(f"{part}_left").id
            assert model.body_mass[right] == model.body_mass[left]
            np.testing.assert_array_equal(model.body_pos[right], model.body_pos[left])
            rg, lg = model.geom(f"{part}_geom").id, model.geom(f"{part}_left_geom").id
            np.testing.assert_array_equal(model.geom_size[rg], model.geom_size[lg])
            np.testing.assert_array_equal(model.geom_friction[rg], model.geom_friction[lg])
            rj, lj = model.joint(f"{part}_joint").id, model.joint(f"{part}_left_joint").id
            np.testing.assert_array_equal(model.jnt_range[rj], model.jnt_range[lj])
            ra, la = (int(np.nonzero(model.actuator_trnid[:, 0] == j)[0][0]) for j in (rj, lj))
            np.testing.assert_array_equal(model.actuator_gear[ra], model.actuator_gear[la])
    finally:
        env.close()


@needs_mujoco
def test_walker2d_mirror_through_suite_gym():
    env = suite_gym.load(
        "Walker2d-v5",
        gym_env_wrappers=(lambda e: MirrorWrapper(e, mirror=WALKER2D_V5_MIRROR),),
    )
    try:
        assert mirror_of(env.gym) is WALKER2D_V5_MIRROR
        WALKER2D_V5_MIRROR.check_specs(env.observation_spec(), env.action_spec(), "Walker2d")
    finally:
        env.close()
