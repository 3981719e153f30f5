"""``pd.Jagged``: a batch of sequences of different lengths, stored without padding, and the
conversion from and to PyTorch's jagged nested tensors (torch is never imported here: a
nested tensor is recognized only when torch is already loaded)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ShapeError


class Jagged:
    """``Jagged(values, lengths)``: the per-sequence blocks one after another in ``values``.

    Row layout (the default): block ``b`` is ``values[offsets[b]:offsets[b+1]]``, ``offsets``
    the row offsets (``B + 1`` entries, PyTorch's jagged layout). 1-D values without block
    shapes may also hold flat blocks (``f32[B, L, L]``): kernels take them as their operator's
    blocks (``.blocks()`` then needs ``block_shapes``). With ``block_shapes`` (one
    shape per sequence, e.g. ``(L[b], L[b])``), ``values`` is 1-D, block ``b`` is its
    ``offsets[b]:offsets[b+1]`` elements in C order, and ``offsets`` count elements.
    """

    def __init__(self, values: Any, lengths: Any,
                 block_shapes: Sequence[tuple[int, ...]] | None = None):
        self.values = values if isinstance(values, np.ndarray) else np.asarray(values)
        lens = np.asarray(lengths)
        if lens.ndim != 1 or (lens.size and lens.dtype.kind not in "iu"):
            raise ShapeError(f"Jagged lengths must be a 1-D sequence of integers, got {lengths!r}")
        self.lengths = lens.astype(np.int64)
        if (self.lengths < 0).any():
            raise ShapeError(f"Jagged lengths must be >= 0, got {self.lengths.tolist()}")
        self.block_shapes = None if block_shapes is None else [tuple(s) for s in block_shapes]
        if self.block_shapes is None:
            sizes = self.lengths
        else:
            if len(self.block_shapes) != len(self.lengths):
                raise ShapeError("Jagged block_shapes needs one shape per sequence")
            sizes = np.array([int(np.prod(s)) for s in self.block_shapes], np.int64)
        self.offsets = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=self.offsets[1:])
        # 1-D values with no block shapes may be rows or flat blocks (f32[B, L, L]): the
        # kernel that takes them checks their size
        flat = self.block_shapes is None and self.values.ndim == 1
        extent = self.values.shape[0] if self.block_shapes is None and self.values.ndim else \
            self.values.size
        if self.values.ndim == 0 or (extent != self.offsets[-1] and not flat):
            raise ShapeError(f"Jagged values: the blocks need {int(self.offsets[-1])} "
                             f"{'rows' if self.block_shapes is None else 'elements'}, values "
                             f"has shape {self.values.shape}")

    @property
    def batch(self) -> int:
        return len(self.lengths)

    def blocks(self) -> list[np.ndarray]:
        """The per-sequence arrays, as views of ``values``."""
        off = self.offsets
        if self.block_shapes is None:
            return [self.values[off[b]:off[b + 1]] for b in range(self.batch)]
        flat = self.values.reshape(-1)
        return [flat[off[b]:off[b + 1]].reshape(self.block_shapes[b])
                for b in range(self.batch)]

    def __repr__(self) -> str:
        return (f"Jagged(values={self.values.dtype}{list(self.values.shape)}, "
                f"lengths={self.lengths.tolist()})")


def is_nested_tensor(x: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor) and x.is_nested


def from_nested(x: Any) -> Jagged:
    """A jagged nested tensor (``layout=torch.jagged``, on the CPU) as a Jagged, no copy."""
    torch = sys.modules["torch"]
    if x.layout != torch.jagged:
        raise ShapeError("nested tensors are accepted with layout=torch.jagged "
                         f"(got {x.layout})")
    if x.device.type != "cpu":
        raise ShapeError(f"nested tensors are accepted on the CPU (got {x.device})")
    values = x.values().detach().numpy()
    offsets = x.offsets().detach().numpy().astype(np.int64)
    if offsets[0] != 0:
        values = values[offsets[0]:]
        offsets = offsets - offsets[0]
    return Jagged(values[: offsets[-1]], np.diff(offsets))


def to_nested(j: Jagged) -> Any:
    """A Jagged in row layout as a jagged nested tensor sharing its values."""
    torch = sys.modules["torch"]
    return torch.nested.nested_tensor_from_jagged(torch.from_numpy(j.values),
                                                  offsets=torch.from_numpy(j.offsets))
