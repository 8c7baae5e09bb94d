"""What FedSynSAM's ascent direction is made of (docs/reproduction.md): hook `synsam_mix`.

At the start point w of the next round, for each sampled client, with ξ its first mini-batch of that
round and ζ the synthetic set D_syn (FedSynSAM Sec. IV-C, Eq. 14):

    g_l = ∇F(w; ξ),  g_s = ∇F(w; ζ),  g = β g_l + (1 − β) g_s,  ∇F = the full federated gradient at w

Columns (means over the clients): `mix_local_norm` ‖g_l‖, `mix_syn_norm` ‖g_s‖, `mix_syn_share`
‖(1−β) g_s‖ / ‖β g_l‖ (how much of the mix the synthetic term can move), `mix_cos_local`,
`mix_cos_syn` and `mix_cos_mix` = cos(·, ∇F). Before the distillation (t ≤ R) only the local
columns are filled. A run whose perturbation has no synthetic set measures nothing.
"""
from __future__ import annotations

import math

import numpy as np

from ...training.fl.batches import BatchStream, torch_generator
from .cosine import cosine, global_gradient
from .analysis_hooks import AnalysisHook, _choice, _int, register


@register("synsam_mix")
class SynSAMMixHook(AnalysisHook):
    PARAMS = {"every": (10, _int(1)), "target": ("clients", _choice("clients", "train")),
              "batch_size": (1024, _int(1))}

    def on_round_end(self, sim, t, rnd, row) -> dict:
        part = sim.algo.perturbation
        if not self.due(sim, t) or not hasattr(part, "synthetic"):
            return {}
        fm, spec, w = sim.fm, sim.spec, sim.srv.theta.clone()
        G = global_gradient(sim, w, self.target, self.batch_size)
        syn = part.synthetic()
        g_s = None
        if syn is not None:
            _, g = fm.grad_at(w, syn[0], syn[1])
            g_s = g.clone()
        cols: dict[str, list] = {k: [] for k in ("local_norm", "cos_local", "cos_mix", "syn_share")}
        for cid in rnd.sampled:
            idx = sim.client_idx[cid]
            x, y = sim.data.train_batch(BatchStream(idx, spec.batch_size, spec.seed, t + 1, cid).next(),
                                        torch_generator(spec.seed, t + 1, cid, sim.device))
            _, g = fm.grad_at(w, x, y)
            g_l = g.clone()
            cols["local_norm"].append(float(g_l.norm()))
            cols["cos_local"].append(cosine(g_l, G))
            if g_s is not None:
                cols["cos_mix"].append(cosine(part.beta * g_l + (1 - part.beta) * g_s, G))
                cols["syn_share"].append((1 - part.beta) * float(g_s.norm()) / max(part.beta * float(g_l.norm()), 1e-30))
        fm.load(sim.srv.theta, sim.srv.buffers)
        mean = lambda v: float(np.mean(v)) if v else math.nan
        return {"mix_local_norm": mean(cols["local_norm"]), "mix_cos_local": mean(cols["cos_local"]),
                "mix_syn_norm": math.nan if g_s is None else float(g_s.norm()),
                "mix_cos_syn": math.nan if g_s is None else cosine(g_s, G),
                "mix_cos_mix": mean(cols["cos_mix"]), "mix_syn_share": mean(cols["syn_share"]),
                "global_grad_norm": float(G.norm())}
