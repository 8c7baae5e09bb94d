"""The papers' headline comparisons re-asked on the leaderboard: the pairwise verdict (the tie bands' criterion,
a diverged seed losing to a completed method), each proposed method's baselines read from its paper's catalog,
and the block rendered from complete synthetic stages."""
import numpy as np
import pytest
import yaml

import fedflat.plugins  # noqa: F401  (the composition root: registers the presets)
from fedflat.training.algorithms import PRESETS
from fedflat.core.errors import ConfigError
from fedflat.evidence import blocks_leaderboard as lb
from fedflat.evidence import lbclaims
from fedflat.evidence.atlas import paper_study
from fedflat.pipeline.study import load_config_file

from .lb_records import REPO, V2_CONFIG, complete_rows, lb_context


def _cell(acc, ok=True):
    return {"acc": np.array(acc, dtype=float), "ok": ok}


def test_verdict_uses_the_pooled_seed_std_and_lets_divergence_lose():
    a = _cell([90.0, 91.0, 92.0])
    d, s, v = lbclaims.verdict(a, _cell([88.0, 89.0, 90.0]))
    assert (d, s, v) == (2.0, 1.0, lbclaims.BETTER)
    assert lbclaims.verdict(_cell([88.0, 89.0, 90.0]), a)[2] == lbclaims.WORSE  # the sign matters
    assert lbclaims.verdict(a, _cell([90.5, 91.5, 92.5]))[2] == lbclaims.WITHIN  # |-0.5| < 1
    assert lbclaims.verdict(a, _cell([89.0, 90.0, 91.0]))[2] == lbclaims.BETTER  # |d| = s is not a tie (tie_bands: <)
    # a completed method beats one with a diverged seed even when the latter's completed seeds score higher
    assert lbclaims.verdict(a, _cell([95.0, 96.0], ok=False))[2] == lbclaims.BASELINE_DIVERGED
    assert lbclaims.verdict(_cell([95.0, 96.0], ok=False), a)[2] == lbclaims.DIVERGED
    assert lbclaims.verdict(_cell([], ok=False), _cell([], ok=False))[2] == lbclaims.BOTH


@pytest.mark.parametrize("proposed", sorted(lbclaims.HEADLINE))
def test_baselines_are_the_rows_of_the_papers_headline_table(proposed):
    paper, table = lbclaims.HEADLINE[proposed]
    ref, bases = lbclaims.table_baselines(paper_study(paper, REPO / "config/papers"), table, proposed)
    rows = yaml.safe_load((REPO / f"config/papers/{paper}.yaml").read_text())["tables"][table]["rows"]
    assert ref.startswith("Table") and proposed not in bases
    assert [PRESETS.get(b).label for b in bases] + [PRESETS.get(proposed).label] == rows


def test_a_missing_table_is_named():
    with pytest.raises(ConfigError, match="no table 'table9'"):
        lbclaims.table_baselines(paper_study("fednsam", REPO / "config/papers"), "table9", "fednsam")


def test_claims_block_from_complete_stages(tmp_path):
    cfg = load_config_file(V2_CONFIG)["leaderboard"]
    # FedNSAM 5 points above everyone (seed spread 1); FedSOL 5 below; the rest level
    acc = {"fednsam": 90.0, "fedsol": 80.0}
    ctx = lb_context(tmp_path, complete_rows(cfg, final_acc=lambda preset, part, seed: acc.get(preset, 85.0) + seed))
    text = lb.claims(ctx)
    row = next(r for r in text.splitlines() if r.startswith("| FedNSAM |"))
    # FedAvg had no stable setting on IID (complete_rows), so it loses there by divergence
    assert row == ("| FedNSAM | Table 2: 8 baselines | better 7, better (baseline diverged) 1 (of 8) | better 8 (of 8) "
                   "| better 8 (of 8) |")
    assert "- FedNSAM" not in text  # nothing it does not win
    sol = next(r for r in text.splitlines() if r.startswith("| FedSOL |"))
    assert sol.endswith("| worse 7 (of 7) |") and "better (baseline diverged) 1, worse 6 (of 7)" in sol
    assert "- FedSOL on Dir(0.1), not beaten: FedAvg (worse, Δ -5.00 ± 1.00)" in text
    assert "FedSAM (worse, Δ -5.00 ± 1.00)" in text
    short = lb.claims_summary(ctx)  # the README's: the same counts, the pairs left to the docs page
    assert row in short and "- FedSOL" not in short and short.endswith("The pairs behind each count: `docs/leaderboard.md`.")


def test_claims_block_waits_for_the_final_stage(tmp_path):
    cfg = load_config_file(V2_CONFIG)["leaderboard"]
    assert "not complete" in lb.claims(lb_context(tmp_path, complete_rows(cfg, drop_final=1)))
