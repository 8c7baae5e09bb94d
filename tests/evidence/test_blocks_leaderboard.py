"""The leaderboard page's v2 blocks rendered from complete synthetic stages in the real runs.csv format: every
method's pick per partition with its edge marks, the trial counts, the ablation verdicts, the ranking; and every
block waits while its stage is incomplete."""
from fedflat.training.algorithms import PRESETS
from fedflat.evidence import blocks_leaderboard as lb
from fedflat.pipeline.study import load_config_file

from .lb_records import REPO, V2_CONFIG, complete_rows, lb_context, lb_row


def test_choice_ablation_and_ranking_blocks_from_complete_stages(tmp_path):
    cfg = load_config_file(V2_CONFIG)["leaderboard"]
    ctx = lb_context(tmp_path, complete_rows(cfg))
    text = lb.choice(ctx)
    assert "not complete" not in text
    assert "| FedSAM | 16 + 2 |" in text and "[edge: lr]" in text
    assert "every continued cell diverged" in text and "1 (partition, method) pairs: FedAvg on IID" in text
    n = len(cfg["methods"])  # no screen records here, so every pick differs from the (absent) screen's best
    assert f"for {n - 1} of {n} methods on IID, {n} of {n} methods on Dir(0.3)" in text
    abl = lb.ablation(ctx)
    n_rho = sum("rho" in g for g in cfg["methods"].values())
    # pick 80 against its rho = 0 twin's 78: +2 points, beyond the final seeds' spread (85, 86, 87: std 1)
    assert abl.count("| IID |") == n_rho and "+2.00 | 1.00 | the ascent helps" in abl
    assert f"- IID: the ascent helps: {n_rho}." in abl
    assert "| IID | FedSAM | FedAvg | 80.00 | 78.00 |" in abl and "| IID | FedTOGA | - |" in abl  # ρ = 0 is FedAvg
    assert "FedSAM → FedAvg" in abl and "The screen holds no pair of such runs." in abl
    # complete_rows continues every base method at its grid's top lr, the twins' lr: FedAvg's diverged on IID
    # (statuses disagree), elsewhere 80 against the twins' 78
    assert "the largest difference is 2.00 points (the median 2.00)" in abl
    assert "No pick is at ρ = 0" in abl and "By code, over all " in abl
    top = lb.top(ctx)
    assert "not complete" not in top and top.count("\n") == 11  # header, rule and the top 10
    full = lb.ranking(ctx).splitlines()
    assert len(full) == 2 + len(cfg["methods"]) + 1 + len(cfg["partitions"])  # every method, then band 1 per partition
    # every completed method has the same seeds (85, 86, 87), so all share the best one's band
    head, names = full[-1].rsplit(": ", 1)
    assert head == "- Band 1 on Dir(0.1) (within the pooled seed spread of the best method)"
    assert names.endswith(f" ({len(cfg['methods'])} methods).")
    assert set(names[:names.rindex(" (")].split(", ")) == {PRESETS.get(m).label for m in cfg["methods"]}
    assert ", band 1) |" in full[2] and "band 1.0" not in "\n".join(full)  # bands print as integers
    # FedAvg had no stable setting on IID: it ranks below every method that ran there
    assert next(r for r in full if r.startswith("| FedAvg |")).split(" | ")[1] == f"no stable setting ({len(cfg['methods']):g})"
    stats = lb.statistics(ctx)
    assert "median seed std of final accuracy, IID | 1.00 points" in stats
    n_pairs = len(cfg["methods"]) * len(cfg["partitions"])
    assert f"(every continued cell diverged; no final run) | 1 of {n_pairs} |" in stats  # FedAvg on IID
    # no Hessian in these records: the curvature rows are there, undefined, and counted
    assert "| Spearman ρ(λ_max, final accuracy), IID, all methods | - [-, -], n = 0 |" in stats
    assert "9 correlations are reported here (3 between partitions, 6 of curvature against accuracy)" in stats


