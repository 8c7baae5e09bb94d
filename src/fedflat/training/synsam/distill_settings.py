"""Distillation settings of FedSynSAM (Sec. IV-B, VI-A) as per-dataset profiles, and the
hyperparameters shared by every part that builds a synthetic set (FedSynSAM, DynaFed).

A numeric setting left at 0 takes its profile's value; `syn_profile: auto` picks the profile from the
dataset: CINIC-10 → cinic10, CIFAR-10 or colour images → cifar10, else (one-channel images: FMNIST,
MNIST, digits; vectors) → fmnist. By name first, so a tiny-scale stand-in (digits_as_cifar10) distills
with its paper dataset's profile (Table VII's η_x grid is set for CIFAR-10's SGD, not FMNIST's Adam).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..algorithms.parts import Param
from ...core.errors import ConfigError

# Sec. VI-A. Images per class, optimizer of X, η_x, unrolled steps s per segment, iterations M.
PROFILES: dict[str, dict] = {
    "fmnist": {"ipc": 20, "optim": "adam", "lr_img": 0.05, "steps": 3, "iters": 200},
    "cifar10": {"ipc": 20, "optim": "sgd", "lr_img": 1000.0, "steps": 5, "iters": 200},
    "cinic10": {"ipc": 40, "optim": "sgd", "lr_img": 1000.0, "steps": 5, "iters": 200},
}

SYN_PARAMS: dict[str, Param] = {
    "syn_round": Param(30, "R: rounds before distillation (trajectory θ_0..θ_R, synthetic data used for t > R)", low=1),
    "syn_profile": Param("auto", "per-dataset distillation settings", choices=("auto",) + tuple(PROFILES)),
    "syn_ipc": Param(0, "synthetic images per class (0: profile)", low=0),
    "syn_iters": Param(0, "distillation iterations M (0: profile)", low=0),
    "syn_steps": Param(0, "s: unrolled GD steps per trajectory segment = rounds per segment (0: profile)", low=0),
    "syn_lr_img": Param(0.0, "η_x, learning rate of the images (0: profile)", low=0.0),
    "syn_lr_lr": Param(1e-5, "η_α, learning rate of the learnable step size α", low=0.0),
    "syn_optim": Param("auto", "optimizer of the images (auto: profile)", choices=("auto", "adam", "sgd")),
    "syn_momentum": Param(0.5, "momentum of the SGD optimizers (MTT/DynaFed: 0.5)", low=0.0, high=1.0, high_open=True),
    "syn_loss": Param("normalized", "normalized: MTT's ‖ŵ−w^{r+s}‖²/‖w^r−w^{r+s}‖²; mse: the paper's ‖ŵ−w^{r+s}‖²",
                      choices=("normalized", "mse")),
    "syn_alpha_init": Param("k_lr", "initial α: K·η_l (one synthetic step per round) or η_l (MTT)",
                            choices=("k_lr", "lr")),
}
INT_PARAMS = ("syn_round", "syn_ipc", "syn_iters", "syn_steps")


def check_ints(part) -> None:
    for k in INT_PARAMS:
        v = getattr(part, k)
        if isinstance(v, bool) or not float(v).is_integer():
            raise ConfigError(f"algorithm.{k}: must be an integer, got {v!r}")
        setattr(part, k, int(v))


@dataclass(frozen=True)
class DistillConfig:
    ipc: int
    iters: int
    steps: int
    lr_img: float
    lr_lr: float
    optim: str
    momentum: float
    loss: str
    profile: str

    def to_dict(self) -> dict:
        return asdict(self)


def profile_for(dataset: str, input_shape) -> str:
    name = dataset.lower().replace("-", "").replace("_", "")
    if "cinic" in name:
        return "cinic10"
    if "cifar" in name:
        return "cifar10"
    return "cifar10" if len(input_shape) == 3 and input_shape[0] >= 3 else "fmnist"


def resolve(part, dataset: str, input_shape) -> DistillConfig:
    profile = part.syn_profile if part.syn_profile != "auto" else profile_for(dataset, input_shape)
    p = PROFILES[profile]
    cfg = DistillConfig(
        ipc=part.syn_ipc or p["ipc"], iters=part.syn_iters or p["iters"], steps=part.syn_steps or p["steps"],
        lr_img=part.syn_lr_img or p["lr_img"], lr_lr=part.syn_lr_lr,
        optim=p["optim"] if part.syn_optim == "auto" else part.syn_optim, momentum=part.syn_momentum,
        loss=part.syn_loss, profile=profile)
    if part.syn_round < cfg.steps:
        raise ConfigError(f"algorithm.syn_round: {part.syn_round} rounds give {part.syn_round + 1} trajectory models, "
                          f"fewer than syn_steps + 1 = {cfg.steps + 1}; raise syn_round or lower syn_steps")
    return cfg
