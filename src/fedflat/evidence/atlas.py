"""docs/atlas.md: for each of the five papers and each computed target, what is published, what this project
has re-run on real data at paper scale (with committed evidence), what cannot be reached offline and why,
the share of compared cells within 2 points, and a link to the explanation of every larger gap.

Each published cell is counted once (issue 48): a catalog target that restates another target's cells (Table II's
Fashion-MNIST block beside the whole block, a default cell repeated by an ablation table, a value two tables share)
counts them where they first appear, and says so. A cell is identified by what it compares: the runs behind it, its
metric and the published value (mean, std). Values a table lists under `garbled:` (the seed text's OCR garbles them,
FedTOGA Table 8) are shown in the tables but never counted as published.

Built from the paper catalogs (config/papers/*.yaml at scale: paper, so a run counts only if it ran at the
paper's scale) and the committed evidence; nothing is trained."""
from __future__ import annotations

from pathlib import Path

from ..core.errors import ConfigError
from ..results.papers.cell_stats import metric_header
from .compare import TOLERANCE, cell_value, ours_text, within
from .export import EVIDENCE, FIGURES
from .store import load

PAPERS = ("fednsam", "fedsagd", "fedsol", "fedsynsam", "fedtoga")
OFFLINE = {"mnist", "fmnist", "shakespeare"}  # `make data` writes these (any augmentation variant)
GPU_MODELS = ("resnet", "vgg", "vit", "swin", "convnet_synsam")  # paper-scale runs a 2-core CPU cannot afford
EXPLAINED = "reproduction.md"  # where gaps are explained: one anchor per target, #<paper>-<target>


def anchor(paper: str, target: str) -> str:
    return f"{paper}-{target}".lower().replace("_", "-")


def _reach(study, run_ids: list[str]) -> str | None:
    """Why a cell cannot be regenerated here, or None."""
    specs = [study.runs[r] for r in run_ids]
    missing = sorted({s.dataset for s in specs if s.dataset.split("-")[0] not in OFFLINE})
    if missing:
        return f"data set {', '.join(missing)} not available offline"
    if any(s.model.startswith(GPU_MODELS) for s in specs):
        return "needs a GPU at paper scale"
    return None


def paper_study(paper: str, config_dir: Path):
    """The paper's catalog at the paper's scale (the run ids its evidence records)."""
    from ..pipeline.study import load_config_file, load_study

    cfg = load_config_file(Path(config_dir) / f"{paper}.yaml")
    cfg["scale"] = "paper"
    return load_study(cfg)


def _garbled(name: str, spec: dict, rows: list[dict], cols: list[dict]) -> set[tuple[str, str]]:
    """{(row label, column group)} of the table's `garbled:` cells, every name checked."""
    raw = spec.get("garbled") or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"tables.{name}.garbled: a mapping of row label to a list of column groups")
    labels, groups = {r["label"] for r in rows}, {c["group"] for c in cols}
    out = set()
    for label, gs in raw.items():
        if label not in labels:
            raise ConfigError(f"tables.{name}.garbled: {label!r} is not a row of the table")
        for g in gs or []:
            if g not in groups:
                raise ConfigError(f"tables.{name}.garbled.{label}: {g!r} is not a column group of the table")
            out.add((label, g))
    return out


