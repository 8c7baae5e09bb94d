"""fedflat: federated sharpness-aware minimization, reproduced side by side."""

from .core.util.numerics import enter_from_environment as _numerics_from_environment

__version__ = "0.1.0"

# FEDFLAT_NUMERICS=portable pins the machine-dependent kernels before any fedflat module imports torch
# (core/util/numerics.py); the entry points choose the mode themselves before they import torch.
_numerics_from_environment()
