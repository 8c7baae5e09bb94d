"""A summary over groups of declared paired findings (kind: summary): what a newcomer reads first, in five lines.

    - the count of every verdict (supported, contradicted, inconclusive, waiting for runs) over all the groups' claims;
    - the same counts per group (`of`: {name, where}, where filters the declarations by their own keys, e.g.
      {family: fedsynsam_table2_fmnist, baseline: {row: FedSAM}});
    - the design's power: the difference the seeds detect in units of the paired seed sd (a property of the design),
      and, once the runs exist, in points per group beside the paper's margins;
    - what no run here can test (`untestable`): the catalog cells, and the paper's margins there beside those tested;
    - which records the verdicts rest on (regenerable records of `evidence`: their commits and numerics; the legacy
      ones set aside), with a link to the per-claim table (`link`, made relative to the page it stands on).

Every number comes from the evidence or the catalog's published values; nothing is typed."""
from __future__ import annotations

import math
import posixpath
import statistics

from ...core.errors import ConfigError
from ...core.util.paired import detectable
from ..legacy import reasons
from .decide import STATE_NAMES, evaluate, fill, is_paired
from .declared import findings, fmt
from .match import catalog_tables, published


def _matches(spec: dict, where: dict) -> bool:
    """A declaration's keys against a filter: a mapping recurses, a list is any of its values."""
    for key, want in where.items():
        have = spec.get(key)
        if isinstance(want, dict):
            if not (isinstance(have, dict) and _matches(have, want)):
                return False
        elif not (have in want if isinstance(want, list) else have == want):
            return False
    return True


def groups(ctx, s) -> list[tuple[str, list]]:
    """[(name, [(finding, evaluated unit), ...])] of each group of the summary, in declared order."""
    out = []
    for i, g in enumerate(s.get("of")):
        members = [f for f in findings(ctx) if is_paired(f) and _matches(f.spec, g["where"])]
        if not members:
            raise ConfigError(f"{s.where(f'of[{i}]')}: {g['where']} matches no paired finding")
        out.append((g["name"], [(f, r) for f in members for r in evaluate(ctx, f)["units"]]))
    return out


def _distinct(by_group: list) -> list:
    """Every (finding, unit) of the groups once (a claim two groups share counts once)."""
    seen: dict = {}
    for _, us in by_group:
        for f, r in us:
            seen.setdefault((f.id, id(r)), (f, r))
    return list(seen.values())


def _counts(units: list) -> str:
    n = dict.fromkeys(STATE_NAMES, 0)
    for _, r in units:
        n[r["state"]] += 1
    return ", ".join(f"{STATE_NAMES[k]} {v}" for k, v in n.items() if v) or "none"


def _range(xs: list[float], unit: str = "") -> str:
    return f"{min(xs):.2f} to {max(xs):.2f}{unit} (median {statistics.median(xs):.2f})"


def _power(by_group: list) -> str:
    units = [(f, r) for _, us in by_group for f, r in us]
    alpha = float(units[0][0].get("alpha", 0.05))
    seeds = sorted({len(f.seeds) for f, _ in units})
    per_sd = " and ".join(f"{detectable(1.0, n, alpha):.2f} times their seed sd with {n} seeds" for n in seeds)
    text = (f"Power (two-sided paired t at α {fmt(alpha)}, 80 %, before Holm): the design detects a mean of the "
            f"per-seed differences of {per_sd}")
    seen = []
    for name, us in by_group:
        det = [r["detectable"] for _, r in us if math.isfinite(r.get("detectable", math.nan))]
        paper = [abs(r["paper"]) for _, r in us if r["paper"] is not None]
        if det:
            below = sum(p < statistics.median(det) for p in paper)
            seen.append(f"{name}: {statistics.median(det):.2f} (median over {len(det)} claims) against the paper's "
                        f"margins {_range(paper)}, {below} of {len(paper)} below it")
    if not seen:
        return text + "; in the claims' units once the runs exist (the differences' spread is not measured yet)."
    return text + "; in the claims' units: " + "; ".join(seen) + "."


