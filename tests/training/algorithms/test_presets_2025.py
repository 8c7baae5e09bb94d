"""The 2025 methods (docs/algorithms_2025.md): hand-derived updates, reductions through the engine,
communication, state and resume.

Hand-derived numbers: two quadratic clients f_i(w) = ½(w − a_i)ᵀA_i(w − a_i) (helpers_2025), K = 2,
η = 0.1, θ⁰ = (0.5, −0.5), every gradient in closed form (FedGMT: a 2-class linear softmax, whose KL
gradient is γτ(p^τ − p_e^τ)ᵀ[x, 1]/B). The expected values were derived by hand-written NumPy outside
the repository; each is printed to 10 digits, so the tolerance is 1e-9. Flipping the sign of any
single term of a rule moves the checked values by at least 1e-3. This was checked while writing the
tests by flipping each of 32 terms of the parts once (a script outside the repository): every flip
made its method's test fail. FedWMSAM's −c in c_i⁺ cancels in θ under full participation, so its
test also checks c."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from fedflat.training.algorithms import PRESETS, build_algorithm
from fedflat.training.algorithms.presets_2025 import PRESETS_2025
from fedflat.training.data.array_dataset import ArrayDataset
from fedflat.training.data.partition import Partition
from fedflat.training.fl.engine import Simulation
from fedflat.training.fl.round_hooks import BYTES_PER_FLOAT
from fedflat.core.spec import RunSpec, check_training

from .helpers_2025 import close, drive, same
from .helpers_sam import ce_grad, make_sim, run


# ------------------------------------------------------------------------------ hand-derived
def test_fedgloss_hand_derived(float64):
    """Alg. 1 with ρ_l = 0.05, ρ = 0.1, β = 2 (α = 0.5). Round 1 has ε̃ = 0; round 2 starts at
    w̃ = θ + ρΔ̃/‖Δ̃‖ = (0.6043413856, 0.636458179)."""
    thetas, srv, _ = drive("fedgloss", {"rho": 0.05, "server_rho": 0.1, "alpha": 0.5}, rounds=2)
    close(thetas[0], [0.6134842095, 0.7360393458])
    close(thetas[1], [0.6289126624, 1.6963329235])
    close(srv.state["h"], [-0.0180426394, -0.3945783126])  # σ
    close(srv.state["gloss_pg"], [0.0206568259, -0.1711369524])  # Δ̃


def test_fedswa_hand_derived(float64):
    """η_k = (0.1, 0.055) for ρ = 0.1, K = 2; θ ← θ + 1.5(mean w − θ)."""
    thetas, _, _ = drive("fedswa", {"swa_rho": 0.1, "server_lr": 1.5}, rounds=2)
    close(thetas[0], [0.566046875, 0.257734375])
    close(thetas[1], [0.572698228, 0.6918661343])


def test_fedmoswa_hand_derived(float64):
    """ρ = 0.1, α = 1.5, γ = 0.2, Σ_k η_k = 0.155; three rounds, since c_i⁺'s −m and c_i terms
    reach θ only in round 3."""
    thetas, srv, store = drive("fedmoswa", {"swa_rho": 0.1, "server_lr": 1.5, "moswa_gamma": 0.2}, rounds=3)
    close(thetas[0], [0.566046875, 0.257734375])
    close(thetas[1], [0.5364381549, 0.1507456025])
    close(thetas[2], [0.5611114673, 0.3914969064])
    close(srv.state["moswa_m"], [-0.0804661163, -1.2070380799])
    close(store[0]["moswa_c"], [-0.9182992189, 0.1881714969])
    close(store[1]["moswa_c"], [0.6371049282, -4.6515933108])


def test_fedwmsam_hand_derived(float64):
    """ρ = 0.1, α₀ = 0.5, λ = 0.01, no lr decay; three rounds (the cosine acts from round 2).
    α: 0.5 → 0.496 → 0.49204 → 0.4881196 (the agreement clips to 0.1 in every round)."""
    thetas, srv, _ = drive("fedwmsam", {"rho": 0.1, "wm_alpha0": 0.5, "wm_lambda": 0.01}, rounds=3)
    close(thetas[0], [0.5367225003, -0.1547146193])
    close(thetas[1], [0.575156508, 0.2920719446])
    close(thetas[2], [0.5993469277, 0.7041043877])
    close(srv.state["c"], [-0.1209520983, -2.0601622157])  # −c in c_i⁺ is visible here only
    close(srv.state["wm_m"], [-0.1209520983, -2.0601622157])
    assert srv.extra["wm_alpha"] == pytest.approx(0.4881196, abs=1e-12)


XG = [[[1.0, 0.0], [0.5, 1.0]], [[0.0, 1.0], [1.0, -0.5]]]
YG = [[0, 1], [1, 1]]


def gmt_sim(tmp_path, hp):
    """The engine on FedGMT's hand-derived problem: linear softmax 2 → 2, two clients of two samples,
    full-batch steps, θ⁰ = W [[.2, −.1], [−.3, .4]], b (.05, −.05)."""
    x, y = torch.tensor(np.concatenate(XG)), torch.tensor(np.concatenate(YG))
    data = ArrayDataset("tiny", x, y, x, y, 2)
    clients = [np.arange(0, 2), np.arange(2, 4)]
    hist = np.stack([np.bincount(y.numpy()[c], minlength=2) for c in clients])
    training = check_training({"num_clients": 2, "participation": 1.0, "rounds": 2, "local_steps": 2,
                               "batch_size": 2, "lr": 0.1, "lr_decay": 1.0, "weight_decay": 0.0,
                               "clip_grad_norm": 0.0, "eval_every": 1, "checkpoint_every": 0})
    spec = RunSpec("tiny", "manual", "linear", "fedgmt", 0, PRESETS.get("fedgmt").resolve(hp), {}, training)
    sim = Simulation(spec, data, Partition(clients, hist, {"spec": "manual", "seed": 0}), tmp_path, progress=False)
    theta0 = torch.tensor([0.2, -0.1, -0.3, 0.4, 0.05, -0.05])
    sim.srv.theta.copy_(theta0)
    sim.srv.state["gmt_e"].copy_(theta0)  # e⁰ = θ⁰
    return sim


def test_fedgmt_hand_derived(tmp_path, float64):
    """γ = 1, τ = 3, α = 0.5, β = 2, through the engine (the KL term needs the model). Flat order is
    fedflat's (W row-major, then b)."""
    sim = gmt_sim(tmp_path, {"gmt_gamma": 1.0, "gmt_tau": 3.0, "gmt_alpha": 0.5, "gmt_beta": 2.0})
    thetas = run(sim, 2)
    close(thetas[1], [0.146960715, -0.1493480405, -0.246960715, 0.4493480405, -0.062864516, 0.062864516])
    close(thetas[2], [0.0987242045, -0.1998838721, -0.1987242045, 0.4998838721, -0.1781356027, 0.1781356027])
    close(sim.srv.state["gmt_e"], [0.136102281, -0.1622789462, -0.236102281, 0.4622789462, -0.0922839304,
                                   0.0922839304])
    close(sim.store.get(0)["gmt_d"], [0.0417003848, -0.0729818581, -0.0417003848, 0.0729818581, 0.0052094558,
                                      -0.0052094558])


