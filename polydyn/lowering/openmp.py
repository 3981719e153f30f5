"""The OpenMP form of a loop of the C target, as a typed value: ``Simd`` (``omp simd`` with
its private and reduction clauses), ``Threads`` (``omp parallel for`` guarded by a run-time
test of the work), ``Team`` (one parallel region whose threads share the loop's iterations
and, at its end, the loops inside: ``teams.py``), ``Blocks`` (one parallel region whose
threads each reduce a block of the loop into copies of their own), ``Lanes`` (an argmax's
loop split into SIMD lanes), or None (a plain loop).
``loop_form`` is a pure function of the loop, its mark, the loops around it and the
variant's tree; the C printer prints the form it returns. The printer asks at each loop it
prints, rather than a pass deciding beforehand, since where register tiles, packs and split
sums open their own surroundings is still the printer's (docs/design.md, "Not done yet").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from ..schedule.reductions import REDUCE_LOOP, SELECT_LOOP, SEQUENTIAL_LOOP, Selection
from ..schedule.tree import PROMOTE, RVEC, VECTOR
from ..scop.exprs import Load, Scalar
from ..scop.ir import Scop
from .teams import forms_team
from .tree import Loop, Node, has_loop, instances, role_loops
from .work import uneven_work

# Statement instances (or copied elements) under a parallel loop below which threads cost
# more than they save (an OpenMP fork/join is about a microsecond here; each statement's
# instances count). The figures behind these thresholds: bench/HISTORY.md, points 5b and 7.
PARALLEL_MIN_WORK = 8192
# The same for a loop around register tiles (a micro-kernel does 32 multiply-adds a cycle:
# 2^22 of them take about 65 us on one thread).
TILED_PARALLEL_MIN_WORK = 1 << 22
# The same for a loop around register tiles whose iterations share no data (every access
# moves with its iterator: batched matmul's batch loop): no thread reads another's tiles.
SEPARATE_PARALLEL_MIN_WORK = 1 << 15
# The same for a loop that only reduces into local scalars, outside any parallel loop (a
# whole array's sum, a norm, one row's max and sum): a plain sum of 2^15 floats took as long
# on two threads as on one here, 2^16 a fifth less (bench/RESULTS.md, phrasings_passes).
REDUCTION_PARALLEL_MIN_WORK = 1 << 15
# The same for the region a pack opens (every thread copies the tile, no fork per tile:
# codegen_c/packs.py).
PACKED_PARALLEL_MIN_WORK = 1 << 20


@dataclass(frozen=True)
class Simd:
    """``omp simd private(..) reduction(op:name)..``."""

    private: tuple[str, ...] = ()
    reductions: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Threads:
    """``omp parallel for private(..) if(work >= minimum [&& trips >= threads])``: the
    iterations in equal blocks, or one by one round the threads where they do unequal work
    (``cyclic``). ``per_thread``: the test also asks for an iteration per thread."""

    private: tuple[str, ...]
    minimum: int
    per_thread: bool
    cyclic: bool


@dataclass(frozen=True)
class Team:
    """A team region around the loop (``teams.forms_team``), from ``minimum`` instances."""

    minimum: int


@dataclass(frozen=True)
class Lanes:
    """A loop that only selects (``LoopCarry.selections``: an argmax, an argmin), split
    into ``width`` lanes: lane l runs every width-th iteration from l on, into copies of
    its own of each selection's index and value (``omp simd`` over the lanes), and the
    copies are combined in lane order (the larger value, of equal ones the smaller index:
    the earlier iteration); the iterations past the last whole group run after, in order."""

    selections: tuple[Selection, ...]
    width: int


@dataclass(frozen=True)
class Blocks:
    """One parallel region around a loop that only sums into local scalars (``reductions``,
    (op, name) pairs), from ``minimum`` instances: each thread runs a block of consecutive
    iterations, reducing into copies of its own of those scalars (``private``: the other
    locals the loop assigns), and the copies are combined in the threads' order after the
    region, so a result does not depend on which thread ends first. ``simd``: the block's
    loop's own form; ``lanes``: the form of a loop that only selects, whose copies are
    combined as its lanes' are."""

    reductions: tuple[tuple[str, str], ...]
    private: tuple[str, ...]
    minimum: int
    simd: Simd | None
    lanes: Lanes | None = None  # a selection's loop: its copies start at the locals' values


Form = Simd | Threads | Team | Blocks | Lanes | None
# The bytes of values a ``Lanes`` loop runs at once (an AVX-512 register of f32, two AVX2
# ones).
LANES_BYTES = 64
# the local scalars' types whose reductions Blocks combines
BLOCK_TYPES = ("f32", "f64", "i32", "i64")


