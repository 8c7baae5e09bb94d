"""paper_curves / paper_sweep render from fabricated run outputs (no training)."""
import json

import numpy as np
import pandas as pd

from fedflat.results.papers.render import render_curves, render_sweep


def _run(tmp_path, name, algo, seed, accs):
    d = tmp_path / name
    d.mkdir()
    n = len(accs)
    pd.DataFrame({"round": range(1, n + 1), "test_acc": accs, "up_bytes": [1e6] * n,
                  "wall_time": [0.5 * (i + 1) for i in range(n)], "train_loss": [1.0] * n}).to_csv(d / "metrics.csv", index=False)
    (d / "summary.json").write_text(json.dumps({"status": "completed", "final_acc": accs[-1], "last10_acc": accs[-1],
                                                "best_acc": max(accs), "rounds_completed": n}))
    return {"dir": str(d), "algorithm": algo, "seed": seed, "partition": "iid", "dataset": "d", "model": "m", "preset": algo.lower()}


def test_curves_by_cumulative_uplink_and_sweep(tmp_path):
    runs = [_run(tmp_path, f"r{i}", a, s, [0.1, 0.2 + 0.1 * i, 0.5]) for i, (a, s) in
            enumerate([("FedAvg", 0), ("FedAvg", 1), ("FedSAM", 0), ("FedSAM", 1)])]
    outs = [tmp_path / "c.pdf", tmp_path / "c.png"]
    render_curves({"title": "t", "caption": "P Fig. 1", "y": "test_acc", "x": "up_mb", "line_by": "algorithm",
                   "panels": [{"title": "a", "entries": runs}, {"title": "b", "entries": runs[:2]}]}, outs)
    assert all(o.stat().st_size > 0 for o in outs)
    out = [tmp_path / "s.pdf"]
    render_sweep({"title": "", "caption": "", "metric": "acc", "xlabel": "ρ", "xscale": "log",
                  "series": [{"label": "FedSAM", "points": [{"x": 0.1, "entries": runs[2:]}, {"x": 1.0, "entries": runs[:2]}]}]}, out)
    assert out[0].stat().st_size > 0


def test_curves_with_nothing_logged_still_render(tmp_path):
    """A metric no run logged gives panels that say so, not a crash (no legend entries at all)."""
    runs = [_run(tmp_path, "r0", "FedAvg", 0, [0.1, 0.2])]
    out = [tmp_path / "e.pdf"]
    render_curves({"title": "t", "caption": "P Fig. 3", "y": "sol_cosine", "x": "round", "line_by": "algorithm",
                   "panels": [{"title": "a", "entries": runs}]}, out)
    assert out[0].stat().st_size > 0


def test_sweep_of_an_analysis_file_with_a_reference_line(tmp_path):
    """A file: metric (λ_max from a Hessian file) on log axes with the line y = 2x: the values are read from each
    run's file (mean over seeds), and the reference line is drawn over the plotted x range."""
    import matplotlib

    matplotlib.use("Agg")
    from unittest import mock

    runs = []
    for i, (x, lam) in enumerate([(2, 3.0), (2, 5.0), (10, 15.0), (10, 17.0)]):
        r = _run(tmp_path, f"h{i}", "FedAvg", i % 2, [0.5, 0.6])
        (tmp_path / f"h{i}" / "hessian_r300_train.json").write_text(json.dumps({"lambda_max": lam}))
        runs.append(r)
    m = {"title": "", "caption": "", "metric": "file:hessian_r300_train.json:lambda_max", "xlabel": "1/η",
         "ylabel": "λ_max", "xscale": "log", "yscale": "log", "reference": {"slope": 2.0, "label": "2/η"},
         "series": [{"label": "IID", "points": [{"x": 2, "entries": runs[:2]}, {"x": 10, "entries": runs[2:]}]}]}
    import matplotlib.axes

    with mock.patch.object(matplotlib.axes.Axes, "errorbar", autospec=True,
                           side_effect=matplotlib.axes.Axes.errorbar) as eb, \
         mock.patch.object(matplotlib.axes.Axes, "plot", autospec=True, side_effect=matplotlib.axes.Axes.plot) as pl:
        render_sweep(m, [tmp_path / "s.png"])
    (_, xs, means), kw = eb.call_args
    assert list(xs) == [2, 10] and list(means) == [4.0, 16.0] and np.allclose(kw["yerr"], [2 ** 0.5] * 2)  # sample std over seeds
    ref = [c for c in pl.call_args_list if c.kwargs.get("label") == "2/η"]
    (_, gx, gy), = [c.args for c in ref]
    assert gx[0] == 2 and gx[-1] == 10 and list(gy) == list(2.0 * gx)
    assert (tmp_path / "s.png").stat().st_size > 0
