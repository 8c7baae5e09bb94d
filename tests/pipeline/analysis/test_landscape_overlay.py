"""Figure kind landscape_overlay (FedSynSAM Fig. 1) on a fake study: which runs each panel reads, the
drawing (4 panels, two surfaces each, the overlay purple and transparent, one z-range), the sharpness
numbers, and one-line ConfigErrors naming the key. Landscape files are synthetic (no training)."""
import copy
import json
from pathlib import Path

import numpy as np
import pytest
from matplotlib.colors import rgb_to_hsv, to_rgb
from mpl_toolkits.mplot3d.art3d import Poly3DCollection

from fedflat.pipeline.analysis.overlay import LandscapeOverlay, edge_rise, overlay_figure
from fedflat.core.errors import ConfigError
from fedflat.pipeline.study import figure_inputs, figure_manifest, load_study


def _exp(partitions, uplink=None):
    e = {"datasets": ["digits"], "models": ["linear"], "partitions": partitions, "algorithms": ["fedavg"],
         "seeds": [0, 1]}
    return {**e, "uplink": uplink} if uplink else e


IID = {"partition": "iid"}
DIR = {"partition": "dir0.01"}
FIG = {"kind": "landscape_overlay", "annotate": "hessian", "panels": [
    {"title": "(a) 4 bit Quantization, IID", "experiment": "q4", "overlay_experiment": "plain", "overlay_select": IID},
    {"title": "(b) Top-k 0.25 sparsity, IID", "experiment": "k25", "overlay_experiment": "plain", "overlay_select": IID},
    {"title": "(c) 8 bit Quantization, IID", "experiment": "q8", "select": IID, "overlay_experiment": "plain",
     "overlay_select": IID},
    {"title": "(d) 8 bit Quantization, Dir(0.01)", "experiment": "q8", "select": DIR, "overlay_experiment": "plain",
     "overlay_select": DIR}]}
CONFIG = {
    "training": {"num_clients": 4, "participation": 0.5, "rounds": 1, "local_steps": 1, "batch_size": 8},
    "experiments": {"plain": _exp(["iid", "dir0.01"]), "q4": _exp(["iid"], {"kind": "quant", "bits": 4}),
                    "k25": _exp(["iid"], {"kind": "topk", "k": 0.25}),
                    "q8": _exp(["iid", "dir0.01"], {"kind": "quant", "bits": 8})},
    "figures": {"fig1": FIG},
}
# curvature of each run's synthetic surface and its λ_max: the uncompressed runs are the flattest
CURV = {("plain", "iid"): (1.0, 7.56), ("q4", "iid"): (2.2, 8.82), ("k25", "iid"): (1.9, 8.5),
        ("q8", "iid"): (1.5, 8.36), ("plain", "dir0.01"): (2.0, 17.04), ("q8", "dir0.01"): (3.0, 17.78)}
AXIS = np.linspace(-1, 1, 9)
META = {"directions": "random", "direction_seed": 0, "one_d": "zero", "range": [-1.0, 1.0], "points": 9}


def _write_runs(study, seed=0, meta=META):
    X, Y = np.meshgrid(AXIS, AXIS)
    for ename, runs in study.experiments.items():
        for rid, lab in runs:
            if lab["seed"] != seed:
                continue
            c, lam = CURV[(ename, lab["partition"].split("-")[0])]
            d = Path(study.run_dir(rid))
            d.mkdir(parents=True, exist_ok=True)
            Z = 0.3 + c * (X**2 + 0.5 * Y**2)
            np.savez(d / "landscape_2d.npz", axis=AXIS, train_loss=Z, test_loss=Z + 0.1, meta=json.dumps(meta))
            (d / "hessian.json").write_text(json.dumps({"lambda_max": lam}))
            (d / "hessian_clients.json").write_text(json.dumps({"lambda_max_mean": 10 * lam, "lambda_max_max": 20 * lam}))


def _zmax(surface: Poly3DCollection) -> float:
    return float(surface._faces[..., 2].max())  # the face vertices (x, y, z) as plot_surface stored them


def _runs(study, ename, partition, seed=0):
    return [study.run_dir(r) for r, lab in study.experiments[ename] if lab["seed"] == seed
            and lab["partition"].startswith(partition)]


