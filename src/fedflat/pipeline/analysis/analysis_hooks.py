"""Per-round analysis hooks, registered into fl.round_hooks.ROUND_HOOKS (enabled through a study's
`analysis: {hooks: {name: {params}}}`). Each declares its parameters with defaults and checks
them when the study is parsed (study.py calls `check`), so a bad value fails before any job.

Every hook measures on rounds t with t == 1, t % every == 0, or t == the last round, and leaves
the other rounds' columns empty. Measurements work on copies and reload what they change, so the
training trajectory is the same with or without them.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import torch

from ...core.errors import ConfigError
from ...training.fl.evaluate import evaluate
from ...training.fl.round_hooks import ROUND_HOOKS, RoundHook
from .cosine import captured_perturbation, cosine, global_gradient
from .divergence import proximal_kl, weight_divergence
from .loaded_run import check_number, check_positive_int, fixed_batches, index_batches
from .local_discrepancy import local_trajectories, max_pairwise, measured_clients
from .sharpness import global_sharpness


def _int(minimum: int) -> Callable:
    return lambda k, v: check_positive_int(k, v, minimum)


def _num(low: float, low_open: bool = False) -> Callable:
    return lambda k, v: check_number(k, v, low, low_open)


def _choice(*allowed: str) -> Callable:
    def f(k, v):
        if v not in allowed:
            raise ConfigError(f"{k}: {v!r} not allowed; allowed: {', '.join(allowed)}")
        return v
    return f


class AnalysisHook(RoundHook):
    PARAMS: dict[str, tuple[Any, Callable]] = {"every": (5, _int(1))}
    name = "hook"

    def __init__(self, **params: Any):
        super().__init__(**self.check(params, f"analysis.hooks.{self.name}"))
        for k, v in self.params.items():
            setattr(self, k, v)

    @classmethod
    def check(cls, params: dict, key: str) -> dict:
        unknown = sorted(set(params) - set(cls.PARAMS))
        if unknown:
            raise ConfigError(f"{key}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(cls.PARAMS))}")
        return {k: (check(f"{key}.{k}", params[k]) if k in params else default)
                for k, (default, check) in cls.PARAMS.items()}

    def due(self, sim, t: int) -> bool:
        return t == 1 or t % self.every == 0 or t == sim.spec.rounds


def register(name: str):
    def deco(cls):
        cls.name = name
        ROUND_HOOKS.add(name, cls)
        return cls
    return deco


@register("sharpness")
class SharpnessHook(AnalysisHook):
    """Global sharpness F(θ+ρ∇F/‖∇F‖) − F(θ) of the new global model on a fixed training subset."""

    PARAMS = {"every": (5, _int(1)), "rho": (0.05, _num(0.0, True)), "samples": (4096, _int(0)),
              "seed": (0, _int(0)), "batch_size": (1024, _int(1))}

    def on_start(self, sim) -> None:
        self.batches = fixed_batches(sim.data, "train", self.samples, self.seed, self.batch_size)

    def on_round_end(self, sim, t, rnd, row) -> dict:
        if not self.due(sim, t):
            return {}
        sim.fm.load(sim.srv.theta, sim.srv.buffers)
        return global_sharpness(sim.fm, sim.srv.theta, self.batches, self.rho)


@register("perturbation_cosine")
class PerturbationCosineHook(AnalysisHook):
    """Cosine between each sampled client's perturbation at the next round's start point and the
    true global gradient there (see pipeline/analysis/cosine.py)."""

    PARAMS = {"every": (5, _int(1)), "clients": (0, _int(0)), "target": ("clients", _choice("clients", "train")),
              "batch": ("minibatch", _choice("minibatch", "full")), "batch_size": (1024, _int(1))}

    def on_round_end(self, sim, t, rnd, row) -> dict:
        if not self.due(sim, t):
            return {}
        cids = rnd.sampled[: self.clients] if self.clients else rnd.sampled
        cos, cos_sup, norms = [], [], []
        g = None
        for cid in cids:
            w, d = captured_perturbation(sim, cid, t + 1, full_batch=self.batch == "full")
            if g is None:
                g = global_gradient(sim, w, self.target, self.batch_size)
            cos.append(cosine(d, g))
            sup = d != 0
            cos_sup.append(cosine(d[sup], g[sup]) if bool(sup.any()) else math.nan)
            norms.append(float(d.norm()))
        return {"perturbation_cosine": float(np.mean(cos)),
                "perturbation_cosine_std": float(np.std(cos)) if len(cos) > 1 else 0.0,
                "perturbation_cosine_support": float(np.mean(cos_sup)),
                "perturbation_norm": float(np.mean(norms)), "global_grad_norm": float(g.norm())}


@register("local_discrepancy")
class LocalDiscrepancyHook(AnalysisHook):
    """FedSAGD Fig. 1: max_{i≠j} ‖x^i_{t,k} − x^j_{t,k}‖ vs local step k from a common start point,
    for the next round's clients (pipeline/analysis/local_discrepancy.py). Columns local_disc_k1..k{K}."""

    PARAMS = {"every": (50, _int(1)), "min_clients": (2, _int(2))}

    def on_round_end(self, sim, t, rnd, row) -> dict:
        if not self.due(sim, t):
            return {}
        d = max_pairwise(local_trajectories(sim, t + 1, measured_clients(sim, t + 1, self.min_clients)))
        return {f"local_disc_k{k}": v for k, v in enumerate(d) if k > 0}


