"""Generated loop modules in the user cache: written at first use, atomically, checked, and imported from there.

The directory is ``$OSCSIM_KERNEL_CACHE`` (default ``~/.cache/oscsim/kernels``). A module file is named after
the hash of everything it depends on (`_codegen.sources_hash`), so an edited engine or a new Numba version
writes a new file; Numba's ``cache=True`` then keeps the compiled machine code next to it (``__pycache__``),
so a fresh clone compiles each kernel once and later processes load it. This is the scheme of Brian2's
code-generation cache: nothing generated lives in the repository.

Safety:

- a file is written under a unique temporary name and published in one step (`os.link` for a new file,
  so the first of two concurrent writers wins; `os.replace` to repair a damaged one), so a concurrent
  first use by two processes sees either no file or a whole one;
- the first line of every file carries the SHA-256 of the rest; a file that fails this check (truncated,
  edited, corrupted) or fails to import is regenerated once;
- an unwritable cache directory is reported with a warning naming the variable to set, and the caller
  falls back to loops compiled in the process (correct, but compiled again in every process).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import uuid
import warnings
from pathlib import Path

from . import _codegen

__all__ = ["cache_dir", "builtin_kernels", "load_generated", "ENV_VAR"]

ENV_VAR = "OSCSIM_KERNEL_CACHE"
_CHECK = "# oscsim-kernel-sha256: "
_BUILTIN: dict = {}
_WARNED: set = set()


def cache_dir() -> Path:
    """The directory of generated kernels: ``$OSCSIM_KERNEL_CACHE``, default ``~/.cache/oscsim/kernels``."""
    return Path(os.environ.get(ENV_VAR, Path.home() / ".cache" / "oscsim" / "kernels"))


def _with_check(text: str) -> str:
    return f"{_CHECK}{hashlib.sha256(text.encode()).hexdigest()}\n{text}"


def _is_intact(path: Path) -> bool:
    try:
        data = path.read_text()
    except (OSError, UnicodeDecodeError):
        return False
    first, sep, rest = data.partition("\n")
    return bool(sep) and first == f"{_CHECK}{hashlib.sha256(rest.encode()).hexdigest()}"


def _write_atomic(path: Path, content: str, *, overwrite: bool = True) -> None:
    """Write ``content`` under a unique temporary name and move it to ``path`` in one step.

    ``overwrite=False`` (a missing file) publishes with `os.link`, which fails if another process got there
    first: the first writer wins and the file is not replaced under a process that already imported it
    (a new modification time would make Numba's cache index stale and cost one more compilation).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_text(content)
        if overwrite:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # written meanwhile by another process; checked by the caller
        except OSError:  # a file system without hard links
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _import(path: Path):
    name = f"_oscsim_generated_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_generated(file_name: str, render):
    """Import the generated module ``file_name`` from the cache, writing it with ``render()`` when needed.

    Parameters
    ----------
    file_name : str
        Base name of the module file (``*.py``); it must encode every input of ``render``.
    render : callable
        ``render() -> str``, the module's source; called only when the file is missing or damaged.

    Returns
    -------
    module or None
        None when the cache directory cannot be written (a warning says which, once per directory).
    """
    d = cache_dir()
    path = d / file_name
    try:
        d.mkdir(parents=True, exist_ok=True)
        for attempt in (0, 1):
            if not _is_intact(path):
                _write_atomic(path, _with_check(render()), overwrite=path.exists())
                if not _is_intact(path):  # lost a race to a writer of other content: replace it
                    _write_atomic(path, _with_check(render()))
            try:
                return _import(path)
            except Exception:  # noqa: BLE001 - a damaged file that passed the check: rewrite it once
                if attempt == 1:
                    raise
                path.unlink(missing_ok=True)
    except OSError as e:
        if str(d) not in _WARNED:
            _WARNED.add(str(d))
            warnings.warn(
                f"oscsim: cannot write generated kernels to {d} ({e}); set ${ENV_VAR} to a writable "
                "directory. Loops are compiled in this process instead (10-20 s each, not kept).",
                stacklevel=3,
            )
        return None


def builtin_kernels():
    """The module of disk-cached loops for the built-in models (see `_codegen.render`), or None."""
    if "key" not in _BUILTIN:  # hash the sources once per process
        _BUILTIN["key"] = _codegen.sources_hash()
    key = _BUILTIN["key"]
    if key not in _BUILTIN:
        _BUILTIN[key] = load_generated(f"engine_kernels_{key}.py", _codegen.render)
    return _BUILTIN[key]
