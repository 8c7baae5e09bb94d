"""FedSCAM (docs/algorithms_2025.md "FedSCAM"): a hand-derived update, its reductions, the aggregation's
fallback, costs and resume. No official code could be found, so there is no comparison with one.

Hand-derived numbers: the two quadratic clients of helpers_2025 (K = 2, η = 0.1, θ⁰ = (0.5, −0.5)),
ρ_max = 0.3, α_ρ = 0.5, κ = 0.7, γ = 0.9, β = 0.6 (five different values, so exchanging two of them
changes θ), three rounds. Round 1 has u = 0 (c_i = 0); the alignments are then c = (0.628, 0.847) and
(−0.159, 0.900), inside both clamps, so every term reaches θ: ρ_i = (0.192, 0.069) in round 1, the
weights (0.779, 0.221), (0.676, 0.324), (0.495, 0.505). Derived by hand-written NumPy outside the
repository (10 digits, tolerance 1e-9). While writing the test, nine changes to the parts were tried once
each (a script outside the repository): v_i = +g instead of −g, 1 + κc_i, ρ_max(1 + α_ρ h^adj), the pilot
redone at every step, ρ_i = ρ_max (α_ρ ignored), the weight's 1 − βc_i, its (1 + γh^adj) multiplied,
u from the unweighted mean step, and u left at 0. Each made this test fail."""
from __future__ import annotations

import pytest
import torch

from fedflat.training.algorithms import build_algorithm
from fedflat.training.algorithms.parts import ClientContext, ClientResult, ConfigError, RoundResult, ServerState
from fedflat.training.algorithms.presets import Algorithm, Preset
from fedflat.training.algorithms.reductions import rho0_base
from fedflat.training.fl.round_hooks import BYTES_PER_FLOAT

from .helpers_2025 import close, drive, same
from .helpers_sam import make_sim

HP = {"rho": 0.3, "scam_alpha": 0.5, "scam_kappa": 0.7, "scam_gamma": 0.9, "scam_beta": 0.6}


def test_fedscam_hand_derived(float64):
    thetas, srv, _ = drive("fedscam", HP, rounds=3)
    close(thetas[0], [0.6704108882, -0.1509928895])
    close(thetas[1], [0.7663763116, 0.2088787037])
    close(thetas[2], [0.7520214395, 0.6046348246])
    close(srv.state["scam_u"], [-0.0362481782, 0.9993428188])  # (θ³ − θ²)/‖·‖


# ------------------------------------------------------------------------------ reductions
def test_without_modulation_it_is_fedsam(tmp_path, float64):
    """α_ρ = γ = β = 0: every client's radius is ρ_max and the weights are p_i (ρ = 0: test_rho0_reductions)."""
    same("fedscam", {"rho": 0.1, "scam_alpha": 0.0, "scam_gamma": 0.0, "scam_beta": 0.0}, "fedsam", {"rho": 0.1},
         tmp_path)


@pytest.mark.parametrize("key,value", [("scam_alpha", 1.0), ("scam_gamma", 1.0), ("scam_beta", 0.8)])
def test_each_modulation_changes_the_run(tmp_path, float64, key, value):
    hp = {"rho": 0.1, "scam_alpha": 0.0, "scam_gamma": 0.0, "scam_beta": 0.0, key: value}
    with pytest.raises(AssertionError):
        same("fedscam", hp, "fedsam", {"rho": 0.1}, tmp_path)


def test_rho0_is_fedavg_only_with_plain_weights():
    assert rho0_base("fedscam", {"rho": 0.0, "scam_gamma": 0.0, "scam_beta": 0.0}) == ("fedavg", {})
    assert rho0_base("fedscam", {"rho": 0.0, "scam_gamma": 1.0, "scam_beta": 0.8}) is None


