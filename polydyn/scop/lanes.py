"""Lane loops of the reference interpreter: loops whose iterations run side by side, one
element of a NumPy array per iteration, with the results of running them one by one.

The interpreter runs a lane loop's body once, its variable an array of all the loop's values
(``np.arange``; a lane loop nested in another one takes the next axis, and broadcasting
pairs them); the other loops stay Python loops. A loop is a lane loop when:

- no two of its iterations touch one cell with a write: every array its body writes is
  accessed, at every access, with one subscript that is the same affine function of the
  loop's variable (a nonzero coefficient) and of variables fixed across the loop;
- no inner loop's bounds depend on its variable (all its iterations run the same inner
  loops); a guard that does runs its statements under a mask, lane by lane;
- every local scalar its body writes is private to the iteration: the frontend scopes it
  to the loop (``Array.scope``: read only after an assignment in the same iteration), or
  the body assigns it first, unconditionally, at its top without reading it (after the loop
  it then holds the last iteration's value, as after the loop run one by one);
- its body raises no integer to a power (a negative exponent in a lane whose branch is not
  taken would raise).

The test is syntactic and sufficient, not exact: a loop it refuses runs one iteration at a
time, as every loop did before, and gives the same results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .affine import Aff
from .exprs import Bin, Load, Scalar, is_float
from .ir import Guard, Loop, Node, Scop, Statement, StmtRef, statements_under


@dataclass(frozen=True)
class Lane:
    """A lane loop: its values lie along the axis ``rank`` from the right of the arrays in
    its nest (shape ``(n, 1, ..., 1)``, ``rank - 1`` ones); ``private``: the local scalars
    each iteration assigns for itself, ``scoped`` those of them the frontend scopes to the
    loop (never read after it); ``top``: the outermost lane loop of its nest."""

    rank: int
    private: tuple[str, ...]
    scoped: tuple[str, ...]
    top: bool


def lane_plan(scop: Scop) -> dict[int, Lane]:
    """The lane loops of ``scop``'s loop tree, by ``id`` of their ``Loop`` node (the tree is
    alive while the plan is used): the outermost loop that qualifies in each nest and any
    that qualify inside it."""
    found: dict[int, tuple[int, tuple[str, ...]]] = {}  # id -> (depth in its nest, private)
    _find(scop, scop.tree, 0, found)
    plan: dict[int, Lane] = {}
    _place(scop, scop.tree, 0, found, plan)
    return plan


def _find(scop: Scop, nodes: tuple[Node, ...], depth: int,
          found: dict[int, tuple[int, tuple[str, ...]]]) -> None:
    for n in nodes:
        if isinstance(n, Loop):
            private = _private_scalars(scop, n)
            if private is not None:
                found[id(n)] = (depth, private)
            _find(scop, n.body, depth + (private is not None), found)
        elif isinstance(n, Guard):
            _find(scop, (*n.then, *n.orelse), depth, found)


def _place(scop: Scop, nodes: tuple[Node, ...], axes: int,
           found: dict[int, tuple[int, tuple[str, ...]]], plan: dict[int, Lane]) -> None:
    """Give each lane loop its axis: a nest's arrays have as many axes as it nests lane
    loops at most (``axes``)."""
    for n in nodes:
        if isinstance(n, Guard):
            _place(scop, (*n.then, *n.orelse), axes, found, plan)
        elif isinstance(n, Loop):
            inner = axes
            if id(n) in found:
                depth, private = found[id(n)]
                if depth == 0:
                    inner = 1 + max(found[id(m)][0] for m in _loops_and_guards((n,))
                                    if id(m) in found)
                plan[id(n)] = Lane(inner - depth, private, tuple(
                    name for name in private if _scoped(scop, name, n.var)), depth == 0)
            _place(scop, n.body, inner, found, plan)


def _loops_and_guards(nodes: tuple[Node, ...]) -> list[Node]:
    out: list[Node] = []
    for n in nodes:
        if isinstance(n, Loop):
            out += [n, *_loops_and_guards(n.body)]
        elif isinstance(n, Guard):
            out += [n, *_loops_and_guards((*n.then, *n.orelse))]
    return out


def _statements(scop: Scop, nodes: tuple[Node, ...]) -> list[Statement]:
    return [scop.statement(name) for name in statements_under(nodes)]


def _private_scalars(scop: Scop, loop: Loop) -> tuple[str, ...] | None:
    """The local scalars private to each iteration of ``loop`` when it is a lane loop, else
    None."""
    v = loop.var
    loops = [n for n in _loops_and_guards(loop.body) if isinstance(n, Loop)]
    if any(v in n.lo.vars() | n.hi.vars() for n in loops):
        return None
    inner = {n.var for n in loops}
    stmts = _statements(scop, loop.body)
    if any(isinstance(e, Bin) and e.op == "pow" and not is_float(e.dtype)
           for s in stmts for e in s.value.walk()):
        return None
    accesses: dict[str, list[tuple[Aff, ...]]] = {}
    for s in stmts:
        for e in (s.target, *s.value.walk()):
            if isinstance(e, Load):
                accesses.setdefault(e.array, []).append(e.index)
    written = {s.target.array for s in stmts if isinstance(s.target, Load)}
    if not all(_separated(accesses[a], v, inner) for a in written):
        return None
    scalars = tuple(dict.fromkeys(s.target.name for s in stmts
                                  if isinstance(s.target, Scalar)))
    if not all(_scoped(scop, name, v) or _assigned_first(scop, loop.body, name)
               for name in scalars):
        return None
    return scalars


def _separated(indices: list[tuple[Aff, ...]], v: str, inner: set[str]) -> bool:
    """Whether one subscript, at every access, is the same affine function of ``v`` and of
    variables other than ``inner``'s, with a nonzero coefficient on ``v``: then two
    iterations of ``v``'s loop never reach one cell."""
    for d in range(len(indices[0])):
        forms = [index[d].linear() for index in indices]
        first = forms[0]
        if first is None or not first[0].get(v) or set(first[0]) & inner:
            continue
        if all(f == first for f in forms[1:]):
            return True
    return False


