"""fedflat.pipeline.scale on small plain studies: overrides, and the refusals of a scale that merges, splits,
reorders or empties what the paper scale keeps apart (each one ConfigError line naming the target)."""
import copy

import pytest

from fedflat.core.errors import ConfigError
from fedflat.pipeline.scale import apply_scale
from fedflat.pipeline.study import load_study


def study(**experiments) -> dict:
    """A digits study with one table per experiment; `experiments` values override a default experiment."""
    base = {"datasets": ["digits"], "models": ["mlp"], "partitions": ["iid"], "algorithms": ["fedavg"], "seeds": [0]}
    return {"study": "s", "scale": "reduced",
            "training": {"num_clients": 20, "participation": 0.1, "rounds": 50, "local_steps": 10},
            "experiments": {name: {**base, **exp} for name, exp in experiments.items()},
            "tables": {f"table_{name}": {"experiment": name} for name in experiments}}


def test_participation_levels_that_collapse_are_refused():
    cfg = study(p05={"training": {"participation": 0.05}}, p10={})
    load_study(cfg)  # no scales: nothing to compare
    cfg["scales"] = {"reduced": {"training": {"num_clients": "x0.5"}}}  # 10 clients: 0.05 and 0.1 are both 1/round
    with pytest.raises(ConfigError) as e:
        load_study(cfg)
    msg = str(e.value)
    assert msg.startswith("scales.reduced: merges runs that differ at paper scale: training.clients_per_round 1 vs 2")
    assert "-> 1 vs 1 (participation 0.05 vs 0.1" in msg and "experiments p05, p10; targets table_p05, table_p10" in msg
    cfg["scales"]["reduced"]["training"]["num_clients"] = "x2"  # 40 clients: 2 vs 4 per round
    load_study(cfg)


def test_merge_of_runs_that_only_measure_differently_is_still_a_merge():
    """A round hook changes what is measured, not what is trained: 1%/2% at 1 client each merge."""
    cfg = study(a={"training": {"participation": 0.05}}, b={"analysis": {"hooks": {"divergence": {}}}})
    cfg["scales"] = {"reduced": {"training": {"num_clients": "x0.5"}}}
    with pytest.raises(ConfigError, match="merges runs that differ at paper scale"):
        load_study(cfg)


def test_split_and_reordered_comparisons_are_refused():
    cfg = study(k10={}, k50={"training": {"local_steps": 50}}, again={})
    cfg["scales"] = {"reduced": {"training": {"local_steps": "x0.2"}}}
    s = load_study(cfg)
    assert sorted({sp.local_steps for sp in s.runs.values()}) == [2, 10]
    inv = copy.deepcopy(cfg)
    inv["experiments"]["k50"]["scales"] = {"reduced": {"training": {"local_steps": 1}}}
    with pytest.raises(ConfigError, match=r"scales.reduced: does not keep a comparison's order: training.local_work "
                                          r"10 < 50 at paper scale but 2 vs 1 at this scale \(experiments k10, k50; "
                                          r"targets table_k10, table_k50\)"):
        load_study(inv)
    split = copy.deepcopy(cfg)  # `again` is `k10`'s run at paper scale
    split["experiments"]["again"]["scales"] = {"reduced": {"training": {"local_steps": 3}}}
    with pytest.raises(ConfigError, match=r"splits a run shared at paper scale: training.local_work 2 vs 3 "
                                          r"\(experiments again, k10"):
        load_study(split)


