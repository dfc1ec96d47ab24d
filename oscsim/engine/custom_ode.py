"""User-supplied right-hand sides (voltage-level circuits from ``hw_models``) without touching the engine."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numba as nb
import numpy as np

from ._checks import EngineModel, as_real_array, check_nonnegative, merge_groups, per_oscillator

__all__ = ["CustomODE"]


@dataclass(frozen=True)
class CustomODE(EngineModel):
    r"""A system dy = f(t, y; p_g) dt + σ dW given by a compiled right-hand side.

    Parameters
    ----------
    rhs : numba dispatcher
        An ``@numba.njit`` function ``rhs(t, y, p, dydt) -> None`` for ONE group: t float [time units],
        y float64[:] (D,), p float64[:] (P,) the group's parameters, dydt float64[:] (D,) to fill.
    params : array_like, shape (G, P) or (P,)
        Parameters per group (one row shared by all groups if 1-D).
    dim : int
        D, the state size per group.
    sigma : float or array_like, shape (D,) or (G, D)
        Additive noise amplitude >= 0 per component.

    Notes
    -----
    Each ``rhs`` compiles its own time loop once per solver (10–20 s). When ``rhs`` is defined at module
    level (importable as ``module.name``) the loop is cached on disk (``$OSCSIM_KERNEL_CACHE``, default
    ``~/.cache/oscsim/kernels``) and later processes load it in well under a second; a closure or a function
    defined in ``__main__`` compiles in every process. `SaveSummary` keeps only the final state (a general
    state has no phase).
    """

    rhs: object
    params: object
    dim: int
    sigma: object = 0.0

    def __post_init__(self):
        if not isinstance(self.rhs, nb.core.dispatcher.Dispatcher):
            raise ValueError(
                "CustomODE.rhs: must be an @numba.njit function rhs(t, y, p, dydt) -> None, got "
                f"{type(self.rhs).__name__}"
            )
        if isinstance(self.dim, bool) or not isinstance(self.dim, numbers.Integral) or self.dim < 1:
            raise ValueError(f"CustomODE.dim: must be an integer >= 1, got {self.dim!r}")
        p = as_real_array("CustomODE.params", self.params)
        if p.ndim == 1:
            p = p[None]
        if p.ndim != 2:
            raise ValueError(f"CustomODE.params: expected shape (G, P) or (P,), got {p.shape}")
        if p.shape[1] == 0:
            p = np.zeros((p.shape[0], 1))
        sig = as_real_array("CustomODE.sigma", self.sigma)
        check_nonnegative("CustomODE.sigma", sig)
        sig = per_oscillator("CustomODE.sigma", sig, int(self.dim))
        g = merge_groups([("params", p.shape[0]), ("sigma", sig.shape[0])])
        self._store(params=np.ascontiguousarray(p), sigma=sig, dim=int(self.dim), _g=g)

    def _state_dim(self) -> int:
        return self.dim

    def _to_state(self, y0):
        if np.iscomplexobj(y0):
            raise ValueError("y0: a CustomODE state is real, shape (G, D); got a complex array")
        return np.ascontiguousarray(y0, dtype=np.float64)

    def _from_state(self, y):
        return y

    def _noise_rows(self):
        return np.ascontiguousarray(self.sigma)

    def _kernel_key(self):
        return ("custom", self.rhs)

    def _make_drift(self):
        return _wrap(self.rhs)

    def _phases(self):
        return _no_phases

    def _n_phases(self) -> int:
        return 0

    def _work_size(self) -> int:
        return 1

    def _params(self):
        return (self.params,)


_WRAPPED: dict = {}


def _wrap(rhs):
    fn = _WRAPPED.get(rhs)
    if fn is None:

        @nb.njit
        def drift(t, y, g, P, ws, out):
            p = P[0]
            rhs(t, y, p[g * np.int64(p.shape[0] > 1)], out)

        _WRAPPED[rhs] = fn = drift
    return fn


@nb.njit(cache=True)
def _no_phases(y, cs, sn):
    pass
