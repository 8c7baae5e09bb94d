"""The leaderboard's evidence read by stage: stages, the screen's choices and edges, the continuation's picks,
the final runs and the rho = 0 twins as leaderboard.ranking reads them, the curvature correlations, the reduction
pairs."""
import json

import numpy as np
import pandas as pd
import pytest

from fedflat.results.leaderboard import page_records


def _rec(exp, preset, part, seed, acc, lr=0.1, hparams=None, status="completed", label=None):
    return {"experiments": exp, "preset": preset, "partition": part, "seed": seed, "lr": lr,
            "hparams": json.dumps(hparams or {}), "status": status, "final_acc": acc if status == "completed" else np.nan,
            "last10_acc": acc if status == "completed" else np.nan, "label": label or preset.upper()}


def test_stage_counts():
    runs = pd.DataFrame([_rec("tune_dir0p3_fedavg", "fedavg", "dir0.3", 0, 80), _rec("tune_dir0p3_fedavg", "fedavg", "dir0.3", 0, 0, status="diverged"),
                         _rec("final_iid", "fedavg", "iid", 0, 88), _rec("final_iid", "fedavg", "iid", 1, 10, status="collapsed")])
    c = page_records.stage_counts(runs)
    assert c.loc["screen"].tolist() == [2, 1, 1, 0] and c.loc["final"].tolist() == [2, 1, 0, 1]


def test_a_continued_rho0_cell_serves_the_ablation_too():
    """The rho = 0 twin of a pick is often one of the continued cells (same settings, same run id): it is then both
    a continuation and an ablation record, and each stage's reading sees it."""
    shared = _rec("cont_iid;ablation_iid", "fedsam", "iid", 0, 80, hparams={"rho": 0.0})
    runs = pd.DataFrame([shared, _rec("cont_iid", "fedsam", "iid", 0, 82, hparams={"rho": 0.05})])
    assert page_records.stages_of("cont_iid;ablation_iid") == ["continuation", "ablation"]
    assert len(page_records.stage_runs(runs, "continuation")) == 2 and len(page_records.stage_runs(runs, "ablation")) == 1
    assert page_records.stage_counts(runs)["runs"].to_dict() == {"continuation": 2, "ablation": 1}


def test_screen_choices_mark_edges_and_rho_zero():
    grids = {"fedsam": {"rho": [0.0, 0.01, 0.05, 0.1]}, "fedavg": {}}
    lr, lr_only = [0.03, 0.1, 0.3, 1.0], [0.03, 0.05, 0.1, 1.0]
    rows = [_rec("tune_dir0p3_fedsam", "fedsam", "dir0.3", 0, 80 + i + 10 * (rho == 0.0), lr=l, hparams={"rho": rho})
            for i, l in enumerate(lr) for rho in grids["fedsam"]["rho"]]
    rows += [_rec("tune_dir0p3_fedavg", "fedavg", "dir0.3", 0, acc, lr=l) for l, acc in zip(lr_only, [70, 75, 74, 73])]
    rows.append(_rec("tune_dir0p3_fedavg", "fedavg", "dir0.3", 0, 99, lr=0.5, status="diverged"))  # never chosen
    ch = page_records.screen_choices(pd.DataFrame(rows), grids, lr, lr_only).set_index("preset")
    assert ch.loc["fedsam", "lr"] == 1.0 and ch.loc["fedsam", "rho0"]
    assert ch.loc["fedsam", "edges"] == ["lr", "rho"]  # top of the lr grid; rho at the bottom of a 4-value grid
    assert ch.loc["fedavg", "lr"] == 0.05 and ch.loc["fedavg", "edges"] == [] and not ch.loc["fedavg", "rho0"]


def test_the_summary_ranks_the_evidence_by_the_declared_rule_and_lists_methods_without_a_pick():
    """Records name partitions with their sampler (dir0.1-norep); the summary uses the config's names and order.
    moon's every continued cell diverged on dir0.1: a row without seeds or rank."""
    lb = {"partitions": ["iid", "dir0.1"], "statistics": {"alpha": 0.05}}
    rows = []
    for seed in range(5):
        rows += [_rec("final_dir0p1", "fedavg", "dir0.1-norep", seed, 80.0 + seed),
                 _rec("final_dir0p1", "fedsam", "dir0.1-norep", seed, 81.0 + seed, hparams={"rho": 0.05}),
                 _rec("final_iid", "fedavg", "iid", seed, 90.0 + seed)]
    rows += [_rec("cont_dir0p1", "moon", "dir0.1-norep", 0, 0, status="diverged")]
    s = page_records.summary(pd.DataFrame(rows), lb)
    assert list(zip(s["partition"], s["preset"])) == [("iid", "fedavg"), ("dir0.1", "fedsam"), ("dir0.1", "fedavg"),
                                                      ("dir0.1", "moon")]
    assert s["rank"].tolist()[:3] == [1, 1, 2] and s["band"].tolist()[:3] == [1, 1, 2] and np.isnan(s["rank"].iloc[3])
    assert s["unstable"].tolist() == [False, False, False, True] and s["label"].iloc[1] == "FedSAM"


