"""The engine's two extension points for analysis: a round hook that sees and may replace the local
gradient (RoundHook.local_gradient, which keeps the local steps eager), and a context manager that
runs the simulation under another algorithm and restores it (Simulation.evaluating_under)."""
import pytest
import torch

from fedflat.training.algorithms import build_algorithm
from fedflat.training.fl.round_hooks import RoundHook
from foundation_helpers import make_sim

pytestmark = pytest.mark.usefixtures("float64")  # the tiny float64 problem of foundation_helpers


class Scale(RoundHook):
    def __init__(self, factor):
        super().__init__()
        self.factor, self.seen = factor, []

    def local_gradient(self, sim, ctx, w, batch, loss, g):
        self.seen.append((ctx.cid, float(loss), g.clone()))
        return g * self.factor


def test_a_gradient_hook_sees_every_step_and_its_gradient_is_the_one_taken(tmp_path):
    plain, *_ = make_sim("fedavg", {}, tmp_path / "a", rounds=1)
    theta0 = plain.srv.theta.clone()
    plain.run_round(1)
    sim, *_ = make_sim("fedavg", {}, tmp_path / "b", rounds=1)
    half = Scale(0.5)
    with sim.evaluating_under(sim.algo, hooks=(half,)):
        assert sim.path == "eager"
        sim.run_round(1)
    assert [c for c, _, _ in half.seen] == [0, 0, 1, 1, 2, 2]  # 3 clients x 2 local steps, in order
    assert all(torch.isfinite(g).all() and g.abs().max() > 0 for _, _, g in half.seen)
    moved, moved_half = plain.srv.theta - theta0, sim.srv.theta - theta0
    assert moved.abs().max() > 1e-3 and not torch.allclose(moved_half, moved)  # the hook's gradient was taken
    zero = Scale(0.0)
    frozen, *_ = make_sim("fedavg", {}, tmp_path / "c", rounds=1)
    with frozen.evaluating_under(frozen.algo, hooks=(zero,)):
        frozen.run_round(1)
    assert torch.equal(frozen.srv.theta, theta0)  # no weight decay, no momentum: zero gradient, no move


def test_a_gradient_hook_keeps_a_fused_run_eager_and_is_named(tmp_path):
    from fedflat.training.fl.fused import fused_blocker

    sim, *_ = make_sim("fedavg", {}, tmp_path, backend="compile")
    assert sim.path == "fused"
    with sim.evaluating_under(sim.algo, hooks=(Scale(1.0),)):
        assert sim.path == "eager" and "Scale" in fused_blocker(sim)
    assert sim.path == "fused" and fused_blocker(sim) is None


def test_evaluating_under_runs_another_algorithm_and_restores_everything(tmp_path):
    sim, *_ = make_sim("fedsam", {"rho": 0.5}, tmp_path / "sam")
    ref, *_ = make_sim("fedavg", {}, tmp_path / "avg", local_epochs=1)
    before = {n: getattr(sim, n) for n in ("spec", "algo", "_loss_parts", "compressor", "compressor_state", "srv",
                                           "store", "hooks", "path")}
    theta = sim.srv.theta.clone()
    with sim.evaluating_under(build_algorithm("fedavg", {}), training={"local_epochs": 1}):
        assert sim.algo.name == "fedavg" and sim.local_epochs() == 1
        got = sim.local_train(1, 1, theta, {}, 0.3)
    want = ref.local_train(1, 1, theta, {}, 0.3)
    assert torch.equal(got.end, want.end) and not torch.equal(got.end, theta)
    for n, v in before.items():
        assert getattr(sim, n) is v, n
    assert torch.equal(sim.srv.theta, theta)
