"""A phase network whose coupling is given by its factors and written group by group inside the time loop.

A chip layer's G networks share a few matrices (the programmed couplers of a (sequence, head)) scaled per row
(receive gains) and per entry (coupler mismatch): C[g] = (base[base_index[g]] · row_gain[g][:, None]) ·
elem[elem_index[g]]. `PackedPhaseNetwork.with_coupling_product` writes all of C (G · N² floats, 128 MB for the
default chip's layer) before the integration and the kernels read it back; `FactoredPhaseNetwork` instead has
the group loop write each group's matrix into that group's scratch just before its first step
(`_prepare_factors`, the ``prepare`` of `_templates`), where it stays in the core's cache through the run, so
C never goes to memory. The entries, their column bounds and the drift's operations are those of
`with_coupling_product` (the same `write_factored` pass, the same `fused_two_products`), so a run gives the
same numbers to the bit.

Made by `with_coupling_factors` (a function of this module, not a method of `PackedPhaseNetwork`, so that
`phase_network` does not import this module, which builds on it), not constructed directly. Pure sine or harmonic coupling
without phase lags; CPU only.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._checks import NetworkModel, merge_groups
from ._coupling import ALIGN, BLOCK, fused_two_products, group_index, sincos, work_vectors, write_factored
from .phase_network import _extra_terms, _PhaseState, _phases_identity

__all__ = ["FactoredPhaseNetwork", "with_coupling_factors", "max_abs"]

# |(b · r) · e| <= max|b| · max|r| · max|e| stays finite below this (with room for the bound's own rounding)
_SAFE_PRODUCT = 1e300


class FactoredPhaseNetwork(_PhaseState, NetworkModel):
    """A `PackedPhaseNetwork` with its (G, N, N) coupling given by factors (see the module notes).

    Attributes
    ----------
    omega, sigma : (G', N) read-only
    base : (K, N, N); base_index : (G,) int; row_gain : (G, N); elem : (L, N, N) (L = 0: none); elem_index : (G,)
    kernel : {"sine", "general"}
    """

    __slots__ = ("omega", "sigma", "base", "base_index", "row_gain", "elem", "elem_index", "harmonics", "_n", "_g",
                 "_tail")

    def __setattr__(self, name, value):
        raise AttributeError(f"FactoredPhaseNetwork is immutable (tried to set {name!r})")

    @classmethod
    def _make(cls, packed, base, base_index, row_gain, elem, elem_index, omega, sigma, tail):
        self = object.__new__(cls)
        g = merge_groups([("omega", omega.shape[0]), ("sigma", sigma.shape[0]), ("row_gain", row_gain.shape[0]),
                          *packed._groups_fixed])
        for k, v in (("omega", omega), ("sigma", sigma), ("base", base), ("base_index", base_index),
                     ("row_gain", row_gain), ("elem", elem), ("elem_index", elem_index),
                     ("harmonics", packed.harmonics if packed.kernel == "general" else None), ("_n", packed._n),
                     ("_g", g), ("_tail", tail)):
            object.__setattr__(self, k, v)
        return self

    @property
    def kernel(self) -> str:
        return "sine" if self.harmonics is None else "general"

    def __repr__(self) -> str:
        return (f"FactoredPhaseNetwork(N={self._n}, groups={self._g}, kernel={self.kernel!r}, "
                f"stochastic={self.is_stochastic})")

    # ---- engine interface -------------------------------------------------------------------------
    def _noise_rows(self) -> np.ndarray:
        return self.sigma

    def _kernel_key(self):
        return ("phase", f"{self.kernel}_factors")

    def _make_drift(self):
        return _drift_sine_factors if self.kernel == "sine" else _drift_general_factors

    def _phases(self):
        return _phases_identity

    def _prepare(self):
        return _prepare_factors

    def _work_size(self) -> int:
        """The six N-vectors of the drift, the group's (N, N) coupling and its column bounds (two per block)."""
        n = self._n
        return 6 * n + n * n + 2 * ((n + BLOCK - 1) // BLOCK)

    def _params(self):
        head = (self.omega, self.base, self.base_index, self.row_gain, self.elem, self.elem_index)
        if self.kernel == "sine":
            return head + self._tail
        h = self.harmonics
        return head + (np.ascontiguousarray(h[:, 0]), np.ascontiguousarray(h[:, 1])) + self._tail


def with_coupling_factors(packed, base, base_index, row_gain, elem=None, elem_index=None, *, omega=None, sigma=None,
                          elem_max_abs=None):
    """The network of ``packed.with_coupling_product(...)`` without writing C: each group's matrix is written by
    the group loop into that group's scratch before its first step (see the module notes).

    Parameters as `PackedPhaseNetwork.with_coupling_product` (no ``out``), with the `PackedPhaseNetwork`
    ``packed`` first, and ``elem_max_abs``: max |elem| when the caller has checked ``elem`` finite already and
    keeps it unchanged (a chip layer's mismatch, the same array on every call: 128 MB for the 1M model's layer);
    None: checked here. Returns a `FactoredPhaseNetwork` that runs bit for bit what
    ``packed.with_coupling_product(...)`` runs (CPU only), or that model itself when the factors' magnitudes do
    not rule out an overflow of their products (C is then written and checked entry by entry).

    Raises
    ------
    ValueError
        Non-finite factors (naming the first bad index), bad shapes or indices, a network with phase lags.
    """
    new = factored(packed, base, base_index, row_gain, elem, elem_index, omega, sigma, elem_max_abs)
    if new is None:
        return packed.with_coupling_product(base, base_index, row_gain, elem, elem_index, omega=omega, sigma=sigma)
    return new


def factored(packed, base, base_index, row_gain, elem, elem_index, omega, sigma, elem_max_abs=None):
    """`with_coupling_factors` (see there); None when the products could overflow (the caller
    then writes C with `with_coupling_product`, which finds and names any non-finite entry)."""
    from ._checks import check_finite
    from ._coupling import _factor

    if packed.phase_lag is not None:
        raise ValueError("with_coupling_factors: a network with phase lags needs its lagged matrices; use "
                         "with_coupling_product")
    n = packed._n
    row_gain = np.ascontiguousarray(row_gain, dtype=np.float64)
    if row_gain.ndim != 2 or row_gain.shape[1] != n:
        raise ValueError(f"row_gain: expected shape (G, {n}), got {row_gain.shape}")
    G = row_gain.shape[0]
    base, base_index = _factor("base", base, "base_index", base_index, G, n)
    if elem is None:
        elem, elem_index = np.zeros((0, n, n)), np.zeros(G, dtype=np.int64)
    else:
        elem, elem_index = _factor("elem", elem, "elem_index", elem_index, G, n)
    peak = 1.0
    for name, arr in (("base", base), ("row_gain", row_gain), ("elem", elem)):
        if name == "elem" and elem_max_abs is not None:  # checked by the caller, which keeps elem unchanged
            peak *= float(elem_max_abs) if arr.size else 1.0
            continue
        m, finite = _max_abs(arr.reshape(-1))
        if not finite:
            check_finite(name, arr)  # the message with the first bad index
        peak *= m if arr.size else 1.0
    if not peak <= _SAFE_PRODUCT:
        return None
    new = packed.with_arrays(omega=omega, sigma=sigma)  # checked as with_coupling_product checks them
    tail = new._P[-6:]  # injection and drive rows, as the packed kernels read them
    return FactoredPhaseNetwork._make(new, base, base_index, row_gain, elem, elem_index, new.omega, new.sigma, tail)


def max_abs(arr) -> tuple[float, bool]:
    """(max |arr|, whether every entry is finite) of a float64 array, in one compiled pass without temporaries."""
    return _max_abs(np.ascontiguousarray(arr, dtype=np.float64).reshape(-1))


_ABS_BITS = np.uint64(0x7FFFFFFFFFFFFFFF)  # every bit of a float64 but the sign
_INF_BITS = np.uint64(0x7FF0000000000000)  # |x| bits at or above these: inf or NaN


@nb.njit(cache=True, boundscheck=False)
def _max_abs(x):
    """max |x| and whether every entry is finite, in one pass.

    On the bits: with the sign bit cleared, IEEE-754 doubles order as unsigned integers (inf and every NaN above
    every finite number), so one unsigned-integer max reduction, which the compiler vectorises, gives both the
    largest |x| (exactly) and whether any entry is inf or NaN. The float form (a max with NaN semantics and a
    count) ran one element per dependent step: 1.8 ms per call of a 1M chip's layer (7 % of its chip time)."""
    u = x.view(np.uint64)
    m = np.uint64(0)
    for i in range(u.shape[0]):
        a = u[i] & _ABS_BITS
        m = a if a > m else m
    if m >= _INF_BITS:
        return np.inf, False
    return np.array([m]).view(np.float64)[0], True


@nb.njit(cache=True, inline="always")
def _scratch(ws, n):
    """The group's coupling (N, N) and its column bounds (lo, hi per block of rows, as floats) in its scratch."""
    o = 6 * n
    nblk = (n + BLOCK - 1) // BLOCK
    C = ws[o:o + n * n].reshape((n, n))
    return C, ws[o + n * n:o + n * n + nblk], ws[o + n * n + nblk:o + n * n + 2 * nblk]


@nb.njit(cache=True, boundscheck=False)
def _prepare_factors(g, P, ws):
    """Write group g's coupling and its bounds into its scratch (`write_factored`, as `coupling_product` does)."""
    base = P[1]
    bidx = P[2]
    rg = P[3]
    elem = P[4]
    eidx = P[5]
    n = rg.shape[1]
    C, lo, hi = _scratch(ws, n)
    has_elem = elem.shape[0] > 0
    bm = base[bidx[g]]
    em = elem[eidx[g]] if has_elem else bm
    write_factored(bm, rg[group_index(rg.shape[0], g)], em, has_elem, C, lo, hi, ALIGN)


@nb.njit(cache=True, fastmath=True)
def _drift_sine_factors(t, y, g, P, ws, out):
    """`_drift_sine` on the group's coupling in its scratch."""
    omega, _, _, _, _, _, injK, injpsi, injm, drvF, drvpsi, drvw = P
    n = y.shape[0]
    cs, sn, a, b, _, _ = work_vectors(ws, n)
    C, lo, hi = _scratch(ws, n)
    sincos(y, sn, cs)
    fused_two_products(C, sn, cs, lo, hi, a, b)
    go = group_index(omega.shape[0], g)
    for i in range(n):
        out[i] = omega[go, i] + cs[i] * a[i] - sn[i] * b[i]
    _extra_terms(t, y, g, injK, injpsi, injm, drvF, drvpsi, drvw, out)


@nb.njit(cache=True, fastmath=True)
def _drift_general_factors(t, y, g, P, ws, out):
    """`_drift_general` without lags on the group's coupling in its scratch."""
    omega, _, _, _, _, _, ha, hb, injK, injpsi, injm, drvF, drvpsi, drvw = P
    n = y.shape[0]
    cm, sm, p1, p2, _, _ = work_vectors(ws, n)
    C, lo, hi = _scratch(ws, n)
    go = group_index(omega.shape[0], g)
    for i in range(n):
        out[i] = omega[go, i]
    for m in range(ha.shape[0]):
        mm = m + 1.0
        sincos(y, sm, cm, mm)
        fused_two_products(C, cm, sm, lo, hi, p1, p2)  # C cm, C sm
        for i in range(n):
            im = cm[i] * p2[i] - sm[i] * p1[i]
            re = cm[i] * p1[i] + sm[i] * p2[i]
            out[i] += ha[m] * im + hb[m] * re
    _extra_terms(t, y, g, injK, injpsi, injm, drvF, drvpsi, drvw, out)
