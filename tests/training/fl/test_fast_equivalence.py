"""The compiled fast path (training.backend: compile) gives the eager path's parameters after a round.

Tiny image problem (1x6x6, 3 classes; fl/fast_helpers.py), 3 clients, rounds of 3 local steps with
clipping, weight decay and momentum on, so every term of the local step runs through the compiled
gradient. Parts with a fused form run as one compiled graph per step (training/fl/fused.py FusedStep: batch
gather and normalisation inside, or an eagerly augmented batch): FedAvg, FedSAM, FedSynSAM's mixed
ascent, FedASAM's adaptive ascent, FedSMOO's and FedTOGA's corrected ascents, shifted points (FedLESAM) and
linear corrections (FedProx, SCAFFOLD, FedDyn, ...); others (local Nesterov) go through the per-call CompiledGrad.
"""
import copy

import pytest
import torch
import torch.nn as nn

from fedflat.training.algorithms import PRESETS
from fedflat.core.errors import ConfigError
from fedflat.training.fl.engine import Simulation
from fedflat.training.fl.evaluate import evaluate
from fedflat.training.fl.fast import _COMPILED_FORWARD, AUTO_MIN_STEPS, compile_blocker, resolve_backend
from fedflat.training.fl.fused import fused_blocker
from fedflat.training.fl.flat import FlatModel
from fedflat.training.fl.round_hooks import RoundHook
from fedflat.core.spec import RunSpec, check_training
from fast_helpers import CLIENTS, Q4, SYN_HP, _problem, _sim, _with_synthetic_set

EPOCHS = {"local_epochs": 1, "batch_size": 3}  # 8 samples per client: batches of 3, 3 and a partial 2


@pytest.mark.parametrize("model,algorithm,hp,augment,fused,tr", [
    ("mlp", "fedavg", {}, False, True, {}), ("mlp", "fedsam", {"rho": 0.5}, False, True, {}),
    ("cnn_small", "fedsam", {"rho": 0.5}, True, True, {}), ("linear", "fedprox", {"mu": 0.5}, False, True, {}),
    ("mlp", "fedsam", {"rho": 0.5}, False, True, EPOCHS), ("linear", "fedprox", {"mu": 0.5}, False, True, EPOCHS),
    ("linear", "fedasam", {"rho": 0.5}, False, True, {}), ("linear", "fedlnag", {}, False, False, {})])
def test_compile_matches_eager_after_a_round(tmp_path, model, algorithm, hp, augment, fused, tr):
    eager = _sim(tmp_path, model, algorithm, "eager", hp, augment, **tr)
    fast = _sim(tmp_path, model, algorithm, "compile", hp, augment, **tr)
    assert fast.backend == "compile" and eager.backend == "eager"
    assert (fused_blocker(fast) is None) == fused and fused_blocker(eager) is not None
    assert torch.equal(eager.srv.theta, fast.srv.theta)
    theta0 = eager.srv.theta.clone()
    eager.run_round(1)
    fast.run_round(1)
    moved = (eager.srv.theta - theta0).abs().max()
    assert moved > 1e-2  # the round did move the model, so agreement below is not trivial
    torch.testing.assert_close(fast.srv.theta, eager.srv.theta, rtol=0, atol=1e-5)
    # evaluation through the compiled inference forward (models with convolutions) sees the new parameters
    assert (fast.fm.module in _COMPILED_FORWARD) == (model == "cnn_small")  # an MLP's evaluation stays eager
    ev = lambda s: evaluate(s.fm, s.srv.theta, s.srv.buffers, s.data, "train", 7)
    e, f = ev(eager), ev(fast)
    assert abs(e["loss"] - f["loss"]) < 1e-5 and e["acc"] == f["acc"]
    assert abs(f["loss"] - evaluate(fast.fm, theta0, fast.srv.buffers, fast.data, "train", 7)["loss"]) > 1e-4
    twin = copy.deepcopy(fast.fm.module).eval()  # a copy runs its own (eager) forward on its own weights
    with torch.inference_mode():
        x = fast.data.normalise(fast.data.test_x)
        torch.nn.init.zeros_(list(twin.parameters())[-1])
        assert not torch.allclose(twin(x), fast.fm.module.eval()(x))
    fast.fm.module.train()


