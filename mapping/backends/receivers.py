"""The receivers of a decode pass: oscillators driven through one-way couplers by free-running sources, integrated
by stochastic Heun (the model and its stated shortcut: :mod:`mapping.backends.decode`). Used by the unblocked
decode pass (every receiver against all its keys) and the blocked one (:mod:`mapping.backends.blocked_decode`:
a block of keys per round)."""

from __future__ import annotations

import math

import numba as nb
import numpy as np
from oscsim.engine._coupling import sincos

__all__ = ["integrate_receivers", "source_motion", "heun_receivers", "fill_source_harmonics", "receivers_heun"]


def integrate_receivers(psi, coupling, eps, sigma, y0, *, t1: float, n_steps: int, harmonics, rng=None,
                        dW=None, dW_src=None, src_eps=None, src_sigma=None):
    """Final phases (G, R) of receivers driven by free-running sources (see the module notes).

    Parameters
    ----------
    psi : (G, R, S)
        psi[g, t, u]: the start phase of source u as receiver t sees it [rad] (used where coupling ≠ 0).
    coupling : (G, R, S)
        C[g, t, u] [rad/cycle], gains included; with sources = receivers (R = S, ``src_eps`` None) the diagonal
        must be zero (no self-coupler).
    eps : (G, R) residual angular frequencies of the receivers [rad/cycle] (and of the sources when ``src_eps``
        is None: the receivers are the sources, R = S).
    sigma : float or (G, R) noise intensity [rad/sqrt(cycle)] (of the sources too when ``src_sigma`` is None).
    y0 : (G, R) receivers' start phases [rad].
    t1, n_steps : the window τ_s [cycles] and its steps.
    harmonics : (M, 2) (a_m, b_m) of H.
    rng : numpy.random.Generator, optional
        Draws the receivers' increments (n_steps, G, R), then the sources' (n_steps, G, S), when σ > 0 and
        ``dW``/``dW_src`` are not given.
    dW, dW_src : (n_steps, G, R) and (n_steps, G, S), optional
        Brownian increments (variance dt) of the receivers and of the sources.
    src_eps, src_sigma : (G, S) and float or (G, S), optional
        The sources' own residual frequencies and noise when they are other oscillators than the receivers (a
        block of the blocked decode, :mod:`mapping.backends.blocked_decode`).
    """
    h = np.asarray(harmonics, dtype=np.float64).reshape(-1, 2)
    G, R = y0.shape
    S = coupling.shape[-1]
    dt = t1 / n_steps
    sig = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (G, R))
    s_eps = eps if src_eps is None else src_eps
    s_sig = sig if src_sigma is None else np.broadcast_to(np.asarray(src_sigma, dtype=np.float64), (G, S))
    noisy = bool(np.any(sig > 0)) or bool(np.any(s_sig > 0))
    if noisy:
        if dW is None:
            dW = rng.standard_normal((n_steps, G, R)) * np.sqrt(dt)
        if dW_src is None:
            dW_src = rng.standard_normal((n_steps, G, S)) * np.sqrt(dt)
    move = source_motion(s_eps, s_sig, dt, n_steps, dW_src if noisy else None)
    Z = []
    for m in range(1, h.shape[0] + 1):
        if not np.any(h[m - 1]):
            Z.append(None)
            continue
        P = coupling * np.exp(1j * m * psi)  # (G, t, u)
        Z.append(P @ np.exp(1j * m * move))  # (G, t, n+1)
    return heun_receivers(Z, h, eps, sig, y0, dt=dt, n_steps=n_steps, dW=dW if noisy else None)


def source_motion(eps, sigma, dt: float, n_steps: int, dW_src=None):
    """The free-running sources' own motion ε τ_k + σ W(τ_k) at the step times k = 0..n, (G, S, n+1) [rad];
    ``dW_src`` (n_steps, G, S) or None (no noise)."""
    tk = dt * np.arange(n_steps + 1)
    move = eps[..., None] * tk  # (G, S, n+1)
    if dW_src is not None:
        G, S = dW_src.shape[1:]
        walk = np.concatenate([np.zeros((1, G, S)), np.cumsum(dW_src, axis=0)]).transpose(1, 2, 0)
        move = move + np.broadcast_to(sigma, (G, S))[..., None] * walk
    return move


