"""Ideal phase oscillator device and phase-network builders (the bridge between closed form and devices)."""

from __future__ import annotations

import math

import numpy as np

from hw_models.params import IdealOscillatorParams

__all__ = ["ideal_phase_network", "ring_phase_network"]


def ideal_phase_network(params: IdealOscillatorParams, coupling, *, n_groups: int = 1, seed=0,
                        noise: bool = True):
    """An engine ``PhaseNetwork`` of N ideal oscillators [time unit: s].

    ``coupling``: (N, N) [rad/s] strengths C_ij multiplying the preset harmonics. Each of the ``n_groups``
    groups is one chip instance with its own frequency draw: ω_i = 2π f₀ (1 + σ_rel ξ_i) (seeded).
    Noise: σ = √D per oscillator when ``noise``.
    """
    from oscsim.engine import PhaseNetwork

    C = np.asarray(coupling, float)
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise ValueError(f"coupling must be (N, N), got shape {C.shape}")
    N = C.shape[0]
    rng = np.random.default_rng(seed)
    omega = 2 * math.pi * params.f0_hz * (1 + params.sigma_f_rel * rng.standard_normal((n_groups, N)))
    sigma = math.sqrt(params.diffusion_rad2_per_s) if noise else 0.0
    return PhaseNetwork(omega=omega, coupling=C, harmonics=np.asarray(params.harmonics, float), sigma=sigma)


def ring_phase_network(omega, adjacency, cf, *, sigma=0.0):
    """Phase macromodel of a ring network as an engine ``PhaseNetwork``.

    ``omega`` (N,) or (G, N) free-running angular frequencies [rad/s]; ``adjacency`` (N, N) 0/1 (or coupler
    multiplicities) for couplers between node 0 of rings; ``cf`` a :class:`CouplingFunction`. The coupling
    offset (loading) is added to ω_i once per coupler at ring i.
    """
    from oscsim.engine import PhaseNetwork

    A = np.asarray(adjacency, float)
    w = np.asarray(omega, float) + cf.offset_rad_s * A.sum(axis=1)
    return PhaseNetwork(omega=w, coupling=A, harmonics=np.asarray(cf.harmonics, float), sigma=sigma)