def test_each_panel_reads_its_compressed_run_and_the_uncompressed_run_of_the_same_partition():
    study = load_study(copy.deepcopy(CONFIG))
    m = figure_manifest(study, "fig1")
    plain_iid, plain_dir = _runs(study, "plain", "iid")[0], _runs(study, "plain", "dir")[0]
    want = [(_runs(study, "q4", "iid")[0], plain_iid), (_runs(study, "k25", "iid")[0], plain_iid),
            (_runs(study, "q8", "iid")[0], plain_iid), (_runs(study, "q8", "dir")[0], plain_dir)]
    got = [(str(Path(p["main"]["file"]).parent), str(Path(p["overlay"]["file"]).parent)) for p in m["panels"]]
    assert got == want
    assert [p["title"][:3] for p in m["panels"]] == ["(a)", "(b)", "(c)", "(d)"]
    # inputs: both runs' landscape (and, with annotate: hessian, hessian.json) files, each once
    ins = figure_inputs(study, "fig1")
    runs = list(dict.fromkeys(d for pair in want for d in pair))
    assert ins == [f"{d}/{f}" for d in runs for f in ("landscape_2d.npz", "hessian.json")]
    cfg = copy.deepcopy(CONFIG)
    cfg["figures"]["fig1"] = {**FIG, "annotate": "edge", "seed": 1}
    study1 = load_study(cfg)
    assert figure_inputs(study1, "fig1") == [f"{d}/landscape_2d.npz" for d in
                                             dict.fromkeys(d for n, p in (("q4", "iid"), ("plain", "iid"), ("k25", "iid"),
                                                                          ("q8", "iid"), ("q8", "dir"), ("plain", "dir"))
                                                           for d in _runs(study1, n, p, seed=1))]