def heun_receivers(Z, h, eps, sig, y0, *, dt: float, n_steps: int, dW=None):
    """Stochastic Heun (Heun when ``dW`` is None) of receivers driven by the source sums ``Z`` (one (G, R, n+1)
    complex array Σ_u C_{t,u} e^{im φ_u(τ_k)} per harmonic m, None where (a_m, b_m) = 0); returns (G, R)."""
    def drift(theta, k):
        f = eps.copy()
        for m, z in enumerate(Z, start=1):
            if z is None:
                continue
            e = np.exp(-1j * m * theta) * z[..., k]
            f += h[m - 1, 0] * e.imag + h[m - 1, 1] * e.real
        return f

    y = np.array(y0, dtype=np.float64)
    for k in range(n_steps):
        noise = sig * dW[k] if dW is not None else 0.0
        f0 = drift(y, k)
        pred = y + f0 * dt + noise
        y = y + 0.5 * (f0 + drift(pred, k + 1)) * dt + noise
    return y


@nb.njit(cache=True, nogil=True)
def fill_source_harmonics(phi, ms, X):
    """X[u, g, a, 0|1, :] = cos|sin(ms[a] φ[g, u, :]) for φ (G, S, n+1), ms (M',) float, X (S, G, M', 2, n+1),
    with the engine's sincos (compiled)."""
    for g in range(phi.shape[0]):
        for u in range(phi.shape[1]):
            for a in range(ms.shape[0]):
                sincos(phi[g, u], X[u, g, a, 1], X[u, g, a, 0], ms[a])


@nb.njit(cache=True, inline="always")
def _drive(th, Z, g, t, k, ms, ha, hb):
    """Σ_m a_m (c_m S_m − s_m C_m) + b_m (c_m C_m + s_m S_m) at phase ``th``, step time k (c_m, s_m: cos, sin(mθ) by
    angle addition)."""
    c1, s1 = math.cos(th), math.sin(th)
    cm, sm, m, acc = c1, s1, 1, 0.0
    for a in range(ms.shape[0]):
        while m < ms[a]:
            cm, sm, m = cm * c1 - sm * s1, sm * c1 + cm * s1, m + 1
        C, S = Z[t, g, a, 0, k], Z[t, g, a, 1, k]
        acc += ha[a] * (cm * S - sm * C) + hb[a] * (cm * C + sm * S)
    return acc


@nb.njit(cache=True, nogil=True)
def receivers_heun(Z, rg, ha, hb, ms, omega, sig, y0, dt, n_steps, dW, noisy):
    """Final phases (G, R) of receivers driven by precomputed source sums (compiled; the step of
    :func:`heun_receivers`).

    Z : (R, G, M', 2, n+1) Σ_u M_{t,u} (cos, sin)(m φ_u(τ_k)) per active harmonic ``ms`` (M',) int, without the
    row gain; rg : (G, R) row (receive) gains; ha, hb : (M',) a_m, b_m; omega, sig, y0 : (G, R); dt : float;
    n_steps : int; dW : (n_steps, G, R) (unused when not ``noisy``). Drift f = ω_t + g_t · :func:`_drive`;
    predictor y + h f + σΔW, corrector y + ½ h (f + f(pred)) + σΔW (Heun when not ``noisy``)."""
    R, G = Z.shape[0], Z.shape[1]
    out = np.empty((G, R))
    for g in range(G):
        for t in range(R):
            y = y0[g, t]
            w, r = omega[g, t], rg[g, t]
            for k in range(n_steps):
                noise = sig[g, t] * dW[k, g, t] if noisy else 0.0
                f0 = w + r * _drive(y, Z, g, t, k, ms, ha, hb)
                f1 = w + r * _drive(y + f0 * dt + noise, Z, g, t, k + 1, ms, ha, hb)
                y = y + 0.5 * (f0 + f1) * dt + noise
            out[g, t] = y
    return out
