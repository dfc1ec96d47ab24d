"""Disk-cached loops for `CustomODE` right-hand sides defined at module level.

Numba cannot cache closures, so a `CustomODE` would otherwise compile its loop in every process (10–20 s).
When ``rhs`` is a module-level ``@njit`` function, `_codegen.render_custom` spells out a small module that
imports ``rhs`` by name, and `_kernel_cache.load_generated` writes it into the kernel cache directory
(``$OSCSIM_KERNEL_CACHE``, default ``~/.cache/oscsim/kernels``); Numba then caches the compiled loop next
to that file. The file name hashes the right-hand side's source and file modification time, the solver,
and the engine's sources, so an edited ``rhs`` gets a new kernel (Numba itself does not track changes in
called functions). Anything unusual (a closure, an unwritable directory) falls back to the per-process
compiled loop.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys

from . import _codegen
from ._kernel_cache import load_generated

__all__ = ["cached_custom_loop"]

_LOADED: dict = {}


def _importable(rhs) -> tuple[str, str] | None:
    mod_name = getattr(rhs, "__module__", None)
    name = getattr(getattr(rhs, "py_func", None), "__name__", None)
    if not mod_name or not name or mod_name == "__main__":
        return None
    mod = sys.modules.get(mod_name)
    if mod is None or getattr(mod, name, None) is not rhs:
        return None
    return mod_name, name


def cached_custom_loop(rhs, solver, adaptive: bool):
    """The disk-cached loop for ``rhs`` and ``solver``, or None when that is not possible."""
    where = _importable(rhs)
    if where is None:
        return None
    key = (where, type(solver).__name__, adaptive)
    if key in _LOADED:
        return _LOADED[key]
    try:
        src_file = inspect.getsourcefile(rhs.py_func)
        text = _codegen.render_custom(where[0], where[1], type(solver).__name__, adaptive)
        h = hashlib.sha256()
        for part in (inspect.getsource(rhs.py_func), str(os.path.getmtime(src_file)), _codegen.sources_hash(), text):
            h.update(part.encode())
        module = load_generated(f"custom_{where[1]}_{h.hexdigest()[:20]}.py", lambda: text)
        fn = None if module is None else module.loop
    except Exception:  # noqa: BLE001 - any problem: compile in-process instead
        return None
    _LOADED[key] = fn
    return fn
