"""Class coverage of every partition a paper catalog uses, at its own scale and seeds.

A partition reading (which Dirichlet variant, which pathological split) is often only inferable;
its class coverage tells whether a paper's reported accuracy is even reachable: 10 clients that
together hold 5 of 10 classes cannot reach 80 % test accuracy. Coverage depends only on the label
counts per class, so a data set that is not on disk is stood in for by a label vector with its
official training-class counts (same partitioner, same seed, same result as on the real data).

    python -m fedflat.papers --coverage fedsynsam [--scale paper]
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...training.data import load_dataset
from ...training.data.partition import make_partition

# Official training-split class counts (label order of our loaders).
TRAIN_COUNTS: dict[str, list[int]] = {
    "cifar10": [5000] * 10,
    "cifar100": [500] * 100,
    "cinic10": [9000] * 10,
    "tiny_imagenet": [500] * 200,
    "svhn": [4948, 13861, 10585, 8497, 7458, 6882, 5727, 5595, 5045, 4659],
    "tissuemnist": [53075, 7814, 5866, 15406, 11789, 7705, 39203, 24608],
    "pathmnist": [9366, 9509, 10360, 10401, 8006, 12182, 7886, 9401, 12885],
    "emnist-l10": [4800] * 10,
    "emnist-letters": [4800] * 26,
}


@dataclass(frozen=True)
class Coverage:
    dataset: str
    partition: str
    num_clients: int
    seed: int
    classes: int  # classes in the data set
    present: int  # classes of which the federation holds at least one sample
    covered: int  # classes of which it holds at least 1 % of that class's training samples
    per_client_min: int  # classes making up >= 5 % of a client's samples
    per_client_mean: float
    labels_from: str  # "data" or "official class counts"


def _base(dataset: str) -> str:
    name = dataset.removeprefix("digits_as_")
    for suffix in ("-plain", "-half", "-cutout", "-aug", "-constant", "-trainonly"):
        name = name.removesuffix(suffix)
    return name


def training_labels(dataset: str, data_root: Path | str = "data") -> tuple[np.ndarray, str]:
    """The training labels: from the data set when it loads offline, else from its official class counts."""
    base = _base(dataset)
    if base in TRAIN_COUNTS and not dataset.startswith("digits_as_"):
        counts = TRAIN_COUNTS[base]
        return np.repeat(np.arange(len(counts)), counts), "official class counts"
    return load_dataset(dataset, Path(data_root), False).train_y.numpy(), "data"


def coverage(study, data_root: Path | str = "data") -> list[Coverage]:
    """One row per partition the study builds (natural partitions have no class skew to report)."""
    out, labels_cache = [], {}
    for pid, p in sorted(study.partitions.items()):
        if p["partition"] == "natural":
            continue
        if p["dataset"] not in labels_cache:
            labels_cache[p["dataset"]] = training_labels(p["dataset"], data_root)
        labels, origin = labels_cache[p["dataset"]]
        part = make_partition(labels, p["partition"], p["num_clients"], p["seed"], p["variant"],
                              p["samples_per_client"] or None, standin=p["dataset"].startswith("digits_as_"),
                              missing_classes="allow")  # reported here, not refused
        hist = part.histogram
        class_total = np.bincount(labels, minlength=hist.shape[1])
        major = hist >= 0.05 * np.maximum(hist.sum(1, keepdims=True), 1)
        out.append(Coverage(p["dataset"], part.meta["spec"], p["num_clients"], p["seed"], hist.shape[1],
                            int((hist.sum(0) > 0).sum()), int((hist.sum(0) >= 0.01 * class_total).sum()),
                            int(major.sum(1).min()), float(major.sum(1).mean()), origin))
    return out


def render(rows: list[Coverage]) -> str:
    """Markdown: 'covered' counts classes with >= 1 % of their training samples in the federation (classes with
    any sample in brackets); 'per client' counts classes that make up >= 5 % of a client's samples."""
    lines = ["| data set | partition | clients | seed | classes covered (present) | per client, min / mean | labels from |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.dataset} | {r.partition} | {r.num_clients} | {r.seed} | {r.covered} ({r.present}) / {r.classes} | "
                     f"{r.per_client_min} / {r.per_client_mean:.1f} | {r.labels_from} |")
    return "\n".join(lines) + "\n"
