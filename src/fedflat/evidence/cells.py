"""Which runs make which cell of a table: (table, row, column, run id) tuples, per table kind. The trace
command and the atlas read them from cells.csv, so a fresh clone can answer "what is behind this number"."""
from __future__ import annotations

from typing import Callable, Iterator

Cell = tuple[str, str, str]  # (row, column, run id)


def _paper_table(study, name: str, spec: dict) -> Iterator[Cell]:
    from ..papers.kinds import table_cells

    rows, cols, grid = table_cells(study, name, spec)
    for r, line in zip(rows, grid):
        for c, cell in zip(cols, line):
            column = " / ".join(x for x in (c["group"], c["metric"]) if x)
            for rid, _ in cell:
                yield r["label"], column, rid


def _grid_search(study, name: str, spec: dict) -> Iterator[Cell]:
    from ..algorithms import PRESETS
    from ..papers.kinds_tuning import setting_text

    param = spec["param"]
    for e in spec["experiments"]:
        for rid, _ in study.experiments[e]:
            run = study.runs[rid]
            value = run.hparams[param] if param in run.hparams else run.training[param]
            label = PRESETS.get(run.algorithm).label
            own = {k: v for k, v in run.hparams.items() if k in _tuned_keys(study, e)}
            row = " ".join(x for x in (label, setting_text(own)) if x)
            yield row, f"{param}={value:g}" if isinstance(value, (int, float)) else f"{param}={value}", rid


def _tuned_keys(study, experiment: str) -> set[str]:
    """The hyperparameters that vary among an experiment's runs (the rows of a grid search)."""
    import json

    runs = [study.runs[r] for r, _ in study.experiments[experiment]]
    keys = {k for r in runs for k in r.hparams}
    return {k for k in keys if len({json.dumps(r.hparams.get(k)) for r in runs}) > 1}


def _by_experiment(prefix: str) -> Callable:
    """Tables whose columns are the partitions of experiments named <prefix><partition> (the leaderboard)."""
    def cells(study, name: str, spec: dict) -> Iterator[Cell]:
        for e, entries in study.experiments.items():
            if e.startswith(prefix):
                for rid, lab in entries:
                    yield lab["algorithm"], study.runs[rid].partition, rid
    return cells


def _accuracy(study, name: str, spec: dict) -> Iterator[Cell]:
    for rid, lab in study.experiments[spec["experiment"]]:
        yield lab["algorithm"], study.runs[rid].partition, rid


KINDS: dict[str, Callable[..., Iterator[Cell]]] = {
    "paper_table": _paper_table, "grid_search": _grid_search, "accuracy": _accuracy,
    "leaderboard": _by_experiment("final_"),
}


def table_cells(study, name: str) -> list[Cell]:
    """Every (row, column, run id) of table `name`; [] for a kind whose cells are not runs."""
    spec = study.tables[name]
    f = KINDS.get(spec["kind"])
    return list(dict.fromkeys(f(study, name, spec))) if f else []
