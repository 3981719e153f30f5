"""Stage 5a: the loop tree -> C source, and the C toolchain."""
