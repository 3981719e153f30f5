"""The Scop IR: syms, arrays, statements with isl domains, the original loop tree, and the isl
views every later stage starts from (domains, access relations, program order)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # isl views are built on demand: a loaded artifact's Scop has none
    import islpy as isl

from ..errors import InternalError, SourceLoc
from .affine import Aff, Cond
from .exprs import Expr, Load, Scalar, binary, reads_array
from .printer import format_expr

# --------------------------------------------------------------------------------------------
# Arrays, statements, the loop tree


@dataclass(frozen=True)
class Array:
    """``kind``: in, out, inout, temp (tensors); local (private scalar); value (runtime scalar).

    A local scalar is modelled, for dependences, as an array indexed by ``scope``: the loop
    variables enclosing its first assignment (scalar expansion), so that iterations of those
    loops stay independent.
    """

    name: str
    dtype: str
    shape: tuple[Aff, ...] = ()
    kind: str = "in"
    scope: tuple[str, ...] = ()

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_tensor(self) -> bool:
        return self.kind in ("in", "out", "inout", "temp")


@dataclass(frozen=True)
class Statement:
    """``target op= value`` executed for each point of ``domain`` (named ``name``).

    ``target`` is a Load (array element) or a Scalar (local scalar). ``iters`` are the
    enclosing loop variables, outermost first, which are the domain's dimensions.
    """

    name: str
    iters: tuple[str, ...]
    target: Load | Scalar
    op: str  # "=", "+=", "-=", "*=", "/="
    value: Expr
    domain: isl.Set = field(compare=False)
    loc: SourceLoc | None = field(default=None, compare=False)

    def replace(self, **kw: Any) -> Statement:
        return replace(self, **kw)

    def touches(self, array: str) -> bool:
        """Whether the statement writes or reads ``array``."""
        return (isinstance(self.target, Load) and self.target.array == array) or \
            reads_array(self.value, array)

    def rhs(self) -> Expr:
        """The value stored, with a compound assignment expanded (``x += e`` -> ``x + e``)."""
        if self.op == "=":
            return self.value
        return binary(self.op[:-1], self.target, self.value)


@dataclass(frozen=True)
class Loop:
    """``for var in range(lo, hi, step)`` (``step`` a nonzero constant)."""

    var: str
    lo: Aff
    hi: Aff
    step: int
    body: tuple[Node, ...]


@dataclass(frozen=True)
class Guard:
    cond: Cond
    then: tuple[Node, ...]
    orelse: tuple[Node, ...] = ()


@dataclass(frozen=True)
class StmtRef:
    name: str


Node = Loop | Guard | StmtRef


def statements_under(nodes: Node | tuple[Node, ...]) -> list[str]:
    """The names of the statements under loop-tree nodes, in program order."""
    out: list[str] = []
    for n in nodes if isinstance(nodes, tuple) else (nodes,):
        if isinstance(n, StmtRef):
            out.append(n.name)
        elif isinstance(n, Loop):
            out += statements_under(n.body)
        else:
            out += statements_under((*n.then, *n.orelse))
    return out


def statement_paths(nodes: tuple[Node, ...], above: tuple[Node, ...] = ()
                    ) -> Iterator[tuple[str, tuple[Node, ...]]]:
    """Each statement under loop-tree nodes, in program order, with the loops and guards
    around it, outermost first."""
    for n in nodes:
        if isinstance(n, StmtRef):
            yield n.name, above
        elif isinstance(n, Loop):
            yield from statement_paths(n.body, (*above, n))
        else:
            yield from statement_paths((*n.then, *n.orelse), (*above, n))


def rewrite_tree(nodes: tuple[Node, ...], change: Callable[[Node], tuple[Node, ...] | None]
                 ) -> tuple[Node, ...]:
    """The loop tree with each node for which ``change`` gives nodes replaced by them (its
    subtree is then ``change``'s to rewrite); the other loops and guards hold their bodies
    rewritten the same way."""
    out: list[Node] = []
    for n in nodes:
        new = change(n)
        if new is not None:
            out += new
        elif isinstance(n, Loop):
            out.append(replace(n, body=rewrite_tree(n.body, change)))
        elif isinstance(n, Guard):
            out.append(replace(n, then=rewrite_tree(n.then, change),
                               orelse=rewrite_tree(n.orelse, change)))
        else:
            out.append(n)
    return tuple(out)


def rename_statements(nodes: tuple[Node, ...], rename: Mapping[str, str]) -> tuple[Node, ...]:
    """The loop tree with the statements named in ``rename`` renamed."""
    return rewrite_tree(nodes, lambda n: (StmtRef(rename.get(n.name, n.name)),)
                        if isinstance(n, StmtRef) else None)


@dataclass(frozen=True)
class Scop:
    """A static control part: the unit every later stage works on.

    ``syms`` are the isl parameters in a fixed order (shape syms first, then index syms);
    ``args`` names the callable's arguments in declaration order (arrays and value scalars);
    ``index_syms`` are the syms no input shape carries, passed as keywords.
    """

    name: str
    syms: tuple[str, ...]
    context: isl.Set = field(compare=False)
    arrays: tuple[Array, ...]
    args: tuple[str, ...]
    index_syms: tuple[str, ...]
    statements: tuple[Statement, ...]
    tree: tuple[Node, ...]
    source_file: str = ""
    assume: str = ""
    user_names: tuple[tuple[str, str], ...] = ()  # (name here, the user's) where they differ

    def replace(self, **kw: Any) -> Scop:
        return replace(self, **kw)

    def user_name(self, name: str) -> str:
        """The user's spelling of a sym or array name (see ``scop/names.py``)."""
        for here, user in self.user_names:
            if here == name:
                return user
        return name

    # lookups -----------------------------------------------------------------------------------
    def array(self, name: str) -> Array:
        for a in self.arrays:
            if a.name == name:
                return a
        raise InternalError(f"no array {name!r} in scop {self.name}")

    def statement(self, name: str) -> Statement:
        for s in self.statements:
            if s.name == name:
                return s
        raise InternalError(f"no statement {name!r} in scop {self.name}")

    @property
    def arg_arrays(self) -> tuple[Array, ...]:
        return tuple(self.array(n) for n in self.args)

    @property
    def narrow_indices(self) -> bool:
        """Whether generated code may do its index arithmetic in 32 bits when the sizes are
        small: no array or local scalar holds 64-bit integers (index and data types are
        then distinct in the OpenCL source)."""
        return all(a.dtype != "i64" for a in self.arrays)

    @property
    def outputs(self) -> tuple[Array, ...]:
        return tuple(a for a in self.arg_arrays if a.kind == "out")

    def param_space_text(self) -> str:
        return "[" + ", ".join(self.syms) + "]"

    # isl views --------------------------------------------------------------------------------
    def domain(self) -> isl.UnionSet:
        """``{ S[i,...] : ... }`` for every statement."""
        import islpy as isl

        out = isl.UnionSet.empty(self.context.get_space())
        for s in self.statements:
            out = out.union(isl.UnionSet.from_set(s.domain))
        return out

    def accesses(self, kind: str, expand_locals: bool = True) -> isl.UnionMap:
        """``{ S[i] -> A[f(i)] }`` reads or writes, each intersected with its domain.

        Local scalars are expanded over their scope (``{ S[i, j] -> acc[i] }``); with
        ``expand_locals=False`` they are single cells (``{ S[i, j] -> acc[] }``).
        """
        import islpy as isl

        out = isl.UnionMap.empty(self.context.get_space())
        for s in self.statements:
            out = out.union(statement_accesses(self, s, kind, expand_locals))
        return out

    def original_schedule(self) -> isl.UnionMap:
        """``{ S[i,j] -> [b0, i, b1, j, b2, ...] }``: the program order (2d+1 form)."""
        return original_schedule(self)

    def __str__(self) -> str:
        return format_scop(self)


# --------------------------------------------------------------------------------------------
# isl relations and text of a Scop


def statement_accesses(scop: Scop, stmt: Statement, kind: str,
                       expand_locals: bool = True) -> isl.UnionMap:
    """``{ S[i] -> A[f(i)] }`` for reads (kind="read") or writes (kind="write")."""
    import islpy as isl

    refs: list[Load | Scalar] = []
    if kind == "write":
        refs.append(stmt.target)
    else:
        if stmt.op != "=":
            refs.append(stmt.target)
        refs.extend(e for e in stmt.value.walk() if isinstance(e, Load | Scalar))
    params = scop.param_space_text()
    out = isl.UnionMap.empty(scop.context.get_space())
    for ref in refs:
        if isinstance(ref, Scalar):
            arr = scop.array(ref.name)
            if arr.kind != "local":
                continue  # runtime value arguments are never written: no dependences
            scope = arr.scope if expand_locals else ()
            name, index = ref.name, tuple(Aff.var(v) for v in scope)
        else:
            name, index = ref.array, ref.index
        text = (f"{params} -> {{ {stmt.name}[{', '.join(stmt.iters)}] -> "
                f"{name}[{', '.join(i.to_isl() for i in index)}] }}")
        access = isl.Map(text).intersect_domain(stmt.domain)
        out = out.union(isl.UnionMap.from_map(access))
    return out.coalesce()


def original_schedule(scop: Scop) -> isl.UnionMap:
    """``{ S[i,j] -> [b0, i, b1, j, b2, 0...] }``, padded to one length (program order)."""
    import islpy as isl

    rows: dict[str, list[str]] = {}

    def walk(nodes: tuple[Node, ...], prefix: list[str]) -> None:
        for pos, node in enumerate(nodes):
            if isinstance(node, Loop):
                dim = node.var if node.step > 0 else f"-{node.var}"
                walk(node.body, [*prefix, str(pos), dim])
            elif isinstance(node, Guard):
                walk(node.then, [*prefix, str(pos), "0"])
                walk(node.orelse, [*prefix, str(pos), "1"])
            else:
                rows[node.name] = [*prefix, str(pos)]

    walk(scop.tree, [])
    width = max((len(r) for r in rows.values()), default=1)
    params = scop.param_space_text()
    sched = isl.UnionMap.empty(scop.context.get_space())
    for stmt in scop.statements:
        row = rows[stmt.name] + ["0"] * (width - len(rows[stmt.name]))
        text = f"{params} -> {{ {stmt.name}[{', '.join(stmt.iters)}] -> [{', '.join(row)}] }}"
        sched = sched.union(isl.UnionMap.from_map(isl.Map(text).intersect_domain(stmt.domain)))
    return sched


def format_scop(scop: Scop) -> str:
    out = [f"scop {scop.name}", f"  syms: {', '.join(scop.syms) or '-'}",
           f"  context: {scop.context}", "  arrays:"]
    for a in scop.arrays:
        shape = f"[{', '.join(str(d) for d in a.shape)}]" if a.shape else ""
        scope = f" scope({', '.join(a.scope)})" if a.kind == "local" else ""
        out.append(f"    {a.kind:5} {a.name}: {a.dtype}{shape}{scope}")
    out.append("  statements:")
    for s in scop.statements:
        out.append(f"    {s.name}: {format_expr(s.target)} {s.op} {format_expr(s.value)}")
        out.append(f"      domain: {s.domain}")
    out.append(f"  reads: {scop.accesses('read')}")
    out.append(f"  writes: {scop.accesses('write')}")
    out.append(f"  original schedule: {scop.original_schedule()}")
    return "\n".join(out)


@dataclass(frozen=True)
class RaggedInfo:
    """How the per-sequence Scop's arguments relate to the batch: ``batch`` (B's name),
    ``length`` (the ragged sym's name in the Scop), ``batched`` (arguments that had a
    leading B, now dropped)."""

    batch: str
    length: str
    batched: frozenset[str]