@pytest.mark.parametrize("model,hp,augment", [("mlp", SYN_HP, False), ("cnn_small", SYN_HP, True),
                                              ("mlp", {**SYN_HP, "syn_batch": 2}, False)])
def test_fused_fedsynsam_matches_eager_with_the_synthetic_gradient_and_a_compressed_uplink(tmp_path, model, hp, augment):
    """Round 2 > R: the ascent direction is β∇F(w; ξ) + (1−β)∇F(w; ζ) in both paths, under Q4 uplinks."""
    eager = _with_synthetic_set(_sim(tmp_path, model, "fedsynsam", "eager", hp, augment, uplink=Q4))
    fast = _with_synthetic_set(_sim(tmp_path, model, "fedsynsam", "compile", hp, augment, uplink=Q4))
    sam = _sim(tmp_path / "sam", model, "fedsam", "compile", {"rho": SYN_HP["rho"]}, augment, uplink=Q4)
    assert fused_blocker(fast) is None
    theta0 = eager.srv.theta.clone()
    for s in (eager, fast, sam):
        s.run_round(2)
    assert (eager.srv.theta - theta0).abs().max() > 1e-2
    torch.testing.assert_close(fast.srv.theta, eager.srv.theta, rtol=0, atol=1e-5)
    assert (sam.srv.theta - fast.srv.theta).abs().max() > 1e-3  # the synthetic term did change the step


@pytest.mark.parametrize("algorithm,hp", [("fedavg", {}), ("fedsam", {"rho": 0.5})])
def test_fused_step_with_a_compressed_uplink_matches_eager(tmp_path, algorithm, hp):
    eager = _sim(tmp_path, "mlp", algorithm, "eager", hp, uplink=Q4)
    fast = _sim(tmp_path, "mlp", algorithm, "compile", hp, uplink=Q4)
    plain = _sim(tmp_path / "plain", "mlp", algorithm, "compile", hp)
    assert fused_blocker(fast) is None
    for s in (eager, fast, plain):
        s.run_round(1)
    torch.testing.assert_close(fast.srv.theta, eager.srv.theta, rtol=0, atol=1e-5)
    assert (plain.srv.theta - fast.srv.theta).abs().max() > 1e-3  # the quantizer did act on the update


@pytest.mark.parametrize("algorithm,hp,base", [
    ("scaffold", {}, "fedavg"), ("feddyn", {"alpha": 0.5}, "fedavg"), ("fedcm", {"cm_alpha": 0.5}, "fedavg"),
    ("fedsagd", {"beta": 0.5, "prox_lam": 0.5, "decay_mu": 0.1}, "fedavg"), ("feddc", {"alpha": 0.5}, "scaffold"),
    ("fedgamma", {"rho": 0.5}, "fedsam"), ("fedspeed", {"rho": 0.5, "alpha": 0.5}, "fedsam"),
    ("fedlesam", {"rho": 0.5, "lesam_first": "init"}, "fedavg"),
    ("fedlesam_d", {"rho": 0.5, "alpha": 0.5, "lesam_dir": "global"}, "feddyn"),
    ("fedlesam_s", {"rho": 0.5, "lesam_dir": "global"}, "scaffold"),
    ("fedsmoo", {"rho": 0.5, "alpha": 0.5}, "fedspeed"),  # dual-corrected ascent: d = g − μ_i − s, μ_i moves
    ("fedsmoo", {"rho": 0.5, "alpha": 0.5, "smoo_upload": "mu"}, "fedspeed"),
    ("fedtoga", {"rho": 0.5, "alpha": 0.5, "kappa": 1.0, "beta": 0.8}, "fedspeed"),
    ("fedgloss", {"rho": 0.5, "alpha": 0.5, "server_rho": 0.5}, "fedspeed"),  # server SAM start point w̃ in round 2
    ("fedasam", {"rho": 0.5, "asam_eta": 0.2}, "fedsam"), ("fedasam", {"rho": 0.5, "asam_eta": 0.0}, "fedsam")])  # d = g + κΔ; g + βΔ
