"""The one grammar of distributions over a chip field, shared by a sweep's ``[sample.fields]`` and a design
search's ``[space]``: the same words, the same rules, the same messages.

In TOML a field's distribution is a one-key table::

    "coupling.spread"   = { uniform = [0.0, 0.1] }        # lo < hi, finite
    "readout.noise_rad" = { loguniform = [1e-3, 0.1] }    # 0 < lo < hi
    "coupling.bits"     = { int = [3, 8] }                # integers, lo < hi, both ends included
    "device"            = { choice = ["ideal", "ring-macromodel"] }   # numbers, strings, booleans, "none"; no repeat

A range of one value (lo = hi) is not a distribution: set the field in the base chip. A sweep draws from it with
NumPy (:meth:`Distribution.draw`); a design search hands it to Optuna (:meth:`Distribution.optuna`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Distribution", "KINDS", "parse_distribution"]

#: The distribution words, in the order messages list them.
KINDS = ("uniform", "loguniform", "int", "choice")


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


@dataclass(frozen=True, kw_only=True)
class Distribution:
    """A distribution over one chip field (see the module notes).

    Attributes
    ----------
    where : str
        The spec key it was read from (``sample.fields."coupling.bits"``, ``space."coupling.bits"``): every message
        names it.
    kind : {'uniform', 'loguniform', 'int', 'choice'}
    values : tuple
        (lo, hi) for the ranges; the choices for ``choice``.
    """

    where: str
    kind: str
    values: tuple

    def __post_init__(self):
        where = self.where
        if self.kind not in KINDS:
            raise ValueError(f"{where}: the distribution must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not isinstance(self.values, tuple):
            raise ValueError(f"{where}: {self.kind} takes a list, got {self.values!r}")
        if self.kind == "choice":
            if not self.values:
                raise ValueError(f"{where}: choice is empty; give at least one value")
            bad = [v for v in self.values if not (v is None or isinstance(v, (bool, int, float, str)))]
            if bad:
                raise ValueError(f"{where}: choices must be numbers, strings, booleans or 'none', got {bad}")
            keys = [json.dumps(v, sort_keys=True) for v in self.values]
            if len(set(keys)) != len(keys):
                raise ValueError(f"{where}: choice repeats a value: {list(self.values)}")
            return
        if len(self.values) != 2 or not all(_is_number(x) for x in self.values):
            raise ValueError(f"{where}: {self.kind} takes [lo, hi] (two numbers), got {list(self.values)}")
        lo, hi = self.values
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"{where}: {self.kind} needs finite lo < hi, got [{lo}, {hi}] (one value: set the field "
                             f"in the base chip)")
        if self.kind == "loguniform" and lo <= 0:
            raise ValueError(f"{where}: loguniform needs lo > 0, got {lo}")
        if self.kind == "int" and not (_is_int(lo) and _is_int(hi)):
            raise ValueError(f"{where}: int needs integer bounds, got [{lo}, {hi}]")

    def extremes(self) -> tuple:
        """Both ends of a range, every choice (the values a spec validates and a probe tries)."""
        return tuple(self.values)

    def draw(self, rng: np.random.Generator, n: int) -> list:
        """``n`` values drawn with ``rng`` (Python scalars)."""
        lo, hi = (self.values + (None, None))[:2]
        if self.kind == "uniform":
            return rng.uniform(lo, hi, n).tolist()
        if self.kind == "loguniform":
            return np.exp(rng.uniform(math.log(lo), math.log(hi), n)).tolist()
        if self.kind == "int":
            return rng.integers(lo, hi + 1, n).tolist()
        return [self.values[i] for i in rng.integers(0, len(self.values), n)]

    def optuna(self):
        """The Optuna distribution."""
        import optuna

        if self.kind == "choice":
            return optuna.distributions.CategoricalDistribution(list(self.values))
        if self.kind == "int":
            return optuna.distributions.IntDistribution(int(self.values[0]), int(self.values[1]))
        return optuna.distributions.FloatDistribution(float(self.values[0]), float(self.values[1]),
                                                      log=self.kind == "loguniform")


def parse_distribution(where: str, d, normalise=lambda v: v) -> Distribution:
    """A :class:`Distribution` from its TOML form ``{kind = [...]}`` read at the spec key ``where``.

    ``normalise``: applied to each choice (a field's 'none' and number types)."""
    if not isinstance(d, dict) or len(d) != 1:
        raise ValueError(f"{where} must be one of {{{' | '.join(k + ' = [...]' for k in KINDS)}}}, got {d!r}")
    (kind, p), = d.items()
    if kind not in KINDS:
        raise ValueError(f"{where}: the distribution must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(p, list):
        raise ValueError(f"{where}: {kind} takes a list, got {p!r}")
    vals = tuple(normalise(x) for x in p) if kind == "choice" else tuple(p)
    return Distribution(where=where, kind=kind, values=vals)
