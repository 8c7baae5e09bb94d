"""FedSOL Table 9 and Fig. 5b at tiny scale: the catalog resolves Table 9 to personalize runs, and
Fig. 5b (the new layer_bars kind) builds end to end in-process (one seed, to stay fast; the full
Table 9 build at tiny scale takes ~1 min and was checked by hand, see docs/papers.md)."""
import pandas as pd
import pytest
import torch

from fedflat.pipeline.build import build
from fedflat.pipeline.study import load_study, table_inputs

from .paper_helpers import paper_config


def _one_seed(cfg):
    for e in cfg["experiments"].values():
        e["seeds"] = [0]
    return cfg


def test_table9_resolves_every_cell_to_personalize_runs():
    study = load_study(paper_config("fedsol", "tiny"))
    runs = {f.rsplit("/", 1)[0] for f in table_inputs(study, "table9")}
    specs = [study.runs[r[len("results/runs/"):]] for r in runs]
    assert len(specs) == 6 * 3 * 3  # 6 methods x 3 datasets x 3 seeds
    assert all("personalize" in s.analysis for s in specs)
    local = [s for s in specs if s.algorithm == "localonly"]
    assert len(local) == 9 and all(s.analysis["personalize"]["mode"] == "local" and s.rounds == 1
                                   and s.participation == 1.0 for s in local)


@pytest.mark.parametrize("name", ["fig5b_lambda"])  # the new kind; Figs. 3a/3b/5a are stock kinds (built by hand)
def test_fedsol_figures_build_at_tiny_scale(name, tmp_path):
    torch.set_num_threads(1)
    study = load_study(_one_seed(paper_config("fedsol", "tiny")))
    pdf, png = build(study, name, tmp_path, section="figures")
    assert pdf.stat().st_size > 0 and png.stat().st_size > 0
    metrics = list((tmp_path / "results" / "runs").rglob("metrics.csv"))
    cols = set().union(*(pd.read_csv(m).columns for m in metrics))
    if name == "fig5b_lambda":
        assert {c for c in cols if c.startswith("lambda:")}  # one bar per layer
    else:
        assert {"sol_cos", "proximal_loss"} <= cols
