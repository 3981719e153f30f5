"""The roofline of a GPU run: each rate as a share of the device's peak (FP32 arithmetic for
GFLOP/s, memory bandwidth for GB/s), for the GPUs whose peaks are known."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Peak:
    """A device's datasheet peaks: FP32 GFLOP/s without tensor cores, and memory GB/s."""

    name: str
    gflops: float
    gbs: float

    def of(self, metric: str) -> float:
        """The peak in ``metric``'s unit ("GFLOP/s" or "GB/s")."""
        return self.gflops if metric == "GFLOP/s" else self.gbs

    def text(self) -> str:
        return f"{self.name}: {self.gflops / 1e3:g} TFLOP/s FP32, {self.gbs / 1e3:g} TB/s"


# matched against the device's name, first match wins: the PCIe H100 before the SXM one
PEAKS = (
    ("H100 PCIe", Peak("H100 PCIe", 51_200.0, 2_000.0)),
    ("H100", Peak("H100 SXM", 67_000.0, 3_350.0)),
    ("H200", Peak("H200", 67_000.0, 4_800.0)),
)

# the kind of device each GPU implementation runs on, as machine_info's device lines name it
DEVICE_KIND = {"polydyn-opencl": "OpenCL", "generic-opencl": "OpenCL", "torch-cuda": "CUDA"}


def peak_of(device: str) -> Peak | None:
    """The peaks of the device a device line of machine_info names (None if unknown)."""
    name = device.split(":", 1)[-1].split("(", 1)[0]
    return next((peak for key, peak in PEAKS if key in name), None)


def impl_peaks(devices: Sequence[str], impls: Sequence[str]) -> dict[str, Peak]:
    """``{impl: Peak}`` for the implementations among ``impls`` that ran on a known GPU;
    ``devices``: the ``machine["devices"]`` lines of the run ("OpenCL: NAME (PLATFORM), ...",
    "CUDA: NAME (...)")."""
    by_kind: dict[str, Peak] = {}
    for device in devices:
        kind = device.split(":", 1)[0]
        peak = peak_of(device)
        if peak is not None and kind not in by_kind:
            by_kind[kind] = peak
    return {impl: by_kind[DEVICE_KIND[impl]] for impl in impls
            if DEVICE_KIND.get(impl) in by_kind}


def share(rate: float | None, peak: Peak, metric: str) -> float | None:
    """``rate`` (in ``metric``'s unit) as a fraction of the peak."""
    if rate is None:
        return None
    return rate / peak.of(metric)


def share_text(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.3g}%"