def test_fused_corrections_and_shifted_points_match_eager(tmp_path, algorithm, hp, base):
    """Two rounds (control variates, duals and server momenta are non-zero in round 2) under Q4 uplinks;
    `base` is the same algorithm without the fused term, so a dropped term would show."""
    sims = {k: _sim(tmp_path / k, "mlp", alg, be, h, uplink=Q4, weight_decay=0.0 if alg == "fedsagd" else 1e-3)
            for k, alg, be, h in (("eager", algorithm, "eager", hp), ("fast", algorithm, "compile", hp),
                                  ("base", base, "eager", {k: v for k, v in hp.items() if k in PRESETS.get(base).param_specs()}))}
    assert fused_blocker(sims["fast"]) is None
    for t in (1, 2):
        for s in sims.values():
            s.run_round(t)
    torch.testing.assert_close(sims["fast"].srv.theta, sims["eager"].srv.theta, rtol=0, atol=1e-5)
    assert (sims["base"].srv.theta - sims["eager"].srv.theta).abs().max() > 1e-3


def test_compiled_client_result_does_not_depend_on_processing_order(tmp_path):
    sim = _sim(tmp_path, "mlp", "fedsam", "compile", {"rho": 0.5})
    start, lr = sim.srv.theta.clone(), sim.lr_at(1)
    alone = sim.local_train(2, 1, start, {}, lr).delta.clone()
    sim.local_train(0, 1, start, {}, lr)  # another client in between must not change client 2's draws
    again = sim.local_train(2, 1, start, {}, lr).delta
    assert torch.equal(alone, again)


def test_backend_is_validated_and_falls_back(tmp_path):
    with pytest.raises(ConfigError, match="training.backend"):
        check_training({"backend": "jit"})
    fm_bn = FlatModel(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))
    fm_do = FlatModel(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)))
    fm_ok = FlatModel(nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)))
    assert "BatchNorm" in compile_blocker(fm_bn, False) and "dropout" in compile_blocker(fm_do, False)
    assert compile_blocker(fm_ok, True) is not None and compile_blocker(fm_ok, False) is None
    cpu = torch.device("cpu")
    assert resolve_backend("auto", fm_bn, cpu, False) == "eager"
    assert resolve_backend("auto", fm_ok, cpu, False) == "compile"
    fm_gn = FlatModel(nn.Sequential(nn.Conv2d(2, 4, 3), nn.GroupNorm(2, 4)))
    assert resolve_backend("auto", fm_gn, cpu, False) == "eager"  # measured slower compiled (ResNet-18-GN)
    assert resolve_backend("compile", fm_gn, cpu, False) == "compile"  # still allowed when asked
    fm_in = FlatModel(nn.Sequential(nn.Conv2d(2, 4, 3), nn.GroupNorm(4, 4)))  # instance norm: ConvNet-3 won
    assert resolve_backend("auto", fm_in, cpu, False) == "compile"
    assert resolve_backend("auto", fm_ok, cpu, False, steps=AUTO_MIN_STEPS - 1) == "eager"  # warm-up not paid back
    assert resolve_backend("auto", fm_ok, cpu, False, steps=AUTO_MIN_STEPS) == "compile"
    assert resolve_backend("compile", fm_ok, cpu, False, steps=1) == "compile"
    # a step that does not fuse: the per-call path loses on an MLP (eager) and wins on convolutions
    assert resolve_backend("auto", fm_ok, cpu, False, unfused="FedSMOO's correction") == "eager"
    assert resolve_backend("auto", fm_in, cpu, False, unfused="FedSMOO's correction") == "compile"
    assert resolve_backend("compile", fm_ok, cpu, False, unfused="FedSMOO's correction") == "compile"
    with pytest.raises(ConfigError, match="'compile' unsupported"):
        resolve_backend("compile", fm_do, cpu, False)


def test_auto_stays_eager_without_a_cxx_compiler(monkeypatch):
    import fedflat.training.fl.fast as fast

    fm_ok = FlatModel(nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)))
    assert resolve_backend("auto", fm_ok, torch.device("cpu"), False) == "compile"
    monkeypatch.setattr(fast.shutil, "which", lambda name: None)
    assert resolve_backend("auto", fm_ok, torch.device("cpu"), False) == "eager"


