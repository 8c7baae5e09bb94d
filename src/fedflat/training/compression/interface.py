"""The uplink compressor interface and its registry: the identity compressor, registered as "none".

A Compressor transforms every uplink vector (the model update and any extra vectors a part sends) and
reports the bytes that would go on the wire. A run enables one through RunSpec.uplink, e.g.
uplink: {kind: quant, bits: 4}. The registry lives here, below the engine (fl) that applies it, so that the
compressors register without importing the engine; the composition root (fedflat.plugins) imports them.
"""
from __future__ import annotations

from typing import Any

import torch

from ...core.registry import Registry

BYTES_PER_FLOAT = 4


class Compressor:
    """Identity: sends float32 vectors as they are."""

    def __init__(self, **params: Any):
        self.params = params

    def compress(self, vec: torch.Tensor, cid: int, key: str, state: dict) -> tuple[torch.Tensor, int]:
        """Return (the vector the server receives, bytes sent). `state` is this client's persistent
        compressor memory (error feedback), kept by the engine."""
        return vec, vec.numel() * BYTES_PER_FLOAT


COMPRESSORS: Registry[type[Compressor]] = Registry("compressor")
COMPRESSORS.add("none", Compressor)
