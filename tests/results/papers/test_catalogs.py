"""Each paper catalog expands to exactly the paper's grid (after deduplication) at every scale.

The expected counts are derived here from the papers' table definitions (each paper's tables
and figures), independently of the YAML, so a table that silently loses a row changes the count.
"""
import copy
import json

import pytest

from fedflat.core.errors import ConfigError
from fedflat.results.papers.catalog import prepare_catalog
from fedflat.pipeline.scale import apply_scale
from fedflat.pipeline.study import load_study

from .paper_helpers import PAPERS, ROOT, paper_config

S3, S5 = 3, 5  # seeds: 3 where the paper does not say (FedNSAM, FedSOL, FedSynSAM, FedTOGA), 5 for FedSAGD

EXPECTED = {
    # T2: 2 datasets x 3 models x 9 methods; T4: p=2%,5% and α=0.1,0.3 x 9 (p=10% and α=0.6 are T2's runs);
    # T5: FedNSAM-S, FedDyn, FedNSAM-D x 2 α (the other rows are T4's); T6: 3 Nesterov variants x 2 α;
    # Fig. 5: 6 other λ, 4 other ρ; Fig. 2: FedSAM x 3 α + FedNSAM x 1 with the sharpness hook (distinct runs);
    # T3: 3 pretrained transformers x 9 methods on Tiny-ImageNet.
    "fednsam": (2 * 3 * 9 + 2 * 9 + 2 * 9 + 3 * 2 + 3 * 2 + 6 + 4 + (3 + 1) + 3 * 9) * S3,
    # T2: (CIFAR-10, CIFAR-100, EMNIST, Shakespeare) x 12 methods; T3: 4 splits x 9 at PR 1%;
    # T4: PR 5%, 10% x 9 (PR 1% is T3's, PR 2% is T2's); T8-T10: 7 + 6 + 6 settings (β=.9, μ=.001, λ=.01 shared);
    # Figs. 1-2 and the stability tables: no runs of their own (a hook on T2's runs, paired retraining).
    "fedsagd": (4 * 12 + 4 * 9 + 2 * 9 + 7 + 6 + 6) * S5,
    # T2: CIFAR-10 8 splits + 5 datasets x 2 splits, x 8 methods; T3: 3 datasets x 3 models x 4 methods;
    # T5: 3 targets x 4 ρ minus Head ρ=2 (= T2's FedSOL); Fig. 4a-c: FedAvg/FedSOL at 3 other sampling ratios,
    # 2 other epoch counts, 2 other lrs; Figs. 6, 7: FedAvg/FedSOL with analysis hooks (distinct runs);
    # T1: KL Base + 2 projections (None/L2 Base = T2's FedAvg/FedProx); T4: FedDyn, MOON Base + 5 Combined
    # x 3 datasets (FedProx/FedNova/SCAFFOLD Base = T2's); T10: A2, A3, A4, A6 (A0/A1 = T2's, A5 = T1's KL Base);
    # T9: FedAvg, PerFedAvg, FedBABU, kNN-Per, FedSOL-FT x 3 datasets with the personalize hook (distinct runs)
    # + Local-only x 3 datasets; Fig. 3: FedSOL at 4 ρ with the proximal_loss/sol_cosine hooks; Fig. 5a: fixed Λ
    # at 4 ρ (adaptive = T5's Head runs); Fig. 5b: FedSOL ρ=1 full with the lambda_layers hook.
    "fedsol": (8 * 8 + 5 * 2 * 8 + 3 * 3 * 4 + 3 * 4 - 1 + (3 + 2 + 2) * 2 + 2 + 2 + 3 + 7 * 3 + 4
               + 5 * 3 + 3 + 4 + 4 + 1) * S3,
    # T2: 3 blocks x 2 datasets x 4 compressors x 9 methods; T3: 4 x 9; T4: K=20 FedAvg/FedLESAM and K=5 FedSynSAM
    # on 2 blocks x 4 compressors; T1: 6 FedAvg settings; Fig. 5: 3 methods x 5 ρ; T5-T7: 3 IPC + 3 R + 8 (η_x, η_α)
    # FedSynSAM settings off the default; Fig. 2: FedLESAM, FedSynSAM x 2 partitions with the cosine hook.
    "fedsynsam": (3 * 2 * 4 * 9 + 4 * 9 + 2 * 4 * 2 + 2 * 4 + 6 + 3 * 5 + 3 + 3 + 8 + 2 * 2) * S3,
    # T1: 18 methods (with FedRCL) x 8 splits x 2 federations; T2: 14 x 4 x 2 (CIFAR-10); T8: the same 14 x 4 x 2
    # on CIFAR-100 (its CIFAR-10 half is T2's); T11: 2 ablation variants x 2 datasets; Fig. 7: E = 1, 2, 10 (E=5 is
    # T1's); Fig. 6: 9 parameter values + 3 lr decays off the defaults; Fig. 8: 5 methods with the divergence hook;
    # Fig. 5: FedSpeed+NP, FedSMOO+NP x 2 datasets (the plain ones are T1's); Fig. 1: FedAvg IID (Dir runs are T1's).
    "fedtoga": (18 * 8 * 2 + 14 * 4 * 2 + 14 * 4 * 2 + 2 * 2 + 3 + 9 + 3 + 5 + 2 * 2 + 1) * S3,
}


