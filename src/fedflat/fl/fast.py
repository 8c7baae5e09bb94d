"""Fast paths for the one call that touches the model: the loss and flat gradient at a point.

`training.backend` picks how `grad_at(point, batch)` is computed; every algorithm part calls it
unchanged, so a fast path is a drop-in. The one exception is FusedStep, which writes the engine's
local step once more as a tensor function for the FedAvg/FedSAM case (tested against the loop):

  eager    FlatModel.grad_at: load the point into the flat parameter buffer, forward, backward
           into the flat gradient buffer (parameters and gradients are views, so no per-tensor
           copies and the optimizer step is one vector op).
  compile  FedAvg/FedSAM-type parts (fused_blocker finds nothing): the whole local step is one
           compiled graph (FusedStep: batch gather and normalisation, gradient(s), clipping,
           weight decay, momentum, the SGD update). Other parts: torch.compile of
           torch.func.grad_and_value over functional_call per grad_at call (CompiledGrad),
           parameters taken as views of the flat point and the gradient returned as one flat
           vector. Evaluation (eval mode under inference_mode) goes through a compiled forward.
           Measured on the 2-core CPU (docs/performance.md): MLP 1.74-2.31x and LeNet-5 1.59-1.67x
           the bare eager steps/s (LeNet-5 is convolution-bound), ~3x faster LeNet-5 evaluation,
           after a one-off warm-up per model, shape and algorithm.
  auto     compile where it is supported and measured to win (CPU; no BatchNorm buffers, dropout
           or extra loss terms; no GroupNorm/LayerNorm: ResNet-18-GN ran 0.73-0.91x), eager otherwise.

Per-(seed, round, client) randomness is untouched: batches and augmentation are drawn by the
engine before the gradient call, and models whose forward draws random numbers (dropout) keep
the eager path, so results never depend on the backend beyond float rounding (tested to 1e-5).
The ReLU + 2x2 max-pool kernels swapped in while compiling (LeNet-style models) are in fl/kernels.py.
Batching the sampled clients of a round with vmap (parameters stacked per client) was measured
and lost on this CPU (grouped convolutions are slow; see docs/performance.md); it is a GPU item.
"""
from __future__ import annotations

import types
import weakref
from typing import Callable, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..algorithms.base import Correction
from ..errors import ConfigError
from .flat import FlatModel
from .kernels import use_compiled_pools

BACKENDS = ("eager", "compile", "auto")

GradAt = Callable[[torch.Tensor, tuple], tuple[torch.Tensor, torch.Tensor]]


def compile_blocker(fm: FlatModel, has_extra_loss: bool) -> Optional[str]:
    """Why the compiled path cannot reproduce the eager one for this model, or None."""
    if has_extra_loss:
        return "the algorithm adds a loss term that reads the live module"
    if fm.buffers:
        return "the model has running statistics (BatchNorm) updated in place"
    for m in fm.module.modules():
        if isinstance(m, (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout)) and m.p > 0:
            return "the model draws dropout masks (the compiled RNG differs from eager)"
    if any(p.dtype != fm.flat.dtype for p in fm.params):
        return "parameters of mixed dtypes"
    return None


# auto compiles only runs of at least this many local steps (rounds x clients per round x K): the
# one-off warm-up (~5-8 s for the FMNIST MLP with a warm inductor cache, ~25-30 s for the ConvNet-3,
# longer cold) must be paid back. Measured savings (docs/performance.md): 0.4-1.3 ms per MLP step, so
# ~10,000 steps break even for FedAvg on the MLP; FedSynSAM's FMNIST runs have 30,000, CI runs < 100.
AUTO_MIN_STEPS = 10_000


def slow_norm(module: nn.Module) -> Optional[str]:
    """A normalisation layer whose compiled backward lost on the CPU, or None. ResNet-18-GN
    (GroupNorm(2, C)) ran 0.73-0.91x compiled; the ConvNet-3's instance norm (GroupNorm(C, C)) won
    (1.22x FedAvg, 1.49x FedSAM). LayerNorm (ViT) was not measured."""
    for m in module.modules():
        if isinstance(m, nn.LayerNorm) or (isinstance(m, nn.GroupNorm) and m.num_groups < m.num_channels):
            return type(m).__name__
    return None


