"""bench/gpu_check.py, the GPU check a lent accelerator runs: its CPU part runs green at quick sizes in a
process where snakemake, jsonschema, pyhessian, tabulate, seaborn and matplotlib cannot be imported (a bare
device has none of them), names the machine and writes its JSON and Markdown; its comparisons fail on a
deliberately different result; a piece past its share of the time budget is stopped."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # the bench package lives at the repository's top, beside src/
    sys.path.insert(0, str(REPO))

from bench.gpu_check_budget import Budget, OverBudget, hard_stop  # noqa: E402
from bench.gpu_check_correct import ACC_TOL, PARAM_TOL, TRAINING, compare, train  # noqa: E402
from bench.gpu_check_reduce import verdict  # noqa: E402
from bench.gpu_check_report import anchors_beside, markdown  # noqa: E402
from bench.gpu_check_speed import WORKLOADS, ratios  # noqa: E402
from fedflat.training.data import load_dataset  # noqa: E402
from fedflat.training.data.partition import make_partition  # noqa: E402

BLOCKED = ("snakemake", "jsonschema", "pyhessian", "tabulate", "seaborn", "matplotlib")
# Runs a script with every meta-path finder blind to the BLOCKED packages, as on a box where they are not
# installed: `import x` raises ModuleNotFoundError and importlib.util.find_spec(x) is None (torch's dynamo
# probes optional packages that way, so a finder that raised instead would break torch, not fedflat).
WRAPPER = """
import importlib.abc, runpy, sys
blocked = set(sys.argv[1].split(","))
class Blind(importlib.abc.MetaPathFinder):
    def __init__(self, inner):
        self.inner = inner
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            return None
        return self.inner.find_spec(name, path, target)
    def invalidate_caches(self):
        getattr(self.inner, "invalidate_caches", lambda: None)()
already = [m for m in sys.modules if m.partition(".")[0] in blocked]
if already:
    raise SystemExit("imported before the blocker: " + ", ".join(already))
sys.meta_path[:] = [Blind(f) for f in sys.meta_path]
for name in blocked:
    try:
        __import__(name)
    except ModuleNotFoundError:
        continue
    raise SystemExit(name + " is still importable")
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_check") / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    p = subprocess.run([sys.executable, "-c", WRAPPER, ",".join(BLOCKED), str(REPO / "bench" / "gpu_check.py"),
                        "--quick", "--out", str(out)], capture_output=True, text=True, env=env, cwd=out.parent,
                       timeout=300)
    return p, out


def test_cpu_part_runs_green_without_the_workflow_packages(quick_run):
    p, out = quick_run
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    result = json.loads((out / "gpu_check.json").read_text())
    assert result["verdict"] == "ok" and result["mode"] == "quick"
    assert result["machine"]["torch"] == torch.__version__
    for name in ("correctness", "reductions", "speed"):
        s = result["sections"][name]
        assert s["status"] == "ok" and s["measured_s"] >= 0 and s["estimated_s"] > 0
        assert f"[{name}] estimated" in p.stdout and f"[{name}] ok: estimated" in p.stdout and "measured" in p.stdout
    assert f"wrote {out / 'gpu_check.json'} and {out / 'gpu_check.md'}" in p.stdout


def test_the_cuda_parts_skip_with_the_reason(quick_run):
    p, out = quick_run
    result = json.loads((out / "gpu_check.json").read_text())
    cases = result["sections"]["correctness"]["cases"]
    assert len(cases) == 7 and {c["algorithm"] for c in cases} >= {"fedavg", "fedsam", "scaffold", "feddyn",
                                                                    "fedsynsam", "fedtoga"}
    assert all(c["checks"]["cpu_vmap"]["ok"] is True for c in cases)  # the CPU runs against its own vmapped path
    assert all(c["runs"]["cpu_vmap"]["path"] == "together" for c in cases)
    red = result["sections"]["reductions"]
    assert red["passed"] == len(red["rows"]) > 0 and red["failed"] == 0
    speed = result["sections"]["speed"]
    cpu_rows = [r for r in speed["rows"] if r["device"] == "cpu"]
    assert {r["workload"] for r in cpu_rows} == set(WORKLOADS) and all(r["status"] == "ok" for r in cpu_rows)
    md = (out / "gpu_check.md").read_text()
    assert "torch " + torch.__version__ in md
    if torch.cuda.is_available():  # a GPU box: the CUDA candidates ran and passed
        assert all(c["checks"][k]["ok"] is True for c in cases for k in ("cuda", "cuda_vmap"))
        assert torch.cuda.get_device_name(0) in md
    else:
        assert result["machine"]["cuda_skip"] == "no CUDA device"
        assert all(c["checks"][k] == {"ok": None, "reason": "no CUDA device"} for c in cases for k in ("cuda", "cuda_vmap"))
        assert red["cuda"] == {"status": "skipped", "reason": "no CUDA device"}
        assert {r["workload"] for r in speed["rows"] if r["status"] == "skipped"} == set(WORKLOADS)
        assert "CUDA parts skipped: no CUDA device" in md and "skipped (no CUDA device)" in md


def _run(acc, theta, theta0=None, status="ok"):
    return {"status": status, "final_acc": acc, "theta": torch.tensor(theta, dtype=torch.float64),
            "theta0": torch.zeros(len(theta), dtype=torch.float64) if theta0 is None else torch.tensor(theta0)}


