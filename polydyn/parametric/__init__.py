"""Stage 3: parameter regions, variants, binding and dispatch."""
