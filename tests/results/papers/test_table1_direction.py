"""config/papers/tuning/fedsynsam_table1_direction.yaml (FedSynSAM Table I's direction, issue 25): the paper scale is
the catalog's Table I setting with snapshots, and the lr study shares its runs. (Its four-protocol tables, kind
hessian_protocols, retired with the frozen blocks that read them; the snapshot protocols themselves are
tests/pipeline/analysis/test_snapshots.py's.)"""
import pytest

from fedflat.core.errors import ConfigError
from fedflat.core.run_paths import run_of_file
from fedflat.pipeline.study import load_config_file, load_study, table_inputs

from .paper_helpers import ROOT, paper_config

CONFIG = ROOT / "config" / "papers" / "tuning" / "fedsynsam_table1_direction.yaml"


def _config(scale="paper"):
    cfg = load_config_file(CONFIG)
    cfg["scale"] = scale
    return cfg


def test_paper_scale_is_table_one_setting_with_snapshots():
    """The runs train as the catalog's t1_iid_none / t1_dir001_none runs do (same spec but the snapshot rounds)."""
    study = load_study(_config())
    catalog = load_study(paper_config("fedsynsam", "paper"))
    for ours, theirs in (("dir_iid", "t1_iid_none"), ("dir_dir001", "t1_dir001_none")):
        a = [study.runs[r] for r, _ in study.experiments[ours]]
        b = [catalog.runs[r] for r, _ in catalog.experiments[theirs]]
        assert [s.training["snapshot_rounds"] for s in a] == [[50, 100, 200, 300]] * 3
        for x, y in zip(a, b):
            assert {**x.training, "snapshot_rounds": []} == y.training
            assert (x.dataset, x.partition, x.model, x.algorithm, x.seed, x.hparams, x.uplink) == \
                   (y.dataset, y.partition, y.model, y.algorithm, y.seed, y.hparams, y.uplink)


@pytest.mark.parametrize("edit, msg", [
    (lambda c: c["analysis"]["hessian"].update(round=50), r"^analysis\.hessian\.round"),
    (lambda c: c["training"].update(snapshot_rounds=[50, 400]), r"^training\.snapshot_rounds: round 400"),
])
def test_bad_config_is_one_line_naming_the_key(edit, msg):
    cfg = _config()
    edit(cfg)
    if "round" in cfg["analysis"]["hessian"]:  # read by the rules (and the builder), not by load_study
        from fedflat.pipeline.analysis.params import from_config

        with pytest.raises(ConfigError, match=msg):
            from_config(cfg, "hessian")
        return
    with pytest.raises(ConfigError, match=msg) as exc:
        load_study(cfg)
    assert "\n" not in str(exc.value)


def test_lr_sweep_shares_the_direction_runs_and_asks_for_the_round_300_hessian():
    """The η = 0.1 points are the dir_* runs themselves (one run id: nothing trained twice); the three other lrs
    are runs of their own; the figure and the table ask for protocol (a) at round 300 of every run."""
    study = load_study(_config())
    for exp, base in (("lr_iid", "dir_iid"), ("lr_dir001", "dir_dir001")):
        by_lr = {}
        for rid, lab in study.experiments[exp]:
            by_lr.setdefault(study.runs[rid].training["lr"], set()).add(rid)
        assert sorted(by_lr) == [0.01, 0.05, 0.1, 0.5] and all(len(v) == 3 for v in by_lr.values())
        assert by_lr[0.1] == {rid for rid, _ in study.experiments[base]}
    q4 = {rid for rid, _ in study.experiments["comp_iid_q4"]}  # ordering (i) at η = 0.01: Q4 runs of their own
    assert len(q4) == 3 and all(study.runs[r].uplink == {"kind": "quant", "bits": 4} for r in q4)
    assert len(study.runs) == 6 + 2 * 3 * 3 + 3
    from fedflat.pipeline.study import figure_inputs

    files = figure_inputs(study, "lr_sharpness")
    assert sum(f.endswith("/hessian_r300_train.json") for f in files) == 24
    # the low-lr comparison pairs the Q4 runs with lr_iid's η = 0.01 runs, under protocols (a) and (b)
    low = table_inputs(study, "compression_low_lr")
    paired = {r for r in {run_of_file(f) for f in low} if r} - q4
    assert paired == {rid for rid, _ in study.experiments["lr_iid"] if study.runs[rid].training["lr"] == 0.01}
    assert sum(f.endswith("/hessian_r300_clients.json") for f in low) == 6


@pytest.mark.parametrize("ref", [{"slope": -2.0}, {"slope": "2"}, {"slope": 2.0, "colour": "red"}, [2.0]])
def test_bad_sweep_reference_is_refused_naming_the_key(ref):
    cfg = _config()
    cfg["figures"]["lr_sharpness"]["reference"] = ref
    with pytest.raises(ConfigError, match=r"^figures\.lr_sharpness\.reference: a mapping"):
        load_study(cfg)
