"""The exact rho = 0 reductions on the device (bench/gpu_check.py): every pair in
fedflat.training.algorithms.reductions.RHO0 (the SAM-type preset with its ascent off follows its base preset's
trajectory) as tests/training/algorithms/test_rho0_reductions.py proves it on the CPU, here run on CUDA one client at
a time and with the clients vmapped: float64, the same trajectory to EXACT, and at rho = 0.1 a final model
at least DIFFERS away, so the equality tests something. Data: a float64 slice of scikit-learn's digits
(3 clients of 12 images), a one-hidden-layer MLP of width 8, 4 rounds of 2 full-batch steps."""
from __future__ import annotations

import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import numpy as np
import torch

from fedflat.training.algorithms.reductions import RHO0, rho0_base
from fedflat.training.data import load_dataset
from fedflat.training.data.array_dataset import ArrayDataset
from fedflat.training.fl.together import together_blocker
from bench.gpu_check_budget import OverBudget, Share, hard_stop
from bench.gpu_check_sims import blocks, build_sim, failure, trajectory

EXACT, DIFFERS = 1e-12, 1e-6
ROUNDS, CLIENTS, PER_CLIENT = 4, 3, 12
SHARED = {"alpha": 0.3, "cm_alpha": 0.3, "lam": 0.5}  # the shared keys away from every preset's default
EXTRA = {"fedsynsam": {"syn_round": 1, "syn_steps": 1, "syn_iters": 2, "syn_ipc": 1}}  # distils within the rounds
QUICK = ("fedsam", "fedgamma", "fedspeed", "fedsynsam")  # one per base: FedAvg, SCAFFOLD, FedDyn; the synthetic set
TRAINING = {"participation": 1.0, "rounds": ROUNDS, "local_steps": 2, "batch_size": PER_CLIENT // 2, "lr": 0.2,
            "lr_decay": 1.0, "weight_decay": 0.0, "clip_grad_norm": 0.0, "eval_every": 1}
MODEL_KW = {"hidden": 8, "depth": 1}


@contextmanager
def float64() -> Iterator[None]:
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def digits64() -> tuple[ArrayDataset, object]:
    """CLIENTS x PER_CLIENT normalised digits in float64, client i the i-th contiguous block."""
    d = load_dataset("digits")
    n = CLIENTS * PER_CLIENT
    x = d.normalise(d.train_x[:n]).double()
    y = d.train_y[:n]
    data = ArrayDataset("digits64", x, y, x[:PER_CLIENT], y[:PER_CLIENT], d.num_classes)
    clients = [np.arange(i * PER_CLIENT, (i + 1) * PER_CLIENT) for i in range(CLIENTS)]
    return data, blocks(clients, y.numpy(), d.num_classes)


def verdict(a: list[torch.Tensor], b: list[torch.Tensor], c: list[torch.Tensor]) -> dict:
    """a: the preset at rho = 0, b: its base, c: the preset at rho > 0 (trajectories θ_0..θ_T)."""
    gap = max(float((x - y).abs().max()) for x, y in zip(a, b))
    moved = float((c[-1] - b[-1]).abs().max())
    if not gap <= EXACT:
        reason = f"rho = 0 leaves the base's trajectory by {gap:.2e} > {EXACT}"
    elif not moved > DIFFERS:
        reason = f"rho > 0 stays within {DIFFERS} of the base: the equality tests nothing"
    else:
        reason = ""
    return {"ok": not reason, "gap": gap, "moved": moved, "reason": reason}


def pair(name: str, device: str, vmap: bool, data, part) -> dict:
    hp = {"rho": 0.0, **{k: SHARED[k] for k in RHO0[name].shared}, **RHO0[name].when}
    base, base_hp = rho0_base(name, hp)
    hp.update(EXTRA.get(name, {}))
    tr = {**TRAINING, "vmap_clients": vmap}
    with float64(), tempfile.TemporaryDirectory() as tmp:
        sims = [build_sim(data, part, "mlp", p, h, tr, device, Path(tmp) / k, MODEL_KW)
                for k, p, h in (("a", name, hp), ("b", base, base_hp), ("c", name, {**hp, "rho": 0.1}))]
        if vmap and sims[0].path != "together":
            return {"status": "not covered", "reason": together_blocker(sims[0])}
        a, b, c = (trajectory(s, ROUNDS) for s in sims)
    return {"status": "ok", "base": base, "path": sims[0].path, "base_path": sims[1].path, **verdict(a, b, c)}


def run_reductions(share: Share, quick: bool, cuda_skip: Optional[str]) -> dict:
    names = QUICK if quick else tuple(sorted(RHO0))
    # on a GPU box the pairs run on CUDA (the CPU's are the test suite's); without one, on the CPU
    device = "cpu" if cuda_skip else "cuda"
    data, part = digits64()
    rows = []
    for name in names:
        for vmap in (False, True):
            row = {"preset": name, "base": RHO0[name].base, "device": device, "vmapped": vmap}
            if share.spent():
                row.update(status="stopped", reason="section past its share of the time budget")
            else:
                try:
                    with hard_stop(share):
                        row.update(pair(name, device, vmap, data, part))
                except OverBudget as exc:
                    row.update(status="stopped", reason=str(exc))
                except Exception as exc:
                    row.update(failure(exc), ok=False)
            rows.append(row)
    failed = [r for r in rows if r.get("ok") is False]
    for r in failed:
        print(f"  FAILED {r['preset']} -> {r['base']} ({'vmapped' if r['vmapped'] else 'one at a time'}): {r['reason']}")
    passed = sum(r.get("ok") is True for r in rows)
    print(f"  {passed} of {len(rows)} reductions exact on {device}, {len(failed)} failed, "
          f"{sum(r['status'] in ('not covered', 'stopped') for r in rows)} not covered or stopped", flush=True)
    out = {"device": device, "exact": EXACT, "differs": DIFFERS, "rows": rows, "passed": passed, "failed": len(failed),
           "status": "failed" if failed else "ok"}
    if cuda_skip:
        out["cuda"] = {"status": "skipped", "reason": cuda_skip}
    return out
