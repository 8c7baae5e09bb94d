"""Parts that need a second loss on the model: FedSOL's proximal-KL perturbation and the loss
terms of FedNTD and MOON. Global-model (and stale-model) outputs are computed with
torch.func.functional_call on the client's module with a flat vector mapped onto its parameters,
under no_grad, with BatchNorm buffers copied so these extra forwards never touch the running
statistics. The module comes from ctx.scratch["model"] (set by the engine).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.func import functional_call

from .parts import ClientContext, ConfigError, Correction, Param, Perturbation, safe_unit
from .corrections import CORRECTIONS
from .perturbations import PERTURBATIONS

SOL_EPS = 1e-12


# ----------------------------------------------------------------------------------- helpers
def layout(model: torch.nn.Module) -> list[tuple[str, slice, torch.Size]]:
    """(name, flat slice, shape) of every trainable parameter, in FlatModel's order."""
    cached = model.__dict__.get("_fedflat_layout")
    if cached is None:
        cached, off = [], 0
        for n, p in model.named_parameters():
            if p.requires_grad:
                cached.append((n, slice(off, off + p.numel()), p.shape))
                off += p.numel()
        model.__dict__["_fedflat_layout"] = cached
    return cached


def as_params(model, flat: torch.Tensor) -> dict[str, torch.Tensor]:
    return {n: flat[s].view(shape) for n, s, shape in layout(model)}


def forward_with(model, params: dict[str, torch.Tensor], x: torch.Tensor, stats=None) -> torch.Tensor:
    """Outputs with `params`; the model's buffers are copied, so its running statistics stay put,
    unless `stats` (the step's fl.running_stats.StepStats, for a pass of the local model on the
    local batch) grants this pass the step's one statistics update."""
    if stats is not None and stats.claim():
        return functional_call(model, params, (x,))
    bufs = {n: b.clone() for n, b in model.named_buffers()}
    return functional_call(model, {**bufs, **params}, (x,))


