"""CriticNetwork: values by hand, the batched ensemble against separate MLPs, gradients, copies."""

import pytest
import torch
import torch.nn.functional as F

from alf.nest.utils import NestConcat
from alf.networks.critic_networks import CriticNetwork, min_over_replicas
from alf.tensor_specs import BoundedTensorSpec, TensorSpec

OBS_SPEC = TensorSpec((3,))
ACTION_SPEC = BoundedTensorSpec((2,), minimum=-1.0, maximum=1.0)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _inputs(batch_size=7):
    return torch.randn(batch_size, 3), torch.rand(batch_size, 2) * 2 - 1


def _mlp_by_hand(net, replica, x):
    """Replica ``replica`` of the joint MLP as plain ``F.linear`` layers ``[out, in]``."""
    weights, biases = net._weights, net._biases
    for i in range(len(weights)):
        x = F.linear(x, weights[i][replica].t(), biases[i][replica, 0])
        if i < len(weights) - 1:
            x = torch.relu(x)
    return x.squeeze(-1)


def test_single_critic_is_an_mlp_on_the_concatenation():
    net = CriticNetwork((OBS_SPEC, ACTION_SPEC), joint_fc_layer_params=(16, 8))
    obs, action = _inputs()
    value, state = net((obs, action))
    assert value.shape == (7,) and state == ()
    torch.testing.assert_close(value, _mlp_by_hand(net, 0, torch.cat([obs, action], -1)))
    assert net.output_spec == TensorSpec(())
    assert net._weights[-1].abs().max() <= 0.03  # small value layer: Q starts near 0


def test_batched_ensemble_equals_separate_mlps():
    """One baddbmm pass over [R, in, out] weights = R independent MLPs (to float precision)."""
    net = CriticNetwork((OBS_SPEC, ACTION_SPEC), joint_fc_layer_params=(32, 32), num_replicas=3)
    obs, action = _inputs(11)
    value, _ = net((obs, action))
    assert value.shape == (11, 3) and net.output_spec == TensorSpec((3,))
    x = torch.cat([obs, action], -1)
    for r in range(3):
        torch.testing.assert_close(value[:, r], _mlp_by_hand(net, r, x), rtol=1e-5, atol=1e-6)
    # The replicas are initialized independently.
    assert not torch.allclose(value[:, 0], value[:, 1])


def test_batched_ensemble_equals_naive_parallel_with_the_same_weights():
    kwargs = dict(joint_fc_layer_params=(16, 16), num_replicas=2)
    batched = CriticNetwork((OBS_SPEC, ACTION_SPEC), **kwargs)
    naive = CriticNetwork((OBS_SPEC, ACTION_SPEC), use_naive_parallel=True, **kwargs)
    with torch.no_grad():
        for r, replica in enumerate(naive._replicas):
            for i in range(len(batched._weights)):
                replica._weights[i].copy_(batched._weights[i][r : r + 1])
                replica._biases[i].copy_(batched._biases[i][r : r + 1])
    obs, action = _inputs()
    torch.testing.assert_close(batched((obs, action))[0], naive((obs, action))[0])


def test_gradients_of_the_ensemble_match_separate_mlps():
    net = CriticNetwork((OBS_SPEC, ACTION_SPEC), joint_fc_layer_params=(8,), num_replicas=2)
    obs, action = _inputs()
    action.requires_grad_(True)
    value, _ = net((obs, action))
    (value * torch.tensor([1.0, -2.0])).sum().backward()
    grad_batched = action.grad.clone()
    action.grad = None
    x = torch.cat([obs, action], -1)
    (_mlp_by_hand(net, 0, x) - 2 * _mlp_by_hand(net, 1, x)).sum().backward()
    torch.testing.assert_close(grad_batched, action.grad)


