"""FedGF (docs/algorithms_2025.md "FedGF"): a hand-derived update, the official code's numbers on one tiny
input, its reductions, costs and resume.

Hand-derived numbers: the two quadratic clients of helpers_2025 (K = 2, η = 0.1, θ⁰ = (0.5, −0.5)),
ρ = 0.1, T_D = 0.5, W = 3, five rounds. The divergences D = 0.718, 0.598, 0.464, ... fill the window
[1], [1, 1], [1, 1, 0], [1, 0, 0], so the clients use c = 0 (round 1: no w̃ yet), 1, 1, 2/3, 1/3: both
interpolation weights, the pull toward w̃ and the window's sliding (W = 4 gives c = 1/2 in round 5)
are all visible in θ. The values were derived by hand-written NumPy outside the repository (10 digits,
tolerance 1e-9). While writing the test, eight changes to the part were tried once each (a script outside
the repository): g/‖g‖'s sign, w̃'s direction θ^{t−1} − θ^t, ρ dropped from w̃, c ↔ 1 − c, the offset
reading w + c(w̃ − θ) + (1 − c)ρ g/‖g‖, D from squared norms, D as the norm of the mean displacement, and
a window that never slides. Each made this test and the official-code comparison below fail."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fedflat.training.algorithms import PRESETS, build_algorithm
from fedflat.training.algorithms.parts import ClientContext, ConfigError, ServerState
from fedflat.training.algorithms.reductions import rho0_base
from fedflat.training.data.array_dataset import ArrayDataset
from fedflat.training.data.partition import Partition
from fedflat.training.fl.engine import Simulation
from fedflat.training.fl.round_hooks import BYTES_PER_FLOAT
from fedflat.core.spec import RunSpec, check_training

from .helpers_2025 import close, drive, same
from .helpers_sam import make_sim, run


def test_fedgf_hand_derived(float64):
    thetas, srv, _ = drive("fedgf", {"rho": 0.1, "gf_td": 0.5, "gf_window": 3}, rounds=5)
    close(thetas[0], [0.5683656458, 0.1512909428])  # plain SAM: no w̃ in round 1
    close(thetas[1], [0.5983959601, 0.6526596956])  # c = 1: every gradient at w̃
    close(thetas[2], [0.5930289275, 0.9519034072])
    close(thetas[3], [0.5711617991, 1.1125836074])  # c = 2/3
    close(thetas[4], [0.5450550169, 1.1951170449])  # c = 1/3: the window slid past round 1
    assert srv.extra["gf_window"] == [0, 0, 0]
    assert srv.extra["gf_divergence"] == pytest.approx(0.3622539955, abs=1e-9)


def test_the_window_slides(float64):
    """W = 4 keeps round 1's indicator: c = 1/2 in round 5, another θ."""
    thetas, srv, _ = drive("fedgf", {"rho": 0.1, "gf_td": 0.5, "gf_window": 4}, rounds=5)
    close(thetas[4], [0.5451613294, 1.2031606054])
    assert srv.extra["gf_window"] == [1, 0, 0, 0]


# ------------------------------------------------------------------------------ the official code
# hwan-sig/Official-FedGF @ 36233b7fcaa3ad0a99951eb8f74a9290e26a917f, fedlab/contrib/algorithm/fedgf.py
# (FedGfServerHandler, FedGfSerialClientTrainer), run once on CPU in float64 by a harness outside the
# repository (torch default dtype float64, cuda=False; tqdm and pynvml stubbed, as the harness needs neither):
# the input below, each client's one batch of 4 for epochs = 2 (K = 2), lr 0.1, wd 0, momentum 0,
# rho = g_rho = 0.1, T_D = 0.137, W = 3, both clients every round, equal sizes. It printed c = 0, 1, 1, 2/3,
# 1/3 for rounds 1-5, windows [1], [1, 1], [1, 1, 0], [1, 0, 0], [0, 0, 0], and these θ (W row-major, then b):
X = [[1.0, 0.5, -0.3, 0.2], [0.1, -1.0, 0.4, 0.7], [-0.5, 0.3, 0.9, -0.2], [0.6, 0.8, -0.7, 0.1],
     [0.2, 0.2, 0.5, -0.9], [-0.8, 0.4, 0.1, 0.3], [0.9, -0.6, -0.2, 0.5], [0.0, 1.0, 0.3, -0.4]]
