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


def _complete_rows(cfg, drop_final: int = 0) -> list[dict]:
    """Every stage complete: two continued cells per method and partition (the grid's largest lr, an edge, beats a
    middle one, except fedavg on iid, whose every continued cell diverged and so has no final runs), the rho = 0
    twin of every SAM-type pick, and every pick's final seeds (the last `drop_final` of them left out)."""
    lr, lr_only = cfg["tuning"]["lr"], cfg["tuning"]["lr_only"]
    rows, finals = [], []
    for preset, grid in cfg["methods"].items():
        label = preset.upper()
        params = {k: v[1] if len(v) > 1 else v[0] for k, v in grid.items()}
        for part in cfg["partitions"]:
            top = max(lr if grid else lr_only)
            dead = preset == "fedavg" and part == "iid"
            rows.append(_row("cont", part, preset, label, top, params, 0, None if dead else 80.0))
            rows.append(_row("cont", part, preset, label, 0.1 if grid else lr_only[1], params, 0, None if dead else 75.0))
            if dead:
                continue
            if "rho" in grid:
                rows.append(_row("ablation", part, preset, label, top, {**params, "rho": 0.0}, 0, 78.0))
            finals += [_row("final", part, preset, label, top, params, seed, 85.0 + seed) for seed in cfg["seeds"]]
    return rows + finals[:len(finals) - drop_final]


def test_choice_ablation_and_ranking_blocks_from_complete_stages(tmp_path):
    cfg = load_config_file(REPO / "config/leaderboard.yaml")["leaderboard"]
    ctx = _context(tmp_path, _complete_rows(cfg))
    text = lb.choice(ctx)
    assert "not complete" not in text
    assert "| FEDSAM | 16 + 2 |" in text and "[edge: lr]" in text
    assert "every continued cell diverged" in text and "1 (partition, method) pairs: FEDAVG on IID" in text
    abl = lb.ablation(ctx)
    n_rho = sum("rho" in g for g in cfg["methods"].values())
    # pick 80 against its rho = 0 twin's 78: +2 points, beyond the final seeds' spread (85, 86, 87: std 1)
    assert abl.count("| IID |") == n_rho and "+2.00 | 1.00 | the ascent helps" in abl
    assert f"- IID: the ascent helps: {n_rho}." in abl
    top = lb.top(ctx)
    assert "not complete" not in top and top.count("\n") == 11  # header, rule and the top 10
    full = lb.ranking(ctx).splitlines()
    assert len(full) == 2 + len(cfg["methods"])  # every method, on every partition
    # FEDAVG had no stable setting on IID: it ranks below every method that ran there
    assert next(r for r in full if r.startswith("| FEDAVG |")).split(" | ")[1] == f"no stable setting ({len(cfg['methods']):g})"
    stats = lb.statistics(ctx)
    assert "median seed std of final accuracy, IID | 1.00 points" in stats


def test_blocks_wait_for_an_incomplete_stage(tmp_path):
    ctx = _context(tmp_path, [_row("cont", "iid", "fedsam", "FedSAM", 0.1, {"rho": 0.05}, 0, 80.0)])
    assert lb.choice(ctx).startswith("The continuation is not complete in the evidence (1 of 330")
    assert lb.ablation(ctx).startswith("The ablation stage is not complete in the evidence (0 runs; how many")
    assert lb.top(ctx).startswith("The final stage is not complete in the evidence (0 runs; how many")


def test_ranking_waits_for_the_last_final_run(tmp_path):
    """A partial final stage never renders a partial ranking: one missing run of 3 x 164 keeps every
    final-stage block waiting, with the count."""
    cfg = load_config_file(REPO / "config/leaderboard.yaml")["leaderboard"]
    ctx = _context(tmp_path, _complete_rows(cfg, drop_final=1))
    n = (len(cfg["methods"]) * len(cfg["partitions"]) - 1) * len(cfg["seeds"])
    assert lb.top(ctx).startswith(f"The final stage is not complete in the evidence ({n - 1} of {n} runs)")
    assert lb.statistics(ctx).startswith("The final stage is not complete")
    assert lb.ablation(ctx).startswith("The final stage is not complete")
    assert lb.stage_totals(ctx.evidence("leaderboard").runs(), cfg)["ablation"][1] == (
        sum("rho" in g for g in cfg["methods"].values()) * len(cfg["partitions"]))
