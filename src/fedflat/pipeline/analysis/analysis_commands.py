"""`python -m fedflat.analysis <cmd>`: per-run analysis files for the Snakemake rules.

  hessian    results/runs/<run>/hessian.json       top-k eigenvalues, trace, Lanczos density
             (hessian_r<t>_<split>.json: the end-of-round-t snapshot, params round and split)
  landscape  results/runs/<run>/landscape_2d.npz   (or _1d) train/test loss and accuracy surfaces
  stability  results/runs/<run>/stability.json     ‖θ_T − θ'_T‖ on neighbouring datasets

Each takes --run-dir (holding model.pt) and --params (JSON, keys as in pipeline/analysis/params.py).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ...core.errors import ConfigError
from ...core.recorded import SUMMARY
from ...core.spec import RunSpec
from ...core.util import numerics
from ...core.util.io import atomic_write, torch_save, write_json
from ...core.util.numerics import ENV_VAR, MODES
from ...core.util.safe_load import load_tensors
from ...training.data.partition import Partition
from ...training.fl.batches import sample_clients
from ...training.fl.engine import hold_out
from ...training.fl.snapshots import clients_snapshot
from .directions import directions
from .hessian import hessian_spectrum
from .landscape import surface
from .loaded_run import fixed_batches, index_batches, load_run
from .params import resolve
from .stability import neighbouring_partition, paired_distance


def _setup(a):
    import torch

    numerics.require(a.numerics)  # portable: this process pinned its kernels before torch loaded (__main__)
    if a.threads and a.numerics != "portable":  # portable: one thread
        torch.set_num_threads(a.threads)


# every value a Hessian file may hold: null in the file of a model that diverged
HESSIAN_VALUES = ("lambda_max", "trace", "lambda_max_mean", "lambda_max_max", "trace_mean", "trace_max")


def diverged_model(run_dir: str | Path, t: int) -> dict | None:
    """The run's summary where the model to analyse is past its divergence (the final model of a diverged run, or
    a snapshot round after the last completed one): its Hessian is not defined, so the analysis says so."""
    path = Path(run_dir) / SUMMARY
    s = json.loads(path.read_text()) if path.exists() else {}
    if s.get("status") != "diverged":
        return None
    return s if t == 0 or t > int(s.get("rounds_completed") or 0) else None


def cmd_hessian(a, p) -> None:
    gone = diverged_model(a.run_dir, p["round"])
    if gone is not None:
        write_json(Path(a.out), {"status": "diverged", "rounds_completed": gone.get("rounds_completed"),
                                 **dict.fromkeys(HESSIAN_VALUES), "params": p, "run_dir": str(a.run_dir)})
        print(f"hessian: the run diverged after round {gone.get('rounds_completed')}; no Hessian (written as null)")
        return
    run = load_run(a.run_dir, a.data_root, a.device, a.download, p["round"])
    t0 = time.perf_counter()
    if p["split"] in ("clients", "local"):
        from .hessian import paired_spectra

        own = client_batches(run, a.run_dir, p["batch_size"])
        if p["split"] == "clients":  # protocol (b): the global model on every client's data
            pairs, ids = ((run.fm.module, b) for b in own), list(range(len(own)))
        else:  # protocol (d): each sampled client's own end-of-round model on its own data
            pairs, ids = local_pairs(run, a.run_dir, p["round"], own)
        out = paired_spectra(announced(pairs, len(ids), f"hessian ({p['split']})", t0), p["max_iter"], p["tol"],
                             p["trace_samples"], p["seed"])
        out.update(client_ids=ids, params=p, run_dir=str(a.run_dir), seconds=time.perf_counter() - t0)
        write_json(Path(a.out), out)
        print(f"hessian ({p['split']}): lambda_max mean={out['lambda_max_mean']:.4g} max={out['lambda_max_max']:.4g}")
        return
    batches = fixed_batches(run.data, p["split"], p["samples"], p["seed"], p["batch_size"])
    out = hessian_spectrum(run.fm.module, batches, p["top_k"], p["max_iter"], p["tol"], p["trace_samples"],
                           p["density_iters"], p["density_runs"], p["seed"])
    out.update(params=p, run_dir=str(a.run_dir), seconds=time.perf_counter() - t0)
    write_json(Path(a.out), out)
    print(f"hessian: lambda_max={out['lambda_max']:.4g} trace={out['trace']}")


def announced(pairs, total: int, what: str, t0: float, every: int = 10):
    """The pairs unchanged, with a progress line on stderr after every `every`-th (one spectrum per client: a run
    of 100 clients takes minutes, and its log would otherwise stay silent until the end)."""
    done = 0
    for pair in pairs:
        if done and done % every == 0:
            print(f"{what}: {done} of {total} spectra, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        yield pair
        done += 1


def client_batches(run, run_dir, batch_size: int) -> list:
    """Each client's own training samples as it trained on them (its partition, as config.json names it, less a
    tuning run's held-out validation samples), as fixed batches."""
    import torch

    cfg = json.loads((Path(run_dir) / "config.json").read_text())
    part = Partition.load(cfg["partition_file"], num_samples=len(run.data.train_y))
    clients, _ = hold_out(part.clients, run.spec.training.get("holdout", 0.0), run.spec.seed)
    return [index_batches(run.data, torch.as_tensor(c, device=run.data.train_y.device), batch_size)
            for c in clients]


