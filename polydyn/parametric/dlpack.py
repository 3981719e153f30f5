"""Foreign arrays as NumPy views, with no copy: PyTorch tensors and DLPack producers.

The Binder reads every array argument through NumPy. A CPU torch tensor becomes the NumPy
view of its memory (``Tensor.numpy()`` on the detached tensor: a tensor that requires grad is
read and written as its data, the way ``torch.no_grad`` code would); any other object with
``__dlpack__`` goes through ``np.from_dlpack``. Writes through the view land in the caller's
memory. Nothing here imports torch: a tensor is recognised only when the caller has imported
torch already (``sys.modules``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ShapeError

# DLPack's device types (dlpack.h, DLDeviceType)
_DL_CPU = 1
_DL_NAMES = {2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI",
             10: "ROCm", 11: "ROCm host", 13: "CUDA managed", 14: "oneAPI", 15: "WebGPU",
             16: "Hexagon"}


def torch_tensor_type() -> type | None:
    """``torch.Tensor`` when the process has imported torch, else None (torch is not
    imported here)."""
    torch = sys.modules.get("torch")
    return getattr(torch, "Tensor", None) if torch is not None else None


def as_numpy(name: str, want: np.dtype, x: Any) -> np.ndarray | None:
    """The NumPy view of ``x`` when it is a torch tensor or a DLPack producer, None when it is
    neither (the caller tries ``__array__``). Refusals name the argument: a device other than
    the CPU, a dtype NumPy cannot hold."""
    tensor = torch_tensor_type()
    if tensor is not None and isinstance(x, tensor):
        return _from_torch(name, want, x)
    if hasattr(x, "__dlpack__"):
        return _from_dlpack(name, want, x)
    return None


def _from_torch(name: str, want: np.dtype, t: Any) -> np.ndarray:
    if t.device.type != "cpu":
        raise ShapeError(f"argument {name!r}: expected a CPU tensor, got one on device "
                         f"{t.device}; move it with .cpu() first")
    got = str(t.dtype).removeprefix("torch.")
    if got != want.name:  # checked here: .numpy() refuses bfloat16 and the like
        raise ShapeError(f"argument {name!r}: expected dtype {want}, got torch.{got}")
    try:
        return t.detach().numpy()
    except (TypeError, RuntimeError) as err:  # conjugate or negative views, sparse layouts
        raise ShapeError(f"argument {name!r}: the tensor has no plain strided NumPy view "
                         f"({err})") from None


def _from_dlpack(name: str, want: np.dtype, x: Any) -> np.ndarray:
    try:
        device = tuple(x.__dlpack_device__())
    except Exception as err:  # the producer's own refusal, reported as ours
        raise ShapeError(f"argument {name!r}: its DLPack device is unknown ({err})") from None
    if int(device[0]) != _DL_CPU:
        kind = _DL_NAMES.get(int(device[0]), f"type {int(device[0])}")
        raise ShapeError(f"argument {name!r}: expected an array in CPU memory, got one on "
                         f"DLPack device {kind} (device {device})")
    try:
        try:  # the versioned protocol: no copy, and an honest read-only flag
            return np.from_dlpack(x, copy=False)
        except TypeError:  # a producer of the unversioned protocol only (or NumPy < 2.1)
            return _writable(np.from_dlpack(x))
    except (TypeError, ValueError, BufferError, RuntimeError) as err:
        raise ShapeError(f"argument {name!r}: expected a DLPack array of {want} that NumPy "
                         f"can view, got {type(x).__name__} ({err})") from None


class _Memory:
    """A view's memory offered as writable (``__array_interface__``); keeps the view, and so
    the producer's capsule, alive as the new array's base."""

    def __init__(self, view: np.ndarray):
        self.view = view
        self.__array_interface__ = dict(view.__array_interface__,
                                        data=(view.__array_interface__["data"][0], False))


def _writable(view: np.ndarray) -> np.ndarray:
    """An unversioned DLPack capsule has no read-only flag, so NumPy marks every such view
    read-only; the memory is the producer's to lend, and outputs must land in it."""
    return view if view.flags.writeable else np.asarray(_Memory(view))


def result_kind(x: Any) -> Callable[[np.ndarray], Any] | None:
    """How outputs the kernel allocates are returned when ``x`` is the first array argument:
    torch tensors for a torch tensor (``torch.from_numpy``, no copy), NumPy otherwise
    (None)."""
    tensor = torch_tensor_type()
    if tensor is not None and isinstance(x, tensor):
        return sys.modules["torch"].from_numpy
    return None
