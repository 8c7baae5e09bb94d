"""Target 5, memory: peak RSS of a 100-client ResNet-18-GN FedSMOO run, in-memory vs disk-backed client store.

FedSMOO keeps two vectors per client (the perturbation dual μ_i and the FedDyn dual h_i), each the
size of the model: 100 clients x ResNet-18-GN (11.2 M parameters) x 2 states is 8.9 GB of client
state. The engine's `training.client_state` picks where it lives: `memory` (a dict of tensors) or
`disk` (one file per client, loaded only while that client trains; training/fl/client_store.py).

What is measured, each store in a fresh process (ru_maxrss is a per-process high-water mark):
1. build the Simulation (CIFAR-shaped synthetic uint8 data in memory, ResNet-18-GN, FedSMOO);
2. fill the store with every client's state, through the store's own `put`, as it stands once every
   client has been sampled (which at 10% participation takes ~45 rounds; the number of states is
   what costs memory, not the steps that made them);
3. run `--rounds` real rounds (participation 0.1: 10 clients per round, 1 local step of batch 2)
   through `Simulation.run`, whose clients load their state from the store and write it back.
Peak RSS is read from getrusage (= /proc/self/status VmHWM) after each phase.

If the in-memory store would not fit in this machine's available memory, it is measured with fewer
clients and its peak extrapolated linearly in the number of clients (printed as such).

    python -m bench.bench_memory            # 100 clients, 1 round (a few minutes; ~9 GB in /tmp)
    python -m bench.bench_memory --quick    # 20 clients: smoke
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GIB = 2**30
GOAL_GIB = 4.0
RESNET18_GN_PARAMS = 11_173_962  # 10 classes, CIFAR stem: the size of one client-state vector


def peak_rss_bytes() -> int:
    """The process's peak resident set size (Linux: ru_maxrss is in KiB; VmHWM in /proc agrees)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024


def mem_available_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _streaming_flatness(results) -> float:
    """FedNSAM Def. 1 as the engine computes it, without stacking the sampled clients' deltas."""
    mean = sum(r.delta for r in results) / len(results)
    return float(sum(float(((r.delta - mean) ** 2).sum()) for r in results) / len(results))


def child(store: str, clients: int, rounds: int, participation: float, n_train: int, out_dir: str,
          streaming_flatness: bool = False) -> dict:
    """One measured run in this process; returns peak RSS after each phase (bytes) and the state on disk."""
    import torch

    from bench.common import make_sim, synthetic
    from fedflat.training.fl.engine import Simulation

    if streaming_flatness:  # diagnostic only: what the engine would save (engine.py is not changed)
        Simulation.flatness_distance = staticmethod(_streaming_flatness)

    t0 = time.perf_counter()
    out = {"store": store, "clients": clients, "rounds": rounds, "rss": {"start": peak_rss_bytes()}}
    data = synthetic((3, 32, 32), n_train=n_train, n_test=256)
    sim = make_sim("resnet18gn", "fedsmoo", data, out_dir, clients=clients, steps=1, batch_size=2,
                   participation=participation, rounds=rounds, eval_every=rounds, eval_subset=256,
                   eval_batch_size=256, client_state=store)
    names = sim.algo.client_state_names
    out["states"] = list(names)
    out["params"] = sim.num_params
    out["rss"]["built"] = peak_rss_bytes()
    theta = sim.srv.theta
    for cid in range(clients):  # every client's state as after its first round (a non-zero vector per name)
        sim.store.put(cid, {n: torch.full_like(theta, 1e-3 * (cid + 1)) for n in names}, 0)
    out["rss"]["filled"] = peak_rss_bytes()
    s = sim.run()
    out["rss"]["run"] = peak_rss_bytes()
    out["status"] = s["status"]
    out["state_on_disk"] = sum(p.stat().st_size for p in Path(out_dir, "client_state").glob("*.pt"))
    out["seconds"] = time.perf_counter() - t0
    return out