@pytest.mark.parametrize("scale", ["tiny", "reduced", "paper"])
@pytest.mark.parametrize("paper", PAPERS)
def test_catalog_runs_equal_paper_grid(paper, scale):
    study = load_study(paper_config(paper, scale))
    assert len(study.runs) == EXPECTED[paper]
    assert study.tables_dir == f"results/papers/{paper}" and study.figures_dir == f"figures/{paper}"
    assert study.tables, "every paper has tables"
    for name, t in study.tables.items():
        assert t["scale_info"]["name"] == scale and t.get("ref"), name


def test_tiny_uses_standins_only():
    study = load_study(paper_config("fednsam", "tiny"))
    assert {s.dataset for s in study.runs.values()} == {"digits_as_cifar10", "digits_as_cifar100", "digits_as_tiny_imagenet"}
    assert all(s.model.startswith("mlp_as_") and s.training["rounds"] == 2 for s in study.runs.values())


def test_shared_runs_are_computed_once():
    """FedNSAM Table 4's p=10% column and Table 2's CIFAR-100/ResNet-18 cells are the same runs."""
    study = load_study(paper_config("fednsam", "tiny"))
    t2 = {rid for rid, lab in study.experiments["t2"] if lab["model"].endswith("resnet18") and lab["dataset"].endswith("cifar100")}
    assert t2 == {rid for rid, _ in study.experiments["t4_p10"]}


def test_scale_that_merges_runs_is_refused():
    cfg = paper_config("fednsam", "tiny")
    cfg["scales"]["tiny"]["training"]["participation"] = 0.5  # would merge Table 4's p=2%/5%/10% runs
    with pytest.raises(ConfigError, match="scales.tiny: merges runs that differ at paper scale: "
                                          "training.clients_per_round .*table4"):
        load_study(cfg)


def test_relative_override_and_bad_scale():
    cfg = paper_config("fedtoga", "reduced")
    out = apply_scale(cfg).config
    assert out["experiments"]["t1_c10_n200"]["training"]["num_clients"] == 40  # 200 x 0.2
    bad = copy.deepcopy(cfg)
    bad["scale"] = "huge"
    with pytest.raises(ConfigError, match="scale: unknown value 'huge'"):
        apply_scale(bad)


def test_pending_entry_waits_for_its_kind_and_hooks():
    cfg = paper_config("fednsam", "tiny")
    cfg["pending_figures"] = {
        "later": {"kind": "no_such_kind", "experiment": "t2"},
        "now": {"kind": "paper_curves", "experiment": "t2", "panels": [{"title": "x"}]},
        "hook_missing": {"kind": "paper_curves", "waits_for": "no_such_hook", "experiment": "t2", "panels": [{}]},
    }
    out, caption = prepare_catalog(cfg)
    assert "now" in out["figures"] and "later" not in out["figures"] and "hook_missing" not in out["figures"]
    assert "waits_for" not in out["figures"]["now"]
    assert not {"pending_figures", "pending_tables", "paper"} & set(out) and caption["paper"] == "FedNSAM"
    assert "scales" not in apply_scale(out).config


