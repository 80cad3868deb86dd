"""Data transformers: what an algorithm sees of the environment's steps and of replay.

- ``base``: ``DataTransformer``, ``TimeStepTransformer``, the default
  ``IdentityDataTransformer``, ``statistics_frozen`` and the field helpers;
- ``transformers``: the per-step transformers (reward clipping and scaling, image
  scaling, the observation and reward normalizers), ``SequentialDataTransformer`` and
  ``create_data_transformer``;
- ``frame_stacker``, ``hindsight_relabeler``: the transformers that read the replay buffer.

Every public name is importable from the package (imported on first access,
``alf.utils.lazy_exports``); ALF's path ``alf.algorithms.data_transformer`` re-exports
them too.
"""

from alf.utils.lazy_exports import lazy_exports

_EXPORTS = {
    "base": (
        "DataTransformer",
        "IdentityDataTransformer",
        "TimeStepTransformer",
        "field_paths",
        "map_fields",
        "statistics_frozen",
    ),
    "frame_stacker": ("FrameStacker",),
    "hindsight_relabeler": ("HindsightExperienceTransformer", "l2_distance_reward_fn"),
    "transformers": (
        "ImageScaleTransformer",
        "ObservationNormalizer",
        "RewardClipping",
        "RewardNormalizer",
        "RewardScaling",
        "SequentialDataTransformer",
        "UntransformedTimeStep",
        "check_order",
        "create_data_transformer",
        "prenormalizing",
    ),
}

__all__ = sorted([name for names in _EXPORTS.values() for name in names])

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
