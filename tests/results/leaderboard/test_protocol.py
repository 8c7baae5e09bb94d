"""config/leaderboard.yaml: validation (one line naming the key), the tuning and final expansions, the plan."""
import copy

import pytest

from fedflat.training.algorithms import PRESETS
from fedflat.core.errors import ConfigError
from fedflat.results.leaderboard.plan import estimate, provisional_choice
from fedflat.results.leaderboard.protocol import prepare
from fedflat.pipeline.study import load_config_file, load_study

from .helpers import REPO, small_config


def _full(scale="tiny"):
    cfg = load_config_file(REPO / "config" / "leaderboard.yaml")
    cfg["scale"] = scale
    return cfg


@pytest.mark.parametrize("preset", ["perfedavg", "fedbabu", "knnper", "localonly"])
def test_personalised_presets_are_refused_by_name(preset):
    cfg = _full()
    del cfg["leaderboard"]["excluded"][preset]
    cfg["leaderboard"]["methods"][preset] = {}
    with pytest.raises(ConfigError, match=rf"^leaderboard.methods.{preset}: .* personalised-FL preset .*leaderboard.excluded"):
        load_study(cfg)


def test_the_oracle_is_refused_and_every_preset_must_be_ranked_or_excluded():
    cfg = _full()
    del cfg["leaderboard"]["excluded"]["fedsam_oracle"]
    with pytest.raises(ConfigError, match=r"preset 'fedsam_oracle' is neither ranked .* nor excluded with a reason"):
        load_study(cfg)
    cfg["leaderboard"]["methods"]["fedsam_oracle"] = {}
    with pytest.raises(ConfigError, match=r"^leaderboard.methods.fedsam_oracle: .* diagnostic"):
        load_study(cfg)


@pytest.mark.parametrize("edit, match", [
    (lambda lb: lb["methods"].update(fedsam={"rho": [0.0, 0.01, 0.02, 0.05, 0.1]}),
     r"leaderboard.methods.fedsam: 5 grid points x 4 lr values \(leaderboard.tuning.lr\) = 20 trials, not "
     r"leaderboard.tuning.trials = 16"),
    (lambda lb: lb["tuning"].update(lr_only=[0.1, 0.3]),
     r"leaderboard.methods.fedavg: leaderboard.tuning.lr_only has 2 values = 2 trials, not leaderboard.tuning.trials = 16"),
    (lambda lb: lb["methods"].update(fedsam={"lr": [0.1]}), r"leaderboard.methods.fedsam.lr: the local lr grid is leaderboard.tuning.lr"),
    (lambda lb: lb["methods"].update(fedsam={"rhoo": [0.1]}), r"leaderboard.methods.fedsam: unknown hyperparameter 'rhoo'"),
    (lambda lb: lb["methods"].update(fedsam={"rho": [-1.0]}), r"leaderboard.methods.fedsam.rho"),
    (lambda lb: lb["tuning"].pop("holdout"), r"leaderboard.tuning.holdout: a fraction in \(0, 0.5\) is required"),
    (lambda lb: lb["tuning"].update(partitions=["dir0.5"]), r"leaderboard.tuning.partitions: unknown value 'dir0.5'"),
    (lambda lb: lb["tuning"].update(rounds=500), r"leaderboard.tuning.rounds: 500 exceeds training.rounds 200"),
    (lambda lb: lb.update(colour="red"), r"leaderboard: unknown key 'colour'"),
    (lambda lb: lb["tuning"].update(on_divergence="lower_lr"),
     r"^leaderboard.tuning.on_divergence: removed in v2 \(lower_lr, the post-hoc lr re-choice after a diverged final "
     r"seed\); .*got 'lower_lr'$"),
])
def test_bad_protocol_names_the_key(edit, match):
    cfg = _full()
    edit(cfg["leaderboard"])
    with pytest.raises(ConfigError, match=match):
        load_study(cfg)


def test_on_divergence_none_is_still_accepted_and_changes_nothing():
    cfg = _full()
    cfg["leaderboard"]["tuning"]["on_divergence"] = "none"
    assert set(load_study(cfg).runs) == set(load_study(_full()).runs)


def test_a_method_that_would_not_act_in_the_tuning_horizon_names_the_tuning_table():
    cfg = _full("paper")
    cfg["leaderboard"]["methods"]["dynafed"] = {"syn_round": [60]}
    del cfg["leaderboard"]["tuning"]["trials"]  # this test is about the horizon, not the trial count
    with pytest.raises(ConfigError, match=r"tune_dir0p3_dynafed: DynaFed .*syn_round 60 >= training.rounds 50.*targets tuning"):
        load_study(cfg)


