"""A training run's log across attempts: a killed run resumed from its checkpoint keeps the killed attempt's lines.

The train rule tees the job's output into `train.log`, and Snakemake deletes a rule's log before every attempt, so
the log of a killed attempt would be gone when the run resumes. While an attempt runs, what it writes to stderr is
also appended to `<run dir>/.train.log.history`; the next attempt starts by writing that history to stderr, so
`train.log` holds every attempt in order. A finished run (completed or diverged) needs no history: it is removed.
The history is a convenience: a failure to write it (a full disk) stops the copying, never the training.
"""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from pathlib import Path

HISTORY = ".train.log.history"


class _Copy:
    """stderr, with every write also appended to the history file (opened at the first write) until that fails."""

    def __init__(self, stream, path: Path):
        self.stream, self.path, self.history, self.failed = stream, path, None, False

    def write(self, text: str) -> int:
        if not self.failed:
            try:
                if self.history is None and self.path.parent.is_dir():  # the run makes its directory: never here
                    self.history = open(self.path, "a")
                if self.history is not None:
                    self.history.write(text)
                    self.history.flush()  # a kill keeps everything written so far
            except OSError:
                self.failed = True
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def close_history(self) -> None:
        if self.history is not None:
            self.history.close()

    def __getattr__(self, name):
        return getattr(self.stream, name)


@contextmanager
def kept_across_attempts(run_dir: str | Path):
    """Within the block, this attempt's stderr is kept for the next one; yields a callable that drops the history
    (call it when the run has finished). Nothing is written where the attempt writes nothing (a refused input)."""
    path = Path(run_dir) / HISTORY
    stream = sys.stderr
    if path.exists():
        stream.write(path.read_text(errors="replace"))
        stream.write(f"---- {time.strftime('%Y-%m-%d %H:%M:%S')}: a new attempt; the lines above are the earlier "
                     f"attempts' ({HISTORY}) ----\n")
    copy = _Copy(stream, path)
    sys.stderr = copy
    try:
        yield lambda: path.unlink(missing_ok=True)
    finally:
        sys.stderr = stream
        copy.close_history()
