"""The whole local step as one compiled graph (training.backend: compile): which parts it covers
(`fused_blocker`), the step as a pure tensor function (`make_local_step`), and the per-client loop
around it (`FusedStep`). tests/training/fl/test_fast_equivalence.py checks it against the engine's loop."""
from __future__ import annotations

from typing import Callable, Optional

import torch

from ..algorithms.parts import AscentTerms, Correction
from ..algorithms.perturbations import SAM_EPS
from .fast import compile_own, install_compiled_inference, make_flat_grad
from .kernels import use_compiled_pools
from .local_step import RoundTerms, StepBatch, StepInputs, StepState, new_state
from .round_hooks import reads_gradient


def _owner(cls: type, name: str) -> Optional[type]:
    return next((c for c in cls.__mro__ if name in vars(c)), None)


def _declared(part, decl: str, uses: tuple[str, ...]) -> bool:
    """The class that declares the fused form (`decl`) also owns, or inherits, every method the eager
    path runs (`uses`): a subclass that changes one of them without declaring the form again is not fused."""
    owner = _owner(type(part), decl)
    return all((o := _owner(type(part), m)) is None or issubclass(owner, o) for m in uses)


_PERT_USES = ("gradient", "direction", "ascent", "after_ascent", "neighbour_mode")


def fused_blocker(sim) -> Optional[str]:
    """Why a client's local step cannot run as one compiled graph (FusedStep), or None.

    The fused step reproduces the engine's loop where the perturbation part declares its `fused_form`
    (training/algorithms/parts.py FusedForm: the plain gradient, FedAvg-type; the gradient at a point shifted by
    a δ fixed for the round, FedLESAM/FedNSAM-type; the SAM ascent, FedSAM, with ASAM's scaling, fixed
    terms (FedTOGA, FedSMOO) or a mixed-in second gradient, FedSynSAM) and every correction its
    `fused_linear` form (g ↦ a·g + b·w + c: FedProx, SCAFFOLD, FedDyn, FedCM, FedSAGD's momentum).
    Compression is not in the way: it acts on the client's final delta, after the loop
    (Simulation.send_up). Any other part, a subclass that changes what the eager path calls, or a
    round hook that reads the local gradient (RoundHook.local_gradient) keeps the per-call path."""
    if sim.backend != "compile":
        return "backend is not compile"
    return step_blocker(sim.algo) or gradient_hook_blocker(getattr(sim, "hooks", ()))


def gradient_hook_blocker(hooks) -> Optional[str]:
    """Why round hooks keep the local step eager (they see every local gradient), or None."""
    readers = [type(h).__name__ for h in hooks if reads_gradient(h)]
    return f"the round hook {', '.join(readers)} reads the local gradient" if readers else None


def step_blocker(algo) -> Optional[str]:
    """Why the algorithm's local step has no tensor-function form (`make_local_step`), or None."""
    pert = algo.perturbation
    if getattr(pert, "np_mode", "off") != "off":
        return "the N-perturbation option (np_mode) is not fused"
    if not _declared(pert, "fused_form", _PERT_USES) or pert.fused_form() is None:
        return f"perturbation {type(pert).__name__} is not fused"
    for c in algo.corrections:
        if not _declared(c, "fused_linear", ("adjust",)) or type(c).fused_linear is Correction.fused_linear:
            return f"correction {type(c).__name__} is not fused"
    return None


def fused_linear(corrections, ctx) -> tuple[float, float, Optional[torch.Tensor]]:
    """The corrections, applied in order, as one g ↦ a·g + b·w + c."""
    a, b, c = 1.0, 0.0, None
    for part in corrections:
        ai, bi, ci = part.fused_linear(ctx)
        a, b = ai * a, ai * b + bi
        c = ci if c is None else (c * ai if ci is None else c * ai + ci)
    return a, b, c


def make_local_step(sim) -> Callable[[StepInputs], None]:
    """One local step of the engine's loop (Simulation.local_train) as a pure tensor function of one
    StepInputs (training/fl/local_step.py) that updates its state (w, the momentum buffer, the summed loss, the
    ascent's dual and last δ) in place; compiled by FusedStep and vmapped over a round's clients by
    training/fl/together.py. The run's settings and the part's FusedForm are constants of the function."""
    spec, data = sim.spec, sim.data
    form = sim.algo.perturbation.fused_form()
    rho = form.rho if form.kind == "ascent" else None
    eta = form.asam_eta  # ASAM's T_w = |w| + η
    clip, wd, mom = float(spec.clip_grad_norm), float(spec.weight_decay), float(spec.local_momentum)
    mean, std = data.mean, data.std
    flat_grad = make_flat_grad(sim.fm)

    def step(inp: StepInputs) -> None:
        (w, buf, loss_sum, dual, last), (x, y, idx, beta, xs, ys), (lr, shift, lin_a, lin_b, lin_c, dir_c) = inp
        if idx is not None:  # ArrayDataset.train_batch without augmentation, inside the graph
            x, y = x[idx], y[idx]
            if x.dtype == torch.uint8:
                x = x.float().div(255.0)
                if mean is not None:
                    shape = (1, -1) + (1,) * (x.dim() - 2)
                    x = (x - mean.view(shape)) / std.view(shape)
        loss, g = flat_grad(w if shift is None else w + shift, x, y)
        if rho is not None:  # AscentPerturbation.gradient with safe_unit / SynSAMPerturbation.ascent
            if xs is not None:
                g = g * beta + flat_grad(w, xs, ys)[1] * (1.0 - beta)
            if dir_c is not None:  # AscentTerms: d = g + c − m
                g = g + dir_c
            if dual is not None:
                g = g - dual
            if eta is None:
                n = g.norm()
                delta = torch.where(n == 0, torch.zeros_like(g), g / (n + SAM_EPS) * rho)
            else:  # ASAMPerturbation.ascent: δ = ρ T (T d)/‖T d‖
                t = w.abs() + eta
                td = t * g
                n = td.norm()
                delta = torch.where(n == 0, torch.zeros_like(g), td * t * (rho / (n + SAM_EPS)))
            if dual is not None:  # FedSMOO's μ_i ← μ_i + ŝ − s
                dual.add_(delta if dir_c is None else delta + dir_c)
            if last is not None:
                last.copy_(delta)
            _, g = flat_grad(w + delta, x, y)
        loss_sum.add_(loss)
        if clip > 0:
            g = g * (clip / (g.norm() + 1e-6)).clamp(max=1.0)
        if lin_a != 1.0:  # the corrections (Correction.fused_linear), constants of the run
            g = g * lin_a
        if lin_b != 0.0:
            g = g + lin_b * w
        if lin_c is not None:
            g = g + lin_c
        if wd > 0:
            g = g + wd * w
        if buf is not None:
            g = buf.mul_(mom).add_(g)
        w.sub_(lr * g)

    return step


