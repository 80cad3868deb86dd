"""Installs the ``alf`` package: an ALF-style reinforcement-learning framework on PyTorch."""

from pathlib import Path

from setuptools import find_packages, setup

setup(
    name="alf",
    version="0.1.0",
    description="Agent Learning Framework: configurable reinforcement learning on PyTorch",
    long_description=(Path(__file__).parent / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["alf", "alf.*"]),
    package_data={"alf": ["examples/*.gin", "examples/*.py"]},
    install_requires=[
        "torch>=2.2",
        "gymnasium[classic-control]>=1.0",
        "numpy>=1.24",
        "gin-config>=0.5",
        "absl-py>=1.0",
        "tensorboard>=2.12",
        "cloudpickle>=2.0",
        "optree>=0.10",
    ],
    extras_require={
        # mujoco < 4 in every extra: dm_control (1.0.50, the latest) fails on mujoco 4.0
        # (MjModel.flex_vertedge), and one pin keeps pip from installing 4.0 for one extra and
        # downgrading it over mujoco-core's files for another
        "mujoco": ["mujoco>=3.0,<4", "gymnasium[mujoco]>=1.0"],
        "dmc": ["dm_control>=1.0.50", "mujoco>=3.17,<4"],  # alf.environments.suite_dmc
        "robotics": ["gymnasium-robotics>=1.4", "mujoco>=3.0,<4"],  # suite_robotics (Fetch)
        "envpool": ["envpool>=0.8"],  # create_environment.batched_backend='envpool'
        "minigrid": ["minigrid>=2.3"],  # alf.environments.suite_minigrid (grid worlds)
        "atari": ["ale-py>=0.9"],  # alf.environments.suite_atari (the ROMs ship with ale-py)
        "test": ["pytest>=7", "pytest-timeout>=2.1", "psutil>=5.9", "ruff>=0.5"],
        "video": ["imageio>=2.30", "imageio-ffmpeg>=0.4"],
        "benchmarks": ["stable-baselines3>=2.3", "sb3-contrib>=2.3"],
        "pbt": ["pyyaml>=6.0"],  # YAML mutation files (alf.pbt.mutation.load_mutations)
        "slurm": ["submitit>=1.5"],  # alf.bin.pbt_launch --backend slurm
        "dev": ["py-spy>=0.3.14"],  # a sampling profiler: py-spy record -- alf-train ...
        "ray": ["ray>=2.9"],  # SamplerConfig.backend='ray' (remote samplers as Ray actors)
        "wandb": ["wandb>=0.17"],  # TrainerConfig.use_wandb / alf-train --wandb
        "onnx": ["onnx>=1.16", "onnxscript>=0.2", "onnxruntime>=1.18"],  # alf-export to ONNX
        "plot": ["matplotlib>=3.7"],  # alf-plot (learning curves)
        "box2d": ["Box2D>=2.3.10"],  # gymnasium's BipedalWalker, LunarLander (a wheel: no swig)
    },
    entry_points={
        "console_scripts": [
            "alf-train = alf.bin.train:run",
            "alf-play = alf.bin.play:run",
            "alf-export = alf.bin.export:run",
            "alf-plot = alf.bin.plot:run",
        ],
    },
)
