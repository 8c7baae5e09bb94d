"""Markdown table cells from free text: a label is free text (spaces, Greek letters, '=', '+', '|' even), and an
unescaped '|' in a cell would split it into two and shift every cell after it."""
from __future__ import annotations

import re

_PIPE = re.compile(r"(?<!\\)\|")


def md_cell(value):
    """A string as one Markdown table cell: '|' escaped (once), line breaks as spaces; other values unchanged."""
    if not isinstance(value, str):
        return value
    return _PIPE.sub(r"\\|", value.replace("\r", " ").replace("\n", " "))


def md_table(frame, **to_markdown) -> str:
    """DataFrame.to_markdown with every text cell, index and column label made one cell (md_cell)."""
    return frame.rename(index=md_cell, columns=md_cell).map(md_cell).to_markdown(**to_markdown)


def embed(table_text: str) -> str:
    """A rendered table file set inside a page: its title lines ("# ...", the top heading of a file of its own)
    become level-4 headings, so the page keeps one title and its own section outline."""
    return "\n".join("#### " + line[2:].strip() if line.startswith("# ") else line
                     for line in table_text.strip().split("\n"))
