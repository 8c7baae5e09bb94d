import numpy as np
import pytest
import torch

from fedflat.analysis.hessian import HessianOperator, hessian_spectrum, lanczos, lanczos_density, smooth_density

from .helpers import exact_hessian, tiny_data, tiny_mlp, train_a_bit


@pytest.fixture(scope="module")
def setup():
    x, y = tiny_data()
    m = train_a_bit(tiny_mlp(), x, y)
    H = exact_hessian(m, x, y)
    return m, x, y, H


def test_hvp_matches_exact_hessian(setup):
    m, x, y, H = setup
    op = HessianOperator(m, [(x[:40], y[:40]), (x[40:], y[40:])])  # mini-batched, sample-weighted
    v = torch.randn(H.shape[0], dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    assert torch.allclose(op(v), H @ v, rtol=1e-9, atol=1e-11)


def test_top_eigenvalues_and_trace_match_exact(setup):
    m, x, y, H = setup
    exact = torch.linalg.eigvalsh(H)
    top = exact[exact.abs().argsort(descending=True)][:3]
    out = hessian_spectrum(m, [(x, y)], top_k=3, max_iter=1000, tol=1e-8, trace_samples=500,
                           density_iters=0, seed=0)
    np.testing.assert_allclose(out["eigenvalues"], top.numpy(), rtol=1e-3)
    tr = float(torch.trace(H))
    assert abs(out["trace"] - tr) <= 0.05 * abs(tr)
    assert out["num_params"] == H.shape[0] and out["frozen_unused"] == []


def test_unused_parameters_are_frozen_not_fatal():
    x, y = tiny_data()
    m = tiny_mlp(unused=True)
    H = exact_hessian(m, x, y)
    out = hessian_spectrum(m, [(x, y)], top_k=1, max_iter=1000, tol=1e-8, trace_samples=2, density_iters=5)
    assert out["frozen_unused"] == ["extra.weight", "extra.bias"]
    lam = torch.linalg.eigvalsh(H)
    np.testing.assert_allclose(out["lambda_max"], float(lam[lam.abs().argmax()]), rtol=1e-3)
    assert all(p.requires_grad for p in m.parameters())  # the caller's model is untouched


def test_lanczos_density_is_a_quadrature_of_the_spectrum():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(30, 30, generator=g, dtype=torch.float64)
    H = (A + A.T) / 2
    lam = torch.linalg.eigvalsh(H).numpy()
    hvp = lambda v: H @ v
    # full Lanczos: Ritz values are the spectrum
    nodes, w = lanczos_density(hvp, 30, 30, runs=1, seed=4)
    assert abs(w.sum() - 1) < 1e-12
    np.testing.assert_allclose(np.sort(nodes), lam, atol=1e-8)
    # m < n steps: Gauss quadrature reproduces v^T H^k v exactly for k < 2m
    v = (torch.randint(0, 2, (30,), generator=g) * 2 - 1).double()
    a, b = lanczos(hvp, v, 6)
    from scipy.linalg import eigh_tridiagonal
    th, U = eigh_tridiagonal(a, b)
    wq = U[0] ** 2
    u = v / v.norm()
    for k in range(12):
        exact = float(u @ torch.linalg.matrix_power(H, k) @ u)
        assert abs(float((wq * th**k).sum()) - exact) < 1e-8 * max(1.0, abs(exact))
    # many runs: moments approach the normalised traces tr(H^k)/n
    nodes, w = lanczos_density(hvp, 30, 10, runs=200, seed=5)
    for k in (1, 2):
        assert abs((w * nodes**k).sum() - (lam**k).mean()) < 0.1 * (np.abs(lam) ** k).mean()
    # the smoothed density integrates to 1 and its support covers the spectrum
    grid = np.linspace(lam.min() - 3, lam.max() + 3, 4001)
    dens = smooth_density(nodes, w, grid, 0.2)
    assert abs(np.trapezoid(dens, grid) - 1) < 1e-3
    width = lam.max() - lam.min()  # extreme Ritz values converge first: within 1% after 10 steps
    assert lam.min() - 1e-9 <= nodes.min() <= lam.min() + 0.01 * width
    assert lam.max() - 0.01 * width <= nodes.max() <= lam.max() + 1e-9


def test_density_of_a_network_covers_its_exact_spectrum(setup):
    m, x, y, H = setup
    out = hessian_spectrum(m, [(x, y)], top_k=1, trace_samples=0, density_iters=H.shape[0], density_runs=1)
    lam = torch.linalg.eigvalsh(H).numpy()
    nodes = np.asarray(out["density"]["nodes"])
    assert abs(sum(out["density"]["weights"]) - 1) < 1e-10
    assert nodes.min() <= lam.min() + 1e-6 * abs(lam).max() and nodes.max() >= lam.max() * (1 - 1e-6)


def test_top_eigenvectors_are_exact_eigenvectors_on_the_flat_layout(setup):
    from fedflat.analysis.hessian import top_eigenvectors
    from fedflat.fl.flat import FlatModel

    m, x, y, H = setup
    fm = FlatModel(__import__("copy").deepcopy(m))
    vals, vecs = top_eigenvectors(fm, fm.flat.clone(), [(x, y)], 2, max_iter=1000, tol=1e-10)
    lam, U = torch.linalg.eigh(H)
    order = lam.abs().argsort(descending=True)
    for i in range(2):
        assert abs(vals[i] - float(lam[order[i]])) < 1e-3 * abs(vals[i])
        assert abs(abs(float(vecs[i] @ U[:, order[i]])) - 1) < 1e-3
