"""Speed of the GPU path (bench/gpu_check.py): client-rounds per second at the papers' model sizes with random
weights and random uint8 images, on CUDA with the round's clients vmapped (training.vmap_clients,
training/fl/together.py) and one at a time (the engine's loop), against one CPU core; peak GPU memory per client.

A measurement (`measure`) on a Simulation of S clients of 500 images each, all sampled every round:
  warm-up   one round of 1 local step (kernels chosen, memory allocated): not timed
  probe     one round of 2 steps, timed: an over-estimate of a step (it carries the round's fixed cost)
  timed     rounds of K steps, K the workload's (the paper's) or fewer where K would not fit in the
            piece's share (on the CPU: in CPU_TIMED_S); torch.cuda.synchronize before and after each; the
            fastest of at most two rounds is kept
The round time at the workload's K is extrapolated linearly from fewer steps (marked `extrapolated`).
A round is what run_round does: the clients' local steps, their uplinks, the server update (no evaluation).
The CPU side runs one client (S = 1) with one intra-op thread (one Snakemake job per core, as fedflat runs
on CPUs), `backend: eager` on both sides (what `auto` picks on CUDA, and on the CPU for runs this short).
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import NamedTuple, Optional

import torch

from bench.common import iid_partition, synthetic
from bench.gpu_check_budget import OverBudget, Share, device_timer, hard_stop
from bench.gpu_check_sims import build_sim, failure, with_steps

MIB = 2**20


class Workload(NamedTuple):
    model: str
    kwargs: dict
    shape: tuple
    batch: int
    steps: int  # the paper's K: a client round's local steps
    what: str


WORKLOADS = {
    "mlp2": Workload("mlp2", {}, (1, 28, 28), 128, 10, "FMNIST MLP 784-200-200-10 (FedSynSAM Sec. VI-A: B 128, K 10)"),
    "lenet5": Workload("lenet5", {}, (3, 32, 32), 50, 50, "LeNet-5, CIFAR-sized (FedNSAM Sec. 5.1: B 50, E 5 of 500 = K 50)"),
    "cnn_fedavg": Workload("cnn_fedavg", {}, (3, 32, 32), 50, 50, "FedAvg CNN, CIFAR-sized (FedSOL Sec. 4.1: B 50, E 5 = K 50)"),
    "resnet18gn": Workload("resnet18", {"norm": "gn", "stem": "cifar"}, (3, 32, 32), 50, 50,
                           "ResNet-18-GN, CIFAR stem (FL-Simulator's setting: B 50, E 5 = K 50)"),
}
QUICK = {"batch": 8, "steps": 2, "per_client": 16}  # the CPU test: every model built and stepped, nothing timed seriously
ALGORITHMS = {"fedavg": {}, "fedsam": {"rho": 0.05}}
PER_CLIENT = 500  # CIFAR-10 over 100 clients
CLIENTS, MANY = 10, 50  # 10 % of 100 clients (the published anchors); 50 for how vmapping scales
# A CPU step's time is steady (a compute-bound eager step): this many timed seconds are enough, and leave the
# budget to the GPU (ResNet-18-GN at B 50 took ~4 s a step on the loaded 2-core box)
CPU_TIMED_S = 12.0


class Item(NamedTuple):
    workload: str
    algorithm: str
    device: str  # "cpu" or "cuda"
    path: str  # "loop" (one client at a time) or "vmap"
    clients: int


def plan(workloads: list[str], cuda: bool) -> list[tuple[float, list[Item]]]:
    """(share of the speed budget, items) per tier, in priority order: FedAvg everywhere first, then FedSAM,
    then the vmapped 50-client rounds. Unused time rolls over to the next tier."""
    def per_model(algorithm):
        out = []
        for w in workloads:
            out.append(Item(w, algorithm, "cpu", "loop", 1))
            if cuda:
                out += [Item(w, algorithm, "cuda", "loop", CLIENTS), Item(w, algorithm, "cuda", "vmap", CLIENTS)]
        return out

    tiers = [(0.5, per_model("fedavg")), (0.3, per_model("fedsam"))]
    if cuda:
        tiers.append((0.2, [Item(w, "fedavg", "cuda", "vmap", MANY) for w in workloads]))
    return tiers


def measure(sim, clients: int, k_target: int, share: Share, max_reps: int = 2) -> dict:
    dev = sim.device
    cuda = dev.type == "cuda"
    t = 1
    sim.run_round(t)  # warm-up at 1 step (with_steps before the call), excluded from every figure
    t += 1
    k0 = min(2, k_target)
    with device_timer(dev) as probe:
        with_steps(sim, k0).run_round(t)
    t += 1
    per_step = probe.seconds / k0
    room = 0.8 * share.left() if cuda else min(0.8 * share.left(), CPU_TIMED_S)
    k = max(1, min(k_target, int(room / per_step)))
    reps = max_reps if max_reps * k * per_step < room else 1
    with_steps(sim, k)
    times, peak = [], None
    for _ in range(reps):
        if cuda:
            torch.cuda.reset_peak_memory_stats(dev)
            start_bytes = torch.cuda.memory_allocated(dev)
        with device_timer(dev) as timed:
            sim.run_round(t)
        t += 1
        times.append(timed.seconds)
        if cuda:
            peak = (torch.cuda.max_memory_allocated(dev) - start_bytes) / MIB
    round_s = min(times) * k_target / k  # at the workload's K
    out = {"status": "ok", "steps": k, "steps_target": k_target, "extrapolated": k < k_target, "reps": reps,
           "probe_s": round(probe.seconds, 4), "round_s": round_s, "client_rounds_per_s": clients / round_s,
           "client_steps_per_s": clients * k / min(times), "local_path": sim.path}
    if peak is not None:
        out.update(peak_round_mib=round(peak, 1), peak_per_client_mib=round(peak / clients, 1))
    return out


def run_item(item: Item, quick: bool, share: Share) -> dict:
    wl = WORKLOADS[item.workload]
    batch, k_target, per_client = ((QUICK["batch"], QUICK["steps"], QUICK["per_client"]) if quick
                                   else (wl.batch, wl.steps, PER_CLIENT))
    data = synthetic(wl.shape, n_train=item.clients * per_client, n_test=16, seed=0)
    training = {"participation": 1.0, "rounds": 1000, "local_steps": 1, "batch_size": batch, "lr": 0.01,
                "weight_decay": 1e-3, "vmap_clients": item.path == "vmap", "eval_every": 1000}
    threads = torch.get_num_threads()
    if item.device == "cpu":
        torch.set_num_threads(1)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sim = build_sim(data, iid_partition(len(data.train_y), item.clients), wl.model, item.algorithm,
                            ALGORITHMS[item.algorithm], training, item.device, Path(tmp), wl.kwargs)
            if item.path == "vmap" and sim.path != "together":
                return {"status": "not covered", "reason": f"vmap_clients fell back to {sim.path}"}
            return measure(sim, item.clients, k_target, share, max_reps=1 if quick else 2)
    finally:
        torch.set_num_threads(threads)
        if item.device == "cuda":
            torch.cuda.empty_cache()


def run_speed(share: Share, quick: bool, cuda_skip: Optional[str], workloads: list[str]) -> dict:
    rows = []
    tiers = plan(workloads, cuda_skip is None)
    total = share.left()
    carry = 0.0
    for frac, items in tiers:
        tier_end = min(time.perf_counter() + frac * total + carry, share.deadline)
        for i, item in enumerate(items):
            row = dict(item._asdict())
            cap = (tier_end - time.perf_counter()) / (len(items) - i)
            piece = Share(min(time.perf_counter() + cap, share.deadline), cap)
            row["share_s"] = round(cap, 1)
            t0 = time.perf_counter()
            if piece.left() < 1.0:
                row.update(status="stopped", reason="no time left in its share of the budget")
            else:
                try:
                    with hard_stop(piece):
                        row.update(run_item(item, quick, piece))
                except OverBudget as exc:
                    row.update(status="stopped", reason=str(exc))
                except Exception as exc:
                    row.update(failure(exc))
            row["seconds"] = round(time.perf_counter() - t0, 2)
            rows.append(row)
            print("  " + describe(row), flush=True)
        carry = max(0.0, tier_end - time.perf_counter())
    if cuda_skip:
        rows += [{"workload": w, "device": "cuda", "status": "skipped", "reason": cuda_skip} for w in workloads]
    table = ratios(rows)
    for r in table:
        print(f"  {r['workload']:10s} {r['algorithm']:6s} client-rounds/s: CPU core {_g(r['cpu_core'])}, CUDA one at a "
              f"time {_g(r['cuda_loop'])}, vmapped {_g(r['cuda_vmap'])}; one at a time ÷ CPU {_g(r['loop_over_cpu'])}, "
              f"vmapped ÷ CPU {_g(r['vmap_over_cpu'])}, vmapped ÷ one at a time {_g(r['vmap_over_loop'])}, "
              f"x50 ÷ one at a time {_g(r['vmap50_over_loop'])}", flush=True)
    crashed = [r for r in rows if r.get("status") == "error"]  # a crash of the GPU path is a finding, not a figure
    return {"rows": rows, "ratios": table, "workloads": {w: WORKLOADS[w]._asdict() for w in workloads},
            "quick": quick, "status": "failed" if crashed else "ok", "errors": len(crashed)}


def _g(x) -> str:
    return "–" if x is None else f"{x:.3g}"


def describe(row: dict) -> str:
    head = f"{row['workload']:10s} {row['algorithm']:6s} {row['device']:4s} {row['path']:4s} x{row['clients']:<3d}"
    if row.get("status") != "ok":
        return f"{head} {row.get('status')}: {row.get('reason', '')} ({row['seconds']} s)"
    mem = f", peak {row['peak_per_client_mib']} MiB/client" if "peak_per_client_mib" in row else ""
    ext = f" (K {row['steps']} of {row['steps_target']}, extrapolated)" if row["extrapolated"] else ""
    return (f"{head} {row['client_rounds_per_s']:.3f} client-rounds/s, {row['round_s']:.3f} s/round{ext}{mem} "
            f"({row['seconds']} s)")


def ratios(rows: list[dict]) -> list[dict]:
    """Per workload and algorithm: client-rounds/s of the CUDA paths over one CPU core, vmapped over one at a
    time; and the seconds of a round of 10 clients at the workload's K (the published anchors' unit)."""
    ok = {(r["workload"], r["algorithm"], r["device"], r["path"], r["clients"]): r for r in rows if r.get("status") == "ok"}
    out = []
    for w, a in dict.fromkeys((r["workload"], r["algorithm"]) for r in rows if "algorithm" in r):
        cpu, loop, vmap = (ok.get((w, a, d, p, c)) for d, p, c in
                           (("cpu", "loop", 1), ("cuda", "loop", CLIENTS), ("cuda", "vmap", CLIENTS)))
        many = ok.get((w, a, "cuda", "vmap", MANY))
        rate = lambda r: r["client_rounds_per_s"] if r else None
        div = lambda x, y: x / y if x and y else None
        out.append({"workload": w, "algorithm": a, "cpu_core": rate(cpu), "cuda_loop": rate(loop), "cuda_vmap": rate(vmap),
                    "cuda_vmap_50": rate(many),
                    "loop_over_cpu": div(rate(loop), rate(cpu)), "vmap_over_cpu": div(rate(vmap), rate(cpu)),
                    "vmap_over_loop": div(rate(vmap), rate(loop)), "vmap50_over_loop": div(rate(many), rate(loop)),
                    "s_per_round_10": {k: div(CLIENTS, rate(r)) for k, r in (("cpu_core", cpu), ("cuda_loop", loop),
                                                                              ("cuda_vmap", vmap))},
                    "peak_mib_per_client": {k: r.get("peak_per_client_mib") for k, r in
                                            (("cuda_loop", loop), ("cuda_vmap", vmap), ("cuda_vmap_50", many)) if r}})
    return out