def test_unregistered_hook_is_dropped_not_fatal(capsys):
    cfg = paper_config("fednsam", "tiny")
    cfg["experiments"]["f2_sam"]["analysis"] = {"hooks": {"no_such_hook": {}}}
    out, _ = prepare_catalog(cfg)
    assert out["experiments"]["f2_sam"]["analysis"]["hooks"] == {}
    assert "no_such_hook is not registered yet" in capsys.readouterr().err


def test_report_caption_and_compute_proxy():
    from fedflat.results.papers.catalog import report_caption
    from fedflat.results.papers.compute import run_sample_grads

    study = load_study(paper_config("fednsam", "tiny"))
    cap = report_caption(study, "tables", "table4")
    assert cap.startswith("FedNSAM Table 4: CIFAR-100 ResNet-18") and "(scale: tiny; digits stand-ins" in cap
    spec = next(s for s in study.runs.values() if s.algorithm == "fedsam")
    # 2 rounds x round(0.1 x 40) = 4 clients x 2 steps x batch 16 x 2 gradients per SAM step
    assert run_sample_grads(spec) == 2 * 4 * 2 * 16 * 2


@pytest.mark.parametrize("paper", PAPERS)
def test_catalog_passes_the_workflow_schema(paper):
    import jsonschema
    import yaml

    from .paper_helpers import ROOT

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(paper_config(paper, "tiny")))
    assert not errors, errors[0].message


def test_a_methods_own_training_scales_like_the_experiments():
    """An algorithm entry's training (FedSAGD's per-method EMNIST lr) follows the scale's overrides:
    an absolute override replaces it, a factor multiplies it."""
    cfg = paper_config("fedsagd", "tiny")
    cfg["experiments"]["t2_emnist"]["algorithms"] = [{"preset": "fedavg", "training": {"lr": 0.1, "rounds": 100}},
                                                     "fedprox"]
    cfg["scales"]["tiny"]["training"] = {**cfg["scales"]["tiny"]["training"], "rounds": "x0.5"}
    entry = apply_scale(cfg).config["experiments"]["t2_emnist"]["algorithms"][0]
    assert entry["training"] == {"lr": cfg["scales"]["tiny"]["training"]["lr"], "rounds": 50}
    paper = apply_scale(paper_config("fedsagd", "paper")).config["experiments"]["t2_emnist"]["algorithms"]
    assert paper == paper_config("fedsagd", "paper")["experiments"]["t2_emnist"]["algorithms"]  # untouched


@pytest.mark.parametrize("paper", PAPERS)
def test_reduced_reads_real_data_and_tiny_only_standins(paper):
    """`reduced` trains on the real data sets (MNIST, Fashion-MNIST, Shakespeare included); stand-ins only at `tiny`."""
    used = {}
    for scale in ("paper", "reduced", "tiny"):
        out = apply_scale(paper_config(paper, scale)).config
        used[scale] = {d for e in out["experiments"].values() for d in e.get("datasets") or []}
    assert used["reduced"] == used["paper"] and not any(d.startswith("digits") for d in used["reduced"])
    assert all(d.startswith("digits_as_") for d in used["tiny"])
    real = {"fedsol": "mnist-aug", "fedsynsam": "fmnist", "fedsagd": "shakespeare"}.get(paper)
    assert real is None or real in used["reduced"]


# ------------------------------------------------------------------ what a scale must keep (issue #13, item 8)
def _trains_alike(spec) -> str:
    """What drives a run's training, written out here independently of fedflat.pipeline.scale: participation
    counts as the clients per round it gives, measurement-only settings are left out."""
    tr = {k: v for k, v in spec.training.items()
          if k not in ("participation", "backend", "eval_every", "eval_batch_size", "eval_subset", "checkpoint_every")}
    return json.dumps([spec.dataset, spec.partition, spec.model, spec.algorithm, spec.seed, spec.hparams, spec.uplink,
                       spec.model_kwargs, tr, max(1, round(spec.training["participation"] * spec.training["num_clients"]))],
                      sort_keys=True)


