"""The three-part vocabulary every algorithm is composed from.

A local step of client i, with w the local iterate and ζ a mini-batch:

    loss, g = perturbation.gradient(ctx, w, ζ, grad_at)   # where the gradient is taken
    g       = clip(g)                                      # optional, data gradient only
    g       = correction.adjust(ctx, w, g)  for each       # what is added to the step
    w       = w - lr * (g + weight_decay * w)

and after K steps the server does

    part.server_update(srv, rnd)  for every part           # duals, control variates, ...
    server.apply(srv, rnd)                                 # how the global model moves

All vectors are flat float tensors over the trainable parameters. A part declares its
hyperparameters (with domains, so config validation can name the allowed range), the per-client
state it needs (the engine keeps it, in memory or on disk) and what it adds to the downlink and
uplink (so bytes are counted from what is actually sent).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Optional

import torch

from ...core.errors import ConfigError

Tensor = torch.Tensor
# grad_at(point, batch) -> (loss tensor, flat gradient at `point`). The returned gradient is a view
# of a buffer that the next call overwrites: use it before calling again.
GradFn = Callable[[Tensor, Any], tuple[Tensor, Tensor]]


@dataclass(frozen=True)
class Param:
    default: Any
    doc: str = ""
    low: Optional[float] = None
    high: Optional[float] = None
    low_open: bool = False  # True: value must be > low (not >=)
    high_open: bool = False  # True: value must be < high
    choices: Optional[tuple] = None

    def check(self, key: str, value):
        if self.choices is not None:
            if value not in self.choices:
                raise ConfigError(f"{key}: {value!r} not allowed; allowed: {', '.join(map(str, self.choices))}")
            return value
        if isinstance(self.default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{key}: expected true/false, got {value!r}")
            return value
        if isinstance(self.default, (int, float)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"{key}: expected a number, got {value!r}")
            lo_ok = self.low is None or (value > self.low if self.low_open else value >= self.low)
            hi_ok = self.high is None or (value < self.high if self.high_open else value <= self.high)
            if not (lo_ok and hi_ok):
                raise ConfigError(f"{key}: {value!r} outside its domain {self.domain()}")
            return type(self.default)(value) if isinstance(self.default, float) else value
        return value

    def domain(self) -> str:
        if self.choices is not None:
            return "{" + ", ".join(map(str, self.choices)) + "}"
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        return f"{'(' if self.low_open or self.low is None else '['}{lo}, {hi}{')' if self.high_open or self.high is None else ']'}"


@dataclass
class ServerState:
    theta: Tensor  # global trainable parameters (flat)
    buffers: Tensor  # global float buffers (BN statistics), averaged
    num_clients: int
    round: int = 0
    state: dict[str, Tensor] = field(default_factory=dict)  # momentum, duals, control variates, ...
    extra: dict[str, Any] = field(default_factory=dict)  # non-tensor server memory

    def zeros(self) -> Tensor:
        return torch.zeros_like(self.theta)


def effective_steps(k: int, m: float) -> float:
    """K_eff = (K − m(1 − m^K)/(1 − m))/(1 − m): with heavy-ball momentum m (buf ← m·buf + g,
    w ← w − lr·buf, buf⁰ = 0) a constant direction g moves w by lr·K_eff·g after K steps, against
    lr·K·g for plain SGD. Dividing a displacement by lr·K_eff (not lr·K) therefore gives the mean
    step direction whatever m is: SCAFFOLD's option II as FedSOL's code does it (`adaptive_divison`),
    and FedNova's ‖a_i‖₁ (Wang et al. 2020, Sec. 4 with momentum). K_eff = K at m = 0; → K/(1−m)."""
    if m == 0.0:
        return float(k)
    return (k - m * (1.0 - m ** k) / (1.0 - m)) / (1.0 - m)


@dataclass
class ClientContext:
    cid: int
    round: int
    lr: float
    local_steps: int
    theta: Tensor  # global model as received this round
    start: Tensor  # where local training starts (theta, or a look-ahead point)
    down: dict[str, Tensor]  # extra downlink vectors
    state: dict[str, Tensor]  # this client's persistent state (mutated in place, saved by the engine)
    num_samples: int
    scratch: dict[str, Any] = field(default_factory=dict)  # per-round temporaries of the parts
    local_momentum: float = 0.0  # the local heavy-ball coefficient m (training.local_momentum)

    @property
    def effective_steps(self) -> float:
        """K_eff of this client's K local steps (see effective_steps); K for plain SGD."""
        return effective_steps(self.local_steps, self.local_momentum)


