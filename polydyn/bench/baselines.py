"""The implementations a benchmark times side by side.

- ``polydyn``: the compiled kernel, variant chosen by its dispatcher (outputs preallocated
  once and passed by keyword, as a performance-minded caller would); an OpenCL kernel
  (``polydyn-opencl``) is called with ``pyopencl.array`` arguments that stay on its device, and
  each timed call waits for the queue: the kernels' time, not the host-device copies;
- ``generic``: the same kernel with dispatch forced to its generic (last) variant
  (``Kernel.run_variant``);
- ``naive``: the operator's own loop nest in program order through the same C path
  (``pd.Schedule.original()``) with OpenMP on its outermost loop that carries no dependence:
  the "plain C + OpenMP, gcc -O3" baseline;
- ``numpy``: the operator module's ``numpy_impl`` (allocates its result, as users call it);
- ``torch`` / ``torch.compile``: PyTorch CPU eager, or ``torch.compile(dynamic=True)``, for the
  bundled operators it has a function for, when installed;
- ``torch-cuda``: the same PyTorch functions on a CUDA GPU (cuBLAS, cuDNN), tensors on the GPU
  before the timing, each timed call synchronized: the GPU baseline of ``polydyn-opencl``.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import PolydynError
from ..parametric.binding import Binder
from ..scop.exprs import NUMPY_NAME
from ..scop.ir import Guard, Loop, Scop
from ..testing import call_args

Results = dict[str, np.ndarray]


@dataclass
class Prepared:
    """One implementation bound to one point's inputs: ``call()`` is what is timed;
    ``results()`` the caller-visible arrays after the last call (outputs, then inouts)."""

    call: Callable[[], Any]
    results: Callable[[], Results]
    variant: str = ""


@dataclass
class Impl:
    """A named implementation. ``prepare(inputs, sizes)`` binds it to a point; ``kernel`` and
    ``variant`` (a forced variant index) are set for polydyn kernels, which are checked with
    the reference interpreter at small sizes."""

    name: str
    prepare: Callable[[Mapping[str, Any], Mapping[str, int]], Prepared]
    target: str = "c"
    kernel: Any = None
    variant: int | None = None
    note: str = ""
    is_polydyn: bool = False
    stats: dict[str, Any] = field(default_factory=dict)


def numpy_dtype(dtype: str) -> np.dtype:
    return np.dtype(NUMPY_NAME[dtype])


def out_buffers(scop: Scop, sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """An empty array for each output argument."""
    return {a.name: np.empty(tuple(d.eval(sizes) for d in a.shape), numpy_dtype(a.dtype))
            for a in scop.outputs}


def inout_names(scop: Scop) -> list[str]:
    return [a.name for a in scop.arg_arrays if a.kind == "inout"]


# --- polydyn ----------------------------------------------------------------------------------


def kernel_impl(name: str, kernel: Any, variant: int | None = None, note: str = "") -> Impl:
    """A compiled kernel, dispatched (``variant=None``) or forced to one variant; an OpenCL
    kernel's arrays are copied to its device once, before the timing."""
    scop = kernel.scop
    names = Binder(scop).names
    on_device = getattr(kernel, "target", "c") == "opencl"

    def prepare(inputs: Mapping[str, Any], sizes: Mapping[str, int]) -> Prepared:
        pos, kw = call_args(kernel, inputs, sizes)
        outs: dict[str, Any] = out_buffers(scop, sizes)
        host = lambda x: x  # noqa: E731
        wait = lambda: None  # noqa: E731
        if on_device:
            pos, outs, host, wait = _to_device(kernel, pos, outs)
        if variant is None:
            run, chosen = kernel, kernel.select(**sizes).name
        else:
            run, chosen = functools.partial(kernel.run_variant, variant), \
                kernel.variants[variant].name

        def call() -> Any:
            run(*pos, **kw, **outs)
            wait()

        def results() -> Results:
            got = {n: host(x) for n, x in outs.items()}
            for n in inout_names(scop):
                got[n] = host(pos[names.index(n)])
            return got

        return Prepared(call, results, chosen)

    return Impl(name, prepare, target=getattr(kernel, "target", "c"), kernel=kernel,
                variant=variant, note=note, is_polydyn=True)


def _to_device(kernel: Any, pos: Sequence[Any], outs: Mapping[str, np.ndarray]
               ) -> tuple[list[Any], dict[str, Any], Callable[[Any], Any], Callable[[], Any]]:
    """``pos`` and ``outs`` as pyopencl arrays on the kernel's queue, with the function that
    reads one back and the one that waits for the queue."""
    import pyopencl.array as cla

    queue = kernel.queue

    def dev(x: Any) -> Any:
        return cla.to_device(queue, np.ascontiguousarray(x)) if isinstance(x, np.ndarray) \
            else x

    def host(x: Any) -> Any:
        return x.get(queue=queue) if isinstance(x, cla.Array) else x

    return [dev(x) for x in pos], {n: dev(x) for n, x in outs.items()}, host, queue.finish


