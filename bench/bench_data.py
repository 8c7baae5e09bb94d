"""Data path vs training step, CIFAR-shaped: is indexing + normalising + augmenting a batch cheap
next to one forward+backward? Goal (issue 4): data path < 5% of a training step.

  python -m bench.bench_data [--device cpu|cuda] [--batch 50] [--steps N] [--threads 1]

Prints samples/second of the data path alone (index a uint8 tensor held on the device, normalise,
random crop pad 4 + horizontal flip with a per-client torch.Generator), samples/second of
forward+backward (cross-entropy, gradients on) for LeNet-5 and ResNet-18-GN (CIFAR stem), and the
ratio of the two times.
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from fedflat.training.data.augment import Augmenter, black_fill
from fedflat.training.data.array_dataset import ArrayDataset
from fedflat.training.models import build_model

MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)
N_TRAIN = 10_000


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _timeit(fn, steps: int, dev: torch.device, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    _sync(dev)
    t = time.perf_counter()
    for _ in range(steps):
        fn()
    _sync(dev)
    return (time.perf_counter() - t) / steps


def make_dataset(dev: torch.device) -> ArrayDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (N_TRAIN, 3, 32, 32), dtype=torch.uint8, generator=g)
    y = torch.randint(0, 10, (N_TRAIN,), generator=g)
    ds = ArrayDataset("bench", x, y, x[:100], y[:100], 10, torch.tensor(MEAN), torch.tensor(STD),
                      Augmenter(crop_pad=4, flip_p=0.5, fill=black_fill(MEAN, STD)))
    return ds.to(dev)


def run(device: str, batch: int, steps: dict[str, int]) -> list[dict]:
    dev = torch.device(device)
    ds = make_dataset(dev)
    gen = torch.Generator(device=dev).manual_seed(1)
    client = torch.randperm(N_TRAIN, device=dev)[:500]  # one client's indices, as the engine holds them
    pos = [0]

    def data_step():
        s = pos[0] % (len(client) - batch)
        pos[0] += batch
        return ds.train_batch(client[s:s + batch], gen)

    data_steps = max(steps.values()) * 4
    t_data = _timeit(data_step, data_steps, dev)
    rows = []
    for name, kw in (("lenet5", {}), ("resnet18", {"norm": "gn", "stem": "cifar"})):
        torch.manual_seed(0)
        model = build_model(name, (3, 32, 32), 10, **kw).to(dev)
        x, y = data_step()

        def train_step():
            model.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()

        t_step = _timeit(train_step, steps[name], dev)
        rows.append({"model": name, "device": str(dev), "batch": batch, "data_s": t_data, "step_s": t_step,
                     "data_sps": batch / t_data, "step_sps": batch / t_step, "ratio": t_data / t_step})
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench.bench_data")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--steps", type=int, default=None, help="timed fwd+bwd steps per model")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 = one Snakemake job per core)")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    cuda = a.device.startswith("cuda")
    steps = {"lenet5": a.steps or (200 if cuda else 20), "resnet18": a.steps or (100 if cuda else 3)}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, device {a.device}"
          + (f" ({torch.cuda.get_device_name()})" if cuda else ""))
    print(f"{'model':<10} {'batch':>5} {'data path samples/s':>20} {'fwd+bwd samples/s':>18} {'data/step':>10}")
    for r in run(a.device, a.batch, steps):
        print(f"{r['model']:<10} {r['batch']:>5} {r['data_sps']:>20,.0f} {r['step_sps']:>18,.0f} {r['ratio']:>9.2%}")
    print("goal: data path < 5% of a training step")


if __name__ == "__main__":
    main()
