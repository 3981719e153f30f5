#!/usr/bin/env bash
# Installs what polydyn needs on a fresh Debian machine: PoCL (OpenCL on the CPU), a virtual
# environment in .venv with polydyn and its test dependencies. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! ls /etc/OpenCL/vendors/*pocl* >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq pocl-opencl-icd ocl-icd-libopencl1 gcc >/dev/null
  else
    echo "setup: PoCL is missing and apt-get is not usable here; OpenCL tests will be skipped" >&2
  fi
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.polydyn-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test,bench]"
  touch "$stamp"
fi
