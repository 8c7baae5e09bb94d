"""Where a running leaderboard stands, stage by stage, from the files on disk and the committed evidence
(`python -m fedflat.leaderboard --progress`). Snakemake's own "k of n steps" cannot say it: each stage after the
first joins its DAG only when the checkpoint before it has been written, and a run recorded in the committed
evidence (fedflat.recorded) is not scheduled at all."""
from __future__ import annotations

from pathlib import Path

from ..recorded import covers
from .flow import continuation_on, read_checkpoint_files


def _count(study, runs) -> dict:
    """Done (on disk or recorded), recorded, diverged and Hessian-done counts of [(run id, labels)]."""
    out = {"runs": 0, "done": 0, "recorded": 0, "diverged": 0, "hessians": 0}
    for rid, _ in runs:
        out["runs"] += 1
        try:
            s = study.outcome(rid)  # summary.json, or the committed record ("source" says which)
        except FileNotFoundError:
            s = None
        if s is not None:
            out["done"] += 1
            out["recorded"] += "source" in s
            out["diverged"] += s["status"] != "completed"
        # the run directory's hessian.json (null for a diverged model), else a record that covers it
        out["hessians"] += Path(study.run_dir(rid), "hessian.json").exists() or covers(rid, ("lambda_max",))
    return out


def _state(c: dict, hessians: bool = False) -> str:
    s = f"{c['done']} of {c['runs']} runs ({c['diverged']} diverged"
    s += f", {c['recorded']} read from the committed evidence)" if c["recorded"] else ")"
    return s + (f", {c['hessians']} of {c['runs']} Hessians" if hessians else "")


def _entries(stage_runs: dict) -> list:
    return [e for entries in stage_runs.values() for e in entries]


def progress(study) -> list[tuple[str, str]]:
    """[(stage, state)]: what is done and what is still unknown because its checkpoint has not run."""
    from .flow import ablation_experiments, continuation_experiments, final_experiments
    from .protocol import TUNING_TABLE

    spec = study.tables[TUNING_TABLE]
    tuning = [(rid, lab) for e in spec["experiments"] for rid, lab in study.experiments[e]]
    first = "screen" if continuation_on(study) else "tuning"
    rows = [(first, _state(_count(study, tuning)))]
    screen, choice = read_checkpoint_files(study)
    if continuation_on(study):
        if not screen:
            return rows + [("continuation", "waits for the screen (checkpoint leaderboard_screen)")]
        rows.append(("continuation", _state(_count(study, _entries(continuation_experiments(study))))))
    if not choice:
        return rows + [("final", "waits for the tuning choice (checkpoint leaderboard_choice)")]
    rows.append(("final", _state(_count(study, _entries(final_experiments(study))), hessians=True)))
    if continuation_on(study):
        rows.append(("ablation", _state(_count(study, _entries(ablation_experiments(study))))))
    return rows


def render(rows: list[tuple[str, str]]) -> str:
    return "\n".join(f"{stage:12s} {state}" for stage, state in rows)
