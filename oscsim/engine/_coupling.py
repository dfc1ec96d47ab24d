"""Numba kernels for dense coupling through matrix–vector products (no N² trigonometric calls).

Σ_j C_ij sin(θ_j − θ_i) = cos θ_i (C sin θ)_i − sin θ_i (C cos θ)_i: both products are computed in ONE pass
over C (rows in blocks of four, so each load of sin θ_j, cos θ_j feeds eight multiply–adds). Zero column
ranges at the ends of rows (triangular or banded coupling) are skipped using per-block bounds computed once
when the model is built.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["block_bounds", "fused_two_products", "group_index"]

BLOCK = 4


def block_bounds(coupling: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column bounds [lo, hi) of the nonzero entries of each block of 4 rows, over all groups.

    Parameters
    ----------
    coupling : ndarray, shape (..., N, N)

    Returns
    -------
    lo, hi : ndarray of int64, shape (ceil(N/4),)
    """
    n = coupling.shape[-1]
    nz = np.any(coupling.reshape(-1, n, n) != 0, axis=0)  # (N, N)
    nb_ = (n + BLOCK - 1) // BLOCK
    lo = np.zeros(nb_, dtype=np.int64)
    hi = np.zeros(nb_, dtype=np.int64)
    for b in range(nb_):
        cols = np.flatnonzero(nz[b * BLOCK : (b + 1) * BLOCK].any(axis=0))
        if cols.size:
            lo[b], hi[b] = cols[0], cols[-1] + 1
    return lo, hi


@nb.njit(cache=True, inline="always")
def group_index(arr_groups, g):
    """Index into a parameter with leading dimension 1 (shared) or G (per group)."""
    return g * np.int64(arr_groups > 1)


@nb.njit(cache=True, fastmath=True, boundscheck=False)
def fused_two_products(C, u, v, lo, hi, out_u, out_v):
    """out_u = C u, out_v = C v in one pass over C (C: (N, N) C-contiguous).

    Rows go in blocks of four with two-dimensional indexing (LLVM vectorises the column loop with eight
    accumulators); ``lo``/``hi`` bound the nonzero columns of each block.
    """
    n = C.shape[0]
    nblk = lo.shape[0]
    for b in range(nblk):
        i = b * 4
        # unsigned bounds: numba then drops its negative-index wrap-around and LLVM vectorises the loop
        l = nb.uint64(lo[b])
        h = nb.uint64(hi[b])
        if i + 4 <= n:
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            a3 = 0.0
            b0 = 0.0
            b1 = 0.0
            b2 = 0.0
            b3 = 0.0
            for j in range(l, h):
                uj = u[j]
                vj = v[j]
                a0 += C[i, j] * uj
                b0 += C[i, j] * vj
                a1 += C[i + 1, j] * uj
                b1 += C[i + 1, j] * vj
                a2 += C[i + 2, j] * uj
                b2 += C[i + 2, j] * vj
                a3 += C[i + 3, j] * uj
                b3 += C[i + 3, j] * vj
            out_u[i] = a0
            out_v[i] = b0
            out_u[i + 1] = a1
            out_v[i + 1] = b1
            out_u[i + 2] = a2
            out_v[i + 2] = b2
            out_u[i + 3] = a3
            out_v[i + 3] = b3
        else:
            for ii in range(i, n):
                a = 0.0
                bb = 0.0
                for j in range(l, h):
                    a += C[ii, j] * u[j]
                    bb += C[ii, j] * v[j]
                out_u[ii] = a
                out_v[ii] = bb
