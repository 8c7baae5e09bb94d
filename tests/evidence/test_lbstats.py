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


def test_a_continued_rho0_cell_serves_the_ablation_too():
    """The rho = 0 twin of a pick is often one of the continued cells (same settings, same run id): it is then both
    a continuation and an ablation record, and each stage's reading sees it."""
    shared = _rec("cont_iid;ablation_iid", "fedsam", "iid", 0, 80, hparams={"rho": 0.0})
    runs = pd.DataFrame([shared, _rec("cont_iid", "fedsam", "iid", 0, 82, hparams={"rho": 0.05})])
    assert lbstats.stages_of("cont_iid;ablation_iid") == ["continuation", "ablation"]
    assert len(lbstats.stage_runs(runs, "continuation")) == 2 and len(lbstats.stage_runs(runs, "ablation")) == 1
    assert lbstats.stage_counts(runs)["runs"].to_dict() == {"continuation": 2, "ablation": 1}


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
        rows += [_rec("final_iid", "fedavg", "iid", seed, 90.0 + 0.1 * seed), _rec("final_iid", "fedsam", "iid", seed, 90.05 + 0.1 * seed),
                 _rec("final_iid", "fedprox", "iid", seed, 85.0)]
    rows += [_rec("final_iid", "scaffold", "iid", 0, 99.0), _rec("final_iid", "scaffold", "iid", 1, 0, status="diverged"),
             _rec("final_iid", "moon", "iid", 0, 50.0), _rec("final_iid", "moon", "iid", 1, 0, status="diverged")]
    r = lbstats.primary_ranks(pd.DataFrame(rows)).set_index("preset")
    assert r.loc["fedsam", "rank"] == 1 and r.loc["fedavg", "rank"] == 2 and r.loc["fedprox", "rank"] == 3
    assert r.loc["scaffold", "rank"] == 4 and r.loc["moon", "rank"] == 5  # best completed seed of all, still below c
    assert r.loc["fedavg", "band"] == r.loc["fedsam", "band"] == 1 and r.loc["fedprox", "band"] == 2
    assert r.loc["scaffold", "mean"] == pytest.approx(99.0)


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


def test_continuation_choice_is_the_best_full_horizon_cell_and_never_a_diverged_one():
    rows = [  # dir0.1: the screen's second cell wins at the full horizon; a better-scoring cell diverged on seed 1
        _rec("cont_dir0p1", "fedsam", "dir0.1", 0, 70.0, lr=0.3, hparams={"rho": 0.05}),
        _rec("cont_dir0p1", "fedsam", "dir0.1", 0, 72.0, lr=0.1, hparams={"rho": 0.01}),
        _rec("cont_dir0p1", "fedsam", "dir0.1", 1, 71.0, lr=0.1, hparams={"rho": 0.01}),
        _rec("cont_dir0p1", "fedsam", "dir0.1", 0, 99.0, lr=1.0, hparams={"rho": 0.0}),
        _rec("cont_dir0p1", "fedsam", "dir0.1", 1, 0, lr=1.0, hparams={"rho": 0.0}, status="diverged"),
        _rec("cont_iid", "fedavg", "iid", 0, 0, lr=1.0, status="diverged"),  # every continued cell diverged
        _rec("cont_iid", "fedavg", "iid", 0, 80.0, lr=0.3),  # tie with lr 0.1: the smaller lr is picked
        _rec("cont_iid", "fedavg", "iid", 0, 80.0, lr=0.1),
        _rec("cont_dir0p1", "fedavg", "dir0.1", 0, 0, lr=0.1, status="diverged"),
    ]
    ch = lbstats.continuation_choices(pd.DataFrame(rows)).set_index(["partition", "preset"])
    sam = ch.loc[("dir0.1", "fedsam")]
    assert sam["lr"] == 0.1 and sam["params"] == {"rho": 0.01} and sam["score"] == pytest.approx(71.5)
    assert sam["continued"] == 3 and sam["diverged"] == 1
    assert ch.loc[("iid", "fedavg"), "lr"] == 0.1 and np.isnan(ch.loc[("dir0.1", "fedavg"), "lr"])


