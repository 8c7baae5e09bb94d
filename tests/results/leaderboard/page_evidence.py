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

REPO = Path(__file__).resolve().parents[3]
# the v3 protocol (five paired final seeds, rho = 0 twins on the test split with the final seeds, the declared
# statistics): the evidence carries its config as its snapshot (export.snapshot_config)
V3_CONFIG = REPO / "config" / "leaderboard.yaml"


def lb_row(stage, part, preset, label, lr, params, seed, acc, status=None):
    """One record; acc None: a diverged run; status "collapsed": finished at chance with an exploding loss (no
    accuracy either)."""
    status = status or ("completed" if acc is not None else "diverged")
    ok = status == "completed"
    r = {c: np.nan for c in COLUMNS}
    r.update({"run_id": f"{stage}/{part}/{preset}/{lr}/{json.dumps(params)}/seed{seed}", "experiments": f"{stage}_{part}",
              "label": f"{label} lr={lr}", "partition": part, "preset": preset, "hparams": json.dumps(params), "lr": lr,
              "seed": seed, "status": status, "last10_acc": acc if ok else np.nan, "final_acc": acc if ok else np.nan,
              "best_acc": acc if ok else np.nan,  # a completed record holds its result (runs_schema)
              "diverged_round": 120 if status == "diverged" else np.nan})
    return r


def lb_context(tmp_path, rows, config: Path = V3_CONFIG) -> Context:
    shutil.copytree(REPO / "config", tmp_path / "config")
    (tmp_path / "results/evidence/leaderboard/config").mkdir(parents=True)
    shutil.copyfile(config, tmp_path / "results/evidence/leaderboard/config/leaderboard.yaml")
    pd.DataFrame(rows, columns=list(COLUMNS)).to_csv(tmp_path / "results/evidence/leaderboard/runs.csv", index=False)
    return Context(root=tmp_path)


def _record(stage, part, preset, label, lr, params, seed, value):
    """value: an accuracy, None (diverged) or "collapsed"."""
    if value == "collapsed":
        return lb_row(stage, part, preset, label, lr, params, seed, None, "collapsed")
    return lb_row(stage, part, preset, label, lr, params, seed, value)


def complete_rows(cfg, drop_final: int = 0, final_acc=lambda preset, part, seed: 85.0 + seed,
                  twin_acc=lambda preset, part, seed: 84.0 + seed, rho0=()) -> list[dict]:
    """Every stage complete under the v3 protocol: two continued cells per method and partition (the grid's largest
    lr, an edge, beats a middle one, except fedavg on iid, whose every continued cell diverged and so has no final
    runs), every pick's final seeds at final_acc(preset, partition, seed) (an accuracy, None: diverged,
    "collapsed"), and the rho = 0 twin of every SAM-type pick with the same final seeds on the test split at
    twin_acc(...). The last `drop_final` final runs are left out. `rho0`: (preset, partition) pairs whose
    continued cells are at rho = 0, so their pick is at rho = 0 and they have no twin."""
    lr, lr_only = cfg["tuning"]["lr"], cfg["tuning"]["lr_only"]
    rows, finals = [], []
    for preset, grid in cfg["methods"].items():
        label = PRESETS.get(preset).label  # the label records carry before their setting
        params = {k: v[1] if len(v) > 1 else v[0] for k, v in grid.items()}
        for part in cfg["partitions"]:
            top = max(lr if grid else lr_only)
            dead = preset == "fedavg" and part == "iid"
            mine = {**params, "rho": 0.0} if (preset, part) in rho0 else params
            rows.append(lb_row("cont", part, preset, label, top, mine, 0, None if dead else 80.0))
            rows.append(lb_row("cont", part, preset, label, 0.1 if grid else lr_only[1], mine, 0, None if dead else 75.0))
            if dead:
                continue
            if "rho" in grid and mine["rho"] != 0.0:
                rows += [_record("ablation", part, preset, label, top, {**mine, "rho": 0.0}, seed,
                                 twin_acc(preset, part, seed)) for seed in cfg["seeds"]]
            finals += [_record("final", part, preset, label, top, mine, seed, final_acc(preset, part, seed))
                       for seed in cfg["seeds"]]
    return rows + finals[:len(finals) - drop_final]
