"""Every baseline preset: two rounds, 3 of 4 clients sampled, lr decaying between rounds, weight
decay on, compared with a re-derivation of the paper's rules in NumPy (closed-form softmax
gradients, no fedflat algorithm code). Then the reductions the papers state, bad input, and a
smoke run on digits."""
import numpy as np
import pytest
import torch

from fedflat.training.algorithms import PRESETS, build_algorithm
from fedflat.core.errors import ConfigError

from .helpers_baselines import SETTINGS, Run, tiny_problem

BASELINES = ["fedprox", "scaffold", "feddyn", "fedavgm", "fedadam", "fedyogi", "fedcm", "fedacg", "fednova",
             "feddc", "mimelite", "fedlnag", "fedanag", "fedsagd"]


pytestmark = pytest.mark.usefixtures("float64")  # exact hand-derived comparisons


def local(r, t, cid, start, direction):
    """K local SGD steps on the client's full batch: w ← w − lr_t·(direction(w, g, k) + wd·w)."""
    w, lr = start.copy(), r.lr(t)
    for k in range(r.K):
        w = w - lr * (direction(w, r.grad(w, cid), k) + r.wd * w)
    return w


def check(r, expected_thetas, got):
    for e, g in zip(expected_thetas, got):
        np.testing.assert_allclose(g, e, rtol=0, atol=1e-10)


def fedavg_ref(r, rounds=2):
    th, out = r.theta0.copy(), []
    for t in range(1, rounds + 1):
        th = np.mean([local(r, t, i, th, lambda w, g, k: g) for i in r.sampled(t)], 0)
        out.append(th)
    return out


def assert_differs_from_fedavg(r, got):
    assert np.abs(got[-1] - fedavg_ref(r)[-1]).max() > 1e-4  # the test sees the method's terms


# ------------------------------------------------------------------------------------ presets
def test_fedprox(tmp_path):
    mu = 0.5
    r = Run("fedprox", {"mu": mu}, tmp_path)
    got = r.rounds(2)
    th, exp = r.theta0.copy(), []
    for t in (1, 2):
        th0 = th
        th = np.mean([local(r, t, i, th0, lambda w, g, k: g + mu * (w - th0)) for i in r.sampled(t)], 0)
        exp.append(th)
    check(r, exp, got)
    assert_differs_from_fedavg(r, got)


def test_scaffold(tmp_path):
    r = Run("scaffold", {}, tmp_path)
    got = r.rounds(2)
    th, c, ci, exp = r.theta0.copy(), np.zeros_like(r.theta0), {}, []
    for t in (1, 2):
        ends, dcs = [], []
        for i in r.sampled(t):
            cii = ci.get(i, np.zeros_like(th))
            w = local(r, t, i, th, lambda w, g, k: g - cii + c)
            new = cii - c + (th - w) / (r.K * r.lr(t))  # option II
            dcs.append(new - cii)
            ci[i] = new
            ends.append(w)
        th = np.mean(ends, 0)
        c = c + np.sum(dcs, 0) / r.N
        exp.append(th)
    check(r, exp, got)
    assert_differs_from_fedavg(r, got)


def test_feddyn(tmp_path):
    a = 0.3
    r = Run("feddyn", {"alpha": a}, tmp_path)
    got = r.rounds(2)
    th, h, hi, exp = r.theta0.copy(), np.zeros_like(r.theta0), {}, []
    for t in (1, 2):
        ends = []
        for i in r.sampled(t):
            hii = hi.get(i, np.zeros_like(th))
            w = local(r, t, i, th, lambda w, g, k: g - hii + a * (w - th))
            hi[i] = hii - a * (w - th)
            ends.append(w)
        h = h - a * np.sum([w - th for w in ends], 0) / r.N
        th = np.mean(ends, 0) - h / a
        exp.append(th)
    check(r, exp, got)


