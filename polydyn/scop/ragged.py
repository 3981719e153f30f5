"""Ragged operators (SPEC section 7): a batch of sequences of different lengths, lowered to one
per-sequence dense operator.

``for b in range(B)`` is the batch loop: its body, with ``L[b]`` read as the sym ``L`` and
the leading ``b`` dropped from every batched tensor's subscripts, is the per-sequence
operator; tensors whose shape starts with ``B`` lose that dimension (``f32[B, L, D]`` ->
``f32[L, D]``), the others are shared by every sequence (weights). The per-sequence Scop goes
through the normal pipeline; the batch loop is generated C (``codegen_c/batch.py``).
"""

from __future__ import annotations

import ast
import copy
import inspect
from collections.abc import Callable
from typing import Any

from ..errors import FrontendError, SourceLoc
from . import dsl
from .from_python import PythonFrontend
from .ir import RaggedInfo, Scop


def ragged_syms(fn: Callable[..., Any]) -> dict[str, dsl.Ragged]:
    """The ragged extents an operator's annotations use, by name."""
    try:
        annotations = inspect.get_annotations(fn, eval_str=True)
    except Exception:  # the frontend reports it with its place
        return {}
    found: dict[str, dsl.Ragged] = {}
    for ann in annotations.values():
        t = ann.type if isinstance(ann, dsl.ArgKind) else ann
        if isinstance(t, dsl.TensorType):
            for dim in t.shape:
                if isinstance(dim, dsl.Ragged):
                    found[dim.name] = dim
    return found


