"""Re-run committed records from scratch and say whether they regenerate (issue 46):

    python -m fedflat.evidence verify RUN_ID [RUN_ID ...]           # any stage of any study's evidence
    python -m fedflat.evidence verify --sample 10 [--study S]       # a seeded random sample of the records
           [--at record|head|available] [--jobs N] [--scratch DIR] [--data-root data] [--out report.md]

Each record is re-run in a scratch directory, never in results/: its partition, its training and (where the record
keeps a Hessian) its Hessian, with the code of the commit the record names (`--at record`, a `git worktree` of that
commit; a record made from a modified tree is re-run at its base commit and says so) or with this checkout
(`--at head`; `--at available`: the record's commit where this clone has it, else this checkout when its numerics
version is the record's), in the numerics the record ran under. The new record is compared with the committed one
field by field, at the precision runs.csv keeps (6 significant digits):

  identical   every measured field equal (status, rounds, accuracies, loss, flatness, Hessian values)
  within 0.1  the same status, and every accuracy within 0.1 point (other fields may differ)
  different   anything else, with the fields that differ

The spec of a run comes from its study (the config snapshot committed with the evidence, else the live config that
names the study; a leaderboard's later stages from its committed checkpoint files), and failing that from the
record's own fields, accepted only when they hash to the record's settings hash.
"""
from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import ConfigError
from .export import EVIDENCE

MEASURED = ("status", "rounds_completed", "final_acc", "last10_acc", "best_acc", "final_loss", "flatness_mean",
            "lambda_max", "trace")
ACCURACIES = ("final_acc", "last10_acc", "best_acc")
TOLERANCE = 0.1  # points


@dataclass
class Outcome:
    run_id: str
    study: str
    verdict: str  # identical | within 0.1 | different | not re-run
    commit: str  # the code the re-run used
    differs: dict = field(default_factory=dict)  # field -> (recorded, re-run)
    note: str = ""
    max_acc_diff: float = 0.0


def all_records(root: Path = EVIDENCE) -> dict[str, dict]:
    """{(study, run id): record} over every study's runs.csv under `root` (legacy studies included)."""
    import csv

    out = {}
    for f in sorted(Path(root).glob("*/runs.csv")):
        with f.open(newline="") as fh:
            for row in csv.DictReader(fh):
                out[(f.parent.name, row["run_id"])] = row
    return out


def pick(run_ids: list[str], sample: int | None, study: str | None, seed: int, root: Path = EVIDENCE
         ) -> list[tuple[str, dict]]:
    """The records to verify: the named run ids (first study that holds each), or a seeded sample."""
    recs = all_records(root)
    if run_ids:
        out = []
        for rid in run_ids:
            hit = next(((s, r) for (s, i), r in recs.items() if i == rid and (study is None or s == study)), None)
            if hit is None:
                raise ConfigError(f"verify: no committed record of run {rid!r} under {root}")
            out.append(hit)
        return out
    pool = sorted(((s, r) for (s, _), r in recs.items() if study is None or s == study), key=lambda x: (x[0], x[1]["run_id"]))
    if not pool:
        raise ConfigError(f"verify: no records{f' of study {study!r}' if study else ''} under {root}")
    return random.Random(seed).sample(pool, min(sample or 1, len(pool)))


def study_config(study: str, root: Path = EVIDENCE, config_root: Path = Path("config")) -> Path:
    """The config a study's evidence was made with: its committed snapshot, else the live file naming the study."""
    snaps = sorted((Path(root) / study / "config").rglob("*.yaml"))
    if snaps:
        return snaps[0]
    found = config_naming(study, config_root)
    if found is None:
        raise ConfigError(f"verify: no config names study {study!r} (no snapshot under {Path(root) / study / 'config'})")
    return found


def config_naming(study: str, config_root: Path = Path("config")) -> Path | None:
    """The first config file under `config_root` whose `study:` is `study` (None: none)."""
    import yaml

    for f in sorted(Path(config_root).rglob("*.yaml")):
        try:
            if (yaml.safe_load(f.read_text()) or {}).get("study") == study:
                return f
        except yaml.YAMLError:
            continue
    return None