def test_auto_compiles_long_runs_where_the_step_fuses_or_the_model_convolves(tmp_path):
    long = {"rounds": AUTO_MIN_STEPS}  # 3 clients x 3 steps per round
    assert _sim(tmp_path / "a", "mlp", "fedsam", "auto", {"rho": 0.5}, **long).backend == "compile"  # fused
    assert _sim(tmp_path / "b", "mlp", "fedlnag", "auto", **long).backend == "eager"  # per-call, GEMM-bound MLP
    assert _sim(tmp_path / "c", "cnn_small", "fedlnag", "auto", **long).backend == "compile"  # per-call, convolutions
    assert _sim(tmp_path / "d", "mlp", "fedsam", "auto", {"rho": 0.5}).backend == "eager"  # 9 steps: no pay-back
    assert check_training({})["backend"] == "auto"


def test_backend_does_not_change_the_run_id():
    tr = check_training({})
    a = RunSpec("d", "p", "mlp", "fedavg", 0, {}, {}, {**tr, "backend": "eager"})
    b = RunSpec("d", "p", "mlp", "fedavg", 0, {}, {}, {**tr, "backend": "compile"})
    c = RunSpec("d", "p", "mlp", "fedavg", 0, {}, {}, {**tr, "eval_subset": 100})
    assert a.digest() == b.digest() != c.digest()


def test_eval_subset_limits_the_evaluated_samples(tmp_path, monkeypatch):
    import fedflat.training.fl.engine as engine

    seen = []
    real = engine.evaluate
    monkeypatch.setattr(engine, "evaluate", lambda *a, **k: seen.append(r := real(*a, **k)) or r)
    data, part = _problem()
    training = check_training({"num_clients": CLIENTS, "participation": 1.0, "rounds": 1, "local_steps": 1,
                               "batch_size": 4, "checkpoint_every": 0, "eval_subset": 5})
    spec = RunSpec("tiny_img", "manual", "linear", "fedavg", 0, PRESETS.get("fedavg").resolve({}), {}, training)
    Simulation(spec, data, part, tmp_path, progress=False).run()
    assert [r["n"] for r in seen] == [5]  # the test split has 6 samples


def test_fused_step_only_for_plain_parts(tmp_path):
    sim = _sim(tmp_path, "mlp", "fedavg", "compile")
    assert fused_blocker(sim) is None
    assert sim.path == "fused"

    class Reader(RoundHook):  # an analysis hook that sees every local gradient
        def local_gradient(self, sim, ctx, w, batch, loss, g):
            return g

    with sim.evaluating_under(sim.algo, hooks=(Reader(),)):
        assert "hook" in fused_blocker(sim) and sim.path == "eager"
    assert fused_blocker(sim) is None and sim.path == "fused"
    assert "not fused" in fused_blocker(_sim(tmp_path / "proj", "mlp", "proj_l2", "compile"))
    assert "TOGA" in fused_blocker(_sim(tmp_path / "toga", "mlp", "fedtoga", "compile", {"toga_mode": "N"}))
    assert "np_mode" in fused_blocker(_sim(tmp_path / "smoo", "mlp", "fedsmoo_np", "compile"))
    assert "LocalNesterov" in fused_blocker(_sim(tmp_path / "lnag", "mlp", "fedlnag", "compile"))


def test_compiled_max_pool_backward_is_aten_bit_for_bit():
    """_MaxPool2x2 (used inside compiled graphs) routes gradients exactly as aten's max-pool,
    including ties (first maximum of the window wins) and odd sizes (last row/column dropped)."""
    from fedflat.training.fl.kernels import CompiledMaxPool2d, _MaxPool2x2, use_compiled_pools

    g = torch.Generator().manual_seed(0)
    x = torch.randint(-2, 3, (2, 3, 5, 7), generator=g).double()  # small integers: many ties, incl. at 0
    x[0, 0, :2, :2] = 1.0  # a window that is one four-way tie
    w = torch.randn(2, 3, 2, 3, generator=g, dtype=torch.float64)
    a = x.clone().requires_grad_()
    b = x.clone().requires_grad_()
    out_ref = torch.nn.functional.max_pool2d(torch.relu(a), 2)
    out = _MaxPool2x2.apply(torch.relu(b))[0]
    assert torch.equal(out, out_ref)
    (out_ref * w).sum().backward()
    (out * w).sum().backward()
    assert torch.equal(b.grad, a.grad) and a.grad.abs().sum() > 0
    c = x.clone().requires_grad_()  # without the ReLU: ties among non-zero values carry gradient
    (_MaxPool2x2.apply(c)[0] * w).sum().backward()
    d = x.clone().requires_grad_()
    (torch.nn.functional.max_pool2d(d, 2) * w).sum().backward()
    assert torch.equal(c.grad, d.grad) and c.grad[0, 0, 0, 0] != 0 and c.grad[0, 0, 0, 1] == 0
    net = nn.Sequential(nn.MaxPool2d(2), nn.MaxPool2d(3), nn.Sequential(nn.MaxPool2d(2, padding=1), nn.MaxPool2d((2, 2))))
    assert use_compiled_pools(net) == 2 and isinstance(net[0], CompiledMaxPool2d) and isinstance(net[2][1], CompiledMaxPool2d)
    assert torch.equal(net[0](x), torch.nn.functional.max_pool2d(x, 2))  # eager: aten's kernel


