"""From the tuning runs to the final runs, automatically.

The final runs' ids depend on the chosen lr and hyperparameters, which exist only once the tuning runs
have finished; Snakemake's DAG is static, so the choice is a checkpoint (workflow/rules/leaderboard.smk):

  1. rule `leaderboard_choice` (a checkpoint) reads every tuning run's summary.json and writes
     <tables_dir>/tuning_choice.json with `write_choice` (the grid_search kind's own selection rule);
  2. the leaderboard's table and figures ask `final_experiments(study)` for their runs: it reads the choice
     through `study.choice` (in Snakemake: the checkpoint's output, so the DAG is re-evaluated once it
     exists), expands the final experiments at the study's scale and registers their runs and partitions in
     the study, where the train, partition and hessian rules find them.

The final runs always use the choice as it stands: a final seed that diverges counts as diverged in the rank
(v1's post-hoc re-run at a lower lr was removed in v2).

In-process builds (fedflat.pipeline.build, the tests) set `study.screen` and `study.choice` to `ensure_screen` and
`ensure_choice`, which train what the selection rests on and write the same files.
"""
from __future__ import annotations

import json
from pathlib import Path

from ...core.errors import ConfigError
from ...core.util.curves import CURVE_COSTS
from .protocol import CHOICE_FILE, SCREEN_FILE, TUNING_TABLE, exp_name, prepare

# what the leaderboard's tables and figures read of a final run beyond its summary: a final run whose record
# lacks one of these is run again (its Hessian needs the run directory's model)
FINAL_NEEDS = ("lambda_max", *CURVE_COSTS)


def choice_path(study) -> str:
    return f"{study.tables_dir}/{CHOICE_FILE}"


def screen_path(study) -> str:
    return f"{study.tables_dir}/{SCREEN_FILE}"


def continuation_on(study) -> bool:
    return bool(study.leaderboard["tuning"].get("continuation"))


def tuning_inputs(study) -> list[str]:
    from ...pipeline.study import table_inputs

    return table_inputs(study, TUNING_TABLE)


def compute_choice(study) -> dict:
    """Per partition and method: the chosen lr and hyperparameters and their validation score (%), or None where
    every candidate diverged (the method is then left out of the final runs, and said so). With the continuation,
    every ranked partition picks from its own full-horizon runs (`cont_<partition>`); without it, the screen's
    partitions pick from the screen and the others take the first one's choice."""
    p = study.leaderboard
    out = {"metric": study.tables[TUNING_TABLE]["metric"], "grid_lr": p["tuning"]["lr"], "grids": p["methods"],
           "partitions": {}}
    if continuation_on(study):
        continuation_experiments(study)
        for part in p["partitions"]:
            by_preset = _tuned_cells(study, part, list(p["methods"]), exps=[exp_name("cont", part)])
            out["partitions"][part] = {m: by_preset.get(m) for m in p["methods"]}
        out["stage"] = "continuation"
        return out
    for part in p["tuning"]["partitions"]:
        by_preset = _tuned_cells(study, part, list(p["methods"]))
        out["partitions"][part] = {m: by_preset.get(m) for m in p["methods"]}
    return out


def _grid_manifest(study, exps: list[str]) -> dict:
    from ..papers.kinds_tuning import GridSearchTable

    spec = study.tables[TUNING_TABLE]
    return GridSearchTable.manifest(study, TUNING_TABLE, {**spec, "experiments": exps})


def _tuned_cells(study, part: str, methods: list[str], exps: list[str] | None = None) -> dict:
    """{preset: {lr, params, score}} of the best validation cell of each method tuned on `part` (with `exps`: among
    those experiments' runs instead of the screen's); a method whose every cell diverged is absent."""
    from ...pipeline.report.grids import grid_choice

    p = study.leaderboard
    exps = exps or [exp_name("tune", part, m) for m in methods]
    manifest = _grid_manifest(study, exps)
    picks = grid_choice(manifest)
    out = {}
    for c in picks.values():
        if c is not None:
            grid = p["methods"][c["preset"]]
            out[c["preset"]] = {"lr": c["value"], "params": _cell_params(study, manifest, c["preset"], c["value"],
                                                                          c["row"], grid), "score": c["score"]}
    return out


