"""The simulation's local-step runners (the fused step, the vmapped clients), built once per simulation.
Beside fused.py and together.py rather than in either, so that neither imports the other's user."""
from __future__ import annotations

from typing import Optional

from .fused import FusedStep
from .together import ClientsTogether


class LocalPaths:
    """The simulation's local-step runners, built on first use and kept for the simulation's life
    (a new compiled graph per client would recompile)."""

    def __init__(self):
        self._fused: Optional[FusedStep] = None
        self._together = None

    def fused(self, sim) -> FusedStep:
        if self._fused is None:
            self._fused = FusedStep(sim)
        return self._fused

    def together(self, sim):
        if self._together is None:
            self._together = ClientsTogether(sim)
        return self._together
