"""The typed loop tree (lowering/tree.py): what it reads from isl's annotated AST."""

from __future__ import annotations

import islpy as isl
import pytest

import polydyn as pd
from polydyn import f32, i32, out
from polydyn.codegen_c import functions
from polydyn.lowering import collapse as pass_module
from polydyn.lowering.tree import Instance, Loop, MarkNode, Node, children, has_loop
from polydyn.pipeline import generate
from polydyn.target import CpuTarget
from tests import phrasings as ph


def _lowered(op, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Node, object]]:
    """The loop trees of ``op``'s C variants, as the lowering passes receive them, each with
    its Scop (the operator's, or a rewrite of it)."""
    seen: list[tuple[Node, object]] = []
    real = pass_module.collapse
    # the variants built in this process (a forked worker's spy would append to its own list)
    monkeypatch.setattr(functions, "WORKERS_MIN_SECONDS", float("inf"))
    monkeypatch.setattr(pass_module, "collapse",
                        lambda tree, scop: seen.append((tree, scop)) or real(tree, scop))
    generate(op, CpuTarget.of("avx512", 1 << 20))
    return seen


def _trees(op, monkeypatch: pytest.MonkeyPatch) -> list[Node]:
    return [tree for tree, _ in _lowered(op, monkeypatch)]


def _instances_with_loops(n: Node, around: tuple[Loop, ...] = ()):
    if isinstance(n, Instance):
        yield n, around
    for c in children(n):
        yield from _instances_with_loops(c, (*around, n) if isinstance(n, Loop) else around)


@pytest.mark.parametrize("op", [ph.matmul_scalar, ph.softmax_if, ph.global_avgpool],
                         ids=lambda op: op.scop.name)
