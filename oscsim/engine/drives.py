"""Injection terms shared by the phase and complex-amplitude models."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from ._checks import as_real_array, check_nonnegative

__all__ = ["SubharmonicInjection", "ExternalDrive"]


@dataclass(frozen=True)
class SubharmonicInjection:
    """Sub-harmonic injection locking, adding ``−K_s sin(m θ_i − ψ_i)`` to dθ_i/dt.

    Parameters
    ----------
    strength : float or array_like, shape (N,) or (G, N)
        K_s >= 0 [rad per time unit].
    order : int
        m >= 1 (2: the injected signal is at twice the oscillator frequency; the phase binarises to
        {ψ/2, ψ/2 + π}, as in oscillator Ising machines).
    phase : float or array_like, shape (N,) or (G, N)
        ψ_i [rad].
    """

    strength: object
    order: int = 2
    phase: object = 0.0

    def __post_init__(self):
        s = as_real_array("SubharmonicInjection.strength", self.strength)
        check_nonnegative("SubharmonicInjection.strength", s)
        if isinstance(self.order, bool) or not isinstance(self.order, numbers.Integral) or self.order < 1:
            raise ValueError(f"SubharmonicInjection.order: must be an integer >= 1, got {self.order!r}")
        p = as_real_array("SubharmonicInjection.phase", self.phase)
        s.setflags(write=False)
        p.setflags(write=False)
        object.__setattr__(self, "strength", s)
        object.__setattr__(self, "phase", p)
        object.__setattr__(self, "order", int(self.order))


@dataclass(frozen=True)
class ExternalDrive:
    """A periodic external drive.

    In a `PhaseNetwork` it adds ``F_i sin(ω_e t + ψ_i − θ_i)`` to dθ_i/dt; in a `StuartLandauNetwork` it
    adds ``F_i exp(−i(ω_e t + ψ_i))`` to dc_i/dt (the convention c ∝ e^{−iωt} of the spin-torque model).

    Parameters
    ----------
    amplitude : float or array_like, shape (N,) or (G, N)
        F_i >= 0 [rad per time unit for phases; amplitude per time unit for complex amplitudes].
    angular_frequency : float
        ω_e [rad per time unit].
    phase : float or array_like, shape (N,) or (G, N)
        ψ_i [rad].
    """

    amplitude: object
    angular_frequency: float
    phase: object = 0.0

    def __post_init__(self):
        a = as_real_array("ExternalDrive.amplitude", self.amplitude)
        check_nonnegative("ExternalDrive.amplitude", a)
        w = as_real_array("ExternalDrive.angular_frequency", self.angular_frequency)
        if w.ndim != 0:
            raise ValueError("ExternalDrive.angular_frequency: must be a scalar [rad per time unit]")
        p = as_real_array("ExternalDrive.phase", self.phase)
        a.setflags(write=False)
        p.setflags(write=False)
        object.__setattr__(self, "amplitude", a)
        object.__setattr__(self, "angular_frequency", float(w))
        object.__setattr__(self, "phase", p)
