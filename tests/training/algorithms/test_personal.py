"""FedSOL Table 9's personalized-FL comparators: PerFedAvg's first-order meta-step re-derived in
NumPy, FedBABU's frozen head, kNN-Per's interpolation on a fabricated datastore (exact numbers)."""
import math

import numpy as np
import pytest
import torch

from fedflat.training.algorithms.presets_personal import head_slices
from fedflat.pipeline.analysis.personalize import knn_mix, knn_probs
from fedflat.training.fl.batches import BatchStream
from fedflat.training.fl.engine import Simulation
from foundation_helpers import make_sim, np_grad
from pipeline.analysis.sim_helpers import partition, spec, synthetic


@pytest.mark.parametrize("beta", [0.05, 0.3])
def test_perfedavg_round_matches_first_order_maml_by_hand(beta, tmp_path, float64):
    N, B, K, lr = 3, 6, 2, 0.3
    sim, x, y, clients = make_sim("perfedavg", {"perfed_beta": beta}, tmp_path, num_clients=N, per_client=B,
                                  local_steps=K, lr=lr, rounds=1)
    theta0 = sim.srv.theta.clone().numpy()
    sim.run_round(1)
    ends = []
    for cid in range(N):
        stream = BatchStream(sim.client_idx[cid], B, 0, 1, cid)
        w = theta0.copy()
        for _ in range(K):
            b = stream.next().numpy()
            d1, d2 = b[: B // 2], b[B // 2:]
            adapted = w - lr * np_grad(w, x[d1], y[d1])  # inner step α = the round's lr
            w = w - beta * np_grad(adapted, x[d2], y[d2])  # outer step β at the adapted point
        ends.append(w)
    np.testing.assert_allclose(sim.srv.theta.numpy(), np.mean(ends, 0), rtol=0, atol=1e-12)


def _mlp_sim(algorithm, tmp_path, **training):
    data = synthetic()
    s = spec(algorithm, rounds=2, hp={}, **training)
    return Simulation(s, data, partition(data, s), tmp_path, progress=False)


def test_fedbabu_head_frozen_body_trained(tmp_path):
    # momentum and weight decay on: neither may move the head
    sim = _mlp_sim("fedbabu", tmp_path, local_momentum=0.9, weight_decay=1e-2)
    heads = head_slices(sim.fm.module)
    assert heads and sum(s.stop - s.start for s in heads) < sim.srv.theta.numel()
    theta0 = sim.srv.theta.clone()
    sim.run_round(1)
    res = [sim.local_train(0, 2, sim.srv.theta, {}, 0.1)]  # one client's own result, too
    head = torch.cat([torch.arange(s.start, s.stop) for s in heads])
    body = torch.ones_like(theta0, dtype=torch.bool)
    body[head] = False
    assert torch.equal(sim.srv.theta[head], theta0[head])
    assert torch.equal(res[0].delta[head], torch.zeros(len(head)))
    assert (sim.srv.theta[body] - theta0[body]).abs().max() > 1e-4
    assert res[0].delta[body].abs().max() > 1e-4
    # the same run without the freeze moves the head
    free = _mlp_sim("fedavg", tmp_path / "free", local_momentum=0.9, weight_decay=1e-2)
    free.run_round(1)
    assert (free.srv.theta[head] - theta0[head]).abs().max() > 1e-4


def test_knn_probabilities_on_a_fabricated_datastore(float64):
    store = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])
    labels = torch.tensor([0, 1, 1, 2])
    q = torch.tensor([[0.0, 0.0], [3.0, 0.0]])
    p = knn_probs(q, store, labels, k=3, scale=1.0, num_classes=3)
    # query 1: squared distances 0, 1, 4 (9 is not among the 3 nearest); kernel exp(-d²/(D·s)), D = 2
    w = np.exp(-np.array([0.0, 1.0, 4.0]) / 2.0)
    np.testing.assert_allclose(p[0].numpy(), [w[0] / w.sum(), (w[1] + w[2]) / w.sum(), 0.0], rtol=1e-12)
    # query 2: squared distances 9, 4, 13, 0 -> nearest 0 (label 2), 4 (label 1), 9 (label 0)
    w2 = np.exp(-np.array([0.0, 4.0, 9.0]) / 2.0)
    np.testing.assert_allclose(p[1].numpy(), [w2[2] / w2.sum(), w2[1] / w2.sum(), w2[0] / w2.sum()], rtol=1e-12)
    # kernel scale: s = 2 halves every exponent
    p_s = knn_probs(q[:1], store, labels, k=3, scale=2.0, num_classes=3)
    ws = np.exp(-np.array([0.0, 1.0, 4.0]) / 4.0)
    np.testing.assert_allclose(p_s[0].numpy(), [ws[0] / ws.sum(), (ws[1] + ws[2]) / ws.sum(), 0.0], rtol=1e-12)
    # interpolation with the model: λ p_kNN + (1 − λ) softmax(logits)
    logits = torch.tensor([[0.0, 0.0, math.log(2.0)]])
    mixed = knn_mix(logits, p[:1], 0.5)
    np.testing.assert_allclose(mixed[0].numpy(), 0.5 * p[0].numpy() + 0.5 * np.array([0.25, 0.25, 0.5]), rtol=1e-12)
    raw = knn_mix(logits, p[:1], 0.25, "logits")  # the FedSOL code's mix with raw logits
    np.testing.assert_allclose(raw[0].numpy(), 0.25 * p[0].numpy() + 0.75 * logits[0].numpy(), rtol=1e-12)
    # k larger than the datastore uses all of it
    p_all = knn_probs(q[:1], store, labels, k=10, scale=1.0, num_classes=3)
    wa = np.exp(-np.array([0.0, 1.0, 4.0, 9.0]) / 2.0)
    np.testing.assert_allclose(p_all[0].numpy(), [wa[0], wa[1] + wa[2], wa[3]] / wa.sum(), rtol=1e-12)
