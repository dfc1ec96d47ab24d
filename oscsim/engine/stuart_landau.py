"""Complex-amplitude (Stuart–Landau) networks: the form the spin-torque oscillator model builds on."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from ._checks import (NetworkModel, as_complex_array, as_real_array, check_nonnegative, merge_groups,
                      per_oscillator, per_pair, term_rows)
from ._coupling import block_bounds, fused_two_products, group_index, work_vectors
from .drives import ExternalDrive

__all__ = ["StuartLandauNetwork"]


@dataclass(frozen=True)
class StuartLandauNetwork(NetworkModel):
    r"""G independent networks of N complex amplitudes c_i with linear coupling.

    Parameters
    ----------
    a : complex or array_like, shape (N,) or (G, N)
        Linear coefficient a_i [1/time unit] (Re: growth, Im: angular frequency with sign).
    b : complex or array_like, shape (N,) or (G, N)
        Cubic coefficient b_i [1/time unit per |c|²] (Re < 0 saturates).
    coupling : array_like, shape (N, N) or (G, N, N), complex
        C_ij [1/time unit]: row i receives from j.
    sigma : float or array_like, shape (N,) or (G, N)
        Noise amplitude σ_i >= 0 of the complex white noise.
    drive : ExternalDrive, optional
        Adds F_i exp(−i(ω_e t + ψ_i)).

    Notes
    -----
    .. math:: dc_i = \Big[(a_i + b_i |c_i|^2) c_i + \sum_j C_{ij} c_j + F_i e^{−i(ω_e t + ψ_i)}\Big] dt
              + σ_i\, dZ_i, \qquad dZ = (dW^1 + i\, dW^2)/\sqrt 2,

    so E|σ dZ|² = σ² dt. The noise is additive (Itô = Stratonovich). The spin-torque oscillator of Slavin &
    Tiberkevich is a = −iω₀ + (σI − Γ_G), b = −iN − (Γ_G Q + σI). The state is stored as interleaved
    (Re, Im) float64 pairs; the solution is returned as complex128.
    """

    a: object
    b: object
    coupling: object
    sigma: object = 0.0
    drive: ExternalDrive | None = None

    def __post_init__(self):
        C = per_pair("StuartLandauNetwork.coupling", as_complex_array("StuartLandauNetwork.coupling", self.coupling))
        n = C.shape[-1]
        a = per_oscillator("StuartLandauNetwork.a", as_complex_array("StuartLandauNetwork.a", self.a), n)
        b = per_oscillator("StuartLandauNetwork.b", as_complex_array("StuartLandauNetwork.b", self.b), n)
        sig = as_real_array("StuartLandauNetwork.sigma", self.sigma)
        check_nonnegative("StuartLandauNetwork.sigma", sig)
        sig = per_oscillator("StuartLandauNetwork.sigma", sig, n)
        if self.drive is not None and not isinstance(self.drive, ExternalDrive):
            raise ValueError("StuartLandauNetwork.drive: must be an ExternalDrive or None")
        groups = [("a", a.shape[0]), ("b", b.shape[0]), ("coupling", C.shape[0]), ("sigma", sig.shape[0])]
        drv = term_rows("ExternalDrive", ("amplitude", "phase"), self.drive, n, groups)
        g = merge_groups(groups)
        self._store(coupling=C, a=a, b=b, sigma=sig, _n=n, _g=g, _drv=drv)

    def _state_dim(self) -> int:
        return 2 * self._n

    def _user_dim(self) -> int:
        return self._n

    def _to_state(self, y0: np.ndarray) -> np.ndarray:
        c = np.ascontiguousarray(y0, dtype=np.complex128)
        return np.ascontiguousarray(c.view(np.float64))

    def _from_state(self, y: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(y).view(np.complex128)

    def _noise_rows(self) -> np.ndarray:
        return np.ascontiguousarray(np.repeat(self.sigma / np.sqrt(2.0), 2, axis=1))

    def _kernel_key(self):
        return ("stuart_landau",)

    def _make_drift(self):
        return _drift_sl

    def _phases(self):
        return _phases_sl

    def _params(self):
        empty = np.zeros((1, 0))
        F, psi = self._drv if self._drv is not None else (empty, empty)
        we = float(self.drive.angular_frequency) if self.drive is not None else 0.0
        C = self.coupling
        cr = np.ascontiguousarray(C.real)
        has_im = bool(np.any(C.imag != 0))
        ci = np.ascontiguousarray(C.imag) if has_im else np.zeros((1, 0, 0))
        lo, hi = block_bounds(C != 0)
        return (
            np.ascontiguousarray(self.a.real), np.ascontiguousarray(self.a.imag),
            np.ascontiguousarray(self.b.real), np.ascontiguousarray(self.b.imag),
            cr, ci, lo, hi, F, psi, we,
        )


@nb.njit(cache=True, fastmath=True)
def _drift_sl(t, y, g, P, ws, out):
    aR, aI, bR, bI, CR, CI, lo, hi, F, psi, we = P
    n = y.shape[0] // 2
    x, v, p1, p2, p3, p4 = work_vectors(ws, n)
    for j in range(n):
        x[j] = y[2 * j]
        v[j] = y[2 * j + 1]
    gb = group_index(lo.shape[0], g)
    fused_two_products(CR[group_index(CR.shape[0], g)], x, v, lo[gb], hi[gb], p1, p2)
    has_ci = CI.shape[1] > 0
    if has_ci:
        fused_two_products(CI[group_index(CI.shape[0], g)], x, v, lo[gb], hi[gb], p3, p4)
    ga = group_index(aR.shape[0], g)
    gb = group_index(bR.shape[0], g)
    for i in range(n):
        r2 = x[i] * x[i] + v[i] * v[i]
        gr = aR[ga, i] + bR[gb, i] * r2
        gi = aI[ga, i] + bI[gb, i] * r2
        re = gr * x[i] - gi * v[i] + p1[i]
        im = gr * v[i] + gi * x[i] + p2[i]
        if has_ci:
            re -= p4[i]
            im += p3[i]
        out[2 * i] = re
        out[2 * i + 1] = im
    if F.shape[1] > 0:
        gf = group_index(F.shape[0], g)
        gp = group_index(psi.shape[0], g)
        for i in range(n):
            ph = we * t + psi[gp, i]
            out[2 * i] += F[gf, i] * np.cos(ph)
            out[2 * i + 1] -= F[gf, i] * np.sin(ph)


@nb.njit(cache=True, fastmath=True)
def _phases_sl(y, cs, sn):
    for i in range(cs.shape[0]):
        x = y[2 * i]
        v = y[2 * i + 1]
        r = np.sqrt(x * x + v * v)
        if r > 0.0:
            cs[i] = x / r
            sn[i] = v / r
        else:
            cs[i] = 1.0
            sn[i] = 0.0
