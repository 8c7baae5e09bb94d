"""Paper models: parameter counts against the papers' stated sizes, shapes, variants, bad kwargs."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fedflat.core.errors import ConfigError
from fedflat.training.models import MODELS, build_model, count_parameters


def _count_meta(name, shape, k, **kw):
    with torch.device("meta"):  # no memory, no init cost: fine for ResNet-18 and ViT-B
        return count_parameters(build_model(name, shape, k, **kw))


@pytest.mark.parametrize("name,shape,k,kw,expected", [
    # FedSAGD Table 5 CNN = FedNSAM/FedTOGA LeNet-5: 4864 + 102464 + 614784 + 73920 + 1930 (FedSAGD Table 5)
    ("lenet5", (3, 32, 32), 10, {}, 797_962),
    ("cnn_feddyn", (3, 32, 32), 100, {}, 797_962 - 1930 + 192 * 100 + 100),
    # FedSOL FedAvg CNN: 2432 + 51264 + 4096*512+512 + 5130 ("~2.2M", FedSOL Sec. 4.1)
    ("cnn_fedavg", (3, 32, 32), 10, {}, 2_156_490),
    ("cnn_fedavg", (1, 28, 28), 10, {"gray_to_rgb": True}, 2432 + 51264 + 3136 * 512 + 512 + 5130),
    # FedSynSAM ConvNet-3: 3584 + 147584 + 147584 + 768 + 20490 (DynaFed's ConvNet, FedSynSAM Sec. VI-A)
    ("convnet_synsam", (3, 32, 32), 10, {}, 320_010),
    ("mlp2", (1, 28, 28), 10, {}, 784 * 200 + 200 + 200 * 200 + 200 + 2010),
    # the record: ImageNet stem + GroupNorm(2) + 10 classes
    ("resnet18", (3, 32, 32), 10, {"norm": "gn", "stem": "imagenet"}, 11_181_642),
    ("resnet18", (3, 32, 32), 10, {"norm": "bn", "stem": "imagenet"}, 11_181_642),  # GN and BN: same affine params
    ("resnet18", (3, 32, 32), 10, {"stem": "cifar"}, 11_181_642 - 64 * 3 * (49 - 9)),
    ("resnet10", (3, 32, 32), 10, {"stem": "imagenet"}, 4_910_922),
    # FedSAGD Table 6: Embedding(80,8), 2-layer LSTM(100), FC(100,80)
    ("char_lstm", (80,), 80, {}, 640 + (4 * 100 * 108 + 800) + (4 * 100 * 200 + 800) + 8080),
])
def test_parameter_counts(name, shape, k, kw, expected):
    assert _count_meta(name, shape, k, **kw) == expected


def test_vgg11_heads_per_paper():
    conv = 9_220_480  # 8 conv layers of VGG-11 configuration A on 3 channels
    assert _count_meta("vgg11", (3, 32, 32), 10) == conv + 512 * 100 + 100 + 1010       # FedNSAM CIFAR-10
    assert _count_meta("vgg11", (3, 32, 32), 100) == conv + 512 * 256 + 256 + 25700     # FedNSAM CIFAR-100
    assert _count_meta("vgg11", (3, 32, 32), 10, variant="fedsol") == conv + 2 * (512 * 512 + 512) + 5130


def test_resnet_fednsam_bn_variant_has_gn_stem_and_bn_blocks():
    m = build_model("resnet18", (3, 32, 32), 10, norm="bn_gnstem")
    assert isinstance(m.stem[1], torch.nn.GroupNorm) and m.stem[1].num_groups == 2
    assert isinstance(m.layers[0].n1, torch.nn.BatchNorm2d)
    gn = build_model("resnet18", (3, 32, 32), 10, norm="gn")
    assert all(g.num_groups == 2 for g in gn.modules() if isinstance(g, torch.nn.GroupNorm))
    assert not any(isinstance(b, torch.nn.BatchNorm2d) for b in gn.modules())
    nostats = build_model("resnet10", (3, 32, 32), 10, norm="bn_nostats")
    assert len(list(nostats.buffers())) == 0  # nothing to aggregate (FedSOL code)


@pytest.mark.parametrize("name,shape,kw", [
    ("lenet5", (3, 32, 32), {}), ("lenet5", (1, 28, 28), {}), ("cnn_fedavg", (1, 28, 28), {"gray_to_rgb": True}),
    ("convnet_synsam", (3, 32, 32), {"width": 8}), ("mlp2", (1, 28, 28), {}),
    ("vgg11", (1, 28, 28), {"variant": "fedsol"}),  # 28x28 is upsampled to 32 (FedSOL)
    ("resnet10", (3, 16, 16), {"stem": "cifar"}),
    ("vit_small", (3, 32, 32), {"dim": 24, "depth": 2, "heads": 2, "mlp_dim": 24}),
    ("vit_small", (1, 28, 28), {"dim": 24, "depth": 1, "heads": 2, "mlp_dim": 24, "spt": False, "lsa": False}),
])
def test_forward_shapes_and_head_name(name, shape, kw):
    torch.manual_seed(0)
    m = build_model(name, shape, 7, **kw)
    out = m(torch.randn(3, *shape))
    assert out.shape == (3, 7)
    assert isinstance(m.head, torch.nn.Linear) and m.head.out_features == 7  # the head is always `head`


def test_char_lstm_uses_last_step():
    torch.manual_seed(0)
    m = build_model("char_lstm", (80,), 80)
    x = torch.randint(0, 80, (2, 80))
    y = x.clone(); y[:, -5] = (y[:, -5] + 1) % 80
    assert m(x).shape == (2, 80)
    assert not torch.allclose(m(x), m(y))  # earlier tokens matter through the recurrence
    out, _ = m.lstm(m.embed(x))
    assert torch.allclose(m(x), m.head(out[:, -1]))


def test_vit_small_sl_vit_size_and_lsa_masks_self():
    # FedSOL SL-ViT: dim 192, depth 9, heads 12, mlp 192, patch 32/4 = 8 -> 16 tokens + cls
    m = build_model("vit_small", (3, 32, 32), 10)
    assert m.pos.shape == (1, 17, 192) and len(m.blocks) == 9
    assert m.blocks[0].attn.log_scale is not None
    plain = build_model("vit_small", (3, 32, 32), 10, spt=False, lsa=False)
    assert count_parameters(m) - count_parameters(plain) == 9 + (5 - 1) * 3 * 64 * 192 + 2 * 5 * 3 * 64


@pytest.mark.parametrize("name,kw,key", [
    ("resnet18", {"norm": "ln"}, "model_params.resnet18.norm"),
    ("resnet10", {"stem": "tiny"}, "model_params.resnet10.stem"),
    ("vgg11", {"variant": "x"}, "model_params.vgg11.variant"),
    ("convnet_synsam", {"norm": "bn"}, "model_params.convnet_synsam.norm"),
])
def test_bad_variant_is_config_error(name, kw, key):
    with pytest.raises(ConfigError, match=key):
        build_model(name, (3, 32, 32), 10, **kw)


def test_all_paper_models_registered():
    for n in ["lenet5", "cnn_fedavg", "convnet_synsam", "mlp2", "vgg11", "resnet18", "resnet10", "char_lstm",
              "vit_small", "vit_b16_pretrained", "swin_s_pretrained", "swin_b_pretrained"]:
        assert n in MODELS


def test_mlp_training_jobs_take_one_thread_and_others_the_study_s():
    """workflow/rules/train.smk asks job_threads for each run's threads; every named model exists."""
    from fedflat.training.models.model_registry import MODELS, SINGLE_THREAD_MODELS, job_threads

    assert SINGLE_THREAD_MODELS <= set(MODELS.names())
    assert job_threads("mlp2", 2) == 1 and job_threads("mlp", 4) == 1
    assert job_threads("lenet5", 2) == 2 and job_threads("convnet_synsam", 3) == 3 and job_threads("resnet18", 1) == 1
    assert "job_threads(_spec(wc.run).model, THREADS)" in (Path(__file__).parents[3] / "workflow/rules/train.smk").read_text()
