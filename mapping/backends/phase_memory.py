"""Key phases in decode: re-injected from SRAM at every token, or held in running oscillators (a phase memory).

Physical model
--------------
In decode the chip computes token t against the keys of tokens u < t. Each key is an oscillator phase: θ_u
(the value step's source oscillators, every (layer, bank, head, coordinate)) and, in the analog-score mode,
θ_u + ω u (the rotated key oscillators). Two ways to have it there at token t (``[decode] keys``):

- **re-injected** (:class:`Reinjection`): the phase is read from SRAM and written by injection locking at every
  token, the oscillator off in between. The key-side error at step t is a fresh write error w_{t,u}
  (:mod:`mapping.periphery.injection`; zero when ``injection.mode = "ideal"``), independent for every (t, u).
- **held** (:class:`HeldMemory`): the phase is written once (error w_u) and the oscillator keeps running. In the
  frame of the reference clock its phase then wanders as the free-running SDE dφ = ε_u dt + σ_u dW
  (:func:`mapping.periphery.readout.free_running_samples`: the same model the readout window uses), so at
  age a = t − u tokens, N = Δt f₀ cycles per token (Δt the inter-token time),

      k_{t,u} = w_u + E_u(a),   E_u(a) = ε_u N a + σ_u sqrt(N) Σ_{i=1..a} ξ_{u,i},   ξ ~ N(0, 1),

  one Brownian path per held oscillator (consecutive ages share it). ε_u is the oscillator's residual angular
  frequency after the trim DAC plus the temperature drift between calibration and run (the chip's
  ``freq_residual_rel``); σ_u² = D_u / f₀ its phase diffusion per cycle (the device's ``diffusion`` at the chip's
  temperature, per-instance). Predicted RMS over the chip's oscillators: sqrt(⟨σ²⟩ N a + ⟨ε²⟩ N² a²)
  (:func:`held_error_rms`).

Where it holds, and what it leaves out: the oscillator keeps its amplitude and its phase model (weak
perturbation, no coupling while held: the Kuramoto couplers are one-way and only the decoded row is
programmed, so a held key is a source and never receives); the trim residual and the temperature drift are
static over the decode (no aging, no flicker: the phase-model devices have no 1/f frequency process, so a held
phase's frequency wander is not modelled — a ring's 1/f noise would add to E); the held phase is never
re-trimmed. Beyond |E| ~ 1 rad a held key carries no information (:func:`held_validity` warns).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

__all__ = ["Reinjection", "HeldMemory", "held_error_rms", "held_loss_age", "held_validity",
           "HeldPhaseWarning"]


class HeldPhaseWarning(UserWarning):
    """Held key phases have drifted beyond what a phase memory can hold (|E| of order a radian)."""


@dataclass(frozen=True)
class Reinjection:
    """Keys re-injected from SRAM at every decoded token (a fresh write per (t, u))."""

    name = "reinjected"

    def key_errors(self, own_write, eps, sigma, rng, fresh_write=None) -> np.ndarray:
        """(..., T, T) key-side phase error k[..., t, u] of key u at the decode step of token t [rad].

        Parameters
        ----------
        own_write : (..., T) array or 0
            Each oscillator's write error when its own token was processed (the diagonal).
        eps, sigma : (..., T) arrays or scalars
            Unused here (a re-injected key does not age).
        rng : numpy.random.Generator
            Unused here (the fresh writes draw from ``fresh_write``).
        fresh_write : callable or None
            ``fresh_write(shape) -> array`` of write errors; None: exact writes.
        """
        shape = np.broadcast_shapes(np.shape(eps), np.shape(own_write))
        w = np.broadcast_to(np.asarray(own_write, dtype=np.float64), shape)
        T, lead = shape[-1], shape[:-1]
        out = np.broadcast_to(w[..., None, :], lead + (T, T)).copy()
        if fresh_write is not None:
            lower = np.tril(np.ones((T, T), dtype=bool), -1)
            out[..., lower] = np.asarray(fresh_write(lead + (T, T)))[..., lower]
        return out


@dataclass(frozen=True)
class HeldMemory:
    """Keys held in running oscillators between tokens (see the module notes).

    Attributes
    ----------
    cycles_per_token : float
        N = Δt f₀, the inter-token time in cycles of the chip's f₀.
    """

    cycles_per_token: float
    name = "held"

    def __post_init__(self):
        if not (math.isfinite(self.cycles_per_token) and self.cycles_per_token > 0):
            raise ValueError(f"cycles_per_token must be finite and > 0, got {self.cycles_per_token!r}")

    def drift(self, eps, sigma, rng, T: int) -> np.ndarray:
        """(..., T_u, T) E_u(a) of every oscillator u for ages a = 0..T−1 [rad] (E_u(0) = 0)."""
        eps = np.asarray(eps, dtype=np.float64)
        sig = np.broadcast_to(np.asarray(sigma, dtype=np.float64), eps.shape)
        N = self.cycles_per_token
        age = np.arange(T, dtype=np.float64)
        out = eps[..., None] * (N * age)
        if np.any(sig > 0):
            xi = rng.standard_normal(eps.shape + (T - 1,))
            walk = np.concatenate([np.zeros(eps.shape + (1,)), np.cumsum(xi, axis=-1)], axis=-1)
            out = out + (sig * math.sqrt(N))[..., None] * walk
        return out

    def key_errors(self, own_write, eps, sigma, rng, fresh_write=None) -> np.ndarray:
        """(..., T, T) key-side phase error k[..., t, u] = w_u + E_u(t − u) (u ≤ t; w_u above the diagonal, unused)
        [rad]; the arguments as :meth:`Reinjection.key_errors` (``fresh_write`` unused: a held key is written
        once)."""
        eps = np.asarray(eps, dtype=np.float64)
        T = eps.shape[-1]
        E = self.drift(eps, sigma, rng, T)  # (..., u, a)
        t, u = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
        age = np.clip(t - u, 0, None)
        k = E[..., u, age]  # (..., t, u)
        return np.broadcast_to(np.asarray(own_write, dtype=np.float64), eps.shape)[..., None, :] + k


def held_error_rms(age, eps_rms: float, sigma: float, cycles_per_token: float):
    """Predicted RMS of the held drift E(a) over a chip's oscillators [rad]: sqrt(σ² N a + ε² N² a²).

    Parameters
    ----------
    age : int or array of ages a [tokens].
    eps_rms : float
        RMS residual angular frequency [rad/cycle].
    sigma : float
        RMS phase-noise intensity [rad/sqrt(cycle)] (sqrt of the mean σ²).
    cycles_per_token : float
        N = Δt f₀.
    """
    a = np.asarray(age, dtype=np.float64)
    N = float(cycles_per_token)
    return np.sqrt(sigma**2 * N * a + (eps_rms * N * a) ** 2)


def held_loss_age(reference_rad: float, eps_rms: float, sigma: float, cycles_per_token: float) -> float:
    """The age [tokens, real] at which the predicted held drift reaches ``reference_rad`` (e.g. the RMS error
    of a fresh injection): the root of σ² N a + ε² N² a² = ref²; inf when nothing drifts."""
    N = float(cycles_per_token)
    A, B, C = (eps_rms * N) ** 2, sigma**2 * N, -float(reference_rad) ** 2
    if A == 0 and B == 0:
        return math.inf
    if A == 0:
        return -C / B
    return (-B + math.sqrt(B * B - 4 * A * C)) / (2 * A)


def held_validity(eps_rms: float, sigma: float, cycles_per_token: float, max_age: int, *, warn: bool = True,
                  stacklevel: int = 2) -> dict:
    """Where the held keys stand at the oldest age ``max_age``: the predicted drift RMS there, the age at which it
    reaches 1 rad, and a :class:`HeldPhaseWarning` when the oldest keys pass it (their phases are then
    uninformative: cos of a phase error of 1 rad RMS keeps e^{-1/2} of a coupling)."""
    rms = float(held_error_rms(max_age, eps_rms, sigma, cycles_per_token))
    a1 = held_loss_age(1.0, eps_rms, sigma, cycles_per_token)
    msg = (f"held key phases: drift RMS {rms:.3g} rad at the oldest age ({max_age} tokens, {cycles_per_token:.4g} "
           f"cycles per token: trim residual {eps_rms:.3g} rad/cycle, diffusion {sigma:.3g} rad/sqrt(cycle)); "
           f"1 rad is reached at age {a1:.3g}")
    if warn and rms > 1.0:
        warnings.warn(msg + ": the oldest held keys carry little phase (consider re-injected keys, a slower "
                      "drift: more trim_bits, or a shorter inter-token time)", HeldPhaseWarning,
                      stacklevel=stacklevel + 1)
    return {"drift_rms_oldest_rad": rms, "age_at_1_rad": a1, "valid": rms <= 1.0, "message": msg}
