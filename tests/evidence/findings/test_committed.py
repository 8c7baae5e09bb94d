"""The committed declarations against the committed evidence and catalogs: the catalog runs every complete grid's
pick (the lr grids in their block and column family; a block-A radius in that family's columns of every block)."""
from pathlib import Path

import pytest

import fedflat.plugins  # noqa: F401
from fedflat.evidence.findings.decide import evaluate
from fedflat.evidence.findings.sources import catalog_values
from fedflat.evidence.findings.declared import findings
from fedflat.evidence.pages import Context

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def ctx():
    return Context(root=REPO)


def _grid_findings(ctx):
    return [f for f in findings(ctx) if f.get("by") == "score"]


def test_the_catalog_runs_every_complete_grid_s_pick(ctx):
    found = _grid_findings(ctx)
    assert {f.id for f in found} >= {"lr_picks", "radius_picks"}
    for f in found:
        res = evaluate(ctx, f)["units"]
        followed = [r for r in res if r["follows"]]
        assert followed, f.id
        for r in followed:
            if r["pick"] is not None:
                assert r["catalog"] == {f"{r['pick']:g}"}, (f.id, r["unit"]["block"], r["unit"]["method"])


def test_a_block_a_radius_pick_is_the_radius_of_its_family_s_columns_in_every_block(ctx):
    by_id = {f.id: f for f in _grid_findings(ctx)}
    study = ctx.study("fedsynsam")
    lr_units = by_id["lr_picks"].units
    checked = 0
    for r in evaluate(ctx, by_id["radius_picks"])["units"]:
        if r["pick"] is None:
            continue
        preset = r["unit"]["where"].get("preset") or next(
            c.algorithm for c in study.runs.values() if c.algorithm and _label(c.algorithm) == r["unit"]["method"])
        for u in (u for u in lr_units if u["columns"] == r["unit"]["columns"]):
            assert catalog_values(study, u["catalog"], preset, ["hparams.rho"])[0] == {f"{r['pick']:g}"}, (u["block"], preset)
            checked += 1
    assert checked >= 3 * 9  # every complete radius grid, in blocks A, B and C


def _label(preset):
    from fedflat.training.algorithms import PRESETS

    return PRESETS.get(preset).label


def test_no_grid_the_catalog_follows_waits_for_stage_e(ctx):
    """Stage E extends a grid whose pick sits on its edge along the ladder; the committed grids are all settled."""
    from fedflat.evidence.findings.layout import _edge

    f = next(f for f in _grid_findings(ctx) if f.get("grid").get("ladder"))
    for r in evaluate(ctx, f)["units"]:
        if r["follows"] and r["pick"] is not None:
            assert "extends" not in _edge(r["pick"], list(r["means"]), f.get("grid")["ladder"], f.get("words")), r["unit"]
