"""The round loop: sample clients, run each client's local steps through the algorithm's parts,
aggregate, evaluate on a schedule, log, checkpoint. One loop for every algorithm."""
from __future__ import annotations

import math
import platform
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from ... import __version__
from ...core.errors import ConfigError
from ...core.spec import TRAINING_DEFAULTS, RunSpec
from ...core.util import numerics
from ...core.util.io import torch_save, write_json
from ...core.util.malloc import tune_allocator
from ...core.util.provenance import source_commit
from ...core.util.safe_load import load_tensors
from ..algorithms import Algorithm, Part, ClientContext, ClientResult, RoundResult, ServerState, build_algorithm
from ..algorithms.perturbations import NoPerturbation
from ..data import ArrayDataset, Partition, load_dataset
from ..models import build_model, count_parameters
from .batches import BatchStream, sample_clients, torch_generator
from .client_store import ClientStateStore
from .evaluate import evaluate
from .fast import make_grad_at, resolve_backend
from .flat import FlatModel
from .fused import fused_blocker, step_blocker
from .local_step import new_state
from .metrics import MetricsLog, Progress
from .round_hooks import COMPRESSORS, ROUND_HOOKS, Compressor, RoundHook, reads_gradient
from .round_hooks import BYTES_PER_FLOAT
from .runners import LocalPaths
from .running_stats import step_stats
from .snapshots import Snapshots
from .together import together_blocker


def seed_everything(seed: int) -> None:
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device: {device!r} requested but CUDA is not available")
    return torch.device(device)


@dataclass
class Outputs:
    dir: Path

    @property
    def metrics(self):
        return self.dir / "metrics.csv"

    @property
    def summary(self):
        return self.dir / "summary.json"

    @property
    def config(self):
        return self.dir / "config.json"

    @property
    def model(self):
        return self.dir / "model.pt"

    @property
    def checkpoint(self):
        return self.dir / "checkpoint.pt"

    @property
    def client_state_dir(self):
        return self.dir / "client_state"


