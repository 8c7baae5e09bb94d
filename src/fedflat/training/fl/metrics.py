"""Per-round metrics (CSV) and a one-line progress display with ETA."""
from __future__ import annotations

import csv
import io
import json
import sys
import time
from pathlib import Path

from ...core.errors import ConfigError
from ...core.util.io import write_text

COLUMNS = ["round", "lr", "train_loss", "test_loss", "test_acc", "flatness_distance", "update_norm",
           "clients", "up_bytes", "down_bytes", "grad_evals", "eval_time", "wall_time", "status"]


class MetricsLog:
    def __init__(self):
        self.rows: list[dict] = []

    def append(self, row: dict) -> None:
        self.rows.append(dict(row))

    def columns(self) -> list[str]:
        extra = sorted({k for r in self.rows for k in r} - set(COLUMNS))
        return COLUMNS + extra

    def write(self, path: Path) -> None:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=self.columns(), extrasaction="ignore")
        w.writeheader()
        for r in self.rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in self.columns()})
        write_text(path, buf.getvalue())


def read_metrics(path: str | Path):
    """A run's metrics.csv as a frame, checked whole before anything is drawn or tabulated from it: a file cut
    mid-row (a full disk, a copy interrupted) or holding fewer rounds than its summary.json says were completed is a
    ConfigError naming it, never a curve of half the rounds. A missing file is FileNotFoundError, as before."""
    import pandas as pd

    path = Path(path)
    text = path.read_text()
    retrain = f"retrain the run (snakemake --cores 1 --force {path})"
    if text and not text.endswith("\n"):
        raise ConfigError(f"{path}: truncated (its last line ends mid-row); {retrain}")
    try:
        frame = pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        why = " ".join(str(exc).split())[:160]
        raise ConfigError(f"{path}: not a readable metrics file ({why}); {retrain}") from None
    summary = path.with_name("summary.json")
    if summary.exists() and "round" in frame:
        try:
            done = json.loads(summary.read_text()).get("rounds_completed")
        except (ValueError, AttributeError):
            raise ConfigError(f"{summary}: not a readable summary; {retrain}") from None
        rounds = pd.to_numeric(frame["round"], errors="coerce")
        last = rounds.iloc[-1] if len(rounds) else 0
        if isinstance(done, int) and not (last == done and rounds.notna().all()):
            raise ConfigError(f"{path}: holds rounds up to {last} but {summary.name} says {done} were completed; "
                              f"{retrain}")
    return frame


def _fmt_seconds(s: float) -> str:
    s = int(max(0, s))
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Progress:
    """Prints rounds, loss, accuracy and ETA to stderr, at most every `every_s` seconds."""

    def __init__(self, tag: str, total: int, enabled: bool = True, every_s: float = 2.0):
        self.tag, self.total, self.enabled, self.every_s = tag, total, enabled, every_s
        self.t_start = time.perf_counter()
        self.first_round = None
        self.last_print = 0.0
        self.last_acc = None

    def note(self, msg: str) -> None:
        if self.enabled:
            print(f"[{self.tag}] {msg}", file=sys.stderr, flush=True)

    def update(self, t: int, row: dict) -> None:
        acc = row.get("test_acc", row.get("val_acc"))  # val_acc: tuning runs (training.holdout)
        if acc is not None:
            self.last_acc = acc
        if not self.enabled:
            return
        if self.first_round is None:
            self.first_round = t
        now = time.perf_counter()
        if now - self.last_print < self.every_s and t not in (self.total, self.first_round):
            return
        self.last_print = now
        done = t - self.first_round + 1
        per = (now - self.t_start) / done
        acc = "  -  " if self.last_acc is None else f"{100 * self.last_acc:5.1f}%"
        print(f"[{self.tag}] round {t}/{self.total} loss {row['train_loss']:.4f} acc {acc} "
              f"{per:.2f} s/round ETA {_fmt_seconds(per * (self.total - t))}", file=sys.stderr, flush=True)

    def done(self, summary: dict) -> None:
        if self.enabled:
            acc = summary.get("final_acc")
            acc_s = "n/a" if acc is None else f"{100 * acc:.2f}%"
            self.note(f"{summary['status']} after {summary['rounds_completed']} rounds, final acc {acc_s}, "
                      f"{summary['wall_time']:.1f} s")
