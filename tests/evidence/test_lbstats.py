"""The leaderboard's quoted statistics from evidence records: stages, the screen's choices and edges, the
primary rank (diverged methods below every completed one), seed spread, partition correlations."""
import json

import numpy as np
import pandas as pd
import pytest

from fedflat.evidence import lbstats


def _rec(exp, preset, part, seed, acc, lr=0.1, hparams=None, status="completed", label=None):
    return {"experiments": exp, "preset": preset, "partition": part, "seed": seed, "lr": lr,
            "hparams": json.dumps(hparams or {}), "status": status, "final_acc": acc if status == "completed" else np.nan,
            "last10_acc": acc if status == "completed" else np.nan, "label": label or preset.upper()}


def test_stage_counts():
    runs = pd.DataFrame([_rec("tune_dir0p3_fedavg", "fedavg", "dir0.3", 0, 80), _rec("tune_dir0p3_fedavg", "fedavg", "dir0.3", 0, 0, status="diverged"),
                         _rec("final_iid", "fedavg", "iid", 0, 88)])
    c = lbstats.stage_counts(runs)
    assert c.loc["screen"].tolist() == [2, 1, 1] and c.loc["final"].tolist() == [1, 1, 0]


def test_screen_choices_mark_edges_and_rho_zero():
    grids = {"fedsam": {"rho": [0.0, 0.01, 0.05, 0.1]}, "fedavg": {}}
    lr, lr_only = [0.03, 0.1, 0.3, 1.0], [0.03, 0.05, 0.1, 1.0]
    rows = [_rec("tune_dir0p3_fedsam", "fedsam", "dir0.3", 0, 80 + i + 10 * (rho == 0.0), lr=l, hparams={"rho": rho})
            for i, l in enumerate(lr) for rho in grids["fedsam"]["rho"]]
    rows += [_rec("tune_dir0p3_fedavg", "fedavg", "dir0.3", 0, acc, lr=l) for l, acc in zip(lr_only, [70, 75, 74, 73])]
    rows.append(_rec("tune_dir0p3_fedavg", "fedavg", "dir0.3", 0, 99, lr=0.5, status="diverged"))  # never chosen
    ch = lbstats.screen_choices(pd.DataFrame(rows), grids, lr, lr_only).set_index("preset")
    assert ch.loc["fedsam", "lr"] == 1.0 and ch.loc["fedsam", "rho0"]
    assert ch.loc["fedsam", "edges"] == ["lr", "rho"]  # top of the lr grid; rho at the bottom of a 4-value grid
    assert ch.loc["fedavg", "lr"] == 0.05 and ch.loc["fedavg", "edges"] == [] and not ch.loc["fedavg", "rho0"]


def test_primary_rank_puts_a_diverged_method_below_every_completed_one():
    rows = []
    for seed in (0, 1):
        rows += [_rec("final_iid", "a", "iid", seed, 90.0 + 0.1 * seed), _rec("final_iid", "b", "iid", seed, 90.05 + 0.1 * seed),
                 _rec("final_iid", "c", "iid", seed, 85.0)]
    rows += [_rec("final_iid", "d", "iid", 0, 99.0), _rec("final_iid", "d", "iid", 1, 0, status="diverged"),
             _rec("final_iid", "e", "iid", 0, 50.0), _rec("final_iid", "e", "iid", 1, 0, status="diverged")]
    r = lbstats.primary_ranks(pd.DataFrame(rows)).set_index("preset")
    assert r.loc["b", "rank"] == 1 and r.loc["a", "rank"] == 2 and r.loc["c", "rank"] == 3
    assert r.loc["d", "rank"] == 4 and r.loc["e", "rank"] == 5  # best completed seed of all, still below c
    assert r.loc["a", "band"] == r.loc["b", "band"] == 1 and r.loc["c", "band"] == 2
    assert r.loc["d", "mean"] == pytest.approx(99.0)


def test_seed_spread_and_partition_correlation_by_hand():
    rows = []
    for i, p in enumerate(["m1", "m2", "m3", "m4"]):
        for seed, off in ((0, 0.0), (1, 1.0)):
            rows.append(_rec("final_iid", p, "iid", seed, 80 + i + off))
            rows.append(_rec("final_dir0p1", p, "dir0.1-norep", seed, [3, 1, 2, 4][i] + off))
    means = lbstats.final_means(pd.DataFrame(rows))
    assert lbstats.median_seed_std(means)["iid"] == pytest.approx(np.sqrt(0.5))
    (c,) = lbstats.partition_correlations(means)
    # iid order m1<m2<m3<m4; dir order m2<m3<m1<m4: pairs discordant (m1,m2), (m1,m3) -> tau = (4 - 2) / 6
    assert c["value"] == pytest.approx(2 / 6) and c["n"] == 4