def test_twins_pair_with_the_picks_final_seeds():
    """The twin's records (test split, the final seeds; read out of order) and the pick's final runs, each by seed;
    the twin computes FedAvg (an exact reduction)."""
    rows = [_rec("final_iid", "fedsam", "iid", s, 85.0 + s, hparams={"rho": 0.05}) for s in range(5)]
    rows += [_rec("ablation_iid", "fedsam", "iid", s, 84.0 + s, hparams={"rho": 0.0}) for s in (4, 2, 0, 3)]
    rows += [_rec("ablation_iid", "fedsam", "iid", 1, 0, hparams={"rho": 0.0}, status="collapsed")]
    (t,) = page_records.twins(pd.DataFrame(rows))
    assert t["pick"] == {s: 85.0 + s for s in range(5)} and t["same_as"] == "fedavg"
    assert {s: v for s, v in t["twin"].items() if not np.isnan(v)} == {0: 84.0, 2: 86.0, 3: 87.0, 4: 88.0}
    assert np.isnan(t["twin"][1])


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
    ch = page_records.continuation_choices(pd.DataFrame(rows)).set_index(["partition", "preset"])
    sam = ch.loc[("dir0.1", "fedsam")]
    assert sam["lr"] == 0.1 and sam["params"] == {"rho": 0.01} and sam["score"] == pytest.approx(71.5)
    assert sam["continued"] == 3 and sam["diverged"] == 1
    assert ch.loc[("iid", "fedavg"), "lr"] == 0.1 and np.isnan(ch.loc[("dir0.1", "fedavg"), "lr"])


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
    p = page_records.reduction_pairs(runs).set_index(["preset", "lr"])
    assert len(p) == 3
    assert p.loc[("fedsam", 0.3), "delta"] == 0.0 and p.loc[("fedspeed", 0.1), "delta"] == pytest.approx(0.5)
    assert p.loc[("fedsam", 0.1), ["status", "base_status"]].tolist() == ["diverged", "completed"]
    assert np.isnan(p.loc[("fedsam", 0.1), "delta"])


def test_flatness_accuracy_by_hand():
    """Five methods on IID: lambda_max falls as accuracy rises (rho = -1), the flatness distance rises with it
    (rho = +1); e's diverged seed leaves its completed seed's accuracy (v3: means over the completed seeds, n = 5);
    m1-m3 picked lr 0.1, the modal lr, so that subset is reported too. Curvature averages the completed seeds."""
    rows = []
    for i, (p, lr) in enumerate([("m1", 0.1), ("m2", 0.1), ("m3", 0.1), ("m4", 0.3), ("e", 0.3)]):
        for seed in (0, 1):
            r = _rec("final_iid", p, "iid", seed, 80.0 + i, lr=lr,
                     status="diverged" if (p, seed) == ("e", 1) else "completed")
            r.update({"lambda_max": 10.0 - i + (0.0 if seed == 0 else 0.5), "flatness_mean": 1.0 + i})
            rows.append(r)
    f = page_records.flatness_accuracy(pd.DataFrame(rows)).set_index(["measure", "subset"])
    assert f.loc[("lambda_max", "all"), "r"] == pytest.approx(-1.0) and f.loc[("lambda_max", "all"), "n"] == 5
    assert f.loc[("flatness", "all"), "r"] == pytest.approx(1.0) and f.loc[("flatness", "all"), "left_out"] == 0
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
    k = page_records.picks_against_screen(pd.DataFrame(rows), lb).set_index(["partition", "preset"])["screen_pick"]
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
    p = page_records.reduction_pairs(runs, "final", metric="final_acc").sort_values("delta")
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
    z = page_records.rho0_picks(runs).set_index("preset")
    assert sorted(z.index) == ["fednsam", "fednsam_s"]  # fedsam picked rho = 0.05; fedavg has no radius
    assert z.loc["fednsam", "same_as"] == "fedavg_nesterov" and z.loc["fednsam_s", "same_as"] == ""
