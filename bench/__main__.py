"""Run every bench/bench_*.py module's main() in name order: `python -m bench [name-substring ...]`."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    names = sorted(p.stem for p in here.glob("bench_*.py"))
    if argv:
        names = [n for n in names if any(a in n for a in argv)]
    failed = []
    for name in names:
        print(f"=== bench.{name}", flush=True)
        mod = importlib.import_module(f"bench.{name}")
        if not hasattr(mod, "main"):
            print(f"(bench.{name} has no main(); skipped)")
            continue
        try:
            mod.main([])
        except Exception as exc:  # one broken benchmark must not hide the others' figures
            print(f"bench.{name} failed: {type(exc).__name__}: {exc}")
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