def logits_at(model, flat: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Outputs of the model with parameters `flat`, no gradient."""
    with torch.no_grad():
        return forward_with(model, as_params(model, flat), x)


def head_name(model) -> str:
    """The classifier: the last top-level child that owns parameters (FedSOL code's head)."""
    named = [n for n, c in model.named_children() if any(True for _ in c.parameters())]
    if not named:
        raise ConfigError("algorithm: model has no child module with parameters to call its head")
    return named[-1]


def model_of(ctx: ClientContext, part: str):
    model = ctx.scratch.get("model")
    if model is None:
        raise ConfigError(f"algorithm: part {part!r} needs the client model in ctx.scratch['model']")
    return model


# ----------------------------------------------------------------------------------- FedSOL
@PERTURBATIONS.register("fedsol")
class FedSOLPerturbation(Perturbation):
    """FedSOL (Lee et al. 2024, Alg. 1, Eqs. 5–8): perturb along the proximal-loss gradient and
    update with the local loss at the perturbed point (Sec. 3.2-3.4):

        L_p   = KL(softmax(f_{θ}(x)/τ) ‖ softmax(f_w(x)/τ)), batchmean, no τ² (code), τ = 3
        g_p   = ∇_w L_p restricted to the perturbed subset (head by default, Sec. 3.4)
        Λ     = |w − θ| normalised per parameter tensor (Eq. 7; sol_lambda=dim0: code's
                F.normalize(dim=0)); Λ = 1 when sol_adaptive=false (fedsol_fixed)
        ε     = ρ Λ ⊙ g_p / ‖g_p‖, zero outside the subset (norm over the subset, as the official code; the paper does not say)
        g     = ∇ L_local(w + ε)  (cross-entropy, plus any loss terms of other parts)

    At the first step of a round w = θ, so Λ = 0 and g_p = 0: ε = 0 (Eq. 7). Two passes per
    step (the KL backward only reaches the perturbed subset). BatchNorm statistics: the KL pass at w
    is the step's first and updates them, the pass at w + ε does not (official code: running stats
    on for the first pass, off for the second; training/fl/running_stats.py); at ε = 0 the one pass at w does.
    """

    first_step_inert = "FedSOL's perturbation is zero at a round's first step (Λ = 0, g_p = 0)"

    name = "fedsol"
    grad_evals = 2
    params = {
        "rho": Param(2.0, "perturbation strength ρ", low=0.0),
        "sol_adaptive": Param(True, "scale ε element-wise by Λ = |w − θ|/‖w − θ‖ (Eq. 7-8)"),
        "sol_target": Param("head", "which parameters are perturbed (Sec. 3.4)", choices=("head", "body", "full")),
        "sol_lambda": Param("tensor", "Λ normaliser: tensor (Eq. 7 per parameter tensor) or dim0 (official code)",
                            choices=("tensor", "dim0")),
        "sol_tau": Param(3.0, "softmax temperature τ of the proximal KL", low=0.0, low_open=True),
    }

    def _targets(self, model) -> list[tuple[str, slice, torch.Size]]:
        if self.sol_target == "full":
            return layout(model)
        head = head_name(model) + "."
        in_head = [e for e in layout(model) if e[0].startswith(head)]
        return in_head if self.sol_target == "head" else [e for e in layout(model) if not e[0].startswith(head)]

    def prox_grad(self, model, w, theta, x, targets, stats=None) -> torch.Tensor:
        """Flat ∇_w KL(p_θ ‖ p_w) on `targets`, zero elsewhere (`stats`: see forward_with)."""
        params = as_params(model, w.detach())
        leaves = {}
        for n, _, _ in targets:
            leaves[n] = params[n].detach().clone().requires_grad_(True)
        params.update(leaves)
        with torch.no_grad():
            target = F.softmax(forward_with(model, as_params(model, theta), x) / self.sol_tau, dim=1)
        with torch.enable_grad():
            logp = F.log_softmax(forward_with(model, params, x, stats) / self.sol_tau, dim=1)
            kl = F.kl_div(logp, target, reduction="batchmean")
            grads = torch.autograd.grad(kl, [leaves[n] for n, _, _ in targets], allow_unused=True)
        out = torch.zeros_like(w)
        for (n, s, _), g in zip(targets, grads):
            if g is not None:
                out[s] = g.reshape(-1)
        return out

    def perturbation(self, model, w, theta, x, stats=None) -> torch.Tensor:
        if self.rho == 0.0 or torch.equal(w, theta):
            # at w = θ the KL gradient is 0 up to round-off, which g_p/‖g_p‖ would blow up to a
            # random direction of length ρ (fixed variant); the paper's value there is ε = 0
            return torch.zeros_like(w)
        targets = self._targets(model)
        return self.scaled(w, theta, self.prox_grad(model, w, theta, x, targets, stats), targets)

    def scaled(self, w, theta, d, targets) -> torch.Tensor:
        """ε = ρ Λ ⊙ d/‖d‖ for a direction d that is zero outside `targets` (d is overwritten)."""
        n = d.norm()
        if n.item() == 0.0:
            return torch.zeros_like(w)
        eps = d.mul_(self.rho / (n + SOL_EPS))
        if self.sol_adaptive:
            lam = torch.zeros_like(w)
            for _, s, shape in targets:
                a = (w[s] - theta[s]).abs()
                if self.sol_lambda == "tensor":
                    lam[s] = safe_unit(a)
                else:
                    lam[s] = F.normalize(a.view(shape), p=2, dim=0, eps=SOL_EPS).reshape(-1)
            eps.mul_(lam)
        return eps

    def gradient(self, ctx, w, batch, grad_at):
        model = model_of(ctx, self.name)
        eps = self.perturbation(model, w, ctx.theta, batch[0], ctx.scratch.get("running_stats"))
        return grad_at(w + eps, batch)


# ----------------------------------------------------------------------------------- loss terms
class LossTerm(Correction):
    """A correction that only adds a differentiable term to the loss; the step itself is unchanged."""

    def adjust(self, ctx, w, g):
        return g


@CORRECTIONS.register("ntd")
class NTDLoss(LossTerm):
    """FedNTD (Lee et al. 2022; a FedSOL baseline, Tables 2 and 8): not-true distillation,
    β τ² KL(softmax(z_g^{¬y}/τ) ‖ softmax(z^{¬y}/τ)) over the logits without the true class,
    batchmean; z_g from the received global model. No state; 1× up and down."""

    name = "ntd"
    params = {"ntd_beta": Param(1.0, "weight β of the not-true distillation", low=0.0),
              "ntd_tau": Param(1.0, "temperature τ", low=0.0, low_open=True)}

    def loss_term(self, ctx, logits, x, y, model):
        if self.ntd_beta == 0.0:
            return None
        zg = logits_at(model, ctx.theta, x)
        c = logits.shape[1]
        keep = torch.ones_like(logits, dtype=torch.bool).scatter_(1, y.view(-1, 1), False)
        nt = lambda z: z[keep].view(-1, c - 1) / self.ntd_tau
        q = F.softmax(nt(zg), dim=1)
        kl = F.kl_div(F.log_softmax(nt(logits), dim=1), q, reduction="batchmean")
        return self.ntd_beta * self.ntd_tau ** 2 * kl


@CORRECTIONS.register("moon")
class MOONLoss(LossTerm):
    """MOON (Li et al. 2021; a FedSOL baseline, Tables 2 and 8): μ · CE([cos(z, z_g), cos(z, z_prev)]/τ, 0) on the
    penultimate features z (input of the head, no projection head as in FedSOL's code); z_g from
    the received global model, z_prev from the client's previous local model (client state,
    θ^0 before its first participation). Uplink 1×, client state 1 model."""

    name = "moon"
    client_state = ("moon_prev",)
    params = {"moon_mu": Param(0.1, "weight μ of the contrastive term", low=0.0),
              "moon_tau": Param(0.5, "temperature τ", low=0.0, low_open=True)}

    def init_server(self, srv):
        self._theta0 = srv.theta.clone()  # the shared initialisation every client knows from the seed

    def client_begin(self, ctx):
        model = model_of(ctx, self.name)
        if model.__dict__.get("_fedflat_moon_hook") is None:
            head = getattr(model, head_name(model))
            store = {}
            model.__dict__["_fedflat_moon_store"] = store
            model.__dict__["_fedflat_moon_hook"] = head.register_forward_pre_hook(
                lambda mod, inp: store.__setitem__("z" if torch.is_grad_enabled() else "z_nograd", inp[0]))
        prev = ctx.state["moon_prev"]
        ctx.scratch["moon_prev"] = prev.clone() if bool(prev.any()) else self._theta0

    def features(self, model, flat, x):
        logits_at(model, flat, x)  # no_grad: the hook files it under z_nograd, z stays the local one
        return model.__dict__["_fedflat_moon_store"]["z_nograd"].flatten(1)

    def loss_term(self, ctx, logits, x, y, model):
        if self.moon_mu == 0.0:
            return None
        z = model.__dict__["_fedflat_moon_store"]["z"].flatten(1)  # captured by this forward
        zg = self.features(model, ctx.theta, x)
        zp = self.features(model, ctx.scratch["moon_prev"], x)
        sims = torch.stack([F.cosine_similarity(z, zg, dim=1), F.cosine_similarity(z, zp, dim=1)], 1)
        target = torch.zeros(len(z), dtype=torch.long, device=z.device)
        return self.moon_mu * F.cross_entropy(sims / self.moon_tau, target)

    def client_end(self, ctx, w):
        ctx.state["moon_prev"].copy_(w)
        return {}
