"""A run's inputs checked from their files alone, before anything heavy loads (issue 23 item 4).

``oscsim simulate --tokens 1000000000`` used to compile the chip and then run for tens of minutes; a sweep with
a misspelt checkpoint or a window longer than the model's failed every point at run time. The checks here read
only JSON (a checkpoint's ``config.json``, a chip file, the bundled corpus's index), so they answer in a fraction
of a second, before torch, the model or the chip is loaded:

- :func:`model_config` — the model configuration of a checkpoint (bundled name or folder) or of a chip JSON; a
  TOML given in its place is refused with a hint to pass it as ``--config``, a name that is neither a bundled
  checkpoint nor a folder with the bundled names listed;
- :func:`split_bytes` — the bytes of a split of the bundled Shakespeare corpus, from its index;
- :func:`token_windows` — how many windows of ``seq_len`` a token count scores, refusing more than the split
  holds (naming the maximum) and fewer than one window, and saying when a count is not a whole number of
  windows.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

__all__ = ["model_config", "chip_checkpoints", "split_bytes", "max_windows", "token_windows"]

_CHECKPOINT_CONFIG = "config.json"  # oscsim.train.checkpoint.CONFIG_FILE (tests/test_mapping_preflight.py checks)
_CHIP_MODELS = ("kuramoto", "ssa", "ssa1d")  # the model names (oscsim.nn.registry.model_name) a chip compiles


def _package_dir(package: str) -> Path:
    """The folder of an ``oscsim`` subpackage without importing it (its parent ``oscsim`` is light)."""
    spec = importlib.util.find_spec(package)
    return Path(next(iter(spec.submodule_search_locations)))


def _bundled() -> dict:
    root = _package_dir("oscsim.checkpoints")
    return {p.name: p for p in sorted(root.iterdir()) if (p / _CHECKPOINT_CONFIG).is_file()}


def chip_checkpoints() -> list[str]:
    """Names of the bundled checkpoints a chip can run (Kuramoto and SSA models; not the transformer)."""
    return [name for name, p in _bundled().items()
            if json.loads((p / _CHECKPOINT_CONFIG).read_text()).get("model") in _CHIP_MODELS]


def model_config(source: str) -> dict:
    """The model configuration (``seq_len``, ...) of a checkpoint or a chip file, read from its JSON.

    Parameters
    ----------
    source : str
        Bundled checkpoint name, checkpoint folder, or a compiled chip JSON.

    Raises
    ------
    FileNotFoundError
        No such chip file, checkpoint name or folder (the bundled names are listed).
    ValueError
        A TOML (a chip configuration, which goes to ``--config``) or another file that is neither; a file whose
        JSON names no model configuration.
    """
    src = str(source)
    p = Path(src)
    if p.suffix.lower() == ".toml":
        raise ValueError(f"CKPT {src!r} is a TOML file, i.e. a chip configuration: pass it as --config {src} "
                         f"(CKPT is a checkpoint name or folder, or a compiled chip JSON)")
    bundled = _bundled()
    if src in bundled:
        path = bundled[src] / _CHECKPOINT_CONFIG
    elif p.suffix.lower() == ".json" and p.name != _CHECKPOINT_CONFIG and not p.is_dir():
        if not p.is_file():
            raise FileNotFoundError(f"CKPT: chip file {src!r} not found")
        path = p
    elif p.is_dir() or p.name == _CHECKPOINT_CONFIG:
        path = p / _CHECKPOINT_CONFIG if p.is_dir() else p
        if not path.is_file():
            raise FileNotFoundError(f"checkpoint folder {str(path.parent)!r} has no {_CHECKPOINT_CONFIG}")
    elif p.is_file():
        raise ValueError(f"CKPT {src!r} is neither a checkpoint folder nor a chip JSON")
    else:
        from oscsim.cli import did_you_mean

        raise FileNotFoundError(f"checkpoint {src!r} not found: neither a bundled name ({', '.join(bundled)}) nor a "
                                f"checkpoint folder{did_you_mean(src, bundled)}")
    try:
        d = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{str(path)!r} is not valid JSON: {exc}") from None
    cfg = d.get("config") if path.name == _CHECKPOINT_CONFIG else (d.get("model") or {}).get("config")
    if not isinstance(cfg, dict) or "seq_len" not in cfg:
        raise ValueError(f"{str(path)!r} names no model configuration with a seq_len")
    if path.name == _CHECKPOINT_CONFIG and d.get("model") not in _CHIP_MODELS:
        raise ValueError(f"checkpoint {src!r} is a {d.get('model')} model: chips run Kuramoto attention or SSA "
                         f"({', '.join(_CHIP_MODELS)} checkpoints, e.g. 'kuramoto-tiny', 'ssa1d-tiny'); a transformer "
                         f"has no oscillator layer")
    return cfg


def split_bytes(split: str = "valid") -> int:
    """Bytes of a split (``"train"``, ``"valid"``, ``"test"``) of the bundled Shakespeare corpus, from its index
    (the same count as ``len(oscsim.data.load_shakespeare().split(split))``, without reading the text)."""
    if split not in ("train", "valid", "test"):
        raise ValueError(f"split must be one of 'train', 'valid', 'test', got {split!r}")
    index = json.loads((_package_dir("oscsim.data") / "shakespeare.json").read_text())
    return sum(w["stop"] - w["start"] for w in index["works"] if w["split"] == split)


def max_windows(seq_len: int, split: str = "valid") -> int:
    """Non-overlapping windows of ``seq_len`` tokens (plus one target byte) the split holds, as
    :func:`oscsim.data.eval_windows` cuts them."""
    return max(0, (split_bytes(split) - 1) // int(seq_len))


def token_windows(n_tokens: int, seq_len: int, split: str = "valid", *, option: str = "--tokens",
                  note=None) -> int:
    """The whole windows of ``seq_len`` that ``n_tokens`` validation tokens score.

    Parameters
    ----------
    n_tokens : int
        Tokens asked for.
    seq_len : int
        Tokens per window (the model's).
    split : str
        Split of the bundled corpus.
    option : str
        Name of the option in messages.
    note : file, optional
        Where to say that ``n_tokens`` is not a whole number of windows and what is scored (None: say nothing).

    Returns
    -------
    int
        Windows, in [1, :func:`max_windows`].

    Raises
    ------
    ValueError
        Fewer tokens than one window, or more than the split holds (the maximum is named).
    """
    T = int(seq_len)
    if n_tokens < T:
        raise ValueError(f"{option} must be >= {T} (one window of the model's seq_len), got {n_tokens}")
    cap = max_windows(T, split)
    if n_tokens > cap * T:
        raise ValueError(f"{option} {n_tokens} is more than the {split} split holds: at most {cap * T} tokens "
                         f"({cap} windows of {T})")
    w = n_tokens // T
    if n_tokens % T and note is not None:
        print(f"note: {option} {n_tokens} is not a whole number of windows of {T}: scoring {w * T} tokens "
              f"({_windows(w)} of {T})", file=note)
    return w


def _windows(n: int) -> str:
    return f"{n} window" if n == 1 else f"{n} windows"

