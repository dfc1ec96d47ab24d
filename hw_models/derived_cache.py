"""A disk cache of numbers derived from a device's parameters by this package's code (limit cycles, coupler powers).

A ring's limit cycle and PPV (:func:`hw_models.ring_macro.limit_cycle`) take 0.4 s of stiff ODE solving plus
0.4 s of importing SciPy's integrators, in every process that compiles a ring chip: every ``oscsim`` command and
every sweep worker. They are a function of the parameters, the code and the numerical libraries only, so they are
kept under ``$OSCSIM_CACHE`` (default ``~/.cache/oscsim``), keyed on

- what the caller names (the parameters' ``repr``: a frozen dataclass, floats written exactly),
- a hash of every ``hw_models`` source file (any edit of the device code makes new entries),
- the NumPy and SciPy versions and the machine architecture (the solvers' last bits depend on them).

A cached value is the one the code computed on this machine, bit for bit (``.npz`` and JSON keep float64
exactly). Files are written under a temporary name and renamed, so concurrent processes (sweep workers) never
read a half-written entry; an entry that cannot be read or fails validation is computed again and rewritten.
Arrays are loaded with ``allow_pickle=False``. Set ``OSCSIM_CACHE`` to another folder to move the cache, or
delete the folder to clear it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import zipfile
from pathlib import Path

import numpy as np

__all__ = ["cache_root", "source_key", "cached_scalar", "cached_arrays", "ENV_VAR"]

ENV_VAR = "OSCSIM_CACHE"
_SCALARS = "scalars.json"  # every cached scalar, one JSON object


def cache_root() -> Path:
    """``$OSCSIM_CACHE``, default ``~/.cache/oscsim``."""
    return Path(os.environ.get(ENV_VAR, Path.home() / ".cache" / "oscsim"))


@functools.lru_cache(maxsize=1)
def source_key() -> str:
    """Hash of the ``hw_models`` sources (every ``*.py`` of the package and its subpackages)."""
    root = Path(__file__).parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:20]


@functools.lru_cache(maxsize=1)
def _library_key() -> str:
    import scipy

    return f"numpy-{np.__version__}:scipy-{scipy.__version__}:{platform.machine()}"


def _write_atomic(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:  # a read-only or full disk: the value is still returned, just not kept
        pass


def cached_scalar(key: str, fn) -> float:
    """``fn()`` (a float) cached under ``key`` + the source hash, in one JSON file of scalars."""
    path = cache_root() / _SCALARS
    key = f"{key}:{source_key()}"
    try:
        cache = json.loads(path.read_text())
        if not isinstance(cache, dict):
            cache = {}
    except (OSError, ValueError):
        cache = {}
    v = cache.get(key)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v):
        return float(v)
    v = float(fn())
    _write_atomic(path, json.dumps({**cache, key: v}).encode())
    return v


def cached_arrays(kind: str, key: str, fn, shapes: dict) -> dict:
    """``fn()`` (a dict of float64 arrays) cached in ``$OSCSIM_CACHE/<kind>/<hash>.npz``.

    Parameters
    ----------
    kind : str
        Folder of the entries (one per derived quantity, e.g. ``"limit-cycles"``).
    key : str
        What the value depends on besides the code and the libraries (e.g. the parameters' ``repr``).
    fn : callable
        ``fn() -> {name: array}``, computed on a miss.
    shapes : dict
        ``{name: shape}`` an entry must have (``None`` in a shape: any length); a file that differs, holds
        other names or non-finite values is not trusted (computed again).

    Returns
    -------
    dict of numpy.ndarray (float64)
    """
    full = f"{kind}:{key}:{source_key()}:{_library_key()}"
    path = cache_root() / kind / f"{hashlib.sha256(full.encode()).hexdigest()[:32]}.npz"
    try:
        with np.load(path, allow_pickle=False) as z:
            if str(z["key"]) == full and set(z.files) == set(shapes) | {"key"}:
                out = {k: np.array(z[k], dtype=np.float64) for k in shapes}
                if all(_fits(out[k], s) and np.all(np.isfinite(out[k])) for k, s in shapes.items()):
                    return out
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # missing, damaged or foreign: again
        pass
    out = {k: np.asarray(v, dtype=np.float64) for k, v in fn().items()}
    import io

    buf = io.BytesIO()
    np.savez(buf, key=np.array(full), **out)
    _write_atomic(path, buf.getvalue())
    return out


def _fits(a: np.ndarray, shape) -> bool:
    return a.ndim == len(shape) and all(s is None or s == n for s, n in zip(shape, a.shape))