def test_the_config_passes_the_workflow_schema():
    import jsonschema
    import yaml

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    jsonschema.validate(_full("paper"), schema)
    bad = _full("paper")
    del bad["leaderboard"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_a_leaderboard_generates_its_own_experiments():
    cfg = _full()
    cfg["experiments"] = {"x": {}}
    with pytest.raises(ConfigError, match=r"^experiments: a leaderboard config generates its experiments"):
        load_study(cfg)


def test_tiny_study_expands_the_tuning_grid_on_a_validation_split():
    cfg = _full()
    study = load_study(cfg)
    lb = cfg["leaderboard"]
    assert study.leaderboard["methods"].keys() == lb["methods"].keys()
    assert set(lb["methods"]) | set(lb["excluded"]) == set(PRESETS.names())
    assert len(study.experiments) == len(lb["methods"])  # one tuning experiment per method (one tuning partition)
    fedsam = study.experiments["tune_dir0p3_fedsam"]
    specs = [study.runs[r] for r, _ in fedsam]
    assert {(s.training["lr"], s.hparams["rho"]) for s in specs} == {(lr, r) for lr in (0.03, 0.1, 0.3, 1.0) for r in (0.0, 0.02, 0.05, 0.1)}
    fedavg = {study.runs[r].training["lr"] for r, _ in study.experiments["tune_dir0p3_fedavg"]}
    assert fedavg == set(lb["tuning"]["lr_only"]) and len(fedavg) == 16  # no own key: 16 lr values
    for rid in study.runs:  # every tuning run: validation split, the shorter horizon (scaled), the tuning seed
        s = study.runs[rid]
        assert s.training["holdout"] == 0.1 and s.training["rounds"] == 5 and s.seed == 0 and s.partition == "dir0.3-norep"
    assert study.tables["tuning"]["kind"] == "grid_search" and study.tables["leaderboard"]["kind"] == "leaderboard"
    assert set(study.figures) == {"pareto_communication", "pareto_compute", "flatness_vs_accuracy", "rank_stability",
                                  "critical_difference"}
    fedacg = {(study.runs[r].hparams["lam"], study.runs[r].hparams["mu"]) for r, _ in study.experiments["tune_dir0p3_fedacg"]}
    assert len(fedacg) == 4  # two keys: 2 x 2


def test_the_final_experiments_take_the_choice_and_untuned_partitions_take_the_tuned_one():
    cfg = small_config({"fedavg": {}, "fedsam": {"rho": [0.01, 0.1]}, "scaffold": {}}, seeds=(0, 1, 2))
    chosen = {"partitions": {"dir0.3": {"fedavg": {"lr": 0.1, "params": {}, "score": 50.0},
                                        "fedsam": {"lr": 0.1, "params": {"rho": 0.01}, "score": 51.0},
                                        "scaffold": None}}}  # every grid point diverged
    plain, protocol = prepare(copy.deepcopy(cfg), chosen)
    study = load_study(plain)
    for part in ("iid", "dir0p3", "dir0p1"):
        entries = study.experiments[f"final_{part}"]
        specs = [study.runs[r] for r, _ in entries]
        assert {s.algorithm for s in specs} == {"fedavg", "fedsam"}  # SCAFFOLD has no working setting: not run
        assert {s.seed for s in specs} == {0, 1, 2}
        assert all(s.training["holdout"] == 0.0 and s.training["rounds"] == 20 for s in specs)  # test split, full horizon
        assert {s.hparams["rho"] for s in specs if s.algorithm == "fedsam"} == {0.01}


def test_plan_counts_the_runs_of_the_full_config():
    cfg = _full("paper")
    est = estimate(cfg, cores=2)
    methods = cfg["leaderboard"]["methods"]
    grid = {m: 1 for m in methods}
    for m, g in methods.items():
        for v in g.values():
            grid[m] *= len(v)
    assert est["tuning"]["runs"] == 16 * len(methods)  # equal trials: 16 per method, seed 0
    assert all(n == 4 or not methods[m] for m, n in grid.items())  # 4 lr x 4 own points, or 16 lr values
    seeds = len(cfg["leaderboard"]["seeds"])
    assert seeds == 5  # v3: five paired final seeds
    assert est["final"]["runs"] == len(methods) * 3 * seeds  # methods x partitions x seeds
    assert est["methods"] == len(methods) and 0 < est["total"]["wall_h"] < 30  # several sessions on 2 cores
    assert est["continuation"]["runs"] == 2 * 3 * len(methods)  # best 2 screen cells x 3 partitions, seed 0
    # a rho = 0 twin per SAM-type pick, with every final seed (v3)
    assert 0 < est["ablation"]["runs"] <= 3 * seeds * sum("rho" in g for g in methods.values())
    # with the continuation every ranked partition picks its own cell
    assert provisional_choice(prepare(copy.deepcopy(cfg))[1])["partitions"].keys() == {"iid", "dir0.3", "dir0.1"}
