"""Flatness and curvature analysis of trained federated models, defined once.

  loaded_run.py         a trained run and fixed evaluation subsets: the input of every command
  hessian.py            top-k eigenvalues and trace (PyHessian, wrapped) + Lanczos spectral density
  sharpness.py          global sharpness F(θ+ρ∇F/‖∇F‖) − F(θ)
  directions.py         filter-normalised random directions (Li et al. 2018)
  landscape.py          1-D and 2-D loss surfaces along those directions
  cosine.py             cosine between an algorithm's perturbation and the true global one
  divergence.py         weight divergence, proximal loss, class-wise and local accuracy
  stability.py          empirical stability: paired runs on neighbouring datasets
  analysis_hooks.py     the per-round measurements as RoundHooks (registered into fl.round_hooks.ROUND_HOOKS)
  analysis_commands.py  `python -m fedflat.analysis <cmd>` (entered through fedflat/analysis.py): the Snakemake
                        rules' per-run analysis files
  analysis_kinds.py     figure/table kinds (registered into fedflat.core.kind_registry)
  overlay.py            figure kind landscape_overlay: a second run's surface overlaid (FedSynSAM Fig. 1)

This package's __init__ imports nothing on purpose: the composition root (fedflat.plugins) imports the
modules that register hooks and kinds, and importing one analysis module should not load the others.
"""
