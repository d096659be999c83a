#!/usr/bin/env bash
# The Python package and its pytest plugin (python/): installed offline into a virtual
# environment the way its README says (pip install --no-build-isolation, Debian's setuptools),
# then its own tests run against this build's gpuclean, fake device files and the fake
# libnvidia-ml.so.1.
#   tests/python/run.sh BUILD_DIR [PYTEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(realpath "${1:?usage: tests/python/run.sh BUILD_DIR [PYTEST ARGS...]}")
shift
# Debian's interpreter, whose dist-packages hold python3-pytest and python3-setuptools; a
# python3 earlier on PATH (pyenv, conda) has neither.
python=/usr/bin/python3
venv="$build/python-venv"
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
# pip builds in the source tree (python/build, *.egg-info: ignored by git); a stale build
# directory would install old files.
rm -rf python/build
"$venv/bin/pip" install --quiet --no-build-isolation --no-index ./python
"$python" -m pyflakes python/src python/tests
# -n 2 (pytest-xdist): most of the time is spent waiting on the example suites' own pytest
# processes, so two at a time halve the stage (47 s -> 24 s here). -p no:gpuclean: the outer
# session is the test harness; each example suite it runs is its own
# pytest process, which loads the plugin from the installed entry point.
cd python
GPUCLEAN="$build/gpuclean" GPUCLEAN_FAKE_NVML="$build/tests/fake_nvml/r580" \
  "$venv/bin/python" -m pytest -p no:gpuclean -p no:cacheprovider -q -n 2 tests "$@"
