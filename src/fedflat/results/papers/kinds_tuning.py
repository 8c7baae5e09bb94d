"""Table kind `grid_search`: a hyperparameter search on a validation split, and the value it picks.

    tables:
      rho_fmnist_A:
        kind: grid_search
        experiments: [rho_A]        # runs of the grid (training.holdout > 0: accuracies are on validation)
        param: rho                  # an algorithm hyperparameter, or a training key such as lr
        metric: last10_acc          # the selection criterion (summary.json key): final_acc | last10_acc
        title: ...

Rows are methods (preset labels), columns the values of `param`, cells the criterion in % (mean over
seeds); `chosen` is the value with the highest mean (ties: the smaller value). Where a method's runs
also differ in other hyperparameters (a joint grid: lr as `param`, ρ or α on the rows), each
combination is a row of its own and the choice is the best cell over all of the method's rows
(`report.grids.grid_choice`, also what the leaderboard's tuning checkpoint writes). Runs must evaluate on a
validation split carved from the training clients: the kind refuses runs that evaluated on test.
"""
from __future__ import annotations

import json
from pathlib import Path

from ...core.errors import ConfigError, choice_error
from ...core.kind_registry import TABLE_KINDS
from ...core.util.io import write_text
from ...core.util.markdown import md_table
from ...pipeline.report.grids import METRICS, choose, grid_edges, grid_means, grid_scores, setting_text
from ...training.algorithms import PRESETS


def _value(spec, param: str):
    return spec.hparams[param] if param in spec.hparams else spec.training[param]


def _varying(runs: list, param: str) -> list[str]:
    """The hyperparameters other than `param` whose value differs among one method's runs."""
    keys = sorted({k for r in runs for k in r.hparams} - {param})
    return [k for k in keys if len({json.dumps(r.hparams.get(k)) for r in runs}) > 1]


@TABLE_KINDS.register("grid_search")
class GridSearchTable:
    @staticmethod
    def cells(study, name, spec):
        """Rows as the table shows them (method and its other varying hyperparameters), columns `param=value`."""
        m = GridSearchTable.manifest(study, name, spec)
        rids = [rid for e in spec["experiments"] for rid, _ in study.experiments[e]]
        for en, rid in zip(m["entries"], rids):
            row = " ".join(x for x in (en["method"], setting_text(en["row"])) if x)
            value = en["value"]
            yield row, f"{m['param']}={value:g}" if isinstance(value, (int, float)) else f"{m['param']}={value}", rid

    @staticmethod
    def check(study, name, spec):
        key = f"tables.{name}"
        exps = spec.get("experiments")
        if not isinstance(exps, list) or not exps:
            raise ConfigError(f"{key}.experiments: a non-empty list of experiment names")
        for e in exps:
            if e not in study.experiments:
                raise choice_error(f"{key}.experiments", e, study.experiments)
        if spec.get("metric", "last10_acc") not in METRICS:
            raise choice_error(f"{key}.metric", spec.get("metric"), METRICS)
        param = spec.get("param")
        for e in exps:
            for rid, _ in study.experiments[e]:
                run = study.runs[rid]
                if param not in run.hparams and param not in run.training:
                    raise ConfigError(f"{key}.param: {param!r} is neither a hyperparameter of {run.algorithm} "
                                      f"nor a training key")
                if not run.training.get("holdout"):
                    raise ConfigError(f"{key}: experiment {e} evaluates on the test split; a search needs "
                                      f"training.holdout > 0 (a validation split carved from the training clients)")
        cells: dict = {}  # two different runs in one cell would be averaged as if they were seeds
        for en in GridSearchTable.manifest(study, name, spec)["entries"]:
            cell = (en["method"], json.dumps(en["row"], sort_keys=True), en["value"], en["seed"])
            if cells.setdefault(cell, en["dir"]) != en["dir"]:
                raise ConfigError(f"{key}: runs {cells[cell]} and {en['dir']} fall in one cell ({en['method']}, "
                                  f"{param}={en['value']}, seed {en['seed']}); they differ in a setting the table "
                                  f"does not show (uplink, a training key): give them tables of their own")

    @staticmethod
    def inputs(study, name, spec):
        return study.outcome_inputs(rid for e in spec["experiments"] for rid, _ in study.experiments[e])

    @staticmethod
    def manifest(study, name, spec):
        pairs = [(rid, lab) for e in spec["experiments"] for rid, lab in study.experiments[e]]
        by_method: dict[str, list] = {}
        for rid, _ in pairs:
            by_method.setdefault(PRESETS.get(study.runs[rid].algorithm).label, []).append(study.runs[rid])
        rows = {m: _varying(runs, spec["param"]) for m, runs in by_method.items()}
        entries = []
        for rid, lab in pairs:
            run = study.runs[rid]
            method = PRESETS.get(run.algorithm).label
            entries.append({"method": method, "value": _value(run, spec["param"]), "preset": run.algorithm,
                            "row": {k: run.hparams[k] for k in rows[method]}, "seed": lab["seed"],
                            "dir": study.run_dir(rid), "run": rid})
        return {"title": spec.get("title", name), "param": spec["param"], "metric": spec.get("metric", "last10_acc"),
                "note": spec.get("note", ""), "chosen_label": spec.get("chosen_label"), "entries": entries}

    @staticmethod
    def render(m, out_base):
        render_grid(m, Path(out_base))


