"""Every rho = 0 reduction the leaderboard relies on (fedflat.training.algorithms.reductions.RHO0): the preset with its
ascent switched off follows the base preset's trajectory to 1e-12 on a tiny MLP, with the shared keys away from
their defaults; and with rho > 0 it does not, so the equality tests something."""
import pytest
import torch

import fedflat.plugins  # noqa: F401  (the composition root: registers the presets)
from fedflat.training.algorithms.reductions import RHO0, rho0_base

from .helpers_sam import make_sim, run

ROUNDS = 4
SHARED = {"alpha": 0.3, "cm_alpha": 0.3, "lam": 0.5}  # away from every preset's default
EXTRA = {"fedsynsam": {"syn_round": 1, "syn_steps": 1}}  # the synthetic phase starts within the rounds run


def _trajectory(name, hp, tmp_path):
    sim, *_ = make_sim(name, hp, tmp_path, arch="mlp", rounds=ROUNDS)
    return run(sim, ROUNDS)


@pytest.mark.parametrize("name", sorted(RHO0))
def test_rho0_is_the_base_preset(tmp_path, name, float64):
    r = RHO0[name]
    hp = {"rho": 0.0, **{k: SHARED[k] for k in r.shared}, **r.when}
    base, base_hp = rho0_base(name, hp)
    hp.update(EXTRA.get(name, {}))
    a = _trajectory(name, hp, tmp_path / "a")
    b = _trajectory(base, base_hp, tmp_path / "b")
    assert all(torch.allclose(x, y, atol=1e-12, rtol=0) for x, y in zip(a, b))
    c = _trajectory(name, {**hp, "rho": 0.1}, tmp_path / "c")
    assert not torch.allclose(c[-1], b[-1], atol=1e-6, rtol=0)


def test_rho0_base_needs_rho_zero_and_the_conditions():
    assert rho0_base("fedsam", {"rho": 0.05}) is None
    assert rho0_base("fedspeed", {"rho": 0.0, "alpha": 0.1}) == ("feddyn", {"alpha": 0.1})
    assert rho0_base("fedgloss", {"rho": 0.0, "server_rho": 0.15, "alpha": 0.1}) is None
    assert rho0_base("fedavg", {}) is None