def test_figure_has_four_panels_with_a_purple_transparent_overlay_and_shared_z(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    study = load_study(copy.deepcopy(CONFIG))
    _write_runs(study)
    m = figure_manifest(study, "fig1")
    fig = overlay_figure(m)
    axes = [ax for ax in fig.axes if ax.name == "3d"]
    assert len(axes) == 4
    zmax = {(e, p): 0.3 + c * 1.5 for (e, p), (c, _) in CURV.items()}  # the corner of each surface
    pairs = [(("q4", "iid"), ("plain", "iid")), (("k25", "iid"), ("plain", "iid")), (("q8", "iid"), ("plain", "iid")),
             (("q8", "dir0.01"), ("plain", "dir0.01"))]
    for ax, (main, over), title in zip(axes, pairs, [p["title"] for p in FIG["panels"]]):
        surfs = [c for c in ax.collections if isinstance(c, Poly3DCollection)]
        assert len(surfs) == 2
        comp, plain = surfs
        fc = plain.get_facecolor()
        # one colour (purple, shaded: same hue and saturation, varying value), transparent
        assert np.allclose(rgb_to_hsv(fc[:, :3])[:, :2], rgb_to_hsv(to_rgb("purple"))[:2]) and (fc[:, 3] < 1).all()
        cc = comp.get_facecolor()
        assert (cc[:, 3] == 1).all() and len(np.unique(cc[:, :3].round(3), axis=0)) > 5  # opaque, a colormap
        # each surface is its own run's: the corner heights are the runs' (z = 0.3 + c(1 + 0.5))
        assert _zmax(comp) == pytest.approx(zmax[main]) and _zmax(plain) == pytest.approx(zmax[over])
        assert ax.get_title() == title
        assert ax.get_xlabel() == "direction 1" and ax.get_ylabel() == "direction 2"
        assert ax.get_zlabel() == "training loss"
        note = " ".join(t.get_text() for t in ax.texts)
        assert f"λ_max: {CURV[main][1]:.4g} (w/ comp), {CURV[over][1]:.4g} (w/o comp)" in note
        assert any(a.get_text() == "w/o comp" for a in ax.texts)  # the paper's arrowed label
    zl = {ax.get_zlim() for ax in axes}
    assert len(zl) == 1  # one z-range: flatness compares across panels
    lo, hi = zl.pop()
    assert lo == pytest.approx(0.3) and hi == pytest.approx(max(zmax.values()))
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["w/ comp", "w/o comp"]
    outs = [tmp_path / "f.pdf", tmp_path / "f.png"]
    LandscapeOverlay.render(m, outs)
    assert all(o.stat().st_size > 0 for o in outs)


def test_zlim_clips_and_test_surface(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = copy.deepcopy(CONFIG)
    cfg["figures"]["fig1"] = {**FIG, "zlim": [0.0, 2.0], "data": "test", "annotate": "none"}
    study = load_study(cfg)
    _write_runs(study)
    fig = overlay_figure(figure_manifest(study, "fig1"))
    axes = [ax for ax in fig.axes if ax.name == "3d"]
    assert {ax.get_zlim() for ax in axes} == {(0.0, 2.0)} and axes[0].get_zlabel() == "test loss"
    for ax in axes:
        assert all(_zmax(c) <= 2.0 for c in ax.collections if isinstance(c, Poly3DCollection))
        assert not [t for t in ax.texts if "λ_max" in t.get_text() or "Δ edge" in t.get_text()]


def test_edge_rise_by_hand():
    X, Y = np.meshgrid([-1.0, 0.0, 1.0], [-1.0, 0.0, 1.0])
    assert edge_rise(np.array([-1.0, 0.0, 1.0]), X**2 + Y**2) == pytest.approx(1.5)  # corners 2, edges 1, centre 0
    axis = np.array([-0.5, 0.0, 0.5, 1.0])  # asymmetric grid: the centre is the point at 0
    Z = np.arange(16.0).reshape(4, 4)
    border = [0, 1, 2, 3, 12, 13, 14, 15, 4, 8, 7, 11]
    assert edge_rise(axis, Z) == pytest.approx(np.mean(border) - Z[1, 1])


def test_surfaces_on_different_axes_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    study = load_study(copy.deepcopy(CONFIG))
    _write_runs(study)
    d = _runs(study, "plain", "dir")[0]  # panel (d)'s overlay only
    z = dict(np.load(f"{d}/landscape_2d.npz"))
    np.savez(f"{d}/landscape_2d.npz", **{**z, "meta": json.dumps({**META, "direction_seed": 3})})
    with pytest.raises(ConfigError, match=r"^figures\.fig1\.panels\[3\]: .*direction_seed \(0 vs 3\)"):
        overlay_figure(figure_manifest(study, "fig1"))


def _panel(i, **kw):
    panels = copy.deepcopy(FIG["panels"])
    panels[i] = {k: v for k, v in {**panels[i], **kw}.items() if v is not None}
    return {"panels": panels}


@pytest.mark.parametrize("change, key", [
    (_panel(1, overlay_experiment=None), r"figures\.fig1\.panels\[1\]\.overlay_experiment: required"),
    (_panel(0, experiment="nope"), r"figures\.fig1\.panels\[0\]\.experiment: unknown value 'nope'"),
    (_panel(2, select=None), r"figures\.fig1\.panels\[2\]\.select: selects 2 runs of 'q8'"),
    (_panel(0, select={"partiton": "iid"}), r"figures\.fig1\.panels\[0\]\.select: unknown key 'partiton'"),
    (_panel(0, overlay_select={"partition": "dir0.5"}), r"figures\.fig1\.panels\[0\]\.overlay_select: selects no run"),
    (_panel(0, select={"experiment": "plain"}), r"figures\.fig1\.panels\[0\]\.select\.experiment: not allowed"),
    (_panel(3, legend="x"), r"figures\.fig1\.panels\[3\]: unknown key 'legend'"),
    ({"panels": []}, r"figures\.fig1\.panels: a non-empty list"),
    ({"seed": 5}, r"figures\.fig1\.seed: 5 is not a seed"),
    ({"data": "both"}, r"figures\.fig1\.data: unknown value 'both'"),
    ({"annotate": "eigen"}, r"figures\.fig1\.annotate: unknown value 'eigen'"),
    ({"overlay_alpha": 1}, r"figures\.fig1\.overlay_alpha: a transparency in \(0, 1\)"),
    ({"zlim": [2, 1]}, r"figures\.fig1\.zlim: expected \[low, high\]"),
    ({"cmap": "nope"}, r"figures\.fig1\.cmap: 'nope' is not a matplotlib colormap"),
    ({"overlay_color": "purplish"}, r"figures\.fig1\.overlay_color: 'purplish' is not"),
    ({"overlay_lable": "w/o"}, r"figures\.fig1: unknown key 'overlay_lable'"),
    ({"hessian_value": "hessian_local.json:lambda_max_mean"}, r"figures\.fig1\.hessian_value: '<file>:<key>'"),
    ({"hessian_value": "hessian_clients.json"}, r"figures\.fig1\.hessian_value: '<file>:<key>'"),
])
def test_bad_entry_is_one_line_config_error_naming_the_key(change, key):
    cfg = copy.deepcopy(CONFIG)
    cfg["figures"]["fig1"] = {**FIG, **change}
    with pytest.raises(ConfigError, match=f"^{key}") as exc:
        load_study(cfg)
    assert "\n" not in str(exc.value)


def test_the_annotation_reads_the_named_hessian_value(tmp_path, monkeypatch):
    """hessian_value: hessian_clients.json:lambda_max_mean (FedSynSAM Table I's stated reading) annotates each
    panel with that file's key, and the inputs ask for that file instead of hessian.json."""
    monkeypatch.chdir(tmp_path)
    cfg = copy.deepcopy(CONFIG)
    cfg["figures"]["fig1"] = {**FIG, "hessian_value": "hessian_clients.json:lambda_max_mean"}
    study = load_study(cfg)
    _write_runs(study)
    ins = figure_inputs(study, "fig1")
    assert {Path(f).name for f in ins} == {"landscape_2d.npz", "hessian_clients.json"}
    fig = overlay_figure(figure_manifest(study, "fig1"))
    ax = [a for a in fig.axes if a.name == "3d"][0]
    note = " ".join(t.get_text() for t in ax.texts)
    main, over = ("q4", "iid"), ("plain", "iid")
    assert f"λ_max (mean over clients): {10 * CURV[main][1]:.4g} (w/ comp), {10 * CURV[over][1]:.4g} (w/o comp)" in note
