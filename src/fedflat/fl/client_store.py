"""Per-client persistent state (control variates, duals, stale models), in memory or on disk.

On disk each client's vectors live in one file per version (the round that wrote it), so
200 clients x ResNet-18 x several states never has to fit in RAM, only the sampled clients of a
round are loaded, and a run resumed from a checkpoint at round r can drop the versions written
after r: resuming gives exactly the state the checkpoint saw.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import torch

from ..util.io import torch_save

_VERSION = re.compile(r"client(\d+)\.r(\d+)\.pt$")


class ClientStateStore:
    def __init__(self, names: tuple[str, ...], make: Callable[[str], torch.Tensor],
                 backend: str = "memory", directory: str | Path | None = None, device="cpu"):
        self.names = names
        self.make = make  # initial value of a state vector (zeros unless a part says otherwise)
        self.backend = backend
        self.device = device
        self.dir = Path(directory) if directory is not None else None
        self._mem: dict[int, dict[str, torch.Tensor]] = {}
        if backend == "disk":
            if self.dir is None:
                raise ValueError("disk-backed client state needs a directory")
            self.dir.mkdir(parents=True, exist_ok=True)

    def _versions(self) -> dict[int, list[tuple[int, Path]]]:
        out: dict[int, list[tuple[int, Path]]] = {}
        for p in self.dir.glob("client*.r*.pt"):
            m = _VERSION.search(p.name)
            if m:
                out.setdefault(int(m.group(1)), []).append((int(m.group(2)), p))
        return {c: sorted(v) for c, v in out.items()}

    def _latest(self, cid: int) -> Path | None:
        found = sorted(self.dir.glob(f"client{cid:05d}.r*.pt"), key=lambda p: int(_VERSION.search(p.name).group(2)))
        return found[-1] if found else None

    def get(self, cid: int) -> dict[str, torch.Tensor]:
        if not self.names:
            return {}
        if self.backend == "memory":
            if cid not in self._mem:
                self._mem[cid] = {n: self.make(n) for n in self.names}
            return self._mem[cid]
        p = self._latest(cid)
        if p is not None:
            return {k: v.to(self.device) for k, v in torch.load(p, map_location="cpu").items()}
        return {n: self.make(n) for n in self.names}

    def put(self, cid: int, state: dict[str, torch.Tensor], round: int) -> None:
        if not self.names:
            return
        if self.backend == "memory":
            self._mem[cid] = state
        else:
            torch_save(self.dir / f"client{cid:05d}.r{round:06d}.pt", {k: v.detach().cpu() for k, v in state.items()})

    def snapshot(self, round: int) -> dict:
        """What a checkpoint at `round` needs; the disk backend keeps its files and prunes old versions."""
        if self.backend == "memory":
            return {"backend": "memory", "clients": {c: {k: v.cpu() for k, v in s.items()} for c, s in self._mem.items()}}
        for versions in self._versions().values():
            upto = [v for v in versions if v[0] <= round]
            for _, p in upto[:-1]:
                p.unlink(missing_ok=True)
        return {"backend": "disk"}

    def restore(self, snap: dict, round: int) -> None:
        if self.backend == "memory":
            self._mem = {int(c): {k: v.to(self.device) for k, v in s.items()} for c, s in snap.get("clients", {}).items()}
            return
        for versions in self._versions().values():  # drop what was written after the checkpoint
            for r, p in versions:
                if r > round:
                    p.unlink(missing_ok=True)
