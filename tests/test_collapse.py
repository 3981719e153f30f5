"""Two loops along contiguous rows printed as one loop (lowering/collapse.py): which pairs
collapse, the ones that must not, and compiled kernels against the reference at empty,
single and prime sizes and every region's points. ``global_avgpool``, ``instance_norm`` and
``batchnorm_infer`` of tests/phrasings.py are checked with the other phrasings."""

from __future__ import annotations

import pytest

import polydyn as pd
from polydyn import f32, f64, out
from polydyn.testing import check_kernel, region_points
from tests import phrasings as ph

B, C, H, W = pd.sym("B C H W")


@pd.operator()
def scale_planes(X: f64[B, C, H, W], Y: out(f64[B, C, H, W])):
    """Element-wise over NCHW: the loops over each plane's rows and columns as one."""
    for b, c, y, x in pd.grid(B, C, H, W):
        Y[b, c, y, x] = X[b, c, y, x] * 2.0 + 1.0


@pd.operator()
def shifted(X: f32[H, W + 1], Y: out(f32[H, W])):
    """``X[y, x + 1]`` is not the element at ``y * W + x + 1`` of a run of W-wide rows."""
    for y, x in pd.grid(H, W):
        Y[y, x] = X[y, x] + X[y, x + 1]


@pd.operator()
def wider_rows(X: f32[H, W + 1], Y: out(f32[H, W])):
    """Rows of ``W + 1`` elements, of which the loops read ``W``: no contiguous run."""
    for y, x in pd.grid(H, W):
        Y[y, x] = X[y, x] * 3.0


@pd.operator(assume="H >= 1")
def carried_down(X: f32[H, W], Y: out(f32[H, W])):
    """The loop over rows carries a dependence the loop over columns does not: its vector
    loop must stay within a row."""
    for x in range(W):
        Y[0, x] = X[0, x]
    for y in range(1, H):
        for x in range(W):
            Y[y, x] = Y[y - 1, x] * 0.5 + X[y, x]


@pd.operator()
def per_row(X: f32[H, W], r: f32[H], Y: out(f32[H, W])):
    """``r[y]`` uses the row alone: with the row at 0 it would read ``r[0]`` throughout."""
    for y, x in pd.grid(H, W):
        Y[y, x] = X[y, x] * r[y]


@pd.operator()
def transposed(X: f32[H, W], Y: out(f32[W, H])):
    for y, x in pd.grid(H, W):
        Y[x, y] = X[y, x]


@pd.operator()
def lower(X: f32[H, H], Y: out(f32[H, H])):
    """The inner loop's extent depends on the row."""
    for y in range(H):
        for x in range(y + 1):
            Y[y, x] = X[y, x] + 1.0


def _runs(op: pd.Operator) -> list[str]:
    """The loop headers over a product of two extents in the operator's C."""
    return [line.strip() for line in pd.compile(op).source.splitlines()
            if line.strip().startswith("for (") and ") * (" in line]


def test_collapsed_pairs() -> None:
    assert _runs(ph.global_avgpool) and all("< (H) * (W);" in h for h in _runs(
        ph.global_avgpool))
    assert _runs(scale_planes) and all("< (H) * (W);" in h for h in _runs(scale_planes))
    assert any("< (H) * (W);" in h for h in _runs(ph.batchnorm_infer))
    assert any("< (H) * (W);" in h for h in _runs(ph.instance_norm))


def test_a_pools_sum_is_one_vector_loop() -> None:
    """The generic variant's sum over a plane: one loop, vectorized as a reduction."""
    source = pd.compile(ph.global_avgpool).source.split("variant generic")[-1]
    lines = [line.strip() for line in source.splitlines()]
    at = next(k for k, line in enumerate(lines) if "< (H) * (W);" in line)
    assert lines[at - 1].startswith("#pragma omp simd") and "reduction(+:s)" in lines[at - 1]


@pytest.mark.parametrize("op", [shifted, wider_rows, carried_down, per_row, transposed, lower],
                         ids=lambda op: op.scop.name)
def test_not_collapsed(op: pd.Operator) -> None:
    assert _runs(op) == []


def test_opencl_keeps_its_loops() -> None:
    from polydyn.pipeline import generate

    sources = generate(ph.global_avgpool.scop, target="opencl").sources
    assert not any(") * (" in line and line.strip().startswith("for (")
                   for text in sources.values() for line in text.splitlines())


@pytest.mark.parametrize("op", [ph.global_avgpool, scale_planes, shifted, wider_rows,
                                carried_down, per_row, transposed, lower],
                         ids=lambda op: op.scop.name)
def test_compiled_against_reference(op: pd.Operator) -> None:
    kernel = pd.compile(op)
    for n in (0, 1, 2, 7, 17):
        sizes = {s: max(n, 1) if s in op.scop.assume else n for s in kernel.scop.syms}
        check_kernel(kernel, sizes)
        check_kernel(kernel, {**sizes, "H": 3} if "H" in sizes else sizes)
    for index, v in enumerate(kernel.variants):
        for sizes in region_points(kernel.scop, v.region, hi=40, limit=3):
            check_kernel(kernel, sizes, variant=index)


def test_the_pass_is_pure_and_keeps_every_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass returns a new tree and leaves its input as it was; walks over its output see
    the same statement instances, in the same order, as over its input."""
    from polydyn.codegen_c import functions
    from polydyn.lowering import collapse as pass_module
    from polydyn.lowering.tree import Collapsed, children, instances, tree_text
    from polydyn.pipeline import generate
    from polydyn.target import CpuTarget

    def nodes(n):  # every node, a Collapsed node's inner loop included
        yield n
        for c in (*children(n), *([n.inner] if isinstance(n, Collapsed) else [])):
            yield from nodes(c)

    seen = []
    real = pass_module.collapse

    def spy(tree, scop):
        before = tree_text(tree)
        lowered = real(tree, scop)
        seen.append((tree, before, lowered))
        return lowered

    monkeypatch.setattr(pass_module, "collapse", spy)
    monkeypatch.setattr(functions, "WORKERS_MIN_SECONDS", float("inf"))  # spied here
    generate(ph.global_avgpool, CpuTarget.of("avx512", 1 << 20))
    assert seen and any(isinstance(x, Collapsed) for _, _, lowered in seen for x in nodes(lowered))
    for tree, before, lowered in seen:
        assert tree_text(tree) == before
        assert not any(isinstance(x, Collapsed) for x in nodes(tree))
        assert list(instances(lowered)) == list(instances(tree))
