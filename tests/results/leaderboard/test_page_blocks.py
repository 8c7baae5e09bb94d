"""The leaderboard page's v3 blocks rendered from complete synthetic stages in the real runs.csv format (five paired
final seeds, the rho = 0 twins on the same seeds): the choice, the ranking with its intervals, stability and bands,
the stability block, the ablation's paired verdicts, the statistics; every block waits while its stage is
incomplete."""
import pytest

from fedflat.results.leaderboard import page_verdicts as lbv
from fedflat.results.leaderboard import page_blocks as lb
from fedflat.pipeline.study import load_config_file

from .page_evidence import V3_CONFIG, complete_rows, lb_context, lb_row


@pytest.fixture(scope="module")
def cfg():
    return load_config_file(V3_CONFIG)["leaderboard"]


def _acc(preset, part, seed):
    """FedNSAM 1 point above the rest on every seed; FedSAM: seed 1 diverged, seed 3 collapsed (its three others
    average 87, above everyone); FedGAMMA: every seed failed."""
    if preset == "fedsam" and seed in (1, 3):
        return None if seed == 1 else "collapsed"
    if preset == "fedgamma":
        return None
    return (86.0 if preset == "fednsam" else 85.0) + seed


def _row(text: str, start: str) -> str:
    return next(r for r in text.splitlines() if r.startswith(start))


def test_choice_ranking_and_stability_blocks_from_complete_stages(tmp_path, cfg):
    ctx = lb_context(tmp_path, complete_rows(cfg, final_acc=_acc, rho0={("fednsam_s", "iid")}))
    text = lb.choice(ctx)
    assert "not complete" not in text
    assert "| FedSAM | 16 + 2 |" in text and "[edge: lr]" in text
    assert "every continued cell diverged" in text and "1 (partition, method) pairs: FedAvg on IID" in text
    rank = lb.ranking(ctx)
    iid = rank.split("**Dir(0.3)**")[0]
    assert _row(iid, "| 1 | FedNSAM |") == "| 1 | FedNSAM | 88.00 [86.04, 89.96] | 5/5 | 1 | lr=1, ρ=0.01, λ=0.9 |"
    # FedSAM's 3 completed seeds (85, 87, 89): ranked by their mean, its stability beside it
    assert "| FedSAM | 87.00 [82.03, 91.97] | 3/5 |" in iid
    # every other completed method is exactly 1 point below FedNSAM on every seed: band 2 (paired sd 0)
    assert next(r for r in iid.splitlines() if "| FedProx |" in r).endswith("| 5/5 | 2 | lr=1, μ=0.01 |")
    # FedGAMMA: every seed failed; FedAvg: no pick on IID: no rank, no band, at the bottom
    assert "| - | FedGAMMA | no stable setting | 0/5 | - |" in iid and "| - | FedAvg | no stable setting | no pick | - |" in iid
    rows = [r for r in iid.splitlines() if r.startswith("| ") and not r.startswith("| rank")]
    assert [r.split(" | ")[1] for r in rows[-2:]] == ["FedAvg", "FedGAMMA"]  # last, by preset name
    assert next(r for r in iid.splitlines() if "| FedNSAM-S |" in r).endswith("λ=0.9 (ρ = 0: the ascent off) |")
    assert "Band 1 on IID (its head and every method not significantly below it after Holm's correction): FedNSAM " \
           "(1 method)." in rank
    top = lb.top(ctx)
    assert top.count("\n") == 11 and "| FedNSAM | 88.00 [86.04, 89.96] (rank 1, band 1, 5/5) |" in top
    stab = lb.stability(ctx)
    n = len(cfg["methods"])
    assert f"- {n - 3} of {n} methods completed every final seed on every partition." in stab
    assert ("- IID: 7 of 280 final runs failed (6 diverged, 1 collapsed) in 2 methods; 1 method without a pick; "
            "1 method with a pick and no completed seed.") in stab
    assert "| FedSAM | 3/5: seed 1 diverged (round 120); seed 3 collapsed |" in stab
    assert "| FedAvg | no pick | 5/5 | 5/5 |" in stab


