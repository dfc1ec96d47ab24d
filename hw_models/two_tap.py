"""The two-tap phase correction of a ring coupler: which second tap cancels the cos term of H's first harmonic.

A coupler that senses the source ring at node 0 has a coupling function whose first harmonic c₀ = a₁ + i b₁
(H(Δ) = a₁ sin Δ + b₁ cos Δ + …) is not a pure sine. Sensing it at node k too, with weights w₁ = 1/(1 + r) at
node 0 and w₂ = r/(1 + r) at node k (r ≥ 0), gives the first harmonic (c₀ + r c_k)/(1 + r); r = −Im c₀ / Im c_k
makes it real. Among the taps whose Im c_k has the opposite sign of Im c₀ (so r > 0), the one with the largest
first sine harmonic per unit of total coupler weight is chosen.

Used by the chip's coupling rule (:func:`mapping.compiler.coupling_rule`, from the device object's coupling
functions) and by the circuit-level networks (:func:`hw_models.coupled_rings.circuit_device`, from the
transconductor's own waveform): one search, two sources of H.
"""

from __future__ import annotations

import numpy as np

__all__ = ["best_second_tap", "tap_weights"]


def best_second_tap(c0: complex, candidates) -> tuple[int, float] | None:
    """The second tap and its weight ratio, or None when no tap cancels the cos term.

    Parameters
    ----------
    c0 : complex
        First harmonic a₁ + i b₁ of H with the source sensed at node 0.
    candidates : iterable of (int, complex)
        (node k, first harmonic of H with the source sensed at node k).

    Returns
    -------
    (k, r) : the node and r = w₂/w₁ > 0, or None.
    """
    best = None
    for k, ck in candidates:
        if abs(ck.imag) < 1e-30:
            continue
        r = -c0.imag / ck.imag  # w2/w1 making the combined first harmonic real
        eff = (c0.real + r * ck.real) / (1.0 + r)  # a_1 per unit of total coupler weight
        if r <= 0 or eff <= 0:
            continue
        if best is None or eff > best[0]:
            best = (eff, k, r)
    return None if best is None else (best[1], best[2])


def tap_weights(r: float) -> np.ndarray:
    """(w₁, w₂) = (1, r) / (1 + r): the weights of node 0 and the second tap, summing to 1."""
    return np.array([1.0, r]) / (1.0 + r)
