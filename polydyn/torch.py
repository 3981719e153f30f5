"""A compiled kernel as a PyTorch custom operator (``polydyn.torch.custom_op``).

The operator is defined through ``torch.library`` from the kernel's signature: inputs and
``inout`` arrays are tensors (``inout`` ones mutated, ``Tensor(a!)``), value arguments are
``float`` or ``int``, syms no shape carries are keyword-only ``SymInt``. The CPU
implementation calls the kernel with the tensors (read and written in place, see
``parametric/dlpack.py``). The fake implementation allocates the outputs with the shapes of the
signature, evaluated over the input tensors' sizes: under ``torch.compile(dynamic=True)`` those
are SymInts, so one graph serves every size and nothing recompiles. Importing this module
imports torch; ``import polydyn`` does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from .errors import PolydynError
from .parametric.binding import Binder
from .runtime.kernel import KernelBase
from .scop.affine import EVAL_OPS, Aff
from .scop.ir import Array

__all__ = ["custom_op"]

_DTYPES = {"f32": torch.float32, "f64": torch.float64, "i32": torch.int32, "i64": torch.int64,
           "bool": torch.bool}
_SCALARS = {"f32": "float", "f64": "float", "i32": "int", "i64": "int", "bool": "bool"}
# sym arithmetic that SymInts trace without a guard (no comparison, no int())
_SYM_EVAL = {
    **EVAL_OPS,
    "min": lambda *xs: _fold(torch.sym_min, xs),
    "max": lambda *xs: _fold(torch.sym_max, xs),
}


def _fold(fn: Any, xs: tuple[Any, ...]) -> Any:
    out = xs[0]
    for x in xs[1:]:
        out = fn(out, x)
    return out


@dataclass
class _Registered:
    """One operator's definition: the kernel behind it (replaceable by one of the same
    signature), its schema and the Library that keeps the registration alive."""

    kernel: KernelBase
    schema: str
    library: Any


_REGISTERED: dict[str, _Registered] = {}


def custom_op(kernel: KernelBase, name: str) -> Any:
    """Register ``kernel`` as the PyTorch operator ``name`` ("namespace::op") and return it
    (``torch.ops.namespace.op``). Registering the same name again with a kernel of the same
    signature (a recompiled kernel) replaces the kernel behind it."""
    namespace, sep, op = name.partition("::")
    if not (sep and namespace.isidentifier() and op.isidentifier()):
        raise PolydynError(f"custom_op name {name!r}: expected 'namespace::name', both "
                           "Python identifiers (e.g. 'mylib::matmul')")
    schema = _schema(kernel, op)
    known = _REGISTERED.get(name)
    if known is not None:
        if known.schema != schema:
            raise PolydynError(f"custom_op {name!r} is already registered with the schema "
                               f"{known.schema}; this kernel's is {schema}")
        known.kernel = kernel
        return getattr(getattr(torch.ops, namespace), op)
    library = torch.library.Library(namespace, "FRAGMENT")  # kept alive in _REGISTERED
    library.define(schema)
    _REGISTERED[name] = _Registered(kernel, schema, library)
    library.impl(op, _cpu_impl(name), "CPU")
    torch.library.register_fake(name, _fake_impl(name), lib=library)
    return getattr(getattr(torch.ops, namespace), op)


def _schema(kernel: KernelBase, op: str) -> str:
    """``matmul(Tensor A, Tensor B) -> Tensor``, ``jacobi2d(Tensor(a!) A, *, SymInt T) -> ()``."""
    binder = Binder(kernel.scop)
    scop = kernel.scop
    params = []
    mutated = 0
    for a in binder.positional:
        if a.kind == "value":
            params.append(f"{_SCALARS[a.dtype]} {scop.user_name(a.name)}")
        elif a.kind == "inout":
            params.append(f"Tensor({chr(ord('a') + mutated)}!) {scop.user_name(a.name)}")
            mutated += 1
        else:
            params.append(f"Tensor {scop.user_name(a.name)}")
    if binder.keyword_syms:
        params.append("*")
        params += [f"SymInt {scop.user_name(s)}" for s in binder.keyword_syms]
    outs = binder.outputs
    returns = "Tensor" if len(outs) == 1 else f"({', '.join('Tensor' for _ in outs)})"
    return f"{op}({', '.join(params)}) -> {returns}"


def _call_arguments(binder: Binder, args: tuple[Any, ...], kwargs: dict[str, Any]
                    ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The operator's arguments by the Scop's names, and its keyword syms by the same."""
    named = dict(zip([a.name for a in binder.positional], args, strict=False))
    by_user = {binder.scop.user_name(s): s for s in binder.keyword_syms}
    syms = {by_user[k]: v for k, v in kwargs.items()}
    return named, syms


def _cpu_impl(name: str) -> Any:
    def impl(*args: Any, **kwargs: Any) -> Any:
        kernel = _REGISTERED[name].kernel
        result = kernel(*args, **kwargs)
        if isinstance(result, tuple):
            return tuple(_tensor(x) for x in result)
        return None if result is None else _tensor(result)

    return impl


def _tensor(x: Any) -> Any:
    return x if isinstance(x, torch.Tensor) else torch.from_numpy(x)


def _fake_impl(name: str) -> Any:
    def fake(*args: Any, **kwargs: Any) -> Any:
        binder = Binder(_REGISTERED[name].kernel.scop)
        named, syms = _call_arguments(binder, args, kwargs)
        syms.update(_shape_syms(binder, named, syms))
        like = next((x for x in named.values() if isinstance(x, torch.Tensor)), None)
        device = like.device if like is not None else torch.device("cpu")
        outs = tuple(torch.empty(output_shape(a, syms), dtype=_DTYPES[a.dtype], device=device)
                     for a in binder.outputs)
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else outs

    return fake


def _shape_syms(binder: Binder, named: dict[str, Any], known: dict[str, Any]
                ) -> dict[str, Any]:
    """The syms the input shapes carry, as the sizes themselves (SymInts while tracing)."""
    syms = dict(known)
    for s, arg, d, aff in binder.plan:
        extent = named[arg].shape[d]
        if aff.op == "var":
            syms[s] = extent
            continue
        coef, const = aff.linear()
        rest = sum(c * syms[v] for v, c in coef.items() if v != s)
        syms[s] = (extent - const - rest) // coef[s]
    return syms


def output_shape(a: Array, syms: dict[str, Any]) -> tuple[Any, ...]:
    """An output's shape, its dimensions evaluated over ints or SymInts."""
    return tuple(sym_eval(aff, syms) for aff in a.shape)


def sym_eval(aff: Aff, env: dict[str, Any]) -> Any:
    """``aff`` over ints or SymInts (``Aff.eval`` calls int(), which would specialize)."""
    if aff.op == "var":
        return env[aff.args[0]]
    if aff.op == "const":
        return aff.args[0]
    return _SYM_EVAL[aff.op](*(sym_eval(x, env) for x in aff.args))
