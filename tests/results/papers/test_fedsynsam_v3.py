"""FedSynSAM's v3 protocol (config/papers/tuning/fedsynsam_fmnist_v3.yaml, issue 48) is the paper's stated protocol,
fixed before any run: every tuned value comes from VI-A's grids on a validation split, every primary cell runs at
picks (never at a typed value) with the 2x methods' extra vector compressed, deviations run only as named
sensitivity experiments, the claims' paper margins are the catalog's published values, and the deviations file
names runs that exist."""
import itertools
from pathlib import Path

import pytest

from fedflat.results.papers.picks import _entry_picks as entry_picks, resolve
from fedflat.results.papers.published import parse_published
from fedflat.pipeline.study import load_config_file, load_study

REPO = Path(__file__).resolve().parents[3]
V3 = REPO / "config/papers/tuning/fedsynsam_fmnist_v3.yaml"
LR_GRID = {0.01, 0.05, 0.1, 0.5}  # Sec. VI-A
RHO_GRID = {0.001, 0.01, 0.05, 0.1, 0.5}  # Sec. VI-A
SCHEMA_KEYS = {"id", "question", "kind", "fixed", "fixed_note", "evidence", "select", "treatment", "baseline", "metric",
               "seeds", "paper", "family", "alpha", "page"}


@pytest.fixture(scope="module")
def cfg():
    return load_config_file(V3)


@pytest.fixture(scope="module")
def catalog():
    return load_config_file(REPO / "config/papers/fedsynsam.yaml")


@pytest.fixture(scope="module")
def planned(cfg):
    """Every stage expanded at provisional picks (nothing read, nothing run)."""
    full, state = resolve(cfg, provisional=True)
    return load_study(full), state


def entries(cfg, prefix):
    return [(name, a) for name, e in cfg["experiments"].items() if name.startswith(prefix) for a in e["algorithms"]]


def is_pick(v):
    return isinstance(v, dict) and set(v) == {"pick"}


def test_only_the_first_stage_runs_before_any_pick(cfg, tmp_path, monkeypatch):
    """With no record and no run on disk (a fresh directory: the evidence root is relative to it), nothing is
    picked, so only the stage that needs no pick joins."""
    monkeypatch.chdir(tmp_path)
    study = load_study(cfg)
    assert set(study.experiments) == {"lr1_A_q4", "lr1_A_k25", "lr_t1_iid", "lr_t1_dir"}
    waiting = study.picks["waiting"]
    assert waiting["rho_A_q4"] == ["lr1_A_q4"] and waiting["final_B_k10"] == ["lr_B_k25", "rho_A_k25"]


def test_a_stage_joins_only_once_the_committed_records_hold_its_grids(cfg, tmp_path, monkeypatch):
    """With the committed evidence (and no run on disk), every pick that resolved reads a grid whose runs are all
    recorded, and every experiment that joined has each of its picks resolved: a later stage never runs at a value
    read from a grid that is still running."""
    evidence = REPO / "results/evidence"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    (tmp_path / "results/evidence").symlink_to(evidence)
    study = load_study(cfg)
    resolved = study.picks["resolved"]
    for t in resolved:
        rids = [rid for e in study.tables[t]["experiments"] for rid, _ in study.experiments[e]]
        assert rids and not study.unrecorded(rids), t
    for name, exp in cfg["experiments"].items():
        tables = {t for a in exp["algorithms"] for _, _, t in entry_picks(a)}
        assert (name in study.experiments) == (tables <= set(resolved)), name
        assert (name in study.picks["waiting"]) == (name not in study.experiments), name


def test_every_tuned_value_is_on_the_papers_grid_and_on_validation(planned):
    study, _ = planned
    tuning = [n for n in study.experiments if n.startswith(("lr", "rho"))]
    assert len(tuning) == 12
    for name in tuning:
        for rid, _ in study.experiments[name]:
            run = study.runs[rid]
            assert run.training["holdout"] == 0.1 and run.seed in (0, 1), name
            assert run.training["lr"] in LR_GRID, (name, run.training["lr"])
            if "rho" in run.hparams:
                assert run.hparams["rho"] in RHO_GRID, (name, run.hparams["rho"])
            assert run.training["rounds"] == 300 and run.training["local_steps"] == 10
            assert run.training["batch_size"] == 128


def test_primary_cells_run_at_picks_with_every_extra_vector_compressed(cfg, planned):
    primary = entries(cfg, "final_")
    assert len(primary) == 12 * 9 + 6
    for name, a in primary:
        assert is_pick(a["training"]["lr"]), name  # never a value typed after a result was seen
        assert is_pick((a.get("params") or {}).get("rho", {"pick": "-"})), name
        assert "uplink" not in a, name  # the experiment's compressor on every vector (other_vectors: compress)
        assert a["preset"] != "fedlesam_d", name  # FedLESAM-D sends its dynamic correction (fedlesam_d_up)
    study, _ = planned
    for name in (n for n in study.experiments if n.startswith("final_")):
        for rid, _ in study.experiments[name]:
            run = study.runs[rid]
            assert run.training["holdout"] == 0.0 and run.seed in (0, 1, 2)  # the test split, three seeds
            assert run.uplink.get("other_vectors", "compress") == "compress"
    presets = {a["preset"] for n, a in primary if n.startswith("final_A_")}
    assert "fedlesam_d_up" in presets and len(presets) == 9


