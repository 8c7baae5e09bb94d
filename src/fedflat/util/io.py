"""Atomic file writes: a killed job never leaves a half-written artifact under the final name."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make a re-rendered README private to its writer
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json(path: Path, obj: Any) -> None:
    atomic_write(path, lambda t: t.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"))


def write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda t: t.write_text(text))


def torch_save(path: Path, obj: Any) -> None:
    import torch

    atomic_write(path, lambda t: torch.save(obj, t))


def read_manifest(arg: str):
    """--manifest: JSON text, @FILE, or @- (standard input). A large study's manifest (the leaderboard's tuning
    table lists 744 runs) exceeds the kernel's 128 KiB limit on one argument, so the rules pipe it in."""
    if arg == "@-":
        return json.loads(sys.stdin.read())
    return json.loads(Path(arg[1:]).read_text() if arg.startswith("@") else arg)
