"""Running statistics (BatchNorm) move once per local step, whatever the number of passes.

A SAM-type step runs two or more forward passes on the same mini-batch (the ascent pass at w, the
update pass at w + δ; FedSynSAM also one on the synthetic set). In train mode every pass would
update running_mean / running_var / num_batches_tracked, so a SAM step would move them twice as
far as a plain step (and FedSynSAM's synthetic pass would mix synthetic statistics in). The standard
is once per step, by the FIRST pass: the `sam` package's example (davda54/sam, example/train.py:
`enable_running_stats` before the first forward-backward, `disable_running_stats` (momentum 0)
before the second) and FedSOL's official code (ExpSAM: running statistics on for the proximal-KL
pass at w, off for the update pass; github.com/Lee-Gihun/FedSOL, algorithms/fedsol_adaptive/ClientTrainer.py).

`StepStats` does this for every part at once: the engine opens it at each local step; the first
forward of the step (through grad_at, or a part's own forward that calls `claim`, as FedSOL's
KL pass at w) updates the statistics; every later pass runs with them restored afterwards (exact:
the buffers are copied back, num_batches_tracked included). A step with a single pass (plain SGD,
FedLESAM, FedNSAM, N-perturbation) is unchanged. Models without tracked statistics get no gate.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Optional

import torch
import torch.nn as nn
from torch.nn.modules.batchnorm import _NormBase


def tracked_buffers(module: nn.Module) -> list[torch.Tensor]:
    """The buffers a train-mode forward updates: running statistics of normalisation layers."""
    return [b for m in module.modules() if isinstance(m, _NormBase) and m.track_running_stats
            for b in m.buffers() if b is not None]


@contextmanager
def frozen(buffers: list[torch.Tensor]):
    """Whatever forwards run inside leave `buffers` as they were."""
    saved = [b.clone() for b in buffers]
    try:
        yield
    finally:
        with torch.no_grad():
            for b, s in zip(buffers, saved):
                b.copy_(s)


class StepStats:
    """Once-per-step gate over a module's running statistics (module docstring)."""

    def __init__(self, module: nn.Module):
        self.buffers = tracked_buffers(module)
        self._open = False

    def new_step(self) -> None:
        self._open = True

    def claim(self) -> bool:
        """True for the step's first pass (it updates the statistics); False for every later one."""
        first, self._open = self._open, False
        return first

    def wrap(self, grad_at):
        def gated(point, batch):
            if self.claim():
                return grad_at(point, batch)
            with frozen(self.buffers):
                return grad_at(point, batch)
        return gated


def step_stats(module: nn.Module) -> Optional[StepStats]:
    """A gate when the module tracks running statistics, else None (nothing to gate)."""
    gate = StepStats(module)
    return gate if gate.buffers else None
