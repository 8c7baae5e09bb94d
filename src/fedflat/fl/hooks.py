"""Extension points of the round loop, so analysis and compression plug in without editing it.

RoundHook: per-round measurements (global sharpness, perturbation cosine, divergence, ...).
Registered by name in ROUND_HOOKS; a run enables them through RunSpec.analysis, e.g.
    analysis: {sharpness: {every: 5, rho: 0.05}}
Each hook returns extra metric columns for the round (written to metrics.csv).

Compressor (defined in compression/interface.py, below the engine, and re-exported here for the engine):
transforms every uplink vector and reports the bytes that would go on the wire.

Hooks register from their own modules, which the composition root (fedflat.plugins) imports.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ..compression.interface import BYTES_PER_FLOAT, COMPRESSORS, Compressor  # noqa: F401  (the engine's names)
from ..registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from ..algorithms import RoundResult
    from .engine import Simulation


class RoundHook:
    def __init__(self, **params: Any):
        self.params = params

    def on_start(self, sim: "Simulation") -> None: ...

    def on_round_end(self, sim: "Simulation", t: int, rnd: "RoundResult", row: dict) -> dict:
        """Called after the server update (sim.srv holds the new global model). Return extra columns."""
        return {}


ROUND_HOOKS: Registry[type[RoundHook]] = Registry("analysis hook")