class RaggedFrontend(PythonFrontend):
    """The Python frontend on the batch loop's body, with per-sequence annotations."""

    def __init__(self, fn: Callable[..., Any], assume: str, extents: dict[str, dsl.Ragged]):
        super().__init__(fn, assume)
        if len(extents) > 1:
            self.error(self.module.body[0], "one ragged extent per operator is supported, got "
                       f"{', '.join(sorted(extents))}")
        self.extent = next(iter(extents.values()))
        self.batch = self.extent.batch.name
        self.batched: set[str] = set()

    def _annotations(self, fdef: ast.FunctionDef) -> dict[str, Any]:
        out = {}
        for name, ann in super()._annotations(fdef).items():
            arg = next((a for a in fdef.args.args if a.arg == name), fdef)
            out[name] = self._per_sequence(arg, name, ann)
        return out

    def _per_sequence(self, node: ast.AST, name: str, ann: Any) -> Any:
        """``f32[B, L, D]`` -> ``f32[L, D]`` (batched); shared types stay as they are."""
        kind = ann if isinstance(ann, dsl.ArgKind) else None
        t = kind.type if kind else ann
        if not isinstance(t, dsl.TensorType):
            return ann
        lead = t.shape[0] if t.shape else None
        if lead is not None and lead.op == "var" and lead.args[0] == self.batch:
            rest = t.shape[1:]
            if any(self.batch in d.vars() for d in rest):
                self.error(node, f"`{name}`: {self.batch} may only be the first dimension")
            if kind and kind.kind not in ("out", "inout"):
                self.error(node, f"`{name}`: {kind.kind} tensors are per sequence: "
                                 f"drop {self.batch}")
            self.batched.add(name)
            t = dsl.TensorType(t.dtype, rest)
            return dsl.ArgKind(kind.kind, t) if kind else t
        if any({self.batch, self.extent.name} & d.vars() for d in t.shape):
            self.error(node, f"`{name}`: a tensor with the ragged extent {self.extent.name} "
                             f"(or {self.batch}) must have {self.batch} as its first dimension")
        if kind and kind.kind in ("out", "inout"):
            self.error(node, f"`{name}`: an output shared by every sequence would be written "
                             f"by all of them; give it a leading {self.batch} dimension")
        return ann

    def build(self) -> Scop:
        fdef = self.module.body[0]
        if isinstance(fdef, ast.FunctionDef):
            self._annotations(fdef)  # which arguments are batched, for the rewrite
            self.arg_names = {a.arg for a in fdef.args.args}
            fdef.body = self._batch_body(fdef)
        return super().build()

    def _batch_body(self, fdef: ast.FunctionDef) -> list[ast.stmt]:
        """The statements of the one ``for b in range(B)`` loop, rewritten per sequence
        (temporaries declared before it stay)."""
        body = list(fdef.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        loops = [st for st in body if isinstance(st, ast.For)]
        others = [st for st in body if not isinstance(st, ast.For)]
        for st in others:
            if not (isinstance(st, ast.Assign) and isinstance(st.value, ast.Call) and
                    self._resolve_quiet(st.value.func) is dsl.temp):
                self.error(st, f"in a ragged operator every statement is inside the batch loop "
                               f"`for b in range({self.batch})`")
        if len(loops) != 1:
            self.error(loops[1] if loops else fdef, "a ragged operator's body is one batch loop "
                       f"`for b in range({self.batch})`")
        loop = loops[0]
        it = loop.iter
        if not (isinstance(loop.target, ast.Name) and isinstance(it, ast.Call)
                and self._resolve_quiet(it.func) is range and len(it.args) == 1
                and not it.keywords and isinstance(it.args[0], ast.Name)
                and getattr(self._resolve_quiet(it.args[0]), "name", None) == self.batch):
            self.error(loop, f"the batch loop must be `for b in range({self.batch})`")
        if loop.orelse:
            self.error(loop, "`for ... else` is not supported")
        rewrite = _PerSequence(self, loop.target.id)
        stmts = others + [rewrite.visit(copy.deepcopy(st)) for st in loop.body]
        return stmts


class _PerSequence(ast.NodeTransformer):
    """``L[b]`` -> ``L``; ``X[b, i, j]`` -> ``X[i, j]`` for batched ``X``; ``b`` elsewhere and
    ``B`` anywhere are refused."""

    def __init__(self, front: RaggedFrontend, var: str):
        self.front = front
        self.var = var

    def _is_var(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == self.var

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        front = self.front
        base = node.value
        if isinstance(base, ast.Name | ast.Attribute):
            obj = None if isinstance(base, ast.Name) and base.id in front.batched else \
                front._resolve_quiet(base)
            if isinstance(obj, dsl.Ragged):
                if not self._is_var(node.slice):
                    front.error(node, f"`{front.src(node)}`: a ragged extent is read as "
                                      f"{obj.name}[{self.var}], at the batch loop's variable")
                return ast.copy_location(ast.Name(id=base.id, ctx=ast.Load()), node)
            if isinstance(base, ast.Name) and base.id in front.batched:
                idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                if not idx or not self._is_var(idx[0]):
                    front.error(node, f"`{front.src(node)}`: a batched tensor's first "
                                      f"subscript must be the batch variable `{self.var}`")
                rest = [self.visit(i) for i in idx[1:]]
                if not rest:
                    front.error(node, f"`{front.src(node)}`: a batched tensor needs "
                                      "per-sequence dimensions")
                new_slice = rest[0] if len(rest) == 1 else \
                    ast.copy_location(ast.Tuple(elts=rest, ctx=ast.Load()), node.slice)
                return ast.copy_location(ast.Subscript(value=base, slice=new_slice,
                                                       ctx=node.ctx), node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        front = self.front
        if node.id == self.var:
            front.error(node, f"the batch variable `{self.var}` may only index batched tensors "
                              "and ragged extents (a data-dependent use)")
        obj = front._resolve_quiet(node) if node.id not in front.arg_names else None
        if isinstance(obj, dsl.Sym) and obj.name == front.batch:
            front.error(node, f"`{front.batch}` (the batch size) may only bound the batch loop")
        return node


class RaggedOperator:
    """A ragged operator: its per-sequence Scop and how the batch maps onto it."""

    def __init__(self, fn: Callable[..., Any], assume: str, extents: dict[str, dsl.Ragged]):
        front = RaggedFrontend(fn, assume, extents)
        self.scop = front.build()
        user = {u: g for g, u in self.scop.user_names}
        self.info = RaggedInfo(front.batch, user.get(front.extent.name, front.extent.name),
                               frozenset(user.get(n, n) for n in front.batched))
        if self.info.length not in self.scop.syms:
            raise FrontendError(f"ragged operator {fn.__name__!r} never uses its extent "
                                f"{front.extent.name}", SourceLoc(front.file, front.first_line))
        self.fn = fn
        self.name = fn.__name__
        self.assume = assume
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def over(self, scop: Scop) -> RaggedOperator:
        """This operator over another per-sequence Scop (the same one with more assumed)."""
        out = copy.copy(self)
        out.scop = scop
        return out

    def reference(self, *args: Any, **kwargs: Any) -> Any:
        """The per-sequence loop nest run on each sequence's blocks (the oracle)."""
        from ..runtime.ragged_call import reference_call

        return reference_call(self, args, kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.reference(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<polydyn ragged operator {self.name}({', '.join(self.scop.args)})>"
