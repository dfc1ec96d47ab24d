"""Numba kernels for the forward tiles of :mod:`oscsim.nn.ssa_tiled` (CPU, float32 and float64).

One call turns the product tile (from a BLAS ``bmm``) into S in place and writes the row sums, in a single
pass over the tile: J, the threshold, the locking test and S never exist as separate tensors, and there is
one Python call per tile instead of about ten tensor operations. ``S V`` stays a BLAS product. The kernels
are single-threaded and release the GIL (``nogil``): :func:`oscsim.nn.ssa_tiled._forward` runs them on its
worker threads, each row of the output computed by one worker with the same operations, so results do not
depend on the thread count.

``tile_fast_f32``: float32, both boundaries, from the κ-scaled product A = −κΔω² (κ = α log2 e), J = 2^A,
τ = c_s J + √κ 1e-8. Reference boundary: the form of ``_tile_S_fast``, c_s S = sqrt(relu(A + τ²))
(1 − √κ 1e-8/τ). 2^A is computed by a vectorisable polynomial (exponent bits plus a degree-7 series of
e^y on |y| ≤ ln2/2, relative error below 1e-8, under float32 rounding): without Intel SVML, Numba calls
the scalar libm ``exp`` element by element. ``error_model="numpy"``: Python's division-by-zero check keeps
LLVM from vectorising the loop (measured 580 µs instead of 50 µs per 512 KiB tile).
Smooth boundary: S = J u⁺/sqrt(u⁺ + 1e-6) with u = 1 + A/τ² (no division by c_s; any K r).

``tile_exact``: the exact general form of ``_tile_S`` (any boundary, float32 or float64), from M = −Δω²,
with the library ``exp`` and the operations in the same order (no fast-math), for the float64 path and the
reference-boundary float32 tiles with K r ≤ 1e-4.

Δω² is ‖p_i − p_j‖² + t_ij², t_ij = q_i − q_j + μ (i − j) (:func:`oscsim.nn.ssa_constants.split_frequencies`):
the product tile holds −‖p_i − p_j‖² (κ-scaled on the fast path), the kernels subtract t² (from q and μ
scaled alike), forming the difference before squaring. For SSA-1D (F = 1) there is no p and no product:
the caller fills the tile with zeros (a branch on a flag in the element loop measured 40 % slower: LLVM
did not hoist it).

Causal tiles: keys j > i are written as zero and not computed.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from oscsim.nn.ssa_constants import EPS, SMOOTH_FLOOR

__all__ = ["tile_fast_f32", "tile_exact", "tile_backward"]

_EXP2_CAP = np.float32(115.0)
_LN2 = 0.6931471805599453
_LOG2E = 1.4426950408889634


@njit(inline="always", cache=True, nogil=True, error_model="numpy", fastmath={"contract", "nsz", "arcp", "reassoc"})
def _exp2_f32(a):
    """2^a for float32 a in [−_EXP2_CAP, 0], vectorisable: exponent bits times a degree-7 series of e^y on
    |y| ≤ ln2/2 (relative error below 1e-8, under float32 rounding)."""
    one = np.float32(1.0)
    ln2 = np.float32(_LN2)
    n = np.floor(a + np.float32(0.5))
    y = (a - n) * ln2
    p = one + y * (one + y * (np.float32(1.0 / 2.0) + y * (np.float32(1.0 / 6.0) + y * (np.float32(1.0 / 24.0) + y * (
        np.float32(1.0 / 120.0) + y * (np.float32(1.0 / 720.0) + y * np.float32(1.0 / 5040.0)))))))
    bits = np.int32((np.int32(n) + np.int32(127)) << np.int32(23))
    return bits.view(np.float32) * p


def _exp_neg(D, al, kal):
    """exp(−al D) for D ≥ 0, kal = al log2(e): resolved by type at compile time (below)."""
    raise NotImplementedError  # pragma: no cover - only the compiled overload runs


@overload(_exp_neg, inline="always")
def _exp_neg_impl(D, al, kal):
    """float32: 2^(−kal D) by the vectorisable series of `_exp2_f32`, capped at 2^−115 (such pairs cannot
    lock; see the module notes); float64: the library exp. A run-time flag here instead measured as a
    branch in the element loop that LLVM did not hoist."""
    if isinstance(D, types.Float) and D.bitwidth == 32:
        return lambda D, al, kal: _exp2_f32(max(-kal * D, -_EXP2_CAP))
    return lambda D, al, kal: np.exp(-al * D)


def _mu_at(mu, hh):
    """mu[hh], or None where ``mu`` is None (no drift): resolved at compile time (below)."""
    raise NotImplementedError  # pragma: no cover - only the compiled overload runs


@overload(_mu_at, inline="always")
def _mu_at_impl(mu, hh):
    if isinstance(mu, types.NoneType):
        return lambda mu, hh: None
    return lambda mu, hh: mu[hh]


def _drift_term(m, d):
    """m d, or a zero of d's type where m is None: without drift the positional term is compiled out."""
    raise NotImplementedError  # pragma: no cover - only the compiled overload runs


