"""Run every bench/bench_*.py module's main() in name order, then print the figures of the speed
issues with their goals (1-5: the first speed issue; 6-8: the real reproduction workloads, issue 15).

    python -m bench                      # full sizes (make bench; long on a loaded 2-core CPU)
    python -m bench --quick              # every benchmark at smoke size, a few minutes (make bench BENCH_ARGS=--quick)
    python -m bench memory overhead      # only the modules whose name contains one of the words

The summary reads each figure from the lines its benchmark printed (a module may instead return a
list of (target, text) pairs from main(), as bench_memory does). Quick-mode figures are smoke
figures: small sizes, noisier ratios, `backend=eager` in the end-to-end comparison.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import re
import sys
import time
from pathlib import Path

# Smoke sizes: each small enough to finish in well under a minute on a loaded 2-core CPU.
QUICK_ARGS = {
    "bench_analysis": ["mlp", "--chunks", "2", "--grid", "5"],
    "bench_data": ["--steps", "2"],
    "bench_fast_step": ["--workloads", "mlp", "--steps", "5", "--chunks", "2"],
    "bench_memory": ["--quick"],
    "bench_numerics": ["--workloads", "mlp2", "--algorithms", "fedavg", "--steps", "3", "--rounds", "2", "--chunks", "1"],
    "bench_overhead": ["--workloads", "lenet5", "--clients", "2", "--steps", "3"],
    "bench_public_pattern": ["--clients", "2", "--steps", "2", "--rounds", "1", "--n-train", "500", "--n-test", "200",
                             "--backend", "eager"],
    "bench_quantizer": ["--calls", "20", "--chunks", "2"],
    "bench_real": ["--workloads", "mlp2", "--algorithms", "fedsam", "--steps", "3", "--chunks", "2"],
}

_FIRST2 = lambda line: " ".join(line.split()[:2])
_LABEL = lambda line: re.split(r"[:(]", line.strip(), maxsplit=1)[0].strip()
_WORKLOAD = lambda line: " ".join(line.split()[1:3])  # bench_real: "<part> <workload> <algorithm> ..."
# target, what, goal, module, pattern over the module's printed lines (last group = the figure), label
TARGETS = (
    ("1", "overhead: round training ÷ bare eager steps", "<= 1.05", "bench_overhead",
     re.compile(r"\bratio ([\d.]+)"), _FIRST2),
    ("2", "faster than eager: backend=compile ÷ bare eager steps/s", ">= 1.5", "bench_fast_step",
     re.compile(r"\bspeed-up ([\d.]+)x"), _FIRST2),
    ("3", "evaluation share of run time", "<= 10%", "bench_public_pattern",
     re.compile(r"\b([\d.]+%) of\b"), _LABEL),
    ("4", "end to end: fedflat ÷ public simulator pattern", ">= 1.5", "bench_public_pattern",
     re.compile(r"^\s*public pattern.*?\bspeed-up ([\d.]+)x"), lambda line: ""),
    ("5", "peak RSS, ResNet-18-GN FedSMOO (100 clients at full size), disk client store", "< 4 GiB", "bench_memory", None, None),
    # issue 15: the real reproduction workloads (FMNIST MLP, ConvNet-3, LeNet-5; Q4 uplink), against today's eager path
    ("6", "real workloads, Q4 uplink: client round, eager ms → backend=auto ms", ">= 1.5x", "bench_real",
     re.compile(r"^\s*steps\s+\S+\s+\S+\s+eager\s+([\d.]+ ms/client\s+\S+ \(\S+\)\s+[\d.]+ ms/client\s+speed-up "
                r"[\d.]+x \(CPU time [\d.]+x\))"), _WORKLOAD),
    ("7", "today's path (eager, glibc allocator defaults) → auto + tuned allocator, steady client round, CPU time",
     ">= 1.5x", "bench_real", re.compile(r"^\s*today\s.*speed-up ([\d.]+x)"), _WORKLOAD),
    ("8", "fixed cost per job: start to the end of the first client round (imports, data, compile)", "reported",
     "bench_real", re.compile(r"^\s*fixed\s+\S+\s+\S+\s+(\S+ \(\S+\) start to end of first client [\d.]+s)"), _WORKLOAD),
)


class _Tee(io.TextIOBase):
    """Print through to the terminal and keep a copy for the summary."""

    def __init__(self, out):
        self.out, self.buf = out, io.StringIO()

    def write(self, s):
        self.out.write(s)
        self.buf.write(s)
        return len(s)

    def flush(self):
        self.out.flush()


def figures(printed: dict[str, str], returned: dict[str, list], failed: set[str]) -> list[tuple[str, str, str, list[str]]]:
    """Per target: (target, what, goal, ["label: figure", ...]) from what the modules printed or returned."""
    rows = []
    for target, what, goal, module, pattern, label in TARGETS:
        found = [text for t, text in returned.get(module) or [] if t == target]
        if pattern is not None and not found:
            for line in printed.get(module, "").splitlines():
                m = pattern.search(line)
                if m:
                    lab = label(line)
                    found.append(f"{lab}: {m.group(m.lastindex)}" if lab else m.group(m.lastindex))
        if not found:
            found = ["failed"] if module in failed else ["not run" if module not in printed else "no figure printed"]
        rows.append((target, what, goal, found))
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="run only modules whose name contains one of these")
    ap.add_argument("--quick", action="store_true", help="every benchmark at smoke size")
    a = ap.parse_args(argv)
    here = Path(__file__).resolve().parent
    names = sorted(p.stem for p in here.glob("bench_*.py"))
    if a.names:
        names = [n for n in names if any(w in n for w in a.names)]
    failed: set[str] = set()
    printed: dict[str, str] = {}
    returned: dict[str, list] = {}
    t0 = time.perf_counter()
    for name in names:
        args = QUICK_ARGS.get(name, []) if a.quick else []
        print(f"=== bench.{name} {' '.join(args)}".rstrip(), flush=True)
        mod = importlib.import_module(f"bench.{name}")
        if not hasattr(mod, "main"):
            print(f"(bench.{name} has no main(); skipped)")
            continue
        tee = _Tee(sys.stdout)
        t = time.perf_counter()
        try:
            with contextlib.redirect_stdout(tee):
                out = mod.main(list(args))
            if isinstance(out, list):
                returned[name] = out
        except Exception as exc:  # one broken benchmark must not hide the others' figures
            print(f"bench.{name} failed: {type(exc).__name__}: {exc}")
            failed.add(name)
        printed[name] = tee.buf.getvalue()
        print(f"(bench.{name}: {time.perf_counter() - t:.0f} s)", flush=True)
    print(f"\n=== summary{' (--quick: smoke sizes)' if a.quick else ''}, {time.perf_counter() - t0:.0f} s in all")
    for target, what, goal, found in figures(printed, returned, failed):
        print(f"  target {target}, {what} (goal {goal}):")
        for f in found:
            print(f"      {f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
