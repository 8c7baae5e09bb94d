"""Golden runs: a few tiny runs, one per distinct local-step path, whose final weights' SHA-256 is committed
(tests/golden/golden.json) beside the numerics version (src/fedflat/core/util/numerics.py). tests/golden/test_golden.py
re-runs them; a change of any number fails CI until it is made deliberate:

    python -m tests.golden.golden_runs --update     # rewrite golden.json after bumping NUMERICS_VERSION

and the commit says why the numbers moved. Paths covered: the eager loop (FedAvg; a SAM-type ascent, FedSAM; a
dual method, FedDyn; FedSynSAM with its distillation; MimeLite's per-call correction), a round's clients vmapped
together (training.vmap_clients), the whole step as one compiled graph (fused FedSAM) and the per-call compiled
gradient (MimeLite). The eager and vmapped runs are portable: the same hash on any x86-64 CPU with AVX2. The
compiled ones run natively in a pinned process with inductor's -march set to x86-64-v3; their kernels come from
the host's C++ compiler, so their hash is compared only under the compiler that made it (recorded), and otherwise
their weights against the eager twin's to 1e-4.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

GOLDEN = Path(__file__).with_name("golden.json")
REPO = Path(__file__).resolve().parents[2]
TINY = {"num_clients": 6, "participation": 0.5, "rounds": 4, "local_steps": 3, "batch_size": 16, "lr": 0.05,
        "eval_every": 2, "checkpoint_every": 0}
# name: (preset, hyperparameters, training overrides, eager twin or None)
RUNS = {
    "eager_fedavg": ("fedavg", {}, {}, None),
    "eager_fedsam": ("fedsam", {"rho": 0.05}, {}, None),
    "eager_feddyn": ("feddyn", {}, {}, None),
    "eager_fedsynsam": ("fedsynsam", {"syn_round": 2, "syn_steps": 1}, {}, None),
    "eager_mimelite": ("mimelite", {}, {}, None),
    "vmapped_fedavg": ("fedavg", {}, {"vmap_clients": True}, None),
    "fused_fedsam": ("fedsam", {"rho": 0.05}, {"backend": "compile"}, "eager_fedsam"),
    "compiled_mimelite": ("mimelite", {}, {"backend": "compile"}, "eager_mimelite"),
}
COMPILED = tuple(n for n, r in RUNS.items() if r[3] is not None)


def compiler() -> str:
    from torch._inductor.cpp_builder import get_cpp_compiler

    cxx = get_cpp_compiler()
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True)
    return out.stdout.splitlines()[0] if out.returncode == 0 else cxx


def run_group(names: list[str], mode: str) -> dict:
    """Train the named runs in this process (already in `mode`); {name: {sha256, theta, final_acc}}."""
    import torch
    import torch._inductor.config as inductor

    import fedflat.plugins  # noqa: F401
    from fedflat.training.algorithms import PRESETS
    from fedflat.training.data import load_dataset, make_partition
    from fedflat.training.fl.engine import train
    from fedflat.core.spec import RunSpec, check_training

    inductor.cpp.march = "x86-64-v3"  # AVX2 + FMA: the compiled kernels do not follow the host's ISA
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp, "p.npz")
        make_partition(load_dataset("digits").train_y.numpy(), "iid", TINY["num_clients"], 0).save(part)
        for name in names:
            preset, hp, tr, _ = RUNS[name]
            spec = RunSpec("digits", "iid", "mlp", preset, 0, PRESETS.get(preset).resolve(hp), {},
                           check_training({**TINY, **tr}))
            s = train(spec, Path(tmp, name), part, progress=False, numerics_mode=mode)
            theta = torch.load(Path(tmp, name, "model.pt"), weights_only=True)["theta"]
            cfg = json.loads(Path(tmp, name, "config.json").read_text())
            out[name] = {"sha256": hashlib.sha256(theta.numpy().tobytes()).hexdigest(), "theta": theta.tolist(),
                         "final_acc": s["final_acc"], "backend": cfg["backend"]}
    return out


def measure() -> dict:
    """Every golden run, each group in a child process started in its mode."""
    from fedflat.core.util.numerics import ENV_VAR, PORTABLE_ENV

    env = {**os.environ, **PORTABLE_ENV, ENV_VAR: "portable", "PYTHONPATH": os.pathsep.join(
        [str(REPO), str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    res = {}
    for mode, names in (("portable", [n for n in RUNS if n not in COMPILED]), ("native", list(COMPILED))):
        cmd = [sys.executable, "-m", "tests.golden.golden_runs", "--child", mode, *names]
        done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-3000:])
        res.update(json.loads(done.stdout.strip().splitlines()[-1]))
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--update", action="store_true", help="rewrite golden.json (after bumping NUMERICS_VERSION)")
    ap.add_argument("--child", nargs="+", metavar=("MODE", "RUN"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        mode, names = a.child[0], a.child[1:]
        from fedflat.core.util import numerics

        numerics.enter("portable")  # the pinned kernels (env set by the parent); compiled runs ask native below
        res = run_group(names, mode)
        if mode == "native":
            for r in res.values():
                r["compiler"] = compiler()
        print(json.dumps(res))
        return 0
    from fedflat.core.util.numerics import NUMERICS_VERSION

    res = measure()
    table = {n: {k: v for k, v in r.items() if k != "theta"} for n, r in res.items()}
    if a.update:
        GOLDEN.write_text(json.dumps({"numerics_version": NUMERICS_VERSION, "runs": table}, indent=1, sort_keys=True)
                          + "\n")
        print(f"wrote {GOLDEN}")
    print(json.dumps(table, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
