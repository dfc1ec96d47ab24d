"""Numba kernels for dense coupling through matrix–vector products (no N² trigonometric calls).

Σ_j C_ij sin(θ_j − θ_i) = cos θ_i (C sin θ)_i − sin θ_i (C cos θ)_i: both products are computed in ONE pass
over C (rows in blocks of four, so each load of sin θ_j, cos θ_j feeds eight multiply–adds). Zero column
ranges at the ends of rows (triangular or banded coupling) are skipped using per-group, per-block bounds
computed once when the model is packed, aligned so that skipping never changes a sum (`block_bounds`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["ALIGN", "block_bounds", "checked_block_bounds", "coupling_product", "fused_two_products", "group_index",
           "work_vectors", "write_factored"]

BLOCK = 4
# Column bounds are multiples of ALIGN (or N): see `block_bounds` for why. 16 is a multiple of the columns one
# vector iteration of the coupling loop covers on every target inspected (4 on AVX2, 8 on Intel AVX-512 with
# LLVM's 256-bit preference, 16 with 512-bit vectors; docs/engine.md, "Speed").
ALIGN = 16


def block_bounds(coupling: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group, column bounds [lo, hi) covering the nonzero entries of each block of 4 rows.

    ``lo`` is rounded down and ``hi`` up to a multiple of ``ALIGN`` (``hi`` at most N). The vectorised
    reduction in `fused_two_products` sums the columns of a row in ``ALIGN``-periodic lanes from ``lo``, then
    the columns left over after the last full vector one by one; with aligned bounds the leftover columns
    are always the same (the last N mod W of the row), so a row's sum is the same function of the row
    whatever bounds cover its nonzeros: a group's numbers never depend on the groups beside it, nor on
    how far its own zero ranges reach (only exact zeros are added or skipped).

    Parameters
    ----------
    coupling : ndarray, shape (N, N) or (G, N, N)
        Any numeric dtype; only ``!= 0`` is read.

    Returns
    -------
    lo, hi : ndarray of int64, shape (G', ceil(N/4)), read-only
        G' = 1 for an (N, N) coupling. A block of zero rows has lo = hi = 0.
    """
    c = np.ascontiguousarray(coupling)
    if c.dtype != np.float64:
        c = np.ascontiguousarray(c != 0, dtype=np.float64)
    if c.ndim == 2:
        c = c[None]
    lo, hi, _ = _bounds_and_finite(c, ALIGN)
    lo.setflags(write=False)
    hi.setflags(write=False)
    return lo, hi


