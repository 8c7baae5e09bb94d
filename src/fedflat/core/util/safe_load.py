"""Loading a checkpoint, model or state file without running code from it.

`torch.load` with the restricted unpickler switched off unpickles arbitrary objects, so a crafted `checkpoint.pt`
or `model.pt` runs its code before any check of what it holds. Every file fedflat writes with `torch_save`
(core/util/io.py) holds only tensors, dicts, lists, tuples, strings and numbers, which PyTorch's restricted unpickler
(`weights_only=True`) reads without help: nothing needs registering with `torch.serialization.add_safe_globals`
(the safe-loading tests load every file a run writes: checkpoints with each client-state backend and an
error-feedback uplink, snapshots, models). A file that needs more is refused in one line, never opened the unsafe
way.
"""
from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import Any

from ..errors import ConfigError


def load_tensors(path: str | Path, what: str = "file", advice: str = "", keys: tuple[str, ...] = ()) -> Any:
    """The contents of a file written by util.io.torch_save, on the CPU. A file holding anything but plain data and
    tensors (a pickle that could run code), a corrupted or truncated file, and (with `keys`) one that is not a
    mapping holding every key are ConfigErrors naming the path; `what` names the file's role ("checkpoint",
    "run model"), `advice` says what to do about a bad one."""
    import torch

    path = Path(path)
    tail = f"; {advice}" if advice else ""
    try:
        with warnings.catch_warnings():  # e.g. a foreign pickle protocol: the one line below says what matters
            warnings.simplefilter("ignore")
            out = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} is missing{tail}") from None
    except pickle.UnpicklingError as exc:
        if _refused(exc):
            raise ConfigError(f"{what} {path} refused: it holds objects other than tensors and plain data, which "
                              f"loading would run as code (weights_only=True){tail}") from None
        raise ConfigError(f"{what} {path} is corrupted or truncated (UnpicklingError){tail}") from None
    except Exception as exc:  # a truncated zip, a foreign format: name the file, do not guess
        raise ConfigError(f"{what} {path} is corrupted or truncated ({type(exc).__name__}){tail}") from None
    missing = [k for k in keys if not isinstance(out, dict) or k not in out]
    if missing:
        raise ConfigError(f"{what} {path} is not a fedflat {what}: no {missing[0]!r} entry{tail}")
    return out


def _refused(exc: pickle.UnpicklingError) -> bool:
    """Whether the restricted unpickler refused a global or an opcode (rather than failing on damaged bytes)."""
    text = str(exc)
    return "Weights only load failed" in text or "weights_only" in text
