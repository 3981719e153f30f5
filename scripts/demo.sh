#!/usr/bin/env bash
# The main job: install what is needed, then compile bundled kernels and run them over shapes.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/python scripts/demo.py "$@"
