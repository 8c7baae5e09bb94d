"""A driver of fedflat's parts in the engine's hook order (training/fl/engine.py: start_point, downlink,
client_begin, gradient, corrections, client_end, server_update, apply) with a closed-form gradient,
for the hand-derived updates of the 2025 methods on quadratic clients (docs/algorithms_2025.md
"Tests"). test_presets_2025.py checks the driver against the engine on a linear softmax model."""
from __future__ import annotations

import numpy as np
import torch

from fedflat.training.algorithms import build_algorithm
from fedflat.training.algorithms.parts import ClientContext, ClientResult, RoundResult, ServerState

from .helpers_sam import make_sim, run

# f_i(w) = ½(w − a_i)ᵀA_i(w − a_i), full batch: ∇f_i(w) = A_i(w − a_i)
A = [torch.tensor([[2.0, 0.0], [0.0, 1.0]]), torch.tensor([[1.0, 0.5], [0.5, 3.0]])]
CENTRE = [torch.tensor([1.0, 0.0]), torch.tensor([-1.0, 2.0])]
THETA0 = torch.tensor([0.5, -0.5])
LR, K = 0.1, 2


def quadratic_grad(point, cid):
    return torch.zeros(()), A[cid].to(point) @ (point - CENTRE[cid].to(point))


def drive(name, hp, rounds, grad=quadratic_grad, theta0=THETA0, num_clients=2, local_steps=K, lr=LR):
    """θ per round and the final server state / client states of preset `name` (float64, all sampled,
    equal weights, the client's id as its one full batch)."""
    algo = build_algorithm(name, hp)
    srv = ServerState(theta=theta0.double().clone(), buffers=torch.zeros(0), num_clients=num_clients)
    for p in algo.parts:
        p.init_server(srv)
    store = {c: {n: torch.zeros_like(srv.theta) for n in algo.client_state_names} for c in range(num_clients)}
    thetas = []
    for t in range(1, rounds + 1):
        srv.round = t
        start = algo.server.start_point(srv)
        down = {}
        for p in algo.parts:
            down.update(p.downlink(srv))
        results = []
        for cid in range(num_clients):
            ctx = ClientContext(cid=cid, round=t, lr=lr, local_steps=local_steps, theta=srv.theta, start=start,
                                down=down, state=store[cid], num_samples=1)
            for p in algo.parts:
                p.client_begin(ctx)
            w = start.clone()
            for _ in range(local_steps):
                _, g = algo.perturbation.gradient(ctx, w, cid, grad)
                for c in algo.corrections:
                    g = c.adjust(ctx, w, g)
                w = w - lr * g
            up = {}
            for p in algo.parts:
                up.update(p.client_end(ctx, w))
            results.append(ClientResult(cid=cid, delta=w - start, end=w, up=up, num_samples=1, train_loss=0.0,
                                        buffers=torch.zeros(0), steps=local_steps))
        rnd = RoundResult(round=t, sampled=list(range(num_clients)), clients=results,
                          weights=torch.full((num_clients,), 1.0 / num_clients, dtype=torch.float64))
        for p in algo.parts[:-1]:
            p.server_update(srv, rnd)
        algo.server.server_update(srv, rnd)
        algo.server.apply(srv, rnd)
        thetas.append(srv.theta.clone())
    return thetas, srv, store


def close(x, expected, tol=1e-9):
    assert np.allclose(np.asarray(x, dtype=np.float64), np.asarray(expected, dtype=np.float64), atol=tol, rtol=0), \
        (np.asarray(x), expected)


def same(a, a_hp, b, b_hp, tmp_path, rounds=3, **kw):
    """Presets a and b follow the same θ trajectory through the engine (1e-12), on helpers_sam's problem."""
    sa, *_ = make_sim(a, a_hp, tmp_path / "a", rounds=rounds, **kw)
    sb, *_ = make_sim(b, b_hp, tmp_path / "b", rounds=rounds, **kw)
    for x, y in zip(run(sa, rounds), run(sb, rounds)):
        assert torch.allclose(x, y, atol=1e-12, rtol=0)

