"""FedTOGA catalog entries added with FedRCL, Table 8, Figs. 1 and 5 (no training: selection only;
the targets were built end to end by hand at tiny scale, see docs/papers.md)."""
from fedflat.results.papers.published import parse_published
from fedflat.pipeline.study import figure_inputs, load_study, table_inputs

from .paper_helpers import paper_config


def _runs(study, name, section="tables"):
    files = table_inputs(study, name) if section == "tables" else figure_inputs(study, name)
    return {f.rsplit("/", 1)[0] for f in files}


def test_fedrcl_rows_and_table8_reuse_table2():
    cfg = paper_config("fedtoga", "tiny")
    study = load_study(cfg)
    for t in ("table1_upper", "table1_lower"):
        assert "FedRCL" in cfg["tables"][t]["rows"]
    t2 = _runs(study, "table2")
    for fed in ("upper", "lower"):
        new, old = _runs(study, f"table8_{fed}_new"), _runs(study, f"table8_{fed}_old")
        assert new == old and len(new) == 14 * 8 * 3
        assert len(new & t2) == 14 * 4 * 3  # the CIFAR-10 half is Table 2's runs, CIFAR-100 is new
        entry = cfg["tables"][f"table8_{fed}_new"]
        assert "Uncertain" in entry["note"] and "Illegible" in entry["note"]
        for label, values in entry["published"].items():
            assert len(values) == 8
            [parse_published(v) for v in values]
    # a cell the reconstruction marks "~" is named in the note; FedSpeed has no OLD values
    assert "FedSpeed C10 u=0.1" in cfg["tables"]["table8_upper_new"]["note"]
    assert all(v == "-" for v in cfg["tables"]["table8_upper_old"]["published"]["FedSpeed"])


def test_fig5_and_fig1_select_existing_runs_plus_the_new_ones():
    study = load_study(paper_config("fedtoga", "tiny"))
    t1 = _runs(study, "table1_upper")
    f5 = _runs(study, "fig5_np", "figures")
    assert len(f5) == 2 * 4 * 3 and len(f5 - t1) == 2 * 2 * 3  # only the +NP runs are new
    assert all(("_np/" in r) for r in f5 - t1)
    f1 = _runs(study, "fig1_landscape", "figures")
    assert len(f1) == 3 and len(f1 - t1) == 1 and "/iid/" in next(iter(f1 - t1))
