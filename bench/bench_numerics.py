"""The cost of portable numerics (src/fedflat/core/util/numerics.py): a client's round (K local steps) in portable mode
(AVX2 kernels, MKL's strict AVX2 branch, eager local steps) against native mode, both with one thread.

  python -m bench.bench_numerics [--workloads mlp2 lenet5] [--algorithms fedavg fedsam] [--steps 10]
                                 [--rounds 6] [--chunks 3]

Two comparisons per workload and algorithm, each ratio from one invocation:
  kernels   portable ÷ native with the eager backend on both sides: the pinned kernels alone
  total     portable ÷ native with `auto` (what each mode runs by default: native compiles the fused step where
            auto finds it wins, portable stays eager)
The kernel settings are read when torch loads, so each side is a child process (the environment of its mode);
children of the two sides alternate in chunks, and each reports the process CPU time per client round after its
warm-up round (compile warm-up excluded), so load that comes and goes hits both sides alike.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from fedflat.core.util.numerics import ENV_VAR, PORTABLE_ENV


def child(workload: str, algorithm: str, backend: str, steps: int, rounds: int) -> dict:
    import tempfile
    import time

    import torch

    from bench.bench_real import REAL, build, client_round
    from fedflat.core.util import numerics

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        sim = build(workload, algorithm, backend, steps, 10, tmp)
        one = client_round(sim)
        one()  # warm-up: compile, allocator, caches
        c = time.process_time()
        for _ in range(rounds):
            one()
        cpu = (time.process_time() - c) / rounds
    return {"mode": numerics.active(), "backend": sim.backend, "cpu_s_per_client_round": cpu,
            "capability": torch.backends.cpu.get_cpu_capability(), "shape": REAL[workload][2]}


def _env(mode: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in PORTABLE_ENV and k != ENV_VAR}
    if mode == "portable":
        env.update({**PORTABLE_ENV, ENV_VAR: "portable"})
    return env


def _run_child(mode: str, *args) -> dict:
    cmd = [sys.executable, "-m", "bench.bench_numerics", "--child", *map(str, args)]
    out = subprocess.run(cmd, env=_env(mode), capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", nargs="+", default=["mlp2", "lenet5"])
    ap.add_argument("--algorithms", nargs="+", default=["fedavg", "fedsam"])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=6, help="timed client rounds per child")
    ap.add_argument("--chunks", type=int, default=3, help="children per side, alternating")
    ap.add_argument("--child", nargs=5, metavar=("WORKLOAD", "ALGORITHM", "BACKEND", "STEPS", "ROUNDS"),
                    help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        w, alg, backend, steps, rounds = a.child
        print(json.dumps(child(w, alg, backend, int(steps), int(rounds))))
        return
    print(f"# portable ÷ native numerics, CPU ms per client round (K = {a.steps}), {a.chunks} children per side")
    for w in a.workloads:
        for alg in a.algorithms:
            for what, backends in (("kernels", ("eager", "eager")), ("total", ("auto", "auto"))):
                sums = {"portable": 0.0, "native": 0.0}
                seen = {}
                for _ in range(a.chunks):
                    for mode, backend in zip(("portable", "native"), backends):
                        r = _run_child(mode, w, alg, backend, a.steps, a.rounds)
                        sums[mode] += r["cpu_s_per_client_round"]
                        seen[mode] = f"{r['capability']} {r['backend']}"
                p, n = (1000 * sums[m] / a.chunks for m in ("portable", "native"))
                print(f"{what} {w} {alg}: portable {p:.1f} ms ({seen['portable']}), native {n:.1f} ms "
                      f"({seen['native']}): cost {p / n:.2f}x")


if __name__ == "__main__":
    main()
