"""Mismatch: per-device parameter spread, drawn once per chip instance from a seed.

Notes
-----
Threshold spread follows Pelgrom's law, σ(ΔV_T) = A_VT / √(W L) for the difference of a matched pair,
so one transistor has σ(V_T) = A_VT / √(2 W L). Load capacitors and couplers get independent relative
Gaussian spreads (``sigma_c_rel``, coupler ``sigma_rel``).

Analytic propagation (first order, phase-response theory): a parameter change δp perturbs the vector field
by δf = (∂f/∂p) δp and shifts the angular frequency by δω = (1/2π) ∮ v(θ)·(∂f/∂p)(x(θ)) dθ · δp, with v the
PPV. Summing independent devices, σ_ω² = Σ_d S_d² σ_d².

References
----------
M. J. M. Pelgrom, A. C. J. Duinmaijer, A. P. G. Welbers, IEEE JSSC 24, 1433 (1989).
"""

from __future__ import annotations

import math

import numpy as np

from hw_models.params import RingOscillatorParams
from hw_models.ring import RingMismatch, RingNetwork, pack_ring_params, ring_rhs_np
from hw_models.ring_macro import limit_cycle

__all__ = ["draw_ring_mismatch", "frequency_sensitivities", "analytic_frequency_spread"]

_HDR, _PER_NODE = 6, 8


def draw_ring_mismatch(ring: RingOscillatorParams, n_rings: int, seed, *, couplers=()) -> RingMismatch:
    """Draw one chip instance: ΔV_T (R, n) for NMOS and PMOS, load spread (R, n), coupler spread (K,).

    ``couplers``: the coupler objects in network order (their ``sigma_rel`` is used). ``seed``: int or
    ``np.random.Generator``.
    """
    if n_rings < 1:
        raise ValueError(f"n_rings must be >= 1, got {n_rings}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    n = ring.n_stages
    dvn = rng.normal(0.0, ring.sigma_vt_n_v, (n_rings, n))
    dvp = rng.normal(0.0, ring.sigma_vt_p_v, (n_rings, n))
    crel = rng.normal(0.0, ring.sigma_c_rel, (n_rings, n))
    crel = np.clip(crel, -0.9, None)  # a Gaussian tail must not make a negative capacitor
    krel = np.array([rng.normal(0.0, c.sigma_rel) for c in couplers]) if couplers else np.zeros(0)
    return RingMismatch(dvt_n_v=dvn, dvt_p_v=dvp, c_rel=crel, coupler_rel=np.clip(krel, -0.9, None))


def frequency_sensitivities(ring: RingOscillatorParams, h: float = 1e-4):
    """∂f/∂V_Tn,k, ∂f/∂V_Tp,k [Hz/V] and ∂f/∂(ΔC_k/C) [Hz] for every stage k, from the PPV (each (n,))."""
    lc = limit_cycle(ring)
    p = pack_ring_params(RingNetwork.single(ring))
    n = ring.n_stages
    M = len(lc.theta)
    P0 = np.broadcast_to(p, (M, p.size))
    out = []
    for field, step in ((0, h), (1, h), (4, h * ring.c_load_f)):
        s = np.empty(n)
        for k in range(n):
            pp = p.copy()
            pp[_HDR + _PER_NODE * k + field] += step
            pm = p.copy()
            pm[_HDR + _PER_NODE * k + field] -= step
            df = (ring_rhs_np(lc.x, np.broadcast_to(pp, P0.shape)) - ring_rhs_np(lc.x, np.broadcast_to(pm, P0.shape))) / (2 * step)
            dw = float(np.mean(np.sum(lc.ppv * df, axis=1)))
            s[k] = dw / (2 * math.pi) * (ring.c_load_f if field == 4 else 1.0)
        out.append(s)
    return tuple(out)


def analytic_frequency_spread(ring: RingOscillatorParams) -> float:
    """σ(f) [Hz] of a ring from V_T (Pelgrom) and load spread, first-order propagation."""
    sn, sp, sc = frequency_sensitivities(ring)
    var = np.sum(sn ** 2) * ring.sigma_vt_n_v ** 2 + np.sum(sp ** 2) * ring.sigma_vt_p_v ** 2
    var += np.sum(sc ** 2) * ring.sigma_c_rel ** 2
    return float(math.sqrt(var))
