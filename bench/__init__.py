"""Benchmarks that print figures (never assertions): `python -m bench` runs every bench/bench_*.py."""
