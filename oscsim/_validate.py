"""Argument checks shared by the frozen configurations of `oscsim` (models, training): one wording for each
refusal, naming the field and the valid values."""

from __future__ import annotations

__all__ = ["check_choice", "check_positive_ints"]


def check_choice(name: str, value, valid) -> None:
    """Refuse ``value`` unless it is one of ``valid`` (the message lists them)."""
    if value not in valid:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, valid))}, got {value!r}")


def check_positive_ints(obj, *names: str) -> None:
    """Refuse any attribute ``names`` of ``obj`` that is not an integer >= 1 (bools are refused)."""
    for name in names:
        v = getattr(obj, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