def measure(store: str, clients: int, rounds: int, participation: float, n_train: int, workdir: str,
            streaming_flatness: bool = False) -> dict:
    d = tempfile.mkdtemp(prefix=f"mem-{store}-", dir=workdir)
    try:
        cmd = [sys.executable, "-m", "bench.bench_memory", "--child", store, "--clients", str(clients),
               "--rounds", str(rounds), "--participation", str(participation), "--n-train", str(n_train),
               "--out", d] + (["--streaming-flatness"] if streaming_flatness else [])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                                        os.environ.get("PYTHONPATH")]))}
        res = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if res.returncode != 0:
            raise RuntimeError(f"{store} store run failed (rc {res.returncode}): {res.stderr.strip()[-800:]}")
        return json.loads(res.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main(argv=None) -> list[tuple[str, str]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--participation", type=float, default=0.1)
    ap.add_argument("--n-train", type=int, default=50_000, help="CIFAR-10-sized training split held in memory")
    ap.add_argument("--stores", nargs="+", default=["memory", "disk"], choices=["memory", "disk"])
    ap.add_argument("--workdir", default=None, help="where the disk store writes (default: the system temp dir)")
    ap.add_argument("--quick", action="store_true", help="smoke size: 20 clients, 10,000 training images")
    ap.add_argument("--streaming-flatness", action="store_true",
                    help="diagnostic: compute the flatness distance without stacking the round's deltas")
    ap.add_argument("--child", choices=["memory", "disk"], help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child, a.clients, a.rounds, a.participation, a.n_train, a.out,
                               a.streaming_flatness)), flush=True)
        return []
    if a.quick:
        a.clients, a.n_train = min(a.clients, 20), min(a.n_train, 10_000)
    from bench.common import machine

    workdir = a.workdir or tempfile.gettempdir()
    per_round = max(1, round(a.participation * a.clients))
    print(f"peak RSS, ResNet-18-GN FedSMOO, {a.clients} clients, {per_round} per round x {a.rounds} round(s), "
          f"1 step of batch 2, CIFAR-shaped data ({a.n_train} train images, uint8), goal < {GOAL_GIB:g} GiB with "
          f"the disk store{'; streaming flatness distance (diagnostic)' if a.streaming_flatness else ''}; "
          f"{machine()}", flush=True)
    got = {}
    for store in a.stores:
        clients, note = a.clients, ""
        if store == "memory":  # the in-memory store holds clients x states x model: check it fits here
            need = a.clients * 2 * RESNET18_GN_PARAMS * 4 + 3 * GIB
            avail = mem_available_bytes()
            if avail is not None and need > 0.8 * avail:
                clients = max(per_round, int(a.clients * (0.8 * avail - 3 * GIB) / (need - 3 * GIB)))
                note = f" (measured with {clients} clients: {need / GIB:.1f} GiB would not fit in {avail / GIB:.1f} GiB available)"
        r = measure(store, clients, a.rounds, a.participation if clients == a.clients else per_round / clients,
                    a.n_train, workdir, a.streaming_flatness)
        rss = {k: v / GIB for k, v in r["rss"].items()}
        if clients != a.clients:  # linear in the number of clients: the store holds one entry per client
            per_client = (rss["filled"] - rss["built"]) / clients
            rss = {**rss, "filled": rss["built"] + per_client * a.clients,
                   "run": rss["run"] + per_client * (a.clients - clients)}
            note += ", extrapolated"
        got[store] = rss["run"]
        print(f"  {store:6s} store: peak RSS {rss['run']:6.2f} GiB  (after build {rss['built']:.2f}, after every "
              f"client's state {rss['filled']:.2f}; states per client {len(r['states'])} x {r['params'] / 1e6:.1f} M "
              f"floats; {r['status']}; state on disk {r['state_on_disk'] / GIB:.2f} GiB; {r['seconds']:.0f} s){note}",
              flush=True)
    figures = []
    if "disk" in got:
        ok = "meets" if got["disk"] < GOAL_GIB else "MISSES"
        ratio = f", memory store {got['memory']:.2f} GiB, disk/memory {got['disk'] / got['memory']:.2f}" if "memory" in got else ""
        line = f"disk store {got['disk']:.2f} GiB ({ok} goal < {GOAL_GIB:g} GiB{ratio}; {a.clients} clients)"
        print(f"  peak RSS with the disk store: {line}", flush=True)
        figures.append(("5", line))
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
