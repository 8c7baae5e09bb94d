"""A small leaderboard config (tiny scale) over a few methods, the rest listed as excluded; fake final runs."""
import json
from pathlib import Path

import numpy as np
import pandas as pd

from fedflat.pipeline.study import load_config_file
from fedflat.core.util.numerics import of_config as numerics_of_config
from tests.evidence.helpers import environment

REPO = Path(__file__).resolve().parents[3]


def small_config(methods: dict, seeds=(0,), lr=(0.1,), scale="tiny", continuation: dict | None = None) -> dict:
    """continuation None: the screen's choice goes straight to the final runs (the v1 flow); a mapping: v2."""
    cfg = load_config_file(REPO / "config" / "leaderboard.yaml")
    cfg["scale"] = scale
    cfg["data_root"] = str(REPO / "data")
    lb = cfg["leaderboard"]
    for name in list(lb["methods"]):
        if name not in methods:
            lb["excluded"][name] = "not in this test"
            del lb["methods"][name]
    lb["methods"].update(methods)
    lb["seeds"] = list(seeds)
    lb["tuning"]["lr"] = list(lr)
    lb["tuning"]["lr_only"] = list(lr)  # a method without own keys: the same lr values
    del lb["tuning"]["trials"]  # small grids of unequal size: the equal-trials check is test_protocol's
    lb["tuning"].pop("continuation", None)
    if continuation is not None:
        lb["tuning"]["continuation"] = continuation
    return cfg


def write_final_run(d: Path, spec, acc: float | None, seed: int):
    d.mkdir(parents=True, exist_ok=True)
    rounds = 10
    # a method that diverges on seed 1 reached 70 % on seed 0: the best of its partition, had it not blown up
    a = None if acc is None and seed == 1 else (acc if acc is not None else 0.7) + 0.001 * seed
    curve = np.linspace(0.1, a or 0.1, rounds)
    ok = a is not None
    blowup = 1e30 if not ok else 1.0  # a diverged run's last rounds: exploding flatness and curvature
    m = pd.DataFrame({"round": range(1, rounds + 1), "test_acc": curve, "clients": 2,
                      "up_bytes": 8.0 * 100, "down_bytes": 8.0 * 100 * (2 if spec.algorithm == "fednsam" else 1),
                      "grad_evals": 2 * 5 * (2 if spec.algorithm == "fedsam" else 1),
                      "flatness_distance": blowup * {"fedavg": 1.0, "fedsam": 0.5, "fednsam": 0.1}[spec.algorithm]})
    m.to_csv(d / "metrics.csv", index=False)
    (d / "summary.json").write_text(json.dumps({
        "status": "completed" if ok else "diverged", "final_acc": a, "last10_acc": a, "rounds_completed": rounds,
        "wall_time": 12.0 if ok else 1.0, "grad_evals_per_step": 2 if spec.algorithm == "fedsam" else 1}))
    (d / "config.json").write_text(json.dumps({"spec": spec.to_dict(), "run_id": spec.run_id(), "backend": "eager",
                                               "environment": environment(numerics=numerics_of_config({"scale": "tiny"}))}))
    lam = {"fedavg": 9.0, "fedsam": 3.0, "fednsam": 5.0}[spec.algorithm]
    (d / "hessian.json").write_text(json.dumps({"lambda_max": blowup * lam, "trace": blowup * 100.0}))
