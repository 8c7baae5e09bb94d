"""paper_curves / paper_sweep render from fabricated run outputs (no training)."""
import json

import pandas as pd

from fedflat.papers.render import render_curves, render_sweep


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
