"""One compact, pandas-readable record per run: the settings that identify it, the seed, where its data came
from, what it measured and what it cost, and which code made it. Built from the run directory's own files
(summary.json, config.json, metrics.csv, hessian.json, hessian_clients.json, hessian_test.json, benchmark.tsv)."""
from __future__ import annotations

import json
import math
from pathlib import Path

from ..core.recorded import FILE_COLUMNS, current_keys
from ..core.util.curves import CURVE_COSTS, curve_costs

# The order of runs.csv's columns (a test pins them: pages and trace read them by name).
COLUMNS = (
    "run_id", "settings_hash", "experiments", "label", "dataset", "partition", "model", "preset", "hparams",
    "lr", "rounds", "local_steps", "batch_size", "num_clients", "participation", "holdout", "uplink", "seed",
    "eval_split", "data", "status", "rounds_completed", "diverged_round", "final_acc", "last10_acc", "best_acc",
    "final_loss", "flatness_mean", "lambda_max", "trace", "lambda_max_clients_mean", "lambda_max_clients_max",
    "lambda_max_test", "up_bytes_total", "down_bytes_total", *CURVE_COSTS,
    "grad_evals_per_step", "wall_time_s", "peak_rss_mb", "backend", "fedflat", "git_commit", "torch",
    # what made the run (util/numerics.py): the kernels, the machine, a resume; `legacy` marks a record kept although
    # it cannot be regenerated (no clean commit or no numerics fields), which no rendered verdict may use
    "numerics", "numerics_version", "cpu_model", "cpu_capability", "mkl", "threads", "resumed_from", "legacy",
)
# the columns a record made before the numerics fields existed lacks
NUMERICS_COLUMNS = COLUMNS[COLUMNS.index("numerics"):COLUMNS.index("legacy")]

def provenance(dataset: str, eval_split: str) -> str:
    from ..training.data.split_provenance import provenance as test_split

    return test_split(dataset) + ("; scored on the validation split carved from the training clients"
                                  if eval_split == "validation" else "")


def _num(x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return float("nan")
    return v


def _metrics(path: Path):
    """metrics.csv as a frame (None where the run has none)."""
    from ..training.fl.metrics import read_metrics

    return read_metrics(path) if path.exists() else None  # a truncated file is refused, never recorded


def _metrics_tail(m) -> tuple[float, int | None]:
    """(mean flatness distance over rounds, the round a diverged run stopped in) from metrics.csv's frame."""
    if m is None or m.empty:
        return float("nan"), None
    flat = float(m["flatness_distance"].mean()) if "flatness_distance" in m else float("nan")
    bad = m[m["status"] != "ok"] if "status" in m else m.iloc[0:0]
    return flat, (int(bad["round"].iloc[0]) if len(bad) else None)


def _json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def _pct(x) -> float:
    """summary.json's fraction as a percentage; NaN where it holds none."""
    return 100 * _num(x)


def _peak_rss(path: Path) -> float:
    if not path.exists():
        return float("nan")
    lines = path.read_text().splitlines()
    if len(lines) < 2:
        return float("nan")
    head, vals = lines[0].split("\t"), lines[-1].split("\t")
    return _num(dict(zip(head, vals)).get("max_rss"))


def run_record(run_dir: str | Path, spec, experiments: list[str], label: str) -> dict:
    """The record of one finished run (summary.json present). `spec` is its RunSpec; `experiments` the study's
    experiments it belongs to; `label` its algorithm label there."""
    d = Path(run_dir)
    s = current_keys(json.loads((d / "summary.json").read_text()))
    cfg = json.loads((d / "config.json").read_text()) if (d / "config.json").exists() else {}
    env = cfg.get("environment", {})
    files = {f: _json(d / f) for f in dict.fromkeys(f for f, _ in FILE_COLUMNS)}  # hessian*.json
    hess = files["hessian.json"]
    from ..training.fl.engine import BYTES_PER_FLOAT

    m = _metrics(d / "metrics.csv")
    flat, bad_round = _metrics_tail(m)
    tr = spec.training
    ok = s["status"] == "completed"
    last10 = _pct(s.get("last10_acc")) if ok else float("nan")
    eigs = hess.get("eigenvalues") or hess.get("top_eigenvalues") or []
    lam = hess.get("lambda_max", eigs[0] if eigs else float("nan"))
    return {
        "run_id": spec.run_id(), "settings_hash": spec.digest(), "experiments": ";".join(experiments),
        "label": label, "dataset": spec.dataset, "partition": spec.partition, "model": spec.model,
        "preset": spec.algorithm, "hparams": json.dumps(spec.hparams, sort_keys=True),
        "lr": tr["lr"], "rounds": tr["rounds"], "local_steps": tr["local_steps"], "batch_size": tr["batch_size"],
        "num_clients": tr["num_clients"], "participation": tr["participation"], "holdout": tr.get("holdout", 0.0),
        "uplink": json.dumps(spec.uplink, sort_keys=True) if spec.uplink else "", "seed": spec.seed,
        "eval_split": s.get("eval_split", "test"), "data": provenance(spec.dataset, s.get("eval_split", "test")),
        "status": s["status"], "rounds_completed": s.get("rounds_completed"),
        "diverged_round": None if ok else (bad_round if bad_round is not None else s.get("rounds_completed")),
        "final_acc": _pct(s.get("final_acc")) if ok else float("nan"),
        "last10_acc": last10,
        "best_acc": 100 * s["best_acc"] if s.get("best_acc") is not None else float("nan"),
        "final_loss": _num(s.get("final_loss")) if ok else float("nan"),
        "flatness_mean": flat if ok else float("nan"),
        **{col: _num(files[f].get(key)) for (f, key), col in FILE_COLUMNS.items()},
        "lambda_max": _num(lam),  # older hessian.json files hold only the eigenvalue list
        "up_bytes_total": s.get("up_bytes_total"), "down_bytes_total": s.get("down_bytes_total"),
        **curve_costs(m, last10, ok, BYTES_PER_FLOAT),
        "grad_evals_per_step": s.get("grad_evals_per_step"),
        "wall_time_s": _num(s.get("wall_time")), "peak_rss_mb": _peak_rss(d / "benchmark.tsv"),
        "backend": cfg.get("backend", s.get("backend")), "fedflat": env.get("fedflat"),
        "git_commit": env.get("git_commit"), "torch": env.get("torch"),
        **{k: env.get(k) for k in ("numerics", "numerics_version", "cpu_model", "cpu_capability", "mkl", "threads")},
        # the checkpoint rounds the run resumed from ("" for a run made in one process; None: not recorded)
        "resumed_from": " ".join(map(str, s["resumed_from"])) if "resumed_from" in s else None,
        "legacy": "",
    }


def regenerable(record: dict) -> str | None:
    """Why a record cannot be regenerated from the commit it names (None: it can): a modified working tree, no
    commit, or no numerics fields (made before they were recorded)."""
    commit = str(record.get("git_commit") or "")
    if not commit or commit == "nan":
        return "no commit recorded"
    if commit.endswith("-dirty"):
        return f"made from a modified working tree ({commit})"
    if record.get("numerics") in (None, "") or (isinstance(record.get("numerics"), float)
                                                  and math.isnan(record["numerics"])):
        return "no numerics fields (made before they were recorded)"
    return None