class Simulation:
    def __init__(self, spec: RunSpec, data: ArrayDataset, partition: Partition, out_dir: Path,
                 device: str = "cpu", progress: bool = True, numerics_mode: Optional[str] = None):
        tune_allocator()  # model-sized temporaries without a page fault per op (core/util/malloc.py)
        self.numerics = numerics_mode or numerics.active()
        numerics.require(self.numerics)  # portable: the kernels are pinned in this process, before any compute
        self.spec = spec
        self.device = resolve_device(device)
        self.data = data.to(self.device)
        if partition.num_clients != spec.num_clients:
            raise ConfigError(f"partition has {partition.num_clients} clients but training.num_clients is {spec.num_clients}")
        clients, val_idx = hold_out(partition.clients, spec.training.get("holdout", 0.0), spec.seed)
        self.client_idx = [torch.as_tensor(c, dtype=torch.long, device=self.device) for c in clients]
        # Tuning runs evaluate on samples carved from the training clients, never on the test split.
        self.eval_data, self.eval_split = (self.data, "test") if val_idx is None else (
            validation_view(self.data, torch.as_tensor(val_idx, device=self.device)), "validation")
        self.acc_key = "test_acc" if val_idx is None else "val_acc"
        self.out = Outputs(Path(out_dir))
        self.algo: Algorithm = build_algorithm(spec.algorithm, spec.hparams)
        self.algo.preset.check_single_decay(spec.hparams, spec.training)  # before any compute
        seed_everything(spec.seed)
        module = build_model(spec.model, data.input_shape, data.num_classes, **spec.model_kwargs)
        self.fm = FlatModel(module, self.device)
        self.num_params = count_parameters(module)
        self.srv = ServerState(theta=self.fm.flat.clone(), buffers=self.fm.get_buffers().clone(),
                               num_clients=spec.num_clients)
        for p in self.algo.parts:
            p.init_server(self.srv)
        self.store = ClientStateStore(self.algo.client_state_names, lambda n: torch.zeros_like(self.srv.theta),
                                      backend=spec.client_state, directory=self.out.client_state_dir, device=self.device)
        self.log = MetricsLog()
        self.progress = Progress(self._tag(), spec.rounds, enabled=progress)
        self.start_round = 1
        self.resumed_from: list[int] = []  # the rounds of the checkpoints this run resumed from (recorded)
        self.elapsed = 0.0
        self.status = "running"
        self.hooks = [ROUND_HOOKS.get(name, key="analysis")(**(params or {})) for name, params in spec.analysis.items()]
        self.snapshots = Snapshots(self.out.dir, spec.training.get("snapshot_rounds") or [])
        up = dict(spec.uplink or {"kind": "none"})
        self.compressor = COMPRESSORS.get(up.pop("kind", "none"), key="uplink.kind")(**up)
        self.compressor_state: dict[int, dict] = {}  # per-client error-feedback memory
        self._loss_parts = [p for p in self.algo.parts if type(p).loss_term is not Part.loss_term]
        asked = spec.training.get("backend", TRAINING_DEFAULTS["backend"])
        if self.numerics == "portable":  # inductor's kernels are built by the host compiler (-march=native): eager
            if asked == "compile":
                raise ConfigError("training.backend: 'compile' is not portable (inductor compiles its kernels with "
                                  "the host's C++ compiler and -march=native); use eager or auto, or numerics: native")
            asked = "eager"
        self.backend = resolve_backend(asked, self.fm, self.device, bool(self._loss_parts), self.total_local_steps(),
                                       unfused=step_blocker(self.algo))  # training/fl/fast.py: how grad_at is computed
        for obj in (*self.algo.parts, self.compressor):  # parts/compressors that need the model, data or seed
            if hasattr(obj, "bind"):
                obj.bind(self)
        self._paths = LocalPaths()
        self.path = self.choose_path()

    def choose_path(self) -> str:
        """How this simulation runs its local steps, decided once: "together" (training.vmap_clients:
        a round's clients as one vmapped step, training/fl/together.py), "fused" (backend compile and parts with
        a fused form: one compiled graph per step, training/fl/fused.py) or "eager" (the loop in local_train)."""
        if together_blocker(self) is None:
            return "together"
        return "fused" if fused_blocker(self) is None else "eager"

    @contextmanager
    def evaluating_under(self, algo: Algorithm, training: Optional[dict] = None, srv: Optional[ServerState] = None,
                         store=None, hooks: tuple[RoundHook, ...] = ()):
        """Within the block, local_train and run_round run `algo` (with `training` settings merged
        into the run's, the server state `srv` and the client-state store `store` where given, and
        only the round hooks `hooks`) and send uplinks uncompressed; the local path is chosen again
        for them. Everything is restored on exit. For analyses that replay or fine-tune clients
        (pipeline/analysis/personalize.py, pipeline/analysis/local_discrepancy.py) without touching the run."""
        names = ("spec", "algo", "_loss_parts", "compressor", "compressor_state", "srv", "store", "hooks",
                 "_paths", "path", "snapshots")
        saved = {n: getattr(self, n) for n in names}
        if training:
            self.spec = replace(self.spec, training={**self.spec.training, **training})
        self.algo = algo
        self._loss_parts = [p for p in algo.parts if type(p).loss_term is not Part.loss_term]
        self.compressor, self.compressor_state = Compressor(), {}
        self.srv = self.srv if srv is None else srv
        self.store = self.store if store is None else store
        self.hooks = list(hooks)
        self.snapshots = Snapshots(self.out.dir, [])  # replayed rounds are not the run's: never overwrite its snapshots
        self._paths = LocalPaths()
        try:
            self.path = self.choose_path()
            yield self
        finally:
            for n, v in saved.items():
                setattr(self, n, v)

    def _tag(self) -> str:
        s = self.spec
        return f"{s.algorithm} {s.dataset}/{s.partition}/{s.model} seed{s.seed}"

    # ---------------------------------------------------------------------------------- client
    def lr_at(self, t: int) -> float:
        return self.spec.lr * self.spec.lr_decay ** (t - 1)

    def local_epochs(self) -> int:
        return int(self.spec.training.get("local_epochs", 0) or 0)

    def client_steps(self, cid: int) -> int:
        """K_i: training.local_steps, or with local_epochs E the steps of E passes over the client's
        n_i samples as a DataLoader (drop_last=False) makes them: E·⌈n_i/B⌉, each epoch a new
        shuffle whose last batch holds the n_i mod B leftover samples (FedSOL's code: `for _ in
        range(local_epochs): for data, targets in loader`; its FedNova τ_i = E·len(loader))."""
        e = self.local_epochs()
        if not e:
            return self.spec.local_steps
        return e * math.ceil(len(self.client_idx[cid]) / self.spec.batch_size)

    def total_local_steps(self) -> int:
        """Local steps of the whole run (rounds x clients per round x the mean K_i): what a compile warm-up
        is paid back over."""
        n = self.spec.num_clients
        mean_k = sum(self.client_steps(c) for c in range(n)) / n
        return int(self.spec.rounds * self.spec.clients_per_round * mean_k)

    def client_stream(self, cid: int, t: int) -> BatchStream:
        """Client cid's mini-batches in round t: epochs with a partial last batch under local_epochs,
        otherwise full batches only (leftovers wait for the next shuffle, as before local_epochs)."""
        return BatchStream(self.client_idx[cid], self.spec.batch_size, self.spec.seed, t, cid,
                           drop_last=not self.local_epochs())

    def client_context(self, cid: int, t: int, start: torch.Tensor, down: dict, lr: float, state: dict) -> ClientContext:
        return ClientContext(cid=cid, round=t, lr=lr, local_steps=self.client_steps(cid), theta=self.srv.theta,
                             start=start, down=down, state=state, num_samples=len(self.client_idx[cid]),
                             local_momentum=self.spec.local_momentum)

    def begin_client(self, cid: int, t: int, start: torch.Tensor, down: dict, lr: float) -> ClientContext:
        """A client's context for round t, its state loaded and every part's client_begin run."""
        ctx = self.client_context(cid, t, start, down, lr, self.store.get(cid))
        ctx.scratch["model"] = self.fm.module  # parts with a second loss (FedSOL, MOON, FedNTD) evaluate it
        if self.srv.buffers.numel():
            self.fm.set_buffers(self.srv.buffers)  # every client starts from the global BN statistics
        for p in self.algo.parts:
            p.client_begin(ctx)
        return ctx

    def finish_client(self, ctx: ClientContext, w: torch.Tensor, loss_sum: torch.Tensor) -> ClientResult:
        """The parts' client_end at the end point w, the client's state stored, its uplink compressed."""
        up: dict = {}
        for p in self.algo.parts:
            up.update(p.client_end(ctx, w))
        self.store.put(ctx.cid, ctx.state, ctx.round)
        buffers = self.fm.get_buffers()
        self.snapshots.client_end(ctx.round, ctx.cid, w, buffers)  # the local model before compression
        delta, up, sent = self.send_up(ctx.cid, w - ctx.start, up)
        return ClientResult(cid=ctx.cid, delta=delta, end=ctx.start + delta, up=up, num_samples=ctx.num_samples,
                            train_loss=(loss_sum / ctx.local_steps).item(), buffers=buffers,
                            up_bytes=sent, steps=ctx.local_steps)

    def local_train(self, cid: int, t: int, start: torch.Tensor, down: dict, lr: float) -> ClientResult:
        spec, algo, fm = self.spec, self.algo, self.fm
        ctx = self.begin_client(cid, t, start, down, lr)
        steps = ctx.local_steps
        stream = self.client_stream(cid, t)
        gen = torch_generator(spec.seed, t, cid, self.device)
        extra = self._extra_loss(ctx) if self._loss_parts else None
        grad_at = make_grad_at(self.backend, fm, extra)
        # an epoch's partial last batch has a shape of its own: the eager gradient, not a recompile
        partial_grad_at = make_grad_at("eager", fm, extra) if self.backend != "eager" else grad_at
        stats = step_stats(fm.module)  # BN statistics move once per step (training/fl/running_stats.py)
        if stats is not None:
            ctx.scratch["running_stats"] = stats
            grad_at, partial_grad_at = stats.wrap(grad_at), stats.wrap(partial_grad_at)
        # Plain-gradient parts only ever take the gradient at w itself: let w be the model's flat
        # parameter buffer, so grad_at finds the point already loaded (no copy per step); w is
        # cloned off after the loop. Ascent parts evaluate at w + δ, which would overwrite it, and a
        # hook that reads the gradient may evaluate the model elsewhere.
        readers = [h for h in self.hooks if reads_gradient(h)]
        in_place = type(algo.perturbation) is NoPerturbation and not readers
        w = fm.flat.copy_(start) if in_place else start.clone()
        if self.path == "fused":  # backend=compile, parts with a fused form (training/fl/fused.py): the loop below as one graph
            state = self._paths.fused(self).run(w, stream, gen, lr, steps, ctx)
            return self.finish_client(ctx, w.clone() if in_place else w, state.loss_sum)
        state = new_state(w, spec.local_momentum)
        buf, loss_sum = state.buf, state.loss_sum
        for _ in range(steps):
            x, y = self.data.train_batch(stream.next(), gen)
            if stats is not None:
                stats.new_step()
            loss, g = algo.perturbation.gradient(ctx, w, (x, y), partial_grad_at if stream.partial else grad_at)
            for h in readers:  # RoundHook.local_gradient: analysis that sees (or replaces) the local gradient
                g = h.local_gradient(self, ctx, w, (x, y), loss, g)
            loss_sum += loss
            if spec.clip_grad_norm > 0:  # torch.nn.utils.clip_grad_norm_ semantics on the data gradient
                g = g * (spec.clip_grad_norm / (g.norm() + 1e-6)).clamp(max=1.0)
            for c in algo.corrections:
                g = c.adjust(ctx, w, g)
            if spec.weight_decay > 0:  # one op, as torch.optim.SGD does (g + wd*w was two passes and two buffers)
                g = torch.add(g, w, alpha=spec.weight_decay)
            if buf is not None:
                g = buf.mul_(spec.local_momentum).add_(g)
            w.sub_(g, alpha=lr)
        return self.finish_client(ctx, w.clone() if in_place else w, loss_sum)

    def send_up(self, cid: int, delta: torch.Tensor, up: dict) -> tuple[torch.Tensor, dict, int]:
        """Every uplink vector goes through the compressor; returns what the server receives and the bytes."""
        st = self.compressor_state.setdefault(cid, {})
        delta, sent = self.compressor.compress(delta, cid, "delta", st)
        out = {}
        for k, v in up.items():
            out[k], b = self.compressor.compress(v, cid, k, st)
            sent += b
        return delta, out, sent

    def _extra_loss(self, ctx):
        model = self.fm.module

        def extra(logits, x, y):
            terms = [t for p in self._loss_parts if (t := p.loss_term(ctx, logits, x, y, model)) is not None]
            return sum(terms) if terms else logits.new_zeros(())

        return extra

    # ---------------------------------------------------------------------------------- server
    def run_round(self, t: int) -> dict:
        spec, srv, algo = self.spec, self.srv, self.algo
        srv.round = t
        torch.manual_seed(int(np.random.default_rng([spec.seed, t]).integers(0, 2**62)))  # dropout etc.
        sampled = sample_clients(spec.seed, t, spec.num_clients, spec.clients_per_round)
        lr = self.lr_at(t)
        start = algo.server.start_point(srv)
        down: dict = {}
        for p in algo.parts:
            down.update(p.downlink(srv))
        if self.path == "together":  # training.vmap_clients: the sampled clients as one vmapped step
            results = self._paths.together(self).run(sampled, t, start, down, lr)
        else:
            results = [self.local_train(cid, t, start, down, lr) for cid in sampled]
        if spec.aggregation == "samples":
            wts = torch.tensor([r.num_samples for r in results], dtype=torch.float64)
        else:
            wts = torch.ones(len(results), dtype=torch.float64)
        rnd = RoundResult(round=t, sampled=sampled, clients=results, weights=(wts / wts.sum()))
        flat_dist = self.flatness_distance(results)
        for p in algo.parts[:-1]:
            p.server_update(srv, rnd)
        algo.server.server_update(srv, rnd)
        algo.server.apply(srv, rnd)
        if srv.buffers.numel():
            srv.buffers = rnd.mean(lambda c: c.buffers)
        self.snapshots.round_end(t, sampled, srv.theta, srv.buffers, spec.to_dict())  # end of round t (training/fl/snapshots.py)
        n = self.fm.numel * BYTES_PER_FLOAT
        down_vecs = 1 + len(down)
        train_loss = float(np.mean([r.train_loss for r in results]))
        row = {
            "round": t, "lr": lr, "train_loss": train_loss, "flatness_distance": flat_dist,
            "update_norm": float(rnd.mean_delta.norm()), "clients": len(sampled),
            "down_bytes": down_vecs * n * len(sampled), "up_bytes": sum(r.up_bytes for r in results),
            "grad_evals": algo.grad_evals_per_step * sum(r.steps for r in results),
        }
        for h in self.hooks:
            row.update(h.on_round_end(self, t, rnd, row))
        return row

    @staticmethod
    def flatness_distance(results: list[ClientResult]) -> float:
        """FedNSAM Def. 1 over the sampled clients: (1/S) Σ ‖Δ_i − mean Δ‖² (FedNSAM Def. 1, Eq. 4)."""
        # running sums instead of a stacked (S x d) copy: a round of ResNet-18 updates stays one vector
        mean = torch.zeros_like(results[0].delta, dtype=torch.float64)
        for r in results:
            mean.add_(r.delta.to(torch.float64))
        mean.div_(len(results))
        return float(sum(float(((r.delta.to(torch.float64) - mean) ** 2).sum()) for r in results) / len(results))

    # ---------------------------------------------------------------------------------- loop
    def run(self, stop_after: Optional[int] = None) -> dict:
        spec = self.spec
        self.resume()
        for h in self.hooks:
            h.on_start(self)
        t0 = time.perf_counter() - self.elapsed
        for t in range(self.start_round, spec.rounds + 1):
            row = self.run_round(t)
            evaluate_now = t % spec.eval_every == 0 or t == spec.rounds
            finite = math.isfinite(row["train_loss"]) and bool(torch.isfinite(self.srv.theta).all())
            if evaluate_now or not finite:
                te = time.perf_counter()
                ev = evaluate(self.fm, self.srv.theta, self.srv.buffers, self.eval_data, "test", spec.eval_batch_size,
                              limit=spec.training.get("eval_subset") or None)
                key = self.acc_key.removesuffix("_acc")
                row.update({f"{key}_loss": ev["loss"], self.acc_key: ev["acc"], "eval_time": time.perf_counter() - te})
            self.elapsed = time.perf_counter() - t0
            row["wall_time"] = self.elapsed
            row["status"] = "ok" if finite else "diverged"
            self.log.append(row)
            self.progress.update(t, row)
            if not finite:
                self.status = "diverged"
                break
            if spec.checkpoint_every and t % spec.checkpoint_every == 0 and t < spec.rounds:
                self.save_checkpoint(t)
            if stop_after is not None and t >= stop_after:  # tests: simulate a kill after round t
                return {"status": "stopped", "round": t}
        if self.status == "running":
            self.status = "collapsed" if self.collapsed() else "completed"
        return self.finish()

    def collapsed(self) -> bool:
        """The collapse rule (docs/reliability.md; fixed before leaderboard v3's runs): a run that finished with finite
        weights but whose last evaluation is at chance accuracy (at most 1/C + COLLAPSE_MARGIN) with an exploding
        loss (above COLLAPSE_LOSS x ln C, or not finite) learned nothing usable: it counts as not completed, like a
        diverged run. An untrained or barely trained model has a loss near ln C (every class alike), so a short run
        still near chance is not a collapse."""
        evals = [r for r in self.log.rows if r.get(self.acc_key) is not None]
        if not evals:
            return False
        last, c = evals[-1], self.data.num_classes
        loss = last.get(self.acc_key.replace("_acc", "_loss"))
        at_chance = last[self.acc_key] <= 1.0 / c + COLLAPSE_MARGIN
        return bool(at_chance and (loss is None or not math.isfinite(loss) or loss > COLLAPSE_LOSS * math.log(c)))

    # ---------------------------------------------------------------------------------- state
    def save_checkpoint(self, t: int) -> None:
        torch_save(self.out.checkpoint, {
            "digest": self.spec.digest(), "round": t, "theta": self.srv.theta.cpu(),
            "buffers": self.srv.buffers.cpu(), "server_state": {k: v.cpu() for k, v in self.srv.state.items()},
            "server_extra": self.srv.extra, "clients": self.store.snapshot(t), "metrics": self.log.rows,
            "compressor_state": self.compressor_state,
            "elapsed": self.elapsed, "resumed_from": self.resumed_from,
        })

    def resume(self) -> None:
        path = self.out.checkpoint
        if not path.exists() or self.start_round > 1:  # nothing to resume, or already resumed
            return
        ck = load_tensors(path, "checkpoint", advice="delete it to restart the run", keys=("digest",))  # runs no code
        if ck.get("digest") != self.spec.digest():
            raise ConfigError(f"checkpoint {path} belongs to different settings; delete it to restart the run")
        dev = self.device
        self.srv.theta = ck["theta"].to(dev)
        self.srv.buffers = ck["buffers"].to(dev)
        self.srv.state = {k: v.to(dev) for k, v in ck["server_state"].items()}
        self.srv.extra = ck["server_extra"]
        self.store.restore(ck["clients"], ck["round"])
        self.log.rows = list(ck["metrics"])
        self.compressor_state = ck.get("compressor_state", {})
        self.elapsed = ck["elapsed"]
        self.start_round = ck["round"] + 1
        self.resumed_from = [*ck.get("resumed_from", []), ck["round"]]
        self.progress.note(f"resumed from checkpoint at round {ck['round']}")

    def finish(self) -> dict:
        rows, acc, loss = self.log.rows, self.acc_key, self.acc_key.replace("_acc", "_loss")
        evals = [r for r in rows if r.get(acc) is not None and not (isinstance(r.get(acc), float) and math.isnan(r[acc]))]
        tail = max(1, math.ceil(0.1 * len(evals))) if evals else 0
        summary = {
            "status": self.status,
            "rounds_completed": rows[-1]["round"] if rows else 0,
            "eval_split": self.eval_split,  # "validation" in tuning runs (training.holdout > 0): accuracies below are on it
            "final_acc": evals[-1][acc] if evals and self.status == "completed" else None,
            "last10_acc": float(np.mean([r[acc] for r in evals[-tail:]])) if evals and self.status == "completed" else None,
            "best_acc": max((r[acc] for r in evals), default=None),
            "final_loss": evals[-1][loss] if evals else None,  # on eval_split (before 29 Nov 2026: "final_test_loss")
            "wall_time": self.elapsed,
            "train_time": self.elapsed - sum(r.get("eval_time") or 0.0 for r in rows),
            "num_params": self.num_params,
            "grad_evals_per_step": self.algo.grad_evals_per_step,
            "up_bytes_total": int(sum(r["up_bytes"] for r in rows)),
            "down_bytes_total": int(sum(r["down_bytes"] for r in rows)),
            "resumed_from": self.resumed_from,  # [] for a run that ran start to end in one process
            "numerics": self.numerics,
        }
        self.log.write(self.out.metrics)
        torch_save(self.out.model, {"theta": self.srv.theta.cpu(), "buffers": self.srv.buffers.cpu(),
                                    "spec": self.spec.to_dict()})
        write_json(self.out.summary, summary)
        self.out.checkpoint.unlink(missing_ok=True)
        self.progress.done(summary)
        return summary


