"""Extension points of the round loop, so analysis and compression plug in without editing it.

RoundHook: per-round measurements (global sharpness, perturbation cosine, divergence, ...).
Registered by name in ROUND_HOOKS; a run enables them through RunSpec.analysis, e.g.
    analysis: {sharpness: {every: 5, rho: 0.05}}
Each hook returns extra metric columns for the round (written to metrics.csv). A hook that
overrides `local_gradient` sees (and may replace) every local step's gradient; the run's local
steps then take the eager path (training/fl/fused.py gradient_hook_blocker).

Compressor (defined in training/compression/interface.py, below the engine, and re-exported here for the engine):
transforms every uplink vector and reports the bytes that would go on the wire.

Hooks register from their own modules, which the composition root (fedflat.plugins) imports.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ..compression.interface import BYTES_PER_FLOAT, COMPRESSORS, Compressor  # noqa: F401  (the engine's names)
from ...core.registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from ..algorithms import ClientContext, RoundResult
    from .engine import Simulation


class RoundHook:
    def __init__(self, **params: Any):
        self.params = params

    def on_start(self, sim: "Simulation") -> None: ...

    def on_round_end(self, sim: "Simulation", t: int, rnd: "RoundResult", row: dict) -> dict:
        """Called after the server update (sim.srv holds the new global model). Return extra columns."""
        return {}

    def local_gradient(self, sim: "Simulation", ctx: "ClientContext", w: torch.Tensor, batch,
                       loss: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        """Called at every local step with the perturbation part's (loss, gradient) at the iterate w,
        before clipping and the corrections; returns the gradient the step goes on with. Not called
        unless overridden (reads_gradient)."""
        return g


def reads_gradient(hook: RoundHook) -> bool:
    """Whether the hook overrides RoundHook.local_gradient (so the local steps must run eagerly)."""
    return type(hook).local_gradient is not RoundHook.local_gradient


ROUND_HOOKS: Registry[type[RoundHook]] = Registry("analysis hook")
