"""FedSAGD Fig. 1: the local_discrepancy hook against a hand-written softmax-regression SGD loop,
and its promise not to change training."""
import math

import numpy as np
import pytest
import torch

from fedflat.pipeline.analysis.local_discrepancy import max_pairwise, measured_clients
from fedflat.core.errors import ConfigError
from fedflat.training.fl.batches import BatchStream, torch_generator
from fedflat.training.fl.engine import Simulation

from .sim_helpers import partition, spec, synthetic


def _sim(s, data, path):
    return Simulation(s, data, partition(data, s), path, progress=False)


def _hand_trajectory(sim, theta, cid, t, lr, steps):
    """K plain SGD steps of multinomial logistic regression, gradient in closed form."""
    data = sim.data
    c, d = data.num_classes, int(np.prod(data.input_shape))
    w = theta.double().clone()
    stream = BatchStream(sim.client_idx[cid], sim.spec.batch_size, sim.spec.seed, t, cid)
    gen = torch_generator(sim.spec.seed, t, cid)
    out = [w.clone()]
    for _ in range(steps):
        x, y = data.train_batch(stream.next(), gen)
        x = x.reshape(len(x), -1).double()
        W, b = w[: c * d].reshape(c, d), w[c * d:]
        p = torch.softmax(x @ W.T + b, dim=1)
        r = (p - torch.nn.functional.one_hot(y, c).double()) / len(y)  # dCE/dlogits, mean over the batch
        g = torch.cat([(r.T @ x).reshape(-1), r.sum(0)])
        w = w - lr * g
        out.append(w.clone())
    return torch.stack(out)


def test_local_discrepancy_equals_hand_computed_max_pairwise_distance(tmp_path):
    data = synthetic()
    s = spec("fedavg", model="linear", rounds=2, weight_decay=0.0, clip_grad_norm=0.0, local_steps=4,
             analysis={"local_discrepancy": {"every": 1}})
    sim = _sim(s, data, tmp_path / "a")
    sim.run()
    rows = sim.log.rows
    # row 2 measured round 3 from the final global model: recompute it by hand
    cids = measured_clients(sim, 3)
    assert len(cids) == 2  # 4 clients x 50% sampled
    trajs = torch.stack([_hand_trajectory(sim, sim.srv.theta, c, 3, sim.lr_at(3), 4) for c in cids])
    want = [float((trajs[0, k] - trajs[1, k]).norm()) for k in range(5)]
    got = [rows[-1][f"local_disc_k{k}"] for k in range(1, 5)]
    assert want[0] == 0.0
    np.testing.assert_allclose(got, want[1:], rtol=1e-5)
    assert got[0] > 0 and "local_disc_k5" not in rows[-1]


def test_local_discrepancy_pads_to_two_clients_and_leaves_training_unchanged(tmp_path):
    data = synthetic()
    base = dict(rounds=4, participation=0.25, local_steps=2)  # one sampled client per round
    plain = _sim(spec("fedsagd", **base), data, tmp_path / "p")
    plain.run()
    s = spec("fedsagd", analysis={"local_discrepancy": {"every": 3, "min_clients": 3}}, **base)
    hooked = _sim(s, data, tmp_path / "h")
    hooked.run()
    assert torch.equal(plain.srv.theta, hooked.srv.theta)
    for a, b in zip(plain.srv.state.values(), hooked.srv.state.values()):
        assert torch.equal(a, b)
    assert [r["train_loss"] for r in plain.log.rows] == [r["train_loss"] for r in hooked.log.rows]
    assert len(measured_clients(hooked, 2, 3)) == 3
    r1, r2, r3, r4 = hooked.log.rows  # due: round 1, every 3rd, the last
    assert all(r1[f"local_disc_k{k}"] > 0 for k in (1, 2)) and "local_disc_k1" not in r2
    assert r3["local_disc_k2"] > 0 and r4["local_disc_k2"] > 0


def test_max_pairwise_and_bad_parameter():
    t = torch.zeros(3, 2, 2)
    t[1, 1] = torch.tensor([3.0, 4.0])
    t[2, 1] = torch.tensor([0.0, -1.0])
    assert max_pairwise(t) == [0.0, pytest.approx(math.hypot(3, 5))]
    assert all(math.isnan(v) for v in max_pairwise(t[:1]))
    from fedflat.training.fl.round_hooks import ROUND_HOOKS

    with pytest.raises(ConfigError, match="analysis.hooks.local_discrepancy.min_clients: must be an integer >= 2"):
        ROUND_HOOKS.get("local_discrepancy")(min_clients=1)


@pytest.mark.parametrize("bad, msg", [
    ({"round": 0}, "figures.f.round: 'mean' or a round number >= 1, got 0"),
    ({"yscale": "sqrt"}, "figures.f.yscale"),
    ({"algorithms": ["FedNope"]}, r"figures.f.panels\[0\]: none of the algorithms"),
    ({"panels": []}, "figures.f.panels: at least one is required"),
])
def test_stability_figure_config_errors_name_the_key(bad, msg):
    from fedflat.pipeline.study import load_study

    cfg = {"experiments": {"main": {"datasets": ["digits"], "models": ["linear"], "partitions": ["iid"],
                                    "algorithms": ["fedavg"], "seeds": [0]}},
           "figures": {"f": {"kind": "local_discrepancy_curve", "experiment": "main", "panels": [{"title": "a"}], **bad}}}
    with pytest.raises(ConfigError, match=msg):
        load_study(cfg)


@pytest.mark.parametrize("algorithm", ["fedsagd", "fedacg", "scaffold"])
def test_recorded_trajectories_end_where_the_real_next_round_ends(tmp_path, algorithm):
    """The replay uses the next round's start point (look-ahead, momentum), batches, lr and client state."""
    from fedflat.pipeline.analysis.local_discrepancy import local_trajectories
    from fedflat.training.fl.batches import sample_clients

    data = synthetic()
    s = spec(algorithm, rounds=3, participation=0.5)
    sim = _sim(s, data, tmp_path)
    sim.run_round(1)
    sim.run_round(2)
    cids = sample_clients(s.seed, 3, s.num_clients, s.clients_per_round)
    trajs = local_trajectories(sim, 3, cids)
    ends, real = {}, sim.local_train

    def keep(cid, t, start, down, lr):
        res = real(cid, t, start, down, lr)
        ends[cid] = res.end
        return res

    sim.local_train = keep
    sim.run_round(3)
    for i, c in enumerate(cids):
        torch.testing.assert_close(trajs[i, -1], ends[c], rtol=0, atol=1e-6)
    assert trajs.shape[1] == s.local_steps + 1 and not torch.equal(trajs[0, 0], trajs[0, -1])