@overload(_drift_term, inline="always")
def _drift_term_impl(m, d):
    if isinstance(m, types.NoneType):
        zero = np.dtype(str(d)).type(0)
        return lambda m, d: zero
    return lambda m, d: m * d


@njit(inline="always", cache=True, nogil=True)
def _n_keys(bk, row, j0, causal):
    """Keys of a tile row that are computed: all bk, or (causal) those j0 + j <= row; the rest are zero."""
    if causal:
        return min(bk, max(0, row - j0 + 1))
    return bk


@njit(fastmath={"contract", "nsz", "arcp", "reassoc"}, error_model="numpy", cache=True, nogil=True,
      boundscheck=False)
def tile_fast_f32(A, c_s, eps_s, z, i0, j0, causal, smooth, qi, qj, mu):
    """In place: A (h, bq, bk) = −κ‖p_i − p_j‖² (zeros for SSA-1D) becomes c_s S (reference boundary)
    or S (``smooth``); z (h, bq) is increased by the row sums of what is written.

    c_s (h, bq) = √κ K r per row, eps_s (h,) = √κ 1e-8, qi (h, bq), qj (h, bk), mu (h,) or None (no drift):
    √κ q and √κ μ.
    Rows i0 + i, keys j0 + j. With a = −κΔω² = −κ‖p_i − p_j‖² − (√κ t)². Smooth boundary:
    u = 1 − Δω²/thr² = 1 + a/τ², S = J u⁺/sqrt(u⁺ + SMOOTH_FLOOR).
    """
    h, bq, bk = A.shape
    one = np.float32(1.0)
    zero = np.float32(0.0)
    sf = np.float32(SMOOTH_FLOOR)
    jf = np.arange(bk).astype(np.float32)  # key offsets as floats: exact, and no per-element conversion
    for hh in range(h):
        e = np.float32(eps_s[hh])
        m = _mu_at(mu, hh)
        qrow = qj[hh]
        for i in range(bq):
            cs = np.float32(c_s[hh, i])
            q = np.float32(qi[hh, i])
            row = A[hh, i]
            n_keys = _n_keys(bk, i0 + i, j0, causal)
            d0 = np.float32(i0 + i - j0)
            acc = zero
            for j in range(n_keys):
                t = (q - qrow[j]) + _drift_term(m, d0 - jf[j])
                a = max(min(row[j], zero) - t * t, -_EXP2_CAP)
                J = _exp2_f32(a)
                tau = J * cs + e
                if smooth:
                    up = max(one + a / (tau * tau), zero)
                    s = J * up / np.sqrt(up + sf)
                else:
                    t = max(a + tau * tau, zero)
                    s = np.sqrt(t) * (one - e / tau)
                row[j] = s
                acc += s
            row[n_keys:] = zero
            z[hh, i] += acc


@njit(error_model="numpy", cache=True, nogil=True, boundscheck=False)
def tile_exact(M, alpha, c, floor, smooth, z, i0, j0, causal, qi, qj, mu):
    """In place: M (h, bq, bk) = −‖p_i − p_j‖² (zeros for SSA-1D) becomes S; z (h, bq) is increased by
    the row sums.

    alpha (h,), c (h, bq) = K r per row; floor: the ratio floor of the dtype; smooth: boundary "smooth";
    qi (h, bq), qj (h, bk), mu (h,) or None (no drift): t = q_i − q_j + μ (i − j).
    """
    h, bq, bk = M.shape
    zero = M.dtype.type(0.0)
    eps = M.dtype.type(EPS)
    sf = M.dtype.type(SMOOTH_FLOOR)
    jf = np.arange(bk).astype(M.dtype)
    for hh in range(h):
        al = alpha[hh]
        mm = _mu_at(mu, hh)
        qrow = qj[hh]
        for i in range(bq):
            ci = c[hh, i]
            q = qi[hh, i]
            row = M[hh, i]
            n_keys = _n_keys(bk, i0 + i, j0, causal)
            d0 = M.dtype.type(i0 + i - j0)
            acc = zero
            for j in range(n_keys):
                t = (q - qrow[j]) + _drift_term(mm, d0 - jf[j])
                m = min(row[j], zero) - t * t  # −D
                J = np.exp(m * al)
                thr = J * ci + eps
                u = (m + thr * thr) / thr / thr  # 1 − D/thr²
                if smooth:
                    up = max(u, zero)
                    s = up / np.sqrt(up + sf) * J
                elif u >= zero:
                    s = np.sqrt(max(u, floor)) * J
                else:
                    s = zero
                row[j] = s
                acc += s
            row[n_keys:] = zero
            z[hh, i] += acc