def test_deviations_run_only_as_named_sensitivity_experiments(cfg):
    devs = entries(cfg, "dev_")
    assert {a.get("uplink", {}).get("other_vectors") for n, a in devs if n.startswith("dev_lesam_s_raw")} == {"raw"}
    assert {a["preset"] for n, a in devs if n.startswith("dev_lesam_d_1x")} == {"fedlesam_d"}
    below = [a["training"]["lr"] for n, a in devs if n.startswith("dev_lr_below")]
    assert len(below) == 8 and not set(below) & LR_GRID  # v2's eight lrs below VI-A's grid
    typed = [a["training"]["lr"] for n, a in entries(cfg, "") if not is_pick(a["training"]["lr"])]
    assert set(typed) - LR_GRID == set(below)  # nowhere else is an lr off the grid


def test_the_tables_published_values_are_the_catalogs(cfg, catalog):
    for block in "ABC":
        t = f"table2_{block}_fmnist"
        assert cfg["tables"][t]["published"] == catalog["tables"][t]["published"]
    pub = catalog["pending_tables"]["table1_hessian"]["published"]
    for label, values in cfg["tables"]["table1_hessian"]["published"].items():
        assert values == [pub[label][0]]


def test_the_tables_select_every_cell_once_all_stages_expand(planned):
    study, state = planned
    assert not state["waiting"] and not state["held"]
    for t in ("table2_A_fmnist", "table2_B_fmnist", "table2_C_fmnist", "table1_hessian", "table1_protocols",
              "dev_lesam_s_raw", "dev_lesam_d_1x", "dev_lr_below_grid"):
        assert t in study.tables


def _published_mean(table: dict, row: str, column: str) -> float:
    groups = [c["group"] for c in table["columns"]]
    return parse_published(table["published"][row][groups.index(column)]).mean


def test_every_claim_is_declared_before_the_finals_with_the_papers_margin(cfg):
    # the claims: the summary counts them, and the `tables` entries only show the tuning stages' tables; the
    # sensitivities of the failure rule (written after the finals) are checked below
    findings = [f for f in cfg["findings"] if f["kind"] not in ("summary", "tables", "closes_shortfall")
                and "failures" not in f]
    ids = [f["id"] for f in findings]
    assert len(ids) == len(set(ids)) == 31
    kinds = {"paired_claim", "ordering"}
    for f in findings:
        assert set(f) == SCHEMA_KEYS, f["id"]
        assert f["kind"] in kinds and f["fixed"] == "before_finals" and f["evidence"] == "fedsynsam_v3"
        table = cfg["tables"][f["select"]["table"]]
        assert f["select"]["column"] in [c["group"] for c in table["columns"]]
        rows = [r if isinstance(r, str) else r["label"] for r in table["rows"]]
        assert f["treatment"]["row"] in rows and f["baseline"]["row"] in rows
        paper = _published_mean(table, f["treatment"]["row"], f["select"]["column"]) - _published_mean(
            table, f["baseline"]["row"], f["select"]["column"])
        assert f["paper"]["value"] == pytest.approx(paper, abs=1e-9), f["id"]  # treatment minus baseline, as printed
        assert f["seeds"] == cfg["experiments"]["final_A_q4"]["seeds"]
    families = {f["family"] for f in findings}
    assert families == {"fedsynsam_table2_fmnist", "fedsynsam_table1_compression", "fedsynsam_table1_partition"}
    claims = {(f["select"]["table"], f["select"]["column"], f["baseline"]["row"]) for f in findings
              if f["family"] == "fedsynsam_table2_fmnist"}
    cols = ["FMNIST Q4", "FMNIST Q8", "FMNIST Top-k 0.1", "FMNIST Top-k 0.25"]
    assert claims == set(itertools.product([f"table2_{b}_fmnist" for b in "ABC"], cols, ["FedSAM", "FedLESAM"]))
    # block A, Top-k 0.1 vs FedSAM: the example (paper +3.79)
    assert next(f for f in findings if f["id"] == "synsam_vs_fedsam_A_k10")["paper"]["value"] == pytest.approx(3.79)