def spec_of(record: dict, study: str, root: Path = EVIDENCE):
    """(RunSpec, the study's config dict, how its partition is made) of a record."""
    from ..pipeline.study import load_config_file, load_study

    cfg = load_config_file(study_config(study, root))
    st = load_study(_as_of_today(cfg))
    if st.leaderboard is not None:  # the later stages, from the checkpoint files committed with the evidence
        _register_committed_stages(st, Path(root) / study / "checkpoints")
    rid = record["run_id"]
    spec = st.runs[rid] if rid in st.runs else spec_from_fields(record, cfg)
    if spec is None:
        raise ConfigError(f"verify: run {rid} is not in study {study!r} as its config expands today, and its record's "
                          f"fields do not hash to its settings hash {record.get('settings_hash')}")
    tr = spec.training
    part = st.partitions.get(spec.partition_id()) or {
        "dataset": spec.dataset, "partition": spec.partition, "num_clients": tr["num_clients"], "seed": spec.seed,
        "samples_per_client": tr["samples_per_client"], "variant": tr["dirichlet_variant"]}
    return spec, cfg, part


def _as_of_today(cfg: dict) -> dict:
    """A leaderboard snapshot from before a preset was registered lists it nowhere: today's protocol check wants
    every preset ranked or excluded, so the newer ones are excluded here (the snapshot's runs are unchanged)."""
    if "leaderboard" not in cfg:
        return cfg
    from ..training.algorithms import PRESETS

    lb = {**cfg["leaderboard"]}
    known = set(lb.get("methods") or {}) | set(lb.get("excluded") or {})
    lb["excluded"] = {**(lb.get("excluded") or {}),
                      **{n: "registered after this configuration was made" for n in PRESETS.names() if n not in known}}
    return {**cfg, "leaderboard": lb}


def _register_committed_stages(study, checkpoints: Path) -> None:
    from ..results.leaderboard.flow import continuation_experiments, final_experiments
    from ..results.leaderboard.protocol import CHOICE_FILE, SCREEN_FILE

    screen, choice = checkpoints / SCREEN_FILE, checkpoints / CHOICE_FILE
    if screen.exists():
        study.screen = lambda: json.loads(screen.read_text())
        continuation_experiments(study)
    if choice.exists():
        study.choice = lambda: json.loads(choice.read_text())
        final_experiments(study)


def spec_from_fields(record: dict, cfg: dict):
    """The spec rebuilt from a record's fields and the study's training defaults; None unless it hashes to the
    record's settings hash (the hash covers every setting, so a match is the run's exact spec)."""
    from ..training.algorithms import PRESETS
    from ..core.spec import RunSpec, check_training

    try:
        tr = check_training({**(cfg.get("training") or {}),
                             **{k: _num(record[k]) for k in ("lr", "rounds", "local_steps", "batch_size", "num_clients",
                                                            "participation", "holdout")}})
        preset = PRESETS.get(record["preset"])
        spec = RunSpec(record["dataset"], record["partition"], record["model"], record["preset"], int(record["seed"]),
                       json.loads(record["hparams"]), dict((cfg.get("model_params") or {}).get(record["model"]) or {}),
                       preset.training_for(tr), uplink=json.loads(record["uplink"]) if record.get("uplink") else {})
    except (ConfigError, KeyError, ValueError, TypeError):
        return None
    return spec if spec.digest() == record.get("settings_hash") else None


def _num(x: str):
    v = float(x)
    return int(v) if v.is_integer() and "." not in str(x) and "e" not in str(x).lower() else v


def _fmt(x) -> str:
    """A value as runs.csv writes it (pandas' float_format %.6g): the precision a record keeps."""
    if x is None or x == "":
        return ""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    return "" if math.isnan(v) else f"{v:.6g}"


def compare(recorded: dict, rerun: dict) -> tuple[str, dict, float]:
    """(verdict, {field: (recorded, re-run)} of the fields that differ, the largest accuracy difference in points)."""
    differs = {}
    for k in MEASURED:
        if k in ("lambda_max", "trace") and _fmt(recorded.get(k)) == "":
            continue  # the record keeps no Hessian: none was re-run
        a, b = _fmt(recorded.get(k)), _fmt(rerun.get(k))
        if a != b:
            differs[k] = (a, b)
    gaps = [abs(float(recorded[k]) - float(rerun[k])) for k in ACCURACIES
            if _fmt(recorded.get(k)) and _fmt(rerun.get(k))]
    worst = max(gaps, default=0.0)
    if not differs:
        return "identical", differs, worst
    same_status = "status" not in differs and "rounds_completed" not in differs
    acc_ok = all(k not in differs or (_fmt(recorded.get(k)) and _fmt(rerun.get(k))) for k in ACCURACIES)
    return ("within 0.1" if same_status and acc_ok and worst <= TOLERANCE else "different"), differs, worst


