"""fedflat: federated sharpness-aware minimization, reproduced side by side."""

__version__ = "0.1.0"