def _cell_params(study, manifest: dict, preset: str, lr, row: dict, grid: dict) -> dict:
    """The grid keys of a cell as its own run set them. A grid manifest's row holds only the keys that differ
    among the runs it compares, and the continued cells often share a value that is not the grid's first (both
    at λ = 0.9): a key missing from the row must come from the run, never from the grid."""
    run = next(study.runs[e["run"]] for e in manifest["entries"]
               if e["preset"] == preset and e["value"] == lr and e["row"] == row)
    return {k: run.hparams[k] for k in grid}


def _write(compute, study, out: str | Path) -> dict:
    from ...core.util.io import write_json

    result = compute(study)
    write_json(Path(out), result)
    return result


def _ensure(compute, study, path: str, inputs, data_root: str) -> dict:
    """In-process checkpoint: train the runs behind `inputs(study)` that are missing, then write and return the
    file. Once it exists this is a read: it is called every time the final runs are asked for."""
    from ...pipeline.build import ensure_run
    from ...core.run_paths import run_of_file

    if not Path(path).exists():
        for f in inputs(study):
            ensure_run(study, run_of_file(f), data_root)
        _write(compute, study, path)
    return json.loads(Path(path).read_text())


def compute_screen(study) -> dict:
    """{cells: K, methods: {preset: [{lr, params, score}, ...]}}: each method's best K screen cells, best first
    (ties: the earlier grid row, then the smaller lr), among the cells that completed: a diverged cell is never
    continued. A method whose every cell diverged has an empty list."""
    from ...pipeline.report.grids import grid_means, grid_scores, ranked_cells

    p = study.leaderboard
    k = p["tuning"]["continuation"]["cells"]
    out = {"cells": k, "metric": study.tables[TUNING_TABLE]["metric"], "methods": {}}
    part = p["tuning"]["partitions"][0]
    for name, grid in p["methods"].items():
        manifest = _grid_manifest(study, [exp_name("tune", part, name)])
        df = grid_scores(manifest)
        params = dict(zip(df["row"], df["row_params"].map(json.loads)))
        cells = next(iter(ranked_cells(grid_means(df)).values()), [])  # one method per screen experiment
        out["methods"][name] = [{"lr": value, "params": _cell_params(study, manifest, name, value, params[row], grid),
                                 "score": float(acc)} for row, value, acc in cells[:k]]
    return out


def write_screen(study, out: str | Path) -> dict:
    return _write(compute_screen, study, out)


def ensure_screen(study, data_root: str) -> dict:
    """In-process: train the screen runs that are missing, then write and return the screen's cells."""
    return _ensure(compute_screen, study, screen_path(study), tuning_inputs, data_root)


def continuation_experiments(study) -> dict[str, list[tuple[str, dict]]]:
    """{partition: [(run id, labels)]} of the continuation runs, registered in `study` once the screen is known."""
    return _checkpoint(study, "screen", study.screen, "the screen's cells",
                       lambda screen: _register(study, "cont", screen=screen))


def choice_inputs(study) -> list[str]:
    """What the choice checkpoint reads: the continuation runs with the continuation, else the screen's."""
    if not continuation_on(study):
        return tuning_inputs(study)
    return study.outcome_inputs(rid for entries in continuation_experiments(study).values() for rid, _ in entries)


def write_choice(study, out: str | Path) -> dict:
    return _write(compute_choice, study, out)


def ensure_choice(study, data_root: str) -> dict:
    """In-process: train the tuning runs that are missing, then write and return the choice."""
    return _ensure(compute_choice, study, choice_path(study), choice_inputs, data_root)


