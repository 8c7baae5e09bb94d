"""The tiny Table II-style study parses: 3 uplink settings × 4 algorithms × 2 seeds, compressors
validated, FedSynSAM's distillation settings resolved into the runs."""
from fedflat.pipeline.study import load_config_file, load_study


def test_table1_tiny_config(repo):
    study = load_study(load_config_file(repo / "config" / "fedsynsam_table1_tiny.yaml"))
    assert len(study.runs) == 24
    uplinks = {e: {study.runs[r].uplink.get("kind") for r, _ in runs} for e, runs in study.experiments.items()}
    assert uplinks == {"none": {None}, "quant4": {"quant"}, "topk25": {"topk"}}
    presets = {lab["preset"] for runs in study.experiments.values() for _, lab in runs}
    assert presets == {"fedavg", "fedsam", "fedlesam", "fedsynsam"}
    syn = [s for s in study.runs.values() if s.algorithm == "fedsynsam"]
    assert all(s.hparams["syn_round"] == 5 and s.hparams["beta"] == 0.9 for s in syn)
    assert "fedsynsam_table1" in study.tables and len(study.table_outputs()) == 12
