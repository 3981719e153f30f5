"""Stage 1: operator source (Python DSL or C) -> Scop."""
