"""FedSynSAM's deviations table (docs/reproduction.md#fedsynsam-deviations), from config/papers/deviations/<paper>.yaml:
every place a run departs from the paper's text, the sentence it departs from, what the primary cells run, the named
sensitivity variant and where its runs are. Loading checks the file's shape and names (one line naming the key)."""
from __future__ import annotations

from pathlib import Path

from ..core.errors import ConfigError, choice_error

KINDS = ("text_contradicted", "outside_stated_grid", "post_hoc_protocol", "unavoidable")
KEYS = ("kind", "paper", "primary", "variant", "why", "experiments", "table")
KIND_TEXT = {"text_contradicted": "contradicts the text", "outside_stated_grid": "outside a stated grid",
             "post_hoc_protocol": "chosen after seeing the data", "unavoidable": "unavoidable offline"}


def load_deviations(path: Path) -> dict:
    """The file as a mapping, each deviation's keys and kind checked."""
    import yaml

    raw = yaml.safe_load(Path(path).read_text()) or {}
    for name, d in (raw.get("deviations") or {}).items():
        missing = [k for k in KEYS if k not in (d or {})]
        if missing:
            raise ConfigError(f"{path}: deviations.{name}: missing {', '.join(missing)}")
        if d["kind"] not in KINDS:
            raise choice_error(f"{path}: deviations.{name}.kind", d["kind"], KINDS)
        if not isinstance(d["paper"], dict) or not d["paper"].get("quote") or not d["paper"].get("section"):
            raise ConfigError(f"{path}: deviations.{name}.paper: needs section and quote (the sentence departed from)")
        if d["kind"] != "unavoidable" and not (d["experiments"] and d["table"]):
            raise ConfigError(f"{path}: deviations.{name}: a deviation that can be run names its experiments and table")
    return raw


def block_for(paper: str):
    def block(ctx) -> str:
        raw = load_deviations(ctx.config(f"papers/deviations/{paper}.yaml"))
        lines = [f"Every departure from the paper's text, from `config/papers/deviations/{paper}.yaml`; each runs only "
                 f"as its named sensitivity experiments (in `{raw.get('config', '')}`), at the primary cells' picks "
                 "with one switch changed, never in a primary cell.", "",
                 "| deviation | kind | the paper (section: sentence) | primary cells run | sensitivity variant | "
                 "why it was run | sensitivity table |", "|---|---|---|---|---|---|---|"]
        for name, d in raw["deviations"].items():
            table = f"`{d['table']}` ({len(d['experiments'])} experiments)" if d["table"] else "none possible"
            lines.append(f"| {name} | {KIND_TEXT[d['kind']]} | {d['paper']['section']}: \"{d['paper']['quote']}\" | "
                         f"{d['primary']} | {d['variant']} | {d['why']} | {table} |")
        return "\n".join(lines)
    return block
