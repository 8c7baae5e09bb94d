"""The inputs of one local step, as one typed structure shared by the three paths that run it:
the engine's eager loop (Simulation.local_train), the fused step (training/fl/fused.py) and the vmapped
clients (training/fl/together.py).

    StepInputs(state, batch, terms)
      state  StepState   what the step updates in place: the iterate, the momentum buffer, the
                         summed loss, FedSMOO's dual and last δ (AscentTerms.dual / .last)
      batch  StepBatch   this step's mini-batch (gathered inside the step when `idx` is given) and
                         the ascent's mixed-in second batch (FedSynSAM's ζ with weight β)
      terms  RoundTerms  constants of the client's round: the learning rate, the shifted form's δ,
                         the corrections as g ↦ a·g + b·w + c, the ascent's fixed term c

NamedTuples are pytrees, so torch.vmap maps over the structure itself: `stack_clients` stacks a
round's per-client inputs and derives the matching in_dims from the same fields (a field is mapped
where the clients' tensors differ, shared where they are one tensor; the state is always per client).
"""
from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

import torch

Tensor = torch.Tensor


class StepState(NamedTuple):
    w: Tensor
    buf: Optional[Tensor]  # heavy-ball momentum (training.local_momentum > 0)
    loss_sum: Tensor  # 0-d: the losses of the client's steps, summed
    dual: Optional[Tensor] = None  # AscentTerms.dual, moved in place after each ascent
    last: Optional[Tensor] = None  # AscentTerms.last, receives each step's δ


class StepBatch(NamedTuple):
    x: Tensor  # the batch, or the whole uint8 training tensor when idx is given
    y: Tensor
    idx: Optional[Tensor] = None  # indices into x, y: gathered and normalised inside the step
    beta: float = 0.0  # weight of the local gradient in the mixed ascent direction
    xs: Optional[Tensor] = None  # the second batch ζ of the mixed ascent (FusedForm.mix), or None
    ys: Optional[Tensor] = None


class RoundTerms(NamedTuple):
    lr: Tensor  # 0-d, so a decaying schedule does not recompile
    shift: Optional[Tensor] = None  # FusedForm.shift
    lin_a: float = 1.0  # the corrections (Correction.fused_linear), composed
    lin_b: float = 0.0
    lin_c: Optional[Tensor] = None
    dir_c: Optional[Tensor] = None  # AscentTerms.c


class StepInputs(NamedTuple):
    state: StepState
    batch: StepBatch
    terms: RoundTerms


def new_state(w: Tensor, momentum: float, dual: Optional[Tensor] = None, last: Optional[Tensor] = None) -> StepState:
    """A client's step state at the start of its round: w, a zero momentum buffer where m > 0, no loss yet."""
    buf = torch.zeros_like(w) if momentum > 0 else None
    return StepState(w, buf, torch.zeros((), device=w.device, dtype=w.dtype), dual, last)


def stack_clients(items: Sequence[tuple]) -> tuple[tuple, tuple]:
    """(stacked inputs, in_dims) of the same NamedTuple type from one per client: per field, None where
    every client has None, the one tensor where all clients share it, a stack along dim 0 where they
    differ (always for StepState: each client's own), a number where all clients agree (a ValueError
    names the field otherwise: a number is a constant of the vmapped graph)."""
    first = items[0]
    values, dims = [], []
    for name in first._fields:
        col = [getattr(it, name) for it in items]
        v0 = col[0]
        if len({c is None for c in col}) > 1:
            raise ValueError(f"{type(first).__name__}.{name}: None for some clients only")
        if isinstance(v0, tuple):  # a nested NamedTuple
            v, d = stack_clients(col)
        elif v0 is None:
            v, d = None, None
        elif isinstance(v0, Tensor):
            shared = not isinstance(first, StepState) and all(c is v0 for c in col)
            v, d = (v0, None) if shared else (torch.stack(col), 0)
        else:
            if any(c != v0 for c in col):
                raise ValueError(f"{type(first).__name__}.{name}: differs across clients ({col})")
            v, d = v0, None
        values.append(v)
        dims.append(d)
    return type(first)(*values), type(first)(*dims)


def unstack_into(stacked: StepState, items: Sequence[StepState]) -> None:
    """Copy each client's slice of the stacked state back into its own tensors."""
    for i, own in enumerate(items):
        for mine, all_ in zip(own, stacked):
            if mine is not None:
                mine.copy_(all_[i])
