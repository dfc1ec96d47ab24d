"""Phase readout model: a quadrature pair of phase detectors, noise, ADC quantisation, inversion.

Notes
-----
A detector compares an oscillator with the reference clock and outputs a function of the phase θ:

- cosine (mixer): channels (cos θ, sin θ); θ̂ = atan2(y_s, y_c);
- triangular (XOR-type): channels (tri(θ), tri(θ − π/2)) with tri(θ) = 1 − 2|wrap(θ)|/π, inverted with the
  diamond angle: on the unit diamond |y_c| + |y_s| = 1 the phase is piecewise linear in y_s / (|y_c| + |y_s|).

Each channel gets Gaussian noise of RMS ``noise_rad / sqrt(averaging_cycles)`` (in channel full-scale units)
and is quantised over [−1, 1] by a signed ``bits``-bit ADC. Near the zero crossing a channel error ε is a phase
error ε (cosine) or ε·π/2 (triangular).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .quantise import Quantiser

__all__ = ["PhaseReadout", "wrap"]


def wrap(x):
    """Wrap angles to (−π, π]."""
    x = np.asarray(x, dtype=np.float64)
    return np.pi - np.mod(np.pi - x, 2 * np.pi)


def _tri(x):
    return 1.0 - 2.0 * np.abs(wrap(x)) / np.pi


def _diamond_angle(c, s):
    n = np.abs(c) + np.abs(s)
    n = np.where(n > 0, n, 1.0)
    c, s = c / n, s / n
    # quadrant by quadrant: θ ∈ [0, π/2]: s = 2θ/π (c = 1 − s), etc.
    theta = np.where(
        s >= 0,
        np.where(c >= 0, s * np.pi / 2, np.pi / 2 + (-c) * np.pi / 2),
        np.where(c >= 0, s * np.pi / 2, -np.pi / 2 - (-c) * np.pi / 2),
    )
    return wrap(theta)


@dataclass(frozen=True, kw_only=True)
class PhaseReadout:
    """Quadrature phase detector with noise and an ADC.

    Attributes
    ----------
    response : {'cosine', 'triangular'}
    noise_rad : float
        Per-channel RMS noise for a one-cycle measurement (channel full-scale units).
    bits : int or None
        ADC resolution per channel over [−1, 1].
    averaging_cycles : float
        Detector integration window; noise RMS scales as 1/sqrt(averaging_cycles).
    """

    response: str = "cosine"
    noise_rad: float = 0.0
    bits: int | None = None
    averaging_cycles: float = 1.0

    def __post_init__(self):
        if self.response not in ("cosine", "triangular"):
            raise ValueError(f"response must be 'cosine' or 'triangular', got {self.response!r}")
        if not (math.isfinite(self.noise_rad) and self.noise_rad >= 0):
            raise ValueError(f"noise_rad must be finite and >= 0, got {self.noise_rad!r}")
        if not self.averaging_cycles > 0:
            raise ValueError(f"averaging_cycles must be > 0, got {self.averaging_cycles!r}")

    @property
    def effective_noise(self) -> float:
        """Per-channel noise RMS after averaging."""
        return self.noise_rad / math.sqrt(self.averaging_cycles)

    def channels(self, theta):
        """Noise-free detector outputs (y_c, y_s) for phases θ [rad]."""
        theta = np.asarray(theta, dtype=np.float64)
        if self.response == "cosine":
            return np.cos(theta), np.sin(theta)
        return _tri(theta), _tri(theta - np.pi / 2)

    def invert(self, yc, ys):
        """Phase estimate [rad, (−π, π]] from detector outputs."""
        if self.response == "cosine":
            return np.arctan2(ys, yc)
        return _diamond_angle(yc, ys)

    def measure(self, theta, rng: np.random.Generator | None = None):
        """Measured phases θ̂ (same shape as θ), wrapped to (−π, π].

        Parameters
        ----------
        theta : array_like
            True phases [rad].
        rng : numpy.random.Generator, optional
            Source of the detector noise; required when ``noise_rad > 0``.
        """
        yc, ys = self.channels(theta)
        sig = self.effective_noise
        if sig > 0:
            if rng is None:
                raise ValueError("PhaseReadout.measure needs an rng when noise_rad > 0")
            yc = yc + sig * rng.standard_normal(yc.shape)
            ys = ys + sig * rng.standard_normal(ys.shape)
        if self.bits is not None:
            q = Quantiser(bits=self.bits, range=1.0, signed=True)
            yc, ys = q(yc), q(ys)
        return self.invert(yc, ys)

    def to_dict(self) -> dict:
        return {"response": self.response, "noise_rad": float(self.noise_rad), "bits": self.bits,
                "averaging_cycles": float(self.averaging_cycles)}
