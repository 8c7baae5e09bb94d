"""Real reproduction workloads (issue 15): a client's round (K local steps and its 4-bit quantized
uplink) with `training.backend: auto` ÷ the same with `eager`, per workload and algorithm; the
allocator thresholds (fedflat/core/util/malloc.py) against glibc's defaults; a job's fixed cost.

  python -m bench.bench_real [--workloads mlp2 convnet lenet5] [--algorithms fedavg fedsam fedsynsam]
                             [--steps 10] [--chunks 4] [--parts steps today fixed allocator]

steps      one process: eager and auto clients alternate in chunks (Q4 uplink on, FedSynSAM with a
           200-image synthetic set in the server state, i.e. the rounds after its distillation);
           ms per client, the speed-up from wall and CPU time, what `auto` chose, its warm-up.
today      alternating child processes: today's path (eager, FEDFLAT_MALLOC=default: glibc's
           thresholds, as before issue 15) against the new default (auto, tuned thresholds): steady
           ms per client round from CPU time (the warm-up is in `fixed`).
allocator  the same with eager on both sides: the allocator thresholds alone (not run by default).
fixed      a child process per backend: interpreter start to imports, data, Simulation, and the end
           of the first client's round (compile warm-up included; inductor's on-disk cache is
           whatever the machine has), and the peak RSS after it.

The FedSynSAM workloads (Table II): the FMNIST MLP 784-200-200-10 (`mlp2`, batch 128) and the
ConvNet-3 with instance norm (`convnet`, CIFAR-shaped, batch 128); LeNet-5 (FedNSAM/FedTOGA,
batch 50). Synthetic uint8 data of the real shapes (speed does not depend on pixel values).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

START = time.perf_counter()

import torch  # noqa: E402

from bench.common import WORKLOADS, interleave, machine, make_sim, synthetic, timed  # noqa: E402

REAL = {"mlp2": ("mlp2", {}, (1, 28, 28), 128), "convnet": ("convnet_synsam", {}, (3, 32, 32), 128),
        "lenet5": WORKLOADS["lenet5"]}
WORKLOADS.update(REAL)  # make_sim reads the model, shape and batch from here
Q4 = {"kind": "quant", "bits": 4}
SYN_PER_CLASS = 20  # FedSynSAM Sec. VI-A: 20 images per class for FMNIST and CIFAR-10


def with_synthetic_set(sim):
    """FedSynSAM after its distillation round: D_syn in the server state, every client mixes it in."""
    g = torch.Generator().manual_seed(0)
    n = SYN_PER_CLASS * sim.data.num_classes
    sim.srv.state.pop("syn_traj", None)
    sim.srv.state["syn_x"] = torch.randn((n, *sim.data.input_shape), generator=g)
    sim.srv.state["syn_y"] = torch.arange(sim.data.num_classes).repeat_interleave(SYN_PER_CLASS)
    sim.algo.perturbation._srv = sim.srv
    return sim


def build(workload: str, algorithm: str, backend: str, steps: int, clients: int, tmp: str):
    data = synthetic(REAL[workload][2], n_train=clients * 600, n_test=1000)
    sim = make_sim(workload, algorithm, data, f"{tmp}/{backend}", clients=clients, steps=steps, backend=backend,
                   lr=0.05, weight_decay=0.0, uplink=Q4)
    if algorithm == "fedsynsam":
        with_synthetic_set(sim)
    return sim


def client_round(sim, t: int = 40):
    """One client's round per call (local steps + quantized uplink), cycling through the clients."""
    cid = iter(range(10**9))
    down: dict = {}
    for p in sim.algo.parts:  # what the server sends down (FedSMOO's s, FedTOGA's Δ, ...), as in a round
        down.update(p.downlink(sim.srv))
    return lambda: sim.local_train(next(cid) % sim.spec.num_clients, t, sim.srv.theta, down, sim.lr_at(t))


def path_of(sim) -> str:
    from fedflat.training.fl.fused import fused_blocker

    return "eager" if sim.backend == "eager" else ("fused" if fused_blocker(sim) is None else "per-call")


def steps_part(workload, algorithm, steps, chunks, clients=10, fast="auto") -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        sims = {"eager": build(workload, algorithm, "eager", steps, clients, tmp),
                "auto": build(workload, algorithm, fast, steps, clients, tmp)}
        fns = {b: client_round(s) for b, s in sims.items()}
        fns["eager"]()
        warm = timed(fns["auto"])  # compilation (if auto compiles) plus one client's round
        t = interleave(fns, chunks)
    e, a = t["eager"], t["auto"]
    return {"eager_ms": e["total"] / chunks * 1e3, "auto_ms": a["total"] / chunks * 1e3, "auto_path": path_of(sims["auto"]),
            "speedup": e["total"] / a["total"], "speedup_cpu": e["cpu"] / a["cpu"],
            "warmup_s": max(0.0, warm - a["total"] / chunks)}


