"""What changed against v1: v1's published ranks (transcribed from its pages at ec8faef) against v2's primary ranks
among v1's own methods, with the marks that say why a rank moved."""
import shutil

import pandas as pd
import pytest

from fedflat.evidence import blocks_leaderboard as lb
from fedflat.evidence import lbv1
from fedflat.pipeline.study import load_config_file

from .lb_records import REPO, V2_CONFIG, complete_rows, lb_context, lb_row

V1 = REPO / "results/evidence/leaderboard_v1"


def test_the_transcription_gives_v1s_published_mean_ranks():
    """README.md@ec8faef printed each top-10 method's mean rank over the three partitions (and the reference
    methods' to one decimal): the transcribed ranks must give them back."""
    v1 = pd.read_csv(V1 / "published_ranks.csv")
    mean = v1.groupby("label")["v1_rank"].mean()
    published = {"FedTOGA": 1.67, "FedACG": 4.33, "FedSpeed": 5.33, "FedAvg+Nesterov": 7.67, "FedSAM+Nesterov": 7.83,
                 "FedNSAM-D": 8.00, "FedNSAM": 9.33, "FedSAGD": 12.50, "MoFedSAM": 14.67, "FedCM": 16.33,
                 "FedAvg": 31.7, "FedSAM": 31.0, "FedSOL": 33.3, "FedSynSAM": 34.0}
    for label, value in published.items():
        assert mean[label] == pytest.approx(value, abs=0.051), label
    assert len(v1) == 3 * v1["preset"].nunique() == 63
    methods = pd.read_csv(V1 / "ranked_methods.csv")["preset"]
    cfg = load_config_file(V2_CONFIG)["leaderboard"]
    assert len(methods) == 50 and set(methods) <= set(cfg["methods"]) and set(v1["preset"]) <= set(methods)


def _context(tmp_path):
    cfg = load_config_file(V2_CONFIG)["leaderboard"]
    order = sorted(cfg["methods"])
    # a distinct mean per method: the later in alphabetical order, the higher
    rows = complete_rows(cfg, final_acc=lambda preset, part, seed: 80.0 + 0.1 * order.index(preset) + 0.01 * seed)
    top = max(cfg["tuning"]["lr"])
    fedsam = {k: v[1] for k, v in cfg["methods"]["fedsam"].items()}
    nest = {k: v[1] for k, v in cfg["methods"]["fedavg_nesterov"].items()}
    # the screen: FedSAM's best 50-round cell is its pick's; FedAvg+Nesterov's is at another lr
    rows += [lb_row("tune", "dir0.3-norep", "fedsam", "FEDSAM", top, fedsam, 0, 70.0),
             lb_row("tune", "dir0.3-norep", "fedavg_nesterov", "FEDAVG_NESTEROV", 0.1, nest, 0, 70.0)]
    rows = [{**r, "partition": {"dir0.3": "dir0.3-norep", "dir0.1": "dir0.1-norep"}.get(r["partition"], r["partition"])}
            for r in rows]
    ctx = lb_context(tmp_path, rows)
    shutil.copytree(V1, tmp_path / "results/evidence/leaderboard_v1")
    return ctx, cfg, order


def test_moves_rank_v2_among_v1s_methods_and_mark_why(tmp_path):
    ctx, cfg, order = _context(tmp_path)
    m = lbv1.moves(ctx.evidence("leaderboard").runs(), lbv1.published(ctx), lbv1.methods(ctx), cfg)
    m = m.set_index(["preset", "partition"])
    v1_methods = lbv1.methods(ctx)
    ran = sorted((p for p in v1_methods), key=order.index, reverse=True)  # best first
    # Dir(0.3): every v1 method ran; FedTOGA's place among v1's 50 (the five 2025 methods left out)
    assert m.loc[("fedtoga", "dir0.3-norep"), "v2_rank"] == ran.index("fedtoga") + 1
    assert m.loc[("fedtoga", "dir0.3-norep"), "up"] == 1 - (ran.index("fedtoga") + 1)
    # IID: FedAvg had no stable setting, so it is last among the 50 and every method below it moves up one
    assert m.loc[("fedavg", "iid"), "v2_rank"] == 50 and m.loc[("fedavg", "iid"), "v2_unstable"]
    assert m.loc[("fedtoga", "iid"), "v2_rank"] == ran.index("fedtoga") + 1  # FedAvg ranked below it anyway
    assert m.loc[("fedsam", "dir0.3-norep"), "screen_pick"]
    assert not m.loc[("fedavg_nesterov", "dir0.3-norep"), "screen_pick"]
    text = lb.v1(ctx)
    assert "| FedAvg | 23 → 50 (no stable setting) (-27) |" in text
    assert "88.09" not in text and "13 ↓ → " in text  # FedSAGD's Dir(0.3) rank rested on the fallback
    row = next(line for line in text.splitlines() if line.startswith("| FedAvg+Nesterov |"))
    assert row.count("†") == 3  # its pick is not the screen's best cell on any partition
    assert "Kendall τ, v1 vs v2 ranks, IID:" in text and "n = 21" in text


def test_the_comparison_waits_for_the_final_stage(tmp_path):
    cfg = load_config_file(V2_CONFIG)["leaderboard"]
    ctx = lb_context(tmp_path, complete_rows(cfg, drop_final=1))
    shutil.copytree(V1, tmp_path / "results/evidence/leaderboard_v1")
    assert lb.v1(ctx).startswith("The final stage is not complete in the evidence")