@pytest.mark.parametrize("scale", ["tiny", "reduced"])
@pytest.mark.parametrize("paper", PAPERS)
def test_scaled_catalog_keeps_paper_runs_apart_and_reaches_every_threshold(paper, scale):
    """Every catalog loads at reduced and tiny; runs that train differently at paper scale still do
    (FedNSAM 2%/5%, FedSAGD 1%/2%, FedSOL 2%/5%/10% were 1 client per round each); every synthetic-data
    run reaches its R (FedSynSAM/DynaFed were FedSAM/FedAvg at 30 and 2 rounds)."""
    ps, ss = load_study(paper_config(paper, "paper")), load_study(paper_config(paper, scale))
    seen: dict[str, set] = {}
    for e, entries in ss.experiments.items():
        for (rid, _), (pid, _) in zip(entries, ps.experiments[e]):
            seen.setdefault(_trains_alike(ss.runs[rid]), set()).add(_trains_alike(ps.runs[pid]))
    assert all(len(v) == 1 for v in seen.values())
    for spec in ss.runs.values():
        if "syn_round" in spec.hparams:
            assert spec.hparams["syn_round"] < spec.rounds
            assert spec.hparams["syn_steps"] and spec.hparams["syn_steps"] <= spec.hparams["syn_round"]


def test_participation_levels_that_collapse_are_refused_naming_the_target():
    cfg = paper_config("fednsam", "reduced")
    cfg["scales"]["reduced"]["training"]["num_clients"] = "x0.2"  # 20 clients: 2% and 5% are both 1 client per round
    with pytest.raises(ConfigError, match=r"^scales.reduced: merges runs that differ at paper scale: "
                                          r"training.clients_per_round 2 vs 5 at paper scale -> 1 vs 1 \(participation "
                                          r"0.02 vs 0.05 of 20 clients\) \(experiments t4_p02, t4_p05; targets "
                                          r"fig6_heterogeneity, table4\)"):
        load_study(cfg)


def test_scale_that_never_reaches_syn_round_is_refused_naming_the_target():
    cfg = paper_config("fedsynsam", "reduced")
    cfg["scales"]["reduced"].pop("algorithm_params", None)  # R = 30 kept while FMNIST's 300 rounds become 30
    with pytest.raises(ConfigError, match=r"^scales.reduced: experiments.t2A_fmnist_q4: DynaFed syn_round 30 >= "
                                          r"training.rounds 30: D_syn is never distilled nor used, so the run is FedAvg "
                                          r"\(targets table2_A_fmnist, table2_A\)"):
        load_study(cfg)
    cfg = paper_config("fedsynsam", "tiny")
    cfg["scales"]["tiny"]["training"]["rounds"] = 12  # Table VI's R = 200 scales to 12
    with pytest.raises(ConfigError, match=r"experiments.t6_rounds: FedSynSAM R=200 syn_round 12 >= training.rounds 12"):
        load_study(cfg)


def _steps(study, experiment: str) -> int:
    """The experiment's local work: its local epochs where a catalog states them, else its local steps."""
    (k,) = {study.runs[rid].training.get("local_epochs") or study.runs[rid].local_steps
            for rid, _ in study.experiments[experiment]}
    return k