class Rerunner:
    """Re-runs records in `scratch` with the code of their commit (`at` "record"), of this checkout ("head"), or of
    their commit where this clone has it and else of this checkout when its numerics version is the record's
    ("available": a shallow clone)."""

    def __init__(self, scratch: Path, data_root: Path, at: str = "record", repo: Path = Path(".")):
        self.scratch, self.data_root, self.at, self.repo = Path(scratch), Path(data_root).resolve(), at, Path(repo)
        self.scratch.mkdir(parents=True, exist_ok=True)
        self._trees: dict[str, Path] = {}

    def _lacks(self, commit: str) -> bool:
        return subprocess.run(["git", "-C", str(self.repo), "cat-file", "-e", f"{commit}^{{commit}}"],
                              capture_output=True).returncode != 0

    def code(self, record: dict) -> tuple[Path, str, str]:
        """(src directory, the commit it holds, a note) of the code that re-runs `record`."""
        from ..core.util.provenance import source_commit

        here = Path(__file__).resolve().parents[2]
        head = source_commit() or "unknown"
        commit = str(record.get("git_commit") or "")
        if self.at == "head" or not commit or commit == "nan":
            return here, head, "" if self.at == "head" else "the record names no commit: re-run with this checkout"
        base = commit.removesuffix("-dirty")
        note = f"made from a modified tree ({commit}): re-run at its base commit" if commit.endswith("-dirty") else ""
        if base == head.removesuffix("-dirty") and not head.endswith("-dirty"):
            return here, head, note
        if self.at == "available" and base not in self._trees and self._lacks(base):
            # a shallow clone: this checkout stands in only where it computes the same numbers by contract, the
            # record's own numerics version (the golden runs guard it; util/numerics.py)
            from ..core.util.numerics import NUMERICS_VERSION

            if str(record.get("numerics_version")) != str(NUMERICS_VERSION):
                raise ConfigError(f"verify: commit {base} is not in this clone's history, and this checkout's numerics "
                                  f"version ({NUMERICS_VERSION}) is not the record's "
                                  f"({record.get('numerics_version')})")
            return here, head, f"commit {base} not in this clone's history: re-run with this checkout, of the " \
                               "record's numerics version"
        if base not in self._trees:
            tree = self.scratch / f"code-{base}"
            if not tree.exists():
                done = subprocess.run(["git", "-C", str(self.repo), "worktree", "add", "--detach", str(tree), base],
                                      capture_output=True, text=True)
                if done.returncode != 0:
                    raise ConfigError(f"verify: cannot check out commit {base}: {done.stderr.strip().splitlines()[-1]}")
            self._trees[base] = tree / "src"
        return self._trees[base], base, note

    def run(self, study: str, record: dict, root: Path = EVIDENCE) -> Outcome:
        from ..pipeline.analysis.params import from_config
        from .records import run_record

        rid = record["run_id"]
        try:
            spec, cfg, part = spec_of(record, study, root)
            src, commit, note = self.code(record)
        except ConfigError as exc:
            return Outcome(rid, study, "not re-run", "", note=str(exc))
        work = Path(tempfile.mkdtemp(prefix="run-", dir=self.scratch))
        env = {k: v for k, v in os.environ.items() if k not in ("FEDFLAT_GIT_COMMIT", "FEDFLAT_NUMERICS")}
        env["PYTHONPATH"] = str(src)
        numerics = record.get("numerics") or ""
        mode = ["--numerics", numerics] if numerics in ("portable", "native") else []
        py = [sys.executable]
        steps = [  # the partition and train rules' commands (workflow/rules/data.smk, train.smk)
            py + ["-m", "fedflat", "partition", "--dataset", part["dataset"], "--spec", part["partition"],
                  "--num-clients", str(part["num_clients"]), "--seed", str(part["seed"]), "--variant", part["variant"],
                  "--samples-per-client", str(part["samples_per_client"]), "--data-root", str(self.data_root),
                  *(["--missing-classes", "allow"] if part.get("missing_classes") == "allow" else []),
                  "--out", "part.npz"],
            py + ["-m", "fedflat", "train", "--spec", spec.job_params(), "--partition", "part.npz", "--out-dir", "run",
                  "--data-root", str(self.data_root), "--threads", "1", "--quiet", *mode]]
        if _fmt(record.get("lambda_max")):
            steps.append(py + ["-m", "fedflat.analysis", "hessian", "--run-dir", "run", "--out", "run/hessian.json",
                               "--params", json.dumps(from_config(cfg, "hessian")), "--data-root", str(self.data_root),
                               *mode])
        for cmd in steps:
            done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
                return Outcome(rid, study, "not re-run", commit, note=f"{cmd[2]} {cmd[3]} failed: {tail}")
        new = run_record(work / "run", spec, [], record.get("label", ""))
        verdict, differs, worst = compare(record, new)
        machine = f"re-run on {new.get('cpu_model') or 'this machine'}"
        if record.get("cpu_model") and record.get("cpu_model") != new.get("cpu_model"):
            machine += f" (recorded on {record['cpu_model']})"
        return Outcome(rid, study, verdict, commit, differs, "; ".join(x for x in (note, machine) if x), worst)