def test_every_instance_has_its_iterator_map(op, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each statement instance carries isl's ``{ [loops] -> S[i] }``, its loops named as the
    AST names the iterators around it; along the innermost loop around it, exactly the
    statement iterators whose AST expression uses that loop move, each by a whole step."""
    found = 0
    for tree in _trees(op, monkeypatch):
        for inst, loops in _instances_with_loops(tree):
            found += 1
            assert inst.iterators is not None
            space = inst.iterators.get_space()
            names = {space.get_dim_name(isl.dim_type.in_, d)
                     for d in range(space.dim(isl.dim_type.in_))}
            assert {loop.iterator for loop in loops} <= names
            if not loops or loops[-1].degenerate:
                continue
            it = loops[-1].iterator
            steps = inst.steps(it)
            assert steps is not None
            uses = [it in _ids(e) for e in inst.args]
            assert [s != 0 for s in steps] == uses, (inst.name, it, steps)
    assert found


def _ids(e: isl.AstExpr) -> set[str]:
    from polydyn.lowering.tree import expr_ids

    return set(expr_ids(e))


def test_the_ast_dump_shows_the_lowered_tree(tmp_path) -> None:
    """``6-ast.txt``: each variant's tree after the passes, with its marks, what each loop
    carries and the collapsed pairs."""
    from polydyn.options import Options

    generate(ph.global_avgpool, "c", options=Options(dump_dir=str(tmp_path)))
    (dump,) = tmp_path.rglob("6-ast.txt")
    text = dump.read_text()
    assert "for (pd_c" in text and "// parallel" in text and "// collapsed: pd_c" in text
    assert "reduce(+:s)" in text


def _outer_parallel_loops(n: Node, found: list[Loop]) -> list[Loop]:
    """The outermost loops that carry nothing and have loops inside."""
    if isinstance(n, Loop) and n.carry.parallel and not n.degenerate and has_loop(n.body):
        found.append(n)
        return found
    for c in children(n):
        _outer_parallel_loops(c, found)
    return found


def test_uneven_work_tells_triangles_from_partial_tiles(monkeypatch) -> None:
    """A loop over a triangle (the lower half of ``A A^T``) gives its iterations unequal
    work; the tiled and untiled loops of the rectangular product do not (their last partial
    tile changes the inner trip count at one value only); the C printer shares the
    triangle's iterations out cyclically."""
    from polydyn.lowering.work import uneven_work
    from tests.test_repacked_products import gram, gram_lower

    lower = [loop for t in _trees(gram_lower, monkeypatch)
             for loop in _outer_parallel_loops(t, [])]
    square = [loop for t in _trees(gram, monkeypatch) for loop in _outer_parallel_loops(t, [])]
    assert lower and square
    assert any(uneven_work(loop) for loop in lower)
    assert not any(uneven_work(loop) for loop in square)
    import polydyn as pd

    assert "schedule(static, 1)" in pd.compile(gram_lower).source


def _marked_loops(n: Node, mark: tuple[bool, str] = (False, ""), inside: bool = False):
    """Every loop of ``n`` that runs more than once, with its mark's parallel flag and role
    and whether a loop around it is marked parallel."""
    if isinstance(n, MarkNode) and n.loop is not None:
        yield from _marked_loops(n.node, (n.loop.parallel, n.loop.role), inside)
        return
    if isinstance(n, Loop):
        if not n.degenerate:
            yield n, *mark, inside
        yield from _marked_loops(n.body, (False, ""), inside or mark[0])
        return
    for c in children(n):
        yield from _marked_loops(c, mark, inside)


def _forms(lowered: list[tuple[Node, object]], counted: bool = True
           ) -> list[tuple[Loop, bool, object]]:
    """(loop, a loop around it is parallel, its OpenMP form) for every loop of the lowered
    trees (``_lowered``)."""
    from polydyn.lowering.openmp import Around, Locals, loop_form

    out = []
    for tree, scop in lowered:
        names = Locals.of(scop, tree)
        for loop, parallel, role, inside in _marked_loops(tree):
            form = loop_form(loop, parallel, role, Around(inside, counted, blocks=True), scop,
                             names)
            out.append((loop, inside, form))
    return out


def test_openmp_forms_are_typed_choices_of_the_tree(monkeypatch) -> None:
    """``lowering/openmp.loop_form``: the outermost parallel loop of a row reduction into a
    local scalar takes threads with the scalar private; the innermost loop of the reduction
    is ``omp simd`` with its reduction clause and the sequential loop between gets nothing;
    an elementwise row's stride-1 loop inside a parallel one is ``omp simd``; a triangle's
    outer loop goes round the threads and a rectangular band of register tiles opens a team
    region, but only where the trip count is printed."""
    from polydyn.lowering.openmp import PARALLEL_MIN_WORK, Simd, Team, Threads
    from tests.test_repacked_products import gram_lower

    pool = _forms(_lowered(ph.global_avgpool, monkeypatch))
    outer = [f for loop, inside, f in pool if not inside and loop.carry.parallel]
    assert outer and all(f == Threads(("s",), PARALLEL_MIN_WORK, True, False) for f in outer)
    sums = [(loop, f) for loop, inside, f in pool if loop.carry.reductions]
    assert {f for loop, f in sums if not has_loop(loop.body)} == {Simd((), (("+", "s"),))}
    assert {f for loop, f in sums if has_loop(loop.body)} == {None}
    rows = [f for loop, inside, f in _forms(_lowered(ph.gelu_tanh, monkeypatch))
            if inside and not has_loop(loop.body)]
    assert rows and set(rows) == {Simd()}
    lowered = _lowered(gram_lower, monkeypatch)
    triangle = [f for loop, inside, f in _forms(lowered) if not inside]
    assert any(isinstance(f, Threads) and f.cyclic for f in triangle)
    assert any(isinstance(f, Team) for f in triangle)
    uncounted = [f for loop, inside, f in _forms(lowered, counted=False)
                 if not inside]
    assert not any(isinstance(f, Team) or (isinstance(f, Threads) and f.per_thread)
                   for f in uncounted)


N_, M_ = pd.sym("N M")


@pd.operator()
def _stats(X: f32[N_, M_], I: i32[N_], Y: out(f32[3]), C: out(i32[1])):  # noqa: E741
    """Whole-array reductions into local scalars: a sum through another local (a call's
    value read twice, which ``scop/inline.py`` leaves), a maximum, a minimum (one loop
    nest), and an integer sum."""
    s = 0.0
    hi = -pd.inf
    lo = pd.inf
    for i, j in pd.grid(N_, M_):
        t = pd.exp(X[i, j])
        s += t * t
        hi = max(hi, X[i, j])
        lo = min(lo, X[i, j])
    c = 0
    for i in range(N_):
        c += I[i]
    Y[0] = s
    Y[1] = hi
    Y[2] = lo
    C[0] = c


def test_whole_array_reductions_share_blocks_among_threads(monkeypatch) -> None:
    """An outermost loop that only reduces into local scalars is a ``Blocks`` form: each
    thread reduces a block of its iterations into copies of its own, combined in the
    threads' order. Checked below and above the threshold, with blocks of unequal length."""
    from polydyn.lowering.openmp import REDUCTION_PARALLEL_MIN_WORK, Blocks
    from polydyn.testing import check_kernel

    forms = [f for loop, inside, f in _forms(_lowered(_stats, monkeypatch))
             if isinstance(f, Blocks)]
    assert {name for f in forms for _, name in f.reductions} == {"s", "hi", "lo", "c"}
    assert all(f.private == (("t",) if ("+", "s") in f.reductions else ()) for f in forms)
    kernel = pd.compile(_stats)
    assert "#pragma omp parallel if(" in kernel.source
    for n, m in [(0, 5), (1, 1), (3, 7), (257, 131), (131, 257), (1021, 37), (40009, 1)]:
        check_kernel(kernel, {"N": n, "M": m}, seed=n)
    assert min(257 * 131, 40009) >= REDUCTION_PARALLEL_MIN_WORK
    from kernels import load

    softmax = pd.compile(load("softmax")[0])  # one row: its max and its sum, in blocks
    assert "#pragma omp parallel if(" in softmax.source
    check_kernel(softmax, {"N": 1, "L": 40009})
    # a single_thread() policy recipe, and a loop recipe that marks no loop parallel, keep
    # every loop on one thread
    for recipe in (pd.Schedule.isl().single_thread(), pd.Schedule().tile(j=64)):
        alone = pd.compile(_stats, variants=[("true", recipe)])
        assert "omp parallel" not in alone.source
        check_kernel(alone, {"N": 257, "M": 131})
