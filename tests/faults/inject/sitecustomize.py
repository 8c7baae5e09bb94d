"""Fault injection for tests/faults/test_pipeline.py, active only when FEDFLAT_TEST_FAULT is set.

Put this directory on PYTHONPATH and every Python process started by Snakemake's jobs loads it.
The first `fedflat train` process to start (marker file fault.<mode>, created atomically) then
  fail:<dir>  exits 1 at once, like a job hit by a transient error (preemption, flaky node);
  hang:<dir>  writes a partial metrics.csv into its output directory and sleeps until killed,
              like a job that dies half-way through writing its outputs.
Later train processes run normally. Nothing in the package knows about this.
"""
import os
import sys
import time

_spec = os.environ.get("FEDFLAT_TEST_FAULT", "")
_argv = getattr(sys, "orig_argv", [])
if _spec and "fedflat" in _argv and "train" in _argv:
    _mode, _, _dir = _spec.partition(":")
    try:
        os.close(os.open(os.path.join(_dir, f"fault.{_mode}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        pass  # only the first train process is hit
    else:
        if _mode == "fail":
            print("injected transient fault (FEDFLAT_TEST_FAULT)", file=sys.stderr, flush=True)
            os._exit(1)
        if _mode == "hang":
            out = _argv[_argv.index("--out-dir") + 1]
            os.makedirs(out, exist_ok=True)
            with open(os.path.join(out, "metrics.csv"), "w") as fh:
                fh.write("round,train_loss\n1,2.3\n")  # a partial output
            with open(os.path.join(_dir, "fault.hanging"), "w") as fh:
                fh.write(str(os.getpid()))  # the test kills this process by its id
            time.sleep(600)
