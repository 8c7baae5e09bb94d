"""Atomic file writes: a killed job never leaves a half-written artifact under the final name, and a full disk
is one line naming the file (OutputError), never a half-written file or a traceback from deep in a writer."""
from __future__ import annotations

import errno
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from ..errors import OutputError

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Every fedflat output goes through here: `write` fills a temporary file beside `path`, which then replaces
    `path` in one step. A full disk (or quota) anywhere on the way is an OutputError naming `path`."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        write(Path(tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make a re-rendered README private to its writer
        os.replace(tmp, path)
    except Exception as exc:
        if _no_space(exc):
            raise OutputError(f"{path}: no space left on device; nothing was written there (free space and "
                              f"rerun: finished outputs are kept)") from None
        raise
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def _no_space(exc: BaseException) -> bool:
    """Whether a full disk (or quota) caused `exc`, also where a writer's cleanup raised something else over it
    (matplotlib's PDF writer answers ENOSPC with an AttributeError while closing its stream)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _NO_SPACE:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def write_json(path: Path, obj: Any) -> None:
    atomic_write(path, lambda t: t.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"))


def write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda t: t.write_text(text))


def torch_save(path: Path, obj: Any) -> None:
    import torch

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:  # through a Python file, a full disk is OSError(ENOSPC), not a zip-writer error
            torch.save(obj, fh)

    atomic_write(path, write)


def copy_file(src: Path, dst: Path) -> None:
    """A byte copy of `src` written atomically to `dst` (its directory made)."""
    atomic_write(dst, lambda t: shutil.copyfile(src, t))


def read_manifest(arg: str):
    """--manifest: JSON text, @FILE, or @- (standard input). A large study's manifest (the leaderboard's tuning
    table lists 744 runs) exceeds the kernel's 128 KiB limit on one argument, so the rules pipe it in."""
    if arg == "@-":
        return json.loads(sys.stdin.read())
    return json.loads(Path(arg[1:]).read_text() if arg.startswith("@") else arg)