def checked_block_bounds(name: str, coupling: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`block_bounds` of a (G, N, N) float64 coupling and the check that it is finite, in one compiled pass.

    For arrays that are new on every run (`PackedPhaseNetwork.with_arrays`): one read of the matrix instead
    of a NumPy finiteness pass and a bounds pass. Raises ValueError naming ``name`` and the first bad index.
    """
    lo, hi, bad = _bounds_and_finite(coupling, ALIGN)
    if bad:
        from ._checks import check_finite

        check_finite(name, coupling)  # the message with the first bad index
    lo.setflags(write=False)
    hi.setflags(write=False)
    return lo, hi


@nb.njit(cache=True, boundscheck=False, inline="always")
def _row_span(row, n):
    """First and last nonzero column of a row (n, -1 when none) and its count of non-finite entries;
    branch-free over the whole row (LLVM vectorises it): every entry is read for the finiteness."""
    f = n
    la = -1
    nf = 0
    for j in range(n):
        x = row[j]
        nz = x != 0.0
        f = min(f, j if nz else n)
        la = max(la, j if nz else -1)
        nf += not (abs(x) < np.inf)
    return f, la, nf


@nb.njit(cache=True, boundscheck=False)
def _bounds_and_finite(c, align):
    g_count, n = c.shape[0], c.shape[2]
    nblk = (n + BLOCK - 1) // BLOCK
    lo = np.zeros((g_count, nblk), dtype=np.int64)
    hi = np.zeros((g_count, nblk), dtype=np.int64)
    bad = 0
    for g in range(g_count):
        for b in range(nblk):
            first = n
            last = -1
            for i in range(b * BLOCK, min(b * BLOCK + BLOCK, n)):
                f, la, nf = _row_span(c[g, i], n)
                first = min(first, f)
                last = max(last, la)
                bad += nf
            if last >= 0:
                lo[g, b] = (first // align) * align
                hi[g, b] = min(-((-(last + 1)) // align) * align, n)
    return lo, hi, bad


@nb.njit(cache=True, inline="always")
def group_index(arr_groups, g):
    """Index into a parameter with leading dimension 1 (shared) or G (per group)."""
    return g * np.int64(arr_groups > 1)


@nb.njit(cache=True, inline="always")
def work_vectors(ws, n):
    """The six N-vectors of a built-in drift kernel's scratch ``ws`` (length 6 N, see
    ``NetworkModel._work_size``): two for the state (cos/sin θ, or Re/Im c) and four accumulators for
    `fused_two_products`."""
    return ws[:n], ws[n : 2 * n], ws[2 * n : 3 * n], ws[3 * n : 4 * n], ws[4 * n : 5 * n], ws[5 * n : 6 * n]


@nb.njit(cache=True, fastmath=True, boundscheck=False)
def fused_two_products(C, u, v, lo, hi, out_u, out_v):
    """out_u = C u, out_v = C v in one pass over C (C: (N, N) C-contiguous).

    Rows go in blocks of four with two-dimensional indexing (LLVM vectorises the column loop with eight
    accumulators); ``lo``/``hi`` (this group's row of `block_bounds`) bound the nonzero columns of each
    block. A last block of fewer than four rows runs the same loop with its last row repeated (the
    repeats are not stored), so every row is summed by the same vectorised code.
    """
    n = C.shape[0]
    nblk = lo.shape[0]
    for b in range(nblk):
        i = b * 4
        r1 = min(i + 1, n - 1)
        r2 = min(i + 2, n - 1)
        r3 = min(i + 3, n - 1)
        # unsigned bounds: numba then drops its negative-index wrap-around and LLVM vectorises the loop
        l = nb.uint64(lo[b])
        h = nb.uint64(hi[b])
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
            a1 += C[r1, j] * uj
            b1 += C[r1, j] * vj
            a2 += C[r2, j] * uj
            b2 += C[r2, j] * vj
            a3 += C[r3, j] * uj
            b3 += C[r3, j] * vj
        out_u[i] = a0
        out_v[i] = b0
        if i + 1 < n:
            out_u[i + 1] = a1
            out_v[i + 1] = b1
        if i + 2 < n:
            out_u[i + 2] = a2
            out_v[i + 2] = b2
        if i + 3 < n:
            out_u[i + 3] = a3
            out_v[i + 3] = b3


# ---- vectorisable sin/cos ------------------------------------------------------------------------------
# libm's sin and cos are scalar calls (~15 ns each); for N <= 512 they cost as much as the coupling product
# itself. This is the fdlibm kernel (Cody–Waite reduction by π/2 in three parts, degree-13/14 minimax
# polynomials on [−π/4, π/4], branch-free quadrant selection), which LLVM vectorises. Error <= 2 ulp for
# |x| < 2^20·π/2; larger arguments fall back to libm. Compiled WITHOUT fastmath: reassociation would undo
# the three-part reduction.
_TWO_OVER_PI = 6.36619772367581382433e-01
_PIO2_1 = 1.57079632673412561417e00
_PIO2_2 = 6.07710050630396597660e-11
_PIO2_3 = 2.02226624871116645580e-21
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11
_BIG = 1.0e6


@nb.njit(cache=True, fastmath=False, boundscheck=False)
def sincos(x, s, c, scale=1.0):
    """s = sin(scale·x), c = cos(scale·x), elementwise (x, s, c: 1-D float64 of equal length)."""
    n = x.shape[0]
    big = 0
    for i in range(n):
        xi = scale * x[i]
        k = np.floor(xi * _TWO_OVER_PI + 0.5)
        r = ((xi - k * _PIO2_1) - k * _PIO2_2) - k * _PIO2_3
        z = r * r
        ps = r + r * z * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))))
        pc = 1.0 - 0.5 * z + z * z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6)))))
        q = k - 4.0 * np.floor(0.25 * k)  # quadrant in {0, 1, 2, 3}
        odd = (q == 1.0) | (q == 3.0)
        sv = pc if odd else ps
        cv = ps if odd else pc
        s[i] = -sv if q >= 2.0 else sv
        c[i] = -cv if (q == 1.0) | (q == 2.0) else cv
        big += abs(xi) > _BIG
    if big > 0:
        for i in range(n):
            xi = scale * x[i]
            if abs(xi) > _BIG:
                s[i] = np.sin(xi)
                c[i] = np.cos(xi)


# ---- a coupling written from its factors ---------------------------------------------------------------
def coupling_product(base, base_index, row_gain, elem=None, elem_index=None, *, out=None, threads=None):
    """C[g] = (base[base_index[g]] · row_gain[g][:, None]) · elem[elem_index[g]], its finiteness and its
    `block_bounds`, in one compiled pass per group (groups spread over threads as `run_groups` does).

    A chip layer's G networks share a few matrices (the programmed couplers of a (sequence, head): ``base``)
    scaled row by row (each oscillator's receive gain: ``row_gain``) and entry by entry (the coupler mismatch
    of a (bank, head, coordinate): ``elem``). Writing C from its factors once reads the factors and writes C
    a single time; bounds and the finiteness check ride along, so `PackedPhaseNetwork.with_coupling_product`
    needs no further pass over C. Each entry is the two IEEE products in this order (no fused multiply–add,
    no reassociation): the same bits as ``(base[bi] * row_gain[:, :, None]) * elem[ei]`` in NumPy.

    Parameters
    ----------
    base : (K, N, N) float64
    base_index : (G,) int, values in [0, K)
    row_gain : (G, N) float64
    elem : (L, N, N) float64 or None
        None: no entry-wise factor.
    elem_index : (G,) int, values in [0, L), or None
    out : (G, N, N) float64 C-contiguous, optional
        Written in place (a buffer kept across calls saves the page faults of a new one).
    threads : int, optional
        Default ``numba.get_num_threads()``.

    Returns
    -------
    C : (G, N, N) float64, lo, hi : (G, ceil(N/4)) int64 (`block_bounds` of C), bad : int
        ``bad`` is the number of non-finite entries of C (0 for finite factors).
    """
    row_gain = np.ascontiguousarray(row_gain, dtype=np.float64)
    G, n = row_gain.shape
    base, base_index = _factor("base", base, "base_index", base_index, G, n)
    if elem is None:
        elem, elem_index = np.zeros((0, n, n)), np.zeros(G, dtype=np.int64)
    else:
        elem, elem_index = _factor("elem", elem, "elem_index", elem_index, G, n)
    if out is None:
        out = np.empty((G, n, n))
    elif out.shape != (G, n, n) or out.dtype != np.float64 or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"out: expected a writable C-contiguous float64 array of shape {(G, n, n)}")
    nblk = (n + BLOCK - 1) // BLOCK
    lo = np.zeros((G, nblk), dtype=np.int64)
    hi = np.zeros((G, nblk), dtype=np.int64)
    bad = np.zeros(G, dtype=np.int64)
    from concurrent.futures import ThreadPoolExecutor

    nt = max(1, min(nb.get_num_threads() if threads is None else int(threads), G))
    args = (base, base_index, row_gain, elem, elem_index, out, lo, hi, bad, np.int64(ALIGN))
    if nt == 1:
        _product_groups(np.int64(0), np.int64(1), *args)
    else:
        with ThreadPoolExecutor(max_workers=nt) as ex:
            for f in [ex.submit(_product_groups, np.int64(t), np.int64(nt), *args) for t in range(nt)]:
                f.result()
    lo.setflags(write=False)
    hi.setflags(write=False)
    return out, lo, hi, int(bad.sum())


def _factor(name, mats, index_name, index, G, n):
    """A (K, n, n) float64 factor and its (G,) indices into it, checked."""
    mats = np.ascontiguousarray(mats, dtype=np.float64)
    if mats.ndim != 3 or mats.shape[1:] != (n, n):
        raise ValueError(f"{name}: expected shape (K, {n}, {n}), got {mats.shape}")
    index = np.ascontiguousarray(index, dtype=np.int64)
    if index.shape != (G,) or (G and (index.min() < 0 or index.max() >= mats.shape[0])):
        raise ValueError(f"{index_name}: expected ({G},) indices in [0, {mats.shape[0]})")
    return mats, index


@nb.njit(cache=True, boundscheck=False, inline="always")
def write_factored(bm, r, em, has_elem, om, lo, hi, align):
    """One group's C = (bm · r[:, None]) · em into ``om`` (N, N), its `block_bounds` into ``lo``/``hi`` (any real
    dtype) and its count of non-finite entries (returned): the pass `coupling_product` runs per group, and the
    one a `FactoredPhaseNetwork` runs into the group's scratch before its first step."""
    n = om.shape[1]
    nf = 0
    for b in range(lo.shape[0]):
        first = n
        last = -1
        for i in range(b * BLOCK, min(b * BLOCK + BLOCK, n)):
            ri = r[i]
            if has_elem:
                for j in range(n):
                    om[i, j] = (bm[i, j] * ri) * em[i, j]
            else:
                for j in range(n):
                    om[i, j] = bm[i, j] * ri
            f, la, nfr = _row_span(om[i], n)
            nf += nfr
            first = min(first, f)
            last = max(last, la)
        if last >= 0:
            lo[b] = (first // align) * align
            hi[b] = min(-((-(last + 1)) // align) * align, n)
        else:
            lo[b] = 0
            hi[b] = 0
    return nf


@nb.njit(cache=True, nogil=True, boundscheck=False)
def _product_groups(g_first, g_step, base, base_index, row_gain, elem, elem_index, out, lo, hi, bad, align):
    has_elem = elem.shape[0] > 0
    for g in range(g_first, out.shape[0], g_step):
        bm = base[base_index[g]]
        em = elem[elem_index[g]] if has_elem else base[base_index[g]]
        bad[g] = write_factored(bm, row_gain[g], em, has_elem, out[g], lo[g], hi[g], align)
