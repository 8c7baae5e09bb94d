"""The Markdown of a declared finding, and the page blocks derived from every declaration.

A block is [intro], the table, [after], joined by blank lines; every finding declaring one page block renders into
it, in declaration order. `layout.columns` lists the table's columns: unit fields (a name, or {name: heading}) and
the tokens @paper, @candidates (a column each), @baseline (its value), @verdict (adopt: the candidate the unit
supports), @candidate and @value (a line per candidate), @ours, @spread, @result, @versus, @explained, @picks
(ordering), @interval, @p, @detectable (paired); a grid finding's @at, @means, @pick, @catalog. Layouts
`by_candidate` (a line per group and candidate, the unit column's values across) and `across` (a line per group,
each unit column's paper value, then its candidates' cells) serve adopt_candidate. Text tokens: {seeds} ('0-1'),
{evidence}, {tolerance}, {recorded} and {expected} (runs), {groups} (ordering: words.summary per
`layout.group_by`), {explained} and {n}, {done}, {grids} and {expected_grids}, {embed} (`layout.embed`: an
exported table), and adoption's {picks}, {counts}, {candidate}, {units}, {adoption}."""
from __future__ import annotations

import math

from ..compare import signed
from ..legacy import label
from .decide import STATE_NAMES, evaluate, fill, is_paired
from .declared import findings, fmt
from .match import cell_text
from . import shown
from .summary import summary

HEADS = {"@paper": "paper", "@verdict": "verdict", "@candidate": "candidate", "@value": "value", "@ours": "ours",
         "@spread": "pooled seed std", "@baseline": "baseline", "@interval": "95 % interval", "@p": "p (Holm)",
         "@detectable": "detectable at 80 % power"}
RESERVED = {"where", "paper", "candidates", "baseline", "treatment", "table"}


