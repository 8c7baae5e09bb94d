"""Analysis speed (issue 5): one Hessian-vector product (PyHessian operator, dataloader mode) against
one training step on the same data (goal <= 3x), and the cost of a 21x21 loss landscape in
training-step equivalents (grid points evaluated in vmap chunks vs one at a time).

    python -m bench analysis                 # mlp and lenet5 on the CPU
    python -m bench.bench_analysis resnet18gn --device cuda --batch 256
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

from bench.common import WORKLOADS, interleave, machine, synthetic
from fedflat.pipeline.analysis.directions import directions
from fedflat.pipeline.analysis.hessian import HessianOperator
from fedflat.pipeline.analysis.landscape import evaluate_points
from fedflat.training.fl.flat import FlatModel
from fedflat.training.models import build_model


def bench(workload: str, device: str, batch: int, chunks: int, grid: int) -> None:
    name, kw, shape, _ = WORKLOADS[workload]
    data = synthetic(shape, n_train=batch, n_test=10).to(device)
    x, y = data.normalise(data.train_x), data.train_y
    torch.manual_seed(0)
    fm = FlatModel(build_model(name, shape, data.num_classes, **kw), device)
    theta = fm.flat.clone()
    op = HessianOperator(fm.module, [(x, y)])
    v = torch.randn(op.dim, device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def step():  # the engine's local step: loss+gradient on flat params, SGD update
        fm.grad_at(fm.flat, x, y)
        fm.flat.sub_(fm.grad, alpha=1e-3)
        sync()

    def hvp():
        op(v)
        sync()

    step(); hvp()  # warm-up
    t = interleave({"step": step, "hvp": hvp}, chunks)
    s, h = t["step"]["min"], t["hvp"]["min"]
    print(f"{workload:>11} B={batch} {device}: train step {s*1e3:8.2f} ms | HVP {h*1e3:8.2f} ms | "
          f"HVP/step = {h/s:.2f}x (goal <= 3x)")
    fm.flat.copy_(theta)
    dirs = directions(fm, theta, 0, 2)
    axis = np.linspace(-1, 1, grid)
    X, Y = np.meshgrid(axis, axis)
    coords = np.stack([X.ravel(), Y.ravel()], 1)
    for chunk in (1, 16):
        sec = interleave({"l": lambda: (evaluate_points(fm, theta, dirs, coords, [(x, y)], chunk), sync())}, 1)["l"]["min"]
        print(f"{'':>11} {grid}x{grid} landscape, chunk {chunk:2d}: {sec:7.2f} s = {sec/s:7.1f} training steps "
              f"({sec/s/grid**2:.2f} per grid point)")


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workloads", nargs="*", default=["mlp", "lenet5"])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--chunks", type=int, default=10)
    ap.add_argument("--grid", type=int, default=21)
    a = ap.parse_args(argv)
    print(machine())
    for w in a.workloads:
        bench(w, a.device, a.batch, a.chunks, a.grid)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
