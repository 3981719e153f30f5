"""Test setup: the repository root on sys.path (for `kernels`) and the `slow` marker."""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: larger sweeps; deselect with -m 'not slow'")
