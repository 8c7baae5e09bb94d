"""The evidence reader checks runs.csv against its declared schema (evidence/runs_schema.py) and refuses a file that
does not match in one line naming the file, row and column; no page is rendered from it. The committed evidence
matches."""
from __future__ import annotations

import csv
import hashlib
import shutil
from pathlib import Path

import pytest

from fedflat.core.errors import ConfigError
from fedflat.evidence.__main__ import main as evidence_main
from fedflat.evidence.pages import Context, pages
from fedflat.evidence.records import COLUMNS
from fedflat.evidence.runs_schema import LATER_COLUMNS, RUNS_SCHEMA, read_runs

from .helpers import one_line

REPO = Path(__file__).resolve().parents[2]
LB = REPO / "results/evidence/leaderboard_v2/runs.csv"
FS = REPO / "results/evidence/fedsynsam/runs.csv"  # read by docs/reproduction.md (the v2 leaderboard page is frozen)
RENDERED = [*pages(Context(root=REPO)), "docs/atlas.md"]  # every page the evidence renders (code, declarations, targets)


def test_the_declaration_covers_the_records_and_the_committed_evidence_matches():
    assert set(RUNS_SCHEMA) | set(LATER_COLUMNS) == set(COLUMNS) and not set(RUNS_SCHEMA) & set(LATER_COLUMNS)
    files = sorted((REPO / "results/evidence").glob("*/runs.csv")) + sorted((REPO / "results/evidence").glob("*/superseded.csv"))
    assert len(files) >= 7
    for f in files:
        assert len(read_runs(f)) > 0


def _rows(path: Path = LB) -> tuple[list[str], list[dict]]:
    with path.open(newline="") as fh:
        r = csv.DictReader(fh)
        return list(r.fieldnames), list(r)


def _write(path: Path, head: list[str], rows: list[dict]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=head, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return path


def _completed(rows: list[dict], k: int) -> list[int]:
    return [i for i, r in enumerate(rows) if r["status"] == "completed"][:k]


def _nan_in_completed(rows):
    for i in _completed(rows, 3):
        rows[i]["final_acc"] = "nan"
    return _completed(rows, 1)[0], "final_acc", "a completed run's final_acc must be a number"


CASES = {
    "NaN in three completed rows": _nan_in_completed,
    "inf accuracy": lambda rows: (rows.__getitem__(5).__setitem__("last10_acc", "inf"), (5, "last10_acc", "inf is not a finite number"))[1],
    "accuracy above 100": lambda rows: (rows.__getitem__(7).__setitem__("best_acc", "170"), (7, "best_acc", "170 is outside numbers >= 0 and <= 100"))[1],
    "text where a number is due": lambda rows: (rows.__getitem__(2).__setitem__("lr", "fast"), (2, "lr", "'fast' is not a number"))[1],
    "fractional seed": lambda rows: (rows.__getitem__(4).__setitem__("seed", "1.5"), (4, "seed", "1.5 is outside integers >= 0"))[1],
    "empty run id": lambda rows: (rows.__getitem__(3).__setitem__("run_id", ""), (3, "run_id", "an empty run id"))[1],
    "a run listed twice": lambda rows: (rows.__getitem__(9).__setitem__("run_id", rows[8]["run_id"]), (9, "run_id", "is listed twice"))[1],
    "garbled status": lambda rows: (rows.__getitem__(6).__setitem__("status", "complet ed"), (6, "status", "is not a status word"))[1],
}


@pytest.mark.parametrize("case", CASES)
def test_a_damaged_cell_is_named_by_file_row_and_column(tmp_path, case):
    head, rows = _rows()
    row, col, why = CASES[case](rows)
    bad = _write(tmp_path / "runs.csv", head, rows)
    with pytest.raises(ConfigError) as exc:
        read_runs(bad)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{bad}: row {row + 1} (line {row + 2}), column {col}: ")
    assert why in msg and "git checkout --" in msg


def test_a_damaged_file_is_one_line(tmp_path):
    head, rows = _rows()
    cases = {"missing column": (_write(tmp_path / "a.csv", [h for h in head if h != "final_acc"],
                                       [{k: v for k, v in r.items() if k != "final_acc"} for r in rows]),
                                "column 'final_acc' is missing"),
             "empty": (tmp_path / "b.csv", "the file is empty"),
             "ragged": (tmp_path / "c.csv", "not a readable CSV")}
    (tmp_path / "b.csv").write_text("")
    text = LB.read_text().splitlines(keepends=True)
    (tmp_path / "c.csv").write_text("".join(text[:4]) + text[4].rstrip("\n") + ",x,y,z\n" + "".join(text[5:]))
    for name, (path, why) in cases.items():
        with pytest.raises(ConfigError) as exc:
            read_runs(path)
        assert why in str(exc.value) and str(path) in str(exc.value) and "\n" not in str(exc.value), name


def _fingerprint(root: Path) -> dict:
    return {p: hashlib.sha256((root / p).read_bytes()).hexdigest() for p in RENDERED}


@pytest.fixture
def repo_copy(tmp_path, monkeypatch):
    for p in RENDERED:
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / p, tmp_path / p)
    shutil.copytree(REPO / "config", tmp_path / "config")
    for d in ("results/evidence", "figures/evidence"):
        shutil.copytree(REPO / d, tmp_path / d)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_pages_are_not_rendered_from_nan_in_completed_rows(repo_copy, capsys):
    head, rows = _rows(FS)
    row, col, _ = _nan_in_completed(rows)
    _write(repo_copy / "results/evidence/fedsynsam/runs.csv", head, rows)
    before = _fingerprint(repo_copy)
    assert evidence_main(["pages"]) == 2
    one_line(capsys.readouterr().err, "fedflat.evidence: error: results/evidence/fedsynsam/runs.csv",
             f"row {row + 1}", f"column {col}")
    assert _fingerprint(repo_copy) == before