def test_the_ablation_is_paired_over_the_final_seeds_with_holm_over_every_twin(tmp_path, cfg):
    """Every pick 1 point above its twin on every seed (85 + s against 84 + s): the ascent helps everywhere, except
    where FedSAM's pick lost two seeds (still 3 paired, +1: helps) and FedGAMMA's every seed (not testable)."""
    ctx = lb_context(tmp_path, complete_rows(cfg, final_acc=_acc))
    abl = lbv.ablation(ctx)
    n_rho = sum("rho" in g for g in cfg["methods"].values())
    assert abl.count("| IID |") == n_rho
    assert "| IID | FedSAM | FedAvg | 3/5 | 5/5 | 3 | +1.00 [+1.00, +1.00] | 0 | ascent helps |" in abl
    assert "| IID | FedNSAM | FedAvg+Nesterov | 5/5 | 5/5 | 5 | +2.00 [+2.00, +2.00] | 0 | ascent helps |" in abl
    assert "| IID | FedGAMMA | SCAFFOLD | 0/5 | 5/5 | 0 | - | - | not testable |" in abl
    assert f"- IID: ascent helps {n_rho - 1}, not testable 1 (of {n_rho} twins)." in abl
    assert "FedSAM → FedAvg" in abl and "The screen holds no pair of such runs." in abl
    assert "No pick is at ρ = 0" in abl and "By code, over all " in abl


def test_statistics_block_from_complete_stages(tmp_path, cfg):
    ctx = lb_context(tmp_path, complete_rows(cfg, final_acc=_acc))
    stats = lbv.statistics(ctx)
    # every complete pair differs by a constant (paired sd 0): nothing smaller is missed
    assert "| power, IID: the smallest mean paired difference detected with 80 % power (α = 0.05, 5 seeds" in stats
    # FedAvg (no pick on IID) is absent from the IID blocks: left out of the Friedman test
    assert "| left out of the Friedman test (absent from a block: no pick on a partition) | FedAvg |" in stats
    k = len(cfg["methods"]) - 1
    assert f"| Friedman test over 15 (partition, seed) blocks, {k} methods" in stats
    assert "| not significantly different from the best mean rank (FedNSAM, " in stats
    # no Hessian in these records: the curvature rows are there, undefined
    assert "| Spearman ρ(λ_max, final accuracy), IID, all methods | - [-, -], n = 0: undefined |" in stats
    assert "9 correlations are reported here (3 between partitions, 6 of curvature against accuracy" in stats


def test_statistics_say_no_detectable_correlation_where_the_interval_contains_zero(tmp_path, cfg):
    """Accuracy and lambda_max drawn independently per method (fixed seeds, so the draw is the same in every process:
    never str hash(), which PYTHONHASHSEED randomises): the bootstrap interval covers 0."""
    import numpy as np

    acc = dict(zip(cfg["methods"], np.random.default_rng(1).uniform(0, 7, len(cfg["methods"]))))
    rows = complete_rows(cfg, final_acc=lambda preset, part, seed: 80.0 + acc[preset] + 0.1 * seed)
    rng = np.random.default_rng(0)
    lam = {p: rng.uniform(1, 10) for p in cfg["methods"]}
    for r in rows:
        if r["experiments"].startswith("final_") and r["status"] == "completed":
            r["lambda_max"] = lam[r["preset"]]
    stats = lbv.statistics(lb_context(tmp_path, rows))
    line = _row(stats, "| Spearman ρ(λ_max, final accuracy), IID, all methods |")
    lo, hi = (float(x) for x in line.split("[")[1].split("]")[0].split(", "))
    assert lo <= 0 <= hi and line.endswith(": no detectable correlation |")


def test_blocks_wait_for_an_incomplete_stage(tmp_path, cfg):
    ctx = lb_context(tmp_path, [lb_row("cont", "iid", "fedsam", "FedSAM", 0.1, {"rho": 0.05}, 0, 80.0)])
    cells = len(cfg["methods"]) * cfg["tuning"]["continuation"]["cells"] * len(cfg["partitions"])
    assert lb.choice(ctx).startswith(f"The continuation is not complete in the evidence (1 of {cells}")
    assert lbv.ablation(ctx).startswith("The ablation stage is not complete in the evidence (0 runs; how many")
    for block in (lb.top, lb.ranking, lb.stability, lbv.claims, lbv.statistics):
        assert block(ctx).startswith("The final stage is not complete in the evidence (0 runs; how many")


