"""Algorithms as compositions of perturbation, correction and server parts."""
from .parts import (ClientContext, ClientResult, Correction, Param, Part, Perturbation, RoundResult, ServerOpt,
                    ServerState)
from .corrections import CORRECTIONS
from .perturbations import PERTURBATIONS
from .presets import PRESETS, Algorithm, Preset, build_algorithm
from .servers import SERVERS

__all__ = [
    "Algorithm", "ClientContext", "ClientResult", "Correction", "CORRECTIONS", "Param", "Part",
    "Perturbation", "PERTURBATIONS", "Preset", "PRESETS", "RoundResult", "ServerOpt", "ServerState",
    "SERVERS", "build_algorithm",
]