def local_pairs(run, run_dir, t: int, own: list) -> tuple:
    """(model, batches) of every client sampled in round t, its model loaded from snapshots/r<t>_clients.pt
    into the run's module as the pair is taken, and the client ids in sampling order."""
    path = clients_snapshot(run_dir, t)
    if not path.exists():
        raise ConfigError(f"client models missing: {path} (round {t} is not in the run's training.snapshot_rounds)")
    ck = load_tensors(path, "client models", keys=("clients", "thetas", "buffers"))
    dev, dtype = run.theta.device, run.fm.flat.dtype

    def pairs():
        for i, cid in enumerate(ck["clients"]):
            run.fm.load(ck["thetas"][i].to(device=dev, dtype=dtype), ck["buffers"][i].to(dev))
            yield run.fm.module, own[cid]

    return pairs(), list(ck["clients"])


def cmd_landscape(a, p) -> None:
    run = load_run(a.run_dir, a.data_root, a.device, a.download)
    sets = {"train": fixed_batches(run.data, "train", p["train_samples"], p["subset_seed"], p["batch_size"]),
            "test": fixed_batches(run.data, "test", p["test_samples"], p["subset_seed"], p["batch_size"])}
    n = p["points"] if a.dims == 2 else p["points_1d"]
    axis = np.linspace(p["range"][0], p["range"][1], n)
    eig = None
    if p["directions"] == "hessian":  # unit top eigenvectors: the axes are in parameter units
        from .hessian import top_eigenvectors

        hb = fixed_batches(run.data, "train", p["hessian_samples"], p["subset_seed"], p["batch_size"])
        eig, dirs = top_eigenvectors(run.fm, run.theta, hb, a.dims, seed=p["direction_seed"])
    else:
        dirs = directions(run.fm, run.theta, p["direction_seed"], a.dims, p["one_d"])
    t0 = time.perf_counter()
    # vmapped chunks pay off on a GPU; on a CPU convolutions under vmap are slower (bench_analysis)
    chunk = p["chunk"] or (16 if run.theta.is_cuda else 1)
    res = surface(run.fm, run.theta, dirs, axis, sets, chunk)
    meta = {**p, "chunk_used": chunk, "eigenvalues": eig, "dims": a.dims, "run_dir": str(a.run_dir), "seconds": time.perf_counter() - t0,
            "spec": run.spec.to_dict()}

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, **res, meta=json.dumps(meta, default=str))

    atomic_write(Path(a.out), write)
    print(f"landscape {a.dims}-D: {len(axis)} points per axis, origin train loss "
          f"{res['train_loss'][(len(axis) // 2,) * a.dims]:.4g}")


def cmd_stability(a, p) -> None:
    from ...training.data import Partition, load_dataset
    ck = load_tensors(Path(a.run_dir) / "model.pt", "run model", advice="train the run again", keys=("spec", "theta"))
    spec = RunSpec.from_dict(ck["spec"])
    data = load_dataset(spec.dataset, a.data_root, a.download)
    part = Partition.load(a.partition, num_samples=len(data.train_y))
    first = sample_clients(spec.seed, 1, spec.num_clients, spec.clients_per_round)  # neighbour: client swaps one of these
    neigh, swaps = neighbouring_partition(part, data.train_y.numpy(), p["swap_seed"], p["same_label"], p["neighbour"],
                                          candidates=first)
    out = Path(a.out)
    neigh.save(out.with_name(out.stem + "_partition.npz"))
    with tempfile.TemporaryDirectory() as tmp:
        res = paired_distance(spec, data, part, neigh, tmp, a.device)
    ta, tb = res.pop("theta_a"), res.pop("theta_b")
    res.update(params=p, swaps=swaps, run_dir=str(a.run_dir),
               reproduces_trained_run_max_abs=float((ta - ck["theta"]).abs().max()))
    torch_save(out.with_name(out.stem + "_models.pt"), {"theta_a": ta, "theta_b": tb})
    write_json(out, res)
    print(f"stability: ||theta - theta'|| = {res['distance']:.4g} (relative {res['relative']:.3g})")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="fedflat.analysis", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, fn in (("hessian", cmd_hessian), ("landscape", cmd_landscape), ("stability", cmd_stability)):
        p = sub.add_parser(name)
        p.add_argument("--run-dir", required=True)
        p.add_argument("--out", required=True)
        p.add_argument("--params", default="{}", help="JSON object; keys as in fedflat/pipeline/analysis/params.py")
        p.add_argument("--data-root", default="data")
        p.add_argument("--device", default="cpu")
        p.add_argument("--download", action="store_true")
        p.add_argument("--threads", type=int, default=0)
        p.add_argument("--numerics", choices=MODES, default=os.environ.get(ENV_VAR) or "native",
                       help="kernel settings (core/util/numerics.py); `python -m fedflat.analysis` applies them before torch loads")
        if name == "landscape":
            p.add_argument("--dims", type=int, choices=(1, 2), default=2)
        if name == "stability":
            p.add_argument("--partition", required=True, help="the run's partition file")
        p.set_defaults(fn=fn)
    return ap


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        try:
            raw = json.loads(a.params)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--params: not valid JSON ({exc.msg})") from None
        p = resolve(a.cmd, raw)
        _setup(a)
        if a.device != "cpu":
            from ...training.fl.engine import resolve_device

            a.device = str(resolve_device(a.device))
        a.fn(a, p)
    except ConfigError as exc:
        print(f"fedflat.analysis: error: {exc}", file=sys.stderr)
        return 2
    return 0