def _register(study, stage: str, chosen: dict | None = None, screen: dict | None = None) -> dict[str, list]:
    """Expand the `stage` experiments at the study's scale and register their runs, partitions and experiments."""
    from ...pipeline.study import load_study

    cfg, protocol = prepare(study.leaderboard["config"], chosen, screen)
    full = load_study(cfg)
    study.runs.update(full.runs)
    study.partitions.update(full.partitions)
    out = {}
    for part in protocol["partitions"]:
        name = exp_name(stage, part)
        if name in full.experiments:
            study.experiments[name] = full.experiments[name]
            out[part] = full.experiments[name]
    return out


def _checkpoint(study, stage: str, getter, what: str, register) -> dict:
    """The runs a checkpoint's value selects, registered once per value: `getter` reads the checkpoint
    (study.screen or .choice; None where nothing can), `register(value)` expands and registers the
    stage's experiments. The value stays in study.final_cache[stage] for the table kinds."""
    if getter is None:
        raise ConfigError(f"leaderboard: {what} is unknown here; build through Snakemake or fedflat.pipeline.build")
    value = getter()
    key = json.dumps(value, sort_keys=True)
    if study.final_cache.get(f"{stage}_key") != key:
        study.final_cache.update({f"{stage}_key": key, stage: value, f"{stage}_runs": register(value)})
    return study.final_cache[f"{stage}_runs"]


def _final_stages(study, chosen: dict) -> dict:
    return {"final": _register(study, "final", chosen),
            "ablation": _register(study, "ablation", chosen) if continuation_on(study) else {}}


def final_experiments(study) -> dict[str, list[tuple[str, dict]]]:
    """{partition: [(run id, labels)]} of the final runs, registered in `study` (runs, partitions, experiments)."""
    return _checkpoint(study, "chosen", study.choice, "the tuning choice",
                       lambda chosen: _final_stages(study, chosen))["final"]


def ablation_experiments(study) -> dict[str, list[tuple[str, dict]]]:
    """{partition: [(run id, labels)]} of the rho = 0 ablations of the picks ({} without the continuation)."""
    final_experiments(study)
    return study.final_cache["chosen_runs"]["ablation"]


def read_checkpoint_files(study) -> tuple[bool, bool]:
    """Point `study.screen` and `study.choice` at the checkpoint files that exist (a read, never a build); returns
    (screen known, choice known)."""
    screen = continuation_on(study) and Path(screen_path(study)).exists()
    if screen:
        study.screen = lambda: json.loads(Path(screen_path(study)).read_text())  # the file, not a checkpoint getter
    choice = Path(choice_path(study)).exists()
    if choice:
        study.choice = lambda: json.loads(Path(choice_path(study)).read_text())
    return screen, choice


def register_known_stages(study) -> None:
    """Register the runs of every stage whose checkpoint file already exists (evidence export): a read, never a
    build. Stages whose checkpoint is missing stay unregistered."""
    screen, choice = read_checkpoint_files(study)
    if screen:
        continuation_experiments(study)
    if choice:
        final_experiments(study)


def evidence_gaps(study) -> list[str]:
    """Every file the leaderboard still needs that the committed evidence does not hold (fedflat.core.recorded): the
    screen's and the continuation's summaries, then the final runs' summaries and Hessians and the ablations'
    summaries. What rule `leaderboard_runs` asks for: a session runs only these, and its export
    (`python -m fedflat.evidence export config/leaderboard.yaml`) lets the next one go on from there. Each
    stage after the screen joins once its checkpoint has been written, as for the table."""
    files = list(tuning_inputs(study))
    if continuation_on(study):
        files += choice_inputs(study)
    finals = [rid for entries in final_experiments(study).values() for rid, _ in entries]
    for summary in study.outcome_inputs(finals, needs=FINAL_NEEDS):
        files += [summary, f"{Path(summary).parent}/hessian.json"]
    if continuation_on(study):
        files += study.outcome_inputs(rid for entries in ablation_experiments(study).values() for rid, _ in entries)
    return list(dict.fromkeys(files))
