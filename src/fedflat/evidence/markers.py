"""Generated blocks inside hand-written Markdown: everything between

    <!-- generated:NAME -->
    ...
    <!-- /generated:NAME -->

is rendered from the committed evidence (fedflat.evidence.pages) and overwritten on every render; the prose
around it stays hand-written. An unmatched or nested marker is an error naming the file and the block."""
from __future__ import annotations

import re

BEGIN = re.compile(r"^<!-- generated:([A-Za-z0-9_.-]+) -->$")
END = re.compile(r"^<!-- /generated:([A-Za-z0-9_.-]+) -->$")
NOTE = "<!-- rendered from results/evidence by `python -m fedflat.evidence pages`: edit the code, not this block -->"


class MarkerError(ValueError):
    pass


def blocks(text: str, where: str = "") -> dict[str, tuple[int, int]]:
    """{name: (first line inside, line of the end marker)} of every generated block (0-based line numbers)."""
    out: dict[str, tuple[int, int]] = {}
    open_name, start = None, 0
    for i, line in enumerate(text.split("\n")):
        b, e = BEGIN.match(line.strip()), END.match(line.strip())
        if b:
            if open_name is not None:
                raise MarkerError(f"{where}: block {b.group(1)!r} opens inside block {open_name!r} (line {i + 1})")
            if b.group(1) in out:
                raise MarkerError(f"{where}: block {b.group(1)!r} appears twice (line {i + 1})")
            open_name, start = b.group(1), i + 1
        elif e:
            if e.group(1) != open_name:
                raise MarkerError(f"{where}: end of block {e.group(1)!r} without its begin (line {i + 1})")
            out[open_name] = (start, i)
            open_name = None
    if open_name is not None:
        raise MarkerError(f"{where}: block {open_name!r} is never closed")
    return out


def replace(text: str, rendered: dict[str, str], where: str = "") -> str:
    """`text` with every block named in `rendered` replaced by its new body (a NOTE line first). A block of
    the file with no renderer, or a renderer with no block in the file, is an error."""
    found = blocks(text, where)
    missing = sorted(set(rendered) - set(found))
    if missing:
        raise MarkerError(f"{where}: no block {missing[0]!r} (add <!-- generated:{missing[0]} --> ... "
                          f"<!-- /generated:{missing[0]} -->)")
    unknown = sorted(set(found) - set(rendered))
    if unknown:
        raise MarkerError(f"{where}: block {unknown[0]!r} has no renderer in fedflat.evidence.pages")
    lines = text.split("\n")
    for name, (a, b) in sorted(found.items(), key=lambda kv: -kv[1][0]):  # bottom-up keeps indices valid
        body = rendered[name].strip("\n")
        lines[a:b] = [NOTE] + (body.split("\n") if body else [])
    return "\n".join(lines)


def outside(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line outside generated blocks and fenced code (what the number check reads)."""
    inside = set()
    for a, b in blocks(text).values():
        inside.update(range(a - 1, b + 1))
    out, fence = [], False
    for i, line in enumerate(text.split("\n")):
        if line.strip().startswith("```"):
            fence = not fence
            continue
        if not fence and i not in inside:
            out.append((i + 1, line))
    return out