# ------------------------------------------------------------------------------ driver = engine
@pytest.mark.parametrize("name,hp", [
    ("fedgloss", {"rho": 0.05, "server_rho": 0.1, "alpha": 0.5}),
    ("fedswa", {"swa_rho": 0.1, "server_lr": 1.5}),
    ("fedmoswa", {"swa_rho": 0.1, "server_lr": 1.5, "moswa_gamma": 0.2}),
    ("fedwmsam", {"rho": 0.1, "wm_alpha0": 0.5}),
])
def test_the_driver_is_the_engine(tmp_path, float64, name, hp):
    """The hand-derived tests drive the parts directly; the engine gives the same rounds (full-batch
    steps on a linear softmax model, 3 clients)."""
    sim, x, y, clients = make_sim(name, hp, tmp_path, local_steps=2, lr=0.2, rounds=3)
    expected, _, _ = drive(name, hp, 3, grad=lambda p, cid: (None, ce_grad(p, x[clients[cid]], y[clients[cid]])),
                           theta0=sim.srv.theta, num_clients=3, lr=0.2)
    for a, b in zip(run(sim, 3)[1:], expected):
        assert torch.allclose(a, b, atol=1e-12, rtol=0)


# ------------------------------------------------------------------------------ reductions
@pytest.mark.parametrize("name,hp,base,base_hp", [
    ("fedgloss", {"server_rho": 0.0, "rho": 0.3, "alpha": 0.1}, "fedspeed", {"rho": 0.3, "alpha": 0.1}),
    ("fedgloss", {"server_rho": 0.0, "rho": 0.0, "alpha": 0.1}, "feddyn", {"alpha": 0.1}),
    ("fedswa", {"swa_rho": 1.0, "server_lr": 1.5}, "fedavg", {"server_lr": 1.5}),
])
def test_reductions(tmp_path, float64, name, hp, base, base_hp):
    """FedGloSS's ρ = 0 is FedSpeed, ρ = ρ_l = 0 FedDyn; FedSWA's ρ = 1 is FedAvg with η_g = α."""
    same(name, hp, base, base_hp, tmp_path)


