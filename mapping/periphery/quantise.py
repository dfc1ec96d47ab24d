"""Uniform quantisers for couplers, receive gains and readout ADCs.

Notes
-----
Unsigned (couplers, x ∈ [0, R]): L = 2**b − 1 levels above zero, q(x) = R · round(L · clip(x, 0, R) / R) / L.
Signed (receive gains, ADC channels, x ∈ [−R, R]): L = 2**(b−1) − 1 levels each side of zero (mid-tread,
zero exact), q(x) = R · round(L · clip(x, −R, R) / R) / L; one bit is a sign-only (±R) quantiser.
With ``bits=None`` only the clip to the range applies.

:meth:`Quantiser.straight_through` is the same quantiser on torch tensors with a straight-through gradient
(the value of q(x), the gradient of the clipped x), for hardware-aware training (:mod:`mapping.hwa`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Quantiser"]


@dataclass(frozen=True, kw_only=True)
class Quantiser:
    """A uniform mid-tread quantiser.

    Attributes
    ----------
    bits : int or None
        Resolution; None: analog (clip only).
    range : float
        Full scale R (> 0), in the units of the quantised quantity.
    signed : bool
        Symmetric range [−R, R] if True, else [0, R].
    """

    bits: int | None
    range: float
    signed: bool = False

    def __post_init__(self):
        if self.bits is not None and (isinstance(self.bits, bool) or not isinstance(self.bits, int) or not 1 <= self.bits <= 24):
            raise ValueError(f"Quantiser.bits must be None or an integer in [1, 24], got {self.bits!r}")
        if not (math.isfinite(self.range) and self.range > 0):
            raise ValueError(f"Quantiser.range must be finite and > 0, got {self.range!r}")

    @property
    def levels(self) -> int | None:
        """Number of non-zero levels on one side (None when analog)."""
        if self.bits is None:
            return None
        return max(2 ** (self.bits - 1) - 1, 1) if self.signed else 2**self.bits - 1

    @property
    def step(self) -> float:
        """Quantisation step (0.0 when analog)."""
        return 0.0 if self.bits is None else self.range / self.levels

    def __call__(self, x):
        x = np.asarray(x, dtype=np.float64)
        lo = -self.range if self.signed else 0.0
        y = np.clip(x, lo, self.range)
        if self.bits is None:
            return y
        if self.signed and self.bits == 1:
            return np.where(y >= 0, self.range, -self.range)
        L = self.levels
        return np.round(y * (L / self.range)) * (self.range / L)

    def straight_through(self, x):
        """q(x) on a torch tensor, differentiable: the forward value is the quantised one, the gradient that of
        the clip (zero outside the range, as on the chip; the rounding passes the gradient straight through)."""
        import torch

        lo = -self.range if self.signed else 0.0
        x = x.clamp(lo, self.range)
        if self.bits is None:
            return x
        if self.signed and self.bits == 1:
            q = torch.where(x >= 0, torch.full_like(x, self.range), torch.full_like(x, -self.range))
        else:
            L = self.levels
            q = torch.round(x * (L / self.range)) * (self.range / L)
        return x + (q - x).detach()

    def to_dict(self) -> dict:
        return {"bits": self.bits, "range": float(self.range), "signed": bool(self.signed)}

    @classmethod
    def from_dict(cls, d: dict) -> "Quantiser":
        if not isinstance(d, dict) or set(d) != {"bits", "range", "signed"}:
            raise ValueError(f"a quantiser must have exactly the keys bits, range, signed; got {d!r}")
        return cls(bits=d["bits"], range=float(d["range"]), signed=bool(d["signed"]))
