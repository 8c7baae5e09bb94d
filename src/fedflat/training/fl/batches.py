"""Seeded per-client mini-batch streams and client sampling.

Every random draw is derived from (seed, round, client) rather than from a shared generator, so
a round's result does not depend on the order clients are processed in (sequential or batched),
and a run resumed from a checkpoint draws exactly what an uninterrupted run draws.
"""
from __future__ import annotations

import numpy as np
import torch

_SAMPLE_TAG = 0x5A3D
_BATCH_TAG = 0xB47C
_TORCH_TAG = 0x70C4


def sample_clients(seed: int, round: int, num_clients: int, k: int) -> list[int]:
    rng = np.random.default_rng([seed, round, _SAMPLE_TAG])
    return sorted(rng.choice(num_clients, size=k, replace=False).tolist())


def torch_generator(seed: int, round: int, cid: int, device="cpu") -> torch.Generator:
    s = int(np.random.default_rng([seed, round, cid, _TORCH_TAG]).integers(0, 2**62))
    g = torch.Generator(device=device)
    g.manual_seed(s)
    return g


class BatchStream:
    """Epoch-wise shuffled mini-batches over one client's indices; reshuffles when exhausted.

    drop_last=True (training.local_steps): only full batches; the n mod B samples left at the end
    of a shuffle wait for the next one. drop_last=False (training.local_epochs): a DataLoader epoch,
    ⌈n/B⌉ batches whose last one holds the leftovers (`partial` is then True). Both draw the same
    shuffles, so the first ⌊n/B⌋ batches agree."""

    def __init__(self, indices: torch.Tensor, batch_size: int, seed: int, round: int, cid: int,
                 drop_last: bool = True):
        self.indices = indices
        self.batch_size = min(batch_size, len(indices))
        self.drop_last = drop_last
        self.rng = np.random.default_rng([seed, round, cid, _BATCH_TAG])
        self._order = None
        self._pos = 0
        self.partial = False  # the last batch returned is an epoch's short leftover batch

    def next(self) -> torch.Tensor:
        n = len(self.indices)
        end = self._pos + self.batch_size
        if self._order is None or (end > n if self.drop_last else self._pos >= n):
            perm = torch.from_numpy(self.rng.permutation(n)).to(self.indices.device)
            self._order = self.indices[perm]
            self._pos = 0
        b = self._order[self._pos : self._pos + self.batch_size]
        self._pos += self.batch_size
        self.partial = len(b) < self.batch_size
        return b
