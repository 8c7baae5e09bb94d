"""Fast paths for the one call that touches the model: the loss and flat gradient at a point.

`training.backend` picks how `grad_at(point, batch)` is computed; every algorithm part calls it
unchanged, so a fast path is a drop-in. The one exception is the fused step (training/fl/fused.py), which
writes the engine's local step once more as a tensor function (tested against the loop):

  eager    FlatModel.grad_at: load the point into the flat parameter buffer, forward, backward
           into the flat gradient buffer (parameters and gradients are views, so no per-tensor
           copies and the optimizer step is one vector op).
  compile  Parts with a fused form (fused_blocker finds nothing: FedAvg, FedSAM, FedSynSAM, the
           FedLESAM/FedNSAM shifted points, FedASAM's, FedSMOO's and FedTOGA's ascents, linear
           corrections such as SCAFFOLD and FedDyn, any uplink compression): the whole local step
           is one compiled graph (FusedStep: batch gather and normalisation, gradient(s),
           clipping, corrections, weight decay, momentum, the SGD update). Other parts: torch.compile of torch.func.grad_and_value over
           functional_call per grad_at call (CompiledGrad), parameters taken as views of the flat
           point and the gradient returned as one flat vector. Evaluation (eval mode under
           inference_mode) goes through a compiled forward. Measured on the 2-core CPU
           (docs/performance.md): digits MLP 1.74-2.31x and LeNet-5 1.59-1.67x the bare eager
           steps/s, ~3x faster LeNet-5 evaluation, after a one-off warm-up per model, shape and algorithm.
  auto     (the default) compile where it is supported and measured to win: CPU; no BatchNorm
           buffers, dropout or extra loss terms; no GroupNorm with fewer groups than channels
           (ResNet-18-GN ran 0.73-0.91x) or LayerNorm; a run long enough to pay the warm-up back
           (AUTO_MIN_STEPS); and, on models without convolutions, only where the step fuses (the
           per-call path gained nothing on the GEMM-bound FMNIST MLP). Eager otherwise.

Per-(seed, round, client) randomness is untouched: batches and augmentation are drawn by the
engine before the gradient call, and models whose forward draws random numbers (dropout) keep
the eager path, so results never depend on the backend beyond float rounding (tested to 1e-5).
The ReLU + 2x2 max-pool kernels swapped in while compiling (LeNet-style models) are in training/fl/kernels.py.
Batching the sampled clients of a round with vmap (`training.vmap_clients`, training/fl/together.py) is an
option for GPUs: on this CPU it lost (grouped convolutions are slow; see docs/performance.md).
"""
from __future__ import annotations

import os
import shutil
import types
import weakref
from typing import Callable, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from ...core.errors import ConfigError
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
                    steps: Optional[int] = None, unfused: Optional[str] = None) -> str:
    """The backend a run uses: `eager`, or `compile` when asked (a ConfigError if unsupported) or when
    `auto` finds it measured to win for this model, algorithm and run length. `steps`: the run's local
    steps (None: long); `unfused`: why the algorithm's local step has no fused form (fused.step_blocker),
    None when it fuses."""
    if name not in BACKENDS:
        raise ConfigError(f"training.backend: {name!r} not allowed; allowed: {', '.join(BACKENDS)}")
    if name == "eager":
        return "eager"
    blocker = compile_blocker(fm, has_extra_loss)
    if name == "compile":
        if blocker:
            raise ConfigError(f"training.backend: 'compile' unsupported here ({blocker}); use eager or auto")
        return "compile"
    # auto: measured on the CPU only (GPUs untested here); inductor's CPU code needs a C++ compiler.
    # A step that does not fuse runs the per-call compiled gradient, which wins on convolutions (LeNet-5
    # 1.40x) but not on a GEMM-bound MLP (FMNIST 784-200-200-10, batch 128: 1.01-1.03x), where the
    # warm-up would be lost.
    short = steps is not None and steps < AUTO_MIN_STEPS
    per_call_loses = unfused is not None and not has_conv(fm.module)
    slow = blocker or device.type != "cpu" or slow_norm(fm.module) or short or per_call_loses
    return "eager" if slow or not has_cxx() else "compile"


def has_cxx() -> bool:
    """A C++ compiler for inductor's CPU kernels: without one `auto` stays eager instead of failing."""
    return any(shutil.which(c) for c in (os.environ.get("CXX") or "g++", "g++", "c++", "clang++"))


def has_conv(module: nn.Module) -> bool:
    return any(isinstance(m, nn.modules.conv._ConvNd) for m in module.modules())


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
    under torch.inference_mode, as training/fl/evaluate.py does: LeNet-5 evaluation measured 3.4x faster.
    Training, hooks that differentiate (twice) through the module, and no_grad callers keep the
    eager forward. Parameters are read at call time, so loading a new flat vector is seen. The
    compiled forward is looked up per instance, so a deep copy of the module runs eagerly.
    Models without convolutions keep the eager forward: the FMNIST MLP's 10,000-image evaluation took
    0.047 s eager and 0.048 s compiled (GEMM-bound), after a 2.8 s warm-up per batch shape."""
    if module in _COMPILED_FORWARD or not has_conv(module):
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


def make_grad_at(backend: str, fm: FlatModel, extra_loss=None) -> GradAt:
    """The gradient function a client's local steps use under a resolved backend."""
    if backend == "compile":  # one compiled function per model: a new one would recompile
        if "_compiled_grad" not in fm.__dict__:
            fm.__dict__["_compiled_grad"] = CompiledGrad(fm)
        return fm.__dict__["_compiled_grad"]
    return lambda point, batch: fm.grad_at(point, batch[0], batch[1], extra_loss)