def test_ranking_waits_for_the_last_final_run_and_the_ablation_counts_five_seeds_per_twin(tmp_path, cfg):
    """A partial final stage never renders a partial ranking: one missing run keeps every final-stage block
    waiting, with the count; the ablation stage expects the final seeds for every twin (v3)."""
    ctx = lb_context(tmp_path, complete_rows(cfg, drop_final=1))
    n = (len(cfg["methods"]) * len(cfg["partitions"]) - 1) * len(cfg["seeds"])
    assert lb.top(ctx).startswith(f"The final stage is not complete in the evidence ({n - 1} of {n} runs)")
    assert lbv.statistics(ctx).startswith("The final stage is not complete")
    assert lbv.ablation(ctx).startswith("The final stage is not complete")
    n_twins = sum("rho" in g for g in cfg["methods"].values()) * len(cfg["partitions"])
    assert lb.stage_totals(ctx.evidence("leaderboard").runs(), cfg)["ablation"] == (5 * n_twins, 5 * n_twins)


def test_status_counts_collapsed_runs_and_superseded_runs_apart(tmp_path):
    """Runs made at a pick since corrected sit in superseded.csv: the status block says how many, per stage, and
    keeps them out of every stage count; a collapsed run has its own column."""
    import pandas as pd

    from fedflat.evidence.records import COLUMNS

    ctx = lb_context(tmp_path, [lb_row("final", "iid", "fedsam", "FedSAM", 0.1, {"rho": 0.05}, 0, 80.0),
                                lb_row("final", "iid", "fedsam", "FedSAM", 0.1, {"rho": 0.05}, 1, None, "collapsed")])
    assert "superseded" not in lb.status(ctx)
    gone = [lb_row("final", "iid", "fednsam", "FedNSAM", 0.1, {"lam": 0.7}, s, 81.0) for s in (0, 1)]
    gone.append(lb_row("ablation", "iid", "fednsam", "FedNSAM", 0.1, {"lam": 0.7, "rho": 0.0}, 0, 80.0))
    pd.DataFrame(gone, columns=list(COLUMNS)).to_csv(tmp_path / "results/evidence/leaderboard/superseded.csv", index=False)
    text = lb.status(ctx)
    assert "| final | 2 | 1 | 0 | 1 |" in text and "3 runs made at a pick since corrected (2 final, 1 ablation;" in text


def test_figures_block_links_the_committed_pngs_once_all_are_there(tmp_path):
    from fedflat.results.leaderboard.protocol import FIGURES

    assert "critical_difference" in FIGURES
    ctx = lb_context(tmp_path, [])
    out = tmp_path / "figures/evidence/leaderboard"
    out.mkdir(parents=True)
    names = list(FIGURES)
    for name in names[:-1]:
        (out / f"{name}.png").write_bytes(b"png")
    assert lb.figures(ctx).startswith(f"Not in the committed evidence yet ({names[-1]})")
    (out / f"{names[-1]}.png").write_bytes(b"png")
    text = lb.figures(ctx)
    assert text.count("![") == len(FIGURES) and f"(../figures/evidence/leaderboard/{names[0]}.png)" in text


def test_reduction_pairs_are_split_by_the_code_that_ran_them():
    """An exact reduction predicts identical numbers only where the same commit and backend ran both runs."""
    import pandas as pd

    pairs = pd.DataFrame([
        {"status": "completed", "base_status": "completed", "delta": 0.0, "same_code": True},
        {"status": "diverged", "base_status": "diverged", "delta": float("nan"), "same_code": True},
        {"status": "completed", "base_status": "completed", "delta": 0.0, "same_code": False},
        {"status": "completed", "base_status": "completed", "delta": -1.25, "same_code": False},
        {"status": "diverged", "base_status": "completed", "delta": float("nan"), "same_code": False}])
    text = lbv._by_code_line(pairs)
    assert text.startswith("By code, over all 5 such pairs")
    assert "the 2 whose runs share the commit and the backend agree in status in 2 and are identical in 1 of the 1 " \
           "that both completed;" in text
    assert "agree in status in 2 and are identical in 1 of the 2 that both completed (the largest difference 1.25 " \
           "points)." in text