@dataclass(frozen=True)
class Locals:
    """The local scalars of one variant's tree: which each statement assigns, which
    statements touch each one (read or write), and how many instances each statement has
    in the tree."""

    assigns: Mapping[str, frozenset[str]]
    users: Mapping[str, frozenset[str]]
    counts: Mapping[str, int]

    @property
    def writers(self) -> frozenset[str]:
        """The statements that assign a local scalar (``teams.local_writers``)."""
        return frozenset(name for name, assigned in self.assigns.items() if assigned)

    @staticmethod
    def of(scop: Scop, tree: Node | None = None) -> Locals:
        assigns, users = {}, {}
        for s in scop.statements:
            local = isinstance(s.target, Scalar) and scop.array(s.target.name).kind == "local"
            assigns[s.name] = frozenset([s.target.name]) if local else frozenset()
            touched = {e.name for e in s.value.walk() if isinstance(e, Scalar)}
            if isinstance(s.target, Scalar):
                touched.add(s.target.name)
            for name in touched:
                if scop.array(name).kind == "local":
                    users.setdefault(name, set()).add(s.name)
        counts = Counter(i.name for i in instances(tree)) if tree is not None else Counter()
        return Locals(assigns, {k: frozenset(v) for k, v in users.items()}, counts)

    def assigned(self, n: Node) -> frozenset[str]:
        """The local scalars the statements under ``n`` assign (a statement that is not
        the operator's, a copy into local memory, assigns none)."""
        return frozenset().union(*(self.assigns.get(i.name, frozenset())
                                   for i in instances(n)))

    def private(self, n: Loop) -> frozenset[str] | None:
        """The local scalars the statements under ``n`` assign, private to ``n``: every use
        of them (every instance of the statements touching them) is inside it. None where
        another one, not a reduction of the loop, keeps a single value across the
        iterations: the loop then gets no pragma."""
        used = self.assigned(n.body)
        reductions = {name for _, name in n.carry.reductions}
        under = Counter(i.name for i in instances(n.body))
        owned = frozenset(v for v in used
                          if all(under[x] == self.counts[x] for x in self.users[v]))
        return None if used - owned - reductions else owned


@dataclass(frozen=True)
class Around:
    """What a loop's form depends on outside it: a loop around it is parallel (its mark),
    its trip count is printed (``for (c = a; c < b or c <= b; ...)``, or a collapsed pair's
    product), it lies in a register tile whose accumulators are in registers, and its
    variant lets a loop that only reduces into local scalars take threads (``blocks``: a
    policy recipe without ``single_thread()``; a loop recipe's threads are the loops it marks
    ``parallel``)."""

    in_parallel: bool = False
    counted: bool = False
    promoted: bool = False
    blocks: bool = False


def loop_form(n: Loop, parallel: bool, role: str, at: Around, scop: Scop,
              locals_: Locals) -> Form:
    """The form of the loop ``n`` with a mark that says ``parallel`` and ``role`` (a plain
    loop: False, ''), outside team regions and pack regions. Threads for the outermost
    parallel loop, SIMD for an innermost stride-1 one, blocks of threads for the outermost
    loop that only sums into local scalars (its trip count printed). A loop that carries a
    dependence the band's coincidence misses (a local scalar's value crosses iterations)
    gets none, and so does one whose local scalars are not all private to it
    (``Locals.private``) and not reductions of it."""
    if n.carry.kind == SEQUENTIAL_LOOP and role != VECTOR:
        return None
    if n.carry.kind == SELECT_LOOP:
        lanes = lanes_form(n, at, scop, locals_)
        if lanes is not None and at.blocks and not parallel and not role and \
                not at.in_parallel:
            return Blocks((), (), REDUCTION_PARALLEL_MIN_WORK, None, lanes)
        return lanes
    owned = locals_.private(n)
    if owned is None:
        return None
    simd = simd_form(n, parallel, role, owned, at.promoted, scop)
    if at.blocks and not parallel and not role and not at.in_parallel and at.counted and \
            n.carry.kind == REDUCE_LOOP and \
            all(scop.array(name).dtype in BLOCK_TYPES for _, name in n.carry.reductions):
        reduced = {name for _, name in n.carry.reductions}
        return Blocks(n.carry.reductions, tuple(sorted(owned - reduced)),
                      REDUCTION_PARALLEL_MIN_WORK, simd)
    if simd is not None or not parallel:
        return simd
    inside = has_loop(n.body)
    if not inside and unit_stride(n, scop):
        return Simd(tuple(sorted(owned)))
    if at.in_parallel:
        return None
    minimum = work_minimum(n, scop)
    uneven = inside and uneven_work(n)  # a triangle: its iterations go round the threads
    if not uneven and at.counted and forms_team(n, parallel, at.in_parallel, locals_.writers):
        return Team(minimum)
    return Threads(tuple(sorted(owned)), minimum, inside and at.counted, uneven)