def test_ablation_verdict_against_the_final_seed_spread():
    rows = [_rec("cont_iid", "fedsam", "iid", 0, 80.0, lr=0.1, hparams={"rho": 0.05}),
            _rec("ablation_iid", "fedsam", "iid", 0, 78.0, lr=0.1, hparams={"rho": 0.0}),
            _rec("cont_iid", "fedgamma", "iid", 0, 80.0, lr=0.1, hparams={"rho": 0.05}),
            _rec("ablation_iid", "fedgamma", "iid", 0, 81.0, lr=0.1, hparams={"rho": 0.0}),
            _rec("cont_iid", "fedsmoo", "iid", 0, 80.0, lr=0.1, hparams={"rho": 0.05}),
            _rec("ablation_iid", "fedsmoo", "iid", 0, 83.0, lr=0.1, hparams={"rho": 0.0}),
            _rec("cont_iid", "fedasam", "iid", 0, 80.0, lr=0.1, hparams={"rho": 0.1}),
            _rec("cont_iid;ablation_iid", "fedasam", "iid", 0, 0, lr=0.1, hparams={"rho": 0.0}, status="diverged")]
    for seed, off in ((0, 0.0), (1, 2.0)):  # final seed std: sqrt(2) = 1.41 for each method
        rows += [_rec("final_iid", m, "iid", seed, 85.0 + off) for m in ("fedsam", "fedgamma", "fedsmoo", "fedasam")]
    v = lbstats.ablation_verdicts(pd.DataFrame(rows)).set_index("preset")
    assert v.loc["fedsam", "delta"] == pytest.approx(2.0) and v.loc["fedsam", "std"] == pytest.approx(np.sqrt(2))
    assert v.loc["fedsam", "verdict"] == "the ascent helps"  # +2.00 > 1.41
    assert v.loc["fedgamma", "verdict"] == "within the seed spread"  # -1.00
    assert v.loc["fedsmoo", "verdict"] == "ρ = 0 is better"  # -3.00 < -1.41
    # the twin (a continued cell too) diverged where the pick completed: the ascent is what keeps it stable
    assert v.loc["fedasam", "verdict"] == "ρ = 0 diverged" and np.isnan(v.loc["fedasam", "delta"])
    # the twin is, by an exact reduction, another ranked method (algorithms.reductions.RHO0)
    assert v["same_as"].to_dict() == {"fedasam": "fedavg", "fedgamma": "scaffold", "fedsam": "fedavg", "fedsmoo": "feddyn"}


def test_reduction_pairs_match_the_base_cell_at_the_same_lr_and_shared_keys():
    s = "tune_dir0p3_x"
    runs = pd.DataFrame([
        _rec(s, "fedsam", "dir0.3", 0, 80.0, lr=0.3, hparams={"rho": 0.0}),
        _rec(s, "fedavg", "dir0.3", 0, 80.0, lr=0.3),                              # identical: delta 0
        _rec(s, "fedsam", "dir0.3", 0, 81.0, lr=0.3, hparams={"rho": 0.05}),        # the ascent on: no pair
        _rec(s, "fedsam", "dir0.3", 0, 0, lr=0.1, hparams={"rho": 0.0}, status="diverged"),
        _rec(s, "fedavg", "dir0.3", 0, 79.0, lr=0.1),                              # statuses differ
        _rec(s, "fedspeed", "dir0.3", 0, 77.5, lr=0.1, hparams={"rho": 0.0, "alpha": 0.1}),
        _rec(s, "feddyn", "dir0.3", 0, 77.0, lr=0.1, hparams={"alpha": 0.1}),      # +0.5
        _rec(s, "feddyn", "dir0.3", 0, 70.0, lr=0.1, hparams={"alpha": 0.01}),     # another alpha: no pair
        _rec("cont_iid", "fedavg", "iid", 0, 80.0, lr=0.3),                         # another stage: no pair
        _rec(s, "fedavg", "dir0.3", 1, 75.0, lr=0.3)])                             # another seed: no pair
    p = lbstats.reduction_pairs(runs).set_index(["preset", "lr"])
    assert len(p) == 3
    assert p.loc[("fedsam", 0.3), "delta"] == 0.0 and p.loc[("fedspeed", 0.1), "delta"] == pytest.approx(0.5)
    assert p.loc[("fedsam", 0.1), ["status", "base_status"]].tolist() == ["diverged", "completed"]
    assert np.isnan(p.loc[("fedsam", 0.1), "delta"])


def test_flatness_accuracy_by_hand():
    """Five methods on IID: lambda_max falls as accuracy rises (rho = -1), the flatness distance rises with it
    (rho = +1) and a diverged seed removes e's accuracy (n = 4); m1-m3 picked lr 0.1, the modal lr, so that
    subset is reported too. Curvature averages the completed seeds only."""
    rows = []
    for i, (p, lr) in enumerate([("m1", 0.1), ("m2", 0.1), ("m3", 0.1), ("m4", 0.3), ("e", 0.3)]):
        for seed in (0, 1):
            r = _rec("final_iid", p, "iid", seed, 80.0 + i, lr=lr,
                     status="diverged" if (p, seed) == ("e", 1) else "completed")
            r.update({"lambda_max": 10.0 - i + (0.0 if seed == 0 else 0.5), "flatness_mean": 1.0 + i})
            rows.append(r)
    f = lbstats.flatness_accuracy(pd.DataFrame(rows)).set_index(["measure", "subset"])
    assert f.loc[("lambda_max", "all"), "r"] == pytest.approx(-1.0) and f.loc[("lambda_max", "all"), "n"] == 4
    assert f.loc[("flatness", "all"), "r"] == pytest.approx(1.0) and f.loc[("flatness", "all"), "left_out"] == 1
    assert f.loc[("lambda_max", "lr = 0.1"), "n"] == 3


