"""Element-wise epilogues moved out of the loops of their product: a statement that ends the
innermost loop around a reduction and calls a math function or computes on the cell it
updates (``P = P * 0.125``),

    for n: for o:  Y[n, o] = b[o];  for k: Y[n, o] += X[n, k] * W[k, o];  Y[n, o] = gelu(Y[n, o])

runs in a nest of its own after the product:

    for n: for o:  Y[n, o] = b[o];  for k: Y[n, o] += X[n, k] * W[k, o]
    for n: for o:  Y[n, o] = gelu(Y[n, o])

Inside the product's loops the epilogue keeps the band from carrying register tiles (its
statements no longer all accumulate into one target) and runs once per output between
reductions, so a math call is not vectorized; in
a nest of its own its innermost loop is stride 1 and calls the vector math library. It
costs one more pass over the outputs.

The move is made only where it keeps every dependence: the operator's program order with the
epilogue moved is checked against the dependences of the order as written (isl).
"""

from __future__ import annotations

from dataclasses import replace

from .deps import keeps_dependences
from .exprs import MATH_FUNCS, Call, Load
from .ir import Guard, Loop, Node, Scop, Statement, StmtRef, statements_under


def split_epilogues(scop: Scop) -> tuple[Scop, tuple[str, ...]]:
    """``scop`` with every such epilogue in a nest of its own, and a sentence for each
    (``scop`` itself and none when nothing moves)."""
    notes = []
    for name in _candidates(scop, scop.tree, ()):
        moved = replace(scop, tree=_move(scop.tree, name))
        if keeps_dependences(scop, moved):
            scop = moved
            notes.append(f"{name}: the element-wise epilogue runs after the product's loops")
    return scop, tuple(notes)


def _candidates(scop: Scop, body: tuple[Node, ...], loops: tuple[Loop, ...]) -> list[str]:
    out: list[str] = []
    for k, node in enumerate(body):
        if isinstance(node, Loop):
            out += _candidates(scop, node.body, (*loops, node))
        elif isinstance(node, Guard):
            continue  # conditional code stays where it is
        elif loops and k == len(body) - 1 and k > 0 and \
                any(isinstance(n, Loop) for n in body[:k]) and is_epilogue(scop, node.name):
            out.append(node.name)
    return out


def is_epilogue(scop: Scop, name: str) -> bool:
    """``T[i...] = f(...)``, the subscripts the statement's own loop variables, one each,
    ``f`` calling a math function (GELU) or reading ``T[i...]`` (attention's scores scaled,
    ``P = P * 0.125``, after a sum kept in a scalar that ``scop.forward`` moved into P)."""
    stmt = scop.statement(name)
    target = stmt.target
    if not element_wise(stmt):
        return False
    return any((isinstance(e, Call) and e.fn in MATH_FUNCS) or
               (isinstance(e, Load) and e.array == target.array and e.index == target.index)
               for e in stmt.value.walk())


def element_wise(stmt: Statement) -> bool:
    """``T[i...] = ...`` with the subscripts the statement's own loop variables, one each."""
    target = stmt.target
    if not isinstance(target, Load) or stmt.op != "=":
        return False
    subs = [next(iter(a.vars())) if len(a.vars()) == 1 and a.linear() == ({v: 1}, 0) else None
            for a in target.index for v in a.vars()]
    return None not in subs and sorted(subs) == sorted(set(subs)) and \
        set(subs) == set(stmt.iters)


def _move(tree: tuple[Node, ...], name: str) -> tuple[Node, ...]:
    """The loop tree with statement ``name`` taken out of its loops and put, in copies of
    those loops, right after the outermost of them."""
    out: list[Node] = []
    for node in tree:
        if isinstance(node, Loop) and name in statements_under(node):
            out += [_without(node, name), _chain(node, name)]
        else:
            out.append(node)
    return tuple(out)


def _without(loop: Loop, name: str) -> Loop:
    body: list[Node] = []
    for n in loop.body:
        if isinstance(n, StmtRef) and n.name == name:
            continue
        body.append(_without(n, name) if isinstance(n, Loop) and name in statements_under(n) else n)
    return replace(loop, body=tuple(body))


def _chain(loop: Loop, name: str) -> Loop:
    """Copies of the loops from ``loop`` down to statement ``name``, holding it alone."""
    for n in loop.body:
        if isinstance(n, StmtRef) and n.name == name:
            return replace(loop, body=(n,))
        if isinstance(n, Loop) and name in statements_under(n):
            return replace(loop, body=(_chain(n, name),))
    raise ValueError(name)