def _untestable(ctx, s, by_group: list) -> str | None:
    u = s.get("untestable")
    if not u:
        return None
    tables = ctx.memo(("catalog", u["catalog"]), lambda: catalog_tables(ctx, u["catalog"], s.where("untestable")))
    refs, margins, cells = [], {b: [] for b in u["baselines"]}, 0
    for c in u["cells"]:
        for t in c["tables"]:
            refs.append((tables.get(t) or {}).get("ref", t))
            for col in c["columns"]:
                cells += 1
                cell = {"catalog": u["catalog"], "table": t, "column": col}
                ours = published(ctx, s, {**cell, "row": u["treatment"]})
                for b in u["baselines"]:
                    theirs = published(ctx, s, {**cell, "row": b})
                    if ours is not None and theirs is not None:
                        margins[b].append(ours - theirs)
    tested = {b: [r["paper"] for _, us in by_group for f, r in us if r["paper"] is not None
                  and (f.get("treatment") or {}).get("row") == u["treatment"]
                  and (f.get("baseline") or {}).get("row") == b] for b in u["baselines"]}
    largest = all(margins[b] and tested[b] and statistics.median(margins[b]) > statistics.median(tested[b])
                  for b in u["baselines"])
    there = ", ".join(f"over {b} by {_range(margins[b], ' points')}" for b in u["baselines"] if margins[b])
    here = ", ".join(f"over {b} {_range(tested[b])}" for b in u["baselines"] if tested[b])
    head = f"Not testable offline: {u['name']} ({', '.join(dict.fromkeys(refs))}: {cells} columns; {u['why']})"
    if not there:
        return head + "."
    if largest:  # said only where every baseline's median margin there exceeds its median on the cells tested here
        return (f"{head}, where the paper's margins are largest: {u['treatment']} {there}; on the cells tested here "
                f"{here}.")
    return f"{head}: the paper's margins there, {u['treatment']} {there}" + (
        f"; on the cells tested here {here}." if here else ".")


def _link(page: str, link: str) -> str:
    """`link` (a path from the repository root, with its #anchor) as the page at `page` writes it."""
    path, _, anchor = link.partition("#")
    if path == page:
        return f"#{anchor}"
    rel = posixpath.relpath(path, posixpath.dirname(page) or ".")
    return rel + (f"#{anchor}" if anchor else "")


def _provenance(ctx, s, page: str) -> str:
    runs = ctx.evidence(s.get("evidence")).runs()
    why = reasons(runs)
    good = runs[[w is None for w in why]] if len(runs) else runs
    aside = sum(w is not None for w in why)
    aside_text = f"; {aside} legacy record(s) set aside" if aside else ""
    link = f"; per claim: [the verdict table]({_link(page, s.get('link'))})" if s.get("link") else ""
    if not len(good):
        return f"Evidence: no regenerable record of `{s.get('evidence')}` is committed yet{aside_text}{link}."
    commits = sorted(set(map(str, good["git_commit"])))
    numerics = sorted(set(map(str, good["numerics"])))
    made = (f"commit `{commits[0][:12]}`" if len(commits) == 1 else
            f"{len(commits)} commits ({', '.join(f'`{c[:12]}`' for c in commits)})")
    return (f"Evidence: {len(good)} regenerable records of `{s.get('evidence')}`, made at {made} in "
            f"{', '.join(numerics)} numerics{aside_text}{link}.")


def summary(ctx, s, page: str) -> str:
    """The summary block, as a list of its lines."""
    by_group = groups(ctx, s)
    units = _distinct(by_group)
    before = sum(f.get("fixed") == "before_finals" for f, _ in units)
    head = fill(s.get("intro") or "{n} claims, {before} of them fixed before the finals: {counts}.",
                n=len(units), before=before, counts=_counts(units))
    lines = [head, "By group: " + "; ".join(f"{name}, {len(us)} claims: {_counts(us)}" for name, us in by_group) + ".",
             _power(by_group), _untestable(ctx, s, by_group), _provenance(ctx, s, page)]
    return "\n".join(f"- {line}" for line in lines if line)
