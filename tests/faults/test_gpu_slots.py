"""Multi-GPU pinning (fedflat.core.util.gpu_slots): concurrent jobs get distinct devices, and a device
is free again as soon as its job dies, also on SIGKILL. Runs on CPU with a fake device list."""
import signal
import subprocess
import sys
import time

import pytest

from fedflat.core.util import gpu_slots
from fedflat.core.util.gpu_slots import acquire, pin_device


def test_concurrent_jobs_get_distinct_devices(tmp_path):
    i0, f0 = acquire(["2", "3"], tmp_path)
    i1, f1 = acquire(["2", "3"], tmp_path)
    assert (i0, i1) == (0, 1)
    with pytest.raises(TimeoutError):
        acquire(["2", "3"], tmp_path, poll_s=0.01, timeout_s=0.05)
    f0.close()  # job 0 ends
    assert acquire(["2", "3"], tmp_path)[0] == 0
    f1.close()


def test_a_killed_job_frees_its_device(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from fedflat.core.util.gpu_slots import acquire; "
        f"i, fh = acquire(['0', '1'], {str(tmp_path)!r}); print(i, flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "0"
        assert acquire(["0", "1"], tmp_path)[0] == 1  # device 0 is taken
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    time.sleep(0.05)
    assert acquire(["0", "1"], tmp_path, timeout_s=5)[0] == 0


def test_pin_device_only_remaps_a_bare_cuda_with_several_devices(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDFLAT_GPU_LOCK_DIR", str(tmp_path))
    assert pin_device("cpu") == "cpu"
    assert pin_device("cuda:1") == "cuda:1"  # explicit device: never remapped
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5")
    assert pin_device("cuda") == "cuda"  # one visible device (e.g. under SLURM): nothing to choose
    assert not list(tmp_path.glob("*.lock"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    assert gpu_slots.visible_devices() == ["5", "7"]