def test_the_pairs_only_reading_mirrors_the_registered_table1_claims_and_is_declared_post_hoc(cfg):
    """Every unit of a pairs-only sensitivity is a registered Table I claim (its arms, table, column and paper margin),
    in a Holm family of its own, so the summary and the registered verdicts never count it."""
    registered = {(f["select"]["table"], f["select"]["column"], f["treatment"]["row"], f["baseline"]["row"]):
                  (f["paper"]["value"], f["family"]) for f in cfg["findings"] if f.get("family", "").startswith(
                      "fedsynsam_table1_") and "failures" not in f}
    sens = [f for f in cfg["findings"] if "failures" in f]
    assert [f["id"] for f in sens] == ["t1_compression_pairs_only", "t1_partition_pairs_only"]
    seen = set()
    for f in sens:
        assert f["fixed"] == "post_hoc" and f["failures"] == "pairs_only" and f["kind"] == "paired_claim"
        for u in f["units"]:
            key = (f["select"]["table"], f["select"]["column"], u["treatment"]["row"], u["baseline"]["row"])
            paper, family = registered[key]
            assert u["paper"]["value"] == paper and f["family"] == family + "_pairs_only"
            seen.add(key)
    assert seen == set(registered)
    assert not any(g["where"].get("family", "").endswith("_pairs_only") for s in cfg["findings"] if s["kind"] ==
                   "summary" for g in s["of"])


def test_each_registered_cause_reads_one_primary_final_and_its_deviation_s_run_per_cell(cfg):
    """The cause rules fixed before the finals: every test-split deviation experiment of the deviations file is read
    by exactly one unit, beside the primary final of the same block and column, against that column's published cell;
    the primary is the baseline and a cause must land within 2 points (not above)."""
    dev = load_config_file(REPO / "config/papers/deviations/fedsynsam.yaml")["deviations"]
    # every (deviation experiment, method it runs): each must be read by exactly one unit
    wanted = sorted((e, a["preset"]) for d in dev.values() if d["kind"] != "post_hoc_protocol"
                    for e in d["experiments"] for a in cfg["experiments"][e]["algorithms"])
    rules = [f for f in cfg["findings"] if f["kind"] == "closes_shortfall"]
    assert [f["id"] for f in rules] == ["cause_lesam_s_raw", "cause_lesam_d_1x", "cause_lr_below_grid"]
    read = []
    for f in rules:
        assert f["fixed"] == "before_finals" and f["evidence"] == "fedsynsam_v3" and f["metric"] == "final_acc"
        assert f["baseline"] == "primary" and f["baseline_ok"] == f["closes"] == "within" and "spread" not in f
        assert f["seeds"] == cfg["experiments"]["final_A_q4"]["seeds"]
        primary, deviation = (set(c["where"]["experiment"]) for c in f["candidates"])
        for u in f["units"]:
            final, other = u["where"]["experiment"]
            block, col = final.split("_")[1:]
            assert final in primary and other in deviation and other.endswith(f"_{block}_{col}")
            assert u["paper"]["table"] == f"table2_{block}_fmnist" and u["block"] == block
            assert u["paper"]["column"] == {"q4": "FMNIST Q4", "q8": "FMNIST Q8", "k10": "FMNIST Top-k 0.1",
                                            "k25": "FMNIST Top-k 0.25"}[col]
            read.append((other, u.get("method", "fedlesam_d")))  # cause_lesam_d_1x: the candidates name the presets
    assert sorted(read) == wanted


def test_the_deviations_file_names_runs_and_tables_of_the_config(cfg):
    dev = load_config_file(REPO / "config/papers/deviations/fedsynsam.yaml")
    assert (REPO / dev["config"]).resolve() == V3.resolve()
    for name, d in dev["deviations"].items():
        assert d["paper"]["section"] and d["paper"]["quote"] and d["why"], name
        assert d["kind"] in ("text_contradicted", "outside_stated_grid", "post_hoc_protocol", "unavoidable")
        for e in d["experiments"]:
            assert e in cfg["experiments"], (name, e)
        if d["kind"] == "unavoidable":
            assert not d["experiments"] and d["table"] is None
        else:
            assert d["experiments"] and d["table"] in cfg["tables"], name
    named = {e for d in dev["deviations"].values() for e in d["experiments"]}
    assert {n for n in cfg["experiments"] if n.startswith("dev_")} <= named  # every sensitivity run is a deviation's


def test_every_tuning_table_is_shown_on_the_page(cfg):
    """Each grid_search table (the settings of the primary cells) and Table I's Hessian-protocol sensitivity (read by
    no rule) has one `tables` finding on docs/reproduction.md."""
    grids = {t for t, spec in cfg["tables"].items() if spec["kind"] == "grid_search"}
    shown = [f for f in cfg["findings"] if f["kind"] == "tables"]
    assert sorted(t for f in shown for t in f["tables"]) == sorted(grids | {"table1_protocols"})
    assert all(f["evidence"] == "fedsynsam_v3" and f["page"]["file"] == "docs/reproduction.md" for f in shown)
