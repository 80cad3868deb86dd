"""Moved to ``alf.data_transformers``; this path (ALF's) keeps older imports working."""

from alf.data_transformers.base import (  # noqa: F401
    DataTransformer,
    IdentityDataTransformer,
    TimeStepTransformer,
    field_paths,
    map_fields,
    statistics_frozen,
)
from alf.data_transformers.frame_stacker import FrameStacker  # noqa: F401
from alf.data_transformers.hindsight_relabeler import (  # noqa: F401
    HindsightExperienceTransformer,
    l2_distance_reward_fn,
)
from alf.data_transformers.transformers import (  # noqa: F401
    ImageScaleTransformer,
    ObservationNormalizer,
    RewardClipping,
    RewardNormalizer,
    RewardScaling,
    SequentialDataTransformer,
    UntransformedTimeStep,
    check_order,
    create_data_transformer,
    prenormalizing,
)

__all__ = [
    "DataTransformer",
    "FrameStacker",
    "HindsightExperienceTransformer",
    "IdentityDataTransformer",
    "ImageScaleTransformer",
    "ObservationNormalizer",
    "RewardClipping",
    "RewardNormalizer",
    "RewardScaling",
    "SequentialDataTransformer",
    "TimeStepTransformer",
    "UntransformedTimeStep",
    "check_order",
    "create_data_transformer",
    "field_paths",
    "l2_distance_reward_fn",
    "map_fields",
    "prenormalizing",
    "statistics_frozen",
]