def _assigned_first(scop: Scop, body: tuple[Node, ...], name: str) -> bool:
    """Whether the first node of ``body`` that touches local scalar ``name`` is a statement
    of ``body`` itself assigning it (``=``) a value that does not read it."""
    for n in body:
        touching = [s for s in _statements(scop, (n,)) if _touches(s, name)]
        if not touching:
            continue
        if not isinstance(n, StmtRef):
            return False
        s = touching[0]
        return isinstance(s.target, Scalar) and s.target.name == name and s.op == "=" \
            and not _reads_scalar(s, name)
    return True


def _scoped(scop: Scop, name: str, var: str) -> bool:
    """Whether the frontend scopes local scalar ``name`` to the iterations of ``var``'s
    loop."""
    a = scop.array(name)
    return a.kind == "local" and var in a.scope


def _reads_scalar(s: Statement, name: str) -> bool:
    return any(isinstance(e, Scalar) and e.name == name for e in s.value.walk())


def _touches(s: Statement, name: str) -> bool:
    return (isinstance(s.target, Scalar) and s.target.name == name) or _reads_scalar(s, name)


# --------------------------------------------------------------------------------------------
# Run-time helpers of the interpreter's lane code


def lanes(lo: int, hi: int, step: int, rank: int) -> np.ndarray:
    """The values of a lane loop along axis ``rank`` from the right."""
    return np.arange(lo, hi, step, dtype=np.int64).reshape((-1,) + (1,) * (rank - 1))


def last(x: object, rank: int, top: bool) -> object:
    """A private scalar after its lane loop: the last iteration's value (a NumPy scalar
    after the outermost lane loop of a nest)."""
    if not isinstance(x, np.ndarray):
        return x
    if top:
        return x.reshape(-1)[-1]
    if x.ndim < rank:
        return x
    return np.take(x, [-1], axis=x.ndim - rank)


class Unset:
    """A private scalar at the top of its lane loop's body, before this iteration assigns
    it."""


UNSET = Unset()


def masked(mask: object, value: object, old: object) -> object:
    """A local scalar assigned in the lanes of ``mask`` (the others keep ``old``; before any
    assignment they never read it)."""
    return value if old is UNSET else np.where(mask, value, old)


def store(a: np.ndarray, mask: object, value: object, *index: object) -> None:
    """``a[index] = value`` in the lanes of ``mask`` only (the others' subscripts may lie
    outside ``a``)."""
    shape = np.broadcast_shapes(np.shape(mask), np.shape(value), *(np.shape(i) for i in index))
    take = np.broadcast_to(mask, shape)
    a[tuple(np.broadcast_to(i, shape)[take] for i in index)] = \
        np.broadcast_to(value, shape)[take]


def gather(a: np.ndarray, *index: object) -> object:
    """``a[index]`` for lanes some of which do not take the branch that reads it: their
    subscripts may lie outside ``a`` and are clipped into it (their values are dropped)."""
    if 0 in a.shape:
        shape = np.broadcast_shapes(*(np.shape(i) for i in index))
        return np.zeros(shape, a.dtype) if shape else a.dtype.type(0)
    return a[tuple(np.clip(i, 0, n - 1) for i, n in zip(index, a.shape, strict=True))]


def vmin(a: object, b: object) -> object:
    return np.where(b < a, b, a)  # C's (b < a ? b : a), lane by lane


def vmax(a: object, b: object) -> object:
    return np.where(b > a, b, a)


def vidiv(a: object, b: object) -> object:
    """Integer ``a // b`` lane by lane, 0 where ``b`` is 0 (as ``interp._idiv``)."""
    nonzero = np.not_equal(b, 0)
    return np.where(nonzero, np.floor_divide(a, np.where(nonzero, b, 1)), 0)


def vimod(a: object, b: object) -> object:
    nonzero = np.not_equal(b, 0)
    return np.where(nonzero, np.remainder(a, np.where(nonzero, b, 1)), 0)
