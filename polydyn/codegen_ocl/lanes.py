"""Which kernel bodies a work-group of lanes can share (the lane kernels of mapping.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import islpy as isl

from ..lowering.tree import Block, If, Instance, Loop, MarkNode, Node, has_loop
from ..schedule.reductions import REDUCE_LOOP, cell_reduction_of
from ..scop.exprs import Load
from ..scop.ir import Scop
from .scalars import scalar_users

if TYPE_CHECKING:
    from .plan import KernelSpec

# local scalar types a lane kernel combines (the prelude's pd_max_<type>/pd_min_<type>)
LANE_TYPES = ("f32", "f64", "i32", "i64")


def lane_body(scop: Scop, ast: Node, statements: set[str]) -> bool:
    """Whether a kernel body can be dealt out to lanes: it has a loop, every loop outside
    all others (``top_loops``) is parallel or carried only by reductions (into local scalars
    of the types the combine knows, or into one cell per statement: ``cell_reductions``),
    and each local scalar it touches is touched by no other kernel's statement (it stays in
    the lanes' registers). Statements outside the loops run in every lane when they assign a
    local scalar, else in lane 0 between barriers."""
    loops = top_loops(ast)
    if not loops or _conditional(ast) or not all(_shared(scop, loop) for loop in loops):
        return False
    return all(users <= statements or not users & statements
               for users in scalar_users(scop).values())


def _conditional(ast: Node) -> bool:
    """Whether an if stands outside the loops of a kernel body: the barriers after its loops
    and around lane 0's statements would then stand under a condition, which PoCL runs
    wrongly (it corrupted memory with a uniform condition on the sizes)."""
    found = []

    def at_for(n: Loop) -> bool:
        return _walk(n.body, at_for, at_if=at_if) if n.degenerate else True

    def at_if(n: Node) -> None:
        found.append(n)

    _walk(ast, at_for, at_if=at_if)
    return bool(found)


def _shared(scop: Scop, loop: Node) -> bool:
    carry = loop.carry
    return carry.parallel or (carry.kind == REDUCE_LOOP and all(
        scop.array(name).dtype in LANE_TYPES for _, name in carry.reductions)) or \
        cell_reductions(scop, loop) is not None


def uses_cells(ast: Node) -> bool:
    """Whether a lane kernel's body (``lane_body``) has a loop of cell reductions: its
    lanes then only pay where the one-point-per-work-item grid leaves the device idle."""
    return any(not (carry.parallel or carry.kind == REDUCE_LOOP)
               for carry in (loop.carry for loop in top_loops(ast) or ()))


def top_loops(ast: Node) -> list[Node] | None:
    """The loops of a kernel body outside all others (a loop of one value is a block around
    its body); None where the body holds a node other than blocks, ifs, marks, loops and
    statements."""
    loops: list[Node] = []

    def at_for(n: Loop) -> bool:
        if n.degenerate:
            return _walk(n.body, at_for)
        loops.append(n)
        return True

    return loops if _walk(ast, at_for) else None


def _walk(n: Node, at_for: Callable[[Loop], bool],
          at_user: Callable[[Node], None] = lambda n: None,
          at_if: Callable[[Node], None] = lambda n: None) -> bool:
    """Through blocks, ifs (``at_if`` hears of each) and marks to the for nodes (``at_for``:
    whether the walk goes on) and the statements (``at_user``); False at any other node."""
    if isinstance(n, Block):
        return all(_walk(c, at_for, at_user, at_if) for c in n.children)
    if isinstance(n, If):
        at_if(n)
        return _walk(n.then, at_for, at_user, at_if) and \
            (n.orelse is None or _walk(n.orelse, at_for, at_user, at_if))
    if isinstance(n, MarkNode):
        return _walk(n.node, at_for, at_user, at_if)
    if isinstance(n, Loop):
        return at_for(n)
    if isinstance(n, Instance):
        at_user(n)
        return True
    return False


@dataclass(frozen=True)
class CellReduction:
    """A statement under a lane loop that reduces into one cell for the whole loop nest
    (``C[i, j] += A[i, k] * B[k, j]`` under ``k``): each lane accumulates its iterations in
    ``pd_cell<k>``, the lanes' values are combined, lane 0 stores the cell. ``call``: one of
    its AST calls (the cell's subscripts read only iterators outside the loop)."""

    statement: str
    array: str
    op: str
    call: Instance


def cell_reductions(scop: Scop, loop: Node) -> list[CellReduction] | None:
    """The reductions of a loop whose every statement reduces (``+``, ``max``, ``min``) into
    a cell that no loop of the nest moves, each statement into an array of its own that no
    statement of the nest reads (so the updates of a cell are the loop's only carried
    dependences); None for any other loop."""
    nest = _calls_and_loops(loop) if isinstance(loop, Loop) else None
    if nest is None:
        return None
    calls, inner = nest
    found: dict[str, CellReduction] = {}
    for call in calls:
        name = call.name
        stmt = scop.statement(name)
        red = cell_reduction_of(stmt)
        if red is None or scop.array(red[0]).dtype not in LANE_TYPES:
            return None
        target = stmt.target
        assert isinstance(target, Load)
        used = set().union(*(i.vars() for i in target.index)) if target.index else set()
        args = dict(zip(stmt.iters, call.args, strict=True))
        if any(_ids(args[it]) & inner for it in used if it in args):
            return None  # the cell moves with a loop of the nest
        cell = [args[it].to_C_str() for it in sorted(used) if it in args]
        if name in found:
            old = found[name]
            first = dict(zip(stmt.iters, old.call.args, strict=True))
            if cell != [first[it].to_C_str() for it in sorted(used) if it in first]:
                return None
            continue
        found[name] = CellReduction(name, red[0], red[1], call)
    arrays = [c.array for c in found.values()]
    if not found or len(set(arrays)) < len(arrays):
        return None
    for c in found.values():  # a statement's own cell only (``max(T[x], e)``)
        stmt = scop.statement(c.statement)
        if any(isinstance(x, Load) and x.array in arrays and x != stmt.target
               for x in stmt.value.walk()):
            return None
    return list(found.values())


def _calls_and_loops(loop: Node) -> tuple[list[Instance], set[str]] | None:
    """The statement calls of a loop nest and the iterators of its loops; None where it
    holds another kind of node."""
    calls: list[Instance] = []
    iterators: set[str] = set()

    def at_for(n: Loop) -> bool:
        iterators.add(n.iterator)
        return _walk(n.body, at_for, at_user)

    def at_user(n: Node) -> None:
        assert isinstance(n, Instance)
        calls.append(n)

    return (calls, iterators) if _walk(loop, at_for, at_user) else None


def _ids(e: isl.AstExpr) -> set[str]:
    """The identifiers an AST expression reads."""
    if e.get_type() == isl.ast_expr_type.id:
        return {e.get_id().get_name()}
    if e.get_type() == isl.ast_expr_type.op:
        return set().union(*(_ids(e.get_op_arg(k)) for k in range(e.get_op_n_arg())))
    return set()


def reads_along(scop: Scop, prefix: isl.UnionMap, pos: int) -> bool:
    """Whether some read of the statements of ``prefix`` (``{ S[i] -> [p0, ..., p<pos>] }``)
    of an array they do not write, of several cells per value of the prefix (a read in the
    kernel's loops), moves by exactly one element along the array's last
    subscript when dimension ``pos`` of the prefix moves by one and the others stay
    (``B[k, j]`` for ``j``; not ``A[i, k]`` for ``i``): neighbouring values of the member
    then read neighbouring elements."""
    domain = prefix.domain()
    written = scop.accesses("write", expand_locals=False).intersect_domain(domain).range()
    reads = scop.accesses("read", expand_locals=False).intersect_domain(domain) \
        .subtract_range(written.universe())
    maps: list[isl.Map] = []
    prefix.foreach_map(maps.append)
    for m in maps:
        n = m.dim(isl.dim_type.out)
        xs, ys = [f"x{k}" for k in range(n)], [f"y{k}" for k in range(n)]
        cons = [f"{y} = {x} + 1" if k == pos else f"{y} = {x}"
                for k, (x, y) in enumerate(zip(xs, ys, strict=True))]
        step = isl.Map(f"{{ [{', '.join(xs)}] -> [{', '.join(ys)}] : {' and '.join(cons)} }}")
        pairs = m.apply_range(step.align_params(m.get_space())).apply_range(m.reverse())
        mine: list[isl.Map] = []
        reads.intersect_domain(isl.UnionSet.from_set(m.domain())).foreach_map(mine.append)
        for r in mine:
            dims = r.dim(isl.dim_type.out)
            if dims == 0 or m.reverse().apply_range(r).is_single_valued():
                continue  # a scalar, or one cell per value (a bias): not the loop's reads
            cells = pairs.apply_domain(r).apply_range(r)
            moved = cells.deltas().project_out(isl.dim_type.set, 0, dims - 1).coalesce()
            if moved.is_empty():
                continue
            step = moved.plain_get_val_if_fixed(isl.dim_type.set, 0)
            if step.is_int() and step.to_python() == 1:
                return True
    return False


def grids_within_serial_loops(kernels: tuple[KernelSpec, ...], domain: isl.UnionSet,
                               region: isl.Set) -> bool:
    """Whether the grids' work grows with no size that the single work-item's loops do not
    grow with too (softmax at ``N = 1``: all loops run over ``L``): one group of lanes then
    does the loops' work faster and the grids' work not much slower. A sum over ``K`` before
    a grid over ``N`` keeps the grid."""
    def syms(names: set[str]) -> set[str]:
        sets: list[isl.Set] = []
        domain.foreach_set(sets.append)
        out = set()
        for x in sets:
            if x.get_tuple_name() in names:
                x = x.gist_params(region)
                out |= {x.get_dim_name(isl.dim_type.param, k)
                        for k in range(x.dim(isl.dim_type.param))
                        if x.involves_dims(isl.dim_type.param, k, 1)}
        return out

    serial = {n for k in kernels if k.grid is None and has_loop(k.ast) for n in k.statements}
    grids = {n for k in kernels if k.grid is not None for n in k.statements}
    return syms(grids) <= syms(serial)
