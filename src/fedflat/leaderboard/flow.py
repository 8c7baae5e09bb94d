"""From the tuning runs to the final runs, automatically.

The final runs' ids depend on the chosen lr and hyperparameters, which exist only once the tuning runs
have finished; Snakemake's DAG is static, so the choice is a checkpoint (workflow/rules/leaderboard.smk):

  1. rule `leaderboard_choice` (a checkpoint) reads every tuning run's summary.json and writes
     <tables_dir>/tuning_choice.json with `write_choice` (the grid_search kind's own selection rule);
  2. the leaderboard's table and figures ask `final_experiments(study)` for their runs: it reads the choice
     through `study.choice` (in Snakemake: the checkpoint's output, so the DAG is re-evaluated once it
     exists), expands the final experiments at the study's scale and registers their runs and partitions in
     the study, where the train, partition and hessian rules find them.

In-process builds (fedflat.papers.build, the tests) set `study.choice` to `ensure_choice`, which trains the
tuning runs and writes the same file.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import ConfigError
from .protocol import CHOICE_FILE, TUNING_TABLE, choice_for, exp_name, prepare


def choice_path(study) -> str:
    return f"{study.tables_dir}/{CHOICE_FILE}"


def tuning_inputs(study) -> list[str]:
    from ..study import table_inputs

    return table_inputs(study, TUNING_TABLE)


def compute_choice(study) -> dict:
    """Per tuning partition and method: the chosen lr and hyperparameters and their validation score (%),
    or None where every grid point diverged (the method is then left out of the final runs, and said so)."""
    from ..papers.kinds_tuning import GridSearchTable, grid_choice

    p = study.leaderboard
    spec = study.tables[TUNING_TABLE]
    out = {"metric": spec["metric"], "grid_lr": p["tuning"]["lr"], "grids": p["methods"], "partitions": {}}
    for part in p["tuning"]["partitions"]:
        exps = [exp_name("tune", part, m) for m in p["methods"]]
        picks = grid_choice(GridSearchTable.manifest(study, TUNING_TABLE, {**spec, "experiments": exps}))
        by_preset = {}
        for method, c in picks.items():
            if c is None:
                continue
            grid = p["methods"][c["preset"]]
            # a key with one value does not vary, so it is not in the row: take it from the grid
            by_preset[c["preset"]] = {"lr": c["value"], "params": {k: c["row"].get(k, v[0]) for k, v in grid.items()},
                                      "score": c["score"]}
        out["partitions"][part] = {m: by_preset.get(m) for m in p["methods"]}
    return out


def write_choice(study, out: str | Path) -> dict:
    from ..util.io import write_json

    chosen = compute_choice(study)
    write_json(Path(out), chosen)
    return chosen


def ensure_choice(study, data_root: str) -> dict:
    """In-process: train the tuning runs that are missing, then write and return the choice."""
    from ..papers.build import _ensure_run

    path = Path(choice_path(study))
    if not path.exists():
        for f in tuning_inputs(study):
            _ensure_run(study, str(Path(f).parent)[len("results/runs/"):], data_root)
        write_choice(study, path)
    return json.loads(path.read_text())


def final_experiments(study) -> dict[str, list[tuple[str, dict]]]:
    """{partition: [(run id, labels)]} of the final runs, registered in `study` (runs, partitions, experiments)."""
    from ..study import load_study

    if study.choice is None:
        raise ConfigError("leaderboard: the tuning choice is unknown here; build through Snakemake or fedflat.papers.build")
    chosen = study.choice()
    key = json.dumps(chosen, sort_keys=True)
    if study.final_cache.get("key") != key:
        cfg, protocol = prepare(study.leaderboard["config"], chosen)
        full = load_study(cfg)
        study.runs.update(full.runs)
        study.partitions.update(full.partitions)
        finals = {}
        for part in protocol["partitions"]:
            name = exp_name("final", part)
            if name in full.experiments:
                study.experiments[name] = full.experiments[name]
                finals[part] = full.experiments[name]
        study.final_cache.update(key=key, finals=finals, chosen=chosen)
    return study.final_cache["finals"]


def chosen_for(study, partition: str) -> dict:
    final_experiments(study)
    return choice_for(study.final_cache["chosen"], study.leaderboard, partition)