def generic_index(kernel: Any) -> int:
    """The generic variant: the last one (it closes the cover of the context)."""
    return len(kernel.variants) - 1


def naive_schedule() -> Any:
    """The core's "original order, no transformations" recipe: ``pd.Schedule.original()``
    (None with a core that has no such recipe: the forced generic variant stands in)."""
    import polydyn

    sched = getattr(polydyn, "Schedule", None)
    for attr in ("original", "identity"):
        make = getattr(sched, attr, None)
        if callable(make):
            return make()
    return None


def loop_vars(nodes: Sequence[Any]) -> list[str]:
    """The operator's loop variables, outermost first (pre-order over its loop tree)."""
    out: list[str] = []
    for node in nodes:
        if isinstance(node, Loop):
            out += [node.var, *loop_vars(node.body)]
        elif isinstance(node, Guard):
            out += loop_vars(node.then) + loop_vars(node.orelse)
    return list(dict.fromkeys(out))


def naive_kernel(op: Any, scop: Scop, compile_fn: Callable[..., Any]) -> tuple[Any, str] | None:
    """The loop nest as written through the same C path, with OpenMP on its outermost loop
    that carries no dependence (what "plain C + OpenMP, gcc -O3" means); None when the core
    has no original-order recipe."""
    recipe = naive_schedule()
    if recipe is None:
        return None
    for var in loop_vars(scop.tree) if hasattr(recipe, "parallel") else ():
        try:
            kernel = compile_fn(op, variants=[("true", recipe.parallel(var))])
        except PolydynError:  # the loop carries a dependence: try the next one
            continue
        return kernel, f"original loop order, OpenMP on loop {var}"
    return compile_fn(op, variants=[("true", recipe)]), "original loop order, sequential"


# --- NumPy ------------------------------------------------------------------------------------


def _keyword_filter(fn: Callable[..., Any]) -> Callable[[Mapping[str, int]], dict[str, int]]:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return lambda kw: dict(kw)
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return lambda kw: dict(kw)
    return lambda kw: {k: v for k, v in kw.items() if k in params}


def result_names(scop: Scop) -> list[str]:
    """What a NumPy-style implementation returns: the outputs, or the inouts when the
    operator has no outputs (it returns None and updates them in place)."""
    outs = [a.name for a in scop.outputs]
    return outs or inout_names(scop)


def as_results(scop: Scop, returned: Any) -> Results:
    names = result_names(scop)
    values = returned if isinstance(returned, tuple | list) else (returned,)
    return {n: np.asarray(v) for n, v in zip(names, values, strict=False)}


def function_impl(name: str, scop: Scop, fn: Callable[..., Any],
                  convert: Callable[[Any], Any] = lambda x: x,
                  back: Callable[[Any], Any] = np.asarray, note: str = "") -> Impl:
    """An implementation called like ``numpy_impl``: the inputs positionally, index syms by
    keyword; ``convert`` maps each NumPy input (e.g. to a torch tensor), ``back`` each result."""
    accept = _keyword_filter(fn)
    holder = ScopRef(scop)

    def prepare(inputs: Mapping[str, Any], sizes: Mapping[str, int]) -> Prepared:
        pos, kw = call_args(holder, inputs, sizes)
        args = [convert(x) if isinstance(x, np.ndarray) else x for x in pos]
        kwargs = accept(kw)
        last: list[Any] = [None]

        def call() -> Any:
            last[0] = fn(*args, **kwargs)
            return last[0]

        def results() -> Results:
            returned = last[0]
            if isinstance(returned, tuple | list):
                returned = tuple(back(r) for r in returned)
            elif returned is not None:
                returned = back(returned)
            return as_results(scop, returned)

        return Prepared(call, results)

    return Impl(name, prepare, note=note)


class ScopRef:
    """A bare Scop where ``polydyn.testing.call_args`` wants an operator (``.scop``)."""

    def __init__(self, scop: Scop):
        self.scop = scop


def numpy_baseline(scop: Scop, numpy_impl: Callable[..., Any] | None) -> Impl | None:
    if numpy_impl is None:
        return None
    return function_impl("numpy", scop, numpy_impl, note="the operator module's numpy_impl")


# --- PyTorch ----------------------------------------------------------------------------------

