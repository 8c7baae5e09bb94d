"""Benchmarks that print figures (never assertions): `python -m bench` runs every bench/bench_*.py."""

import fedflat.plugins  # noqa: F401,E402  (the composition root, as every entry point: the registries are complete)