@register("divergence")
class DivergenceHook(AnalysisHook):
    """Weight divergence global-local and across the round's local models (pipeline/analysis/divergence.py)."""

    PARAMS = {"every": (1, _int(1))}

    def on_round_end(self, sim, t, rnd, row) -> dict:
        if not self.due(sim, t):
            return {}
        ends = torch.stack([c.end for c in rnd.clients])
        starts = torch.stack([c.end - c.delta for c in rnd.clients])
        return weight_divergence(ends, starts, sim.srv.theta)


@register("proximal_loss")
class ProximalLossHook(AnalysisHook):
    """Mean KL(global ‖ local) with temperature over the round's local models, on each client's data."""

    PARAMS = {"every": (5, _int(1)), "temperature": (3.0, _num(0.0, True)), "samples_per_client": (0, _int(0)),
              "batch_size": (1024, _int(1))}

    def on_round_end(self, sim, t, rnd, row) -> dict:
        if not self.due(sim, t):
            return {}
        vals = []
        for c in rnd.clients:
            idx = sim.client_idx[c.cid]
            if self.samples_per_client:
                idx = idx[: self.samples_per_client]
            start = c.end - c.delta
            vals.append(proximal_kl(sim.fm, c.end, c.buffers, start, sim.srv.buffers,
                                    index_batches(sim.data, idx, self.batch_size), self.temperature))
        return {"proximal_loss": float(np.mean(vals)), "proximal_loss_std": float(np.std(vals))}


@register("class_accuracy")
class ClassAccuracyHook(AnalysisHook):
    """Per-class test accuracy of the new global model (FedSOL Fig. 7b): columns class_acc_<k>."""

    PARAMS = {"every": (5, _int(1)), "batch_size": (1024, _int(1))}

    def on_round_end(self, sim, t, rnd, row) -> dict:
        if not self.due(sim, t):
            return {}
        ev = evaluate(sim.fm, sim.srv.theta, sim.srv.buffers, sim.data, "test", self.batch_size)
        return {f"class_acc_{k}": a for k, a in enumerate(ev["class_acc"])}


@register("local_accuracy")
class LocalAccuracyHook(AnalysisHook):
    """Global vs local accuracy (FedSOL Fig. 7a): each local model of the round and the new global
    model on the same (global) test set; local_acc_std is the spread across clients."""

    PARAMS = {"every": (5, _int(1)), "limit": (0, _int(0)), "batch_size": (1024, _int(1))}

    def on_round_end(self, sim, t, rnd, row) -> dict:
        if not self.due(sim, t):
            return {}
        lim = self.limit or None
        accs = [evaluate(sim.fm, c.end, c.buffers, sim.data, "test", self.batch_size, lim)["acc"] for c in rnd.clients]
        glob = evaluate(sim.fm, sim.srv.theta, sim.srv.buffers, sim.data, "test", self.batch_size, lim)["acc"]
        return {"local_acc_mean": float(np.mean(accs)), "local_acc_std": float(np.std(accs)),
                "local_acc_min": float(np.min(accs)), "global_acc": glob}


# FedSOL Table 9 (personalize) and Figs. 3b, 5b (sol_cosine, lambda_layers); imported last: they subclass AnalysisHook
