"""The composition root: the one place that imports every plugin, so every registry is complete.

A registry (PRESETS, PERTURBATIONS, CORRECTIONS, SERVERS, DATASETS, MODELS, ROUND_HOOKS, COMPRESSORS,
TABLE_KINDS, FIGURE_KINDS, STUDY_PREPARERS) never imports its own plugins: a plugin module registers itself
when it is imported, and this module imports each one once. The entry points import this module before they
touch a registry: the `fedflat` command (cli.main), every `python -m` main, the workflow's common rules
(workflow/rules/common.smk), the benchmarks (bench/__main__.py) and the tests (tests/conftest.py).

Adding a plugin (a preset, a part, a data set, a model, a hook, a compressor, a table or figure kind) is one
import line here; docs/extending.md has worked examples, docs/architecture.md the layers.
"""
from __future__ import annotations

# -- algorithms: parts, then the presets built from them (a preset checks its parts when it registers)
from .training.algorithms import losses  # noqa: F401  (kl, proximal-KL and contrastive loss parts)
from .training.algorithms import presets_sam  # noqa: F401  (SAM-family and proposed presets)
from .training.algorithms import presets_baselines  # noqa: F401  (baseline presets)
from .training.algorithms import presets_fedsol  # noqa: F401  (FedSOL Tables 1, 4, 10 variants; their parts)
from .training.algorithms import fedrcl  # noqa: F401  (FedRCL: relaxed contrastive loss part and preset)
from .training.algorithms import presets_personal  # noqa: F401  (FedSOL Table 9: PerFedAvg, FedBABU, kNN-Per, ...)
from .training.algorithms import oracle  # noqa: F401  (the exact global perturbation: a diagnostic upper bound)
from .training.algorithms import presets_2025  # noqa: F401  (FedGloSS, FedSWA, FedMoSWA, FedWMSAM, FedGMT, parts)
from .training.algorithms import fedgf  # noqa: F401  (FedGF: globally perturbed SAM point, its part and preset)
from .training.algorithms import fedscam  # noqa: F401  (FedSCAM: heterogeneity-modulated SAM radius and aggregation)
from .training.synsam import preset as _synsam  # noqa: F401  (FedSynSAM, DynaFed: their perturbation, server, presets)

# -- data sets and models
from .training.data import digits  # noqa: F401  (the embedded default: scikit-learn's digits)
from .training.data import torchvision_sets, folders, medmnist, shakespeare  # noqa: F401  (file-backed data sets)
from .training.models import small, lenet, resnet, vgg, convnet, lstm, vit, pretrained  # noqa: F401
from .results.papers import standins  # noqa: F401  (tiny-scale stand-ins of the paper data sets and models)

# -- round hooks and uplink compressors
from .pipeline.analysis import analysis_hooks  # noqa: F401  (sharpness, perturbation cosine, divergence, ...)
from .pipeline.analysis import personalize, fedsol_hooks, synsam_mix  # noqa: F401  (FedSOL Table 9, Fig. 5; FedSynSAM)
from .training.compression import quantization, topk  # noqa: F401  (quant, topk)

# -- table and figure kinds
from .pipeline.report import basic_kinds  # noqa: F401  (accuracy, convergence, partition_heatmap)
from .pipeline.analysis import analysis_kinds  # noqa: F401  (landscape, hessian kinds)
from .pipeline.analysis import overlay, stability_figures  # noqa: F401  (landscape_overlay; stability, local disc.)
from .results.papers import kinds_paper  # noqa: F401  (paper_table, paper_curves, paper_sweep)
from .results.papers import kinds_bars, toy_fedsol, kinds_tuning  # noqa: F401  (layer_bars, fedsol_toy, grid_search)
from .results.leaderboard import kinds as _leaderboard_kinds  # noqa: F401  (leaderboard table, Pareto, flatness, ranks)

# -- what the leaderboard and the paper catalogs add to a study (study.STUDY_PREPARERS)
from .results.leaderboard import preparer as _leaderboard_preparer  # noqa: F401
from .results.papers import catalog as _catalog  # noqa: F401
from .results.papers import picks as _picks  # noqa: F401  (settings a grid search of the same study picks)
