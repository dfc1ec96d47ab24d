"""The argument checks of the chip configuration's dataclasses (:mod:`mapping.config`): each names the field and
its valid range in the error."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["_check_bits", "_check_pos", "_check_int", "_check_choice"]


def _check_bits(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value.lower() == "none":
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not (1 <= value <= 24):
        raise ValueError(f"{name} must be an integer in [1, 24] or None/'none' (unquantised), got {value!r}")
    return value


def _check_pos(name: str, value: Any, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    v = float(value)
    ok = math.isfinite(v) and (v >= 0 if allow_zero else v > 0)
    if not ok:
        raise ValueError(f"{name} must be finite and {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return v


def _check_int(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {value!r}")
    return value


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value
