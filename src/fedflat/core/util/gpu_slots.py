"""Pin each training job to one free GPU on a multi-GPU machine.

Snakemake bounds how many GPU jobs run at once (`--resources gpu=N`; rule `train` asks for gpu=1)
but does not say *which* GPU a job may use. Each job therefore takes an exclusive `flock` on one
lock file per device and runs on that device only. The kernel drops the lock when the process
ends, also on SIGKILL, so a crashed job never holds a GPU. Device names come from
CUDA_VISIBLE_DEVICES when set (so two jobs that SLURM gave different GPUs never collide), else
from the devices torch sees. With one visible device there is nothing to choose and no lock.
"""
from __future__ import annotations

import fcntl
import os
import re
import tempfile
import time
from pathlib import Path

_HELD: list = []  # open lock files: kept referenced for the life of the process


def visible_devices() -> list[str]:
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip()]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []


def lock_dir() -> Path:
    d = os.environ.get("FEDFLAT_GPU_LOCK_DIR") or Path(tempfile.gettempdir()) / f"fedflat-gpu-locks-{os.getuid()}"
    Path(d).mkdir(parents=True, exist_ok=True)
    return Path(d)


def acquire(devices: list[str], directory: Path, poll_s: float = 0.5, timeout_s: float | None = None):
    """Index into `devices` of the first one no other process holds, and its open lock file."""
    start = time.monotonic()
    while True:
        for i, name in enumerate(devices):
            fh = open(Path(directory) / f"gpu-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.lock", "a+")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                continue
            fh.seek(0), fh.truncate(), fh.write(f"{os.getpid()}\n"), fh.flush()
            return i, fh
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            raise TimeoutError(f"no free GPU among {devices} after {timeout_s} s")
        time.sleep(poll_s)


def pin_device(device: str) -> str:
    """'cuda' or 'auto' on a machine with several visible GPUs -> 'cuda:<i>' of a free one."""
    if device not in ("cuda", "auto"):
        return device
    devices = visible_devices()
    if len(devices) <= 1:
        return device
    i, fh = acquire(devices, lock_dir())
    _HELD.append(fh)
    import torch

    torch.cuda.set_device(i)
    return f"cuda:{i}"
