"""The callable: bind syms from shapes, check, allocate outputs, one call into the dispatcher."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ShapeError, user_facing
from ..parametric.binding import Binder, outside_assume
from ..parametric.dlpack import result_kind, torch_tensor_type
from ..parametric.variants import Variant
from ..scop.exprs import NUMPY_NAME
from ..scop.ir import Scop
from ..scop.names import user_text
from .c_library import CFunctions, load_extension, load_library
from .conditions import SizeTests


class KernelBase(abc.ABC):
    """What every target's compiled operator shares: the signature checks, variant lookup and
    introspection. A target implements ``_call`` (run, optionally forcing a variant) and
    ``_select_index`` (the dispatcher's choice for given sizes)."""

    def __init__(self, scop: Scop, variants: list[Variant], source: str, op: Any,
                 target: str, notes: tuple[str, ...] = (), machine: Any = None,
                 tests: SizeTests | None = None):
        self.scop = scop
        # sizes are tested with isl, or (a loaded artifact: no isl) with these conditions
        self.tests = tests
        self.notes = notes  # how the compiler rewrote the program before scheduling it
        self.variants = variants
        self.source = source
        self.op = op
        self.target = target  # "c" or "opencl"
        self.machine = machine  # what the code was planned for (polydyn.target)
        self.name = scop.name
        self._binder = Binder(scop)
        self._tensors = [a for a in scop.arg_arrays if a.is_tensor]
        self._order = [(a.name, a.kind) for a in scop.arg_arrays]
        self._outputs = [a for a in scop.arg_arrays if a.kind == "out"]
        self._np = {a.name: np.dtype(NUMPY_NAME[a.dtype]) for a in scop.arg_arrays}
        self._inside: set[tuple[int, ...]] = set()  # (variant, *sizes) found in its region

    @abc.abstractmethod
    def _call(self, args: tuple[Any, ...], kwargs: Mapping[str, Any], variant: int | None
              ) -> Any:
        """Run the call (the variant the sizes select, or the forced one)."""

    @abc.abstractmethod
    def _select_index(self, syms: Mapping[str, int]) -> int:
        """The index of the variant that runs for these (context-checked) sizes."""

    def _bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        return self._binder.bind(args, kwargs)

    @user_facing
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(args, kwargs, variant=None)

    @user_facing
    def run_variant(self, variant: int | str, *args: Any, **kwargs: Any) -> Any:
        """Run one variant whatever the sizes (the sizes must still lie in its region)."""
        return self._call(args, kwargs, variant=self._variant_index(variant))

    # --- introspection -----------------------------------------------------------------------
    @user_facing
    def params(self, *args: Any, **kwargs: Any) -> dict[str, int]:
        """The sym values these arguments bind (``{"N": .., "M": ..}``), checked."""
        syms = self._bind(args, kwargs).syms
        self._check_context(syms)
        return {self.scop.user_name(s): v for s, v in syms.items()}

    def _sizes(self, syms: Mapping[str, int]) -> dict[str, int]:
        """Sizes given with the user's names (``I=3``), keyed by the Scop's names."""
        here = {self.scop.user_name(s): s for s in self.scop.syms}
        return {here.get(k, k): v for k, v in syms.items()}

    def _variant_index(self, variant: int | str) -> int:
        if isinstance(variant, int):
            if not 0 <= variant < len(self.variants):
                raise ShapeError(f"variant index {variant} out of range "
                                 f"(0..{len(self.variants) - 1})")
            return variant
        for k, v in enumerate(self.variants):
            if v.name == variant:
                return k
        raise ShapeError(f"no variant named {variant!r}; variants: "
                         f"{', '.join(v.name for v in self.variants)}")

    def _check_context(self, syms: Mapping[str, int]) -> None:
        """Raise ShapeError when the sizes lie outside the operator's ``assume`` context."""
        if self.tests is None:
            from ..scop.interp import check_context

            check_context(self.scop, syms)
        elif not self.tests.in_context(syms):
            raise outside_assume(self.scop, syms)

    def _in_region(self, index: int, syms: Mapping[str, int]) -> bool:
        """Whether the sizes (in the context) lie in the region of variant ``index``."""
        if self.tests is not None:
            return self.tests.in_region(index, syms)
        return not self._point(syms).intersect(self.variants[index].region).is_empty()

    def _point(self, syms: Mapping[str, int]) -> Any:
        """The sizes as an isl set (a compiled kernel only: needs isl)."""
        import islpy as isl

        cons = " and ".join(f"{s} = {syms[s]}" for s in self.scop.syms)
        return isl.Set(f"{self.scop.param_space_text()} -> {{ : {cons or '1 = 1'} }}")

    def _check_region(self, index: int, syms: Mapping[str, int]) -> None:
        key = (index, *(syms[s] for s in self.scop.syms))
        if key in self._inside:  # isl's test costs ~0.1 ms: forced-variant benchmarks repeat
            return
        self._check_context(syms)
        if not self._in_region(index, syms):
            raise ShapeError(f"sizes {dict(syms)} are outside the region of variant "
                             f"{self.variants[index].name}: {self.variants[index].region}")
        if len(self._inside) < 4096:
            self._inside.add(key)

    @user_facing
    def select(self, **syms: int) -> Variant:
        """The variant the dispatcher runs for these sizes."""
        syms = self._sizes(syms)
        missing = [self.scop.user_name(s) for s in self.scop.syms if s not in syms]
        if missing:
            raise ShapeError(f"explain/select needs every size: missing {', '.join(missing)}")
        self._check_context(syms)
        return self.variants[self._select_index(syms)]

    @user_facing
    def explain(self, **syms: int) -> str:
        """Which variant runs for these sizes, and why the ones before it do not."""
        chosen = self.select(**syms)
        syms = self._sizes(syms)
        at = ", ".join(f"{self.scop.user_name(s)}={syms[s]}" for s in self.scop.syms)
        lines = [f"{self.name} at {at}:"]
        lines += [f"  rewritten: {note}" for note in self.notes]
        for k, v in enumerate(self.variants):
            inside = self._in_region(k, syms)
            if v is chosen:
                lines.append(f"  runs {v.name}: sizes satisfy {v.region}")
                lines.append(f"    schedule: {v.summary}")
                break
            lines.append(f"  skips {v.name}: {'(not reached)' if inside else 'outside'} "
                         f"{v.region}")
        return user_text("\n".join(lines), self.scop.user_names)

    def __repr__(self) -> str:
        return (f"<polydyn Kernel {self.name} target={self.target} "
                f"variants={[v.name for v in self.variants]}>")


class Kernel(KernelBase):
    """A compiled operator. ``k(*inputs, **outputs_and_sizes)`` runs the variant for the sizes.

    Attributes: ``variants`` (list of Variant), ``source`` (all generated C), ``header``,
    ``target`` ("c"), ``machine`` (the ``polydyn.target.CpuTarget`` it was planned for),
    ``library`` (path of the shared library), ``scop``, ``op`` (the Operator, if any).
    """

    def __init__(self, scop: Scop, variants: list[Variant], source: str, header: str,
                 library: Path, op: Any = None, target: str = "c", module: str | None = None,
                 notes: tuple[str, ...] = (), machine: Any = None,
                 tests: SizeTests | None = None):
        super().__init__(scop, with_sources(variants, _c_functions(source)), source, op, target,
                         notes, machine, tests)
        self.header = header
        self.library = library
        self.module = module  # the CPython extension module in ``library`` (None: none)
        self._fns = CFunctions(load_library(library), scop)
        # the generated CPython fast path (None: every call takes the checked Python path)
        self._fast = load_extension(library, module).call if module else None
        self._output_names = [scop.user_name(a.name) for a in self._outputs]

    # --- calling -------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # the fast path raises no user error (it declines with NotImplemented), so it runs
        # outside the user_facing wrapper, which would cost a third of a call
        if self._fast is not None:
            result = self._fast(*args, **kwargs)
            if result is not NotImplemented:
                return result
            if args and type(args[0]) is not np.ndarray:
                result = self._tensor_fast(args, kwargs)
                if result is not NotImplemented:
                    return result
        return self._checked_call(args, kwargs)

    def _tensor_fast(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        """Torch tensors through the fast path as their NumPy views (``Tensor.numpy()``, no
        copy), allocated outputs back as tensors; NotImplemented (nothing written) whenever the
        checked path must decide (another dtype or device, grad, a view the shim declines)."""
        tensor = torch_tensor_type()
        if tensor is None or not isinstance(args[0], tensor):
            return NotImplemented
        try:
            views = [x.numpy() if isinstance(x, tensor) else x for x in args]
            named = {k: x.numpy() if isinstance(x, tensor) else x for k, x in kwargs.items()}
        except (RuntimeError, TypeError):
            return NotImplemented
        result = self._fast(*views, **named)
        if result is NotImplemented or result is None:
            return result
        outs = result if isinstance(result, tuple) else (result,)
        wrap = result_kind(args[0])
        outs = tuple(kwargs[n] if n in kwargs else wrap(x)
                     for n, x in zip(self._output_names, outs, strict=True))
        return outs if isinstance(result, tuple) else outs[0]

    @user_facing
    def _checked_call(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        return self._call(args, kwargs, variant=None)

    def _call(self, args: tuple[Any, ...], kwargs: Mapping[str, Any], variant: int | None) -> Any:
        """The checked path: any array layout, aliasing, output buffers, precise errors."""
        bound = self._binder.bind(args, kwargs)
        syms = bound.syms
        if variant is not None:
            self._check_region(variant, syms)
        call_arrays, copy_back = self._dense_arrays(bound)
        call = [syms[s] for s in self.scop.syms]
        for name, kind in self._order:
            call.append(bound.values[name] if kind == "value" else
                        call_arrays[name].ctypes.data)
        rc = self._fns.dispatch(*call) if variant is None else self._fns.run(variant, *call)
        if rc != 0:
            self._fail(rc, syms)
        for view, dense in copy_back:  # results land in the caller's views
            view[...] = dense
        outs = tuple(bound.result(a.name, call_arrays[a.name]) for a in self._outputs)
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else outs

    def _dense_arrays(self, bound: Any) -> tuple[dict[str, np.ndarray],
                                                 list[tuple[np.ndarray, np.ndarray]]]:
        """C-contiguous arrays for the call: outputs allocated, views copied (written ones
        copied back after), inputs that alias a written array copied first."""
        arrays = bound.arrays
        call_arrays: dict[str, np.ndarray] = {}
        copy_back: list[tuple[np.ndarray, np.ndarray]] = []
        written = [arrays[a.name] for a in self._tensors
                   if a.kind in ("inout", "out") and a.name in arrays]
        for name, kind in self._order:
            if kind == "value":
                continue
            x = arrays.get(name)
            if x is None:  # an output nobody passed: allocate it
                shape = self._binder.output_shape(self.scop.array(name), bound.syms)
                call_arrays[name] = np.empty(shape, self._np[name])
                continue
            if kind == "in" and written and any(np.may_share_memory(x, w) for w in written):
                x = x.copy()
            if not x.flags.c_contiguous:
                y = np.ascontiguousarray(x)
                if kind != "in":
                    copy_back.append((x, y))
                x = y
            call_arrays[name] = x
        return call_arrays, copy_back

    def _fail(self, rc: int, syms: Mapping[str, int]) -> None:
        if rc == -1:
            self._check_context(syms)
            sizes = ", ".join(f"{self.scop.user_name(k)}={v}" for k, v in syms.items())
            raise ShapeError(f"no variant of {self.name} covers the sizes {sizes}")
        if rc == -2:
            raise MemoryError(f"{self.name}: a temporary array could not be allocated")
        raise ShapeError(f"{self.name}: the kernel refused the call (code {rc})")


    def _select_index(self, syms: Mapping[str, int]) -> int:
        index = self._fns.select(*[int(syms[s]) for s in self.scop.syms])
        if index < 0:
            raise ShapeError(f"no variant covers {dict(syms)}")
        return index


def with_sources(variants: list[Variant], texts: list[str]) -> list[Variant]:
    """``variants`` each with its text (``Variant.source``), where there is one per variant."""
    if len(texts) != len(variants):
        return variants
    return [v if v.source else v.replace(source=text.strip("\n") + "\n")
            for v, text in zip(variants, texts, strict=True)]


def _c_functions(source: str) -> list[str]:
    """A C module's variant functions: its units between the head and the dispatcher."""
    from ..codegen_c.toolchain import UNIT_BREAK

    return source.split(UNIT_BREAK)[1:-1]