_HOLDOUT_TAG = 0x4A1D
COLLAPSE_MARGIN = 0.05  # accuracy within 5 points of chance (1/C) counts as chance for the collapse rule
COLLAPSE_LOSS = 2.0  # and a loss above twice that of predicting every class alike (ln C) as exploding


def hold_out(clients: list, fraction: float, seed: int) -> tuple[list, Optional[np.ndarray]]:
    """Carve a seeded `fraction` of every client's training indices out as a validation set (the
    papers' tuning protocol without touching the test split). Returns (clients' remaining indices,
    the validation indices), or (clients, None) when fraction is 0. A client keeps at least one sample."""
    if not fraction:
        return clients, None
    kept, val = [], []
    for cid, idx in enumerate(clients):
        idx = np.asarray(idx)
        perm = np.random.default_rng([seed, cid, _HOLDOUT_TAG]).permutation(len(idx))
        n_val = min(int(round(fraction * len(idx))), len(idx) - 1)
        val.append(idx[perm[:n_val]])
        kept.append(np.sort(idx[perm[n_val:]]))
    return kept, np.sort(np.concatenate(val))


def validation_view(data: ArrayDataset, idx: torch.Tensor) -> ArrayDataset:
    """The data set with its evaluation split replaced by the held-out training samples."""
    return ArrayDataset(data.name, data.train_x, data.train_y, data.train_x[idx], data.train_y[idx],
                        data.num_classes, data.mean, data.std, data.augment, {**data.meta, "eval_split": "validation"})


