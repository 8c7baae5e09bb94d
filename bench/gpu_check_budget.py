"""The time budget of bench/gpu_check.py: a lent accelerator comes with ~15 minutes of device time in all,
so the check plans each section's share, stops any piece that runs past its share, and always writes
what it measured.

    Budget(total)          the whole run's seconds, from construction
    budget.share(s)        a Share: a deadline s seconds away, never past the budget's end
    hard_stop(share)       a block interrupted (OverBudget) when the share's deadline passes: a POSIX
                           interval timer raises in the main thread at the next Python bytecode, so a
                           CUDA kernel in flight finishes first (kernels here take milliseconds)
    device_timer(device)   wall seconds of a block, with torch.cuda.synchronize before and after on CUDA

Nested hard stops re-arm the outer deadline on exit. Where no interval timer exists (not POSIX, or not
the main thread), pieces are only skipped when their share is spent, never interrupted.
"""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Optional

import torch


class OverBudget(Exception):
    """A piece of the check ran past its share of the time budget."""


class Share:
    def __init__(self, deadline: float, seconds: float):
        self.deadline, self.seconds = deadline, seconds

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def spent(self) -> bool:
        return self.left() <= 0


class Budget:
    def __init__(self, total_s: float):
        self.total = float(total_s)
        self.t0 = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def left(self) -> float:
        return self.total - self.elapsed()

    def share(self, seconds: float) -> Share:
        now = time.perf_counter()
        return Share(min(now + max(0.0, seconds), self.t0 + self.total), seconds)


_deadlines: list[float] = []  # the armed hard stops, innermost last


def _can_interrupt() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def _raise_over(signum, frame):
    raise OverBudget("past its share of the time budget")


def _arm(deadline: Optional[float]) -> None:
    if deadline is None:
        signal.setitimer(signal.ITIMER_REAL, 0)
    else:  # a deadline already past fires at once (setitimer needs a positive delay)
        signal.setitimer(signal.ITIMER_REAL, max(deadline - time.perf_counter(), 1e-3))


@contextmanager
def hard_stop(share: Share) -> Iterator[Share]:
    """Run the block; past the share's deadline (or an enclosing one, whichever is first) raise OverBudget."""
    if not _can_interrupt():
        yield share
        return
    deadline = min([share.deadline, *_deadlines])
    if not _deadlines:
        signal.signal(signal.SIGALRM, _raise_over)
    _deadlines.append(deadline)
    _arm(deadline)
    try:
        yield share
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)  # disarm first: an alarm here would escape the finally
        _deadlines.pop()
        _arm(_deadlines[-1] if _deadlines else None)


class DeviceTimer:
    seconds: float = 0.0


@contextmanager
def device_timer(device: torch.device) -> Iterator[DeviceTimer]:
    """Wall seconds of the block; on CUDA the queue is drained before the clock starts and before it stops
    (kernels run asynchronously: without the synchronize the clock would stop before the work does)."""
    out = DeviceTimer()
    cuda = torch.device(device).type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
    t = time.perf_counter()
    yield out
    if cuda:
        torch.cuda.synchronize(device)
    out.seconds = time.perf_counter() - t
