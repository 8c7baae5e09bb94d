"""Where a running leaderboard stands, stage by stage, from the files on disk and the committed evidence
(`python -m fedflat.leaderboard --progress`). Snakemake's own "k of n steps" cannot say it: each stage after the
first joins its DAG only when the checkpoint before it has been written, and a run recorded in the committed
evidence (fedflat.core.recorded) is not scheduled at all."""
from __future__ import annotations

from pathlib import Path

from ...core.recorded import covers
from .flow import continuation_on, read_checkpoint_files


def _count(study, runs) -> dict:
    """Done (on disk or recorded), recorded, diverged and Hessian-done counts of [(run id, labels)]."""
    out = {"runs": 0, "done": 0, "recorded": 0, "diverged": 0, "hessians": 0, "wall": []}
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
            if "source" not in s and s.get("wall_time"):  # measured on this machine, beside the other jobs
                out["wall"].append(float(s["wall_time"]))
        # the run directory's hessian.json (null for a diverged model), else a record that covers it
        out["hessians"] += Path(study.run_dir(rid), "hessian.json").exists() or covers(rid, ("lambda_max",), numerics=study.numerics)
    return out


def _state(c: dict, hessians: bool = False) -> str:
    s = f"{c['done']} of {c['runs']} runs ({c['diverged']} diverged"
    s += f", {c['recorded']} read from the committed evidence)" if c["recorded"] else ")"
    return s + (f", {c['hessians']} of {c['runs']} Hessians" if hessians else "")


def _entries(stage_runs: dict) -> list:
    return [e for entries in stage_runs.values() for e in entries]


def time_left(counts: dict[str, dict], jobs: int) -> str | None:
    """'about H h left ...' from the stages' pending runs and Hessians at the pace measured in each stage (the mean
    wall time of its runs done on this machine, `jobs` at once), or None when nothing is pending. A stage with
    pending runs but none measured yet is named, not guessed."""
    from .plan import HESSIAN_JOB_S

    seconds, unmeasured, paces = 0.0, [], []
    for stage, c in counts.items():
        pending = c["runs"] - c["done"]
        seconds += HESSIAN_JOB_S * (c["runs"] - c["hessians"]) if c.get("with_hessians") else 0.0
        if pending <= 0:
            continue
        if not c["wall"]:
            unmeasured.append(stage)
            continue
        pace = sum(c["wall"]) / len(c["wall"])
        seconds += pending * pace
        paces.append(f"{pace:.0f} s per {stage} run")
    if seconds == 0:
        return f"not known yet: no {', '.join(unmeasured)} run measured here" if unmeasured else None
    text = f"about {seconds / 3600 / jobs:.1f} h on {jobs} jobs at once" + (f" ({', '.join(paces)})" if paces else "")
    return text + (f"; not counted: {', '.join(unmeasured)} (no run of it measured here yet)" if unmeasured else "")


def progress(study, jobs: int = 2) -> list[tuple[str, str]]:
    """[(stage, state)]: what is done and what is still unknown because its checkpoint has not run, and the time
    the known stages still need at their measured pace (`jobs` runs at once)."""
    rows = _stages(study)
    left = time_left({stage: c for stage, c, _ in rows if c is not None}, jobs)
    return [(stage, state) for stage, _, state in rows] + ([("left", left)] if left else [])


def _stages(study) -> list[tuple[str, dict | None, str]]:
    """[(stage, its counts or None, state)]."""
    from .flow import ablation_experiments, continuation_experiments, final_experiments
    from .protocol import TUNING_TABLE

    spec = study.tables[TUNING_TABLE]
    tuning = [(rid, lab) for e in spec["experiments"] for rid, lab in study.experiments[e]]
    first = "screen" if continuation_on(study) else "tuning"

    def row(stage, runs, hessians=False):
        c = {**_count(study, runs), "with_hessians": hessians}
        return stage, c, _state(c, hessians)

    rows = [row(first, tuning)]
    screen, choice = read_checkpoint_files(study)
    if continuation_on(study):
        if not screen:
            return rows + [("continuation", None, "waits for the screen (checkpoint leaderboard_screen)")]
        rows.append(row("continuation", _entries(continuation_experiments(study))))
    if not choice:
        return rows + [("final", None, "waits for the tuning choice (checkpoint leaderboard_choice)")]
    rows.append(row("final", _entries(final_experiments(study)), hessians=True))
    if continuation_on(study):
        rows.append(row("ablation", _entries(ablation_experiments(study))))
    return rows


def render(rows: list[tuple[str, str]]) -> str:
    return "\n".join(f"{stage:12s} {state}" for stage, state in rows)
