"""BatchNorm running statistics move once per local step (issue #13 item 6), by the step's first pass
on the local mini-batch, taken at the local iterate w (davda54/sam example; FedSOL's ExpSAM): after
K steps of any SAM-type algorithm the statistics equal those of K plain train-mode forwards at
w_0, …, w_{K−1} on the step batches. Before the fix the ascent and the perturbed pass both updated
them (and FedSOL's update came from w + ε). The compiled path refuses models with running
statistics (training/fl/fast.py compile_blocker; tests/training/fl/test_fast_equivalence.py), so eager is the only
path for them and the backends cannot disagree."""
import copy

import pytest
import torch
import torch.nn as nn

from fedflat.training.algorithms import PRESETS
from fedflat.training.algorithms.parts import ClientContext
from fedflat.training.fl.engine import Simulation
from fedflat.training.fl.flat import FlatModel
from fedflat.training.fl.running_stats import step_stats, tracked_buffers
from fedflat.training.models.model_registry import MODELS
from fedflat.core.spec import RunSpec, check_training
from foundation_helpers import C, D, tiny_problem

if "bn_mlp_test" not in MODELS:
    @MODELS.register("bn_mlp_test")
    def _bn_mlp(input_shape, num_classes, hidden: int = 6):
        return nn.Sequential(nn.Flatten(), nn.Linear(input_shape[0], hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                             nn.Linear(hidden, num_classes))

pytestmark = pytest.mark.usefixtures("float64")


def _sim(tmp_path, algorithm, hp):
    data, part, *_ = tiny_problem(2, 6, seed=4)
    training = check_training({"num_clients": 2, "participation": 1.0, "rounds": 2, "local_steps": 3,
                               "batch_size": 4, "lr": 0.2, "weight_decay": 0.0, "clip_grad_norm": 0.0,
                               "checkpoint_every": 0})
    spec = RunSpec("tiny", "manual", "bn_mlp_test", algorithm, 0, PRESETS.get(algorithm).resolve(hp), {}, training)
    return Simulation(spec, data, part, tmp_path, progress=False)


def _stats(module):
    return [b.clone() for b in tracked_buffers(module)]


@pytest.mark.parametrize("algorithm,hp", [
    ("fedavg", {}), ("fedsam", {"rho": 0.5}), ("fedasam", {}), ("fedsmoo", {}), ("fedtoga", {}),
    ("fedgamma", {}), ("fedsol", {"sol_target": "full", "rho": 2.0}), ("proj_kl", {})])
def test_one_statistics_update_per_step_from_the_iterate(tmp_path, algorithm, hp):
    sim = _sim(tmp_path, algorithm, hp)
    sim.run_round(1)  # round 2: server state (momenta, duals, Δ) is non-trivial
    pert = sim.algo.perturbation
    orig, steps = pert.gradient, []

    def recording(ctx, w, batch, grad_at):
        steps.append((w.detach().clone(), batch[0].clone()))
        return orig(ctx, w, batch, grad_at)

    pert.gradient = recording
    module = sim.fm.module
    sim.fm.set_buffers(sim.srv.buffers)
    ref = copy.deepcopy(module)  # the statistics a client starts from (num_batches_tracked included)
    srv_state = {k: v.clone() for k, v in sim.srv.state.items()}
    down = {}
    for p in sim.algo.parts:
        down.update(p.downlink(sim.srv))
    sim.local_train(0, 2, sim.algo.server.start_point(sim.srv), down, sim.lr_at(2))
    assert len(steps) == 3 and not torch.equal(steps[0][0], steps[2][0])
    ref.train()
    with torch.no_grad():
        for w, x in steps:  # one plain forward at each step's iterate on its batch
            torch.nn.utils.vector_to_parameters(w, ref.parameters())
            ref(x)
    for got, want in zip(_stats(module), _stats(ref)):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    assert sim.srv.state.keys() == srv_state.keys()


def test_the_gate_freezes_every_pass_after_the_first():
    torch.manual_seed(0)
    fm = FlatModel(_bn_mlp((D,), C))
    stats = step_stats(fm.module)
    assert stats is not None and len(stats.buffers) == 3  # running_mean, running_var, num_batches_tracked
    assert step_stats(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2, track_running_stats=False))) is None
    grad_at = stats.wrap(lambda p, b: fm.grad_at(p, b[0], b[1]))
    x, y = torch.randn(5, D), torch.randint(0, C, (5,))
    xs = torch.randn(7, D) * 10  # another batch (FedSynSAM's synthetic set)
    before, w = _stats(fm.module), fm.flat.clone()
    stats.new_step()
    g1 = grad_at(w, (x, y))[1].clone()
    after_first = _stats(fm.module)
    grad_at(w, (xs, y.new_zeros(7)))
    grad_at(w + 0.1, (x, y))
    assert all(torch.equal(a, b) for a, b in zip(_stats(fm.module), after_first))
    assert not torch.equal(after_first[0], before[0]) and int(after_first[2]) == int(before[2]) + 1
    stats.new_step()
    g2 = grad_at(w, (x, y))[1]
    torch.testing.assert_close(g1, g2)  # frozen passes changed nothing a gradient sees
    assert int(_stats(fm.module)[2]) == int(before[2]) + 2


def test_fedsynsam_synthetic_pass_leaves_the_statistics(tmp_path):
    """FedSynSAM's three passes (ξ at w, D_syn at w, ξ at w + δ): only the first moves the statistics."""
    from fedflat.training.synsam.perturbation import SynSAMPerturbation

    torch.manual_seed(1)
    fm = FlatModel(_bn_mlp((D,), C))
    ref = copy.deepcopy(fm.module).train()
    part = SynSAMPerturbation(rho=0.5, beta=0.5)
    stats = step_stats(fm.module)
    x, y = torch.randn(5, D), torch.randint(0, C, (5,))
    w = fm.flat.clone()
    ctx = ClientContext(cid=0, round=9, lr=0.1, local_steps=1, theta=w, start=w, down={}, state={}, num_samples=5)
    ctx.scratch["syn"] = (torch.randn(6, D) * 5, torch.randint(0, C, (6,)))
    calls = []
    gated = stats.wrap(lambda p, b: calls.append(len(b[1])) or fm.grad_at(p, b[0], b[1]))
    stats.new_step()
    part.gradient(ctx, w, (x, y), gated)
    assert calls == [5, 6, 5]
    with torch.no_grad():
        ref(x)
    for got, want in zip(_stats(fm.module), _stats(ref)):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
