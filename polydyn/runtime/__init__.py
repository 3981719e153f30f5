"""Stage 6: artifact -> callable (cache, C library loading, the Kernel)."""
