"""A model whose trainable parameters and gradients are views into two flat buffers.

Loading a client's parameters is one copy, a gradient is read as one vector, and every
algorithm works on flat tensors without per-tensor index bookkeeping (FedLESAM's and
FL-Simulator's flat-vector indexing bugs cannot happen here).
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class FlatModel:
    def __init__(self, module: nn.Module, device: torch.device | str = "cpu"):
        self.module = module.to(device)
        self.params = [p for p in self.module.parameters() if p.requires_grad]
        self.names = [n for n, p in self.module.named_parameters() if p.requires_grad]
        n = sum(p.numel() for p in self.params)
        dtype = self.params[0].dtype
        self.flat = torch.zeros(n, device=device, dtype=dtype)
        self.grad = torch.zeros(n, device=device, dtype=dtype)
        self.slices: list[tuple[int, int]] = []
        off = 0
        for p in self.params:
            k = p.numel()
            self.flat[off : off + k].copy_(p.data.reshape(-1))
            p.data = self.flat[off : off + k].view_as(p)
            p.grad = self.grad[off : off + k].view_as(p)
            self.slices.append((off, off + k))
            off += k
        # float buffers (BatchNorm running statistics) travel with the model and are averaged
        self.buffers = [b for b in self.module.buffers() if b.is_floating_point()]
        self.num_buffer = sum(b.numel() for b in self.buffers)

    @property
    def numel(self) -> int:
        return self.flat.numel()

    def get_buffers(self) -> torch.Tensor:
        if not self.buffers:
            return self.flat.new_zeros(0)
        return torch.cat([b.reshape(-1) for b in self.buffers])

    def set_buffers(self, vec: torch.Tensor) -> None:
        off = 0
        for b in self.buffers:
            k = b.numel()
            b.copy_(vec[off : off + k].view_as(b))
            off += k

    def load(self, theta: torch.Tensor, buffers: Optional[torch.Tensor] = None) -> None:
        self.flat.copy_(theta)
        if buffers is not None and buffers.numel():
            self.set_buffers(buffers)

    def grad_at(self, point: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                extra_loss: Optional[Callable] = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Loss and flat gradient of the mean cross-entropy (+ extra terms) at `point`."""
        if point.data_ptr() != self.flat.data_ptr():
            self.flat.copy_(point)
        self.grad.zero_()
        logits = self.module(x)
        loss = F.cross_entropy(logits, y)
        if extra_loss is not None:
            loss = loss + extra_loss(logits, x, y)
        loss.backward()
        return loss.detach(), self.grad

    def vector_to_tensors(self, vec: torch.Tensor) -> list[torch.Tensor]:
        return [vec[a:b].view_as(p) for (a, b), p in zip(self.slices, self.params)]


def initial_vector(module: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in module.parameters() if p.requires_grad]).clone()
