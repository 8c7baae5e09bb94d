"""Fast paths for the one call that touches the model: the loss and flat gradient at a point.

`training.backend` picks how `grad_at(point, batch)` is computed; every algorithm part calls it
unchanged, so a fast path is a drop-in and needs no copy of the training loop:

  eager    FlatModel.grad_at: load the point into the flat parameter buffer, forward, backward
           into the flat gradient buffer (parameters and gradients are views, so no per-tensor
           copies and the optimizer step is one vector op).
  compile  torch.compile of torch.func.grad_and_value over functional_call, parameters taken as
           views of the flat point and the gradient returned as one flat vector: forward,
           backward, the ReLU/pool/loss kernels and the gradient concatenation become one graph.
           Evaluation (eval mode under inference_mode) goes through a compiled forward as well.
           Measured on the 2-core CPU (docs/performance.md): ~1.25-1.4x eager steps/s for LeNet-5
           and the MLP, ~3x faster LeNet-5 evaluation, after a one-off warm-up per model and shape.
  auto     compile where it is supported and measured to win (CPU; no BatchNorm buffers, dropout
           or extra loss terms; no GroupNorm/LayerNorm: ResNet-18-GN ran 0.9x), eager otherwise.

Per-(seed, round, client) randomness is untouched: batches and augmentation are drawn by the
engine before the gradient call, and models whose forward draws random numbers (dropout) keep
the eager path, so results never depend on the backend beyond float rounding (tested to 1e-5).
Batching the sampled clients of a round with vmap (parameters stacked per client) was measured
and lost on this CPU (grouped convolutions are slow; see docs/performance.md); it is a GPU item.
"""
from __future__ import annotations

import weakref
from typing import Callable, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..errors import ConfigError
from .flat import FlatModel

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


def resolve_backend(name: str, fm: FlatModel, device: torch.device, has_extra_loss: bool) -> str:
    if name not in BACKENDS:
        raise ConfigError(f"training.backend: {name!r} not allowed; allowed: {', '.join(BACKENDS)}")
    if name == "eager":
        return "eager"
    blocker = compile_blocker(fm, has_extra_loss)
    if name == "compile":
        if blocker:
            raise ConfigError(f"training.backend: 'compile' unsupported here ({blocker}); use eager or auto")
        return "compile"
    # auto: compile won on the CPU for LeNet-5 and the MLP, lost for ResNet-18-GN (0.9x; GroupNorm
    # backward), and is untested on GPUs here: pick it only where it was measured to win.
    norm = any(isinstance(m, (nn.GroupNorm, nn.LayerNorm)) for m in fm.module.modules())
    return "compile" if blocker is None and device.type == "cpu" and not norm else "eager"


class CompiledGrad:
    """grad_at(point, batch) -> (loss, flat gradient), compiled; same contract as FlatModel.grad_at.

    The point is copied into the model's flat buffer first (as the eager path does), so parts and
    hooks that read `fm.module` see the parameters the gradient was taken at.
    """

    def __init__(self, fm: FlatModel):
        self.fm = fm
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

        # dynamic=False: every CompiledGrad shares flat_grad's code object, so a second model or batch
        # shape in one process would otherwise trigger "automatic dynamic" shapes (measured: LeNet-5
        # 1.5x slower than eager and a 4-minute compile); static graphs recompile per shape instead.
        self._fn = torch.compile(flat_grad, fullgraph=True, dynamic=False)

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
        fast = _COMPILED_FORWARD.get(self)
        if fast is not None and not self.training and torch.is_inference_mode_enabled():
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
