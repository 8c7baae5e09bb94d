"""Leaderboard records in the real runs.csv format (fedflat.evidence.records.COLUMNS), one per run of a stage,
and a page-rendering context over a copy of the config with them as the committed evidence."""
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from fedflat.training.algorithms import PRESETS
from fedflat.evidence.pages import Context
from fedflat.evidence.records import COLUMNS

REPO = Path(__file__).resolve().parents[2]
# the v2 protocol (3 final seeds, validation-split rho = 0 twins) that the v2 blocks render: its evidence carries this
# config as its snapshot (export.snapshot_config), so the live config's v3 changes do not move these tests
V2_CONFIG = Path(__file__).with_name("fixtures") / "leaderboard_v2.yaml"


def lb_row(stage, part, preset, label, lr, params, seed, acc):
    r = {c: np.nan for c in COLUMNS}
    r.update({"run_id": f"{stage}/{part}/{preset}/{lr}/{json.dumps(params)}/seed{seed}", "experiments": f"{stage}_{part}",
              "label": f"{label} lr={lr}", "partition": part, "preset": preset, "hparams": json.dumps(params), "lr": lr,
              "seed": seed, "status": "completed" if acc is not None else "diverged",
              "last10_acc": acc if acc is not None else np.nan, "final_acc": acc if acc is not None else np.nan,
              "best_acc": acc if acc is not None else np.nan})  # a completed record holds its result (runs_schema)
    return r


def lb_context(tmp_path, rows) -> Context:
    shutil.copytree(REPO / "config", tmp_path / "config")
    (tmp_path / "results/evidence/leaderboard/config").mkdir(parents=True)
    shutil.copyfile(V2_CONFIG, tmp_path / "results/evidence/leaderboard/config/leaderboard.yaml")
    pd.DataFrame(rows, columns=list(COLUMNS)).to_csv(tmp_path / "results/evidence/leaderboard/runs.csv", index=False)
    return Context(root=tmp_path)


def complete_rows(cfg, drop_final: int = 0, final_acc=lambda preset, part, seed: 85.0 + seed) -> list[dict]:
    """Every stage complete: two continued cells per method and partition (the grid's largest lr, an edge, beats a
    middle one, except fedavg on iid, whose every continued cell diverged and so has no final runs), the rho = 0
    twin of every SAM-type pick, and every pick's final seeds at final_acc(preset, partition, seed) (the last
    `drop_final` of them left out)."""
    lr, lr_only = cfg["tuning"]["lr"], cfg["tuning"]["lr_only"]
    rows, finals = [], []
    for preset, grid in cfg["methods"].items():
        label = PRESETS.get(preset).label  # the label records carry before their setting
        params = {k: v[1] if len(v) > 1 else v[0] for k, v in grid.items()}
        for part in cfg["partitions"]:
            top = max(lr if grid else lr_only)
            dead = preset == "fedavg" and part == "iid"
            rows.append(lb_row("cont", part, preset, label, top, params, 0, None if dead else 80.0))
            rows.append(lb_row("cont", part, preset, label, 0.1 if grid else lr_only[1], params, 0, None if dead else 75.0))
            if dead:
                continue
            if "rho" in grid:
                rows.append(lb_row("ablation", part, preset, label, top, {**params, "rho": 0.0}, 0, 78.0))
            finals += [lb_row("final", part, preset, label, top, params, seed, final_acc(preset, part, seed))
                       for seed in cfg["seeds"]]
    return rows + finals[:len(finals) - drop_final]