def paper_rows(paper: str, config_dir: Path, evidence_root: Path, figures_root: Path, study=None) -> list[dict]:
    """One dict per target: its own counts (published, reproduced = re-run at paper scale, unreachable, compared,
    within, gaps), and `cells`: [(identity, state)] of each published cell it holds, in order, where state is
    "unreachable: <why>", "pending", "rerun" (re-run, not comparable), "within" or "gap" (distinct counts: `distinct`)."""
    from ..results.papers.kinds_paper import table_cells
    from ..results.papers.published import parse_published

    study = study or paper_study(paper, config_dir)
    runs = load(paper, evidence_root).runs()
    out = []
    for name, spec in study.tables.items():
        if spec["kind"] != "paper_table":
            continue
        rows, cols, grid = table_cells(study, name, spec)
        garbled = _garbled(name, spec, rows, cols)
        pub = spec.get("published") or {}
        row = {"target": name, "ref": spec.get("ref", name), "published": 0, "reproduced": 0, "compared": 0,
               "within": 0, "unreachable": {}, "gaps": [], "garbled": 0, "cells": []}
        for r, line in zip(rows, grid):
            values = pub.get(r["label"]) or [None] * len(cols)
            for c, cell, v in zip(cols, line, values):
                p = parse_published(v)
                if p.missing or not cell:
                    continue
                if (r["label"], c["group"]) in garbled:
                    row["garbled"] += 1
                    continue
                row["published"] += 1
                rids = [rid for rid, _ in cell]
                key = (tuple(sorted(rids)), c["metric"], p.mean, p.std, p.never)
                why = _reach(study, rids)
                if why:
                    row["unreachable"][why] = row["unreachable"].get(why, 0) + 1
                    row["cells"].append((key, f"unreachable: {why}", None))
                    continue
                ours, done, present = cell_value(runs, rids, c["metric"])
                if present < len(rids):
                    row["cells"].append((key, "pending", None))
                    continue
                row["reproduced"] += 1
                ok = within(ours, p.mean)
                if ok is None and done == 0 and p.mean is not None:
                    ok = False  # every seed diverged: a published cell we do not reproduce is a gap, not a blank
                if ok is None:
                    row["cells"].append((key, "rerun", None))
                    continue
                row["compared"] += 1
                row["within"] += bool(ok)
                gap = None
                if not ok:
                    gap = (r["label"], " ".join(x for x in (c["group"], metric_header(c["metric"])) if x), p.mean, ours)
                    row["gaps"].append(gap)
                row["cells"].append((key, "within" if ok else "gap", gap))
        out.append(row)
    for name, spec in study.figures.items():
        png = Path(figures_root) / paper / f"{name}.png"
        out.append({"target": name, "ref": spec.get("ref", name), "figure": True, "png": png.exists()})
    return out


def distinct(target_rows: list[dict]) -> tuple[dict, list[dict]]:
    """(the paper's counts over its distinct published cells, and per table target the counts of the cells it
    counts first, with `restates`: {earlier target: cells it repeats}). Targets count in catalog order."""
    first: dict = {}
    total = {"published": 0, "rerun": 0, "unreachable": 0, "compared": 0, "within": 0, "garbled": 0}
    per = []
    for r in (t for t in target_rows if not t.get("figure")):
        own = {"target": r["target"], "ref": r["ref"], "published": 0, "rerun": 0, "unreachable": {}, "compared": 0,
               "within": 0, "gaps": [], "restates": {}, "garbled": r["garbled"]}
        total["garbled"] += r["garbled"]
        for key, state, gap in r["cells"]:
            if key in first:
                own["restates"][first[key]] = own["restates"].get(first[key], 0) + 1
                continue
            first[key] = r["target"]
            own["published"] += 1
            if state.startswith("unreachable: "):
                why = state.split(": ", 1)[1]
                own["unreachable"][why] = own["unreachable"].get(why, 0) + 1
            elif state != "pending":
                own["rerun"] += 1
                if state in ("within", "gap"):
                    own["compared"] += 1
                    own["within"] += state == "within"
                if gap:
                    own["gaps"].append(gap)
        per.append(own)
        for k in ("published", "rerun", "compared", "within"):
            total[k] += own[k]
        total["unreachable"] += sum(own["unreachable"].values())
    return total, per


def _fmt_gap(paper: str, target: str, gaps: list) -> str:
    if not gaps:
        return ""
    link = f"[why]({EXPLAINED}#{anchor(paper, target)})"
    cells = "; ".join(f"{r} / {c}: {ours_text(o)} vs {p:.2f}" for r, c, p, o in gaps[:4])
    more = f"; {len(gaps) - 4} more" if len(gaps) > 4 else ""
    return f"{len(gaps)} ({cells}{more}) {link}"


