"""Where a running leaderboard stands, stage by stage, from the files on disk (`python -m fedflat.leaderboard
--progress`). Snakemake's own "k of n steps" cannot say it: the final runs and the fallback re-runs join its
DAG only when the checkpoints before them have been written."""
from __future__ import annotations

import json
from pathlib import Path

from .flow import choice_path, fallback_on, fallback_path, tuning_inputs


def _count(study, runs: dict) -> dict:
    """Done, diverged and Hessian-done counts of {partition: [(run id, labels)]}."""
    out = {"runs": 0, "done": 0, "diverged": 0, "hessians": 0}
    for entries in runs.values():
        for rid, _ in entries:
            d = Path(study.run_dir(rid))
            out["runs"] += 1
            if (d / "summary.json").exists():
                out["done"] += 1
                out["diverged"] += json.loads((d / "summary.json").read_text())["status"] != "completed"
            out["hessians"] += (d / "hessian.json").exists()
    return out


def progress(study) -> list[tuple[str, str]]:
    """[(stage, state)]: what is done and what is still unknown because its checkpoint has not run."""
    from .flow import fallback_experiments, final_experiments

    tuning = [Path(f) for f in tuning_inputs(study)]
    rows = [("tuning", f"{sum(f.exists() for f in tuning)} of {len(tuning)} runs")]
    if not Path(choice_path(study)).exists():
        return rows + [("final", "waits for the tuning choice (checkpoint leaderboard_choice)")]
    study.choice = lambda: json.loads(Path(choice_path(study)).read_text())
    c = _count(study, final_experiments(study))
    rows.append(("final", f"{c['done']} of {c['runs']} runs ({c['diverged']} diverged), "
                          f"{c['hessians']} of {c['runs']} Hessians"))
    if not fallback_on(study):
        return rows
    if not Path(fallback_path(study)).exists():
        return rows + [("fallback", "waits for every final run (checkpoint leaderboard_fallback)")]
    study.fallback = lambda: json.loads(Path(fallback_path(study)).read_text())
    f = _count(study, fallback_experiments(study))
    return rows + [("fallback", f"{f['done']} of {f['runs']} re-runs ({f['diverged']} diverged), "
                                f"{f['hessians']} of {f['runs']} Hessians")]


def render(rows: list[tuple[str, str]]) -> str:
    return "\n".join(f"{stage:9s} {state}" for stage, state in rows)