def test_fedavgm(tmp_path):
    lam = 0.7
    r = Run("fedavgm", {"lam": lam}, tmp_path)
    got = r.rounds(2)
    th, m, exp = r.theta0.copy(), np.zeros_like(r.theta0), []
    for t in (1, 2):
        m = lam * m + np.mean([local(r, t, i, th, lambda w, g, k: g) - th for i in r.sampled(t)], 0)
        th = th + m
        exp.append(th)
    check(r, exp, got)
    assert_differs_from_fedavg(r, got)


@pytest.mark.parametrize("name", ["fedadam", "fedyogi"])
def test_fedadam_fedyogi(tmp_path, name):
    eta, b1, b2, tau = 0.05, 0.9, 0.99, 1e-3
    r = Run(name, {"server_lr": eta}, tmp_path)
    got = r.rounds(2)
    th, m, v, exp = r.theta0.copy(), np.zeros_like(r.theta0), np.full_like(r.theta0, tau ** 2), []
    for t in (1, 2):
        d = np.mean([local(r, t, i, th, lambda w, g, k: g) - th for i in r.sampled(t)], 0)
        m = b1 * m + (1 - b1) * d
        v = b2 * v + (1 - b2) * d * d if name == "fedadam" else v - (1 - b2) * d * d * np.sign(v - d * d)
        th = th + eta * m / (np.sqrt(v) + tau)
        exp.append(th)
    check(r, exp, got)


def test_fedcm(tmp_path):
    al = 0.3
    r = Run("fedcm", {"cm_alpha": al}, tmp_path)
    got = r.rounds(2)
    th, d, exp = r.theta0.copy(), np.zeros_like(r.theta0), []
    for t in (1, 2):
        mean_delta = np.mean([local(r, t, i, th, lambda w, g, k: al * g + (1 - al) * d) - th for i in r.sampled(t)], 0)
        d = -mean_delta / (r.K * r.lr(t))  # gradient estimate, with the lr of the round that made it
        th = th + mean_delta
        exp.append(th)
    check(r, exp, got)


def test_fedacg(tmp_path):
    lam, mu = 0.85, 0.4
    r = Run("fedacg", {"lam": lam, "mu": mu}, tmp_path)
    got = r.rounds(2)
    th, m, exp = r.theta0.copy(), np.zeros_like(r.theta0), []
    for t in (1, 2):
        y = th + lam * m  # look-ahead start; the prox pulls to it
        m = lam * m + np.mean([local(r, t, i, y, lambda w, g, k: g + mu * (w - y)) - y for i in r.sampled(t)], 0)
        th = th + m
        exp.append(th)
    check(r, exp, got)
    assert_differs_from_fedavg(r, got)


def test_fednova_equal_steps_is_fedavg(tmp_path):
    r = Run("fednova", {}, tmp_path)
    got = r.rounds(2)
    th, exp = r.theta0.copy(), []
    for t in (1, 2):
        deltas = [local(r, t, i, th, lambda w, g, k: g) - th for i in r.sampled(t)]
        a = r.K  # a_i = τ_i for plain local SGD
        th = th + (a * 1.0) * np.mean([dl / a for dl in deltas], 0)  # τ_eff · Σ p_i Δ_i/a_i
        exp.append(th)
    check(r, exp, got)


@pytest.mark.parametrize("agg", ["active", "all"])
def test_feddc(tmp_path, agg):
    a = 0.3
    r = Run("feddc", {"alpha": a, "feddc_agg": agg}, tmp_path)
    got = r.rounds(2)
    th, c, ci, hi, H, exp = r.theta0.copy(), np.zeros_like(r.theta0), {}, {}, np.zeros_like(r.theta0), []
    for t in (1, 2):
        ends, corr, dcs = [], [], []
        for i in r.sampled(t):
            z = np.zeros_like(th)
            cii, hii = ci.get(i, z), hi.get(i, z)
            w = local(r, t, i, th, lambda w, g, k: g + c - cii + a * (w + hii - th))
            new = cii - c + (th - w) / (r.K * r.lr(t))
            dcs.append(new - cii)
            ci[i], hi[i] = new, hii + (w - th)
            H = H + (w - th) / r.N
            ends.append(w)
            corr.append(w + hi[i])
        th = np.mean(corr, 0) if agg == "active" else np.mean(ends, 0) + H
        c = c + np.sum(dcs, 0) / r.N
        exp.append(th)
    check(r, exp, got)


