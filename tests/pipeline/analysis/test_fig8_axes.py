"""FedSOL Fig. 8 axes: on a tiny network with an exact Hessian, the landscape along the top-2
eigenvector directions has curvature λ₁ and λ₂ (central second difference of the surface), and the
directions are the exact top eigenvectors up to sign (so a wrong eigenvector, a missing unit norm
or a swapped axis fails)."""
import numpy as np
import torch

from fedflat.pipeline.analysis.hessian import top_eigenvectors
from fedflat.pipeline.analysis.landscape import surface
from fedflat.training.fl.flat import FlatModel

from .helpers import exact_hessian, tiny_data, tiny_mlp, train_a_bit


def test_surface_along_hessian_axes_has_the_top_curvatures():
    x, y = tiny_data()
    m = train_a_bit(tiny_mlp(), x, y)
    H = exact_hessian(m, x, y)
    fm = FlatModel(m)
    theta = fm.flat.clone()
    vals, dirs = top_eigenvectors(fm, theta, [(x, y)], 2, max_iter=1000, tol=1e-10)
    lam, U = torch.linalg.eigh(H)
    order = lam.abs().argsort(descending=True)
    for i in range(2):
        assert abs(abs(float(dirs[i] @ U[:, order[i]])) - 1) < 1e-4  # sign-insensitive
        assert abs(float(dirs[i].norm()) - 1) < 1e-12
    h = 1e-3
    axis = np.array([-h, 0.0, h])
    z = surface(fm, theta, dirs, axis, {"train": [(x, y)]}, chunk=1)["train_loss"]  # [j, i]: (axis[i] d1, axis[j] d2)
    curv_1 = (z[1, 0] - 2 * z[1, 1] + z[1, 2]) / h**2
    curv_2 = (z[0, 1] - 2 * z[1, 1] + z[2, 1]) / h**2
    np.testing.assert_allclose([curv_1, curv_2], [float(lam[order[0]]), float(lam[order[1]])], rtol=1e-3)
    assert torch.equal(fm.flat, theta)  # the model is left where it was