def test_encoders_and_vector_value():
    spec = ({"a": TensorSpec((2,)), "b": TensorSpec((1,))}, ACTION_SPEC)
    net = CriticNetwork(
        spec,
        observation_fc_layer_params=(8,),
        action_fc_layer_params=(4,),
        joint_fc_layer_params=(8,),
        output_tensor_spec=TensorSpec((2,)),
        num_replicas=2,
    )
    # Encoders have parameters, so every replica has its own.
    assert len(net._observation_encoders) == 2 and len(net._action_encoders) == 2
    obs = {"a": torch.randn(5, 2), "b": torch.randn(5, 1)}
    value, _ = net((obs, torch.zeros(5, 2)))
    assert value.shape == (5, 2, 2)
    enc = [
        torch.cat(
            [net._observation_encoders[r](obs)[0], net._action_encoders[r](torch.zeros(5, 2))[0]],
            -1,
        )
        for r in range(2)
    ]
    for r in range(2):
        h = torch.relu(enc[r] @ net._weights[0][r] + net._biases[0][r])
        expected = h @ net._weights[1][r] + net._biases[1][r]
        torch.testing.assert_close(value[:, r], expected)


def test_copy_has_independent_parameters():
    net = CriticNetwork((OBS_SPEC, ACTION_SPEC), joint_fc_layer_params=(8,), num_replicas=2)
    twin = net.copy(name="target")
    assert twin.name == "target" and twin.num_replicas == 2
    for p, q in zip(net.parameters(), twin.parameters()):
        assert p.shape == q.shape and p is not q
    obs, action = _inputs()
    assert twin((obs, action))[0].shape == (7, 2)


def test_bad_replicas():
    with pytest.raises(ValueError, match="num_replicas"):
        CriticNetwork((OBS_SPEC, ACTION_SPEC), num_replicas=0)


def test_min_over_replicas():
    twin = torch.tensor([[1.0, -2.0], [3.0, 0.5], [-1.0, -1.0]])  # [B, R]
    assert min_over_replicas(twin).tolist() == [-2.0, 0.5, -1.0]
    single = torch.tensor([4.0, -3.0])  # [B]: one critic
    assert min_over_replicas(single) is single


def test_observation_action_combiner_outer_product_by_hand():
    from alf.nest.utils import NestConcat, NestOuterProduct

    obs_spec, act_spec = TensorSpec((2,)), BoundedTensorSpec((1,), minimum=-1.0, maximum=1.0)
    torch.manual_seed(0)
    critic = CriticNetwork(
        (obs_spec, act_spec),
        joint_fc_layer_params=(),
        observation_action_combiner=NestOuterProduct(padding=True),
    )
    weight = critic._weights[0][0]  # [in, out]: [(2 + 1) * (1 + 1), 1]
    assert weight.shape == (6, 1)
    obs, act = torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0]])
    outer = torch.tensor([[1.0 * 3, 1.0, 2.0 * 3, 2.0, 3.0, 1.0]])  # (o1, o2, 1) x (a, 1)
    expected = (outer @ weight + critic._biases[0][0]).squeeze(-1)
    torch.testing.assert_close(critic((obs, act))[0], expected)
    # replicated critics: each equals a single critic with its weights
    twins = CriticNetwork(
        (obs_spec, act_spec),
        joint_fc_layer_params=(4,),
        num_replicas=2,
        observation_action_combiner=NestOuterProduct(padding=True),
    )
    values = twins((obs.expand(3, 2), act.expand(3, 1)))[0]
    assert values.shape == (3, 2)
    for r in range(2):
        hidden = torch.relu(outer @ twins._weights[0][r] + twins._biases[0][r])
        by_hand = (hidden @ twins._weights[1][r] + twins._biases[1][r]).squeeze(-1)
        torch.testing.assert_close(values[0, r], by_hand[0])
    concat = CriticNetwork((obs_spec, act_spec), observation_action_combiner=NestConcat())
    plain = CriticNetwork((obs_spec, act_spec))
    plain.load_state_dict(concat.state_dict())
    assert torch.equal(concat((obs, act))[0], plain((obs, act))[0])


