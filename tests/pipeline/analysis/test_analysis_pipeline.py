"""End to end on a tiny digits study: train, run the analysis CLI the rules call, render the kinds."""
import json

import numpy as np
import pytest
import torch

from fedflat.pipeline.analysis import paths
from fedflat.pipeline.analysis.analysis_commands import main as analysis_main
from fedflat.pipeline.analysis.params import from_config
from fedflat.training.data import load_dataset, make_partition
from fedflat.core.errors import ConfigError
from fedflat.training.fl.engine import train
from fedflat.pipeline.study import figure_inputs, figure_manifest, load_study, table_inputs, table_manifest
from fedflat.core.kind_registry import FIGURE_KINDS, TABLE_KINDS

CONFIG = {
    "training": {"num_clients": 4, "participation": 0.5, "rounds": 2, "local_steps": 2, "batch_size": 16,
                 "eval_every": 1, "checkpoint_every": 0},
    "analysis": {"hooks": {"sharpness": {"every": 1, "samples": 128}},
                 "hessian": {"samples": 256, "top_k": 5, "max_iter": 15, "trace_samples": 4, "density_iters": 8},
                 "landscape": {"points": 5, "points_1d": 5, "train_samples": 200, "test_samples": 0}},
    "experiments": {"main": {"datasets": ["digits"], "models": ["linear"], "partitions": ["iid"],
                             "algorithms": ["fedavg", "fedsam"], "seeds": [0]}},
    "tables": {"hessian": {"kind": "hessian", "experiment": "main"},
               "stability": {"kind": "stability", "experiment": "main", "algorithms": ["fedavg"]}},
    "figures": {"surf": {"kind": "landscape_surface", "experiment": "main", "data": "train"},
                "contour": {"kind": "landscape_contour", "experiment": "main", "data": "train"},
                "curves": {"kind": "landscape_1d", "experiment": "main"},
                "density": {"kind": "hessian_density", "experiment": "main"},
                "sharp": {"kind": "convergence", "experiment": "main", "metric": "sharpness"}},
}


def test_study_pipeline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    study = load_study(CONFIG)
    assert study.figures["surf"]["kind"] == "landscape_surface"
    assert figure_inputs(study, "surf") == [f"{study.run_dir(r)}/{paths.LANDSCAPE[2]}" for r in study.runs]
    assert table_inputs(study, "stability") == [f"{study.run_dir(r)}/{paths.STABILITY}"
                                                for r, l in study.experiments["main"] if l["preset"] == "fedavg"]
    data = load_dataset("digits")
    for rid, s in study.runs.items():
        ppath = tmp_path / study.partition_path(s.partition_id())
        if not ppath.exists():
            make_partition(data.train_y.numpy(), s.partition, s.num_clients, s.seed,
                           num_classes=data.num_classes).save(ppath)
        train(s, study.run_dir(rid), ppath, progress=False)
        d = study.run_dir(rid)
        for cmd, extra in (("hessian", []), ("landscape", ["--dims", "2"]), ("landscape", ["--dims", "1"])):
            out = f"{d}/{paths.HESSIAN}" if cmd == "hessian" else f"{d}/{paths.LANDSCAPE[int(extra[1])]}"
            p = json.dumps(from_config(CONFIG, cmd))
            assert analysis_main([cmd, "--run-dir", d, "--out", out, "--params", p] + extra) == 0
        if s.algorithm == "fedavg":  # FedSOL Fig. 8 axes: top-2 Hessian eigenvectors
            hp = json.dumps({"directions": "hessian", "points": 3, "hessian_samples": 128, "train_samples": 64})
            assert analysis_main(["landscape", "--run-dir", d, "--out", f"{d}/eig.npz", "--params", hp]) == 0
            ze = np.load(tmp_path / d / "eig.npz")
            eig = json.loads(str(ze["meta"]))["eigenvalues"]
            assert len(eig) == 2 and eig[0] >= eig[1] > 0 and ze["train_loss"].shape == (3, 3)
            # one client of round 1 replaced: the runs separate (a swapped sample, replaced in place, is
            # drawn by none of these 2 rounds × 2 steps × 16 of ~360 samples per client: distance 0)
            assert analysis_main(["stability", "--run-dir", d, "--partition", str(ppath), "--out",
                                  f"{d}/{paths.STABILITY}", "--params", '{"neighbour": "client"}']) == 0
            st = json.loads((tmp_path / d / paths.STABILITY).read_text())
            assert st["distance"] > 0 and st["reproduces_trained_run_max_abs"] == 0.0
        h = json.loads((tmp_path / d / paths.HESSIAN).read_text())
        assert len(h["eigenvalues"]) == 5 and h["num_samples"] == 256 and h["lambda_max"] >= h["lambda_5"]
        z = np.load(tmp_path / d / paths.LANDSCAPE[2])
        assert z["train_loss"].shape == (5, 5) and z["test_loss"].shape == (5, 5)
        theta = torch.load(tmp_path / d / "model.pt")["theta"]
        meta = json.loads(str(z["meta"]))
        assert meta["one_d"] == "zero" and meta["direction_seed"] == 0
        summary = json.loads((tmp_path / d / "summary.json").read_text())
        # the origin of the test surface is the final test loss of the run
        assert abs(z["test_loss"][2, 2] - summary["final_loss"]) < 1e-5
    for name in study.figures:
        m = json.loads(json.dumps(figure_manifest(study, name)))
        FIGURE_KINDS.get(m["kind"]).render(m, [f"figures/{name}.pdf"])  # vector: fast to write
        assert (tmp_path / "figures" / f"{name}.pdf").stat().st_size > 1000
    for name in study.tables:
        m = json.loads(json.dumps(table_manifest(study, name)))
        TABLE_KINDS.get(m["kind"]).render(m, tmp_path / "tables" / name)
        assert "FedAvg" in (tmp_path / "tables" / f"{name}.md").read_text()


def test_bad_analysis_config_fails_before_compute():
    bad = {**CONFIG, "analysis": {"hessian": {"top_k": 0}}}
    with pytest.raises(ConfigError, match="analysis.hessian.top_k"):
        from_config(bad, "hessian")
    with pytest.raises(ConfigError, match="analysis: unknown key 'hesian'"):
        from_config({"analysis": {"hesian": {}}}, "hessian")
    with pytest.raises(ConfigError, match="hooks.sharpness.every"):
        load_study({**CONFIG, "analysis": {"hooks": {"sharpness": {"every": 0}}}})
    with pytest.raises(ConfigError, match="figures.x.data"):
        load_study({**CONFIG, "figures": {"x": {"kind": "landscape_surface", "experiment": "main", "data": "val"}}})
    assert analysis_main(["landscape", "--run-dir", "nowhere", "--out", "x.npz", "--params", '{"one_d": "all"}']) == 2
