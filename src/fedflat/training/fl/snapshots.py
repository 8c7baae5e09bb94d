"""Model snapshots at chosen rounds (`training.snapshot_rounds`), for analyses of a model other than the final one.

At the END of round t (after the server's aggregation of round t, so the snapshot of the last round equals
model.pt) the engine writes
  snapshots/r<t>.pt          {"round", "theta", "buffers", "spec"}: the global model, as model.pt holds it;
  snapshots/r<t>_clients.pt  {"round", "clients", "thetas", "buffers"}: the round's sampled clients in
                             sampling order and each one's model after its local steps, before compression
                             (what the client trained, not what the server received).
FedSynSAM Table I's protocol (d) measures the second file (docs/reproduction.md, Table I's direction).

Rounds are replayed identically after a resume (per-(seed, round, client) streams), so a snapshot the kill
interrupted is written again, and one written before the kill is kept (and would be rewritten the same).
"""
from __future__ import annotations

from pathlib import Path

import torch

from ...core.util.io import torch_save

SNAPSHOT_DIR = "snapshots"


def global_snapshot(run_dir: str | Path, t: int) -> Path:
    return Path(run_dir) / SNAPSHOT_DIR / f"r{t}.pt"


def clients_snapshot(run_dir: str | Path, t: int) -> Path:
    return Path(run_dir) / SNAPSHOT_DIR / f"r{t}_clients.pt"


class Snapshots:
    """Collects the local models of a snapshot round (client_end) and writes both files at its end (round_end)."""

    def __init__(self, run_dir: Path, rounds: list[int]):
        self.run_dir = Path(run_dir)
        self.rounds = set(rounds)
        self._local: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def client_end(self, t: int, cid: int, w: torch.Tensor, buffers: torch.Tensor) -> None:
        if t in self.rounds:
            self._local[cid] = (w.detach().cpu().clone(), buffers.detach().cpu().clone())

    def round_end(self, t: int, sampled: list[int], theta: torch.Tensor, buffers: torch.Tensor, spec: dict) -> None:
        if t not in self.rounds:
            return
        local, self._local = self._local, {}
        torch_save(clients_snapshot(self.run_dir, t), {
            "round": t, "clients": list(sampled), "thetas": torch.stack([local[c][0] for c in sampled]),
            "buffers": [local[c][1] for c in sampled]})
        torch_save(global_snapshot(self.run_dir, t), {"round": t, "theta": theta.detach().cpu().clone(),
                                                      "buffers": buffers.detach().cpu().clone(), "spec": spec})
