#!/usr/bin/env bash
# The Python package's tests (tests/python: plain loom.Comm and the
# torch.distributed backend "loom") in the project's virtual environment,
# which `make python` (and so `make test`) creates and installs the package
# into. A missing environment is a failure, never a skip.
set -euo pipefail
BUILD=$(realpath "$1")
SRC=$(realpath "$2")
venv="${LOOM_VENV:-$SRC/.venv}"
if [[ ! -x "$venv/bin/python" ]]; then
  echo "no virtual environment at $venv: run 'make python' (make test does it first)" >&2
  exit 1
fi
cd "$(mktemp -d)"
LOOM_BUILD_DIR="$BUILD" timeout 900 "$venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$SRC/tests/python"