@pytest.mark.parametrize("shape", [(2, 3, 6, 8), (2, 3, 5, 7), (1, 16, 9, 4)])
def test_fused_relu_max_pool_is_aten_bit_for_bit(shape):
    """_ReluMaxPool2x2 (ReLU + 2x2 max-pool in one channels-last pass, used inside compiled graphs)
    gives aten's relu-then-max-pool values and gradients exactly: ties (first maximum of the window,
    incl. four-way ties and windows of zeros/negatives, where relu'(0) = 0), odd sizes (last
    row/column dropped), eagerly and compiled."""
    from fedflat.training.fl.kernels import _ReluMaxPool2x2

    g = torch.Generator().manual_seed(1)
    x = torch.randint(-2, 3, shape, generator=g).float()  # small integers: many ties, incl. at 0
    x[0, 0, :2, :2] = 1.0  # a four-way positive tie
    x[0, 1, :2, :2] = -1.0  # a window with nothing positive
    ho, wo = shape[2] // 2, shape[3] // 2
    w = torch.randn(shape[0], shape[1], ho, wo, generator=g)

    def ref(t):
        return torch.nn.functional.max_pool2d(torch.relu(t), 2)

    def fused(t):
        return _ReluMaxPool2x2.apply(t)[0]

    a = x.clone().requires_grad_()
    out_ref = ref(a)
    (out_ref * w).sum().backward()
    assert a.grad[0, 0, 0, 0] == w[0, 0, 0, 0] and a.grad[0, 0, :2, :2].count_nonzero() == 1
    for fn in (fused, torch.compile(fused, fullgraph=True, dynamic=False)):
        b = x.clone().requires_grad_()
        out = fn(b)
        (out * w).sum().backward()
        assert torch.equal(out, out_ref) and torch.equal(b.grad, a.grad)


def test_relu_before_pool_is_fused_only_while_compiling():
    from fedflat.training.fl.kernels import CompiledMaxPool2d, _ReLUIntoPool, use_compiled_pools

    net = nn.Sequential(nn.Conv2d(2, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 4, 1), nn.MaxPool2d(2))
    x = torch.randn(3, 2, 11, 11)
    before = net(x)
    assert use_compiled_pools(net) == 2
    assert type(net[1]) is _ReLUIntoPool and net[2].relu and not net[4].relu and isinstance(net[4], CompiledMaxPool2d)
    assert torch.equal(net(x), before)  # eager: aten's relu and pool kernels


def test_compiled_lenet5_gradient_matches_eager():
    """LeNet-5 (the target-2 model, both relu+pool pairs fused) through the compiled flat gradient."""
    from fedflat.training.fl.fast import make_flat_grad
    from fedflat.training.fl.kernels import use_compiled_pools
    from fedflat.training.models import build_model

    torch.manual_seed(0)
    fm = FlatModel(build_model("lenet5", (3, 32, 32), 10))
    x, y = torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))
    loss_e, g_e = fm.grad_at(fm.flat.clone(), x, y)
    g_e = g_e.clone()
    assert use_compiled_pools(fm.module) == 2
    loss_c, g_c = torch.compile(make_flat_grad(fm), fullgraph=True, dynamic=False)(fm.flat.clone(), x, y)
    torch.testing.assert_close(loss_c, loss_e, rtol=0, atol=1e-6)
    torch.testing.assert_close(g_c, g_e, rtol=1e-4, atol=1e-6)
