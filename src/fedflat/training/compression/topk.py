"""Top-k sparsification (FedSynSAM Sec. III-A, after [3]): keep the fraction k of entries with the
largest magnitudes, zero the rest (k = kept fraction: 0.1 and 0.25 in Sec. VI-A).

Kept count per segment: m = max(1, round_half_up(k·n)); `scope: global` (the literal reading) ranks
the whole vector, `scope: per_tensor` ranks each tensor. Ties at the threshold are broken by
torch.topk, so exactly m entries are kept.

Bytes: m float32 values plus their positions, sent as the cheaper of a list of ⌈log₂ n⌉-bit indices
and an n-bit bitmap, per segment.
"""
from __future__ import annotations

import math

import torch

from ..algorithms.parts import Param
from .interface import COMPRESSORS
from .uplink_compressor import FLOAT_BITS, UplinkCompressor, bits_for


def kept_count(k: float, n: int) -> int:
    return max(1, min(n, int(math.floor(k * n + 0.5))))


def index_bits(m: int, n: int) -> int:
    return min(m * bits_for(n), n)


@COMPRESSORS.register("topk")
class TopK(UplinkCompressor):
    kind = "topk"
    params_spec = {"k": Param(0.1, "fraction of entries kept", low=0.0, high=1.0, low_open=True)}

    def _compress(self, x, segments, gen):
        out = torch.zeros_like(x)
        bits = 0
        for s, e in segments:
            seg = x[s:e]
            n = seg.numel()
            if n == 0:
                continue
            m = kept_count(self.k, n)
            idx = torch.topk(seg.abs(), m, sorted=False).indices
            out[s:e][idx] = seg[idx]
            bits += m * FLOAT_BITS + index_bits(m, n)
        return out, math.ceil(bits / 8)
