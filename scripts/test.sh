#!/usr/bin/env bash
# The test suite: installs what it needs, then runs pytest, one worker per CPU (pytest-xdist;
# `-n 0` runs in this process). Under CI (CI=true) the slow sweeps are left out; run
# `scripts/test.sh -m ""` for everything.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export POLYDYN_CACHE_DIR="${POLYDYN_CACHE_DIR:-$PWD/.cache/polydyn}"
if [ "${CI:-}" = "true" ] && [ "$#" = 0 ]; then
  set -- -m "not slow"
fi
exec .venv/bin/python -m pytest -q -n auto "$@"
