"""Shared machinery of the uplink compressors: validated parameters, the segments a norm or a
top-k is taken over (whole vector, per tensor, fixed buckets), error feedback, seeded draws.

The engine hands every uplink vector of a client to `compress(vec, cid, key, state)`; `state` is the
client's persistent compressor memory (kept and checkpointed by the engine). Error feedback keeps the
residual e ← (v + e) − Q(v + e) there, per uplink key, and is off by default (FedSynSAM Sec. III-A:
the paper uses none).
"""
from __future__ import annotations

import math
import zlib
from typing import ClassVar, Optional

import numpy as np
import torch

from ..algorithms.parts import Param
from ...core.errors import ConfigError
from .interface import BYTES_PER_FLOAT, Compressor

_RNG_TAG = 0xC0DE
COMMON_PARAMS: dict[str, Param] = {
    "error_feedback": Param(False, "add the previous round's compression residual before compressing"),
    "scope": Param("global", "where norms / top-k are taken: the whole vector or each tensor",
                   choices=("global", "per_tensor")),
    # FedSynSAM's "2x" methods send a second vector (a control-variate or dual increment) that Sec. VI-A does
    # not say how it compressed: the literal reading compresses it like the model update ("compress"); the
    # candidates are "raw" (sent as 32-bit floats, counted as such) and "error_feedback" (compressed, its
    # residual carried to the next round, whatever `error_feedback` says of the model update).
    "other_vectors": Param("compress", "how uplink vectors other than the model update are sent",
                           choices=("compress", "raw", "error_feedback")),
}


class UplinkCompressor(Compressor):
    """Base of the lossy compressors. Subclasses implement `_compress(x, segments, gen)`."""

    kind: ClassVar[str] = ""
    params_spec: ClassVar[dict[str, Param]] = {}
    int_params: ClassVar[tuple[str, ...]] = ()
    needs_rng: ClassVar[bool] = False

    def __init__(self, **params):
        spec = {**self.params_spec, **COMMON_PARAMS}
        unknown = sorted(set(params) - set(spec))
        if unknown:
            raise ConfigError(f"uplink.{unknown[0]}: unknown key for kind {self.kind!r}; allowed: kind, "
                              + ", ".join(sorted(spec)))
        resolved = {}
        for k, p in spec.items():
            v = p.check(f"uplink.{k}", params.get(k, p.default))
            if k in self.int_params and (isinstance(v, bool) or not float(v).is_integer()):
                raise ConfigError(f"uplink.{k}: must be an integer, got {params.get(k)!r}")
            resolved[k] = int(v) if k in self.int_params else v
        super().__init__(**resolved)
        for k, v in resolved.items():
            setattr(self, k, v)
        self.seed = 0
        self.slices: Optional[list[tuple[int, int]]] = None
        self._check()

    def _check(self) -> None:  # cross-parameter checks of subclasses
        ...

    # ------------------------------------------------------------------ wiring
    def bind(self, sim) -> None:
        """Called once by the engine: the run seed (for the rounding draws) and tensor boundaries."""
        self.seed = int(sim.spec.seed)
        self.set_layout(sim.fm.slices)

    def set_layout(self, slices) -> None:
        self.slices = [(int(a), int(b)) for a, b in slices]

    def segments(self, d: int) -> list[tuple[int, int]]:
        if self.scope == "global":
            return [(0, d)]
        if self.slices is None:
            raise ConfigError("uplink.scope: per_tensor needs the model's tensor boundaries (run it through the engine)")
        if not self.slices or self.slices[-1][1] != d:
            raise ValueError(f"uplink: per_tensor compression of a vector of length {d}, but the model has "
                             f"{self.slices[-1][1] if self.slices else 0} parameters")
        return self.slices

    def _generator(self, device, cid: int, key: str, state: dict) -> torch.Generator:
        """Draws depend on (run seed, client, uplink key, how often this client sent this key): a
        round's result does not depend on the order clients run in, and a resumed run repeats them."""
        calls = state.setdefault("calls", {})
        n = calls.get(key, 0)
        calls[key] = n + 1
        s = int(np.random.default_rng([self.seed, _RNG_TAG, cid, zlib.crc32(key.encode()), n]).integers(0, 2**62))
        g = torch.Generator(device=device)
        g.manual_seed(s)
        return g

    # ------------------------------------------------------------------ the hook
    def compress(self, vec: torch.Tensor, cid: int, key: str, state: dict) -> tuple[torch.Tensor, int]:
        other = key != "delta"  # the engine sends the model update as "delta", a part's extra vectors by name
        if other and self.other_vectors == "raw":
            return vec, vec.numel() * BYTES_PER_FLOAT
        feedback = self.error_feedback or (other and self.other_vectors == "error_feedback")
        x = vec
        ef_key = f"ef/{key}"
        if feedback and ef_key in state:
            x = vec + state[ef_key]
        gen = self._generator(vec.device, cid, key, state) if self.needs_rng else None
        q, nbytes = self._compress(x, self.segments(x.numel()), gen)
        if feedback:
            state[ef_key] = (x - q).detach().clone()
        return q, int(nbytes)

    def _compress(self, x: torch.Tensor, segments, gen) -> tuple[torch.Tensor, int]:
        raise NotImplementedError


def bits_for(n_symbols: int) -> int:
    """Bits of a fixed-width code for n distinct symbols."""
    return max(1, math.ceil(math.log2(n_symbols))) if n_symbols > 1 else 0


FLOAT_BITS = 8 * BYTES_PER_FLOAT
