"""Limits the OpenCL mapping plans with and the runtime reads (no isl here)."""

LOCAL_BUDGET = 32 * 1024  # bytes of __local memory per kernel (GPUs have 32 KiB or more)
