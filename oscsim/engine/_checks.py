"""Argument checks shared by the engine's frozen configs (errors name the argument and the valid range)."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "as_real_array",
    "as_complex_array",
    "check_finite",
    "check_nonnegative",
    "check_positive_scalar",
    "per_oscillator",
    "per_pair",
    "real_view",
]


def as_real_array(name: str, value) -> np.ndarray:
    """``value`` as a float64 array, refusing complex input and NaN/inf."""
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise ValueError(f"{name}: could not be read as an array ({exc})") from None
    if np.iscomplexobj(arr):
        raise ValueError(f"{name}: must be real, got a complex array")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ValueError(f"{name}: must be numeric, got dtype {arr.dtype}")
    arr = np.array(arr, dtype=np.float64, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    check_finite(name, arr)
    return arr


def real_view(name: str, value, check: bool = True) -> np.ndarray:
    """Like `as_real_array`, but a float64 C-contiguous ndarray is referenced (a read-only view), not copied.

    For arrays that change on every run of a packed model (`PackedPhaseNetwork.with_arrays`): the caller
    promises not to write into them while the model is in use. ``check=False`` leaves the finiteness check
    of such an array to the caller (the coupling's is done with its bounds, in one pass).
    """
    if isinstance(value, np.ndarray) and value.dtype == np.float64 and value.flags.c_contiguous and value.ndim:
        if check:
            check_finite(name, value)
        v = value.view()
        v.setflags(write=False)
        return v
    arr = as_real_array(name, value)
    arr.setflags(write=False)
    return arr


def as_complex_array(name: str, value) -> np.ndarray:
    """``value`` as a complex128 array, refusing NaN/inf."""
    arr = np.asarray(value)
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{name}: must be numeric, got dtype {arr.dtype}")
    arr = np.array(arr, dtype=np.complex128, order="C")
    check_finite(name, arr)
    return arr


def check_finite(name: str, arr: np.ndarray) -> None:
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name}: contains NaN or inf (first at index {tuple(int(i) for i in bad)})")


def check_nonnegative(name: str, arr: np.ndarray) -> None:
    if np.any(arr < 0):
        raise ValueError(f"{name}: must be >= 0 (a noise amplitude or strength), got min {arr.min():g}")


def check_positive_scalar(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}: must be a real number > 0, got {value!r}")
    v = float(value)
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name}: must be a finite number > 0, got {value!r}")
    return v


def per_oscillator(name: str, arr: np.ndarray, n: int | None, allow_scalar: bool = True) -> np.ndarray:
    """Normalise a per-oscillator parameter to shape (G', n), G' = 1 (shared) or G (per group).

    Accepted shapes: scalar (if ``allow_scalar``), (n,), (G, n).
    """
    if arr.ndim == 0:
        if not allow_scalar:
            raise ValueError(f"{name}: must have shape (N,) or (G, N), got a scalar")
        if n is None:
            raise ValueError(f"{name}: a scalar needs the network size from another argument")
        return np.full((1, n), arr[()], dtype=arr.dtype)
    if arr.ndim == 1:
        if n is not None and arr.shape[0] != n:
            raise ValueError(f"{name}: shape {arr.shape} does not match N = {n}; expected (N,) or (G, N)")
        return arr.reshape(1, -1).copy()
    if arr.ndim == 2:
        if n is not None and arr.shape[1] != n:
            raise ValueError(f"{name}: shape {arr.shape} does not match N = {n}; expected (N,) or (G, N)")
        return np.ascontiguousarray(arr)
    raise ValueError(f"{name}: expected a scalar, (N,) or (G, N), got shape {arr.shape}")


def per_pair(name: str, arr: np.ndarray) -> np.ndarray:
    """Normalise a pair matrix to shape (G', N, N) from (N, N) or (G, N, N)."""
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[1] != arr.shape[2]:
        raise ValueError(f"{name}: expected shape (N, N) or (G, N, N), got {arr.shape}")
    return np.ascontiguousarray(arr)


def merge_groups(names_and_counts: list[tuple[str, int]]) -> int:
    """The common group count of several (G' = 1 or G) leading dimensions; error if two differ."""
    g = 1
    owner = None
    for name, count in names_and_counts:
        if count == 1:
            continue
        if g == 1:
            g, owner = count, name
        elif count != g:
            raise ValueError(f"{name}: has {count} groups but {owner} has {g}; per-group parameters must agree")
    return g


def term_rows(name: str, fields: tuple[str, str], term, n: int, groups: list) -> tuple | None:
    """A drive or injection term's two per-oscillator arrays, (G, N) or (1, N), or None without the term.

    Appends their group counts to ``groups`` (for `merge_groups`); ``name`` is the term's class name and
    ``fields`` its two attributes, as they appear in error messages.
    """
    if term is None:
        return None
    rows = tuple(per_oscillator(f"{name}.{f}", getattr(term, f), n) for f in fields)
    prefix = "drive" if name == "ExternalDrive" else "injection"
    groups += [(f"{prefix}.{f}", r.shape[0]) for f, r in zip(fields, rows)]
    return rows


class EngineModel:
    """Properties every engine model shares; its ``__post_init__`` sets ``_g`` and a ``sigma`` array."""

    def _store(self, **fields) -> None:
        """Set the validated fields of the frozen dataclass, their arrays read-only (shared with kernels)."""
        for k, v in fields.items():
            if isinstance(v, np.ndarray):
                v.setflags(write=False)
            object.__setattr__(self, k, v)

    def _engine_model(self):
        """The object `simulate` runs: the model itself, or its packed form (`PhaseNetwork.pack`)."""
        return self

    def _prepare(self):
        """The compiled ``prepare(g, P, ws)`` the group loop calls before a group's first step (`_templates`), or
        None for none (the loop then takes `_templates.no_prepare`; named there, not here, so that this module
        imports nothing of the engine's kernels)."""
        return None

    @property
    def n_groups(self) -> int:
        """G if any parameter is per group, else 1 (the model then fits any number of groups)."""
        return self._g

    @property
    def is_stochastic(self) -> bool:
        return bool(np.any(self.sigma > 0))


class NetworkModel(EngineModel):
    """An engine model of N coupled oscillators (``__post_init__`` also sets ``_n``)."""

    @property
    def n_oscillators(self) -> int:
        """N."""
        return self._n

    def _n_phases(self) -> int:
        """Phases a running summary averages: one per oscillator."""
        return self._n

    def _work_size(self) -> int:
        """Scratch floats of the built-in drift kernels: two N-vectors of the state (cos/sin θ, or Re/Im c) and
        the four N-vector accumulators of the row-blocked coupling products (`_coupling`)."""
        return 6 * self._n
