"""training.vmap_clients: a round's sampled clients as one vmapped step (training/fl/together.py) gives the
one-at-a-time loop's parameters (1e-5 after two rounds) for every step form it covers, with a
compressed uplink; blocked settings fall back to the loop; the option is not in the run id."""
import pytest
import torch

from fedflat.training.fl.together import clients_together, together_blocker
from fedflat.core.spec import RunSpec, check_training

from fast_helpers import Q4, SYN_HP, _sim, _with_synthetic_set


@pytest.mark.parametrize("model,algorithm,hp,augment", [
    ("mlp", "fedavg", {}, False), ("cnn_small", "fedsam", {"rho": 0.5}, True),
    ("mlp", "fedsynsam", SYN_HP, False), ("mlp", "fedsynsam", {**SYN_HP, "syn_batch": 2}, False),
    ("mlp", "fedlesam_s", {"rho": 0.5, "lesam_dir": "global"}, False), ("mlp", "feddyn", {"alpha": 0.5}, False),
    ("mlp", "fedsmoo", {"rho": 0.5, "alpha": 0.5}, False), ("mlp", "fedtoga", {"rho": 0.5, "alpha": 0.5}, False),
    ("mlp", "fedasam", {"rho": 0.5}, False)])
def test_clients_together_match_one_at_a_time(tmp_path, model, algorithm, hp, augment):
    one = _sim(tmp_path / "one", model, algorithm, "eager", hp, augment, uplink=Q4)
    vm = _sim(tmp_path / "vm", model, algorithm, "eager", hp, augment, uplink=Q4, vmap_clients=True)
    if algorithm == "fedsynsam":  # as after the distillation: the synthetic gradient is mixed in
        _with_synthetic_set(one), _with_synthetic_set(vm)
    assert together_blocker(one) is not None and together_blocker(vm) is None
    theta0 = one.srv.theta.clone()
    for t in (2, 3):
        one.run_round(t)
        vm.run_round(t)
    assert (one.srv.theta - theta0).abs().max() > 1e-2
    torch.testing.assert_close(vm.srv.theta, one.srv.theta, rtol=0, atol=1e-5)
    assert vm.log.rows == [] and set(vm.store.get(0)) == set(one.store.get(0))


def test_uncovered_runs_fall_back_and_the_option_is_not_in_the_run_id(tmp_path):
    assert "not fused" in together_blocker(_sim(tmp_path / "a", "mlp", "proj_l2", "eager", vmap_clients=True))
    assert "local_epochs" in together_blocker(_sim(tmp_path / "b", "mlp", "fedavg", "eager", vmap_clients=True,
                                                   local_epochs=1, batch_size=3))
    assert clients_together(_sim(tmp_path / "c", "mlp", "fedavg", "eager")) is None
    tr = check_training({})
    a = RunSpec("d", "p", "mlp", "fedavg", 0, {}, {}, tr)
    b = RunSpec("d", "p", "mlp", "fedavg", 0, {}, {}, {**tr, "vmap_clients": True})
    assert a.digest() == b.digest()
    with pytest.raises(Exception, match="vmap_clients"):
        check_training({"vmap_clients": "yes"})
