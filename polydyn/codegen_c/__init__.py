"""Stage 5a: isl AST -> C source, and the C toolchain."""
