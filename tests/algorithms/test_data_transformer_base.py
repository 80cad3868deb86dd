"""The data transformer modules import without a cycle; the shared field helpers by hand."""

import subprocess
import sys

import pytest
import torch

import alf.algorithms.data_transformer as data_transformer  # ALF's path
import alf.data_transformers
from alf.data_transformers.base import DataTransformer, field_paths, map_fields
from alf.data_transformers.frame_stacker import FrameStacker
from alf.data_transformers.hindsight_relabeler import (
    HindsightExperienceTransformer,
    l2_distance_reward_fn,
)
from alf.tensor_specs import TensorSpec


@pytest.mark.parametrize(
    "module", ["alf.data_transformers.frame_stacker", "alf.data_transformers.hindsight_relabeler"]
)
def test_transformer_modules_import_without_data_transformer(module):
    """Importing either leaf module loads the base module only, not ``data_transformer``."""
    code = (
        f"import sys, {module}\n"
        "print('alf.data_transformers.transformers' in sys.modules, "
        "'alf.data_transformers.base' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "True"]


def test_data_transformer_reexports_the_same_objects():
    # ALF's module path is the package itself, under a second name
    assert data_transformer is alf.data_transformers
    assert data_transformer.DataTransformer is DataTransformer
    assert data_transformer.FrameStacker is FrameStacker
    assert data_transformer.HindsightExperienceTransformer is HindsightExperienceTransformer
    assert data_transformer.l2_distance_reward_fn is l2_distance_reward_fn
    assert issubclass(data_transformer.RewardScaling, DataTransformer)
    # every name ALF's module had, from ``from alf.algorithms.data_transformer import *`` too
    names = {}
    exec("from alf.algorithms.data_transformer import *", names)
    assert {"ObservationNormalizer", "FrameStacker", "create_data_transformer"} <= set(names)
    assert names["ObservationNormalizer"] is alf.data_transformers.ObservationNormalizer


def test_field_paths_checks_the_fields():
    spec = {"image": TensorSpec((2, 3)), "state": {"x": TensorSpec((1,))}}
    assert field_paths(spec, None, "Who") == [""]
    assert field_paths(spec, ["image", "state.x"], "Who") == ["image", "state.x"]
    with pytest.raises(ValueError, match=r"Who: field 'state.y' is not in the observation"):
        field_paths(spec, ["state.y"], "Who")


def test_map_fields_replaces_only_the_listed_fields():
    observation = {"a": torch.tensor([1.0, 2.0]), "b": {"c": torch.tensor([3.0])}}
    seen = []

    def double(field, value):
        seen.append(field)
        return 2 * value

    out = map_fields(observation, ["a", "b.c"], double)
    assert seen == ["a", "b.c"]
    assert out["a"].tolist() == [2.0, 4.0] and out["b"]["c"].tolist() == [6.0]
    assert observation["a"].tolist() == [1.0, 2.0]  # the input is not changed
    whole = map_fields(torch.tensor([5.0]), [""], double)
    assert whole.tolist() == [10.0]
