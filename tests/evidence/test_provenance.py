"""Every committed record either regenerates from the commit it names (a clean commit, the numerics fields) or is
marked legacy with the reason (issue 46): nothing in results/evidence/ is silently unregenerable."""
from pathlib import Path

import pandas as pd
import pytest

from fedflat.evidence.records import COLUMNS, NUMERICS_COLUMNS, regenerable

REPO = Path(__file__).resolve().parents[2]
FILES = sorted(p for p in (REPO / "results/evidence").glob("*/*.csv") if p.name in ("runs.csv", "superseded.csv"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_record_regenerates_or_says_why_not(path):
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert list(df.columns[:len(COLUMNS)]) == list(COLUMNS)
    for r in df.to_dict("records"):
        why = regenerable(r)
        if why is None:
            assert not r["legacy"], r["run_id"]
            assert all(r[c] != "" for c in NUMERICS_COLUMNS if c != "resumed_from"), r["run_id"]
        else:
            assert r["legacy"] == why, (r["run_id"], r["legacy"], why)


def test_regenerable_names_each_reason():
    ok = {"git_commit": "0123456789ab", "numerics": "portable"}
    assert regenerable(ok) is None
    assert "modified working tree" in regenerable({**ok, "git_commit": "0123456789ab-dirty"})
    assert regenerable({**ok, "git_commit": ""}) == "no commit recorded"
    assert "no numerics fields" in regenerable({**ok, "numerics": ""})