def test_picks_against_the_screens_best_cell():
    """FedSAM's full-horizon pick on IID is its screen's best cell; on Dir(0.1) the second continued cell wins,
    so the horizon changed the choice; FedAvg has no stable setting on Dir(0.1), never counted as kept."""
    lb = {"methods": {"fedsam": {"rho": [0.0, 0.05]}, "fedavg": {}},
          "tuning": {"lr": [0.1, 0.3], "lr_only": [0.1, 0.3]}}
    rows = [_rec("tune_dir0p3_fedsam", "fedsam", "dir0.3", 0, 80.0, lr=0.3, hparams={"rho": 0.05}),
            _rec("tune_dir0p3_fedsam", "fedsam", "dir0.3", 0, 79.0, lr=0.1, hparams={"rho": 0.0}),
            _rec("tune_dir0p3_fedavg", "fedavg", "dir0.3", 0, 78.0, lr=0.3),
            _rec("cont_iid", "fedsam", "iid", 0, 88.0, lr=0.3, hparams={"rho": 0.05}),
            _rec("cont_iid", "fedsam", "iid", 0, 87.0, lr=0.1, hparams={"rho": 0.0}),
            _rec("cont_dir0p1", "fedsam", "dir0.1", 0, 80.0, lr=0.3, hparams={"rho": 0.05}),
            _rec("cont_dir0p1", "fedsam", "dir0.1", 0, 81.0, lr=0.1, hparams={"rho": 0.0}),
            _rec("cont_iid", "fedavg", "iid", 0, 88.0, lr=0.3),
            _rec("cont_dir0p1", "fedavg", "dir0.1", 0, 0, lr=0.3, status="diverged")]
    k = lbstats.picks_against_screen(pd.DataFrame(rows), lb).set_index(["partition", "preset"])["screen_pick"]
    assert k[("iid", "fedsam")] and not k[("dir0.1", "fedsam")]
    assert k[("iid", "fedavg")] and not k[("dir0.1", "fedavg")]


def test_final_reduction_pairs_match_seed_by_seed_on_the_named_metric():
    runs = pd.DataFrame([_rec("final_iid", "fednsam", "iid", seed, 85.0 + seed, lr=0.1, hparams={"rho": 0.0, "lam": 0.9})
                         for seed in (0, 1)] +
                        [_rec("final_iid", "fedavg_nesterov", "iid", seed, 85.0 + 2 * seed, lr=0.1, hparams={"lam": 0.9})
                         for seed in (0, 1)])
    runs.loc[runs["preset"] == "fednsam", "last10_acc"] = 50.0  # the metric read is final_acc, not last10_acc
    runs["git_commit"], runs["backend"] = "abc", "eager"
    runs.loc[(runs["preset"] == "fednsam") & (runs["seed"] == 1), "backend"] = "compile"
    p = lbstats.reduction_pairs(runs, "final", metric="final_acc").sort_values("delta")
    assert p["delta"].tolist() == [-1.0, 0.0]  # seed 1: 86 - 87; seed 0: 85 - 85; no cross-seed pair
    assert p["same_code"].tolist() == [False, True]  # seed 1's pair ran on two backends


def test_rho0_picks_are_the_picks_with_the_ascent_off():
    """A pick at rho = 0 has no twin; it names the method it then computes exactly, where a reduction holds."""
    runs = pd.DataFrame([_rec("cont_iid", "fednsam", "iid", 0, 82.0, hparams={"rho": 0.0, "lam": 0.9}),
                         _rec("cont_iid", "fednsam", "iid", 0, 81.0, hparams={"rho": 0.05, "lam": 0.9}),
                         _rec("cont_iid", "fedsam", "iid", 0, 80.0, hparams={"rho": 0.0}),
                         _rec("cont_iid", "fedsam", "iid", 0, 81.0, hparams={"rho": 0.05}),
                         _rec("cont_iid", "fedavg", "iid", 0, 83.0, lr=0.3),
                         _rec("cont_iid", "fednsam_s", "iid", 0, 80.0, hparams={"rho": 0.0, "lam": 0.9})])
    z = lbstats.rho0_picks(runs).set_index("preset")
    assert sorted(z.index) == ["fednsam", "fednsam_s"]  # fedsam picked rho = 0.05; fedavg has no radius
    assert z.loc["fednsam", "same_as"] == "fedavg_nesterov" and z.loc["fednsam_s", "same_as"] == ""