def test_compare_fails_on_a_different_result():
    ref = _run(0.80, [1.0, 0.0])  # travelled a distance of 1
    assert compare(ref, _run(0.80 + ACC_TOL / 2, [1.0, PARAM_TOL / 2]))["ok"] is True
    acc = compare(ref, _run(0.80 + 2 * ACC_TOL, [1.0, 0.0]))
    assert acc["ok"] is False and "accuracy" in acc["reason"]
    par = compare(ref, _run(0.80, [1.0, 2 * PARAM_TOL]))
    assert par["ok"] is False and "parameters" in par["reason"] and par["param_rel"] == pytest.approx(2 * PARAM_TOL)
    assert compare(ref, _run(0.80, [1.0, 0.0], theta0=[0.0, 1e-9]))["ok"] is False  # not the same start
    assert compare(ref, {"status": "error", "reason": "RuntimeError: x"})["ok"] is False  # a crash on the device fails
    assert compare(ref, {"status": "skipped", "reason": "no CUDA device"}) == {"ok": None, "reason": "no CUDA device"}
    nan = compare(ref, _run(float("nan"), [1.0, 0.0]))
    assert nan["ok"] is False  # a NaN accuracy is no pass


def test_a_really_different_training_is_caught_by_the_tolerance(tmp_path):
    """Real runs: the same run twice passes; a learning rate 20 % higher (every other thing equal) fails."""
    data = load_dataset("digits")
    tr = TRAINING["quick"]
    part = make_partition(data.train_y.numpy(), "iid", tr["num_clients"], seed=0)
    ref = train(data, part, "mlp", "fedsam", {"rho": 0.05}, tr, "cpu", False)
    assert compare(ref, train(data, part, "mlp", "fedsam", {"rho": 0.05}, tr, "cpu", False))["ok"] is True
    other = compare(ref, train(data, part, "mlp", "fedsam", {"rho": 0.05}, {**tr, "lr": tr["lr"] * 1.2}, "cpu", False))
    assert other["ok"] is False and other["param_rel"] > 10 * PARAM_TOL


def test_reduction_verdict_fails_on_a_gap_or_an_untested_equality():
    b = [torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)]
    c = [b[0], b[1] * 1.1]
    assert verdict(b, b, c)["ok"] is True
    gap = verdict([b[0], b[1] + 1e-9], b, c)
    assert gap["ok"] is False and "leaves the base" in gap["reason"]
    same = verdict(b, b, b)
    assert same["ok"] is False and "tests nothing" in same["reason"]


def test_a_piece_past_its_share_is_stopped_and_the_outer_deadline_rearmed():
    budget = Budget(5.0)
    t = time.perf_counter()
    with hard_stop(budget.share(3.0)):
        with pytest.raises(OverBudget):
            with hard_stop(budget.share(0.2)):
                while True:
                    pass
        assert time.perf_counter() - t < 1.5
        with pytest.raises(OverBudget):  # the outer share still stops what runs past it
            while True:
                pass
    assert 2.5 < time.perf_counter() - t < 4.0


def test_the_ratios_and_the_anchor_seconds_of_a_cuda_run():
    """The figures a GPU run reports, from made-up rows (no GPU here): each ratio the right way up, seconds per
    round of 10 clients = 10 / client-rounds/s, peak memory per path; and the Markdown renders them."""
    row = lambda device, path, clients, rate, **kw: {"workload": "cnn_fedavg", "algorithm": "fedavg", "device": device,
                                                     "path": path, "clients": clients, "status": "ok",
                                                     "client_rounds_per_s": rate, **kw}
    rows = [row("cpu", "loop", 1, 0.5), row("cuda", "loop", 10, 4.0, peak_per_client_mib=30.0),
            row("cuda", "vmap", 10, 10.0, peak_per_client_mib=80.0), row("cuda", "vmap", 50, 16.0, peak_per_client_mib=75.0)]
    (r,) = ratios(rows)
    assert (r["loop_over_cpu"], r["vmap_over_cpu"], r["vmap_over_loop"], r["vmap50_over_loop"]) == (8.0, 20.0, 2.5, 4.0)
    assert r["s_per_round_10"] == {"cpu_core": 20.0, "cuda_loop": 2.5, "cuda_vmap": 1.0}
    assert r["peak_mib_per_client"] == {"cuda_loop": 30.0, "cuda_vmap": 80.0, "cuda_vmap_50": 75.0}
    anchors = anchors_beside([r])
    fedavg_cnn = next(a for a in anchors if a["model"] == "2-layer CNN" and a["algorithm"] == "FedAvg")
    assert (fedavg_cnn["s_per_round"], fedavg_cnn["ours_cuda_loop_s"], fedavg_cnn["ours_cuda_vmap_s"]) == (2.72, 2.5, 1.0)
    machine = {"cuda": {"name": "Some GPU", "memory_gib": 80.0, "cudnn": 1}, "cuda_skip": None, "torch_cuda_build": "13.0",
               "torch": "2.11.0", "python": "3.12.1", "cpu": "cpu", "cpu_count": 16, "git_commit": None}
    speed = {"rows": rows, "ratios": [r], "workloads": {"cnn_fedavg": WORKLOADS["cnn_fedavg"]._asdict()}, "status": "ok",
             "estimated_s": 1, "measured_s": 1.0}
    md = markdown({"machine": machine, "sections": {"speed": speed}, "command": "c", "mode": "full", "budget_s": 420,
                   "elapsed_s": 400, "verdict": "ok", "anchors": anchors})
    assert "# GPU check: Some GPU" in md and "| cnn_fedavg | fedavg | 0.5 | 4 | 10 | 8.0x | 20.0x | 2.50x | 4.00x |" in md
    assert "| FL-SAM | RTX 4090 | 2-layer CNN | FedAvg | 2.72 | cnn_fedavg | 2.5 | 1 | 20 |" in md