def test_mimelite(tmp_path):
    b = 0.4
    r = Run("mimelite", {"beta": b}, tmp_path)
    got = r.rounds(3)  # round 3 is the first to see m's decay β (m⁰ = 0)
    th, m, exp = r.theta0.copy(), np.zeros_like(r.theta0), []
    for t in (1, 2, 3):
        ends = [local(r, t, i, th, lambda w, g, k: (1 - b) * g + b * m) for i in r.sampled(t)]
        g0 = np.mean([r.grad(th, i) for i in r.sampled(t)], 0)  # client gradients at the received x
        m = b * m + (1 - b) * g0
        th = np.mean(ends, 0)
        exp.append(th)
    check(r, exp, got)
    assert_differs_from_fedavg(r, got)


def test_fedlnag_in_the_papers_variables(tmp_path):
    """FedSAGD App. C.5: y = x − lr·βm, m ← βm + (1−β)∇F(y), x ← x − lr·m; the client's model is y
    (starts at θ, returns y_K), buffers averaged at the server. Weight decay off: it is applied to y."""
    b = 0.6
    r = Run("fedlnag", {"beta": b}, tmp_path, weight_decay=0.0)
    got = r.rounds(2)
    th, mbar, exp = r.theta0.copy(), np.zeros_like(r.theta0), []
    for t in (1, 2):
        lr, ys, ms = r.lr(t), [], []
        for i in r.sampled(t):
            m = mbar.copy()
            x = th + lr * b * m  # so that y⁰ = θ
            for _ in range(r.K):
                m = b * m + (1 - b) * r.grad(x - lr * b * m, i)
                x = x - lr * m
            ys.append(x - lr * b * m)
            ms.append(m)
        th, mbar = np.mean(ys, 0), np.mean(ms, 0)
        exp.append(th)
    check(r, exp, got)
    assert_differs_from_fedavg(r, got)


@pytest.mark.parametrize("name", ["fedanag", "fedsagd"])
def test_global_momentum_presets(tmp_path, name):
    b, lam, mu = 0.5, 0.2, 0.05
    hp = {"beta": b} if name == "fedanag" else {"beta": b, "prox_lam": lam, "decay_mu": mu}
    r = Run(name, hp, tmp_path)
    got = r.rounds(3)  # round 3 is the first to see v's decay β/(1+β) (v⁰ = 0)
    th, v, exp = r.theta0.copy(), np.zeros_like(r.theta0), []
    for t in (1, 2, 3):
        if name == "fedanag":
            rule = lambda w, g, k: (1 + b) * g + b * b * v  # noqa: E731
        else:  # Alg. 1 line 10: g + βv + (λ+μ)w − λθ
            rule = lambda w, g, k: g + b * v + (lam + mu) * w - lam * th  # noqa: E731
        dx = np.mean([local(r, t, i, th, rule) - th for i in r.sampled(t)], 0)
        v = b / (1 + b) * v - dx / ((1 + b) * r.lr(t) * r.K)  # line 15
        th = th + dx  # line 16, η = 1
        exp.append(th)
    check(r, exp, got)
    assert_differs_from_fedavg(r, got)


