"""Action masks (``alf/utils/action_mask.py``): masked logits give the distribution over
the legal actions (probabilities, entropy, KL against hand values), no sampler returns an
illegal action, and the observation is split as the convention says."""

import math

import pytest
import torch
import torch.distributions as td

from alf.data_structures import StepType, TimeStep
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import action_mask, dist_utils

LOGITS = torch.tensor([[1.0, 2.0, 3.0, 0.0], [0.5, -1.0, 0.0, 4.0]])
MASK = torch.tensor([[True, False, True, False], [False, True, True, False]])


def _legal_probs_by_hand():
    """Row 0: softmax of (1, 3) on actions 0, 2; row 1: of (-1, 0) on actions 1, 2."""
    z0 = math.exp(1) + math.exp(3)
    z1 = math.exp(-1) + math.exp(0)
    return [
        [math.exp(1) / z0, 0.0, math.exp(3) / z0, 0.0],
        [0.0, math.exp(-1) / z1, 1.0 / z1, 0.0],
    ]


@pytest.mark.parametrize(
    "build",
    [
        lambda logits: td.Categorical(logits=logits),
        lambda logits: dist_utils.Categorical(logits=logits),
        lambda logits: dist_utils.ShiftedCategorical(logits=logits, minimum=0),
    ],
)
def test_masked_probabilities_entropy_and_kl_are_those_of_the_legal_actions(build):
    dist = action_mask.mask_distribution(build(LOGITS), MASK)
    probs = _legal_probs_by_hand()
    torch.testing.assert_close(dist.probs, torch.tensor(probs))
    assert torch.all(dist.probs[~MASK] == 0)  # exactly 0, not tiny
    # H = -sum over legal a of p(a) log p(a)
    entropy = [-sum(p * math.log(p) for p in row if p > 0) for row in probs]
    torch.testing.assert_close(dist_utils.entropy(dist), torch.tensor(entropy))
    torch.testing.assert_close(dist.entropy(), torch.tensor(entropy))
    # torch's Categorical gives the same with -inf logits (its entropy clamps them to the
    # dtype's minimum, as mask_logits sets them)
    minus_inf = build(LOGITS.masked_fill(~MASK, float("-inf")))
    torch.testing.assert_close(minus_inf.entropy(), torch.tensor(entropy))
    # KL(p || q) against the uniform distribution over the same legal actions: log 2 - H
    uniform = action_mask.mask_distribution(build(torch.zeros_like(LOGITS)), MASK)
    kl = [math.log(2) - h for h in entropy]
    torch.testing.assert_close(td.kl_divergence(dist, uniform), torch.tensor(kl))
    torch.testing.assert_close(td.kl_divergence(dist, dist), torch.zeros(2))
    # log π of a legal action and the gradient: finite, nothing flows to an illegal logit
    logits = LOGITS.clone().requires_grad_()
    masked = action_mask.mask_distribution(build(logits), MASK)
    loss = masked.log_prob(torch.tensor([2, 1])).sum() + masked.entropy().sum()
    loss.backward()
    assert torch.isfinite(logits.grad).all() and torch.all(logits.grad[~MASK] == 0)
    torch.testing.assert_close(
        masked.log_prob(torch.tensor([2, 1])),
        torch.tensor([math.log(probs[0][2]), math.log(probs[1][1])]),
    )