def render(config_dir: Path = Path("config/papers"), evidence_root: Path = EVIDENCE, figures_root: Path = FIGURES,
           rows=None) -> str:
    """docs/atlas.md; `rows` (paper -> paper_rows) lets a caller that already has some reuse them."""
    rows = rows or (lambda paper: paper_rows(paper, config_dir, evidence_root, figures_root))
    lines = ["# Reproduction atlas", "",
             "Generated by `python -m fedflat.evidence pages` from the paper catalogs (`config/papers/*.yaml`, scale "
             "`paper`) and the committed evidence (`results/evidence/<paper>/runs.csv`); do not edit by hand.", "",
             "Each **published cell** is counted once: a catalog table that restates cells of an earlier one (a "
             "block's Fashion-MNIST columns beside the whole block, a default cell an ablation table repeats) counts "
             "them where they first appear and names that table under *restates*. A cell is **re-run at paper "
             "scale** when every run behind it, at the paper's scale, is in the committed evidence (real data only: "
             "the stand-ins run at `tiny` scale, whose run ids differ). **Within 2 points** compares the mean over "
             f"the cell's completed seeds with the published mean (tolerance {TOLERANCE:g} points), for accuracy and "
             "Hessian cells; a cell whose every seed diverged is compared and is not within. A cell is **out of "
             "reach offline** when its data set cannot be written by `make data` (MNIST, "
             "Fashion-MNIST, Shakespeare are) or its model needs a GPU at the paper's scale. Values the seed text "
             "garbles (a table's `garbled:` list, FedTOGA Table 8) are shown in the tables but not counted as "
             "published. `python -m fedflat.evidence trace PAPER TABLE ROW COLUMN` lists the runs behind a cell.", ""]
    summary = ["| paper | tables | published cells | re-run at paper scale | out of reach offline | "
               "reachable, not yet run | within 2 points | garbled, not counted | figures regenerated |",
               "|---|---|---|---|---|---|---|---|---|"]
    detail = []
    for paper in PAPERS:
        target_rows = rows(paper)
        figs = [r for r in target_rows if r.get("figure")]
        total, per = distinct(target_rows)
        share = f"{total['within']} of {total['compared']}" if total["compared"] else "-"
        pending = total["published"] - total["rerun"] - total["unreachable"]
        summary.append(f"| {paper} | {len(per)} | {total['published']} | {total['rerun']} | {total['unreachable']} | "
                       f"{pending} | {share} | {total['garbled']} | {sum(f['png'] for f in figs)} of {len(figs)} |")
        detail += [f"## {paper}", "", "| target | paper table | published cells | restates | re-run at paper scale | "
                   "out of reach offline | within 2 points | gaps over 2 points |", "|---|---|---|---|---|---|---|---|"]
        for r in per:
            unreach = "; ".join(f"{n}: {why}" for why, n in sorted(r["unreachable"].items())) or "0"
            share = f"{r['within']} of {r['compared']}" if r["compared"] else "-"
            restates = "; ".join(f"{n} of `{t}`" for t, n in r["restates"].items()) or "-"
            garbled = f" (+{r['garbled']} garbled, not counted)" if r["garbled"] else ""
            detail.append(f"| `{r['target']}` | {r['ref']} | {r['published']}{garbled} | {restates} | {r['rerun']} | "
                          f"{unreach} | {share} | {_fmt_gap(paper, r['target'], r['gaps'])} |")
        if figs:
            detail += ["", "Figures: " + ", ".join(f"`{f['target']}` ({f['ref']}): "
                                                   f"{'regenerated' if f['png'] else 'not yet'}" for f in figs)]
        detail.append("")
    return "\n".join(lines + summary + [""] + detail).rstrip() + "\n"
