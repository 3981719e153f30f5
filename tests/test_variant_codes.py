"""Each variant's C function is built on its own (codegen_c/functions.py): in forked worker
processes where the machine has three CPUs or more and the work is long enough (both forced
here), with the same text as in this process, and on two CPUs in this process; a unit that
fails in a worker raises its own error here, and a worker that dies costs only time."""

from __future__ import annotations

import os

import pytest

import polydyn as pd
from polydyn import f32, out
from polydyn.codegen_c import functions, toolchain
from polydyn.errors import ScheduleError
from polydyn.pipeline import generate
from polydyn.testing import check_everywhere

B, N, M, K = pd.sym("B N M K")


@pd.operator(assume="B >= 1 and N >= 1 and M >= 1 and K >= 1")
def batched_linear(X: f32[B, N, K], W: f32[M, K], Y: out(f32[B, N, M])):
    for b, i, j in pd.grid(B, N, M):
        acc = 0.0
        for k in range(K):
            acc += X[b, i, k] * W[j, k]
        Y[b, i, j] = acc


def _sources(monkeypatch, cpus: int) -> dict[str, str]:
    monkeypatch.setattr(toolchain, "usable_cpus", lambda: cpus)
    monkeypatch.setattr(functions, "WORKERS_MIN_SECONDS", 0.0)  # workers for any operator
    return generate(batched_linear, "c", max_tile=8).sources


def test_workers_print_what_this_process_prints(monkeypatch):
    here = _sources(monkeypatch, 1)
    heard = []
    real = functions.variant_codes

    def spy(units, with_tree=False, on_code=None, processes=None):
        return real(units, with_tree, lambda code: (heard.append(code), on_code and
                                                    on_code(code)), processes)

    monkeypatch.setattr("polydyn.codegen_c.functions.variant_codes", spy)
    there = _sources(monkeypatch, 3)
    assert there == here
    n = here["batched_linear.c"].count("/* variant ")
    assert n >= 4 and len(heard) == n  # each function heard of once
    # a variant's names are its own: the first register tile of each function is pd_acc1
    functions_text = here["batched_linear.c"].split(toolchain.UNIT_BREAK)[1:-1]
    tiled = [f for f in functions_text if "pd_acc" in f]
    assert tiled and all("pd_acc1[" in f for f in tiled)


def test_the_kernel_built_in_workers_is_right(monkeypatch, tmp_path):
    monkeypatch.setattr(toolchain, "usable_cpus", lambda: 3)
    monkeypatch.setattr(functions, "WORKERS_MIN_SECONDS", 0.0)
    kernel = pd.compile(batched_linear, max_tile=8, cache_dir=tmp_path)
    # the syms in the operator's order (B, N, K, M): every variant at its region's edges
    check_everywhere(kernel, [(1, 1, 1, 1), (2, 9, 5, 17), (3, 16, 9, 8)], hi=20, limit=3)


def test_a_unit_failing_in_a_worker_raises_its_error_here(monkeypatch, tmp_path):
    real = functions.variant_code
    parent = os.getpid()
    built_here = []

    def failing(unit, with_tree=False):
        if os.getpid() != parent:  # every unit a worker starts fails there
            (tmp_path / unit.fname).touch()
            raise ScheduleError(f"no luck for {unit.fname}")
        if (tmp_path / unit.fname).exists():  # and again here
            built_here.append(unit.fname)
            raise ScheduleError(f"no luck for {unit.fname}")
        return real(unit, with_tree)

    monkeypatch.setattr(functions, "variant_code", failing)
    with pytest.raises(ScheduleError, match="no luck for batched_linear_v"):
        _sources(monkeypatch, 3)
    assert list(tmp_path.iterdir())  # the workers ran and failed
    assert len(built_here) == 1  # the first failure, raised again here


def test_two_cpus_build_in_this_process(monkeypatch):
    parent = os.getpid()
    real = functions.variant_code
    where = set()

    def spy(unit, with_tree=False):
        where.add(os.getpid())
        return real(unit, with_tree)

    monkeypatch.setattr(functions, "variant_code", spy)
    _sources(monkeypatch, 2)
    assert where == {parent}


def test_a_worker_that_dies_costs_only_time(monkeypatch, tmp_path):
    here = _sources(monkeypatch, 1)
    real = functions.variant_code
    parent = os.getpid()

    def dying(unit, with_tree=False):
        if os.getpid() != parent:  # every worker dies at its first unit
            (tmp_path / "died").touch()
            os._exit(3)
        return real(unit, with_tree)

    monkeypatch.setattr(functions, "variant_code", dying)
    assert _sources(monkeypatch, 3) == here
    assert (tmp_path / "died").exists()