def verify(chosen: list[tuple[str, dict]], scratch: Path, data_root: Path, at: str = "record", jobs: int = 1,
           root: Path = EVIDENCE, progress=print) -> list[Outcome]:
    runner = Rerunner(scratch, data_root, at)
    # worktrees are made one at a time, before the parallel re-runs
    for _, rec in chosen:
        try:
            runner.code(rec)
        except ConfigError:
            pass

    def one(item):
        study, rec = item
        out = runner.run(study, rec, root)
        progress(f"{out.verdict:>11}  {out.study} {out.run_id}"
                 + (f"  ({', '.join(f'{k} {a} -> {b}' for k, (a, b) in out.differs.items())})" if out.differs else "")
                 + (f"  [{out.note}]" if out.note else ""))
        return out

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, chosen))


def to_frame(outcomes: list[Outcome]):
    """One row per re-run record (what `verify --out` commits beside its Markdown, for the pages)."""
    import pandas as pd

    return pd.DataFrame([{"study": o.study, "run_id": o.run_id, "verdict": o.verdict, "code": o.commit,
                          "max_acc_diff": o.max_acc_diff,
                          "differs": "; ".join(f"{k} {a} -> {b}" for k, (a, b) in o.differs.items()), "note": o.note}
                         for o in outcomes],
                        columns=["study", "run_id", "verdict", "code", "max_acc_diff", "differs", "note"])


def render(outcomes: list[Outcome]) -> str:
    """A Markdown summary: counts per verdict, the largest accuracy difference, and one row per record."""
    counts = {v: sum(o.verdict == v for o in outcomes) for v in ("identical", "within 0.1", "different", "not re-run")}
    worst = max((o.max_acc_diff for o in outcomes if o.verdict != "not re-run"), default=0.0)
    lines = [f"{len(outcomes)} records re-run: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n)
             + f"; largest accuracy difference {worst:.2f} points.", "",
             "| study | run | verdict | code | fields that differ (recorded → re-run) | note |", "|---|---|---|---|---|---|"]
    for o in outcomes:
        diff = "; ".join(f"{k} {a} → {b}" for k, (a, b) in o.differs.items()) or "-"
        lines.append(f"| {o.study} | `{o.run_id}` | {o.verdict} | {o.commit[:12]} | {diff} | {o.note or '-'} |")
    return "\n".join(lines)


VERDICTS = ("identical", "within 0.1", "different", "not re-run")


def reports_block(ctx) -> str:
    """The committed verification reports (results/evidence/verification/<name>.csv, what `verify --out` writes),
    one row each: the records re-run, each verdict's count and the largest accuracy difference, linked to the report.
    A record that could not be re-run counts apart and never in the largest difference."""
    import csv

    folder = ctx.root / ctx.evidence_root / "verification"
    files = sorted(folder.glob("*.csv"))
    if not files:
        return "No verification report committed yet (`python -m fedflat.evidence verify ... --out " \
               "results/evidence/verification/<name>.md`)."
    lines = ["| report | records | " + " | ".join(VERDICTS) + " | largest accuracy difference (points) |",
             "|---|---:|" + "---:|" * len(VERDICTS) + "---:|"]
    for f in files:
        with f.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        counts = [sum(r["verdict"] == v for r in rows) for v in VERDICTS]
        diffs = [float(r["max_acc_diff"]) for r in rows if r["verdict"] != "not re-run"]
        worst = f"{max(diffs):.2f}" if diffs else "-"
        md = f.with_suffix(".md")
        link = (Path(ctx.evidence_root) / "verification" / md.name).as_posix()  # as docs/ links it
        name = f"[{f.stem}](../{link})" if md.exists() else f.stem
        lines.append(f"| {name} | {len(rows)} | " + " | ".join(map(str, counts)) + f" | {worst} |")
    return "\n".join(lines)
