"""Command-line entry points used by the Snakemake rules (and by people).

Every user-facing error is a ConfigError printed as one line, exit status 2.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .core.util.io import read_manifest


def _threads(n: int | None) -> None:
    if n:
        import torch

        torch.set_num_threads(n)


def cmd_validate(a) -> None:
    from .pipeline.inputs import validate_config  # the workflow's own checks: its JSON schema, then the study's expansion
    from .pipeline.study import load_config_file

    cfg = {}
    for f in a.configfile:
        cfg.update(load_config_file(f))
    st = validate_config(cfg)
    print(f"ok: {len(st.runs)} runs, {len(st.partitions)} partitions, {len(st.tables)} tables, {len(st.figures)} figures")


def cmd_partition(a) -> None:
    from .training.data import load_dataset, make_partition
    from .training.data.natural import natural_partition

    data = load_dataset(a.dataset, a.data_root, a.download)
    if a.spec == "natural":
        p = natural_partition(data, a.num_clients, a.seed)
    else:
        p = make_partition(data.train_y.numpy(), a.spec, a.num_clients, a.seed, a.variant,
                           a.samples_per_client or None, data.num_classes, standin="standin_for" in data.meta,
                           missing_classes=a.missing_classes)
    p.meta["dataset"] = a.dataset
    p.save(a.out)
    print(f"partition {p.meta['spec']}: {p.num_clients} clients, sizes {min(map(len, p.clients))}..{max(map(len, p.clients))}")


def cmd_train(a) -> None:
    from .training.fl.engine import train
    from .pipeline.inputs import check_run_spec
    from .core.util.attempt_log import kept_across_attempts
    from .core.util.gpu_slots import pin_device

    if a.require_clean:
        require_clean_commit()
    _threads(1 if a.numerics == "portable" else a.threads)  # portable: one thread whatever the job asked
    spec = check_run_spec(json.loads(a.spec))  # every field checked before any data is loaded
    device = pin_device(a.device)  # multi-GPU box: this job alone on one free GPU
    with kept_across_attempts(a.out_dir) as finished:  # train.log keeps a killed attempt's lines (core/util/attempt_log.py)
        train(spec, a.out_dir, a.partition, a.data_root, device, a.download, progress=not a.quiet,
              numerics_mode=a.numerics)
        finished()


def cmd_table(a) -> None:
    from .core.kind_registry import TABLE_KINDS

    m = read_manifest(a.manifest)
    TABLE_KINDS.get(m["kind"], key="table kind").render(m, Path(a.out).with_suffix(""))


def cmd_figure(a) -> None:
    from .core.kind_registry import FIGURE_KINDS

    m = read_manifest(a.manifest)
    FIGURE_KINDS.get(m["kind"], key="figure kind").render(m, a.out)


def cmd_algorithms(a) -> None:
    from .training.algorithms import PRESETS

    rows = []
    for name in PRESETS.names():
        p = PRESETS.get(name)
        hp = p.resolve({})
        parts = f"{p.perturbation} | {', '.join(p.corrections) or '-'} | {p.server}"
        rows.append((name, p.label, parts, ", ".join(f"{k}={v}" for k, v in hp.items()), p.source))
    if a.json:
        print(json.dumps([dict(zip(("name", "label", "parts", "defaults", "source"), r)) for r in rows], indent=2))
        return
    w = [max(len(r[i]) for r in rows + [("preset", "label", "perturbation | corrections | server", "", "")]) for i in range(3)]
    print(f"{'preset':<{w[0]}}  {'label':<{w[1]}}  {'perturbation | corrections | server':<{w[2]}}  defaults  [source]")
    for r in rows:
        print(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]}  [{r[4]}]")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="fedflat", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("validate", help="check a study config without running anything")
    p.add_argument("configfile", nargs="+")
    p.set_defaults(fn=cmd_validate)

    p = sub.add_parser("partition", help="make a client partition artifact")
    p.add_argument("--dataset", required=True)
    p.add_argument("--spec", required=True)
    p.add_argument("--num-clients", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variant", default="rep")
    p.add_argument("--samples-per-client", type=int, default=0)
    p.add_argument("--missing-classes", default="error", choices=("error", "allow"),
                   help="a split that leaves a class with no sample in the federation: refuse (default) or allow")
    p.add_argument("--data-root", default="data")
    p.add_argument("--download", action="store_true")
    p.add_argument("--out", required=True)
    p.set_defaults(fn=cmd_partition)

    p = sub.add_parser("train", help="run one federated training job")
    p.add_argument("--spec", required=True, help="RunSpec as JSON")
    p.add_argument("--partition", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--data-root", default="data")
    p.add_argument("--device", default="cpu")
    p.add_argument("--download", action="store_true")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--quiet", action="store_true")
    add_numerics_flag(p)
    p.add_argument("--require-clean", action="store_true",
                   help="refuse to run from a modified working tree (evidence runs: paper scale, the leaderboard)")
    p.set_defaults(fn=cmd_train)

    p = sub.add_parser("table", help="render a table from run outputs")
    p.add_argument("--manifest", required=True, help="JSON, @FILE or @- (standard input)")
    p.add_argument("--out", required=True, help="output path; .md, .csv and .tex are written beside it")
    p.set_defaults(fn=cmd_table)

    p = sub.add_parser("figure", help="render a figure")
    p.add_argument("--manifest", required=True, help="JSON, @FILE or @- (standard input)")
    p.add_argument("--out", nargs="+", required=True)
    p.set_defaults(fn=cmd_figure)

    p = sub.add_parser("algorithms", help="list every algorithm preset with its parts and source")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_algorithms)
    return ap


def add_numerics_flag(p: argparse.ArgumentParser) -> None:
    from .core.util.numerics import ENV_VAR, MODES

    p.add_argument("--numerics", choices=MODES, default=os.environ.get(ENV_VAR) or "native",
                   help=f"kernel settings, applied before torch loads (core/util/numerics.py; default: ${ENV_VAR} or native)")


def require_clean_commit() -> None:
    """Evidence runs record the commit that made them: refuse a modified working tree (one line) before any compute."""
    from .core.errors import ConfigError
    from .core.util.provenance import source_commit

    commit = source_commit()
    if commit is None or commit.endswith("-dirty"):
        raise ConfigError(f"the working tree is {'not a git checkout' if commit is None else 'modified (' + commit + ')'}: "
                          "evidence runs need a clean commit; commit or stash the change, run from a clean "
                          "`git worktree`, or pass --config allow_dirty=true for an experiment")


def main(argv: list[str] | None = None) -> int:
    from .core.errors import ConfigError
    from .core.util.numerics import enter

    args = build_parser().parse_args(argv)
    try:
        enter(getattr(args, "numerics", None) or "native")  # before torch loads: the plugins import it
        from . import plugins  # noqa: F401  (the composition root: every preset, model, data set, hook and kind)

        args.fn(args)
    except ConfigError as exc:
        print(f"fedflat: error: {exc}", file=sys.stderr)
        return 2
    except json.JSONDecodeError as exc:  # --spec / --manifest: one line, not a traceback
        print(f"fedflat: error: {args.cmd}: argument is not valid JSON ({exc.msg} at char {exc.pos})", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:  # an input that an earlier job should have written
        print(f"fedflat: error: {args.cmd}: missing input file {exc.filename}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