Y = [0, 1, 2, 0, 2, 2, 1, 0]
THETA0 = [0.1, -0.2, 0.3, 0.0, -0.1, 0.2, 0.1, -0.3, 0.2, 0.1, -0.2, 0.1, 0.05, -0.05, 0.0]
OFFICIAL = {
    2: [0.156916026155924, -0.0956333304317432, 0.240118567976305, -0.0156044348373128, -0.0627430443344489,
        0.0799127569315479, 0.0873616737845374, -0.232293750450111, 0.105827018178525, 0.115720573500195,
        -0.127480241760843, 0.047898185287424, 0.0621563047878168, -0.0777894086352891, 0.0156331038474723],
    3: [0.183982195478565, -0.0457687578173211, 0.211148717270041, -0.0228159651282522, -0.0448752786976748,
        0.0227507864691654, 0.0817857016724529, -0.200061029395274, 0.0608930832191101, 0.123017971348156,
        -0.0929344189424935, 0.022876994523526, 0.0665505304645898, -0.0895245978507233, 0.0229740673861335],
    5: [0.234620444280201, 0.048732132515655, 0.155490829023404, -0.0357922431899154, -0.0107999796666526,
        -0.0851569641064511, 0.0723317141202334, -0.139315549530584, -0.0238204646135488, 0.136424831590796,
        -0.0278225431436369, -0.0248922072795006, 0.0713695239752579, -0.108648647936173, 0.0372791239609155],
}
OFFICIAL_HP = {"rho": 0.1, "gf_td": 0.137, "gf_window": 3}


def official_input_sim(tmp_path):
    x, y = torch.tensor(X), torch.tensor(Y)
    clients = [np.arange(0, 4), np.arange(4, 8)]
    hist = np.stack([np.bincount(np.asarray(Y)[c], minlength=3) for c in clients])
    training = check_training({"num_clients": 2, "participation": 1.0, "rounds": 5, "local_steps": 2,
                               "batch_size": 4, "lr": 0.1, "lr_decay": 1.0, "weight_decay": 0.0,
                               "clip_grad_norm": 0.0, "eval_every": 1, "checkpoint_every": 0})
    spec = RunSpec("tiny", "manual", "linear", "fedgf", 0, PRESETS.get("fedgf").resolve(OFFICIAL_HP), {}, training)
    sim = Simulation(spec, ArrayDataset("tiny", x, y, x, y, 3), Partition(clients, hist, {"spec": "manual", "seed": 0}),
                     tmp_path, progress=False)
    sim.srv.theta.copy_(torch.tensor(THETA0))
    return sim


def test_the_engine_equals_the_official_code(tmp_path, float64):
    thetas = run(official_input_sim(tmp_path), 5)
    for t, expected in OFFICIAL.items():
        assert torch.allclose(thetas[t], torch.tensor(expected), atol=1e-12, rtol=0), t


def test_one_step_of_the_official_equations(float64):
    """Round 4's first step of client 0 (c = 2/3, w̃ from the official θ² and θ³), written from fedgf.py's
    equations with autograd on the linear model, against the part's step."""
    rho, lr, c = 0.1, 0.1, 2.0 / 3.0
    th2, th3 = torch.tensor(OFFICIAL[2]), torch.tensor(OFFICIAL[3])
    x, y = torch.tensor(X[:4]), torch.tensor(Y[:4])

    def grad(point):
        p = point.detach().clone().requires_grad_(True)
        loss = F.cross_entropy(x @ p[:12].view(3, 4).T + p[12:], y)
        (g,) = torch.autograd.grad(loss, p)
        return loss.detach(), g

    tilde = th3 + rho * (th2 - th3) / (th2 - th3).norm()  # calc_perturbation
    g = grad(th3)[1]
    expected = th3 - lr * grad(c * tilde + (1 - c) * (th3 + rho * g / g.norm()))[1]  # weighted_sum, then the step

    algo = build_algorithm("fedgf", OFFICIAL_HP)
    srv = ServerState(theta=th3.clone(), buffers=torch.zeros(0), num_clients=2)
    algo.perturbation.init_server(srv)
    srv.state["gf_prev"], srv.extra["gf_window"] = th2.clone(), [1, 1, 0]
    down = algo.perturbation.downlink(srv)
    ctx = ClientContext(cid=0, round=4, lr=lr, local_steps=2, theta=srv.theta, start=srv.theta, down=down,
                        state={}, num_samples=4)
    algo.perturbation.client_begin(ctx)
    _, step = algo.perturbation.gradient(ctx, th3.clone(), None, lambda p, _: grad(p))
    assert torch.allclose(th3 - lr * step, expected, atol=1e-14, rtol=0)


