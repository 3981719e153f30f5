"""What limits the OpenCL matmul on a GPU: register-tile shapes and 32-bit index arithmetic.

Times ``kernels/matmul.py`` on the default OpenCL device (pyopencl arrays, each call
synchronized, median of repeated calls) with POLYDYN_OCL_REGTILE off, 2x2, 4x4 and 8x8, each
as polydyn runs it (the 32-bit index build at these sizes) and 4x4 and 8x8 forced onto the
64-bit build, and prints NVIDIA's register report (``-cl-nv-verbose``) for the 4x4 program
where the device is NVIDIA's. Run from the repository root: ``python bench/gpu_matmul_probe.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import polydyn as pd
from kernels.matmul import matmul


def timed(call, queue, seconds: float = 0.5) -> float:
    """The median time of ``call()`` with the queue finished after each."""
    call()
    queue.finish()
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        start = time.perf_counter()
        call()
        queue.finish()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    import pyopencl.array as cla

    for n in (1024, 2048):
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        want = a.astype(np.float64) @ b
        results = []
        for label, regtile, wide in (("off", "off", False), ("2x2", "2x2", False),
                                     ("4x4", "4x4", False), ("4x4, 64-bit", "4x4", True),
                                     ("8x8", "8x8", False), ("8x8, 64-bit", "8x8", True)):
            try:
                k = pd.compile(matmul, target="opencl", ocl_regtile=regtile)
            except pd.PolydynError as exc:
                results.append(f"{label}: refused ({exc})")
                continue
            if wide:
                k._index32 = False
            dev = [cla.to_device(k.queue, x) for x in (a, b)]
            out = cla.empty(k.queue, (n, n), np.float32)
            k(*dev, C=out)
            err = float(np.abs(out.get() - want).max())
            s = timed(lambda k=k, dev=dev, out=out: k(*dev, C=out), k.queue)
            results.append(f"{label}: {2 * n**3 / s / 1e12:.2f} TFLOP/s (max error {err:.1e})")
        print(f"matmul {n}^3: " + "; ".join(results), flush=True)
    k = pd.compile(matmul, target="opencl", ocl_regtile="4x4")
    if "NVIDIA" in k.device.platform.name:
        import pyopencl as cl

        prg = cl.Program(k.context, k.source).build(options=["-cl-nv-verbose",
                                                              "-DPD_INDEX32"])
        log = prg.get_build_info(k.device, cl.program_build_info.LOG)
        print("\n".join(line for line in log.splitlines()
                        if "registers" in line or "spill" in line or "Function" in line))


if __name__ == "__main__":
    main()
