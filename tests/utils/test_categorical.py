"""dist_utils.Categorical: torch's Categorical computed with fewer kernels."""

import torch
import torch.distributions as td

from alf.utils import dist_utils


def test_matches_torch_categorical():
    torch.manual_seed(0)
    logits = torch.randn(3, 5, 4) * 3
    ours, theirs = dist_utils.Categorical(logits=logits), td.Categorical(logits=logits)
    assert ours.batch_shape == theirs.batch_shape and ours.event_shape == theirs.event_shape
    torch.testing.assert_close(ours.logits, theirs.logits)
    torch.testing.assert_close(ours.probs, theirs.probs)
    torch.testing.assert_close(ours.entropy(), theirs.entropy())
    value = torch.randint(0, 4, (3, 5))
    torch.testing.assert_close(ours.log_prob(value), theirs.log_prob(value))
    broadcast = torch.tensor(2)  # a value broadcast against the batch takes torch's path
    torch.testing.assert_close(ours.log_prob(broadcast), theirs.log_prob(broadcast))
    assert torch.equal(ours.mode, theirs.mode)


def test_log_prob_gradient_and_probs_argument():
    logits = torch.randn(6, 3, requires_grad=True)
    value = torch.tensor([0, 1, 2, 0, 1, 2])
    dist_utils.Categorical(logits=logits).log_prob(value).sum().backward()
    ours = logits.grad.clone()
    logits.grad = None
    td.Categorical(logits=logits).log_prob(value).sum().backward()
    torch.testing.assert_close(ours, logits.grad)
    probs = torch.tensor([[0.2, 0.8]])
    torch.testing.assert_close(
        dist_utils.Categorical(probs=probs).log_prob(torch.tensor([1])), probs[:, 1].log()
    )


def test_shifted_categorical_log_prob_and_gumbel_sampling_frequencies():
    logits = torch.log(torch.tensor([0.1, 0.6, 0.3]))
    dist = dist_utils.ShiftedCategorical(logits=logits.expand(20000, 3), minimum=-1)
    sample = dist.sample()
    assert int(sample.min()) >= -1 and int(sample.max()) <= 1
    frequencies = torch.bincount(sample + 1, minlength=3).float() / sample.numel()
    torch.testing.assert_close(frequencies, logits.exp(), atol=0.02, rtol=0)
    torch.testing.assert_close(dist.log_prob(torch.full((20000,), 0)), logits[1].expand(20000))
