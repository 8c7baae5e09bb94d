"""The FedSynSAM settings file's lr entries for a Table II block (config/papers/settings/fedsynsam.yaml), written from
the committed evidence of stages L1/L2/E: each method's picked lr with the grid and scores behind it, so the catalog
cites its measurement and a test sees when the two drift apart.

    python -m fedflat.evidence lr-sources B      # the YAML to paste under the block's settings entries

Blocks B and C only: block A's grids also moved with stage P's radii (stage L3), and its entries say so by hand."""
from __future__ import annotations

from .lrpicks import FAMILY_NAMES, current, next_lr, picks

KEYS = {"FedAvg": "fedavg", "DynaFed": "dynafed", "FedSAM": "fedsam", "FedLESAM": "fedlesam", "FedSMOO": "fedsmoo",
        "FedGAMMA": "fedgamma", "FedLESAM-D": "fedlesam_d", "FedLESAM-S": "fedlesam_s", "FedSynSAM": "fedsynsam"}
ONE_X = {"FedAvg", "DynaFed", "FedSAM", "FedLESAM", "FedSynSAM"}  # stage L1; the 2x methods are stage L2's
L1_GRID = (0.05, 0.1, 0.5)
L2_GRID = {"q4": (0.003, 0.01, 0.05), "k25": (0.01, 0.05, 0.1)}
PATTERNS = {"q4": "q*", "k25": "k*"}
COLUMN = {"q4": "Q4", "k25": "Top-k 0.25"}
VI_A = "unstated: VI-A says the lr was tuned within {0.01, 0.05, 0.1, 0.5}"


def _score(v: float) -> str:
    return "diverged" if v != v else f"{v:.2f} %"


def source(block: str, family: str, method: str, means: dict[float, float], pick: float) -> str:
    """One entry's `source`: the first grid's scores, stage E's extension if any, and the pick."""
    base = L1_GRID if method in ONE_X else L2_GRID[family]
    stage = "L1" if method in ONE_X else "L2"
    grid = "{" + ", ".join(f"{x:g}" for x in base) + "}"
    first = ", ".join(f"{x:g}: {_score(means[x])}" for x in base if x in means)
    s = (f"{VI_A}; stage {stage}'s grid {grid} on block {block} {COLUMN[family]} (validation, seeds 0-1, last 10 % of "
         f"rounds; {first})")
    extra = {x: m for x, m in means.items() if x not in base}
    if extra:
        s += ("; stage E extends the grid past its edge pick (" + ", ".join(f"{x:g}: {_score(m)}"
                                                                            for x, m in sorted(extra.items()))
              + f") and picks {pick:g}")
    else:
        s += f" picks {pick:g}"
        if next_lr(pick, sorted(means)) is not None:
            s += "; stage E extends the grid past this edge pick (pending)"
    return s + " (docs/reproduction.md#fedsynsam-lr-picks)"


def entries(runs, catalog_rho: dict, block: str) -> str:
    """The YAML of both column families' entries; a method whose grid is not complete is a comment."""
    cur = current(picks(runs), catalog_rho)
    out = []
    for family in FAMILY_NAMES:
        out += [f'  - experiments: ["t2{block}_fmnist_{PATTERNS[family]}"]', "    algorithms:"]
        for label, key in KEYS.items():
            v = cur.get((block, family, label))
            if v is None or not v["complete"] or v["pick"] is None:
                out.append(f"      # {key}: grid incomplete")
                continue
            means = {float(x): m for x, m in v["means"].items()}
            pick = float(v["pick"])
            out += [f"      {key}:", f'        training: {{lr: {{value: {pick:g}, source: '
                                     f'"{source(block, family, label, means, pick)}"}}}}']
    return "\n".join(out)


def report(block: str, root=None) -> str:
    """`python -m fedflat.evidence lr-sources BLOCK`: entries() from the committed evidence and today's catalog."""
    from pathlib import Path

    from ..study import load_config_file, load_study
    from .lrpicks import STUDY, catalog_values
    from .store import load

    root = Path(root or ".")
    catalog = load_study(load_config_file(root / "config/papers/fedsynsam.yaml"))
    return entries(load(STUDY, root / "results/evidence").runs(), catalog_values(catalog, "rho"), block)
