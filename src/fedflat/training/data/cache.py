"""Decode-once cache: a dataset's raw files become one uint8/int64 tensor file under `<root>/cache`.

The cache key is the dataset's cache name plus a fingerprint of its source files (path, size,
mtime) and a format version, so replacing a raw file or changing a decoder rebuilds it, and a
second load costs one `torch.load` instead of decoding thousands of PNGs or pickles again.
Checksums are verified while building, i.e. once per source change, not on every load.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Callable, Iterable

import torch

from ...core.errors import ConfigError, OutputError
from ...core.util.io import torch_save

CACHE_DIR = "cache"
FORMAT_VERSION = 1


def fingerprint(sources: Iterable[Path]) -> str:
    items = []
    for p in sorted(Path(s) for s in sources):
        st = p.stat()
        items.append([str(p.resolve()), st.st_size, st.st_mtime_ns])
    return hashlib.sha1(json.dumps([FORMAT_VERSION, items]).encode()).hexdigest()[:16]


def cached(root: Path, name: str, sources: list[Path], build: Callable[[], dict]) -> dict:
    """Return `build()`'s dict of tensors, from `<root>/cache/<name>-<fingerprint>.pt` when present."""
    key = fingerprint(sources)
    path = Path(root) / CACHE_DIR / f"{name}-{key}.pt"
    if path.exists():
        try:
            return torch.load(path, weights_only=True)
        except Exception:  # a corrupted cache is rebuilt, never trusted
            path.unlink(missing_ok=True)
    out = build()
    try:
        for old in path.parent.glob(f"{name}-*.pt"):  # stale versions of the same dataset
            if old != path and re.fullmatch(re.escape(name) + r"-[0-9a-f]{16}\.pt", old.name):
                old.unlink(missing_ok=True)
        torch_save(path, out)
    except (OSError, OutputError):
        pass  # read-only data root or a full disk: still usable, just decoded again next time
    return out


def md5sum(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.md5()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def verify_md5(path: Path, expected: str | None) -> None:
    if expected is None:
        return
    got = md5sum(path)
    if got != expected:
        raise ConfigError(f"checksum mismatch for {path}: md5 {got}, expected {expected}; "
                          f"the file is corrupted or a different version: delete it and re-download")


def require_files(dataset: str, folder: Path, names: Iterable[str], hint: str = "") -> list[Path]:
    """Paths of `names` under `folder`; one ConfigError line naming the folder and missing files."""
    folder = Path(folder)
    paths = [folder / n for n in names]
    missing = [p.name for p in paths if not p.exists()]
    if missing:
        extra = f"; {hint}" if hint else ""
        raise ConfigError(f"dataset {dataset}: missing {', '.join(missing)} in {folder}{extra}")
    return paths
