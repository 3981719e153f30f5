"""Benchmarks of compiled operators over sweeps of sizes (``polydyn bench``).

sweep.py (which sizes), work.py (flops and bytes from the Scop, counted by isl), timing.py
(warm-up, repeats, statistics), baselines.py (what is timed), check.py (each implementation
checked once per point), runner.py (the sweep), report.py and plot.py (CSV, JSON, markdown,
PNG), workflow.py (operator file to written results), suite.py (the standard suite).
"""
