"""One colour and marker per algorithm across every figure, and the shared matplotlib style."""
from __future__ import annotations

import hashlib
from pathlib import Path

import matplotlib

from ...core.util.io import atomic_write

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Fixed assignments for the methods the papers compare; anything else gets a stable hashed colour.
_PALETTE = {
    "FedAvg": "#4d4d4d", "FedProx": "#8c6d31", "SCAFFOLD": "#bcbd22", "FedDyn": "#17becf",
    "FedAvgM": "#7f7f7f", "FedAdam": "#aec7e8", "FedYogi": "#c5b0d5", "FedCM": "#c49c94",
    "FedACG": "#9467bd", "FedNova": "#dbdb8d", "FedNTD": "#9edae5", "MOON": "#f7b6d2",
    "FedSAM": "#1f77b4", "FedASAM": "#6baed6", "MoFedSAM": "#ff7f0e", "FedGAMMA": "#2ca02c",
    "FedSpeed": "#98df8a", "FedSMOO": "#ff9896", "FedLESAM": "#8c564b", "FedLESAM-S": "#a55194",
    "FedLESAM-D": "#e377c2", "FedNSAM": "#d62728", "FedSAGD": "#e6550d", "FedSOL": "#31a354",
    "FedTOGA": "#756bb1", "FedSynSAM": "#e7298a",
    # further baselines and variants: each its own colour, variants near their base method's hue
    "FedANAG": "#3f007d", "FedLNAG": "#fdae6b", "MimeLite": "#636363", "FedDC": "#006d2c", "FedRCL": "#b15928",
    "DynaFed": "#fb9a99", "PerFedAvg": "#1b9e77", "FedBABU": "#d95f02", "kNN-Per": "#7570b3",
    "Local-only": "#000000", "FedAvg+Nesterov": "#969696", "FedSAM+Nesterov": "#08519c",
    "FedNSAM-S": "#fc9272", "FedNSAM-D": "#a50f15", "FedNSAM−Nesterov": "#fb6a4a",
    "FedNSAM−Nesterov (θ+m)": "#67000d", "FedSpeed+NP": "#238b45", "FedSMOO+NP": "#cb181d",
    "FedSAM (exact global ε)": "#00bfff",
    "FedSOL (fixed ρ)": "#a1d99b", "FedSOL (general)": "#00441b", "FedSOL-L2": "#74c476",
    "FedProx-KL": "#543005", "Proj-L2": "#bf812d", "Proj-KL": "#dfc27d", "FedProx+FedSOL": "#c7e9c0",
    "SCAFFOLD+FedSOL": "#807d00", "FedDyn+FedSOL": "#0e7c86", "MOON+FedSOL": "#c51b7d", "FedNova+FedSOL": "#8c8c3c",
    # the 2024-2025 SAM methods (docs/algorithms_2025.md)
    "FedGloSS": "#35978f", "FedGF": "#762a83", "FedSCAM": "#e08214",
}
_MARKERS = "osD^v<>pP*hX"


def color_for(label: str) -> str:
    if label in _PALETTE:
        return _PALETTE[label]
    base = label.split(" ")[0]
    if base in _PALETTE:
        return _PALETTE[base]
    h = int(hashlib.md5(label.encode()).hexdigest(), 16)
    return plt.get_cmap("tab20")(h % 20)


def marker_for(label: str) -> str:
    keys = list(_PALETTE)
    i = keys.index(label) if label in keys else int(hashlib.md5(label.encode()).hexdigest(), 16)
    return _MARKERS[i % len(_MARKERS)]


def apply_style() -> None:
    plt.rcParams.update({
        "figure.dpi": 150, "savefig.dpi": 300, "savefig.bbox": "tight", "font.size": 9,
        "axes.titlesize": 9, "axes.labelsize": 9, "legend.fontsize": 8, "axes.grid": True,
        "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False, "pdf.fonttype": 42,
    })


def save(fig, path) -> None:
    """Atomic save (format from the suffix); the figure stays open so it can be saved twice."""
    path = Path(path)
    atomic_write(path, lambda t: fig.savefig(t, format=path.suffix.lstrip(".")))


def save_all(fig, outs, layout: bool = True) -> None:
    """Lay out (unless the figure places its own colour bar), write the figure to every path in
    `outs` (one format per suffix), close it."""
    if layout:
        fig.tight_layout()
    for out in outs:
        save(fig, out)
    plt.close(fig)
