"""FedSynSAM and DynaFed through the round loop: FedSAM before R, the recorded trajectory, the one-off
broadcast bytes, resume across the distillation, DynaFed's server fine-tuning."""
import json
import math

import pytest
import torch

from fedflat.core.errors import ConfigError
from fedflat.training.synsam.distill import init_synthetic, matching_loss

from compression.helpers import C, D, tiny_sim

SYN = {"syn_round": 2, "syn_steps": 1, "syn_iters": 3, "syn_ipc": 1, "syn_lr_img": 0.05}


def test_before_R_it_is_fedsam_exactly(tmp_path):
    sam = tiny_sim(tmp_path / "sam", "fedsam", hparams={"rho": 0.1}, rounds=2)
    sam.run()
    syn = tiny_sim(tmp_path / "syn", "fedsynsam", hparams={"rho": 0.1, **SYN, "syn_round": 5}, rounds=2)
    syn.run()
    assert torch.equal(sam.srv.theta, syn.srv.theta)


def test_trajectory_distillation_broadcast_and_mixed_steps(tmp_path):
    # the global models FedSAM visits in rounds 1..2 (identical to FedSynSAM's before R)
    sam = tiny_sim(tmp_path / "sam", "fedsam", hparams={"rho": 0.1}, rounds=4)
    thetas = [sam.srv.theta.clone()]
    for t in (1, 2, 3, 4):
        sam.run_round(t)
        thetas.append(sam.srv.theta.clone())
    syn = tiny_sim(tmp_path / "syn", "fedsynsam", hparams={"rho": 0.1, **SYN, "syn_iters": 0}, rounds=4)
    syn.run()
    info = json.loads((tmp_path / "syn" / "synsam.json").read_text())
    assert info["distilled_at_round"] == 3 and info["trajectory_models"] == 3  # θ_0, θ_1, θ_2 (R = 2)
    part = syn.algo.perturbation
    x0, y = init_synthetic(1, C, (D,), seed=0, dtype=torch.float32)
    alpha0 = 0.3 * 2  # K·η_l
    expected = matching_loss(part._env["forward"], torch.stack(thetas[:3]), x0, y, alpha0, 1, "normalized")
    assert info["matching_loss_before"] == pytest.approx(expected, rel=1e-6)
    rows = syn.log.rows
    per_client = C * D * 4 + math.ceil(C * 2 / 8)  # float32 images + 2-bit labels
    assert [r["syn_down_bytes"] for r in rows] == [0, 0, 3 * per_client, 0]  # once, to all N = 3 clients
    assert rows[2]["down_bytes"] == rows[1]["down_bytes"] + 3 * per_client
    assert [r["grad_evals"] for r in rows] == [2 * 2 * 3, 2 * 2 * 3, 3 * 2 * 3, 3 * 2 * 3]
    assert torch.equal(syn.srv.state["syn_y"], torch.arange(C))
    assert not torch.allclose(syn.srv.theta, thetas[4])  # rounds 3-4 used the synthetic direction


@pytest.mark.parametrize("cut", [1, 3])
def test_resume_before_and_after_the_distillation(tmp_path, cut):
    hp = {"rho": 0.1, **SYN}
    full = tiny_sim(tmp_path / "full", "fedsynsam", hparams=hp, rounds=4, checkpoint_every=1)
    full.run()
    tiny_sim(tmp_path / "cut", "fedsynsam", hparams=hp, rounds=4, checkpoint_every=1).run(stop_after=cut)
    resumed = tiny_sim(tmp_path / "cut", "fedsynsam", hparams=hp, rounds=4, checkpoint_every=1)
    resumed.run()
    assert torch.equal(full.srv.theta, resumed.srv.theta)
    assert [r["syn_down_bytes"] for r in resumed.log.rows][2] > 0


def test_fedsynsam_under_quantization(tmp_path):
    s = tiny_sim(tmp_path, "fedsynsam", hparams={"rho": 0.1, **SYN}, rounds=4, uplink={"kind": "quant", "bits": 4})
    out = s.run()
    assert out["status"] == "completed" and s.log.rows[0]["up_bytes"] == 3 * (math.ceil((C * D + C) * 6 / 8) + 4)


def test_dynafed_fine_tunes_on_the_synthetic_set_after_R(tmp_path):
    avg = tiny_sim(tmp_path / "avg", "fedavg", rounds=4)
    thetas = []
    for t in (1, 2, 3):
        avg.run_round(t)
        thetas.append(avg.srv.theta.clone())
    dyn = tiny_sim(tmp_path / "dyn", "dynafed", hparams={**SYN, "dyna_iters": 5, "dyna_lr": 0.01}, rounds=3)
    for t in (1, 2):
        dyn.run_round(t)
    assert torch.equal(dyn.srv.theta, thetas[1])  # plain FedAvg up to R
    dyn.run_round(3)
    assert not torch.equal(dyn.srv.theta, thetas[2])
    # fine-tuning lowers the loss on D_syn from the averaged model
    x, y = dyn.srv.state["syn_x"], dyn.srv.state["syn_y"]
    fwd = dyn.algo.server._env["forward"]
    ce = lambda w: torch.nn.functional.cross_entropy(fwd(w, x), y).item()
    assert ce(dyn.srv.theta) < ce(thetas[2])  # θ_3 of FedAvg = the average DynaFed fine-tunes from
    assert not any(type(h).__name__ == "BroadcastBytes" for h in dyn.hooks)  # D_syn stays on the server


def test_too_short_trajectory_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="syn_round"):
        tiny_sim(tmp_path, "fedsynsam", hparams={"syn_round": 2, "syn_steps": 3})
