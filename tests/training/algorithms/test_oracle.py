"""The exact-global-perturbation diagnostic: δ = ρ ∇F(θ^t)/‖∇F(θ^t)‖, F the unweighted client mean."""
import numpy as np
import pytest
import torch

from foundation_helpers import make_sim, np_grad, unit

pytestmark = pytest.mark.usefixtures("float64")


def test_oracle_direction_is_the_full_federated_gradient(tmp_path):
    rho = 0.3
    sim, x, y, clients = make_sim("fedsam_oracle", {"rho": rho}, tmp_path, per_client=6, rounds=1)
    theta = sim.srv.theta.clone()
    want = np.mean([np_grad(theta.numpy(), x[c], y[c]) for c in clients], axis=0)  # unweighted mean over clients
    part = sim.algo.perturbation
    from fedflat.training.algorithms import ClientContext
    ctx = ClientContext(cid=0, round=1, lr=0.1, local_steps=1, theta=theta, start=theta, down={}, state={},
                        num_samples=6)
    part.client_begin(ctx)
    np.testing.assert_allclose(ctx.scratch["delta"].numpy(), rho * unit(want), atol=1e-12)
    assert torch.equal(sim.srv.theta, theta)  # measuring moved nothing


def test_oracle_runs_in_the_engine(tmp_path):
    sim, *_ = make_sim("fedsam_oracle", {"rho": 0.1}, tmp_path, rounds=2)
    assert sim.run()["status"] == "completed"