def resolve_backend(name: str, fm: FlatModel, device: torch.device, has_extra_loss: bool,
                    steps: Optional[int] = None) -> str:
    """The backend a run uses: `eager`, or `compile` when asked (a ConfigError if unsupported) or when
    `auto` finds it measured to win for this model and run length (`steps`: the run's local steps;
    None: long). Engine-level conditions (which parts fuse) are added by `auto_keeps_eager`."""
    if name not in BACKENDS:
        raise ConfigError(f"training.backend: {name!r} not allowed; allowed: {', '.join(BACKENDS)}")
    if name == "eager":
        return "eager"
    blocker = compile_blocker(fm, has_extra_loss)
    if name == "compile":
        if blocker:
            raise ConfigError(f"training.backend: 'compile' unsupported here ({blocker}); use eager or auto")
        return "compile"
    # auto: measured on the CPU only (GPUs untested here)
    short = steps is not None and steps < AUTO_MIN_STEPS
    return "eager" if blocker or device.type != "cpu" or slow_norm(fm.module) or short else "compile"


def auto_keeps_eager(sim) -> Optional[str]:
    """Why `auto` should not compile this simulation although the model allows it, or None: parts
    that do not fuse run the per-call compiled gradient, which wins on convolutions (LeNet-5 1.40x)
    but not on a GEMM-bound MLP (FMNIST 784-200-200-10, batch 128: 1.01-1.03x, FedSynSAM before
    its step was fused), where the warm-up would be lost."""
    blocker = fused_blocker(sim)
    has_conv = any(isinstance(m, nn.modules.conv._ConvNd) for m in sim.fm.module.modules())
    return None if blocker is None or has_conv else f"per-call path on a model without convolutions ({blocker})"


def make_flat_grad(fm: FlatModel):
    """(flat point, x, y) -> (loss, flat gradient) as a pure function of tensors (for torch.compile):
    the parameters are views of the flat point, the gradient comes back as one flat vector."""
    module, names = fm.module, list(fm.names)
    shapes = [p.shape for p in fm.params]
    sizes = [p.numel() for p in fm.params]
    frozen = {n: p for n, p in module.named_parameters() if not p.requires_grad}

    def loss_fn(params, x, y):
        return F.cross_entropy(torch.func.functional_call(module, {**params, **frozen}, (x,)), y)

    grad_fn = torch.func.grad_and_value(loss_fn)

    def flat_grad(flat, x, y):
        params = {n: t.view(s) for n, t, s in zip(names, torch.split(flat, sizes), shapes)}
        g, loss = grad_fn(params, x, y)
        return loss, torch.cat([g[n].reshape(-1) for n in names])

    return flat_grad


def compile_own(fn: Callable) -> Callable:
    """torch.compile of a copy of `fn` with a code object of its own. Dynamo keeps one cache per code
    object, and every Simulation's step closure shares one: past `recompile_limit` (8) models, shapes
    or settings in one process (test suites, benchmarks, analysis replays), a fullgraph compile fails
    instead of recompiling. A private code object gives each instance its own cache."""
    own = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    # dynamic=False: a second model or batch shape would otherwise trigger "automatic dynamic" shapes
    # (measured: LeNet-5 1.5x slower than eager and a 4-minute compile); static graphs per shape instead.
    return torch.compile(own, fullgraph=True, dynamic=False)


class CompiledGrad:
    """grad_at(point, batch) -> (loss, flat gradient), compiled; same contract as FlatModel.grad_at.

    The point is copied into the model's flat buffer first (as the eager path does), so parts and
    hooks that read `fm.module` see the parameters the gradient was taken at.
    """

    def __init__(self, fm: FlatModel):
        self.fm = fm
        use_compiled_pools(fm.module)
        flat_grad = make_flat_grad(fm)

        self._fn = compile_own(flat_grad)

        install_compiled_inference(fm.module)

    def __call__(self, point: torch.Tensor, batch) -> tuple[torch.Tensor, torch.Tensor]:
        flat = self.fm.flat
        if point.data_ptr() != flat.data_ptr():
            flat.copy_(point)
        x, y = batch
        return self._fn(flat, x, y)


_COMPILED_FORWARD: "weakref.WeakKeyDictionary[nn.Module, Callable]" = weakref.WeakKeyDictionary()


