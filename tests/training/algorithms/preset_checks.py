"""Shared by the generic per-preset checks (test_every_preset.py): a tiny digits run of any registered
preset, a hook that records what the engine sends and computes, and metrics rows without wall times."""
from __future__ import annotations

import math

import torch

from fedflat.training.algorithms import PRESETS
from fedflat.training.fl.engine import Simulation
from fedflat.training.fl.round_hooks import RoundHook
from fedflat.core.spec import RunSpec, check_training

# 4 clients of the embedded digits data, 2 sampled per round, 2 local steps of 16 samples: every part
# acts (corrections and server states from round 2 on), a whole preset runs in well under a second
TINY = {"num_clients": 4, "participation": 0.5, "rounds": 3, "local_steps": 2, "batch_size": 16, "lr": 0.1,
        "eval_every": 1, "checkpoint_every": 1}
# long enough to learn: 6 clients, 3 per round, 5 rounds of 6 steps of 32 samples, the MLP with 32 hidden
# units (FedAvg reaches about 0.63 on digits here; MoFedSAM's α = 0.1 local weight ~0.37)
LEARN = {"num_clients": 6, "participation": 0.5, "rounds": 5, "local_steps": 6, "batch_size": 32, "lr": 0.15,
         "eval_every": 5, "checkpoint_every": 0}
TIMES = ("wall_time", "eval_time")


def tiny_sim(name: str, data, partition, out_dir, settings: dict = TINY, hidden: int = 16, **training) -> Simulation:
    """Preset `name` with its defaults on the digits MLP, its training as the study resolves it."""
    preset = PRESETS.get(name)
    tr = preset.training_for(check_training({**settings, **training}))
    spec = RunSpec("digits", "dir0.5", "mlp", name, 0, preset.resolve({}), {"hidden": hidden, "depth": 1}, tr)
    return Simulation(spec, data, partition, out_dir, progress=False)


def without_times(rows: list[dict]) -> list[dict]:
    """Metrics rows without the wall-clock columns (the only ones a resumed run may change); NaN as None."""
    def clean(v):
        return None if isinstance(v, float) and math.isnan(v) else v
    return [{k: clean(v) for k, v in r.items() if k not in TIMES} for r in rows]


class Recorder(RoundHook):
    """Counts the samples of the training-mode forward passes with gradients through the model (a
    pass over half a batch is half a gradient evaluation, as Part.grad_evals counts), the floats each
    client received (θ and the extra downlink vectors) and the round's result. Reading the gradient
    keeps the local steps eager, so every pass runs through the module."""

    def __init__(self, module: torch.nn.Module):
        super().__init__()
        self.reset()
        module.register_forward_hook(self._count)

    def reset(self) -> None:
        self.samples, self.down, self.round = 0, {}, None

    def _count(self, module, args, out):
        if module.training and torch.is_grad_enabled():
            self.samples += len(args[0])

    def local_gradient(self, sim, ctx, w, batch, loss, g):
        self.down.setdefault(ctx.cid, ctx.theta.numel() + sum(v.numel() for v in ctx.down.values()))
        return g

    def on_round_end(self, sim, t, rnd, row) -> dict:
        self.round = rnd
        return {}


def recorded_last_round(name: str, data, partition, out_dir) -> tuple[Simulation, Recorder, dict]:
    """(simulation, Recorder of its last round only, that round's metrics row) of a TINY run."""
    sim = tiny_sim(name, data, partition, out_dir)
    rec = Recorder(sim.fm.module)
    with sim.evaluating_under(sim.algo, hooks=(rec,)):
        for t in range(1, TINY["rounds"]):
            sim.run_round(t)
        rec.reset()
        row = sim.run_round(TINY["rounds"])
    return sim, rec, row
