"""The leaderboard page's v2 blocks rendered from a complete synthetic continuation and ablation in the real
runs.csv format: every method's pick per partition with its edge marks, the trial counts, the ablation verdicts."""
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from fedflat.evidence import blocks_leaderboard as lb
from fedflat.evidence.pages import Context
from fedflat.evidence.records import COLUMNS
from fedflat.study import load_config_file

REPO = Path(__file__).resolve().parents[2]


def _row(stage, part, preset, label, lr, params, seed, acc):
    r = {c: np.nan for c in COLUMNS}
    r.update({"run_id": f"{stage}/{part}/{preset}/{lr}/{json.dumps(params)}/seed{seed}", "experiments": f"{stage}_{part}",
              "label": f"{label} lr={lr}", "partition": part, "preset": preset, "hparams": json.dumps(params), "lr": lr,
              "seed": seed, "status": "completed" if acc is not None else "diverged",
              "last10_acc": acc if acc is not None else np.nan, "final_acc": acc if acc is not None else np.nan})
    return r


def _context(tmp_path, rows) -> Context:
    shutil.copytree(REPO / "config", tmp_path / "config")
    (tmp_path / "results/evidence/leaderboard").mkdir(parents=True)
    pd.DataFrame(rows, columns=list(COLUMNS)).to_csv(tmp_path / "results/evidence/leaderboard/runs.csv", index=False)
    return Context(root=tmp_path)


def test_choice_and_ablation_blocks_from_a_complete_continuation(tmp_path):
    cfg = load_config_file(REPO / "config/leaderboard.yaml")["leaderboard"]
    lr, lr_only = cfg["tuning"]["lr"], cfg["tuning"]["lr_only"]
    rows = []
    for preset, grid in cfg["methods"].items():
        label = preset.upper()
        params = {k: v[1] if len(v) > 1 else v[0] for k, v in grid.items()}
        for part in cfg["partitions"]:
            top = max(lr if grid else lr_only)
            # two continued cells: the grid's largest lr (an edge) beats a middle one, except fedavg on iid,
            # whose every continued cell diverged
            dead = preset == "fedavg" and part == "iid"
            rows.append(_row("cont", part, preset, label, top, params, 0, None if dead else 80.0))
            rows.append(_row("cont", part, preset, label, 0.1 if grid else lr_only[1], params, 0, None if dead else 75.0))
            if "rho" in grid and part == "iid":
                rows.append(_row("ablation", part, preset, label, top, {**params, "rho": 0.0}, 0, 79.0))
                for seed, acc in ((0, 85.0), (1, 86.0)):
                    rows.append(_row("final", part, preset, label, top, params, seed, acc))
    ctx = _context(tmp_path, rows)
    text = lb.choice(ctx)
    assert "not complete" not in text
    assert "| FEDSAM | 16 + 2 |" in text and "[edge: lr]" in text
    assert "every continued cell diverged" in text and "1 (partition, method) pairs: FEDAVG on IID" in text
    abl = lb.ablation(ctx)
    n_rho = sum("rho" in g for g in cfg["methods"].values())
    assert abl.count("| IID |") == n_rho and "+1.00 | 0.71 | the ascent helps" in abl
    assert f"- IID: the ascent helps: {n_rho}." in abl


def test_blocks_wait_for_an_incomplete_stage(tmp_path):
    ctx = _context(tmp_path, [_row("cont", "iid", "fedsam", "FedSAM", 0.1, {"rho": 0.05}, 0, 80.0)])
    assert lb.choice(ctx).startswith("The continuation is not complete in the evidence (1 of 330")
    assert lb.ablation(ctx).startswith("The ρ = 0 ablation appears here once")
