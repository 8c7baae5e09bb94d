"""Pretrained Transformers of FedNSAM Table 3 (ViT-B/16, Swin-S, Swin-B), from local weight files only.

Nothing is downloaded: the user puts a weight file at the documented path and the run fails with
one ConfigError line when it is absent. Architectures are torchvision's (`vit_b_16`, `swin_s`,
`swin_b`); the weight file is a state dict in torchvision's key layout (e.g. the files torchvision
caches under ~/.cache/torch/hub/checkpoints, or IN-22k weights converted to that layout). With
`backend: timm` (needs the `timm` package) the timm architecture named by FedNSAM is built instead
and the file must be in timm's layout (FedNSAM used timm's IN-22k checkpoints).

Weight path: model kwarg `weights`, else `$FEDFLAT_WEIGHTS/<name>.pth`, else `data/weights/<name>.pth`.
The classifier is replaced by a fresh `num_classes` head; inputs are resized on the device to
`image_size` (224, as in the paper) and 1-channel inputs repeated to 3 channels.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from ...core.errors import ConfigError, choice_error
from .model_registry import MODELS

# registry name -> (torchvision builder, head prefix in torchvision's keys, timm name used by FedNSAM)
ARCHS = {
    "vit_b16_pretrained": ("vit_b_16", "heads.head", "vit_base_patch16_224_in21k"),
    "swin_s_pretrained": ("swin_s", "head", "swin_small_patch4_window7_224"),
    "swin_b_pretrained": ("swin_b", "head", "swin_base_patch4_window7_224_in22k"),
}
BACKENDS = ("torchvision", "timm")


def weight_path(name: str, weights: str | None) -> Path:
    if weights:
        return Path(weights)
    base = Path(os.environ.get("FEDFLAT_WEIGHTS", "data/weights"))
    return base / f"{name}.pth"


def build_arch(name: str, num_classes: int, backend: str = "torchvision") -> nn.Module:
    """The bare architecture with a `num_classes` head, random weights (usable on the meta device)."""
    tv_name, _, timm_name = ARCHS[name]
    if backend == "timm":
        try:
            import timm
        except ImportError:
            raise ConfigError(f"model {name}: backend timm needs the `timm` package (pip install timm)") from None
        return timm.create_model(timm_name, pretrained=False, num_classes=num_classes)
    import torchvision.models as tvm

    return getattr(tvm, tv_name)(weights=None, num_classes=num_classes)


def load_local_weights(model: nn.Module, path: Path, head_prefix: str, name: str) -> list[str]:
    """Load every weight except the classifier head; the head keeps its fresh initialisation.

    Returns the skipped keys. Keys missing from the file (other than the head) or unknown to the
    model mean the file is for another architecture: ConfigError.
    """
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ConfigError(f"model {name}: cannot read weights {path} ({type(exc).__name__}: {exc})") from None
    for key in ("state_dict", "model"):
        if isinstance(state, dict) and key in state and isinstance(state[key], dict):
            state = state[key]
    own = model.state_dict()
    skipped = [k for k in state if k.startswith(head_prefix + ".")]
    state = {k: v for k, v in state.items() if k not in skipped}
    unexpected = [k for k in state if k not in own]
    missing = [k for k in own if k not in state and not k.startswith(head_prefix + ".")]
    bad_shape = [k for k in state if k in own and own[k].shape != state[k].shape]
    if unexpected or missing or bad_shape:
        show = lambda ks: ", ".join(ks[:3]) + (" ..." if len(ks) > 3 else "")
        raise ConfigError(f"model {name}: weights {path} do not fit the architecture (unexpected: {show(unexpected)}; "
                          f"missing: {show(missing)}; wrong shape: {show(bad_shape)})")
    model.load_state_dict(state, strict=False)
    return skipped


class Resized(nn.Module):
    """Resize to the pretrained resolution and repeat gray to RGB, on whatever device the batch is."""

    def __init__(self, net: nn.Module, image_size: int):
        super().__init__()
        self.net, self.image_size = net, image_size

    def forward(self, x):
        if x.shape[1] == 1:
            x = x.expand(-1, 3, -1, -1)
        if x.shape[-1] != self.image_size or x.shape[-2] != self.image_size:
            x = F.interpolate(x, size=(self.image_size, self.image_size), mode="bilinear", align_corners=False)
        return self.net(x)


def _factory(name: str):
    def make(input_shape, num_classes, weights: str | None = None, backend: str = "torchvision",
             image_size: int = 224) -> nn.Module:
        if backend not in BACKENDS:
            raise choice_error(f"model_params.{name}.backend", backend, BACKENDS)
        path = weight_path(name, weights)
        if not path.exists():
            raise ConfigError(f"model {name}: pretrained weights not found at {path}; put a {backend} state dict "
                              f"there, set model_params.{name}.weights, or set FEDFLAT_WEIGHTS (docs/datasets.md)")
        net = build_arch(name, num_classes, backend)
        head = ARCHS[name][1] if backend == "torchvision" else "head"
        load_local_weights(net, path, head, name)
        return Resized(net, image_size)

    make.__doc__ = f"{name}: torchvision {ARCHS[name][0]} / timm {ARCHS[name][2]} from local weights (FedNSAM Table 3)."
    return make


for _name in ARCHS:
    MODELS.add(_name, _factory(_name))
