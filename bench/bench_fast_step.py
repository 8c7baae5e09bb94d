"""Target 2, faster than eager: fedflat's local steps with training.backend=compile ÷ plain eager
PyTorch steps of the same model and batch (steps/s ratio; goal >= 1.5 on the CPU for LeNet-5 and
the MLP). Compilation warm-up is printed separately; steady state is what the ratio measures.

  python -m bench.bench_fast_step [--workloads mlp lenet5 resnet18gn] [--algorithm fedavg]
                                  [--steps 20] [--chunks 4] [--resnet-steps 3]

Chunks of K engine steps (one client's local training) alternate with K bare eager steps; the
speed-up is printed from wall time (total and best chunks) and from process CPU time.
With backend=compile, FedAvg/FedSAM-type algorithms run each local step as one compiled graph
(training/fl/fast.py FusedStep).
The engine's eager backend is timed alongside, as a reference for the fused-step question.
"""
from __future__ import annotations

import argparse
import tempfile

from bench.common import BareEager, interleave, machine, make_sim, synthetic, timed, WORKLOADS


def fast_step(workload: str, algorithm: str, steps: int, chunks: int, with_eager: bool = True) -> dict:
    shape = WORKLOADS[workload][2]
    data = synthetic(shape)
    with tempfile.TemporaryDirectory() as tmp:
        clients = max(chunks, 2)
        fast = make_sim(workload, algorithm, data, tmp + "/c", clients=clients, steps=steps, backend="compile")
        bare = BareEager(workload, data, sam=algorithm.endswith("sam"))
        start, lr = fast.srv.theta.clone(), fast.lr_at(1)
        warm = timed(lambda: fast.local_train(0, 1, start, {}, lr))  # includes compilation
        bare.steps(2)
        fns = {"compile": lambda c=iter(range(10**9)): fast.local_train(next(c) % clients, 1, start, {}, lr),
               "bare": lambda: bare.steps(steps)}
        if with_eager:
            eager = make_sim(workload, algorithm, data, tmp + "/e", clients=clients, steps=steps, backend="eager")
            eager.local_train(0, 1, start, {}, lr)
            fns["engine_eager"] = lambda c=iter(range(10**9)): eager.local_train(next(c) % clients, 1, start, {}, lr)
        t = interleave(fns, chunks)
    steady = t["compile"]["total"] / chunks
    return {"warmup_s": warm - steady, "speedup": t["bare"]["total"] / t["compile"]["total"],
            "speedup_min": t["bare"]["min"] / t["compile"]["min"],
            "speedup_cpu": t["bare"]["cpu"] / t["compile"]["cpu"],
            "eager_engine_vs_bare": (t["bare"]["total"] / t["engine_eager"]["total"]) if with_eager else None,
            "bare_step_ms": t["bare"]["total"] / (chunks * steps) * 1e3,
            "compile_step_ms": steady / steps * 1e3}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", nargs="+", default=["mlp", "lenet5", "resnet18gn"])
    ap.add_argument("--algorithm", default="fedavg")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--resnet-steps", type=int, default=3)
    ap.add_argument("--no-eager", action="store_true", help="skip timing the engine's eager backend")
    a = ap.parse_args(argv)
    print(f"faster than eager (backend=compile steps/s ÷ bare eager steps/s), goal >= 1.5; {machine()}")
    for w in a.workloads:
        k = a.resnet_steps if w.startswith("resnet") else a.steps
        r = fast_step(w, a.algorithm, k, a.chunks, not a.no_eager)
        eager = f"  engine eager ÷ bare {r['eager_engine_vs_bare']:.2f}x" if r["eager_engine_vs_bare"] else ""
        print(f"  {w:11s} {a.algorithm} {a.chunks}x{k} steps  bare {r['bare_step_ms']:8.2f} ms/step  compiled "
              f"{r['compile_step_ms']:8.2f} ms/step  speed-up {r['speedup']:.2f}x (best chunks {r['speedup_min']:.2f}x, "
              f"CPU time {r['speedup_cpu']:.2f}x)"
              f"{eager}  warm-up {r['warmup_s']:.1f}s", flush=True)


if __name__ == "__main__":
    main()
