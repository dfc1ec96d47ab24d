"""Phase-oscillator networks (Kuramoto with lags, harmonics, injection, drive, additive noise)."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from ._checks import (NetworkModel, as_real_array, check_nonnegative, merge_groups, per_oscillator, per_pair,
                      real_view, term_rows)
from ._coupling import block_bounds, checked_block_bounds, fused_two_products, group_index, sincos, work_vectors
from .drives import ExternalDrive, SubharmonicInjection

__all__ = ["PhaseNetwork", "PackedPhaseNetwork"]


class _PhaseState:
    """The state of a phase network: (G, N) float64 phases [rad], as given."""

    def _state_dim(self) -> int:
        return self._n

    def _to_state(self, y0: np.ndarray) -> np.ndarray:
        if np.iscomplexobj(y0):
            raise ValueError("y0: a PhaseNetwork takes real phases [rad], shape (G, N); got a complex array")
        return np.ascontiguousarray(y0, dtype=np.float64)

    def _from_state(self, y: np.ndarray) -> np.ndarray:
        return y


@dataclass(frozen=True)
class PhaseNetwork(_PhaseState, NetworkModel):
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

    # ---- packing: the layout the kernels read ------------------------------------------------------
    def pack(self) -> "PackedPhaseNetwork":
        """This network in the layout the compiled kernels read, made once and kept (see `PackedPhaseNetwork`).

        `simulate` packs a `PhaseNetwork` through this method, so running the same model object again does
        not repeat the work; ``pack().with_arrays(...)`` gives the same network with new per-group arrays.
        """
        packed = self.__dict__.get("_packed")
        if packed is None:
            packed = PackedPhaseNetwork._from_network(self)
            object.__setattr__(self, "_packed", packed)
        return packed

    # ---- engine interface (the packed form runs) ----------------------------------------------------
    def _engine_model(self):
        return self.pack()


class PackedPhaseNetwork(_PhaseState, NetworkModel):
    r"""A `PhaseNetwork` packed for the kernels: reusable across runs, with swappable per-group arrays.

    Made by `PhaseNetwork.pack` (not constructed directly). `simulate` accepts it wherever it accepts a
    `PhaseNetwork` and gives the same numbers to the bit. What packing costs (the harmonic and lag
    matrices D^{(m)} = C ∘ e^{imβ}, the bounds of the nonzero coupling columns, the validated arrays) is done
    once; `with_arrays` then makes the same network with new ``omega`` / ``coupling`` / ``sigma`` (a chip
    layer re-run over windows and batches), checking and packing only what is new.

    Attributes
    ----------
    n_oscillators : int
        N.
    n_groups : int
        G if any array is per group, else 1.
    is_stochastic : bool
    kernel : {"sine", "general"}
        Which compiled drift runs: pure sine coupling without lags, or harmonics and/or lags.
    omega, coupling, sigma : ndarray, read-only
        (G', N), (G', N, N), (G', N) with G' = 1 (shared) or G.

    Notes
    -----
    Contract of `with_arrays` (what `mapping`'s chip backends rely on):

    - arrays of dtype float64 that are C-contiguous are *referenced, not copied* (read-only views): do
      not write into them while the packed model is in use; anything else is converted (a copy);
    - the new arrays are checked (shape, N, group count against the arrays kept, finite, σ >= 0) in
      vectorised passes; the arrays kept are not checked again;
    - harmonics, lags, injection and drive are kept; with lags, D^{(m)} is recomputed from the new
      coupling (vectorised, no Python loop over groups);
    - ``simulate(packed.with_arrays(coupling=C), ...)`` gives bit for bit what
      ``simulate(PhaseNetwork(omega, C, ...), ...)`` gives with the same other arguments.
    """

    __slots__ = ("omega", "coupling", "sigma", "phase_lag", "harmonics", "_n", "_g", "_inj", "_drv", "_injm",
                 "_drvw", "_lag_trig", "_groups_fixed", "_P")

    def __setattr__(self, name, value):
        raise AttributeError(f"PackedPhaseNetwork is immutable; use with_arrays() (tried to set {name!r})")

    @classmethod
    def _from_network(cls, net: PhaseNetwork) -> "PackedPhaseNetwork":
        self = object.__new__(cls)
        lag_trig = None
        if net.phase_lag is not None:
            m = np.arange(1, net.harmonics.shape[0] + 1 if net.harmonics is not None else 2, dtype=np.float64)
            # cos(m β), sin(m β) per harmonic, (G_lag, M, N, N): recomputed never, multiplied by each new C
            lag_trig = tuple(np.ascontiguousarray(f(m[None, :, None, None] * net.phase_lag[:, None]))
                             for f in (np.cos, np.sin))
        fixed = []
        if net.phase_lag is not None:
            fixed.append(("phase_lag", net.phase_lag.shape[0]))
        for prefix, fields, rows in (("injection", ("strength", "phase"), net._inj),
                                     ("drive", ("amplitude", "phase"), net._drv)):
            if rows is not None:
                fixed += [(f"{prefix}.{f}", r.shape[0]) for f, r in zip(fields, rows)]
        fields = dict(
            phase_lag=net.phase_lag, harmonics=net.harmonics, _n=net._n, _inj=net._inj, _drv=net._drv,
            _injm=float(net.injection.order) if net.injection is not None else 1.0,
            _drvw=float(net.drive.angular_frequency) if net.drive is not None else 0.0,
            _lag_trig=lag_trig, _groups_fixed=tuple(fixed),
        )
        for k, v in fields.items():
            object.__setattr__(self, k, v)
        self._set_arrays(net.omega, net.coupling, net.sigma)
        return self

    def _set_arrays(self, omega, coupling, sigma, bounds=None) -> None:
        g = merge_groups([("omega", omega.shape[0]), ("coupling", coupling.shape[0]), ("sigma", sigma.shape[0]),
                          *self._groups_fixed])
        for k, v in (("omega", omega), ("coupling", coupling), ("sigma", sigma), ("_g", g)):
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_P", self._pack_params(bounds))

    def with_arrays(self, *, omega=None, coupling=None, sigma=None) -> "PackedPhaseNetwork":
        """The same network with new per-group arrays (the others kept, not checked again).

        Parameters
        ----------
        omega : array_like, shape (N,) or (G, N), optional
            ω_i [rad per time unit].
        coupling : array_like, shape (N, N) or (G, N, N), optional
            C_ij [rad per time unit].
        sigma : float or array_like, shape (N,) or (G, N), optional
            σ_i >= 0 [rad per sqrt(time unit)].

        Returns
        -------
        PackedPhaseNetwork

        Raises
        ------
        ValueError
            A shape that does not match N, group counts that disagree, NaN/inf, σ < 0.
        """
        n = self._n
        om, C, sig = self.omega, self.coupling, self.sigma
        if omega is not None:
            om = per_oscillator("omega", real_view("omega", omega), n, allow_scalar=False)
        if coupling is not None:
            C = per_pair("coupling", real_view("coupling", coupling, check=False))
            if C.shape[-1] != n:
                raise ValueError(f"coupling: shape {C.shape} does not match N = {n}")
            bounds = checked_block_bounds("coupling", C)  # finite, and the packed bounds, in one pass
        if sigma is not None:
            s = real_view("sigma", sigma)
            check_nonnegative("sigma", s)
            sig = per_oscillator("sigma", s, n)
        new = object.__new__(PackedPhaseNetwork)
        for k in PackedPhaseNetwork.__slots__:
            if k not in ("omega", "coupling", "sigma", "_g", "_P"):
                object.__setattr__(new, k, getattr(self, k))
        if coupling is None:  # nothing derived from the coupling changes: swap omega into the kept tuple
            g = merge_groups([("omega", om.shape[0]), ("coupling", C.shape[0]), ("sigma", sig.shape[0]),
                              *self._groups_fixed])
            for k, v in (("omega", om), ("coupling", C), ("sigma", sig), ("_g", g), ("_P", (om,) + self._P[1:])):
                object.__setattr__(new, k, v)
        else:
            new._set_arrays(om, C, sig, bounds)
        return new

    def with_coupling_product(self, base, base_index, row_gain, elem=None, elem_index=None, *, out=None,
                              omega=None, sigma=None) -> "PackedPhaseNetwork":
        """`with_arrays` with the coupling given by its factors, C[g] = (base[base_index[g]] · row_gain[g][:, None])
        · elem[elem_index[g]] (`oscsim.engine._coupling.coupling_product`): C is written, checked and bounded
        in one compiled pass, with no intermediate (G, N, N) array.

        Parameters
        ----------
        base : (K, N, N); base_index : (G,) int
        row_gain : (G, N)
        elem : (L, N, N) or None; elem_index : (G,) int or None
        out : (G, N, N) float64 C-contiguous, optional
            The buffer C is written into; the returned model references it (do not write into it while the
            model is in use). A buffer kept across calls saves allocating and faulting in a new one.
        omega, sigma : as in `with_arrays`

        Returns
        -------
        PackedPhaseNetwork
            Bit for bit the model ``with_arrays(coupling=C, ...)`` of the same C.
        """
        from ._coupling import coupling_product

        C, lo, hi, bad = coupling_product(base, base_index, row_gain, elem, elem_index, out=out)
        if C.shape[-1] != self._n:
            raise ValueError(f"coupling: shape {C.shape} does not match N = {self._n}")
        if bad:
            from ._checks import check_finite

            check_finite("coupling", C)  # the message with the first bad index
        new = self.with_arrays(omega=omega, sigma=sigma)
        new._set_arrays(new.omega, _frozen(C), new.sigma, (lo, hi))
        return new

    @property
    def kernel(self) -> str:
        return "sine" if self.harmonics is None and self.phase_lag is None else "general"

    def __repr__(self) -> str:
        return (f"PackedPhaseNetwork(N={self._n}, groups={self._g}, kernel={self.kernel!r}, "
                f"stochastic={self.is_stochastic})")

    # ---- engine interface -------------------------------------------------------------------------
    def _engine_model(self):
        return self

    def _noise_rows(self) -> np.ndarray:
        return self.sigma

    def _kernel_key(self):
        return ("phase", self.kernel)

    def _make_drift(self):
        return _drift_sine if self.kernel == "sine" else _drift_general

    def _phases(self):
        return _phases_identity

    def _params(self):
        return self._P

    def _pack_params(self, bounds=None) -> tuple:
        """The kernels' parameter tuple (see `_drift_sine` / `_drift_general` for the layout)."""
        empty = np.zeros((1, 0))
        injK, injpsi = self._inj if self._inj is not None else (empty, empty)
        drvF, drvpsi = self._drv if self._drv is not None else (empty, empty)
        tail = (injK, injpsi, self._injm, drvF, drvpsi, self._drvw)
        C = self.coupling
        lo, hi = block_bounds(C) if bounds is None else bounds
        if self.kernel == "sine":
            return (self.omega, C, lo, hi) + tail
        harm = self.harmonics if self.harmonics is not None else np.array([[1.0, 0.0]])
        if self._lag_trig is None:
            # one (N, N) matrix per group serves every harmonic: a view with a unit harmonic axis, no copy
            cr = C[:, None]
            ci = np.zeros((1, harm.shape[0], 0, 0))
        else:
            cos_mb, sin_mb = self._lag_trig
            cr = C[:, None] * cos_mb
            ci = C[:, None] * sin_mb
        return (self.omega, _frozen(cr), _frozen(ci), np.ascontiguousarray(harm[:, 0]),
                np.ascontiguousarray(harm[:, 1]), lo, hi) + tail


def _frozen(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.setflags(write=False)
    return v


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
    gb = group_index(lo.shape[0], g)
    fused_two_products(C[group_index(C.shape[0], g)], sn, cs, lo[gb], hi[gb], a, b)
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
    gb = group_index(lo.shape[0], g)
    lo_g = lo[gb]
    hi_g = hi[gb]
    for m in range(ha.shape[0]):
        mm = m + 1.0
        sincos(y, sm, cm, mm)
        # X + iY = Σ_j (CR + i CI)_ij e^{i m θ_j}
        fused_two_products(CR[gr, m * np.int64(CR.shape[1] > 1)], cm, sm, lo_g, hi_g, p1, p2)  # CR cm, CR sm
        if has_ci:
            fused_two_products(CI[gi, m], cm, sm, lo_g, hi_g, p3, p4)  # CI cm, CI sm
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