def test_joint_layer_normalization_and_last_activation_by_hand():
    net = CriticNetwork(
        (OBS_SPEC, ACTION_SPEC),
        joint_fc_layer_params=(6,),
        use_fc_ln=True,
        last_layer_activation=torch.tanh,
    )
    (norm,) = net._norm_modules
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.uniform_(-1, 1)
    obs, action = _inputs()
    x = torch.cat([obs, action], -1)
    h = F.linear(x, net._weights[0][0].t(), net._biases[0][0, 0])
    h = torch.relu(F.layer_norm(h, (6,), norm.weight[0, 0], norm.bias[0, 0]))
    by_hand = torch.tanh(F.linear(h, net._weights[1][0].t(), net._biases[1][0, 0])).squeeze(-1)
    torch.testing.assert_close(net((obs, action))[0], by_hand)


@pytest.mark.parametrize("norm", ["use_fc_bn", "use_fc_ln"])
def test_normalized_ensemble_equals_naive_parallel_with_the_same_weights(norm):
    kwargs = dict(joint_fc_layer_params=(8, 8), num_replicas=2, **{norm: True})
    batched = CriticNetwork((OBS_SPEC, ACTION_SPEC), **kwargs)
    naive = CriticNetwork((OBS_SPEC, ACTION_SPEC), use_naive_parallel_network=True, **kwargs)
    assert len(naive._replicas) == 2
    with torch.no_grad():
        for norm_module in batched._norm_modules:  # different affine parameters per critic
            for p in norm_module.parameters():
                p.uniform_(0.5, 1.5)
        for r, replica in enumerate(naive._replicas):
            for i in range(len(batched._weights)):
                replica._weights[i].copy_(batched._weights[i][r : r + 1])
                replica._biases[i].copy_(batched._biases[i][r : r + 1])
            for mine, theirs in zip(replica._norm_modules, batched._norm_modules):
                if norm == "use_fc_ln":
                    mine.weight.copy_(theirs.weight[r : r + 1])
                    mine.bias.copy_(theirs.bias[r : r + 1])
                else:
                    mine.bn.weight.copy_(theirs.bn.weight.view(2, -1)[r])
                    mine.bn.bias.copy_(theirs.bn.bias.view(2, -1)[r])
    obs, action = _inputs(16)
    torch.testing.assert_close(batched((obs, action))[0], naive((obs, action))[0])


def test_action_preprocessors_apply_to_the_action():
    scale = torch.nn.Linear(2, 2, bias=False)
    torch.nn.init.eye_(scale.weight)
    with torch.no_grad():
        scale.weight.mul_(3.0)
    net = CriticNetwork(
        (OBS_SPEC, ACTION_SPEC), joint_fc_layer_params=(8,), action_input_processors=scale
    )
    (encoder,) = net._action_encoders
    obs, action = _inputs()
    x = torch.cat([obs, 3.0 * action], -1)
    torch.testing.assert_close(net((obs, action))[0], _mlp_by_hand(net, 0, x))
    assert encoder.output_size == 2


def test_both_normalizations_are_refused():
    with pytest.raises(ValueError, match="last_use_fc_bn and last_use_fc_ln are both True"):
        CriticNetwork((OBS_SPEC, ACTION_SPEC), last_use_fc_bn=True, last_use_fc_ln=True)


def test_a_combiner_of_a_single_tensor_is_dropped_as_in_alf():
    """ALF's HER confs give NestConcat for a dict observation and a single-tensor action
    alike: the action's combiner has nothing to combine, so the network is the plain one."""
    obs_spec = {"observation": TensorSpec((2,)), "desired_goal": TensorSpec((1,))}
    net = CriticNetwork(
        (obs_spec, ACTION_SPEC),
        joint_fc_layer_params=(8,),
        observation_preprocessing_combiner=NestConcat(),
        action_preprocessing_combiner=NestConcat(),
    )
    assert len(net._action_encoders) == 0  # the action goes to the joint layers as it is
    obs = {"observation": torch.randn(5, 2), "desired_goal": torch.randn(5, 1)}
    action = torch.rand(5, 2)
    x = torch.cat([obs["desired_goal"], obs["observation"], action], -1)  # keys sorted
    torch.testing.assert_close(net((obs, action))[0], _mlp_by_hand(net, 0, x))
