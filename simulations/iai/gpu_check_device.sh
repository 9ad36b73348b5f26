#!/usr/bin/env bash
# The GPU check (python -m simulations.iai.gpu_check) on a machine without network access whose
# python3 has torch and torch-geometric with CUDA: a virtual environment over that python's
# packages, Flower and the app's other missing dependencies from carried wheels, the app without
# its dependency pins (they would ask for another torch), then the check, bounded by a timeout.
#
# Before, on a machine with the package index (same Python version as the GPU machine's):
#   pip download --only-binary=:all: --python-version 3.12 -d wheels \
#       flwr==1.42.0 hydra-core cryptography faiss-cpu
# Then, in the repository root on the GPU machine:
#   bash simulations/iai/gpu_check_device.sh wheels "$OUT"      # OUT: where gpu_check.json goes
set -euo pipefail
wheels=${1:?folder of carried wheels}
out=${2:-.}
python3 -m venv --system-site-packages /tmp/gpu-check-venv
. /tmp/gpu-check-venv/bin/activate
pip install --quiet --no-index --find-links "$wheels" flwr==1.42.0 hydra-core cryptography faiss-cpu
pip install --quiet --no-deps --no-build-isolation -e .
export FLWR_TELEMETRY_ENABLED=0
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
timeout 300 python -m simulations.iai.gpu_check --out "$out/gpu_check.json"
