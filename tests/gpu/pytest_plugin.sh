#!/usr/bin/env bash
# The pytest plugin and gpuclean.contained() on the real GPU: tests/gpu/pytest_plugin.py.
#   tests/gpu/pytest_plugin.sh BIN_DIR WHEEL
# BIN_DIR holds gpuclean; WHEEL is the package built here (pip wheel --no-build-isolation
# ./python): the GPU machine's PyTorch python installs it into a scratch directory, without
# network. GPU_TEST_ARTIFACTS=DIR keeps the pytest outputs.
set -euo pipefail
bin_dir=$(realpath "${1:?usage: tests/gpu/pytest_plugin.sh BIN_DIR WHEEL}")
wheel=$(realpath "${2:?usage: tests/gpu/pytest_plugin.sh BIN_DIR WHEEL}")
cd "$(dirname "$0")"
py=python3
"$py" -c 'import torch, pytest' 2>/dev/null || py=/opt/torch/.venv/bin/python3
WORK=$(mktemp -d /tmp/gpuclean-pytest-gpu.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$py" -m pip install --quiet --no-deps --no-index --target "$WORK/site" "$wheel"
"$py" -c 'import pytest, torch; print("pytest", pytest.__version__, "torch", torch.__version__)'
export WORK ARTIFACTS=${GPU_TEST_ARTIFACTS:-} GPUCLEAN=$bin_dir/gpuclean
export PYTHONPATH=$WORK/site${PYTHONPATH:+:$PYTHONPATH}
timeout 580 "$py" pytest_plugin.py
