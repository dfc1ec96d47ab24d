"""Phase-oscillator networks (Kuramoto with lags, harmonics, injection, drive, additive noise)."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from ._checks import (NetworkModel, as_real_array, check_nonnegative, merge_groups, per_oscillator, per_pair,
                      term_rows)
from ._coupling import block_bounds, fused_two_products, group_index, sincos, work_vectors
from .drives import ExternalDrive, SubharmonicInjection

__all__ = ["PhaseNetwork"]


@dataclass(frozen=True)
class PhaseNetwork(NetworkModel):
    r"""G independent networks of N phase oscillators with dense coupling.

    Parameters
    ----------
    omega : array_like, shape (N,) or (G, N)
        Natural angular frequencies ω_i [rad per time unit].
    coupling : array_like, shape (N, N) or (G, N, N)
        C_ij [rad per time unit]: the influence of oscillator j on oscillator i (row i receives). Shared by
        all groups when (N, N).
    phase_lag : array_like, shape (N, N) or (G, N, N), optional
        β_ij [rad] (Sakaguchi–Kuramoto lags). Default: none.
    harmonics : array_like, shape (M, 2), optional
        Rows (a_m, b_m), m = 1..M, of the coupling function H(x) = Σ_m a_m sin(m x) + b_m cos(m x).
        Default: H(x) = sin x.
    sigma : float or array_like, shape (N,) or (G, N)
        Additive noise amplitude σ_i >= 0 [rad per sqrt(time unit)].
    injection : SubharmonicInjection, optional
    drive : ExternalDrive, optional

    Notes
    -----
    .. math::

        dθ_i = \Big[ω_i + \sum_j C_{ij} H(θ_j − θ_i + β_{ij}) − K_s \sin(m θ_i − ψ_i)
               + F_i \sin(ω_e t + ψ^e_i − θ_i)\Big] dt + σ_i\, dW_i

    The coupling costs O(N²) multiply–adds per evaluation, never N² trigonometric calls:
    Σ_j C_ij e^{im(θ_j − θ_i + β_ij)} = e^{−imθ_i} (D^{(m)} e^{imθ})_i with D^{(m)}_ij = C_ij e^{imβ_ij}
    precomputed; for pure sine coupling without lags this is cos θ_i (C sin θ)_i − sin θ_i (C cos θ)_i,
    both products in one pass over C. The noise is additive, so Itô and Stratonovich readings agree.
    """

    omega: object
    coupling: object
    phase_lag: object = None
    harmonics: object = None
    sigma: object = 0.0
    injection: SubharmonicInjection | None = None
    drive: ExternalDrive | None = None

    def __post_init__(self):
        C = per_pair("PhaseNetwork.coupling", as_real_array("PhaseNetwork.coupling", self.coupling))
        n = C.shape[-1]
        om = per_oscillator("PhaseNetwork.omega", as_real_array("PhaseNetwork.omega", self.omega), n, allow_scalar=False)
        sig = as_real_array("PhaseNetwork.sigma", self.sigma)
        check_nonnegative("PhaseNetwork.sigma", sig)
        sig = per_oscillator("PhaseNetwork.sigma", sig, n)
        lag = None
        if self.phase_lag is not None:
            lag = per_pair("PhaseNetwork.phase_lag", as_real_array("PhaseNetwork.phase_lag", self.phase_lag))
            if lag.shape[-1] != n:
                raise ValueError(f"PhaseNetwork.phase_lag: shape {lag.shape} does not match N = {n}")
        harm = None
        if self.harmonics is not None:
            harm = as_real_array("PhaseNetwork.harmonics", self.harmonics)
            if harm.ndim != 2 or harm.shape[1] != 2 or harm.shape[0] < 1:
                raise ValueError(f"PhaseNetwork.harmonics: expected shape (M, 2) with M >= 1, got {harm.shape}")
        if self.injection is not None and not isinstance(self.injection, SubharmonicInjection):
            raise ValueError("PhaseNetwork.injection: must be a SubharmonicInjection or None")
        if self.drive is not None and not isinstance(self.drive, ExternalDrive):
            raise ValueError("PhaseNetwork.drive: must be an ExternalDrive or None")
        groups = [("omega", om.shape[0]), ("coupling", C.shape[0]), ("sigma", sig.shape[0])]
        if lag is not None:
            groups.append(("phase_lag", lag.shape[0]))
        inj = term_rows("SubharmonicInjection", ("strength", "phase"), self.injection, n, groups)
        drv = term_rows("ExternalDrive", ("amplitude", "phase"), self.drive, n, groups)
        g = merge_groups(groups)
        self._store(coupling=C, omega=om, sigma=sig, phase_lag=lag, harmonics=harm, _n=n, _g=g, _inj=inj, _drv=drv)

    # ---- engine interface -------------------------------------------------------------------------
    def _state_dim(self) -> int:
        return self._n

    def _to_state(self, y0: np.ndarray) -> np.ndarray:
        if np.iscomplexobj(y0):
            raise ValueError("y0: a PhaseNetwork takes real phases [rad], shape (G, N); got a complex array")
        return np.ascontiguousarray(y0, dtype=np.float64)

    def _from_state(self, y: np.ndarray) -> np.ndarray:
        return y

    def _noise_rows(self) -> np.ndarray:
        return np.ascontiguousarray(self.sigma)

    def _kernel_key(self):
        fast = self.harmonics is None and self.phase_lag is None
        return ("phase", "sine" if fast else "general")

    def _make_drift(self):
        return _drift_sine if self._kernel_key()[1] == "sine" else _drift_general

    def _phases(self):
        return _phases_identity

    def _params(self):
        n = self._n
        empty = np.zeros((1, 0))
        injK, injpsi = self._inj if self._inj is not None else (empty, empty)
        injm = float(self.injection.order) if self.injection is not None else 1.0
        drvF, drvpsi = self._drv if self._drv is not None else (empty, empty)
        drvw = float(self.drive.angular_frequency) if self.drive is not None else 0.0
        tail = (injK, injpsi, injm, drvF, drvpsi, drvw)
        if self._kernel_key()[1] == "sine":
            lo, hi = block_bounds(self.coupling)
            return (self.omega, self.coupling, lo, hi) + tail
        harm = self.harmonics if self.harmonics is not None else np.array([[1.0, 0.0]])
        m_count = harm.shape[0]
        C = self.coupling
        gc = C.shape[0] if self.phase_lag is None else max(C.shape[0], self.phase_lag.shape[0])
        cr = np.empty((gc, m_count, n, n))
        if self.phase_lag is None:
            ci = np.zeros((1, m_count, 0, 0))
            for m in range(m_count):
                cr[:, m] = C
        else:
            ci = np.empty((gc, m_count, n, n))
            for m in range(m_count):
                cr[:, m] = C * np.cos((m + 1) * self.phase_lag)
                ci[:, m] = C * np.sin((m + 1) * self.phase_lag)
        lo, hi = block_bounds(C)
        return (self.omega, cr, ci, np.ascontiguousarray(harm[:, 0]), np.ascontiguousarray(harm[:, 1]), lo, hi) + tail


@nb.njit(cache=True, fastmath=True, inline="always")
def _extra_terms(t, y, g, injK, injpsi, injm, drvF, drvpsi, drvw, out):
    n = y.shape[0]
    if injK.shape[1] > 0:
        gk = group_index(injK.shape[0], g)
        gp = group_index(injpsi.shape[0], g)
        for i in range(n):
            out[i] -= injK[gk, i] * np.sin(injm * y[i] - injpsi[gp, i])
    if drvF.shape[1] > 0:
        gf = group_index(drvF.shape[0], g)
        gp = group_index(drvpsi.shape[0], g)
        wt = drvw * t
        for i in range(n):
            out[i] += drvF[gf, i] * np.sin(wt + drvpsi[gp, i] - y[i])


@nb.njit(cache=True, fastmath=True)
def _drift_sine(t, y, g, P, ws, out):
    omega, C, lo, hi, injK, injpsi, injm, drvF, drvpsi, drvw = P
    n = y.shape[0]
    cs, sn, a, b, _, _ = work_vectors(ws, n)
    sincos(y, sn, cs)
    gc = group_index(C.shape[0], g)
    fused_two_products(C[gc], sn, cs, lo[gc], hi[gc], a, b)
    go = group_index(omega.shape[0], g)
    for i in range(n):
        out[i] = omega[go, i] + cs[i] * a[i] - sn[i] * b[i]
    _extra_terms(t, y, g, injK, injpsi, injm, drvF, drvpsi, drvw, out)


@nb.njit(cache=True, fastmath=True)
def _drift_general(t, y, g, P, ws, out):
    omega, CR, CI, ha, hb, lo, hi, injK, injpsi, injm, drvF, drvpsi, drvw = P
    n = y.shape[0]
    cm, sm, p1, p2, p3, p4 = work_vectors(ws, n)
    go = group_index(omega.shape[0], g)
    for i in range(n):
        out[i] = omega[go, i]
    gr = group_index(CR.shape[0], g)
    has_ci = CI.shape[2] > 0
    gi = group_index(CI.shape[0], g)
    gb = group_index(lo.shape[0], g)  # the bounds follow C's groups (CR may also vary with the lags)
    glo, ghi = lo[gb], hi[gb]
    for m in range(ha.shape[0]):
        mm = m + 1.0
        sincos(y, sm, cm, mm)
        # X + iY = Σ_j (CR + i CI)_ij e^{i m θ_j}
        fused_two_products(CR[gr, m], cm, sm, glo, ghi, p1, p2)  # CR cm, CR sm
        if has_ci:
            fused_two_products(CI[gi, m], cm, sm, glo, ghi, p3, p4)  # CI cm, CI sm
            for i in range(n):
                x = p1[i] - p4[i]
                yy = p2[i] + p3[i]
                im = cm[i] * yy - sm[i] * x
                re = cm[i] * x + sm[i] * yy
                out[i] += ha[m] * im + hb[m] * re
        else:
            for i in range(n):
                im = cm[i] * p2[i] - sm[i] * p1[i]
                re = cm[i] * p1[i] + sm[i] * p2[i]
                out[i] += ha[m] * im + hb[m] * re
    _extra_terms(t, y, g, injK, injpsi, injm, drvF, drvpsi, drvw, out)


@nb.njit(cache=True, fastmath=True)
def _phases_identity(y, cs, sn):
    sincos(y, sn, cs)
