"""Fused ReLU + 2x2 max-pool kernels for compiled LeNet-style steps (training.backend: compile).

Plain 2x2/stride-2 max-pools (and a ReLU directly before one) are swapped for modules that behave as
aten's eagerly and, only while torch.compile traces them, use autograd functions whose backward
lowers to one vectorised pointwise pass. Same values and gradients as aten bit for bit
(tests/training/fl/test_fast_equivalence.py); measured effect in docs/performance.md. training/fl/fast.py installs them.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class _PoolFunction(torch.autograd.Function):
    """forward returns (pooled values, what backward needs to route the gradient): saved, not differentiable."""

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output[1])
        ctx.in_hw = inputs[0].shape[-2:]
        ctx.mark_non_differentiable(output[1])


class _MaxPool2x2(_PoolFunction):
    """2x2, stride-2 max-pool: aten's forward (values and argmax indices), and a backward that sends
    each pooled gradient to its argmax with one pointwise `where(position == index)` over the input.
    Same indices as aten (first maximum of the window on ties), so the same gradient bit for bit;
    only the kernel differs: inductor's own lowering of the pool backward zero-fills an NCHW buffer,
    scatters with a scalar loop and transposes to channels-last (30 ms of a 112 ms compiled LeNet-5
    step); this form lowers to one vectorised pass (docs/performance.md)."""

    @staticmethod
    def forward(x):
        return F.max_pool2d_with_indices(x, 2)

    @staticmethod
    def backward(ctx, g, _unused):
        (idx,) = ctx.saved_tensors
        (h, w), (ho, wo) = ctx.in_hw, g.shape[-2:]
        lead = g.shape[:-2]

        def up(t):  # nearest-neighbour 2x upsampling as a broadcast view
            return t[..., :, None, :, None].expand(*lead, ho, 2, wo, 2).reshape(*lead, 2 * ho, 2 * wo)

        pos = torch.arange(2 * ho, device=g.device)[:, None] * w + torch.arange(2 * wo, device=g.device)
        gin = torch.where(pos == up(idx), up(g), torch.zeros((), dtype=g.dtype, device=g.device))
        if (2 * ho, 2 * wo) != (h, w):  # odd sizes: the floor-dropped last row/column gets no gradient
            gin = F.pad(gin, (0, w - 2 * wo, 0, h - 2 * ho))
        return gin


class _ReluMaxPool2x2(_PoolFunction):
    """max_pool2d(relu(x), 2) for a ReLU directly followed by a 2x2/stride-2 max-pool, written in
    channels-last order (N, Ho, Wo, C views of the four window positions, channel innermost: the
    layout inductor gives the convolution outputs), with one float "winner" code per pooled element:
    0-3 = the window position of the first maximum (aten's tie rule, row-major), 4 = no gradient
    (the maximum is <= 0 or NaN, so ReLU's backward would zero it: relu'(0) = 0). The backward is one
    vectorised pointwise pass `where(code == position, g, 0)`: no ReLU mask is read, no integer index
    arithmetic (inductor's int64 lowering of the indices ran scalar). Values: relu is monotone, so
    max(relu(x)) = relu(max(x)) exactly; gradients: the same input receives the same pooled gradient
    as aten's relu + max-pool, bit for bit (tests/training/fl/test_fast_equivalence.py, ties and odd sizes).
    Measured on the fused LeNet-5 step: the first pool's backward kernel 15.8 -> 7 ms, the gradient
    1.28x -> 1.40x eager (docs/performance.md)."""

    @staticmethod
    def forward(x):
        h, w = x.shape[-2:]
        ho, wo = h // 2, w // 2
        v = x[..., : 2 * ho, : 2 * wo].permute(0, 2, 3, 1).reshape(x.shape[0], ho, 2, wo, 2, x.shape[1])
        a, b, c, d = v[:, :, 0, :, 0], v[:, :, 0, :, 1], v[:, :, 1, :, 0], v[:, :, 1, :, 1]
        mx = torch.maximum(torch.maximum(a, b), torch.maximum(c, d))
        f = lambda k: torch.full((), k, dtype=x.dtype, device=x.device)  # float codes: no int64 vectors
        code = torch.where(mx > 0, torch.where(a == mx, f(0.0), torch.where(b == mx, f(1.0),
                                                                            torch.where(c == mx, f(2.0), f(3.0)))), f(4.0))
        return torch.relu(mx).permute(0, 3, 1, 2), code

    @staticmethod
    def backward(ctx, g, _unused):
        (code,) = ctx.saved_tensors  # (N, Ho, Wo, C)
        (h, w), (ho, wo) = ctx.in_hw, g.shape[-2:]
        n, ch = g.shape[0], g.shape[1]
        ar = torch.arange(2, device=g.device)
        position = (ar[:, None, None, None] * 2 + ar[:, None]).to(g.dtype)  # (2, 1, 2, 1): dy * 2 + dx
        gl = g.permute(0, 2, 3, 1)[:, :, None, :, None, :]
        gin = torch.where(code[:, :, None, :, None, :] == position, gl, torch.zeros((), dtype=g.dtype, device=g.device))
        gin = gin.reshape(n, 2 * ho, 2 * wo, ch).permute(0, 3, 1, 2)
        if (2 * ho, 2 * wo) != (h, w):  # odd sizes: the floor-dropped last row/column gets no gradient
            gin = F.pad(gin, (0, w - 2 * wo, 0, h - 2 * ho))
        return gin


class CompiledMaxPool2d(nn.MaxPool2d):
    """nn.MaxPool2d(2) that uses _MaxPool2x2 while torch.compile traces it, aten's kernel otherwise.
    `relu=True`: the ReLU before it (a _ReLUIntoPool) passed its input through while compiling, and
    this module applies it (_ReluMaxPool2x2)."""

    def __init__(self, kernel_size=2, relu: bool = False):
        super().__init__(kernel_size)
        self.relu = relu

    def forward(self, x):
        if torch.compiler.is_compiling():
            return (_ReluMaxPool2x2 if self.relu else _MaxPool2x2).apply(x)[0]
        # eager: apply the ReLU here too (idempotent), so a graph break between the skipped ReLU and
        # this pool can never drop it
        return super().forward(F.relu(x) if self.relu else x)


class _ReLUIntoPool(nn.ReLU):
    """nn.ReLU directly followed by a CompiledMaxPool2d(relu=True): identity while torch.compile traces
    it (the pool applies the ReLU), a plain ReLU otherwise."""

    def forward(self, x):
        if torch.compiler.is_compiling():
            return x
        return super().forward(x)


def use_compiled_pools(module: nn.Module) -> int:
    """Swap every plain 2x2/stride-2 nn.MaxPool2d in `module` for CompiledMaxPool2d (no parameters,
    same eager behaviour); where an nn.ReLU directly precedes it in an nn.Sequential, the pair becomes
    _ReLUIntoPool + CompiledMaxPool2d(relu=True). Returns how many pools were swapped."""
    def plain(m):
        two = lambda v: v in (2, (2, 2))
        return (type(m) is nn.MaxPool2d and two(m.kernel_size) and (m.stride is None or two(m.stride))
                and m.padding in (0, (0, 0)) and m.dilation in (1, (1, 1)) and not m.ceil_mode
                and not m.return_indices)

    swaps = [(parent, name) for parent in module.modules() for name, child in parent.named_children() if plain(child)]
    for parent, name in swaps:
        prev = None
        if isinstance(parent, nn.Sequential):
            names = [n for n, _ in parent.named_children()]
            i = names.index(name)
            prev = names[i - 1] if i > 0 and type(getattr(parent, names[i - 1])) is nn.ReLU else None
        if prev is not None:
            setattr(parent, prev, _ReLUIntoPool(inplace=getattr(parent, prev).inplace))
        setattr(parent, name, CompiledMaxPool2d(2, relu=prev is not None))
    return len(swaps)