# ------------------------------------------------------------------------------ reductions
def test_an_empty_window_is_fedsam(tmp_path, float64):
    """W = 0 keeps c at 0: the client's point is FedSAM's (and at ρ = 0 FedAvg's: test_rho0_reductions)."""
    same("fedgf", {"rho": 0.1, "gf_window": 0, "gf_td": 0.0}, "fedsam", {"rho": 0.1}, tmp_path)


@pytest.mark.parametrize("hp,base,base_hp", [
    ({"rho": 0.1, "gf_window": 3, "gf_td": 0.0}, "fedsam", {"rho": 0.1}),  # c = 1 from round 2
    ({"rho": 0.0, "gf_window": 3, "gf_td": 0.0}, "fedavg", {}),  # ρ = 0 still pulls the point toward θ
])
def test_the_global_pull_is_not_trivial(tmp_path, float64, hp, base, base_hp):
    with pytest.raises(AssertionError):
        same("fedgf", hp, base, base_hp, tmp_path)


def test_rho0_is_fedavg_only_with_an_empty_window():
    assert rho0_base("fedgf", {"rho": 0.0, "gf_window": 0, "gf_td": 0.5}) == ("fedavg", {})
    assert rho0_base("fedgf", {"rho": 0.0, "gf_window": 30, "gf_td": 0.5}) is None


# ------------------------------------------------------------------------------ settings, costs, resume
@pytest.mark.parametrize("hp,match", [({"gf_window": 2.5}, "gf_window: must be an integer"),
                                      ({"gf_window": -1}, "gf_window"), ({"gf_td": -0.1}, "gf_td")])
def test_bad_settings_name_their_key(hp, match):
    with pytest.raises(ConfigError, match=match):
        build_algorithm("fedgf", hp)


def test_cost_and_communication(tmp_path, float64):
    """2 passes per step; w̃ goes down from round 2 (round 1: θ alone), Δ_i alone goes up."""
    algo = build_algorithm("fedgf")
    assert algo.grad_evals_per_step == 2 and algo.client_state_names == ()
    sim, *_ = make_sim("fedgf", {}, tmp_path, rounds=2)
    n = sim.fm.numel * BYTES_PER_FLOAT * 3  # 3 sampled clients
    first, second = sim.run_round(1), sim.run_round(2)
    assert (first["down_bytes"], second["down_bytes"], second["up_bytes"]) == (n, 2 * n, n)


def test_resume_from_a_checkpoint_equals_the_uninterrupted_run(tmp_path, float64):
    """The window (srv.extra) and θ^{t−1} (srv.state) survive a checkpoint; T_D = 0.28 makes the window
    mixed on this problem ([0, 1, 0] after round 3, [1, 0, 1] after round 4)."""
    kw = dict(rounds=5, num_clients=4, participation=0.5)
    hp = {"gf_td": 0.28, "gf_window": 3}
    ref, *_ = make_sim("fedgf", hp, tmp_path / "ref", **kw)
    ref.run()
    first, *_ = make_sim("fedgf", hp, tmp_path / "cut", checkpoint_every=2, **kw)
    assert first.run(stop_after=2)["status"] == "stopped"
    again, *_ = make_sim("fedgf", hp, tmp_path / "cut", checkpoint_every=2, **kw)
    again.run()
    assert torch.equal(ref.srv.theta, again.srv.theta)
    assert ref.srv.extra["gf_window"] == again.srv.extra["gf_window"]
