"""A small ViT trained from scratch: FedSOL's SL-ViT ("ViT for small-size datasets", Lee et al. 2021),
FedSOL Sec. 4.1, App. B.1, Table 3 and its code: dim 192, depth 9, heads 12, MLP 192, patch = min(image/4, 16), with
Shifted Patch Tokenization (`spt`) and Locality Self-Attention (`lsa`: learnable temperature,
self-token masked). Both switch off to give a plain pre-norm ViT. Head on the class token.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .model_registry import MODELS


def patchify(x: torch.Tensor, p: int) -> torch.Tensor:
    n, c, h, w = x.shape
    x = x.reshape(n, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(n, (h // p) * (w // p), c * p * p)


class PatchEmbed(nn.Module):
    def __init__(self, channels: int, patch: int, dim: int, spt: bool):
        super().__init__()
        self.patch, self.spt = patch, spt
        cin = channels * (5 if spt else 1) * patch * patch
        self.norm = nn.LayerNorm(cin) if spt else nn.Identity()
        self.proj = nn.Linear(cin, dim)

    def forward(self, x):
        if self.spt:  # the image plus four copies shifted half a patch along the diagonals
            s = self.patch // 2
            shifts = [(s, -s, s, -s), (-s, s, s, -s), (s, -s, -s, s), (-s, s, -s, s)]
            x = torch.cat([x] + [F.pad(x, sh) for sh in shifts], dim=1)
        return self.proj(self.norm(patchify(x, self.patch)))


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int, dim_head: int, lsa: bool):
        super().__init__()
        self.heads, self.lsa = heads, lsa
        self.qkv = nn.Linear(dim, 3 * heads * dim_head, bias=False)
        self.out = nn.Linear(heads * dim_head, dim)
        init = math.log(dim_head ** -0.5)
        self.log_scale = nn.Parameter(torch.tensor(init)) if lsa else None
        self.fixed_scale = dim_head ** -0.5  # a float, not a buffer: nothing extra to aggregate

    def forward(self, x):
        n, t, _ = x.shape
        q, k, v = self.qkv(x).reshape(n, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        scale = self.log_scale.exp() if self.lsa else self.fixed_scale
        dots = q @ k.transpose(-1, -2) * scale
        if self.lsa:  # diagonal masking: a token does not attend to itself
            eye = torch.eye(t, dtype=torch.bool, device=x.device)
            dots = dots.masked_fill(eye, torch.finfo(dots.dtype).min)
        y = dots.softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(n, t, -1))


class Block(nn.Module):
    def __init__(self, dim, heads, dim_head, mlp_dim, lsa):
        super().__init__()
        self.n1, self.attn = nn.LayerNorm(dim), Attention(dim, heads, dim_head, lsa)
        self.n2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, dim))

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        return x + self.mlp(self.n2(x))


class ViT(nn.Module):
    def __init__(self, input_shape, num_classes, dim=192, depth=9, heads=12, dim_head=None, mlp_dim=192,
                 patch=None, spt=True, lsa=True):
        super().__init__()
        c, h, w = input_shape
        patch = patch or min(min(h, w) // 4, 16)
        if h % patch or w % patch:
            raise ValueError(f"image {h}x{w} is not divisible by patch {patch}")
        dim_head = dim_head or dim // heads
        self.embed = PatchEmbed(c, patch, dim, spt)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, (h // patch) * (w // patch) + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, heads, dim_head, mlp_dim, lsa) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        t = self.embed(x)
        t = torch.cat([self.cls.expand(len(t), -1, -1), t], dim=1) + self.pos
        return self.head(self.norm(self.blocks(t))[:, 0])


@MODELS.register("vit_small")
def vit_small(input_shape, num_classes, dim: int = 192, depth: int = 9, heads: int = 12, dim_head: int | None = None,
              mlp_dim: int = 192, patch: int | None = None, spt: bool = True, lsa: bool = True) -> nn.Module:
    return ViT(input_shape, num_classes, dim, depth, heads, dim_head, mlp_dim, patch, spt, lsa)