CHILD = r"""
import json, os, resource, sys, time
t0 = time.perf_counter()
sys.argv = ["bench"]
import bench.bench_real as br
from bench.common import make_sim, synthetic
t_imp = time.perf_counter() - t0
mode, workload, algorithm, steps, clients = {args!r}
import tempfile
t1 = time.perf_counter()
data = synthetic(br.REAL[workload][2], n_train=clients * 600, n_test=1000)
t_data = time.perf_counter() - t1
out = {{"import_s": t_imp, "data_s": t_data}}
with tempfile.TemporaryDirectory() as tmp:
    t2 = time.perf_counter()
    sim = br.build(workload, algorithm, "auto" if mode == "auto" else "eager", steps, clients, tmp)
    out["build_s"] = time.perf_counter() - t2
    f = br.client_round(sim)
    t3 = time.perf_counter()
    f()
    out["first_client_s"] = time.perf_counter() - t3
    out["path"] = br.path_of(sim)
    if {n}:  # allocator A/B: steady eager clients, CPU time
        c = time.process_time()
        for _ in range({n}):
            f()
        out["client_cpu_ms"] = (time.process_time() - c) / {n} * 1e3
out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("RESULT " + json.dumps(out))
"""


def child(mode: str, workload: str, algorithm: str, steps: int, clients: int = 10, n: int = 20, env=None) -> dict:
    code = CHILD.format(args=(mode, workload, algorithm, steps, clients), n=n)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, **(env or {})}, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    wall = time.perf_counter() - t
    line = next((l for l in p.stdout.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"child {mode} {workload} {algorithm} failed: {p.stderr[-2000:]}")
    return {**json.loads(line[7:]), "wall_s": wall}


def process_ab(sides: dict, workload, algorithm, steps, rounds=2, n=20) -> dict:
    """Alternating child processes per side (backend, FEDFLAT_MALLOC): steady client-round CPU ms."""
    cpu = {k: [] for k in sides}
    for _ in range(rounds):  # alternate the sides, so load that comes and goes hits both
        for k, (mode, malloc) in sides.items():
            r = child(mode, workload, algorithm, steps, n=n, env={"FEDFLAT_MALLOC": malloc})
            cpu[k].append(r["client_cpu_ms"])
    return {k: sum(v) / rounds for k, v in cpu.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", nargs="+", default=["mlp2", "convnet", "lenet5"], choices=sorted(REAL))
    ap.add_argument("--algorithms", nargs="+", default=["fedavg", "fedsam", "fedsynsam"])
    ap.add_argument("--steps", type=int, default=10, help="local steps K per client (FedSynSAM: 10)")
    ap.add_argument("--chunks", type=int, default=4, help="client rounds per side in the steps part")
    ap.add_argument("--fast", default="auto", choices=["auto", "compile"], help="the backend timed against eager")
    ap.add_argument("--parts", nargs="+", default=["steps", "today", "fixed"], choices=["steps", "today", "allocator", "fixed"])
    a = ap.parse_args(argv)
    print(f"real workloads, Q4 uplink, K={a.steps}; {machine()}")
    for w in a.workloads:
        for alg in a.algorithms:
            if "steps" in a.parts:
                r = steps_part(w, alg, a.steps, a.chunks, fast=a.fast)
                print(f"  steps      {w:8s} {alg:9s} eager {r['eager_ms']:8.1f} ms/client  {a.fast} ({r['auto_path']}) "
                      f"{r['auto_ms']:8.1f} ms/client  speed-up {r['speedup']:.2f}x (CPU time {r['speedup_cpu']:.2f}x)  "
                      f"warm-up {r['warmup_s']:.1f}s", flush=True)
            if "allocator" in a.parts:
                r = process_ab({"default": ("eager", "default"), "tuned": ("eager", "tuned")}, w, alg, a.steps)
                print(f"  allocator  {w:8s} {alg:9s} eager, glibc default {r['default']:8.1f} ms/client  tuned "
                      f"{r['tuned']:8.1f} ms/client (CPU time)  speed-up {r['default'] / r['tuned']:.2f}x", flush=True)
            if "today" in a.parts:
                r = process_ab({"today": ("eager", "default"), "new": ("auto", "tuned")}, w, alg, a.steps)
                print(f"  today      {w:8s} {alg:9s} eager + glibc default {r['today']:8.1f} ms/client  auto + tuned "
                      f"{r['new']:8.1f} ms/client (CPU time, steady)  speed-up {r['today'] / r['new']:.2f}x", flush=True)
        if "fixed" in a.parts:
            for mode in ("eager", "auto"):
                r = child(mode, w, "fedsam", a.steps, n=0)
                print(f"  fixed      {w:8s} fedsam    {mode} ({r['path']}) start to end of first client "
                      f"{r['wall_s']:.1f}s: imports {r['import_s']:.1f}s, data {r['data_s']:.1f}s, build "
                      f"{r['build_s']:.1f}s, first client {r['first_client_s']:.1f}s; peak RSS {r['maxrss_mb']:.0f} MB",
                      flush=True)


if __name__ == "__main__":
    main()
