"""Stage 5b: isl schedule -> OpenCL C kernels plus a host launch plan (PPCG-style mapping)."""