def install_compiled_inference(module: nn.Module) -> None:
    """Route the module's forward through a compiled copy when (and only when) it runs in eval mode
    under torch.inference_mode, as fl/evaluate.py does: LeNet-5 evaluation measured 3.4x faster.
    Training, hooks that differentiate (twice) through the module, and no_grad callers keep the
    eager forward. Parameters are read at call time, so loading a new flat vector is seen. The
    compiled forward is looked up per instance, so a deep copy of the module runs eagerly."""
    if module in _COMPILED_FORWARD:
        return
    base = type(module)
    _COMPILED_FORWARD[module] = torch.compile(base.forward.__get__(module), dynamic=False)

    def forward(self, *args, **kwargs):
        # The cheap tests first: a training graph traced through here (CompiledGrad, FusedStep) must
        # not read _COMPILED_FORWARD, or dynamo guards on its size and a second model built in the
        # same process recompiles the first one's step (measured: that step then ran 0.5x).
        if not self.training and torch.is_inference_mode_enabled() and not torch.compiler.is_compiling():
            fast = _COMPILED_FORWARD.get(self)
            if fast is not None:
                return fast(*args, **kwargs)
        return base.forward(self, *args, **kwargs)

    module.__class__ = type(base.__name__, (base,), {"forward": forward, "__module__": base.__module__})


def _owner(cls: type, name: str) -> Optional[type]:
    return next((c for c in cls.__mro__ if name in vars(c)), None)


def _declared(part, decl: str, uses: tuple[str, ...]) -> bool:
    """The class that declares the fused form (`decl`) also owns, or inherits, every method the eager
    path runs (`uses`): a subclass that changes one of them without declaring the form again is not fused."""
    owner = _owner(type(part), decl)
    return all((o := _owner(type(part), m)) is None or issubclass(owner, o) for m in uses)


_PERT_USES = ("gradient", "direction", "ascent", "after_ascent", "neighbour_mode", "fused_mix", "fused_shift")


def fused_blocker(sim) -> Optional[str]:
    """Why a client's local step cannot run as one compiled graph (FusedStep), or None.

    The fused step reproduces the engine's loop where the perturbation part declares its `fused_form`
    (algorithms/base.py: the plain gradient, FedAvg-type; the gradient at a point shifted by a δ fixed
    for the round, FedLESAM/FedNSAM-type; the SAM ascent, FedSAM; the ascent with a mixed-in second
    gradient, FedSynSAM) and every correction its `fused_linear` form (g ↦ a·g + b·w + c: FedProx,
    SCAFFOLD, FedDyn, FedCM, FedSAGD's momentum). Compression is not in the way: it acts on the
    client's final delta, after the loop (Simulation.send_up). Any other part, a subclass that changes
    what the eager path calls, or an analysis hook that wraps the part's `gradient` or `ascent` (an
    instance attribute), keeps the per-call path (CompiledGrad)."""
    pert = sim.algo.perturbation
    if sim.backend != "compile":
        return "backend is not compile"
    if getattr(pert, "np_mode", "off") != "off":
        return "the N-perturbation option (np_mode) is not fused"
    if not _declared(pert, "fused_form", _PERT_USES) or pert.fused_form() is None:
        return f"perturbation {type(pert).__name__} is not fused"
    if {"gradient", "ascent"} & set(vars(pert)):
        return f"a hook wraps {type(pert).__name__}'s gradient"
    for c in sim.algo.corrections:
        if not _declared(c, "fused_linear", ("adjust",)) or type(c).fused_linear is Correction.fused_linear:
            return f"correction {type(c).__name__} is not fused"
        if "adjust" in vars(c):
            return f"a hook wraps {type(c).__name__}'s adjust"
    return None


def fused_linear(corrections, ctx) -> tuple[float, float, Optional[torch.Tensor]]:
    """The corrections, applied in order, as one g ↦ a·g + b·w + c."""
    a, b, c = 1.0, 0.0, None
    for part in corrections:
        ai, bi, ci = part.fused_linear(ctx)
        a, b = ai * a, ai * b + bi
        c = ci if c is None else (c * ai if ci is None else c * ai + ci)
    return a, b, c


