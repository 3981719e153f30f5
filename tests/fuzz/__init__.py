"""Differential fuzzing of polydyn: random operators, a shrinker, regressions (README.md)."""