def _num(x, spec: str = ".2f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _columns(f, r: dict) -> list[tuple[str, str]]:
    """(key, heading) of each table column: declared, or the unit's fields then the kind's own."""
    declared = (f.get("layout") or {}).get("columns")
    if declared is None:
        fields = [k for k in r["unit"] if k not in RESERVED]
        own = ["@paper", "@ours", "@interval", "@p", "@detectable", "@verdict"] if is_paired(f) else \
            ["@paper", "@ours", "@spread", "@verdict"] if f.kind == "ordering" else ["@paper", "@candidates", "@verdict"]
        declared = fields + own
    out = []
    for c in declared:
        key, head = next(iter(c.items())) if isinstance(c, dict) else (c, None)
        out.append((key, head if head is not None else HEADS.get(key, key)))
    return out


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _wide(f, res: dict) -> list[str]:
    units = res["units"]
    cols = _columns(f, units[0])
    mark = (f.get("layout") or {}).get("baseline_mark", "")
    long = any(k in ("@candidate", "@value") for k, _ in cols)
    heads = []
    for key, head in cols:
        heads += [c["head"] + (mark if c["value"] == units[0].get("baseline") else "") for c in units[0]["candidates"]] \
            if key == "@candidates" else [head]
    lines = [_line(heads), "|" + "---|" * len(heads)]
    for r in units:
        for c in (r["candidates"] if long else [None]):
            lines.append(_line([x for key, _ in cols for x in _cell(f, r, key, c)]))
    return lines


def _cell(f, r: dict, key: str, c: dict | None) -> list[str]:
    u = r["unit"]
    if key == "@paper":
        return [signed(r["paper"]) if f.kind in ("ordering", "paired_claim") else _num(r["paper"])]
    if key == "@candidates":
        return [cell_text(r["cells"][x["value"]]) for x in r["candidates"]]
    if key == "@candidate":
        return [c["head"]]
    if key == "@value":
        return [cell_text(r["cells"][c["value"]])]
    if key == "@verdict":
        if f.kind == "adopt_candidate":
            return [_supports(f, r)]
        if f.kind in ("ordering", "paired_claim"):
            return [r["shown"]]
        return ["" if c is not None and c["value"] == r["baseline"] else r["verdict"]]
    if key == "@baseline":
        return [fmt(r["baseline"])]
    if key == "@ours":
        return [signed(r["ours"])]
    if key == "@spread":
        return [_num(r["spread"])]
    if key == "@interval":
        return [f"[{_num(r.get('lo'))}, {_num(r.get('hi'))}]"]
    if key == "@p":
        return [_num(r.get("p_holm"), ".3g")]
    if key == "@detectable":
        return [_num(r.get("detectable"))]
    if key in ("@result", "@versus"):
        return [_result(f, r if key == "@result" else r.get("versus"), key[1:])]
    if key == "@picks":
        return [", ".join("none" if c.get("pick") is None else fmt(c["pick"]) for c in r["cells"])]
    if key == "@explained":
        return [_explained(r)]
    return [str(u.get(key, ""))]


def _result(f, x: dict | None, which: str) -> str:
    """An ordering's result as words.result / words.versus print it ({ours}, {spread}, {verdict}), or
    words.<which>_unsettled."""
    words = f.get("words") or {}
    if x is None or x.get("verdict") is None:
        return words.get(f"{which}_unsettled", "not settled")
    return fill(words.get(which, "{ours} ({spread}): {verdict}"), ours=signed(x.get("ours")), spread=_num(x.get("spread")),
                verdict=x["verdict"])


def _explained(r: dict) -> str:
    """Does the ordering appear here and not in its `versus` (the setting explains or hides it)?"""
    if r["verdict"] is None:
        return "-"
    v = r.get("versus")
    return "yes" if r["verdict"] == "appears" and (v is None or v.get("verdict") != "appears") else "no"


def _supports(f, r: dict) -> str:
    from .match import complete

    words = f.get("words") or {}
    if not complete(*r["cells"].values()):
        return words.get("waits", "waits for its runs")
    names = {c["value"]: c["name"] for c in r["candidates"]}
    if (f.get("count") == "alone") or len(r["within"]) < 2:
        return names[r["supports"]] if r["supports"] is not None else words.get("neither", "neither")
    return ", ".join(names[v] for v in r["within"])


def _groups(f, res: dict) -> tuple[str, str, dict]:
    lay = f.get("layout") or {}
    rows, across = lay.get("rows", "method"), lay.get("columns_by", "column")
    groups: dict = {}
    for r in res["units"]:
        groups.setdefault(r["unit"].get(rows), {})[r["unit"].get(across)] = r
    return rows, across, groups


def _by_candidate(f, res: dict) -> list[str]:
    """A 'paper' line and a line per candidate for each group; the unit column's values across; the count."""
    lay = f.get("layout") or {}
    _, _, groups = _groups(f, res)
    heads = lay.get("heads", ["method", "candidate", "count"])
    first = next(iter(groups.values()))
    lines = [_line([heads[0], heads[1], *first, heads[2]]), "|" + "---|" * (len(first) + 3)]
    for g, by in groups.items():
        lines.append(_line([str(g), "paper", *(_num(r["paper"]) for r in by.values())]) + " |")
        for c in f.candidates:
            mark = lay.get("adopted_mark", "") if res["picks"].get(g) == c["value"] else ""
            lines.append(_line([str(g), c["head"] + mark, *(cell_text(r["cells"][c["value"]]) for r in by.values()),
                                str(res["counts"][g][c["value"]])]))
    return lines


def _across(f, res: dict) -> list[str]:
    """A line per group: each unit column's paper value, then each (unit column, candidate) cell, '*' if within."""
    _, _, groups = _groups(f, res)
    head = (f.get("layout") or {}).get("heads", ["method"])[0]
    cols = list(next(iter(groups.values())))
    pairs = [(col, c) for col in cols for c in f.candidates]
    lines = [_line([head, *(f"{col}, paper" for col in cols), *(f"{col}, {c['head']}" for col, c in pairs)]),
             "|" + "---|" * (1 + len(cols) + len(pairs))]
    for g, by in groups.items():
        lines.append(_line([str(g), *(_num(by[col]["paper"]) for col in cols),
                            *(cell_text(by[col]["cells"][c["value"]]) + (" *" if c["value"] in by[col]["within"] else "")
                              for col, c in pairs)]))
    return lines


def _grid_table(f, res: dict) -> list[str]:
    """A line per grid (by: score): its unit fields, the fixed coordinate (*catalog*: the grid the catalog follows),
    every value's mean (the pick bold), the pick with its edge mark, and the values the catalog runs."""
    g, lay = f.get("grid") or {}, f.get("layout") or {}
    cols = [c for c in lay.get("columns", [])]
    lines = [_line([next(iter(c.values())) if isinstance(c, dict) else c for c in cols]), "|" + "---|" * len(cols)]
    for r in res["units"]:
        cells = ", ".join((f"**{x:g}: {_mean(m)}**" if x == r["pick"] else f"{x:g}: {_mean(m)}")
                          for x, m in r["means"].items())
        ladder = g.get("ladder") if r["follows"] else None
        pick = (f"{r['pick']:g}{_edge(r['pick'], list(r['means']), ladder, f.get('words') or {})}" if r["pick"] is not None
                else ("every cell diverged" if r["complete"] else "incomplete"))
        at = (r["unit"]["at"] or "–") + (" (*catalog*)" if r["follows"] else "")
        own = {"@at": at, "@means": cells, "@pick": pick,
               "@catalog": ", ".join(sorted(r["catalog"], key=lambda v: float(v or 0))) or "–"}
        lines.append(_line([own.get(k, str(r["unit"].get(k, ""))) for k in
                            (next(iter(c)) if isinstance(c, dict) else c for c in cols)]))
    return lines


def _mean(m: float) -> str:
    return "diverged" if m != m else f"{m:.2f}"


def _edge(value: float, grid: list[float], ladder: list | None, words: dict) -> str:
    """' (grid top)' / ' (grid bottom)' for a pick on its grid's edge; with the ladder a grid is extended along,
    whether the ladder extends the grid past the pick (words.extends) or ends there (words.ladder_end)."""
    if value not in (min(grid), max(grid)):
        return ""
    side = "grid top" if value == max(grid) else "grid bottom"
    if ladder is None:
        return f" ({side})"
    beyond = ladder[-1] > value if side == "grid top" else ladder[0] < value
    return fill(words.get("extends" if beyond else "ladder_end",
                          " ({side}; the ladder extends it)" if beyond else " ({side}: the end of the ladder)"), side=side)


def _adoption(f, res: dict, **tokens) -> dict:
    """{picks}, {counts}, {candidate}, {units} and {adoption}: words.adopted once every cell is in, else
    words.adopt_waits. A pick reads words.pick ({group}, {candidate}, {count}, {units} of its group), a count
    words.count ({candidate}, {count}: the only group's)."""
    words = f.get("words") or {}
    per = f.get("per", "all")
    names = {c["value"]: c["name"] for c in f.candidates}
    size: dict = {}
    for r in res["units"]:
        g = "" if per == "all" else r["unit"].get(per)
        size[g] = size.get(g, 0) + 1
    picks = words.get("pick_join", "; ").join(
        fill(words.get("pick", "{group}: {candidate}"), group=g, candidate=names[v], count=res["counts"][g][v],
             units=size[g]) for g, v in res["picks"].items())
    counts = next(iter(res["counts"].values())) if len(res["counts"]) == 1 else {}
    out = {**tokens, "picks": picks, "units": len(res["units"]),
           "counts": words.get("count_join", ", ").join(fill(words.get("count", "{candidate}: {count}"),
                                                              candidate=names[v], count=n) for v, n in counts.items()),
           "candidate": names.get(next(iter(res["picks"].values()), None), "")}
    return {**out, "adoption": fill(words.get("adopted" if res["complete"] else "adopt_waits", ""), **out)}


def _summary(f, res: dict) -> str:
    """Ordering: words.summary per group of `layout.group_by` fields, with {appears}, {settled}, {n}, {order}."""
    words = f.get("words") or {}
    by = (f.get("layout") or {}).get("group_by", [])
    groups: dict = {}
    for r in res["units"]:
        groups.setdefault(tuple(r["unit"].get(k) for k in by), []).append(r)
    appears = (f.get("words") or {}).get("appears", "appears")
    texts = []
    for key, g in groups.items():
        tokens = dict(zip(by, key))
        settled = sum(r["verdict"] is not None for r in g)
        if not settled and "summary_pending" in words:
            texts.append(fill(words["summary_pending"], **tokens))
            continue
        texts.append(fill(words.get("summary", ""), appears=sum(r["verdict"] == appears for r in g), settled=settled,
                          n=len(g), order=_order_text(f, g), **tokens))
    return "; ".join(texts)


def _order_text(f, g: list[dict]) -> str:
    """Whether the group's means rise in the paper's order (the baseline first, then the treatments by their
    paper effect): `order` words holds / fails / unsettled."""
    words = f.get("order") or {}
    if not words:
        return ""
    if any(r["verdict"] is None or r["paper"] is None for r in g):
        return words.get("unsettled", "not settled")
    ordered = sorted(g, key=lambda r: r["paper"])
    means = [ordered[0]["base_mean"]] + [r["mean"] for r in ordered]
    return words["holds"] if all(x < y for x, y in zip(means, means[1:])) else words["fails"]


def render(ctx, f) -> str:
    """One finding's part of its page block."""
    res = evaluate(ctx, f)
    lay = f.get("layout") or {}
    runs = [c for r in res["units"] for c in (r["cells"].values() if isinstance(r["cells"], dict) else r["cells"])]
    seeds = f.seeds
    tokens = {"seeds": f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else fmt(seeds[0]), "evidence": f.get("evidence"),
              "tolerance": fmt(f.tolerance), "recorded": sum(c["seeds"] for c in runs),
              "expected": sum(c["need"] for c in runs)}
    if f.kind == "ordering" and not any(r["verdict"] for r in res["units"]) and "pending" in (f.get("words") or {}):
        return f.get("words")["pending"]
    if f.kind == "ordering" and (f.get("words") or {}).get("summary"):
        tokens["groups"] = _summary(f, res)
    if f.kind == "ordering":
        tokens.update(explained=sum(_explained(r) == "yes" for r in res["units"]), n=len(res["units"]))
    if lay.get("embed"):
        from ...core.util.markdown import embed

        tokens["embed"] = embed(ctx.evidence(f.get("evidence")).table_text(lay["embed"]) or "")
    if res.get("grids"):
        if not res["units"]:
            return (f.get("words") or {}).get("pending", "")
        tokens.update(done=sum(r["complete"] and r["follows"] for r in res["units"]), grids=len(res["units"]),
                      expected_grids=len(f.units) * int((f.get("grid") or {}).get("methods", 1)))
    table = {"by_candidate": _by_candidate, "across": _across, "grid": _grid_table}.get(
        "grid" if res.get("grids") else lay.get("kind"), _wide)(f, res)
    note = ""
    if res.get("coinciding"):
        note = fill((f.get("coincide") or {}).get("note", ""), names=", ".join(map(str, res["coinciding"])))
    if f.kind == "adopt_candidate" and not res.get("grids"):
        tokens = _adoption(f, res, **tokens)
    after = []
    adopts = f.kind == "adopt_candidate" and not res.get("grids")
    for t in lay.get("after", ["{coincide}", "{adoption}"] if adopts else ["{coincide}"]):
        text = fill(t, coincide=note, **tokens)
        if text or not t:
            after.append(text)
    parts = [_legacy(f, runs), fill(f.get("intro") or "", **tokens), "\n".join(table), "\n".join(after)]
    return "\n\n".join(p for p in parts if p)


def _legacy(f, cells: list) -> str:
    """The block's first line where a finding reading every record (`records: all`) shows legacy ones."""
    import pandas as pd

    frames = [c["rows"] for c in cells if c is not None and c.get("rows") is not None and len(c["rows"])]
    if f.records != "all" or not frames:
        return ""
    return label(pd.concat(frames).drop_duplicates("run_id"), (f.get("words") or {}).get("legacy", "Legacy"))


def page_blocks(ctx) -> dict[str, dict]:
    """{page: {block: renderer(ctx)}} of every declaration (several findings may share a block; a finding may
    render into several pages)."""
    out: dict[str, dict] = {}
    for f in findings(ctx):
        for path, block in f.pages:
            out.setdefault(path, {}).setdefault(block, []).append(f.id)
    return {path: {block: _joined(ids, path) for block, ids in blocks.items()} for path, blocks in out.items()}


def _joined(ids: list[str], page: str):
    def block(ctx) -> str:
        by_id = {f.id: f for f in findings(ctx)}
        fs = [by_id[i] for i in ids]
        if all(is_paired(f) for f in fs):
            return claims(ctx, fs)
        return "\n\n".join(summary(ctx, f, page) if f.kind == "summary" else
                             shown.render(ctx, f) if f.kind == "tables" else render(ctx, f) for f in fs)
    return block


CLAIM_COLUMNS = ("claim", "paper", "ours (95 % interval)", "p (Holm)", "verdict", "detectable at 80 % power")


def claims(ctx, fs: list) -> str:
    """Paired claims sharing a block: one line per claim (its question, and its unit's fields where it has several):
    the paper's effect, ours (the mean paired difference with its 95 % interval), the Holm-adjusted p, the verdict
    (while a claim waits, what it waits for: its runs recorded of those expected, the legacy records set aside) and
    the difference the design detects; then the count of each verdict."""
    lines = [_line(list(CLAIM_COLUMNS)), "|" + "---|" * len(CLAIM_COLUMNS)]
    count = dict.fromkeys(STATE_NAMES, 0)
    for f in fs:
        units = evaluate(ctx, f)["units"]
        for r in units:
            extra = ", ".join(str(v) for k, v in r["unit"].items() if k not in RESERVED and k != "column"
                              and len(units) > 1)
            ours = "-" if r["state"] == "waits" else f"{signed(r['ours'])} [{_num(r.get('lo'))}, {_num(r.get('hi'))}]"
            lines.append(_line([f.get("question") + (f" ({extra})" if extra else ""), signed(r["paper"]), ours,
                                _num(r.get("p_holm"), ".3g"), r["shown"], _num(r.get("detectable"))]))
            count[r["state"]] += 1
    return "\n".join(lines) + "\n\n" + "; ".join(f"{STATE_NAMES[s]}: {n}" for s, n in count.items()) + "."