# --------------------------------------------------------------------------------- reductions
REDUCTIONS = [
    ("fedprox", {"mu": 0.0}),
    ("feddyn", {"alpha": 1e-12, "dyn_server_dual": False}),  # α→0 with the server's h/α term off
    ("fedacg", {"lam": 0.0, "mu": 0.0}),
    ("fedcm", {"cm_alpha": 1.0}),
    ("mimelite", {"beta": 0.0}),
    ("fedlnag", {"beta": 0.0}),
    ("fedanag", {"beta": 0.0}),
    # μ is FedSAGD's only decay (its engine weight decay resolves to 0): μ = FedAvg's wd gives FedAvg
    ("fedsagd", {"beta": 0.0, "prox_lam": 0.0, "decay_mu": SETTINGS["weight_decay"]}),
    ("fedavgm", {"lam": 0.0}),
    ("fednova", {}),
]


@pytest.mark.parametrize("name,hp", REDUCTIONS)
def test_reduces_to_fedavg(tmp_path, name, hp):
    r = Run(name, hp, tmp_path / "a")
    f = Run("fedavg", {}, tmp_path / "b")
    for a, b in zip(r.rounds(2), f.rounds(2)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_scaffold_first_round_is_fedavg_second_is_not(tmp_path):
    s, f = Run("scaffold", {}, tmp_path / "a").rounds(2), Run("fedavg", {}, tmp_path / "b").rounds(2)
    np.testing.assert_allclose(s[0], f[0], rtol=0, atol=1e-12)  # c = c_i = 0 in round 1
    assert np.abs(s[1] - f[1]).max() > 1e-4


def test_feddyn_server_dual_does_not_vanish_with_alpha(tmp_path):
    """The −h/α term is −(1/N)Σ past deltas whatever α is: α→0 alone is not FedAvg."""
    r, f = Run("feddyn", {"alpha": 1e-12}, tmp_path / "a"), Run("fedavg", {}, tmp_path / "b")
    assert np.abs(r.rounds(1)[0] - f.rounds(1)[0]).max() > 1e-4


# ---------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("name,hp,match", [
    ("fedacg", {"lam": 1.0}, r"lam.*\[0, 1\)"),
    ("fedprox", {"mu": -0.1}, r"mu.*\[0, inf\)"),
    ("feddyn", {"alpha": 0.0}, r"alpha.*\(0, inf\)"),
    ("fedcm", {"cm_alpha": 0.0}, r"cm_alpha.*\(0, 1\]"),
    ("fedsagd", {"beta": 1.0}, r"beta"),
    ("fedadam", {"tau": 0.0}, r"tau"),
    ("fedyogi", {"beta2": 1.5}, r"beta2"),
    ("fedprox", {"prox_anchor": "x"}, r"prox_anchor.*start, theta"),
    ("feddc", {"feddc_agg": "some"}, r"feddc_agg.*active, all"),
    ("mimelite", {"mime_grad": "full"}, r"mime_grad"),
    ("fedsagd", {"rho": 0.1}, r"unknown hyperparameter 'rho'"),
])
def test_bad_hyperparameters_fail_at_validation(name, hp, match):
    with pytest.raises(ConfigError, match=match):
        PRESETS.get(name).resolve(hp)


def test_every_baseline_is_registered_with_source_and_overridable_defaults():
    for name in BASELINES:
        p = PRESETS.get(name)
        assert p.source and p.label
        hp = p.resolve({})
        assert set(p.defaults) <= set(hp)
        build_algorithm(name, hp)
    assert build_algorithm("fedsagd", {"prox_lam": 0.5}).hp["prox_lam"] == 0.5


# --------------------------------------------------------------------------------- smoke
@pytest.fixture(scope="module")
def digits():
    from fedflat.training.data import load_dataset
    from fedflat.training.data.partition import make_partition

    data = load_dataset("digits")
    return data, make_partition(data.train_y.numpy(), "dir0.5", 8, seed=0)