def environment(numerics_mode: Optional[str] = None) -> dict:
    """What made a run: the code (commit, version), the machine and the numerics it ran under (core/util/numerics.py)."""
    return {"fedflat": __version__, "git_commit": source_commit(), "python": sys.version.split()[0],
            "platform": platform.platform(), "cuda": torch.version.cuda if torch.cuda.is_available() else None,
            **numerics.describe(numerics_mode)}


def train(spec: RunSpec, out_dir: str | Path, partition_path: str | Path, data_root: str | Path = "data",
          device: str = "cpu", download: bool = False, progress: bool = True,
          stop_after: Optional[int] = None, numerics_mode: Optional[str] = None) -> dict:
    """One run. `numerics_mode`: portable | native (None: the process's, core/util/numerics.py)."""
    if numerics_mode is not None:
        numerics.require(numerics_mode)  # before the data loads: a process in the wrong mode fails in one line
    out = Outputs(Path(out_dir))
    data = load_dataset(spec.dataset, data_root, download)
    partition = Partition.load(partition_path, num_samples=len(data.train_y))  # indices in range, before any compute
    sim = Simulation(spec, data, partition, out.dir, device=device, progress=progress, numerics_mode=numerics_mode)
    sim.resume()  # a corrupted or foreign checkpoint fails here, before anything is written
    write_json(out.config, {"spec": spec.to_dict(), "run_id": spec.run_id(), "algorithm": sim.algo.describe(),
                            "source": sim.algo.preset.source, "partition_file": str(partition_path),
                            "partition_meta": partition.meta, "device": str(sim.device), "backend": sim.backend,
                            "environment": environment(sim.numerics)})
    return sim.run(stop_after=stop_after)
