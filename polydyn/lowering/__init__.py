"""Stage 4b: the typed loop tree between isl's AST and the printers (``tree.py``)."""
