"""Environments: gymnasium adapters, wrappers and batched (thread / process) environments.

The public classes and modules are importable from the package, with ALF's names, e.g.
``from alf.environments import suite_gym, create_environment``. They are imported on
first access (``alf.utils.lazy_exports``): a process worker importing
``alf.environments.process_worker`` does not import the rest of the package.
"""

from alf.utils.lazy_exports import lazy_exports

_SUBMODULES = (
    "alf_wrappers",
    "gym_wrappers",
    "suite_atari",
    "suite_dmc",
    "suite_gym",
    "suite_minigrid",
    "suite_robotics",
)

_EXPORTS = {
    "alf_environment": ("AlfEnvironment",),
    "alf_gym_wrapper": ("AlfGymWrapper",),
    "atari_preprocessing": ("DMAtariPreprocessing",),
    "alf_wrappers": (
        "AlfEnvironmentBaseWrapper",
        "AtariTerminalOnLifeLossWrapper",
        "NonEpisodicAgent",
        "RandomFirstEpisodeLength",
        "TimeLimit",
    ),
    "batched_environment": ("BatchedEnvironment",),
    "envpool_environment": ("EnvpoolEnvironment",),
    "gym_wrappers": (
        "ContinuousActionClip",
        "FrameGrayScale",
        "FrameResize",
        "FrameSkip",
        "ImageChannelFirst",
        "MirrorWrapper",
        "NormalizedAction",
    ),
    "parallel_environment": ("FastParallelEnvironment", "ParallelAlfEnvironment"),
    "process_environment": ("ProcessEnvironment",),
    "thread_environment": ("ThreadEnvironment",),
    "utils": ("create_environment",),
}

__all__ = sorted([name for names in _EXPORTS.values() for name in names] + list(_SUBMODULES))

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, _SUBMODULES)
