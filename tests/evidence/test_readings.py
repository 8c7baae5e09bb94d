"""Stage R's rule (fedflat.evidence.readings): per method, the reading within 2 points of the paper in the most
columns; ties go to compress, then raw; a cell with a diverged or missing seed is never within."""
from fedflat.evidence.readings import COLUMNS, METHODS, adopt, cell_mean, reading_cells, within_paper

from .helpers import reading_rows


def _runs(acc):
    return reading_rows(acc, METHODS, COLUMNS, "read_A")


PAPER = {m: [80.0, 80.0, 80.0, 80.0] for m in METHODS}


def test_the_reading_closest_to_the_paper_in_most_columns_is_adopted():
    def acc(m, col, rd, seed):
        if m == "FedSMOO":  # raw within 2 points in 3 columns, error_feedback in 2, compress in none
            return {"raw": 81.5 if col != "k10" else 90.0, "error_feedback": 79.0 if col in ("q4", "q8") else 70.0,
                    "compress": 20.0}[rd]
        if m == "FedGAMMA":  # a diverged seed makes a cell not within, even when the other seed is on the paper
            return None if (rd == "raw" and seed == 1) else (80.0 if rd == "raw" else 70.0 + 10 * (col == "q4"))
        return 80.0 + seed  # every reading within everywhere: the tie goes to the literal reading
    cells = reading_cells(_runs(acc))
    got = adopt(cells, PAPER)
    assert got["FedSMOO"] == {"reading": "raw", "within": {"compress": 0, "raw": 3, "error_feedback": 2}}
    assert got["FedGAMMA"]["within"]["raw"] == 0 and got["FedGAMMA"]["reading"] == "compress"
    assert got["FedLESAM-D"]["reading"] == "compress" and got["FedLESAM-D"]["within"]["raw"] == 4
    assert cell_mean(cells[("FedLESAM-S", "q4", "raw")]) == 80.5


def test_the_tie_between_raw_and_error_feedback_goes_to_raw():
    cells = reading_cells(_runs(lambda m, col, rd, seed: 20.0 if rd == "compress" else 80.0))
    assert {p["reading"] for p in adopt(cells, PAPER).values()} == {"raw"}


def test_a_missing_seed_is_not_within():
    runs = _runs(lambda *a: 80.0)
    runs = runs[~((runs["label"] == "FedSMOO") & (runs["seed"] == 1) & runs["experiments"].str.endswith("_compress"))]
    cells = reading_cells(runs)
    assert cell_mean(cells[("FedSMOO", "q4", "compress")]) is None
    assert adopt(cells, PAPER)["FedSMOO"]["reading"] == "raw"


def test_a_method_whose_readings_are_one_computation_is_named():
    runs = _runs(lambda m, col, rd, seed: 70.0 + seed if m == "FedLESAM-D" else {"compress": 20.0}.get(rd, 80.0))
    runs["up_bytes_total"] = [1000 if (m == "FedLESAM-D" or e.endswith("_compress")) else 2000
                              for m, e in zip(runs["label"], runs["experiments"])]
    from fedflat.evidence.readings import coinciding

    assert coinciding(runs) == ["FedLESAM-D"]


def test_the_catalog_runs_every_fmnist_table_two_cell_under_the_adopted_reading():
    """Drift check between the committed stage-R evidence and the FedSynSAM catalog: every compressed Fashion-MNIST
    run of a 2x method (blocks A, B and C) carries the reading the rule adopts from the evidence. Fails when a new
    record changes the adoption and the catalog is not updated, or when an entry's `uplink:` is dropped."""
    from fedflat.evidence.pages import Context
    from fedflat.evidence.readings import STUDY, published_cells
    from fedflat.study import load_config_file, load_study

    ctx = Context()
    picks = adopt(reading_cells(ctx.evidence(STUDY).runs()), published_cells(ctx))
    study = load_study(load_config_file(ctx.config("papers/fedsynsam.yaml")))
    seen = set()
    for ename, entries in study.experiments.items():
        if not ename.startswith("t2"):
            continue
        for rid, lab in entries:
            spec = study.runs[rid]
            if spec.dataset == "fmnist" and lab["algorithm"] in picks and spec.uplink.get("kind", "none") != "none":
                assert spec.uplink.get("other_vectors", "compress") == picks[lab["algorithm"]]["reading"], (ename, lab)
                seen.add((ename[:3], lab["algorithm"]))
    assert seen == {(b, m) for b in ("t2A", "t2B", "t2C") for m in METHODS}


def test_within_the_paper_is_two_sided_and_needs_every_seed():
    def cell(*acc, diverged=0):
        return {"acc": list(acc), "diverged": diverged, "seeds": len(acc) + diverged}
    assert within_paper(cell(80.0, 82.0), 79.0) and within_paper(cell(80.0, 82.0), 83.0)  # mean 81: 2 below, 2 above
    assert not within_paper(cell(80.0, 82.0), 78.9) and not within_paper(cell(80.0, 82.0), 83.1)
    assert not within_paper(cell(81.0, diverged=1), 81.0)  # a diverged seed is never within
    assert not within_paper(cell(81.0), 81.0)              # nor is a cell missing a seed
    assert not within_paper(None, 81.0) and not within_paper(cell(81.0, 81.0), None)
