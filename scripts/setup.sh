#!/usr/bin/env bash
# Create .venv and install agentsum with its test dependencies. Idempotent.
# torch is installed first at 2.13.0: on these machines that takes a local CPU wheel; elsewhere pip
# downloads it (set TORCH_SPEC to choose another build, e.g. TORCH_SPEC="torch" for a CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -c "import torch" 2>/dev/null || python -m pip install --quiet "${TORCH_SPEC:-torch==2.13.0}"
python -m pip install --quiet -e ".[test]"
echo "agentsum installed in $(pwd)/.venv" >&2