def test_blocks_wait_for_an_incomplete_stage(tmp_path):
    ctx = lb_context(tmp_path, [lb_row("cont", "iid", "fedsam", "FedSAM", 0.1, {"rho": 0.05}, 0, 80.0)])
    cfg = load_config_file(V2_CONFIG)["leaderboard"]
    cells = len(cfg["methods"]) * cfg["tuning"]["continuation"]["cells"] * len(cfg["partitions"])
    assert lb.choice(ctx).startswith(f"The continuation is not complete in the evidence (1 of {cells}")
    assert lb.ablation(ctx).startswith("The ablation stage is not complete in the evidence (0 runs; how many")
    assert lb.top(ctx).startswith("The final stage is not complete in the evidence (0 runs; how many")


def test_ranking_waits_for_the_last_final_run(tmp_path):
    """A partial final stage never renders a partial ranking: one missing run of 3 x 164 keeps every
    final-stage block waiting, with the count."""
    cfg = load_config_file(V2_CONFIG)["leaderboard"]
    ctx = lb_context(tmp_path, complete_rows(cfg, drop_final=1))
    n = (len(cfg["methods"]) * len(cfg["partitions"]) - 1) * len(cfg["seeds"])
    assert lb.top(ctx).startswith(f"The final stage is not complete in the evidence ({n - 1} of {n} runs)")
    assert lb.statistics(ctx).startswith("The final stage is not complete")
    assert lb.ablation(ctx).startswith("The final stage is not complete")
    assert lb.stage_totals(ctx.evidence("leaderboard").runs(), cfg)["ablation"][1] == (
        sum("rho" in g for g in cfg["methods"].values()) * len(cfg["partitions"]))


def test_status_counts_superseded_runs_apart(tmp_path):
    """Runs made at a pick since corrected sit in superseded.csv: the status block says how many, per stage, and
    keeps them out of every stage count."""
    import pandas as pd

    from fedflat.evidence.records import COLUMNS

    ctx = lb_context(tmp_path, [lb_row("final", "iid", "fedsam", "FedSAM", 0.1, {"rho": 0.05}, 0, 80.0)])
    assert "superseded" not in lb.status(ctx)
    gone = [lb_row("final", "iid", "fednsam", "FedNSAM", 0.1, {"lam": 0.7}, s, 81.0) for s in (0, 1)]
    gone.append(lb_row("ablation", "iid", "fednsam", "FedNSAM", 0.1, {"lam": 0.7, "rho": 0.0}, 0, 80.0))
    pd.DataFrame(gone, columns=list(COLUMNS)).to_csv(tmp_path / "results/evidence/leaderboard/superseded.csv", index=False)
    text = lb.status(ctx)
    assert "| final | 1 | 1 | 0 |" in text and "3 runs made at a pick since corrected (2 final, 1 ablation;" in text


def test_figures_block_links_the_committed_pngs_once_all_four_are_there(tmp_path):
    from fedflat.results.leaderboard.protocol import FIGURES

    ctx = lb_context(tmp_path, [])
    out = tmp_path / "figures/evidence/leaderboard"
    out.mkdir(parents=True)
    names = list(FIGURES)
    for name in names[:-1]:
        (out / f"{name}.png").write_bytes(b"png")
    assert lb.figures(ctx).startswith(f"Not in the committed evidence yet ({names[-1]})")
    (out / f"{names[-1]}.png").write_bytes(b"png")
    text = lb.figures(ctx)
    assert text.count("![") == 4 and f"(../figures/evidence/leaderboard/{names[0]}.png)" in text


def test_reduction_pairs_are_split_by_the_code_that_ran_them():
    """An exact reduction predicts identical numbers only where the same commit and backend ran both runs."""
    import pandas as pd

    pairs = pd.DataFrame([
        {"status": "completed", "base_status": "completed", "delta": 0.0, "same_code": True},
        {"status": "diverged", "base_status": "diverged", "delta": float("nan"), "same_code": True},
        {"status": "completed", "base_status": "completed", "delta": 0.0, "same_code": False},
        {"status": "completed", "base_status": "completed", "delta": -1.25, "same_code": False},
        {"status": "diverged", "base_status": "completed", "delta": float("nan"), "same_code": False}])
    text = lb._by_code_line(pairs)
    assert text.startswith("By code, over all 5 such pairs")
    assert "the 2 whose runs share the commit and the backend agree in status in 2 and are identical in 1 of the 1 " \
           "that both completed;" in text
    assert "agree in status in 2 and are identical in 1 of the 2 that both completed (the largest difference 1.25 " \
           "points)." in text