# ------------------------------------------------------------------------------ the server's weights
def test_weights_fall_back_to_p_where_every_client_is_zeroed(float64):
    """β = 2 and c_i = −1 make every a_i = max(0, 1 − 2) = 0: the round keeps the run's weights p_i."""
    server = build_algorithm("fedscam", {"scam_beta": 2.0}).server

    def client(cid, h_adj, c):
        return ClientResult(cid=cid, delta=torch.zeros(2), end=torch.zeros(2), up={"scam_stats": torch.tensor([h_adj, c])},
                            num_samples=1, train_loss=0.0, buffers=torch.zeros(0))

    p = torch.tensor([0.25, 0.75])
    zeroed = RoundResult(round=2, sampled=[0, 1], clients=[client(0, 1.0, -1.0), client(1, 3.0, -1.0)], weights=p)
    assert server.weights(zeroed) == pytest.approx([0.25, 0.75], abs=1e-15)
    mixed = RoundResult(round=2, sampled=[0, 1], clients=[client(0, 1.0, 0.5), client(1, 3.0, 0.0)], weights=p)
    a = [0.25 * 2.0 / (1 + 1.0), 0.75 * 1.0 / (1 + 3.0)]  # p_i max(0, 1 + βc_i)/(1 + γh_i^adj), γ = 1
    assert server.weights(mixed) == pytest.approx([a[0] / sum(a), a[1] / sum(a)], abs=1e-15)


def test_the_parts_name_their_missing_partner():
    def parts(pert, server):
        p = Preset("x", "x", pert, (), server, "test")
        algo = Algorithm(p, p.resolve({}))
        srv = ServerState(theta=torch.zeros(2), buffers=torch.zeros(0), num_clients=2)
        for part in algo.parts:
            part.init_server(srv)
        return algo, srv

    algo, srv = parts("scam", "mean")
    ctx = ClientContext(cid=0, round=1, lr=0.1, local_steps=1, theta=srv.theta, start=srv.theta, down={}, state={},
                        num_samples=1)
    with pytest.raises(ConfigError, match="'scam' perturbation needs the 'scam' server"):
        algo.perturbation.client_begin(ctx)
    algo, srv = parts("sam", "scam")
    rnd = RoundResult(round=1, sampled=[0], weights=torch.ones(1), clients=[ClientResult(
        cid=0, delta=torch.zeros(2), end=torch.zeros(2), up={}, num_samples=1, train_loss=0.0, buffers=torch.zeros(0))])
    with pytest.raises(ConfigError, match="'scam' server needs the 'scam' perturbation"):
        algo.server.apply(srv, rnd)


# ------------------------------------------------------------------------------ costs, resume
def test_cost_and_communication(tmp_path, float64):
    """2 passes per step (the pilot is the first step's own gradient); θ and u go down, Δ_i and two floats
    (h_i^adj, c_i) go up."""
    algo = build_algorithm("fedscam")
    assert algo.grad_evals_per_step == 2 and algo.client_state_names == ()
    sim, *_ = make_sim("fedscam", {}, tmp_path, rounds=1)
    row = sim.run_round(1)
    n = sim.fm.numel * BYTES_PER_FLOAT * 3  # 3 sampled clients
    assert (row["down_bytes"], row["up_bytes"]) == (2 * n, n + 2 * BYTES_PER_FLOAT * 3)


def test_resume_from_a_checkpoint_equals_the_uninterrupted_run(tmp_path, float64):
    kw = dict(rounds=4, num_clients=4, participation=0.5)
    ref, *_ = make_sim("fedscam", {}, tmp_path / "ref", **kw)
    ref.run()
    first, *_ = make_sim("fedscam", {}, tmp_path / "cut", checkpoint_every=2, **kw)
    assert first.run(stop_after=2)["status"] == "stopped"
    again, *_ = make_sim("fedscam", {}, tmp_path / "cut", checkpoint_every=2, **kw)
    again.run()
    assert torch.equal(ref.srv.theta, again.srv.theta)