# Bundled operator name -> (torch, torch.nn.functional, *inputs) -> result.
TORCH_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "matmul": lambda t, nnf, a, b: t.matmul(a, b),
    "batched_matmul": lambda t, nnf, a, b: t.bmm(a, b),
    "bias_relu": lambda t, nnf, x, b: nnf.relu(x + b),
    "softmax": lambda t, nnf, x: nnf.softmax(x, dim=1),
    "layernorm": lambda t, nnf, x, g, b: nnf.layer_norm(x, (x.shape[1],), g, b, eps=1e-5),
    "conv2d": lambda t, nnf, x, w: nnf.conv2d(x, w),
    "maxpool": lambda t, nnf, x: nnf.max_pool2d(x, 2),
    "transpose": lambda t, nnf, a: a.t().contiguous(),
}


def torch_module() -> Any:
    """``torch`` with its intra-op threads set like OpenMP's, or None when not installed."""
    if "torch" not in sys.modules:
        try:
            import torch
        except Exception:
            return None
    torch = sys.modules["torch"]
    threads = int(os.environ.get("OMP_NUM_THREADS") or 0) or (os.cpu_count() or 1)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return torch


def torch_function(scop: Scop) -> Callable[..., Any] | None:
    """A torch function with ``numpy_impl``'s signature for a bundled operator, or None."""
    torch = torch_module()
    body = TORCH_FUNCTIONS.get(scop.name)
    if torch is None or body is None:
        return None
    import torch.nn.functional as F  # noqa: N812

    def fn(*args: Any) -> Any:
        return body(torch, F, *args)

    return fn


def torch_baseline(scop: Scop) -> tuple[Impl | None, str]:
    """PyTorch eager, or None and the reason it is skipped."""
    torch = torch_module()
    if torch is None:
        return None, "torch is not installed"
    fn = torch_function(scop)
    if fn is None:
        return None, f"no torch function for {scop.name}"
    return function_impl("torch", scop, fn, convert=torch.from_numpy,
                         back=lambda r: r.numpy(), note=f"torch {torch.__version__} eager, "
                         f"{torch.get_num_threads()} threads"), ""


def torch_cuda_baseline(scop: Scop) -> tuple[Impl | None, str]:
    """PyTorch eager on the first CUDA GPU, or None and the reason it is skipped. The inputs
    are on the GPU before the timing; each call waits for the GPU."""
    torch = torch_module()
    if torch is None:
        return None, "torch is not installed"
    if not torch.cuda.is_available():
        return None, "torch sees no CUDA GPU"
    fn = torch_function(scop)
    if fn is None:
        return None, f"no torch function for {scop.name}"

    def synced(*args: Any) -> Any:
        result = fn(*args)
        torch.cuda.synchronize()
        return result

    device = torch.cuda.get_device_name(0)
    return function_impl("torch-cuda", scop, synced,
                         convert=lambda x: torch.from_numpy(x).cuda(),
                         back=lambda r: r.cpu().numpy(),
                         note=f"torch {torch.__version__} eager on {device}"), ""


def _graph_count(torch: Any) -> int:
    try:
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])
    except Exception:
        return 0


def torch_compile_baseline(scop: Scop) -> tuple[Impl | None, str]:
    """``torch.compile(dynamic=True)`` of the eager function, compiled afresh for this sweep
    (empty inductor cache). ``stats`` records each call that compiled: the first (cold compile)
    and every recompile over the sweep, with its duration."""
    torch = torch_module()
    fn = torch_function(scop) if torch is not None else None
    if fn is None:
        return None, "torch is not installed" if torch is None else \
            f"no torch function for {scop.name}"
    import tempfile
    import time

    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="polydyn-bench-inductor-")
    torch._dynamo.reset()
    compiled = torch.compile(fn, dynamic=True)
    stats: dict[str, Any] = {"compiles": []}
    eager = function_impl("torch.compile", scop, compiled, convert=torch.from_numpy,
                          back=lambda r: r.numpy())

    def prepare(inputs: Mapping[str, Any], sizes: Mapping[str, int]) -> Prepared:
        prepared = eager.prepare(inputs, sizes)
        before = _graph_count(torch)
        start = time.perf_counter()
        prepared.call()
        seconds = time.perf_counter() - start
        graphs = _graph_count(torch) - before
        if graphs or not stats["compiles"]:
            stats["compiles"].append({"sizes": dict(sizes), "seconds": seconds,
                                      "graphs": graphs})
        return prepared

    impl = Impl("torch.compile", prepare, note=f"torch {torch.__version__} "
                "torch.compile(dynamic=True), compiled afresh per sweep")
    impl.stats = stats
    return impl, ""