@pytest.mark.parametrize("name", BASELINES)
def test_smoke_learns_on_digits(tmp_path, digits, name):
    from fedflat.training.fl.engine import Simulation
    from fedflat.core.spec import RunSpec, check_training

    torch.set_default_dtype(torch.float32)  # the usual run dtype; the fixture restores it
    data, part = digits
    tr = check_training({"num_clients": 8, "participation": 0.5, "rounds": 3, "local_steps": 10, "batch_size": 32,
                         "lr": 0.1, "eval_every": 3, "checkpoint_every": 0})
    spec = RunSpec("digits", "dir0.5", "linear", name, 0, PRESETS.get(name).resolve({}), {}, PRESETS.get(name).training_for(tr))
    summary = Simulation(spec, data, part, tmp_path, progress=False).run()
    assert summary["status"] == "completed"
    assert summary["final_acc"] > 0.25, summary  # chance is 0.1; FedAvg reaches ~0.75


@pytest.mark.parametrize("name", ["scaffold", "feddc", "mimelite"])
def test_client_and_server_state_survive_the_disk_store(tmp_path, name):
    mem = Run(name, {}, tmp_path / "m").rounds(2)
    disk = Run(name, {}, tmp_path / "d", client_state="disk").rounds(2)
    for a, b in zip(mem, disk):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["fedadam", "scaffold", "fedlnag", "fedsagd"])
def test_resume_from_checkpoint_gives_the_uninterrupted_run(tmp_path, name):
    """Every server and client state of these parts lives where the checkpoint sees it."""
    whole = Run(name, {}, tmp_path / "a")
    whole.sim.run()
    Run(name, {}, tmp_path / "b", checkpoint_every=1).sim.run(stop_after=1)
    resumed = Run(name, {}, tmp_path / "b", checkpoint_every=1)
    resumed.sim.run()
    assert resumed.sim.start_round == 2  # it did resume
    np.testing.assert_allclose(resumed.sim.srv.theta.numpy(), whole.sim.srv.theta.numpy(), rtol=0, atol=1e-12)


# ------------------------------------------------------------------- one weight decay per run
def test_a_preset_owning_its_decay_is_resolved_by_the_study_and_refused_stacked_by_the_engine(tmp_path):
    """Issue 13 (2): FedSAGD's μ is its only weight decay; the engine's never stacks on it."""
    from fedflat.training.fl.engine import Simulation
    from fedflat.core.spec import RunSpec, check_training
    from fedflat.pipeline.study import load_study

    assert PRESETS.get("fedsagd").decay_param == "decay_mu" and PRESETS.get("fedprox").decay_param is None
    cfg = {"training": {"weight_decay": 5e-4, "num_clients": 4, "rounds": 1},
           "experiments": {"e": {"datasets": ["digits"], "models": ["linear"], "partitions": ["iid"], "seeds": [0],
                                 "algorithms": ["fedavg", {"preset": "fedsagd", "params": {"decay_mu": 0.005}}]}}}
    for training in (cfg["training"], {"num_clients": 4, "rounds": 1}):  # set, or inherited from the defaults
        study = load_study({**cfg, "training": training})
        by_algo = {s.algorithm: s for s in study.runs.values()}
        assert by_algo["fedavg"].training["weight_decay"] == training.get("weight_decay", 1e-3)
        assert by_algo["fedsagd"].training["weight_decay"] == 0.0 and by_algo["fedsagd"].hparams["decay_mu"] == 0.005
    # a baseline's training (hence its run id) is untouched
    tr = check_training({"weight_decay": 5e-4})
    assert PRESETS.get("fedavg").training_for(tr) is tr
    # a spec built elsewhere that would decay twice is refused before any compute
    data, part, *_ = tiny_problem(4)
    stacked = RunSpec("tiny", "manual", "linear", "fedsagd", 0, PRESETS.get("fedsagd").resolve({}), {},
                      check_training({"num_clients": 4, "weight_decay": 1e-3}))
    with pytest.raises(ConfigError, match=r"^training\.weight_decay: 0\.001 would stack on fedsagd's own weight "
                                          r"decay decay_mu=0\.001"):
        Simulation(stacked, data, part, tmp_path, progress=False)
