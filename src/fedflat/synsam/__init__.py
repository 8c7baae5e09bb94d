"""FedSynSAM (Gu et al.): trajectory-matching distillation of a synthetic set on the server and the
synthetic-guided SAM local step; DynaFed as its baseline. Presets register from `preset`, imported
at the end of algorithms/presets.py. See docs/fedsynsam.md."""
from .. import algorithms as _algorithms  # noqa: F401  (load the registries first: they import our presets)
