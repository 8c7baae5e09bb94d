"""Rounds-to-target, mean ± std and published-value parsing on fabricated metric files."""
import json

import pandas as pd
import pytest

from fedflat.core.errors import ConfigError
from fedflat.results.papers.published import parse_published
from fedflat.results.papers.cell_stats import mean_std, rounds_metric, rounds_to_target, summary_metric


def _run(tmp_path, name, rounds, accs, status="completed"):
    d = tmp_path / name
    d.mkdir()
    pd.DataFrame({"round": rounds, "test_acc": accs}).to_csv(d / "metrics.csv", index=False)
    evals = [a for a in accs if a == a]
    (d / "summary.json").write_text(json.dumps({
        "status": status, "rounds_completed": rounds[-1], "final_acc": evals[-1] if status == "completed" else None,
        "last10_acc": evals[-1], "best_acc": max(evals), "train_time": 10.0, "up_bytes_total": 4_000_000}))
    return str(d)


def test_rounds_to_target_uses_seed_mean_curve(tmp_path):
    a = _run(tmp_path, "a", [1, 2, 3, 4], [0.50, 0.70, 0.80, 0.90])
    b = _run(tmp_path, "b", [1, 2, 3, 4], [0.50, 0.60, 0.70, 0.90])
    v = rounds_metric([a, b], 75.0, horizon=4)
    # mean curve 50, 65, 75, 90 -> first >= 75% at round 3; per seed: 3 and 4
    assert (v.mean, v.never, v.per_seed) == (3.0, False, [3, 4])
    assert v.text(rounds=True) == "3"


def test_rounds_never_reached_is_T_plus(tmp_path):
    a = _run(tmp_path, "a", [2, 4, 6], [0.2, 0.4, 0.549])
    v = rounds_metric([a], 55.0, horizon=6)
    assert v.never and v.text(rounds=True) == "6+"


def test_rounds_only_counts_evaluated_rounds():
    c = pd.DataFrame({"round": [1, 2, 3, 4], "test_acc": [0.1, float("nan"), 0.6, 0.7]})
    assert rounds_to_target([c], 55.0, 4).mean == 3.0
    assert rounds_to_target([c], 5.0, 4).mean == 1.0


def test_mean_std_is_sample_std_and_skips_missing():
    m, s, n = mean_std([80.0, 82.0, None, 84.0])
    assert (m, n) == (82.0, 3) and s == pytest.approx(2.0)
    assert mean_std([70.0]) == (70.0, 0.0, 1)
    assert mean_std([]) == (None, None, 0)


def test_summary_metric_excludes_diverged_seed(tmp_path):
    a = _run(tmp_path, "a", [1, 2], [0.5, 0.80])
    b = _run(tmp_path, "b", [1, 2], [0.5, 0.84])
    c = _run(tmp_path, "c", [1, 2], [0.5, 0.1], status="diverged")
    v = summary_metric([a, b, c], "acc")
    assert (v.n, v.seeds, v.diverged) == (2, 3, 1)
    assert v.mean == pytest.approx(82.0) and v.std == pytest.approx(2 * 2 ** 0.5)  # sample std of 80, 84
    assert v.text() == "82.00±2.83 [1/3 diverged]"
    best = summary_metric([a, b, c], "best_acc")  # top-over-rounds: a diverged run's peak still counts
    assert best.n == 3 and best.mean == pytest.approx((80 + 84 + 50) / 3)


@pytest.mark.parametrize("raw,mean,std,never", [
    ("79.63±0.27", 79.63, 0.27, False), ("96.16 (0.19)", 96.16, 0.19, False), ("1000+", 1000.0, None, True),
    (81.39, 81.39, None, False), ("10.00 (Failed)", 10.0, None, False), ("81.02 ± 0.44", 81.02, 0.44, False)])
def test_parse_published(raw, mean, std, never):
    p = parse_published(raw)
    assert (p.mean, p.std, p.never) == (mean, std, never)


def test_parse_published_missing_and_bad():
    assert parse_published("-").missing and parse_published(None).missing
    with pytest.raises(ConfigError, match="cannot read"):
        parse_published("about 80")


def test_a_file_metric_header_names_its_quantity_not_its_json_key():
    from fedflat.results.papers.cell_stats import metric_header

    assert metric_header("file:hessian_clients.json:lambda_max_mean") == "λ_max"
    assert metric_header("file:hessian_r300_train.json:trace") == "trace"
    assert metric_header("file:other.json:ratio") == "ratio"
    assert metric_header("last10_acc") == "Acc (last 10%)"


def _manifest(tmp_path, published):
    d = str(tmp_path / "r0") if (tmp_path / "r0").exists() else _run(tmp_path, "r0", [1, 2], [0.5, 0.8])
    return {"name": "t", "ref": "Diag", "title": "T", "scale": {}, "published": published,
            "columns": [{"group": "Q4", "metric": "acc"}], "rows": [{"label": "FedAvg", "not_run": None}],
            "cells": [[[{"seed": 0, "dir": d}]]]}


def test_a_table_of_our_own_shows_no_empty_paper_or_delta_column_and_claims_no_scale(tmp_path):
    from fedflat.results.papers.render import render_paper_table

    render_paper_table(_manifest(tmp_path, {}), tmp_path / "own")
    head, _, rest = (tmp_path / "own.md").read_text().partition("\n\n")
    assert head == "# Diag: T"
    assert "Q4 Acc · ours" in rest and "· paper" not in rest and "· Δ" not in rest
    assert "Scale:" not in rest and "Reproduction of" not in rest
    render_paper_table(_manifest(tmp_path, {"FedAvg": ["70.00"]}), tmp_path / "paper")
    text = (tmp_path / "paper.md").read_text()
    assert "Q4 Acc · paper" in text and "Q4 Acc · Δ" in text and "Reproduction of Diag." in text
    assert pd.read_csv(tmp_path / "paper.csv")["delta"].tolist() == pytest.approx([10.0])
