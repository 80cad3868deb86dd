#!/usr/bin/env bash
# Downloads into .whl/ the wheels of alf's dependencies that a GPU machine without network
# lacks (its image has torch, numpy, absl-py, tensorboard, cloudpickle, typing-extensions,
# psutil, pytest, pytest-timeout); benchmarks/gpu_check.sh installs them from there.
# Run here, from the repository root: bash benchmarks/gpu_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=(gymnasium==1.4.0 farama-notifications==0.0.6 gin-config==0.5.0 optree==0.20.0)
for wheel in "${WHEELS[@]}"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl "$wheel"
done
ls -l .whl
