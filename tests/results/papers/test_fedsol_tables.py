"""FedSOL Tables 1, 4, 10 and Fig. 8 in the catalog: Tables 1 and 10 build end to end at tiny scale
with the paper's rows, columns and published numbers; Table 4's Base cells and Tables 1/10's A0/A1/A5
are the runs of Table 2/Table 1 (computed once); Fig. 8 reads λ₁ and λ₁/λ₅ from hessian.json."""
import json

import pandas as pd
import pytest
import torch

from fedflat.core.errors import ConfigError
from fedflat.pipeline.build import build
from fedflat.results.papers.published import parse_published
from fedflat.pipeline.study import figure_inputs, figure_manifest, load_study, table_inputs

from .paper_helpers import paper_config


@pytest.fixture(scope="module")
def study():
    return load_study(paper_config("fedsol", "tiny"))


def _runs(study, table):
    return {f.rsplit("/", 1)[0] for f in table_inputs(study, table)}


@pytest.mark.parametrize("name", ["table1", "table10"])
def test_tables_build_at_tiny_scale(name, study, tmp_path_factory):
    torch.set_num_threads(1)
    md, csv, _ = build(study, name, tmp_path_factory.getbasetemp() / "fedsol_tables")
    entry = paper_config("fedsol", "tiny")["tables"][name]
    long = pd.read_csv(csv)
    assert list(dict.fromkeys(long["row"])) == [r["label"] for r in entry["rows"]]
    assert list(dict.fromkeys(long["group"])) == [c["group"] for c in entry["columns"]]
    for label, values in entry["published"].items():
        got = long[long["row"] == label]["published_mean"].tolist()
        want = [parse_published(v).mean for v in values]
        want = [float("nan") if v is None else v for v in want]  # "-": no published value
        assert got == pytest.approx(want, nan_ok=True), label
    assert (long["seeds_selected"] == 3).all() and "Scale: tiny" in md.read_text()


def test_shared_cells_are_the_same_runs(study):
    t2 = _runs(study, "table2_lda")
    t1, t4, t10 = _runs(study, "table1"), _runs(study, "table4"), _runs(study, "table10")
    # Table 1: None/L2 Base = FedAvg/FedProx of Table 2; Table 10: A0/A1 of Table 2, A0/A5 of Table 1
    assert len(t1 & t2) == 2 * 3 and len(t1 - t2) == 3 * 3
    assert len(t10 & t2) == 2 * 3 and len(t10 & t1) == 2 * 3 and len(t10) == 7 * 3  # t1 holds FedAvg too
    # Table 4: FedProx/FedNova/SCAFFOLD Base on 3 datasets are Table 2's; 7 new algorithms x 3 datasets
    assert len(t4 & t2) == 3 * 3 * 3 and len(t4) == (3 * 3 + 7 * 3) * 3


def test_table4_combined_runs_use_full_model_and_the_methods_proximal_loss(study):
    names = {"fedsol_prox", "fedsol_nova", "fedsol_scaffold", "fedsol_dyn", "fedsol_moon"}
    combined = [s for s in study.runs.values() if s.algorithm in names]
    assert len(combined) == len(names) * 3 * 3
    for s in combined:
        assert s.hparams["sol_target"] == "full" and s.hparams["rho"] == 2.0
        assert s.hparams["sol_prox"] == ("kl" if s.algorithm == "fedsol_nova" else "parts")
        assert s.hparams["sol_prox_in_step"] is False  # the objective acts only through ε (Eq. 6)
    assert next(s for s in combined if s.algorithm == "fedsol_dyn").hparams["alpha"] == 0.1


def test_fig8_annotation_reads_hessian_json(study, tmp_path):
    ins = figure_inputs(study, "fig8_landscape")
    assert sum(f.endswith("hessian.json") for f in ins) == 3 and sum(f.endswith("landscape_2d.npz") for f in ins) == 3
    m = figure_manifest(study, "fig8_landscape")
    assert [p["algorithm"] for p in m["panels"]] == ["FedAvg", "FedASAM", "FedSOL"]
    from fedflat.pipeline.analysis.analysis_kinds import eigen_note
    h = tmp_path / "hessian.json"
    h.write_text(json.dumps({"lambda_max": 40.0, "lambda_ratio_1_5": 4.0}))
    assert eigen_note(str(h)) == "λ₁=40, λ₁/λ₅=4" and eigen_note(None) == ""
    assert study.config["analysis"]["landscape"]["directions"] == "hessian"


def test_bad_annotate_is_config_error():
    from fedflat.pipeline.study import load_study
    cfg = paper_config("fedsol", "tiny")
    cfg["figures"]["fig8_landscape"]["annotate"] = "eigen"
    with pytest.raises(ConfigError, match="fig8_landscape.annotate"):
        load_study(cfg)