class FusedStep:
    """The whole local step as one compiled graph (training.backend: compile, parts with a `fused_form`).

    Per step: gather the mini-batch from the uint8 training tensor and normalise it (or take the
    eagerly augmented batch), loss and flat gradient (for the ascent form: d = g, or β g + (1−β) g_ζ
    with g_ζ the gradient on the part's second batch (FedSynSAM's synthetic set, passed in per step);
    δ = ρ d/(‖d‖+ε), 0 when d = 0; gradient at w + δ; loss reported at w), clipping, weight decay,
    momentum and the SGD update of the flat iterate, in place. This is the engine's loop
    (Simulation.local_train) written once more as a pure tensor function, so the per-step Python
    dispatch of the two dozen small ops (indexing, normalisation, norms, the update) disappears;
    tests/fl/test_fast_equivalence.py checks it against the eager loop to 1e-5. The learning rate
    enters as a 0-d tensor, so a decaying schedule does not recompile; a step with and without a
    second batch are two graphs (FedSynSAM before and after the distillation)."""

    def __init__(self, sim):
        from ..algorithms.perturbations import SAM_EPS

        fm, spec, data = sim.fm, sim.spec, sim.data
        self.fm, self.data = fm, data
        use_compiled_pools(fm.module)  # same numbers, a faster pool backward inside the graph
        self.pert = pert = sim.algo.perturbation
        self.corrections = sim.algo.corrections
        form = pert.fused_form()
        rho = float(pert.rho) if form == "ascent" else None
        self.shifted = form == "shifted"
        clip, wd, mom = float(spec.clip_grad_norm), float(spec.weight_decay), float(spec.local_momentum)
        mean, std = data.mean, data.std

        flat_grad = make_flat_grad(fm)

        def step(w, buf, loss_sum, lr, x, y, idx, beta, xs, ys, shift, lin_a, lin_b, lin_c):
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
                n = g.norm()
                delta = torch.where(n == 0, torch.zeros_like(g), g / (n + SAM_EPS) * rho)
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

        self._fn = compile_own(step)
        # an epoch's partial last batch (training.local_epochs) runs the same function eagerly: its
        # size differs per client, and a static graph per leftover size would recompile every time
        self._eager = step
        install_compiled_inference(fm.module)

    def run(self, w: torch.Tensor, buf: Optional[torch.Tensor], stream, gen, lr: float, steps: int, ctx) -> torch.Tensor:
        """`steps` local steps on `w` (and the momentum buffer) in place; returns the summed loss."""
        data, pert = self.data, self.pert
        shift = pert.fused_shift(ctx) if self.shifted else None
        lin = fused_linear(self.corrections, ctx)
        loss_sum = torch.zeros((), device=w.device, dtype=w.dtype)
        lr_t = torch.tensor(lr, device=w.device, dtype=w.dtype)
        for _ in range(steps):
            idx = stream.next()
            fn = self._eager if stream.partial else self._fn
            mix = pert.fused_mix(ctx)  # drawn after the batch, as the eager part draws ζ after ξ
            beta, (xs, ys) = mix if mix is not None else (0.0, (None, None))
            if data.augment is None:
                fn(w, buf, loss_sum, lr_t, data.train_x, data.train_y, idx, beta, xs, ys, shift, *lin)
            else:  # augmentation draws from the client's generator: eager, as in the plain loop
                x, y = data.train_batch(idx, gen)
                fn(w, buf, loss_sum, lr_t, x, y, None, beta, xs, ys, shift, *lin)
        return loss_sum


def fused_step(sim) -> Optional[FusedStep]:
    """The simulation's FusedStep when its parts allow one (built once per Simulation), else None."""
    if fused_blocker(sim) is not None:
        return None
    if "_fused_step" not in sim.__dict__:
        sim.__dict__["_fused_step"] = FusedStep(sim)
    return sim.__dict__["_fused_step"]


def make_grad_at(backend: str, fm: FlatModel, extra_loss=None) -> GradAt:
    """The gradient function a client's local steps use under a resolved backend."""
    if backend == "compile":  # one compiled function per model: a new one would recompile
        if "_compiled_grad" not in fm.__dict__:
            fm.__dict__["_compiled_grad"] = CompiledGrad(fm)
        return fm.__dict__["_compiled_grad"]
    return lambda point, batch: fm.grad_at(point, batch[0], batch[1], extra_loss)