@pytest.mark.parametrize("name,hp,base,base_hp", [
    ("fedgloss", {"server_rho": 0.1, "rho": 0.3, "alpha": 0.1}, "fedspeed", {"rho": 0.3, "alpha": 0.1}),
    ("fedswa", {"swa_rho": 0.5, "server_lr": 1.5}, "fedavg", {"server_lr": 1.5}),
])
def test_the_reductions_are_not_trivial(tmp_path, float64, name, hp, base, base_hp):
    with pytest.raises(AssertionError):
        same(name, hp, base, base_hp, tmp_path)


# ------------------------------------------------------------------------------ costs, state, resume
COST = {  # (grad evals per step, downlink vectors, uplink vectors) per sampled client
    "fedgloss": (2, 1, 1), "fedswa": (1, 1, 1), "fedmoswa": (1, 2, 2), "fedwmsam": (1, 3, 2), "fedgmt": (1, 2, 2)}
STATE = {"fedgloss": ("h_i",), "fedswa": (), "fedmoswa": ("moswa_c",), "fedwmsam": ("c_i",), "fedgmt": ("gmt_d",)}


@pytest.mark.parametrize("name", PRESETS_2025)
def test_cost_and_state(tmp_path, float64, name):
    grad_evals, down, up = COST[name]
    algo = build_algorithm(name)
    assert algo.grad_evals_per_step == grad_evals
    assert algo.client_state_names == STATE[name]
    sim, *_ = make_sim(name, {}, tmp_path, rounds=1)
    row = sim.run_round(1)
    n = sim.fm.numel * BYTES_PER_FLOAT * 3  # 3 sampled clients
    assert (row["down_bytes"], row["up_bytes"]) == (down * n, up * n)


def test_fedgmt_code_aggregation_sends_no_dual(tmp_path, float64):
    sim, *_ = make_sim("fedgmt", {"gmt_agg": "all"}, tmp_path, rounds=1)
    assert sim.run_round(1)["up_bytes"] == sim.fm.numel * BYTES_PER_FLOAT * 3


@pytest.mark.parametrize("name", PRESETS_2025)
def test_resume_from_a_checkpoint_equals_the_uninterrupted_run(tmp_path, float64, name):
    """Server state in srv.state and srv.extra (FedWMSAM's α, FedMoSWA's first-round flag) survives
    a checkpoint; half the clients per round, so client state matters too."""
    kw = dict(rounds=4, num_clients=4, participation=0.5)
    ref, *_ = make_sim(name, {}, tmp_path / "ref", **kw)
    ref.run()
    first, *_ = make_sim(name, {}, tmp_path / "cut", checkpoint_every=2, **kw)
    assert first.run(stop_after=2)["status"] == "stopped"
    again, *_ = make_sim(name, {}, tmp_path / "cut", checkpoint_every=2, **kw)
    again.run()
    assert torch.equal(ref.srv.theta, again.srv.theta)


def test_paper_and_code_switches_change_the_run(tmp_path, float64):
    """Each exposed official-code reading is a different update (docs/algorithms_2025.md); half the
    clients per round, since FedGMT's two aggregations agree under full participation."""
    for name, hp in (("fedwmsam", {"wm_sign": "descent"}), ("fedwmsam", {"wm_m_scale": 0.5}),
                     ("fedmoswa", {"moswa_warm": "code"}), ("fedgmt", {"gmt_agg": "all"})):
        with pytest.raises(AssertionError):
            same(name, {}, name, hp, tmp_path / f"{name}{sorted(hp)}", rounds=3, num_clients=4, participation=0.5)


def test_parts_name_their_missing_partner():
    from fedflat.training.algorithms.parts import ConfigError
    from fedflat.training.algorithms.presets import Preset, Algorithm
    from fedflat.training.algorithms.parts import ServerState

    def parts(corrections, server):
        p = Preset("x", "x", "none", corrections, server, "test")
        algo = Algorithm(p, p.resolve({}))
        srv = ServerState(theta=torch.zeros(2), buffers=torch.zeros(0), num_clients=2)
        for part in algo.parts:
            part.init_server(srv)
        return algo, srv

    with pytest.raises(ConfigError, match="'gloss' server needs the 'feddyn' correction"):
        parts((), "gloss")
    algo, srv = parts(("gmt",), "mean")
    with pytest.raises(ConfigError, match="'gmt' correction needs the 'gmt' server"):
        algo.corrections[0].downlink(srv)


def test_which_presets_have_a_fused_step():
    """FedGloSS's client step is FedSpeed's (sam + feddyn, anchored at w̃), so it is fused; the new
    client parts have no fused form and run eagerly, and the blocker names them."""
    from fedflat.training.fl.fused import step_blocker

    assert step_blocker(build_algorithm("fedgloss")) is None
    for name, part in (("fedswa", "SWASchedule"), ("fedmoswa", "MoSWACorrection"),
                       ("fedwmsam", "MomentumTargetPerturbation"), ("fedgmt", "GMTCorrection")):
        assert part in step_blocker(build_algorithm(name))