def test_syn_round_scales_with_rounds_and_is_refused_when_never_reached():
    cfg = study(t6={"algorithms": ["fedsynsam", {"preset": "fedsynsam", "label": "R=200", "params": {"syn_round": 200}},
                                   "dynafed"], "training": {"rounds": 1000}})
    load_study(cfg)
    cfg["scales"] = {"reduced": {"training": {"rounds": "x0.1"}}}  # 100 rounds: R = 200 never reached
    with pytest.raises(ConfigError, match=r"^scales.reduced: experiments.t6: FedSynSAM R=200 syn_round 200 >= training.rounds 100: "
                                          r"D_syn is never distilled nor used, so the run is FedSAM \(targets table_t6\)"):
        load_study(cfg)
    cfg["scales"]["reduced"]["algorithm_params"] = {"fedsynsam": {"syn_round": "x0.1", "syn_steps": 1},
                                                    "dynafed": {"syn_round": 7}}
    s = load_study(cfg)
    got = {(sp.algorithm, sp.hparams["syn_round"], sp.hparams["syn_steps"]) for sp in s.runs.values()}
    assert got == {("fedsynsam", 3, 1), ("fedsynsam", 20, 1), ("dynafed", 7, 0)}  # preset default 30 and 200, x0.1
    plain = study(t={"algorithms": ["dynafed"], "training": {"rounds": 30}})
    plain["scale"] = "paper"
    with pytest.raises(ConfigError, match=r"^experiments.t: DynaFed syn_round 30 >= training.rounds 30: .* FedAvg"):
        load_study(plain)


@pytest.mark.parametrize("preset", ["fedprox", "fedsol", "fedacg", "proj_kl"])
def test_one_local_step_hollows_a_proximal_method(preset):
    cfg = study(e={"algorithms": [preset], "training": {"local_steps": 1}})
    with pytest.raises(ConfigError, match=r"experiments.e: .* with training.local_steps 1: .*zero.* give it at least 2"):
        load_study(cfg)
    cfg["experiments"]["e"]["training"]["local_steps"] = 2
    load_study(cfg)
    for plain in ("fedavg", "fedsam", "scaffold"):
        load_study(study(e={"algorithms": [plain], "training": {"local_steps": 1}}))


@pytest.mark.parametrize("edit,match", [
    (lambda s: s.update(algorithm_params={"fedsynsm": {"syn_round": 3}}), r"scales.reduced.algorithm_params: unknown value 'fedsynsm'"),
    (lambda s: s.update(algorithm_params={"fedsynsam": {"syn_rounds": 3}}),
     r"scales.reduced.algorithm_params.fedsynsam: unknown hyperparameter 'syn_rounds'; allowed: .*syn_round"),
    (lambda s: s.update(algorithm_params={"fedsynsam": {"beta": "x2"}}), r"fedsynsam.beta: 1.8 outside its domain"),
    (lambda s: s.update(algorithm_params={"fedsynsam": {"syn_profile": "x2"}}),
     r"scales.reduced.algorithm_params.fedsynsam.syn_profile: cannot multiply non-numeric value 'auto'"),
    (lambda s: s.update(training={"rounds": "x-"}), r"scales.reduced.training.rounds: 'x-' is not 'x<factor>'"),
    (lambda s: s.update(trainig={}), r"scales.reduced: unknown key 'trainig'"),
])
def test_bad_scale_overrides_name_the_key(edit, match):
    cfg = study(e={"algorithms": ["fedsynsam"], "training": {"rounds": 100}})
    cfg["scales"] = {"reduced": {}}
    edit(cfg["scales"]["reduced"])
    with pytest.raises(ConfigError, match=match):
        load_study(cfg)


def test_experiment_override_wins_and_the_paper_config_is_kept():
    cfg = study(a={}, b={"training": {"local_steps": 20}})
    cfg["scales"] = {"reduced": {"training": {"local_steps": "x0.5"}, "note": "half"},
                     "tiny": {"training": {"local_steps": 1}}}
    cfg["experiments"]["b"]["scales"] = {"reduced": {"training": {"local_steps": 7}}}
    out = apply_scale(cfg)
    assert out.config["experiments"]["a"]["training"]["local_steps"] == 5
    assert out.config["experiments"]["b"]["training"]["local_steps"] == 7
    assert out.paper["experiments"]["b"]["training"] == {"local_steps": 20} and "scales" not in out.paper["experiments"]["b"]
    assert out.info == {"name": "reduced", "note": "half", "datasets": {}, "models": {}}
    assert apply_scale({**cfg, "scale": "paper"}).paper is None