@dataclass
class ClientResult:
    cid: int
    delta: Tensor  # w_K - start
    end: Tensor  # w_K
    up: dict[str, Tensor]  # extra uplink vectors
    num_samples: int
    train_loss: float
    buffers: Tensor
    up_bytes: int = 0  # bytes this client sent (after compression)
    steps: int = 0  # local steps K_i it ran


@dataclass
class RoundResult:
    round: int
    sampled: list[int]
    clients: list[ClientResult]
    weights: Tensor  # aggregation weights over sampled clients, sum to 1

    def mean(self, get: Callable[[ClientResult], Tensor]) -> Tensor:
        out = torch.zeros_like(get(self.clients[0]))
        for w, c in zip(self.weights.tolist(), self.clients):
            out.add_(get(c), alpha=w)
        return out

    def mean_normalised_delta(self, divisor: dict[int, float]) -> tuple[Tensor, float]:
        """(D, k) with D / k = Σ_S p_i Δ_i / divisor_i (divisor by client id: its K_eff·lr, ...).
        When every divisor is the same k this is (mean Δ, k), so equal-K rounds compute mean Δ / k
        exactly as before per-client step counts existed."""
        ks = {divisor[c.cid] for c in self.clients}
        if len(ks) == 1:
            return self.mean_delta, ks.pop()
        return self.mean(lambda c: c.delta / divisor[c.cid]), 1.0

    @property
    def mean_delta(self) -> Tensor:
        if "_mean_delta" not in self.__dict__:
            self.__dict__["_mean_delta"] = self.mean(lambda c: c.delta)
        return self.__dict__["_mean_delta"]


class Part:
    """Base of every part; each hook is a no-op unless overridden."""

    name: ClassVar[str] = "part"
    params: ClassVar[dict[str, Param]] = {}
    client_state: ClassVar[tuple[str, ...]] = ()  # persistent per-client vectors, zero-initialised
    grad_evals: ClassVar[int] = 0  # extra forward/backward passes per local step
    requires: ClassVar[tuple[str, ...]] = ()  # downlink vectors this part needs the server to send
    # A part that only acts late must get the chance, else the run is a plainer method and the study
    # refuses it (fedflat.pipeline.scale.check_methods_act):
    # {hyperparameter R: what never happens when R >= training.rounds} for a part acting in rounds t > R
    round_thresholds: ClassVar[dict[str, str]] = {}
    # what never happens with training.local_steps = 1, for a part that is zero at a round's start point
    first_step_inert: ClassVar[str] = ""
    # the hyperparameter that IS the run's weight decay (FedSAGD's μ): the engine's
    # training.weight_decay then resolves to 0 for the run (Preset.training_for), never stacks
    decay_param: ClassVar[Optional[str]] = None
    # parameters this part deliberately shares with another part of the same preset (both declare the
    # same Param object; Preset.param_specs refuses any other repeated name)
    shares: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **hp):
        for k, spec in self.params.items():
            setattr(self, k, hp.get(k, spec.default))

    def init_server(self, srv: ServerState) -> None: ...

    def downlink(self, srv: ServerState) -> dict[str, Tensor]:
        return {}

    def client_begin(self, ctx: ClientContext) -> None: ...

    def client_end(self, ctx: ClientContext, w: Tensor) -> dict[str, Tensor]:
        return {}

    # Extra differentiable loss term added to the cross-entropy at every gradient evaluation
    # (FedSOL's KL, MOON's contrastive term, ...). Return None for none.
    def loss_term(self, ctx: ClientContext, logits: Tensor, x: Tensor, y: Tensor, model) -> Optional[Tensor]:
        return None

    def server_update(self, srv: ServerState, rnd: RoundResult) -> None: ...

    def describe(self) -> str:
        hp = ", ".join(f"{k}={getattr(self, k)}" for k in self.params)
        return f"{self.name}({hp})" if hp else self.name