def lanes_form(n: Loop, at: Around, scop: Scop, locals_: Locals) -> Lanes | None:
    """``Lanes`` for an innermost stride-1 loop with its trip count printed that only
    selects, with floating-point values, integer indices and no other local scalar
    assigned; else None (a plain loop)."""
    mine = {name for sel in n.carry.selections for name in (sel.index, sel.value)}
    values = {scop.array(sel.value).dtype for sel in n.carry.selections}
    indices = {scop.array(sel.index).dtype for sel in n.carry.selections}
    if has_loop(n.body) or not at.counted or not unit_stride(n, scop) or \
            not values <= {"f32", "f64"} or not indices <= {"i32", "i64"} or \
            locals_.assigned(n.body) - mine:
        return None
    return Lanes(n.carry.selections, LANES_BYTES // max(8 if v == "f64" else 4 for v in values))


def simd_form(n: Loop, parallel: bool, role: str, owned: frozenset[str], promoted: bool,
              scop: Scop) -> Simd | None:
    """``omp simd`` for a user's ``vectorize()`` (checked free of dependences), a register
    tile's vector (coincident, its accumulators and operands along it contiguous), or an
    innermost stride-1 loop that carries nothing or only reductions into local scalars."""
    reductions = {name for _, name in n.carry.reductions}
    private = tuple(sorted(owned - reductions))
    if role == VECTOR or (role == RVEC and promoted):
        return Simd(private)
    if has_loop(n.body) or not unit_stride(n, scop):
        return None
    if not parallel and n.carry.parallel:
        return Simd(private)
    if reductions:
        return Simd(private, n.carry.reductions)
    return None


def prints_plain(n: Loop, scop: Scop, locals_: Locals) -> bool:
    """Whether the loop ``n``, not parallel and with no role, prints with no pragma inside a
    parallel loop or region."""
    return loop_form(n, False, "", Around(in_parallel=True), scop, locals_) is None


def work_minimum(n: Loop, scop: Scop) -> int:
    """The statement instances under the loop ``n`` from which it takes threads: fewer
    around register tiles, whose instances are cheaper, unless its iterations share no
    data."""
    if not role_loops(n, PROMOTE, through_ifs=True):
        return PARALLEL_MIN_WORK
    return SEPARATE_PARALLEL_MIN_WORK if shares_nothing(n, scop) else TILED_PARALLEL_MIN_WORK


def shares_nothing(n: Loop, scop: Scop) -> bool:
    """Every access of the statements under loop ``n`` moves with its iterator (a batch
    loop: each iteration reads and writes arrays of its own)."""
    calls = list(instances(n))
    for call in calls:
        stmt = scop.statement(call.name)
        moving = call.moving(stmt.iters, n.iterator)
        refs = [r for r in stmt.value.walk() if isinstance(r, Load)]
        for ref in [*refs, stmt.target]:
            if not isinstance(ref, Load) or not any(sub.vars() & moving for sub in ref.index):
                return False
    return bool(calls)


def unit_stride(n: Loop, scop: Scop) -> bool:
    """Every access of the loop's statements moves by 0 or 1 element per step of its
    iterator: only the last subscript moves, by -1 or 1. How far each statement iterator
    moves comes from isl's iterator map of each instance (``Instance.steps``)."""
    for inst in instances(n.body):
        stmt = scop.statement(inst.name)
        steps = inst.steps(n.iterator)
        if steps is None:
            return False
        step_of = dict(zip(stmt.iters, steps, strict=True))
        moving = {v for v, step in step_of.items() if step}
        refs = [stmt.target, *(x for x in stmt.value.walk() if isinstance(x, Load))]
        for ref in refs:
            if not isinstance(ref, Load):
                continue
            for d, sub in enumerate(ref.index):
                if not sub.vars() & moving:
                    continue
                lin = sub.linear()
                step = None if lin is None else \
                    sum(c * step_of.get(v, 0) for v, c in lin[0].items())
                if d != len(ref.index) - 1 or step is None or abs(step) != 1:
                    return False
    return True