@pytest.mark.parametrize("scale", ["paper", "reduced", "tiny"])
def test_local_step_ratios_are_kept(scale):
    """FedSynSAM Table IV (20/10/5 steps), FedSOL Fig. 4b (1/5/10 epochs), FedTOGA Fig. 7 (1/2/5/10 epochs)."""
    syn = load_study(paper_config("fedsynsam", scale))
    assert _steps(syn, "t4A_k20_q4") == 2 * _steps(syn, "t2A_c10_q4") == 4 * _steps(syn, "t4A_k5_q4")
    assert _steps(syn, "t4C_k20_k25") == 2 * _steps(syn, "t2C_c10_k25") == 4 * _steps(syn, "t4C_k5_k25")
    sol = load_study(paper_config("fedsol", scale))
    if scale == "reduced":  # whole epochs on unbalanced clients (FedNova needs their unequal τ_i): 1/2/4, in order
        assert 2 * _steps(sol, "f4_e1") == _steps(sol, "t2_c10") and _steps(sol, "f4_e10") == 2 * _steps(sol, "t2_c10")
    else:
        assert 5 * _steps(sol, "f4_e1") == _steps(sol, "t2_c10") and _steps(sol, "f4_e10") == 2 * _steps(sol, "t2_c10")
    toga = load_study(paper_config("fedtoga", scale))
    e5 = _steps(toga, "t1_c10_n100")
    assert (5 * _steps(toga, "f7_e1"), 5 * _steps(toga, "f7_e2"), _steps(toga, "f7_e10")) == (e5, 2 * e5, 2 * e5)


@pytest.mark.parametrize("scale", ["reduced", "tiny"])
def test_no_pretrained_224px_transformer_below_paper_scale(scale):
    from fedflat.training.models import build_model
    from fedflat.results.papers.standins import PRETRAINED_TRANSFORMERS

    study = load_study(paper_config("fednsam", scale))
    t3 = {study.runs[rid].model: study.runs[rid].model_kwargs for rid, _ in study.experiments["t3"]}
    assert len(t3) == 3 and not set(t3) & set(PRETRAINED_TRANSFORMERS)
    if scale == "reduced":  # three different from-scratch ViTs at Tiny-ImageNet's 64 px
        import torch

        nets = [build_model(m, (3, 64, 64), 200, **kw) for m, kw in t3.items()]
        sizes = {sum(p.numel() for p in net.parameters()) for net in nets}
        assert len(sizes) == 3 and max(sizes) < 5_000_000
        assert all(net(torch.zeros(2, 3, 64, 64)).shape == (2, 200) for net in nets)


@pytest.mark.parametrize("scale, expected", [
    ("paper", {"t2_cifar": (5, "epochs"), "t2_emnist": (20, "epochs"), "t2_shakespeare": (1, "epochs"), "sens": (5, "epochs")}),
    ("reduced", {"t2_cifar": (1, "epochs"), "t2_emnist": (4, "epochs"), "t2_shakespeare": (1, "epochs"), "sens": (1, "epochs")}),
    ("tiny", {"t2_cifar": (2, "steps"), "t2_emnist": (2, "steps"), "t2_shakespeare": (2, "steps"), "sens": (2, "steps")})])
def test_fedsagd_local_work_is_in_the_papers_epochs(scale, expected):
    """A.3's epochs (CIFAR 5, EMNIST-L 20, Shakespeare 1 of [1, 5]) /5 at reduced; tiny runs 2 steps."""
    from fedflat.pipeline.scale import effective_settings

    study = load_study(paper_config("fedsagd", scale))
    for e, want in expected.items():
        (got,) = {(effective_settings(study.runs[r])["training.local_work"],
                   effective_settings(study.runs[r])["training.local_work_unit"]) for r, _ in study.experiments[e]}
        assert got == want, e


NOT_STUDIES = ("papers/settings/", "papers/gaps/", "papers/deviations/")  # settings, gap causes, deviations: read by code, not Snakemake
STUDY_CONFIGS = sorted(p.relative_to(ROOT / "config").as_posix() for p in (ROOT / "config").rglob("*.yaml")
                       if not p.relative_to(ROOT / "config").as_posix().startswith(NOT_STUDIES))


@pytest.mark.parametrize("name", STUDY_CONFIGS)
def test_every_study_config_passes_the_workflow_schema(name):
    """Snakemake validates the config before anything runs; a config that only the in-process loader reads would
    pass every other test and stop the workflow at its start (a table without a default `experiment` did)."""
    import jsonschema
    import yaml

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    cfg = yaml.safe_load((ROOT / "config" / name).read_text())
    assert isinstance(cfg, dict) and ("experiments" in cfg or "leaderboard" in cfg), f"{name} is not a study config"
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(cfg))
    assert not errors, f"{name}: {errors[0].message[:200]}"