def round_inputs(form, corrections, ctx, state_w: torch.Tensor, momentum: float,
                 lr_t: torch.Tensor) -> tuple[StepState, RoundTerms]:
    """A client's step state (from `state_w`, updated in place) and round constants (lr_t: the 0-d
    learning rate), read once after client_begin from the parts' fused forms (FusedForm.shift /
    .terms, Correction.fused_linear)."""
    terms = form.terms(ctx) if form.terms is not None else AscentTerms()
    a, b, c = fused_linear(corrections, ctx)
    shift = form.shift(ctx) if form.shift is not None else None
    return (new_state(state_w, momentum, terms.dual, terms.last),
            RoundTerms(lr_t, shift, a, b, c, terms.c))


def step_batch(form, ctx, data, idx: torch.Tensor, gen) -> StepBatch:
    """This step's batch: indices into the uint8 training tensor (gathered inside the step), or the
    eagerly augmented batch (augmentation draws from the client's generator, as in the plain loop),
    and the ascent's mixed-in second batch, drawn after the batch as the eager part draws ζ after ξ."""
    if data.augment is None:
        x, y, i = data.train_x, data.train_y, idx
    else:
        (x, y), i = data.train_batch(idx, gen), None
    mix = form.mix(ctx) if form.mix is not None else None
    if mix is None:
        return StepBatch(x, y, i)
    beta, (xs, ys) = mix
    return StepBatch(x, y, i, beta, xs, ys)


class FusedStep:
    """The whole local step as one compiled graph (training.backend: compile, parts with a `fused_form`).

    Per step: gather the mini-batch from the uint8 training tensor and normalise it (or take the
    eagerly augmented batch), loss and flat gradient (for the ascent form: d = g, or β g + (1−β) g_ζ
    with g_ζ the gradient on the part's second batch (FedSynSAM's synthetic set, passed in per step),
    plus c − m (AscentTerms: FedTOGA's κΔ; FedSMOO's −s − μ_i with μ_i moved in
    place); δ = ρ d/(‖d‖+ε), or ASAM's ρ T² d/‖T d‖ with T = |w| + η (FusedForm.asam_eta), 0
    when d = 0; gradient at w + δ; loss reported at w), clipping, weight decay,
    momentum and the SGD update of the flat iterate, in place. This is the engine's loop
    (Simulation.local_train) written once more as a pure tensor function, so the per-step Python
    dispatch of the two dozen small ops (indexing, normalisation, norms, the update) disappears;
    tests/training/fl/test_fast_equivalence.py checks it against the eager loop to 1e-5. The learning rate
    enters as a 0-d tensor, so a decaying schedule does not recompile; a step with and without a
    second batch are two graphs (FedSynSAM before and after the distillation)."""

    def __init__(self, sim):
        fm = sim.fm
        self.fm, self.data = fm, sim.data
        use_compiled_pools(fm.module)  # same numbers, a faster pool backward inside the graph
        self.form = sim.algo.perturbation.fused_form()
        self.corrections = sim.algo.corrections
        self.momentum = float(sim.spec.local_momentum)
        step = make_local_step(sim)
        self._fn = compile_own(step)
        # an epoch's partial last batch (training.local_epochs) runs the same function eagerly: its
        # size differs per client, and a static graph per leftover size would recompile every time
        self._eager = step
        install_compiled_inference(fm.module)

    def run(self, w: torch.Tensor, stream, gen, lr: float, steps: int, ctx) -> StepState:
        """`steps` local steps from `w`, updated in place; returns the final StepState (its loss_sum summed)."""
        lr_t = torch.tensor(lr, device=w.device, dtype=w.dtype)
        state, terms = round_inputs(self.form, self.corrections, ctx, w, self.momentum, lr_t)
        for _ in range(steps):
            idx = stream.next()
            fn = self._eager if stream.partial else self._fn
            fn(StepInputs(state, step_batch(self.form, ctx, self.data, idx, gen), terms))
        return state
