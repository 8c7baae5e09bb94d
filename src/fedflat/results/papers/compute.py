"""What each catalog target needs: runs, sample-gradients, and a compute estimate.

sample-gradients of a run = rounds x clients per round x local samples x gradient evaluations per
step (2 for SAM-type perturbations), local samples = local steps x batch size, or with
training.local_epochs = epochs x the mean client size (an epoch sees each sample once). Time = sample-gradients / throughput, with the
throughput either measured here (`--measure`: forward+backward of the model on random input on
this machine) or an assumed single-GPU figure (ASSUMED_GPU_SAMPLES_PER_S, a rough planning number:
small-batch FL simulation is often overhead-bound, so treat GPU hours as a lower bound).
"""
from __future__ import annotations

import time

from ...core.errors import ConfigError
from ...core.run_paths import run_of_file
from ...pipeline.study import figure_inputs, table_inputs
from ...training.algorithms.presets import build_algorithm
from ...training.models import build_model
from ...training.models.pretrained import ARCHS, Resized, build_arch

# input shape per dataset family (channels, height, width); sequences: (length,)
INPUT_SHAPES = {"cifar10": (3, 32, 32), "cifar100": (3, 32, 32), "svhn": (3, 32, 32), "cinic10": (3, 32, 32),
                "mnist": (1, 28, 28), "fmnist": (1, 28, 28), "emnist": (1, 28, 28), "pathmnist": (3, 28, 28),
                "tissuemnist": (1, 28, 28), "tiny_imagenet": (3, 64, 64), "shakespeare": (80,), "digits": (1, 8, 8)}
NUM_CLASSES = {"cifar100": 100, "tiny_imagenet": 200, "shakespeare": 80, "pathmnist": 9, "tissuemnist": 8}
# training-split sizes per dataset family (planning only: the mean client size under local_epochs)
TRAIN_SIZES = {"cifar10": 50000, "cifar100": 50000, "svhn": 73257, "cinic10": 90000, "mnist": 60000,
               "fmnist": 60000, "emnist": 124800, "pathmnist": 89996, "tissuemnist": 165466,
               "tiny_imagenet": 100000, "shakespeare": 200000, "digits": 1437,
               "emnist-l10": 48000}  # a data set named here wins over its family (EMNIST-L's first 10 letters)
ASSUMED_GPU_SAMPLES_PER_S = {  # one H100-class GPU, fp32, per model (training samples per second)
    "linear": 2e6, "mlp": 1e6, "mlp2": 1e6, "cnn_small": 5e5, "lenet5": 1.5e5, "cnn_fedavg": 1.5e5,
    "cnn_feddyn": 1.5e5, "convnet_synsam": 8e4, "vgg11": 4e4, "resnet10": 3e4, "resnet18": 2e4,
    "vit_small": 2e4, "char_lstm": 5e4, "swin_s_pretrained": 600, "swin_b_pretrained": 400,
    "vit_b16_pretrained": 400,
}


def dataset_family(name: str) -> str:
    base = name.split("-")[0]
    if base.startswith("digits_as_"):
        return "digits"
    return base


def run_sample_grads(spec) -> float:
    tr = spec.training
    per_step = build_algorithm(spec.algorithm, spec.hparams).grad_evals_per_step
    if tr.get("local_epochs"):
        size = TRAIN_SIZES.get(spec.dataset) or TRAIN_SIZES.get(dataset_family(spec.dataset), 50000)
        n = tr["samples_per_client"] or size / tr["num_clients"]
        local = tr["local_epochs"] * n
    else:
        local = tr["local_steps"] * tr["batch_size"]
    return float(tr["rounds"] * spec.clients_per_round * local * per_step)


def measure_cpu(model: str, dataset: str, batch: int = 50, reps: int = 3) -> float:
    """Training samples per second of `model` on this CPU (forward+backward, random input)."""
    import torch

    fam = dataset_family(dataset)
    shape = INPUT_SHAPES.get(fam, (3, 32, 32))
    if model in ARCHS:  # timing needs the architecture, not the pretrained weights (often not on disk)
        net = Resized(build_arch(model, NUM_CLASSES.get(fam, 10)), 224)
        batch, reps = 4, 1  # ~50 GFLOP per sample at 224 px: a few samples give the rate
    else:
        net = build_model(model, shape, NUM_CLASSES.get(fam, 10))
    x = torch.randint(0, 80, (batch,) + shape) if len(shape) == 1 else torch.randn((batch,) + shape)
    y = torch.randint(0, NUM_CLASSES.get(fam, 10), (batch,))
    loss_fn = torch.nn.CrossEntropyLoss()
    loss_fn(net(x), y).backward()  # warm-up
    t = time.perf_counter()
    for _ in range(reps):
        net.zero_grad()
        loss_fn(net(x), y).backward()
    return batch * reps / (time.perf_counter() - t)


def summarise(study, measure: bool = False, cache: dict[str, float] | None = None) -> list[dict]:
    """One row per table/figure: target, the runs it needs, how many of them the committed evidence does not hold
    yet (`left`: what a session still has to run), sample-gradients and hours (all its runs).

    `cache` (model|dataset family -> measured samples/s) lets several studies share measurements."""
    cache = {} if cache is None else cache
    per_run: dict[str, tuple[float, float]] = {}  # run id -> (sample grads, seconds)
    for rid, spec in study.runs.items():
        g = run_sample_grads(spec)
        if measure:
            key = f"{spec.model}|{dataset_family(spec.dataset)}"
            if key not in cache:
                try:
                    cache[key] = measure_cpu(spec.model, spec.dataset)
                except (OSError, RuntimeError, ValueError, ConfigError):  # e.g. pretrained weights not on disk
                    cache[key] = float("nan")
            secs = g / cache[key]
        else:
            secs = g / ASSUMED_GPU_SAMPLES_PER_S.get(spec.model, 2e4)
        per_run[rid] = (g, secs)
    rows, needed = [], set()
    for section, inputs in (("tables", table_inputs), ("figures", figure_inputs)):
        for name, entry in getattr(study, section).items():
            rids = _runs_of(study, inputs, name, reuse=False) & set(per_run)  # what the target costs
            left = _runs_of(study, inputs, name, reuse=True) & rids  # what the committed evidence does not hold
            needed |= left
            out = (f"{study.tables_dir}/{name}.md" if section == "tables" else f"{study.figures_dir}/{name}.pdf")
            rows.append({"target": out, "ref": entry.get("ref", name), "runs": len(rids), "left": len(left),
                         "sample_grads": sum(per_run[r][0] for r in rids),
                         "hours": sum(per_run[r][1] for r in rids) / 3600})
    rows.append({"target": "(all, deduplicated)", "ref": "", "runs": len(per_run), "left": len(needed),
                 "sample_grads": sum(g for g, _ in per_run.values()),
                 "hours": sum(s for _, s in per_run.values()) / 3600})
    return rows


def _runs_of(study, inputs, name: str, reuse: bool) -> set[str]:
    """The run ids a target's inputs name, with the committed evidence's runs left out (`reuse`) or not."""
    before = study.config.get("reuse_evidence", True)
    study.config["reuse_evidence"] = reuse and before
    try:
        return {run_of_file(f) for f in inputs(study, name)}
    finally:
        study.config["reuse_evidence"] = before
