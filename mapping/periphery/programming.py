"""Coupling programming: what the coupler and gain DACs are written with, from the model's matrices.

Kuramoto attention: the softmax weights A_{t,u} go to unsigned couplers, quantised over [0, range]
(``row_scaled``: each row relative to its largest entry m_t, m_t Q(A_{t,u}/m_t), the row scale applied as an
analog receive gain); the diagonal has no coupler (sin 0 = 0: only the known offset H(0) remains); the value
gate v_{t,j} goes to the signed receive-gain DAC of oscillator (t, j). SSA: the locking threshold K r J of a
pair is programmed as K r J / K ∈ [0, 1] on an unsigned coupler. The phase macromodel and the circuit rung
program the same values (:mod:`mapping.backends.phase`, :mod:`mapping.backends.circuit`). The closed-form
increment a of the same A (:func:`closed_form_increment`) is what the periphery computes digitally for the norm
reference when no reference bank measures it, and the ideal rung's answer.
"""

from __future__ import annotations

import numpy as np

__all__ = ["program_kuramoto", "program_ssa", "closed_form_increment"]


def program_kuramoto(A, v, *, n_heads: int, coupling_q, gain_q, row_scaled: bool):
    """Programmed couplers and receive gains of a Kuramoto layer.

    Parameters
    ----------
    A : (B, h, T, T) softmax weights; v : (B, T, k) value gate.
    n_heads : int
    coupling_q, gain_q : mapping.periphery.quantise.Quantiser
        Coupler (unsigned) and receive-gain (signed) DACs.
    row_scaled : bool

    Returns
    -------
    Aq : (B, h, T, T) programmed couplings (zero diagonal) [units of κ].
    g : (B, h, k_h, T) programmed receive gains.
    """
    B, T, k = v.shape
    g = gain_q(v.reshape(B, T, n_heads, k // n_heads).transpose(0, 2, 3, 1))  # (B, h, kh, T)
    if row_scaled:
        m = A.max(axis=-1, keepdims=True)
        m = np.where(m > 0, m, 1.0)
        Aq = m * coupling_q(A / m)  # (B, h, T, T)
    else:
        Aq = coupling_q(A)
    # no self-couplers: the diagonal contributes H(0) only (sin 0 = 0), a known offset with no coupler
    return Aq * (1.0 - np.eye(T)), g


def program_ssa(thr, k_max: float, coupling_q=None):
    """Programmed coupler values thr / K (quantised over [0, 1] when ``coupling_q`` is given)."""
    prog = np.asarray(thr, dtype=np.float64) / k_max
    return prog if coupling_q is None else coupling_q(prog)


def closed_form_increment(theta, A, n_heads):
    """a_{t,j} = Σ_u A_{t,u} sin(θ_{u,j} − θ_{t,j}) for θ (B, T, k), A (B, h, T, T); returns (B, T, k)."""
    theta = np.asarray(theta, dtype=np.float64)
    B, T, k = theta.shape
    kh = k // n_heads
    th = theta.reshape(B, T, n_heads, kh).transpose(0, 2, 1, 3)  # (B, h, T, kh)
    c, s = np.cos(th), np.sin(th)
    gr, gi = A @ c, A @ s
    a = -s * gr + c * gi
    return a.transpose(0, 2, 1, 3).reshape(B, T, k)
