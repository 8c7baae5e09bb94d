"""The settings file's block-B and block-C lr entries are what the committed evidence writes
(fedflat.evidence.lrsources), and a source names the grid, its scores, stage E's extension and the pick."""
import math
from pathlib import Path

import pytest

import fedflat.plugins  # noqa: F401
from fedflat.evidence.lrsources import report, source

REPO = Path(__file__).resolve().parents[2]


def _block(text: str, block: str) -> str:
    start = text.index(f'  - experiments: ["t2{block}_fmnist_q*"]')
    end = text.index("\n\n", start)
    return text[start:end]


@pytest.mark.parametrize("block", ["B", "C"])
def test_block_entries_match_the_committed_evidence(block):
    committed = _block((REPO / "config/papers/settings/fedsynsam.yaml").read_text(), block)
    assert committed == report(block, root=REPO)


def test_a_source_names_the_first_grid_stage_e_and_the_pick():
    s = source("C", "k25", "FedSMOO", {0.001: 80.0, 0.003: 85.06, 0.01: 84.72, 0.05: 81.49, 0.1: math.nan}, 0.003)
    assert "stage L2's grid {0.01, 0.05, 0.1} on block C Top-k 0.25" in s
    assert "0.01: 84.72 %, 0.05: 81.49 %, 0.1: diverged)" in s
    assert "stage E extends the grid past its edge pick (0.001: 80.00 %, 0.003: 85.06 %) and picks 0.003" in s
    edge = source("C", "q4", "FedAvg", {0.05: 80.0, 0.1: 81.0, 0.5: 82.0}, 0.5)
    assert edge.endswith("picks 0.5 (docs/reproduction.md#fedsynsam-lr-picks)")  # 0.5 ends the ladder: nothing pending
    low = source("C", "q4", "FedGAMMA", {0.003: 70.0, 0.01: 60.0, 0.05: math.nan}, 0.003)
    assert "picks 0.003; stage E extends the grid past this edge pick (pending)" in low
