"""A round's sampled clients trained together (`training.vmap_clients: true`): their iterates stacked
as one (S x d) tensor and each local step run once for all of them, the step function of the fused
path (fl/fused.py make_local_step) under torch.func.vmap.

A GPU option, off by default: on the 2-core CPU, vmap over 10 clients lost (docs/performance.md:
LeNet-5 58 → 216 ms per client-step, grouped convolutions; a CIFAR-shaped MLP 3.3 → 4.4 ms). On a
GPU one batched kernel per layer replaces S small ones. Batches, augmentation and synthetic subsets
are drawn per client from the same per-(seed, round, client) streams as the one-at-a-time loop, and
the parts' client_begin/client_end run per client as there, so a round's result equals it up to
float rounding (tests/fl/test_clients_together.py). Runs the step eagerly (vmap inside
torch.compile is not used); `vmap_clients` is not in the run id. Where the run is not covered (see
`together_blocker`) the clients run one at a time, as without the option.
"""
from __future__ import annotations

from typing import Optional

import torch

from .batches import torch_generator
from .fast import compile_blocker
from .fused import fused_linear, make_local_step, step_blocker


def together_blocker(sim) -> Optional[str]:
    """Why the sampled clients cannot run as one vmapped step, or None."""
    if not sim.spec.training.get("vmap_clients"):
        return "training.vmap_clients is off"
    if sim.local_epochs():
        return "training.local_epochs: clients take different numbers of steps"
    if min(len(c) for c in sim.client_idx) < sim.spec.batch_size:
        return "a client holds fewer samples than a batch (batches of different sizes)"
    return compile_blocker(sim.fm, bool(sim._loss_parts)) or step_blocker(sim.algo)


def clients_together(sim) -> Optional["ClientsTogether"]:
    """The simulation's ClientsTogether when the option is on and covers the run (built once), else None."""
    if together_blocker(sim) is not None:
        return None
    if "_together" not in sim.__dict__:
        sim.__dict__["_together"] = ClientsTogether(sim)
    return sim.__dict__["_together"]


def _stacked(items: list, first_dim: bool = True):
    """(tensor, in_dim) for vmap: one shared tensor (None), else the per-client tensors stacked (0)."""
    if items[0] is None:
        return None, None
    if all(t is items[0] for t in items):
        return items[0], None
    return torch.stack(items), 0


class ClientsTogether:
    def __init__(self, sim):
        self.sim = sim
        step = make_local_step(sim)

        def in_place(*args):  # vmap wants a tensor out: the step's work is its in-place updates
            step(*args)
            return torch.zeros(())

        self._step = in_place
        self.shifted = sim.algo.perturbation.fused_form() == "shifted"
        self.ascent = sim.algo.perturbation.fused_form() == "ascent"

    def run(self, sampled: list[int], t: int, start: torch.Tensor, down: dict, lr: float) -> list:
        sim, spec, data, pert = self.sim, self.sim.spec, self.sim.data, self.sim.algo.perturbation
        ctxs = [sim.begin_client(cid, t, start, down, lr) for cid in sampled]
        streams = [sim.client_stream(cid, t) for cid in sampled]
        gens = [torch_generator(spec.seed, t, cid, sim.device) for cid in sampled]
        w = start.expand(len(sampled), -1).clone()
        buf = torch.zeros_like(w) if spec.local_momentum > 0 else None
        loss_sum = torch.zeros(len(sampled), device=w.device, dtype=w.dtype)
        lr_t = torch.tensor(lr, device=w.device, dtype=w.dtype)
        shift, shift_dim = _stacked([pert.fused_shift(c) if self.shifted else None for c in ctxs])
        lins = [fused_linear(sim.algo.corrections, c) for c in ctxs]
        lin_c, c_dim = _stacked([lin[2] for lin in lins])
        terms = [pert.fused_ascent_terms(c) if self.ascent else (None, None, None) for c in ctxs]
        dir_c, dir_dim = _stacked([t[0] for t in terms])
        # the per-client dual and last δ as stacked copies (written back after the loop)
        dual, dual_dim = (None, None) if terms[0][1] is None else (torch.stack([t[1] for t in terms]), 0)
        last, last_dim = (None, None) if terms[0][2] is None else (torch.stack([t[2] for t in terms]), 0)
        for _ in range(ctxs[0].local_steps):
            idx = [s.next() for s in streams]
            mixes = [pert.fused_mix(c) for c in ctxs]  # drawn after the batch, as in the one-client loop
            beta = mixes[0][0] if mixes[0] is not None else 0.0
            xs, xs_dim = _stacked([m[1][0] if m is not None else None for m in mixes])
            ys, _ = _stacked([m[1][1] if m is not None else None for m in mixes])
            if data.augment is None:  # gathered and normalised inside the step, per client
                x, y, idx_b, x_dim = data.train_x, data.train_y, torch.stack(idx), None
            else:  # augmentation draws from each client's generator, eagerly
                batches = [data.train_batch(i, g) for i, g in zip(idx, gens)]
                x, y, idx_b, x_dim = torch.stack([b[0] for b in batches]), torch.stack([b[1] for b in batches]), None, 0
            in_dims = (0, None if buf is None else 0, 0, None, x_dim, x_dim, None if idx_b is None else 0, None,
                       xs_dim, xs_dim, shift_dim, None, None, c_dim, dir_dim, dual_dim, last_dim)
            torch.vmap(self._step, in_dims=in_dims, out_dims=None)(w, buf, loss_sum, lr_t, x, y, idx_b, beta, xs, ys,
                                                                    shift, lins[0][0], lins[0][1], lin_c,
                                                                    dir_c, dual, last)
        for i, t in enumerate(terms):  # the per-client duals and last δ from their stacked copies
            for mine, stacked in ((t[1], dual), (t[2], last)):
                if mine is not None:
                    mine.copy_(stacked[i])
        return [sim.finish_client(ctx, w[i].clone(), loss_sum[i]) for i, ctx in enumerate(ctxs)]
