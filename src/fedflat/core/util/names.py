"""Names from a config that become file names, and output paths that must stay under their root.

A study, table, figure or experiment name is a path component (`results/benchmarks/<study>.md`,
`<tables_dir>/<table>.md`, `results/evidence/<study>/`) and reaches the workflow's shell commands inside an output
path, so it is one safe word: letters, digits, `_`, `.`, `-`, not starting with a dot (no `..`, no hidden file), no
path separator and no shell metacharacter (`$`, backticks, `;`, quotes, spaces). An output directory set in the
config (tables_dir, figures_dir) is such words joined by `/`, relative to the workflow's directory. Labels are
free text (spaces, Greek letters, `=`, `+`, parentheses): they never become paths, and Markdown cells escape them
(core/util/markdown.py).
"""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import ConfigError

_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_ALLOWED = "letters, digits, '_', '.', '-', not starting with '.'"


def check_name(key: str, value) -> str:
    """`value` as a safe file-name word, or a ConfigError naming `key`."""
    if not isinstance(value, str) or not _WORD.fullmatch(value) or len(value) > 200:
        raise ConfigError(f"{key}: {value!r} is not a safe name ({_ALLOWED}; it becomes a file name)")
    return value


def check_relative_dir(key: str, value) -> str:
    """`value` as a relative directory of safe words joined by '/', or a ConfigError naming `key`."""
    parts = value.split("/") if isinstance(value, str) else [None]
    if not isinstance(value, str) or any(not isinstance(p, str) or not _WORD.fullmatch(p) for p in parts):
        raise ConfigError(f"{key}: {value!r} is not a safe relative directory (words of {_ALLOWED}, joined by '/'; "
                          f"no '..', no absolute path)")
    return value


def under(root: str | Path, *parts: str, key: str = "path") -> Path:
    """root/parts..., checked to stay under `root` once resolved (no '..', no absolute part, no symlink out)."""
    root_path = Path(root)
    path = root_path.joinpath(*parts)
    base = root_path.resolve()
    if not path.resolve().is_relative_to(base):
        raise ConfigError(f"{key}: {'/'.join(parts)!r} leads outside {root}")
    return path
