"""What is added to the local step (correction parts)."""
from __future__ import annotations

from ..registry import Registry
from .base import Correction

CORRECTIONS: Registry[type[Correction]] = Registry("correction")
