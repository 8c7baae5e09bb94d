"""FedSOL Fig. 12 (toy example), Fig. 2 (partitions) and Fig. 7b (class-wise accuracy) targets."""
import numpy as np
import pytest
import torch

from fedflat.core.errors import ConfigError
from fedflat.pipeline.build import build
from fedflat.results.papers.toy_fedsol import DEFAULTS, _params, equilibria, fedprox_grad, fedsol_grad, paths
from fedflat.pipeline.study import load_study

from .paper_helpers import paper_config


def test_gradients_match_the_closed_forms_of_app_h():
    rng = np.random.default_rng(0)
    opt, delta, rho, mu = np.array([1.0, 0.7]), 0.1, 0.3, 0.8
    for _ in range(5):
        u, v = rng.normal(size=2)
        r = np.hypot(u, v)
        # FedSOL App. H: g_FedSOL = ((u−u_l) + ρu/r, δ((v−v_l) + ρv/r)); g_FedProx = ((u−u_l) + μu, δ(v−v_l) + μv)
        want_sol = [(u - opt[0]) + rho * u / r, delta * ((v - opt[1]) + rho * v / r)]
        want_prox = [(u - opt[0]) + mu * u, delta * (v - opt[1]) + mu * v]
        assert np.allclose(fedsol_grad(np.array([u, v]), opt, delta, rho, mu), want_sol, atol=1e-12)
        assert np.allclose(fedprox_grad(np.array([u, v]), opt, delta, mu), want_prox, atol=1e-12)
    assert np.array_equal(fedsol_grad(np.zeros(2), opt, delta, rho, mu), [-opt[0], -delta * opt[1]])  # no ε at ∇L_p = 0


def test_paths_end_at_the_closed_form_equilibria():
    p = {**DEFAULTS, "lr": 0.5, "epochs": 3000}  # larger steps: converged well within the test's time
    end = {k: v[-1] for k, v in paths(p).items()}
    eq = equilibria(p)
    assert np.allclose(end["FedSOL"], eq["FedSOL"], atol=1e-4) and np.allclose(end["FedProx"], eq["FedProx"], atol=1e-6)
    # FedSOL keeps the local optimum's direction (45° here); FedProx is pulled toward the u axis
    assert abs(np.arctan2(*end["FedSOL"][::-1]) - np.pi / 4) < 1e-3
    assert np.arctan2(*end["FedProx"][::-1]) < np.pi / 8


@pytest.mark.parametrize("key,value", [("rho", -1), ("epochs", 2.5), ("local_opt", [1]), ("rho", 5.0)])
def test_bad_toy_settings_name_the_key(key, value):
    with pytest.raises(ConfigError, match=f"figures.f.{key}"):
        _params("f", {key: value})


@pytest.mark.parametrize("name", ["fig12_toy", "fig2_partitions"])
def test_new_fedsol_figures_build_at_tiny_scale(name, tmp_path):
    torch.set_num_threads(1)
    study = load_study(paper_config("fedsol", "tiny"))
    pdf, png = build(study, name, tmp_path, section="figures")
    assert pdf.stat().st_size > 0 and png.stat().st_size > 0
