"""Which committed records cannot be regenerated (issue 48: every number a verdict rests on comes from records of one
clean commit in its study's numerics), and the one-line label a block shows when it renders such records.

A record is legacy when its export marked it (the `legacy` column: export --keep-legacy) or when it fails
records.regenerable (no commit, a modified working tree, no numerics fields): the second check holds for a file
exported before the column existed. A legacy record never feeds a verdict (a finding reads regenerable records
only); a block that shows one anyway (a target's table, a gap) says so in its first line."""
from __future__ import annotations

import re

from .records import regenerable


def reason(row: dict) -> str | None:
    """Why a record cannot be regenerated (None: it can)."""
    marked = row.get("legacy")
    if isinstance(marked, str) and marked.strip():
        return marked.strip()
    return regenerable(row)


def reasons(runs) -> list[str | None]:
    """reason() of every record of a runs frame, in order."""
    return [reason(r) for r in runs.to_dict("records")] if len(runs) else []


def regenerable_only(runs):
    """The records a verdict may read: every legacy one dropped."""
    keep = [r is None for r in reasons(runs)]
    return runs[keep] if len(runs) else runs


def legacy_only(runs):
    """The records no verdict may read."""
    drop = [r is not None for r in reasons(runs)]
    return runs[drop] if len(runs) else runs


def _kind(why: str) -> str:
    """A reason without the commit it names: 'made from a modified working tree (87632fb-dirty)' -> its kind."""
    return re.sub(r"\s*\([0-9a-f]{6,}[^)]*\)$", "", why)


def label(runs, name: str = "Legacy") -> str:
    """'**<name> (not regenerable)**: ...' naming how many of the records behind a block cannot be regenerated and
    why (counted by kind), or '' when every one can."""
    whys = [w for w in reasons(runs) if w is not None]
    if not whys:
        return ""
    kinds: dict[str, int] = {}
    for w in whys:
        kinds[_kind(w)] = kinds.get(_kind(w), 0) + 1
    told = "; ".join(f"{k}: {n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    return (f"**{name} (not regenerable)**: {len(whys)} of the {len(runs)} records behind this block cannot be "
            f"re-run from the commit they name ({told}); shown as they were measured, they feed no verdict.")
