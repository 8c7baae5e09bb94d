"""DynaFed as FedSynSAM's baseline (Sec. VI-A, Table II; DynaFed, Pi et al. CVPR 2023).

Clients run FedAvg. The server records the global trajectory and distills D_syn exactly as FedSynSAM
does (same R, IPC, M, s, η_x, η_α), keeps it, and after every later aggregation fine-tunes the
averaged model on D_syn: `dyna_iters` epochs of Adam(`dyna_lr`) over mini-batches of `dyna_batch`
(DynaFed's scripts: 20 epochs, lr 2.5e-4, batch 256, a fresh Adam each round). The paper gives no
values for these: they are recorded guesses. DynaFed's BatchNorm re-synchronisation
on D_syn and soft labels are not reproduced (hard labels, as FedSynSAM's D_syn).
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..algorithms.parts import Param
from ..algorithms.servers import SERVERS, MeanServer
from ...core.errors import ConfigError
from .distill_settings import SYN_PARAMS
from .source import SyntheticSource

_FT_TAG = 0xD7FA


@SERVERS.register("dynafed")
class DynaFedServer(SyntheticSource, MeanServer):
    name = "dynafed"
    round_thresholds = {"syn_round": "D_syn is never distilled nor used, so the run is FedAvg"}
    params = {
        **MeanServer.params,
        **SYN_PARAMS,
        "dyna_iters": Param(20, "server fine-tuning epochs over D_syn per round", low=0),
        "dyna_lr": Param(2.5e-4, "Adam learning rate of the server fine-tuning", low=0.0, low_open=True),
        "dyna_batch": Param(256, "mini-batch size of the server fine-tuning", low=1),
    }

    def __init__(self, **hp):
        super().__init__(**hp)
        for k in ("dyna_iters", "dyna_batch"):
            v = getattr(self, k)
            if isinstance(v, bool) or not float(v).is_integer():
                raise ConfigError(f"algorithm.{k}: must be an integer, got {v!r}")
            setattr(self, k, int(v))

    def apply(self, srv, rnd) -> None:
        super().apply(srv, rnd)  # θ ← θ + η_g mean Δ
        syn = self.synthetic()
        if syn is not None and self.dyna_iters > 0:
            srv.theta.copy_(self.finetune(srv.theta, *syn, srv.round))

    def finetune(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, rnd: int) -> torch.Tensor:
        fwd = self._env["forward"]
        w = theta.detach().clone().requires_grad_(True)
        opt = torch.optim.Adam([w], lr=self.dyna_lr)
        rng = np.random.default_rng([self._env["seed"], rnd, _FT_TAG])
        for _ in range(self.dyna_iters):
            order = torch.from_numpy(rng.permutation(len(y))).to(y.device)
            for s in range(0, len(y), self.dyna_batch):
                b = order[s : s + self.dyna_batch]
                loss = F.cross_entropy(fwd(w, x[b]), y[b])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        return w.detach()
