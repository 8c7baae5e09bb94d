"""Fake run directories in the real on-disk format (what fl.engine and the Snakemake rules write), for the
evidence tests."""
import json
from pathlib import Path

import pandas as pd

from fedflat.core.util.numerics import NUMERICS_VERSION


def environment(commit: str = "abc123", numerics: str = "portable") -> dict:
    """config.json's environment of a run made at `commit` in `numerics` (training/fl/engine.py environment())."""
    return {"fedflat": "0.1.0", "git_commit": commit, "torch": "2.14.1", "numerics": numerics,
            "numerics_version": NUMERICS_VERSION, "cpu_model": "test CPU", "cpu_capability": "AVX2", "mkl": "2024.2",
            "threads": 1}


def write_run(d: Path, spec, acc: float | None, lam: float | None = None, rounds: int = 4, commit: str = "abc123",
              eval_split: str = "test", numerics: str = "portable") -> None:
    """A finished run: acc None = diverged in its last round; made at a clean commit in `numerics`."""
    d.mkdir(parents=True, exist_ok=True)
    ok = acc is not None
    m = pd.DataFrame({"round": range(1, rounds + 1), "lr": spec.training["lr"], "train_loss": 1.0,
                      "test_loss": 0.5, "test_acc": [0.1] * (rounds - 1) + [acc or 0.1],
                      "flatness_distance": [2.0, 4.0, 6.0, 8.0][:rounds], "clients": 2, "up_bytes": 80,
                      "down_bytes": 80, "grad_evals": 10, "wall_time": 0.1,
                      "status": ["ok"] * (rounds - 1) + ["ok" if ok else "diverged"]})
    m.to_csv(d / "metrics.csv", index=False)
    summary = {"status": "completed" if ok else "diverged", "final_acc": acc or 0.0, "last10_acc": acc or 0.0,
               "best_acc": acc or 0.1, "final_loss": 0.5, "rounds_completed": rounds, "eval_split": eval_split,
               "up_bytes_total": 320, "down_bytes_total": 320, "grad_evals_per_step": 1, "wall_time": 12.5,
               "train_time": 11.0, "num_params": 10, "resumed_from": []}
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "config.json").write_text(json.dumps({"spec": spec.to_dict(), "run_id": spec.run_id(), "backend": "eager",
                                               "environment": environment(commit, numerics)}))
    (d / "benchmark.tsv").write_text("s\th:m:s\tmax_rss\tmax_vms\n12.5\t0:00:12\t512.25\t900\n")
    if lam is not None:
        (d / "hessian.json").write_text(json.dumps({"eigenvalues": [lam], "lambda_max": lam, "trace": 10 * lam}))