def render_grid(m: dict, out_base: Path):
    df = grid_scores(m)
    mean = grid_means(df)
    best = choose(mean)
    joint = (df["row"] != "").any()  # a joint grid: one row per combination of the other hyperparameters
    table = mean.map(lambda v: "diverged" if v != v else f"{v:.2f}")
    # a grid extended for some methods only: a value never run is not a divergence
    ran = df.groupby(["method", "row", "value"]).size().unstack("value").reindex_like(mean).notna()
    table = table.where(ran, "–")
    chosen_col, seen = [], set()
    for meth, row in table.index:
        b = best[meth]
        if b is not None and b[0] == row:
            table.loc[(meth, row), b[1]] = f"**{table.loc[(meth, row), b[1]]}**"
        text = "" if meth in seen else "—" if b is None else (
            setting_text({m["param"]: b[1]}) + (f", {b[0]}" if b[0] else "") if joint else f"{b[1]:g}")
        edges = [] if b is None or meth in seen else grid_edges(df, meth, m["param"], b[1], b[0])
        chosen_col.append(text + (f" ({'; '.join(edges)} of its grid)" if edges else ""))
        seen.add(meth)
    chosen = m.get("chosen_label") or "chosen"  # a stage of a longer selection names its best otherwise
    table[f"{chosen} {m['param']}" if not joint else chosen] = chosen_col
    if joint:
        table.index = [f"{meth} ({row})" if row else meth for meth, row in table.index]
        table.index.name = "Method (setting)"
    else:
        table.index = table.index.get_level_values("method")
        table.index.name = "Method"
    seeds = sorted(df["seed"].unique().tolist())
    caption = (f"Validation accuracy (%, {m['metric']}, mean over seeds {seeds}) on samples held out of the training "
               f"clients; the test split is never used. Bold: the {chosen} {m['param']} "
               f"{'and setting ' if joint else ''}(highest mean). \"at the top/bottom of its grid\": a choice on the edge "
               f"of a grid of 3 or more values, so the best value may lie outside it.")
    if m.get("note"):
        caption += " " + m["note"]
    write_text(out_base.with_suffix(".md"), f"# {m['title']}\n\n{md_table(table, disable_numparse=True)}\n\n{caption}\n")
    write_text(out_base.with_suffix(".csv"), df.drop(columns=["row_params"]).to_csv(index=False))
    write_text(out_base.with_suffix(".tex"), table.to_latex(escape=True, caption=caption, label=f"tab:{out_base.name}"))
    return {meth: (None if b is None else b[1]) for meth, b in best.items()}
