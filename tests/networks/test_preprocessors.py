"""``EmbeddingPreprocessor`` and ``PreprocessorNetwork``: embeddings by hand, per-input
preprocessors on a dict observation, combiners, copies, and one-line errors."""

import pytest
import torch

import alf.layers as L
from alf.nest.utils import NestConcat, NestSum
from alf.networks import LSTMCell
from alf.networks.preprocessors import EmbeddingPreprocessor, PreprocessorNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec


def test_discrete_embedding_indexes_from_the_minimum():
    spec = BoundedTensorSpec((), torch.int64, minimum=3, maximum=5)
    embed = EmbeddingPreprocessor(spec, embedding_dim=2)
    with torch.no_grad():
        embed._embedding.weight.copy_(torch.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]))
    out, state = embed(torch.tensor([5, 3, 4]))
    assert torch.equal(out, torch.tensor([[4.0, 5.0], [0.0, 1.0], [2.0, 3.0]])) and state == ()
    assert embed.output_spec == TensorSpec((2,))


def test_continuous_embedding_is_an_mlp():
    torch.manual_seed(0)
    embed = EmbeddingPreprocessor(TensorSpec((3,)), embedding_dim=4, fc_layer_params=(8,))
    assert embed.output_spec == TensorSpec((4,))
    x = torch.randn(5, 3)
    net = embed._embedding
    by_hand = torch.relu(x @ net._fc_layers[0].weight.T + net._fc_layers[0].bias)
    by_hand = by_hand @ net._fc_layers[1].weight.T + net._fc_layers[1].bias
    torch.testing.assert_close(embed(x)[0], by_hand)


def test_dict_observation_through_preprocessors_and_a_combiner():
    spec = dict(
        goal=TensorSpec((2,)),
        obs=TensorSpec((3,)),
        mode=BoundedTensorSpec((), torch.int64, minimum=0, maximum=1),
    )
    net = PreprocessorNetwork(
        spec,
        input_preprocessors=dict(goal=None, obs=L.Scale(2.0), mode=L.OneHot(2)),
        preprocessing_combiner=NestConcat(),
    )
    assert net._processed_input_tensor_spec == TensorSpec((7,))
    x = dict(goal=torch.tensor([[1.0, 2.0]]), obs=torch.tensor([[1.0, 0.0, -1.0]]),
             mode=torch.tensor([1]))  # fmt: skip
    out, _ = net(x)
    # dict leaves in sorted order: goal, mode, obs
    assert torch.equal(out, torch.tensor([[1.0, 2.0, 0.0, 1.0, 2.0, 0.0, -2.0]]))
    summed = PreprocessorNetwork((TensorSpec((2,)), TensorSpec((2,))), None, NestSum())
    assert torch.equal(summed((torch.ones(1, 2), torch.ones(1, 2)))[0], torch.full((1, 2), 2.0))


def test_network_preprocessors_are_copied():
    embed = EmbeddingPreprocessor(TensorSpec((3,)), embedding_dim=2)
    net = PreprocessorNetwork(dict(a=TensorSpec((3,))), dict(a=embed), NestConcat())
    inner = net._input_preprocessors["a"]
    assert inner is not embed and inner._embedding is not embed._embedding
    assert len(list(net.parameters())) == len(list(embed.parameters()))


def test_errors_name_the_culprit():
    with pytest.raises(ValueError, match="give a preprocessing_combiner"):
        PreprocessorNetwork(dict(a=TensorSpec((2,)), b=TensorSpec((2,))))
    with pytest.raises(ValueError, match="remove the combiner"):
        PreprocessorNetwork(TensorSpec((2,)), preprocessing_combiner=NestConcat())
    with pytest.raises(ValueError, match="has a state"):
        PreprocessorNetwork(dict(a=TensorSpec((2,))), dict(a=LSTMCell(2, 2)), NestConcat())
    with pytest.raises(ValueError, match="BoundedTensorSpec"):
        EmbeddingPreprocessor(TensorSpec((), torch.int64), embedding_dim=2)
