"""Per-client persistent state (control variates, duals, stale models), in memory or on disk.

On disk each client's vectors live in one file per version (the round that wrote it), so
200 clients x ResNet-18 x several states never has to fit in RAM, only the sampled clients of a
round are loaded, and a run resumed from a checkpoint at round r can drop the versions written
after r: resuming gives exactly the state the checkpoint saw.

Disk use is bounded: writing a client's new version deletes its older ones except those a resume
needs (the newest version at or before the round of the last checkpoint, and of the one before it,
in case the process dies while the new checkpoint is being written), so a client has at most three
files whatever the number of rounds. A store that is used without `restore` starts from scratch:
files left by an earlier process (a run killed before its first checkpoint) are removed on first
use, never read as if they were this run's state.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import torch

from ...core.util.io import torch_save
from ...core.util.safe_load import load_tensors

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
        self._kept_rounds: tuple[int, ...] = ()  # disk: rounds of the last two snapshots (or the restore): their versions stay
        self._fresh = True  # disk: no restore yet; stale files from an earlier process go on first use
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

    def _client_versions(self, cid: int) -> list[tuple[int, Path]]:
        found = ((_VERSION.search(p.name), p) for p in self.dir.glob(f"client{cid:05d}.r*.pt"))
        return sorted((int(m.group(2)), p) for m, p in found if m)

    def _latest(self, cid: int) -> Path | None:
        found = self._client_versions(cid)
        return found[-1][1] if found else None

    def _prune(self, versions: list[tuple[int, Path]], also: tuple[int, ...] = ()) -> None:
        """Delete the versions no resume can read: keep, per kept round, the newest at or before it."""
        keep = set(also)
        for k in self._kept_rounds:
            upto = [r for r, _ in versions if r <= k]
            keep.update(upto[-1:])
        for r, p in versions:
            if r not in keep:
                p.unlink(missing_ok=True)

    def _start_fresh(self) -> None:
        """First use without a restore: nothing from an earlier process belongs to this run."""
        if self._fresh:
            self._fresh = False
            for versions in self._versions().values():
                for _, p in versions:
                    p.unlink(missing_ok=True)

    def get(self, cid: int) -> dict[str, torch.Tensor]:
        if not self.names:
            return {}
        if self.backend == "memory":
            if cid not in self._mem:
                self._mem[cid] = {n: self.make(n) for n in self.names}
            return self._mem[cid]
        self._start_fresh()
        p = self._latest(cid)
        if p is not None:
            return {k: v.to(self.device) for k, v in load_tensors(p, "client state").items()}
        return {n: self.make(n) for n in self.names}

    def put(self, cid: int, state: dict[str, torch.Tensor], round: int) -> None:
        if not self.names:
            return
        if self.backend == "memory":
            self._mem[cid] = state
            return
        self._start_fresh()
        torch_save(self.dir / f"client{cid:05d}.r{round:06d}.pt", {k: v.detach().cpu() for k, v in state.items()})
        self._prune(self._client_versions(cid), also=(round,))

    def snapshot(self, round: int) -> dict:
        """What a checkpoint at `round` needs; the disk backend keeps its files and prunes old versions."""
        if self.backend == "memory":
            return {"backend": "memory", "clients": {c: {k: v.cpu() for k, v in s.items()} for c, s in self._mem.items()}}
        self._kept_rounds = (*self._kept_rounds[-1:], round)  # the previous checkpoint stays valid until this one is written
        for versions in self._versions().values():
            self._prune(versions, also=tuple(r for r, _ in versions if r > round))
        return {"backend": "disk"}

    def restore(self, snap: dict, round: int) -> None:
        if self.backend == "memory":
            self._mem = {int(c): {k: v.to(self.device) for k, v in s.items()} for c, s in snap.get("clients", {}).items()}
            return
        self._fresh, self._kept_rounds = False, (round,)
        for versions in self._versions().values():  # drop what was written after the checkpoint
            for r, p in versions:
                if r > round:
                    p.unlink(missing_ok=True)
