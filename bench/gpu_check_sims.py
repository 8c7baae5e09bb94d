"""Simulations built in memory for bench/gpu_check.py: a preset, a model and training settings on a
given device, without a study, a partition file or Snakemake; the device question asked once; a failure
recorded as one line and its traceback's tail (the device run is seldom repeated: the JSON must say where)."""
from __future__ import annotations

import traceback
from dataclasses import replace
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from fedflat.training.algorithms import PRESETS
from fedflat.training.data.array_dataset import ArrayDataset
from fedflat.training.data.partition import Partition
from fedflat.training.fl.engine import Simulation
from fedflat.core.spec import RunSpec, check_training

NO_CUDA = "no CUDA device"
REPO = Path(__file__).resolve().parents[1]


def cuda_reason(cpu_only: bool) -> Optional[str]:
    """Why the CUDA parts are skipped, or None when a CUDA device is there to use."""
    if cpu_only:
        return "--cpu-only"
    if not torch.cuda.is_available():
        return NO_CUDA
    return None


def blocks(clients: list[np.ndarray], labels: np.ndarray, classes: int) -> Partition:
    hist = np.stack([np.bincount(labels[c], minlength=classes) for c in clients])
    return Partition(clients, hist, {"spec": "manual", "seed": 0})


def build_sim(data: ArrayDataset, part: Partition, model: str, preset: str, hp: dict, training: dict,
              device: str, out_dir: Path, model_kwargs: Optional[dict] = None) -> Simulation:
    """A Simulation of `preset` at `hp` (its defaults filled in) on `device`; `training` overrides the defaults
    (checkpoints off, eager gradients unless asked otherwise)."""
    tr = check_training({"checkpoint_every": 0, "backend": "eager", "num_clients": part.num_clients, **training})
    spec = RunSpec(data.name, "manual", model, preset, 0, PRESETS.get(preset).resolve(dict(hp)),
                   dict(model_kwargs or {}), tr)
    return Simulation(spec, data, part, out_dir, device=device, progress=False)


def with_steps(sim: Simulation, steps: int) -> Simulation:
    """The simulation with `training.local_steps` changed for the rounds that follow (a client reads its K
    from the spec each round; nothing is cached per K)."""
    sim.spec = replace(sim.spec, training={**sim.spec.training, "local_steps": int(steps)})
    return sim


def trajectory(sim: Simulation, rounds: int) -> list[torch.Tensor]:
    """θ_0 .. θ_rounds on the CPU, one run_round per round (no evaluation)."""
    out = [sim.srv.theta.detach().cpu().clone()]
    for t in range(1, rounds + 1):
        sim.run_round(t)
        out.append(sim.srv.theta.detach().cpu().clone())
    return out


def failure(exc: BaseException) -> dict:
    """{"status": "error", "reason": "Type: message (at the innermost frame of ours[, innermost frame])",
    "trace": the last lines of the traceback}."""
    tb = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in tb if Path(f.filename).resolve().is_relative_to(REPO)]
    where = lambda f: f"{Path(f.filename).name}:{f.lineno}"
    at = [where(f) for f in ours[-1:] + tb[-1:]]
    msg = str(exc).splitlines()[0] if str(exc) else ""
    reason = f"{type(exc).__name__}: {msg}" + (f" (at {', innermost '.join(dict.fromkeys(at))})" if at else "")
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).splitlines()[-24:]
    return {"status": "error", "reason": reason, "trace": trace}
