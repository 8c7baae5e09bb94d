"""A round's sampled clients trained together (`training.vmap_clients: true`): their iterates stacked
as one (S x d) tensor and each local step run once for all of them, the step function of the fused
path (training/fl/fused.py make_local_step) under torch.func.vmap.

A GPU option, off by default: on the 2-core CPU, vmap over 10 clients lost (docs/performance.md:
LeNet-5 58 → 216 ms per client-step, grouped convolutions; a CIFAR-shaped MLP 3.3 → 4.4 ms). On a
GPU one batched kernel per layer replaces S small ones. Batches, augmentation and synthetic subsets
are drawn per client from the same per-(seed, round, client) streams as the one-at-a-time loop, and
the parts' client_begin/client_end run per client as there, so a round's result equals it up to
float rounding (tests/training/fl/test_clients_together.py). Runs the step eagerly (vmap inside
torch.compile is not used); `vmap_clients` is not in the run id. Where the run is not covered (see
`together_blocker`) the clients run one at a time, as without the option.
"""
from __future__ import annotations

from typing import Optional

import torch

from .batches import torch_generator
from .fast import compile_blocker
from .fused import gradient_hook_blocker, make_local_step, round_inputs, step_batch, step_blocker
from .local_step import StepInputs, stack_clients, unstack_into


def together_blocker(sim) -> Optional[str]:
    """Why the sampled clients cannot run as one vmapped step, or None."""
    if not sim.spec.training.get("vmap_clients"):
        return "training.vmap_clients is off"
    if sim.local_epochs():
        return "training.local_epochs: clients take different numbers of steps"
    if min(len(c) for c in sim.client_idx) < sim.spec.batch_size:
        return "a client holds fewer samples than a batch (batches of different sizes)"
    return (compile_blocker(sim.fm, bool(sim._loss_parts)) or step_blocker(sim.algo)
            or gradient_hook_blocker(sim.hooks))


def clients_together(sim) -> Optional["ClientsTogether"]:
    """The simulation's ClientsTogether when the option is on and covers the run, else None."""
    return sim._paths.together(sim) if together_blocker(sim) is None else None


class ClientsTogether:
    def __init__(self, sim):
        self.sim = sim
        step = make_local_step(sim)

        def in_place(inp):  # vmap wants a tensor out: the step's work is its in-place updates
            step(inp)
            return torch.zeros(())

        self._step = in_place
        self.form = sim.algo.perturbation.fused_form()

    def run(self, sampled: list[int], t: int, start: torch.Tensor, down: dict, lr: float) -> list:
        sim, spec, data, form = self.sim, self.sim.spec, self.sim.data, self.form
        ctxs = [sim.begin_client(cid, t, start, down, lr) for cid in sampled]
        streams = [sim.client_stream(cid, t) for cid in sampled]
        gens = [torch_generator(spec.seed, t, cid, sim.device) for cid in sampled]
        lr_t = torch.tensor(lr, device=start.device, dtype=start.dtype)
        own = [round_inputs(form, sim.algo.corrections, c, start.clone(), spec.local_momentum, lr_t) for c in ctxs]
        # every client's state stacked (written back after the loop), the round's constants per client
        # or shared; the vmap dimensions come from the same fields (training/fl/local_step.py)
        state, state_dims = stack_clients([o[0] for o in own])
        terms, terms_dims = stack_clients([o[1] for o in own])
        for _ in range(ctxs[0].local_steps):
            idx = [s.next() for s in streams]
            # per client: its batch (gathered and normalised inside the step, or augmented eagerly from
            # its generator) and the mixed-in second batch, drawn after the batch as in the one-client loop
            batch, batch_dims = stack_clients([step_batch(form, c, data, i, g) for c, i, g in zip(ctxs, idx, gens)])
            torch.vmap(self._step, in_dims=(StepInputs(state_dims, batch_dims, terms_dims),),
                       out_dims=None)(StepInputs(state, batch, terms))
        unstack_into(state, [o[0] for o in own])
        return [sim.finish_client(ctx, o[0].w, o[0].loss_sum) for ctx, o in zip(ctxs, own)]