def test_no_sampler_returns_an_illegal_action():
    torch.manual_seed(0)
    n = 10_000
    logits = torch.randn(n, 6) * 5
    mask = torch.rand(n, 6) < 0.5
    mask[torch.arange(n), torch.randint(0, 6, (n,))] = True  # at least one legal
    masked = action_mask.mask_logits(logits, mask)
    draws = [
        dist_utils.Categorical(logits=masked).sample(),  # Gumbel-max
        td.Categorical(logits=masked).sample(),  # torch's multinomial
        torch.multinomial(torch.softmax(masked, -1), 1).squeeze(-1),
        dist_utils.get_mode(dist_utils.Categorical(logits=masked)),
        masked.argmax(-1),
        action_mask.uniform_legal_action(mask),
    ]
    # an inverse-CDF sampler from uniforms: the first action whose CDF exceeds u
    probs = torch.softmax(masked.double(), -1)
    u = torch.rand(n, 1, dtype=torch.float64)
    draws.append(torch.searchsorted(probs.cumsum(-1), u, right=True).squeeze(-1))
    for action in draws:
        assert mask[torch.arange(n), action].all()
    # the uniform legal draw is uniform: row 0 of a repeated two-legal mask
    two = torch.tensor([[False, True, False, True]]).expand(20_000, 4)
    frequency = (action_mask.uniform_legal_action(two) == 1).double().mean()
    assert abs(float(frequency) - 0.5) < 0.02


def test_split_observation_and_spec():
    spec = {
        "observation": TensorSpec((3,)),
        "action_mask": BoundedTensorSpec((4,), torch.int8, 0, 1),
    }
    action_spec = BoundedTensorSpec((), torch.int64, 0, 3)
    network_spec, masked = action_mask.split_observation_spec(spec, action_spec, "Alg")
    assert masked and network_spec == TensorSpec((3,))  # one field left: the field itself
    two = dict(spec, other=TensorSpec((2,)))
    network_spec, _ = action_mask.split_observation_spec(two, action_spec, "Alg")
    assert network_spec == {"observation": TensorSpec((3,)), "other": TensorSpec((2,))}
    assert action_mask.split_observation_spec(TensorSpec((3,)), action_spec, "Alg") == (
        TensorSpec((3,)),
        False,
    )
    x = {"observation": torch.ones(2, 3), "action_mask": torch.ones(2, 4, dtype=torch.int8)}
    observation, mask = action_mask.split_observation(x)
    assert observation is x["observation"] and mask is x["action_mask"]
    assert action_mask.split_observation(x["observation"]) == (x["observation"], None)


def test_a_mask_with_a_continuous_or_mismatched_action_spec_is_one_line_value_error():
    spec = {"observation": TensorSpec((3,)), "action_mask": TensorSpec((4,), torch.bool)}
    with pytest.raises(ValueError, match=r"^Alg: observation\['action_mask'\] masks discrete"):
        action_mask.split_observation_spec(
            spec, BoundedTensorSpec((2,), minimum=-1, maximum=1), "Alg"
        )
    with pytest.raises(ValueError, match=r"must have shape \(3,\).*got \(4,\)$"):
        action_mask.split_observation_spec(spec, BoundedTensorSpec((), torch.int64, 0, 2), "Alg")


def test_rows_without_a_legal_action():
    mask = torch.tensor([[1, 0], [0, 0], [0, 0]], dtype=torch.int8)
    step_type = torch.tensor([StepType.MID, StepType.LAST, StepType.MID])
    with pytest.raises(
        ValueError, match=r"^Alg: .*'action_mask'\] has no legal action in row\(s\) \[2\]$"
    ):
        action_mask.legal_mask(mask, step_type, "Alg")
    # a LAST row (its action is ignored) and any row outside acting: all legal, never NaN
    fixed = action_mask.legal_mask(mask[:2], step_type[:2], "Alg")
    assert fixed.tolist() == [[True, False], [True, True]]
    assert action_mask.legal_mask(mask).tolist() == [[True, False], [True, True], [True, True]]
    ts = TimeStep(step_type=step_type, observation={"x": torch.zeros(3, 1), "action_mask": mask})
    observation, legal = action_mask.split_time_step(ts)
    assert observation.shape == (3, 1) and legal.all(-1)[1:].all()
    probs = action_mask.mask_distribution(dist_utils.Categorical(logits=torch.zeros(3, 2)), legal)
    assert torch.isfinite(probs.probs).all() and torch.isfinite(probs.entropy()).all()