@njit(fastmath={"contract", "nsz", "arcp", "reassoc"}, error_model="numpy", cache=True, nogil=True,
      boundscheck=False)
def tile_backward(P, G, alpha, c, delta, floor, smooth, qi, qj, mu, i0, j0, causal,
                  g_c, g_q, gp_row, gp_col, g_scal):
    """One tile of the backward (the formulas of :mod:`oscsim.nn.ssa_tiled`), in place, in one pass.

    In: P (h, bq, bk) = −‖p_i − p_j‖² (zeros for SSA-1D), G (h, bq, bk) = (dO_i / Z_i)·V_j; alpha (h,),
    c (h, bq) = K r, delta (h, bq) = dO_i·O_i / Z_i, floor: the ratio floor, smooth: the boundary form,
    qi (h, bq), qj (h, bk), mu (h,): t = q_i − q_j + μ (i − j). Rows i0 + i, keys j0 + j.

    Out: P becomes S; G becomes ∂L/∂‖p_i − p_j‖² (zero where that term was not positive); g_c (h, bq) += Σ_j γ; g_q (h, N) (the head chunk's, all N rows) += Σ_j ∂L/∂t at row i0 + i
    and −= Σ_i ∂L/∂t at row j0 + j; gp_row (h, bq), gp_col (h, bk) += the row and column sums of the new G;
    g_scal (h, 2) += (∂L/∂α, ∂L/∂μ).

    J = exp(−αD) by `_exp_neg`: in float32 the vectorisable series (capped at 2^−115: such pairs cannot
    lock, and contribute nothing), in float64 the library ``exp``.
    """
    h, bq, bk = P.shape
    dt = P.dtype.type
    zero = dt(0.0)
    one = dt(1.0)
    two = dt(2.0)
    eps = dt(EPS)
    sf = dt(SMOOTH_FLOOR)
    jf = np.arange(bk).astype(P.dtype)
    for hh in range(h):
        al = alpha[hh]
        kal = dt(al * _LOG2E)
        mm = mu[hh]
        qrow = qj[hh]
        col_q = g_q[hh, j0:j0 + bk]
        colp = gp_col[hh]
        acc_a = zero
        acc_m = zero
        for i in range(bq):
            ci = c[hh, i]
            dl = delta[hh, i]
            q = qi[hh, i]
            prow = P[hh, i]
            grow = G[hh, i]
            n_keys = _n_keys(bk, i0 + i, j0, causal)
            d0 = dt(i0 + i - j0)
            acc_c = zero
            acc_t = zero
            acc_p = zero
            for j in range(n_keys):
                dij = d0 - jf[j]
                t = (q - qrow[j]) + mm * dij
                gp = -prow[j]
                D = max(gp, zero) + t * t
                J = _exp_neg(D, al, kal)
                thr = J * ci + eps
                thr2 = thr * thr
                u = one - D / thr2
                if smooth:
                    up = max(u, zero)
                    r = np.sqrt(up + sf)
                    sx = up / r
                    dsdu = J * (up + two * sf) / (two * (up + sf) * r)
                    ok = u > zero
                else:
                    qq = np.sqrt(max(u, floor))
                    sx = qq
                    dsdu = J / (two * qq)
                    ok = u >= floor
                locked = u >= zero
                S = J * sx if locked else zero
                gv = grow[j] - dl
                gu = gv * dsdu if (locked and ok) else zero
                gamma = J * gu * two * D / (thr2 * thr)
                beta = gv * S + ci * gamma
                gD = (-al * beta - gu / thr2) if D > zero else zero
                gt = two * gD * t
                gP = gD if gp > zero else zero
                prow[j] = S
                grow[j] = gP
                acc_a -= D * beta
                acc_c += gamma
                acc_t += gt
                acc_m += gt * dij
                acc_p += gP
                col_q[j] -= gt
                colp[j] += gP
            prow[n_keys:] = zero
            grow[n_keys:] = zero
            g_c[hh, i] += acc_c
            g_q[hh, i0 + i] += acc_t
            gp_row[hh, i] += acc_p
        g_scal[hh, 0] += acc_a
        g_scal[hh, 1] += acc_m
