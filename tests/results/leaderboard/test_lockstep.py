"""leaderboard.lockstep: two runs side by side, ‖θ_a − θ_b‖ per round. An exact reduction gives 0 in every round
(FedSAM at ρ = 0 is FedAvg, in float32 too); a radius > 0 does not; and the CLI names a run that is not the study's."""
from dataclasses import replace

import torch

import fedflat.plugins  # noqa: F401  (the composition root)
from fedflat.training.algorithms import PRESETS
from fedflat.results.leaderboard.__main__ import main
from fedflat.results.leaderboard.lockstep import lockstep
from fedflat.core.spec import RunSpec, check_training
from foundation_helpers import tiny_problem


def _spec(algorithm, hparams):
    training = check_training({"num_clients": 3, "participation": 1.0, "rounds": 3, "local_steps": 2, "batch_size": 6,
                               "lr": 0.2, "lr_decay": 1.0, "weight_decay": 0.0, "clip_grad_norm": 0.0, "eval_every": 1,
                               "checkpoint_every": 0, "backend": "eager"})
    return RunSpec("tiny", "manual", "mlp", algorithm, 0, PRESETS.get(algorithm).resolve(hparams),
                   {"hidden": 8, "depth": 1}, training)


def test_an_exact_reduction_stays_at_distance_zero_and_a_radius_does_not(tmp_path):
    assert torch.get_default_dtype() == torch.float32  # the leaderboard's precision, not the tests' float64
    data, part, *_ = tiny_problem()
    data = replace(data, train_x=data.train_x.float(), test_x=data.test_x.float())
    same = lockstep(_spec("fedsam", {"rho": 0.0}), _spec("fedavg", {}), data, part, 3, tmp_path / "same")
    assert same == [0.0, 0.0, 0.0]
    apart = lockstep(_spec("fedsam", {"rho": 0.1}), _spec("fedavg", {}), data, part, 3, tmp_path / "apart")
    assert len(apart) == 3 and all(d > 1e-6 for d in apart)


def test_the_cli_names_a_run_the_study_does_not_have(capsys):
    assert main(["--lockstep", "fmnist/iid/mlp2/fedavg/0000000000/seed0", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fedflat.leaderboard: error: fmnist/iid/mlp2/fedavg/0000000000/seed0: not a run of")
