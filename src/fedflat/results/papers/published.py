"""Published values as printed in the papers: "79.63±0.27", "96.16 (0.19)", "1000+", "-", 81.39."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Optional

from ...core.errors import ConfigError

_NUM = r"[-+]?\d+(?:\.\d+)?"
_MEAN_STD = re.compile(rf"^\s*({_NUM})\s*%?\s*(?:±\s*({_NUM})|\(\s*({_NUM})\s*\))?\s*%?\s*$")
_PLUS = re.compile(r"^\s*(\d+)\s*\+\s*$")
_MISSING = {"", "-", "–", "—", "?", "n/a", "na"}


@dataclass(frozen=True)
class Published:
    text: str
    mean: Optional[float] = None
    std: Optional[float] = None
    never: bool = False  # "1000+": the target was never reached within that many rounds

    @property
    def missing(self) -> bool:
        return self.mean is None and not self.never


def parse_published(value: Any, key: str = "published") -> Published:
    if value is None:
        return Published("-")
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected a number or a string like '79.63±0.27', got {value!r}")
    if isinstance(value, (int, float)):
        return Published(f"{value:g}", float(value))
    text = str(value).strip()
    if text.lower() in _MISSING:
        return Published(text or "-")
    m = _PLUS.match(text)
    if m:
        return Published(text, float(m.group(1)), never=True)
    if text.lower().endswith("(failed)"):  # FedSOL: "10.00 (Failed)" = diverged to chance level
        return Published(text, float(text.split()[0]))
    m = _MEAN_STD.match(text)
    if not m:
        raise ConfigError(f"{key}: cannot read {text!r}; forms: 79.63, '79.63±0.27', '96.16 (0.19)', '1000+', '-'")
    std = m.group(2) or m.group(3)
    return Published(text, float(m.group(1)), float(std) if std is not None else None)


def fmt(x: Optional[float], digits: int = 2) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"