class Perturbation(Part):
    """Where the gradient is taken. `grad_evals` counts forward/backward passes per local step."""

    grad_evals: ClassVar[int] = 1

    def gradient(self, ctx: ClientContext, w: Tensor, batch, grad_at: GradFn) -> tuple[Tensor, Tensor]:
        raise NotImplementedError

    def fused_form(self) -> Optional["FusedForm"]:
        """This part's `gradient` as a tensor function the whole-step graph (training/fl/fused.py) may run, or
        None: not fused. A subclass that overrides what `gradient` calls is not fused unless it
        declares this again (training/fl/fused.py step_blocker)."""
        return None


@dataclass(frozen=True)
class AscentTerms:
    """Per-client terms of the "ascent" form, read once after client_begin. The direction is
    d = g + c − m with c fixed for the round (FedTOGA's κΔ, FedSMOO's −s); m, where given, is a
    per-client dual updated in place after each ascent, m ← m + δ + c (FedSMOO's μ_i ← μ_i + ŝ − s);
    `last`, where given, receives each step's δ. None: no such term."""

    c: Optional[Tensor] = None
    dual: Optional[Tensor] = None
    last: Optional[Tensor] = None


@dataclass(frozen=True)
class FusedForm:
    """A perturbation's gradient as one of three tensor functions (Perturbation.fused_form):

    plain    ∇F(w; ξ);
    shifted  ∇F(w + δ; ξ) with δ = shift(ctx) fixed for the round (read once per client, after
             client_begin): FedLESAM, FedNSAM;
    ascent   the SAM step δ = ρ d/(‖d‖+ε) (0 when d = 0), or ASAM's δ = ρ T² d/‖T d‖ with
             T = |w| + asam_eta, then ∇F(w + δ; ξ); d = ∇F(w; ξ), or, where mix(ctx) gives (β, ζ)
             for this step, β∇F(w; ξ) + (1−β)∇F(w; ζ) (FedSynSAM), plus the `terms(ctx)` of the round.
    """

    kind: str
    rho: float = 0.0
    asam_eta: Optional[float] = None
    shift: Optional[Callable[[ClientContext], Tensor]] = None
    terms: Optional[Callable[[ClientContext], AscentTerms]] = None
    mix: Optional[Callable[[ClientContext], Optional[tuple[float, tuple[Tensor, Tensor]]]]] = None

    KINDS: ClassVar[tuple[str, ...]] = ("plain", "shifted", "ascent")

    def __post_init__(self):
        if self.kind not in self.KINDS:
            raise ValueError(f"FusedForm.kind: {self.kind!r} not one of {', '.join(self.KINDS)}")
        if (self.kind == "shifted") != (self.shift is not None):
            raise ValueError("FusedForm: a shift is given exactly for the 'shifted' kind")
        if self.kind != "ascent" and (self.terms or self.mix or self.asam_eta is not None):
            raise ValueError(f"FusedForm: terms, mix and asam_eta belong to the 'ascent' kind, not {self.kind!r}")


def sam_form(rho: float, **ascent) -> FusedForm:
    """The ascent form with radius rho, or the plain gradient at rho = 0 (no ascent is taken)."""
    return FusedForm("ascent", rho=float(rho), **ascent) if rho != 0.0 else FusedForm("plain")


class Correction(Part):
    """What is added to the local step's gradient."""

    def adjust(self, ctx: ClientContext, w: Tensor, g: Tensor) -> Tensor:
        raise NotImplementedError

    def fused_linear(self, ctx: ClientContext) -> Optional[tuple[float, float, Optional[Tensor]]]:
        """(a, b, c) when `adjust` is g ↦ a·g + b·w + c with a, b numbers and c a vector (or None) fixed
        for the client's round, so the whole-step compiled graph (training/fl/fused.py FusedStep) can apply it;
        None: not fused."""
        return None


class ServerOpt(Part):
    """How the global model moves, given the clients' results."""

    def __init__(self, **hp):
        super().__init__(**hp)
        self.requested: set[str] = set()  # downlink keys other parts declared in `requires`

    def start_point(self, srv: ServerState) -> Tensor:
        return srv.theta

    def apply(self, srv: ServerState, rnd: RoundResult) -> None:
        raise NotImplementedError


def safe_unit(v: Tensor, eps: float = 0.0) -> Tensor:
    """v/||v||, and exactly 0 when v = 0 (no direction is defined there)."""
    n = v.norm()
    if n.item() == 0.0:
        return torch.zeros_like(v)
    return v / (n + eps)
