"""Shared pieces of the speed benchmarks: synthetic CIFAR-shaped data, a Simulation built in memory,
the bare eager reference step, and interleaved timing.

Timing on a shared machine: A and B are run alternately in chunks and each side keeps the sum
(and the minimum chunk), so load that comes and goes hits both sides alike; ratios are taken from
times measured in the same process, never across runs. Each side also keeps its process CPU time
(time.process_time): with one intra-op thread that is the work the step itself did, which other
jobs' load (the 2-core box ran at load 5-9 while helpers shared it) inflates far less than wall time.
"""
from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from fedflat.training.algorithms import PRESETS
from fedflat.training.data.array_dataset import ArrayDataset
from fedflat.training.data.partition import Partition
from fedflat.training.fl.engine import Simulation
from fedflat.training.models import build_model
from fedflat.core.spec import RunSpec, check_training

# One intra-op thread by default: on a shared 2-core machine two OpenMP threads wait on each other
# whenever one is descheduled (steps became 100x slower under load); both sides use the same count.
# Snakemake runs one single-threaded job per core, which is also how fedflat runs in production.
torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "1")))

CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)
# (registry name, model kwargs, input shape, batch size): the workloads of issue 8
WORKLOADS = {
    "lenet5": ("lenet5", {}, (3, 32, 32), 50),
    "resnet18gn": ("resnet18", {"norm": "gn", "stem": "cifar"}, (3, 32, 32), 50),
    "mlp": ("mlp", {}, (1, 8, 8), 32),  # the default study's model and data shape (digits)
}


def synthetic(shape=(3, 32, 32), n_train=5000, n_test=1000, classes=10, seed=0) -> ArrayDataset:
    """uint8 images with fixed random labels (speed does not depend on the pixel values)."""
    g = torch.Generator().manual_seed(seed)
    mk = lambda n: torch.randint(0, 256, (n, *shape), generator=g, dtype=torch.uint8)
    c = shape[0]
    mean = torch.tensor(CIFAR_MEAN[:c]) if c == 3 else torch.full((c,), 0.5)
    std = torch.tensor(CIFAR_STD[:c]) if c == 3 else torch.full((c,), 0.25)
    return ArrayDataset("synthetic", mk(n_train), torch.randint(0, classes, (n_train,), generator=g),
                        mk(n_test), torch.randint(0, classes, (n_test,), generator=g), classes, mean, std)


def iid_partition(n: int, clients: int, seed: int = 0) -> Partition:
    perm = np.random.default_rng(seed).permutation(n)
    parts = [np.sort(p) for p in np.array_split(perm, clients)]
    return Partition(parts, np.zeros((clients, 1), dtype=np.int64), {"spec": "iid", "seed": seed})


def make_sim(workload: str, algorithm: str, data: ArrayDataset, out_dir, clients=10, steps=50,
             backend="eager", lr=0.01, weight_decay=1e-3, uplink=None, **training) -> Simulation:
    """A Simulation whose local step is exactly the bare reference's math (no clipping, no momentum)."""
    name, kw, _, batch = WORKLOADS[workload]
    tr = check_training({"num_clients": clients, "participation": 1.0, "rounds": 1000, "local_steps": steps,
                         "batch_size": batch, "lr": lr, "weight_decay": weight_decay, "clip_grad_norm": 0.0,
                         "local_momentum": 0.0, "checkpoint_every": 0, "backend": backend, **training})
    hp = PRESETS.get(algorithm).resolve({"rho": 0.05} if "sam" in algorithm else {})
    spec = RunSpec(data.name, "iid", name, algorithm, 0, hp, dict(kw), tr, {}, dict(uplink or {}))
    return Simulation(spec, data, iid_partition(len(data.train_y), clients), out_dir, progress=False)


class BareEager:
    """What a user writes by hand: a module, torch.optim.SGD, pre-normalised float data in memory,
    random mini-batches by indexing. `sam=True`: the classic two-pass SAM step (ascend ρ g/‖g‖,
    gradient there, restore, SGD step)."""

    def __init__(self, workload: str, data: ArrayDataset, lr=0.01, weight_decay=1e-3, sam=False, rho=0.05, seed=0):
        name, kw, shape, self.batch = WORKLOADS[workload]
        torch.manual_seed(seed)
        self.model = build_model(name, shape, data.num_classes, **kw)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr, weight_decay=weight_decay)
        self.x = data.normalise(data.train_x).contiguous()
        self.y = data.train_y
        self.sam, self.rho = sam, rho
        self.gen = torch.Generator().manual_seed(seed)

    def step(self) -> None:
        idx = torch.randint(0, len(self.y), (self.batch,), generator=self.gen)
        x, y = self.x[idx], self.y[idx]
        params = list(self.model.parameters())
        self.opt.zero_grad()
        F.cross_entropy(self.model(x), y).backward()
        if self.sam:
            with torch.no_grad():
                grads = [p.grad for p in params]
                scale = self.rho / (torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])) + 1e-12)
                eps = [g * scale for g in grads]
                torch._foreach_add_(params, eps)
            self.opt.zero_grad()
            F.cross_entropy(self.model(x), y).backward()
            with torch.no_grad():
                torch._foreach_sub_(params, eps)
        self.opt.step()

    def steps(self, k: int) -> None:
        for _ in range(k):
            self.step()


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def timed_cpu(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one call."""
    t, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t, time.process_time() - c


def interleave(fns: dict[str, Callable[[], object]], chunks: int) -> dict[str, dict]:
    """Run each fn `chunks` times, alternating; per fn: total wall seconds, min chunk, all chunks,
    and total process CPU seconds ("cpu")."""
    out = {k: {"total": 0.0, "min": float("inf"), "chunks": [], "cpu": 0.0} for k in fns}
    for _ in range(chunks):
        for k, fn in fns.items():
            dt, dc = timed_cpu(fn)
            out[k]["total"] += dt
            out[k]["cpu"] += dc
            out[k]["min"] = min(out[k]["min"], dt)
            out[k]["chunks"].append(dt)
    return out


def machine() -> str:
    import os
    import platform

    return (f"{platform.machine()} {os.cpu_count()} cores, torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads, load {os.getloadavg()[0]:.1f}")
