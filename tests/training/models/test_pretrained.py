"""Pretrained Transformers: local weights only, clear failure when absent, head replaced."""
from __future__ import annotations

import pytest
import torch

from fedflat.core.errors import ConfigError
from fedflat.training.models import build_model, count_parameters
from fedflat.training.models.pretrained import build_arch, load_local_weights


def test_missing_weights_fail_with_path(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDFLAT_WEIGHTS", str(tmp_path))
    with pytest.raises(ConfigError, match=rf"vit_b16_pretrained: pretrained weights not found at {tmp_path}/vit_b16_pretrained\.pth"):
        build_model("vit_b16_pretrained", (3, 64, 64), 200)
    with pytest.raises(ConfigError, match="nope.pth"):
        build_model("swin_s_pretrained", (3, 64, 64), 200, weights=str(tmp_path / "nope.pth"))
    with pytest.raises(ConfigError, match="backend"):
        build_model("swin_b_pretrained", (3, 64, 64), 200, backend="jax")


def test_table3_sizes():
    # FedNSAM Table 3: Swin-S 50M, Swin-B "80M", ViT-B "88M" (torchvision: 49.0M / 86.9M / 86.0M with 200 classes)
    with torch.device("meta"):
        sizes = {n: count_parameters(build_arch(n, 200)) for n in ("swin_s_pretrained", "swin_b_pretrained", "vit_b16_pretrained")}
    assert abs(sizes["swin_s_pretrained"] / 50e6 - 1) < 0.03
    assert abs(sizes["vit_b16_pretrained"] / 88e6 - 1) < 0.03
    assert abs(sizes["swin_b_pretrained"] / 88e6 - 1) < 0.03  # the paper's 80M reads as a typo for 88M


def test_load_local_weights_keeps_body_and_fresh_head(tmp_path):
    torch.manual_seed(0)
    src = build_model("lenet5", (3, 32, 32), 1000)
    torch.save({"state_dict": src.state_dict()}, tmp_path / "w.pth")
    dst = build_model("lenet5", (3, 32, 32), 10)
    head_before = dst.head.weight.clone()
    skipped = load_local_weights(dst, tmp_path / "w.pth", "head", "lenet5")
    assert sorted(skipped) == ["head.bias", "head.weight"]
    assert torch.equal(dst.features[0].weight, src.features[0].weight)
    assert torch.equal(dst.head.weight, head_before)
    other = build_model("cnn_fedavg", (3, 32, 32), 10)
    with pytest.raises(ConfigError, match="do not fit"):
        load_local_weights(other, tmp_path / "w.pth", "head", "cnn_fedavg")
