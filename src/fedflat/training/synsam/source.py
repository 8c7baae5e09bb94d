"""The server side shared by FedSynSAM and DynaFed: record the global trajectory, distill once.

Round bookkeeping (rounds t = 1..T, θ_0 the initial model, θ_t the model after round t): at the start
of round t ≤ R + 1 the part records θ_{t−1}; at the start of round R + 1 the trajectory
W = (θ_0, …, θ_R) is complete (the text's W = {w^t}_{t=0}^R; Alg. 1's 0-based loop equals
`syn_round: R+1`), the server distills D_syn = {X, Y} and, for FedSynSAM, broadcasts it once to all
N clients. Rounds t ≤ R never see synthetic data. The trajectory is built from the compressed
aggregates, as in the paper.

Simulation shortcut: clients read the broadcast D_syn from server memory instead of a per-round
downlink vector (the engine counts downlink vectors as model-sized, every round); the one-off bytes
N·|D_syn| are added to `down_bytes` of round R + 1 and logged as `syn_down_bytes`.
"""
from __future__ import annotations

import math

import torch

from ..algorithms.parts import effective_steps
from ...core.errors import ConfigError
from ..fl.round_hooks import BYTES_PER_FLOAT, RoundHook
from ...core.util.io import write_json
from .distill import distill, flat_forward, init_synthetic, matching_loss
from .distill_settings import check_ints, resolve

INFO = "synsam"  # key in ServerState.extra


class SyntheticSource:
    """Mixin for a Part (listed before the Part base): trajectory recording and one-shot distillation."""

    broadcast = False  # True: D_syn is sent to the clients (FedSynSAM), False: kept on the server (DynaFed)

    def __init__(self, **hp):
        super().__init__(**hp)
        check_ints(self)
        self._srv = None
        self._env = None

    def __getstate__(self):  # copies (analysis replays) re-attach to their own server state in downlink
        return {**self.__dict__, "_srv": None}

    # ------------------------------------------------------------------ engine hooks
    def init_server(self, srv) -> None:
        super().init_server(srv)
        self._srv = srv
        srv.extra.setdefault(INFO, {"recorded": 0})
        if "syn_x" not in srv.state and "syn_traj" not in srv.state:
            srv.state["syn_traj"] = torch.zeros((self.syn_round + 1, srv.theta.numel()),
                                                dtype=srv.theta.dtype, device=srv.theta.device)

    def bind(self, sim) -> None:
        data, fm = sim.data, sim.fm
        if data.train_x.dtype not in (torch.uint8, torch.float16, torch.float32, torch.float64):
            raise ConfigError(f"algorithm: {sim.spec.algorithm} distills synthetic inputs and needs an image or "
                              f"vector dataset; {sim.spec.dataset} has {data.train_x.dtype} inputs")
        self._cfg = resolve(self, sim.spec.dataset, data.input_shape)
        self._env = {
            "forward": flat_forward(fm.module, fm.names, fm.slices, [p.shape for p in fm.params]),
            "num_classes": data.num_classes, "input_shape": data.input_shape, "seed": int(sim.spec.seed),
            "alpha0": sim.spec.lr * (mean_effective_steps(sim) if self.syn_alpha_init == "k_lr" else 1),
            "num_clients": sim.spec.num_clients, "out_dir": sim.out.dir,
        }
        if self.broadcast and not any(isinstance(h, BroadcastBytes) for h in sim.hooks):
            sim.hooks.append(BroadcastBytes())

    def downlink(self, srv) -> dict:
        out = super().downlink(srv)
        self._srv = srv  # the state this round's clients read (analysis hooks call this on a copy)
        done = srv.round - 1  # rounds completed; srv.theta = θ_done
        info = srv.extra[INFO]
        if done <= self.syn_round and info["recorded"] == done and "syn_traj" in srv.state:
            srv.state["syn_traj"][done].copy_(srv.theta)
            info["recorded"] = done + 1
        if done == self.syn_round and "syn_x" not in srv.state:
            self._distill(srv)
        return out

    # ------------------------------------------------------------------ helpers
    def synthetic(self):
        """(X, Y) once distilled, else None."""
        st = self._srv.state if self._srv is not None else {}
        return (st["syn_x"], st["syn_y"]) if "syn_x" in st else None

    def _distill(self, srv) -> None:
        if self._env is None:
            raise RuntimeError("synthetic-data part used without bind(sim): run it through the engine")
        env, cfg = self._env, self._cfg
        traj = srv.state.pop("syn_traj")
        x0, y = init_synthetic(cfg.ipc, env["num_classes"], env["input_shape"], env["seed"], traj.device, traj.dtype)
        fwd = env["forward"]
        before = matching_loss(fwd, traj, x0, y, env["alpha0"], cfg.steps, cfg.loss)
        res = distill(fwd, traj, x0, y, env["alpha0"], cfg, env["seed"])
        after = matching_loss(fwd, traj, res.x, y, res.alpha, cfg.steps, cfg.loss)
        srv.state["syn_x"], srv.state["syn_y"] = res.x, y
        nbytes = res.x.numel() * BYTES_PER_FLOAT + math.ceil(len(y) * max(1, math.ceil(math.log2(env["num_classes"]))) / 8)
        info = srv.extra[INFO]
        info.update({
            "distilled_at_round": srv.round, "trajectory_models": traj.shape[0], "alpha0": env["alpha0"],
            "alpha": res.alpha, "matching_loss_before": before, "matching_loss_after": after,
            "settings": cfg.to_dict(), "bytes_per_client": nbytes,
            "broadcast_round": srv.round if self.broadcast else None,
            "loss_first": res.losses[0] if res.losses else None, "loss_last": res.losses[-1] if res.losses else None,
        })
        if env["out_dir"] is not None:
            write_json(env["out_dir"] / "synsam.json", info)


def mean_effective_steps(sim) -> float:
    """K of α₀ = K·η_l (one synthetic step ≈ one round's move): the clients' mean K_eff,i, i.e. K with
    training.local_steps and plain SGD; each client's own E·⌈n_i/B⌉ with local_epochs, and the
    momentum-effective count with local momentum (algorithms.parts.effective_steps)."""
    n = sim.spec.num_clients
    return sum(effective_steps(sim.client_steps(c), sim.spec.local_momentum) for c in range(n)) / n


class BroadcastBytes(RoundHook):
    """Adds the one-off broadcast of D_syn to every client (N · |D_syn| bytes) to its round's downlink."""

    def on_round_end(self, sim, t, rnd, row) -> dict:
        info = sim.srv.extra.get(INFO) or {}
        b = info["bytes_per_client"] * sim.spec.num_clients if info.get("broadcast_round") == t else 0
        return {"syn_down_bytes": b, "down_bytes": row["down_bytes"] + b}
