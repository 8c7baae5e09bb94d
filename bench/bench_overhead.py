"""Target 1, simulation overhead: a federated round's training time ÷ the same number of bare eager
forward/backward/SGD steps (same model, batch, device; data in memory). Goal <= 1.05.

  python -m bench.bench_overhead [--workloads lenet5 resnet18gn] [--algorithms fedavg fedsam]
                                 [--clients 10] [--steps 50] [--resnet-steps 5] [--backend eager]

Each client's K local steps (engine, training.backend as given) alternate with K bare steps, so
machine load hits both alike. The round's server side (aggregation, server parts, metrics) is
timed by replaying the round with the clients' results cached, and added to the engine side.
FedSAM's bare reference is the classic two-pass SAM step. The ratio is printed from wall time and
from process CPU time (the server side counted at its wall time in both).
"""
from __future__ import annotations

import argparse
import tempfile

import numpy as np

from bench.common import BareEager, machine, make_sim, synthetic, timed, timed_cpu


def server_time(sim, t: int) -> float:
    """run_round with every client's result taken from a cache: what the round adds besides training."""
    cache = {}
    real = sim.local_train

    def cached(cid, *a):
        if cid not in cache:
            cache[cid] = real(cid, *a)
        return cache[cid]

    sim.local_train = cached
    state = (sim.srv.theta.clone(), {k: v.clone() for k, v in sim.srv.state.items()})
    sim.run_round(t)  # fills the cache (training, not timed)
    sim.srv.theta, sim.srv.state = state[0], state[1]
    dt = timed(lambda: sim.run_round(t))
    sim.local_train = real
    return dt


def overhead(workload: str, algorithm: str, clients: int, steps: int, backend: str = "eager") -> dict:
    data = synthetic()
    with tempfile.TemporaryDirectory() as tmp:
        sim = make_sim(workload, algorithm, data, tmp, clients=clients, steps=steps, backend=backend)
        bare = BareEager(workload, data, sam=algorithm.endswith("sam"))
        start, lr = sim.srv.theta.clone(), sim.lr_at(1)
        bare.steps(2)
        sim.local_train(0, 1, start, {}, lr)  # warm-up (allocator, and compilation for backend=compile)
        eng, ref, eng_cpu, ref_cpu = [], [], [], []
        for cid in range(clients):
            for times, cpus, fn in ((eng, eng_cpu, lambda: sim.local_train(cid, 1, start, {}, lr)),
                                    (ref, ref_cpu, lambda: bare.steps(steps))):
                dt, dc = timed_cpu(fn)
                times.append(dt)
                cpus.append(dc)
        srv = server_time(sim, 1) if clients > 1 else 0.0
    return {"engine": sum(eng) + srv, "bare": sum(ref), "server": srv,
            "ratio": (sum(eng) + srv) / sum(ref), "median_client_ratio": float(np.median(np.array(eng) / np.array(ref))),
            "cpu_ratio": (sum(eng_cpu) + srv) / sum(ref_cpu)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", nargs="+", default=["lenet5", "resnet18gn"])
    ap.add_argument("--algorithms", nargs="+", default=["fedavg", "fedsam"])
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--resnet-steps", type=int, default=5, help="local steps for ResNet-18 (slow on a CPU)")
    ap.add_argument("--backend", default="eager")
    a = ap.parse_args(argv)
    print(f"overhead ratio (round training / bare eager steps), goal <= 1.05; {machine()}")
    for w in a.workloads:
        k = a.resnet_steps if w.startswith("resnet") else a.steps
        for alg in a.algorithms:
            r = overhead(w, alg, a.clients, k, a.backend)
            print(f"  {w:11s} {alg:7s} {a.clients}x{k} steps  engine {r['engine']:8.2f}s  bare {r['bare']:8.2f}s  "
                  f"(server side {r['server'] * 1e3:.1f} ms)  ratio {r['ratio']:.3f}  median per client "
                  f"{r['median_client_ratio']:.3f}  CPU-time ratio {r['cpu_ratio']:.3f}", flush=True)


if __name__ == "__main__":
    main()
