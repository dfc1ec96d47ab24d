"""Checkpoints: safetensors for tensors plus a JSON config; never pickle.

A checkpoint is a folder holding ``config.json`` (format tag, model name and configuration, corpus, training
settings and progress, metrics), ``model.safetensors`` and, for a run that can be resumed,
``optimizer.safetensors`` (the optimizer's tensors; its hyper-parameters live in ``config.json``).

``config.json`` carries ``sha256``: the SHA-256 of the ``model.safetensors`` file's bytes and of the model's name
and configuration (:func:`config_digest`), written by :func:`save_checkpoint` and verified by
:func:`load_checkpoint` before a tensor is read: one flipped byte in the weights, or a configuration edited into
another valid one, is refused (a flipped byte in a bundled checkpoint changed the closed-form BPC, 3.4641 ->
3.4827, silently). A checkpoint written before digests (no ``sha256``) loads as before, unverified.
**Written whole or not at all.** :func:`commit_checkpoint` writes a checkpoint's files into a sibling staging
folder ``FOLDER.tmp`` and swaps it in by two renames (``FOLDER`` -> ``FOLDER.prev``, ``FOLDER.tmp`` -> ``FOLDER``,
then ``FOLDER.prev`` removed); :func:`recover_checkpoint`, run by the writer before it reads or writes, repairs
every state a kill can leave: a staging folder is discarded (it never became the checkpoint), ``FOLDER.prev``
without ``FOLDER`` is renamed back (a kill between the two renames), ``FOLDER.prev`` beside ``FOLDER`` removed.
:func:`resolve_checkpoint` (a reader, which never renames: the writer may be running) reads ``FOLDER.prev``
when ``FOLDER`` is missing. Each file of the set stays in the format below, unchanged.
Bundled checkpoints (``oscsim/checkpoints/<name>/``) are addressed by name: ``kuramoto-tiny``, ``ssa1d-tiny``,
``transformer-tiny``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from importlib import resources
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_bytes
from safetensors.torch import load_file, save

from oscsim._killpoint import kill_point
from oscsim.cli import did_you_mean
from oscsim.nn.registry import build_model, config_from_dict, count_parameters, model_name

__all__ = ["FORMAT", "bundled_checkpoints", "resolve_checkpoint", "save_checkpoint", "load_checkpoint",
           "read_config", "save_optimizer", "load_optimizer", "config_digest", "DIGEST_KEY", "commit_checkpoint", "STAGING", "ASIDE",
           "recover_checkpoint"]

FORMAT = "oscsim-checkpoint/1"
CONFIG_FILE, MODEL_FILE, OPTIM_FILE = "config.json", "model.safetensors", "optimizer.safetensors"
DIGEST_KEY = "sha256"  # {MODEL_FILE: hex digest of its bytes, "config": config_digest(meta)} in config.json
STAGING, ASIDE = ".tmp", ".prev"  # suffixes of the sibling folders of a commit (module notes)
_OWN = {n + t for n in (CONFIG_FILE, MODEL_FILE, OPTIM_FILE) for t in ("", ".tmp")}  # what a checkpoint folder holds


def config_digest(meta: dict) -> str:
    """Hex SHA-256 of a checkpoint's ``model`` and ``config`` (canonical JSON: sorted keys, no spaces): what
    builds the model. Training progress, metrics and notes are not covered (they do not change the weights'
    meaning)."""
    text = json.dumps({"model": meta["model"], "config": meta["config"]}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def bundled_checkpoints() -> list[str]:
    """Names of the checkpoints shipped with the package."""
    root = resources.files("oscsim.checkpoints")
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.joinpath(CONFIG_FILE).is_file())


def resolve_checkpoint(name_or_path: str | os.PathLike) -> Path:
    """The folder of a checkpoint given by bundled name, folder, or a file inside the folder."""
    s = str(name_or_path)
    if s in bundled_checkpoints():
        return Path(str(resources.files("oscsim.checkpoints").joinpath(s)))
    p = Path(s)
    if p.is_file() and p.name in (CONFIG_FILE, MODEL_FILE, OPTIM_FILE):
        p = p.parent
    if not p.exists() and _siblings(p)[1].is_dir():
        p = _siblings(p)[1]  # a writer killed between its two renames: the previous set, whole
    if not p.is_dir():
        raise FileNotFoundError(f"checkpoint {s!r} not found: neither a bundled name ({', '.join(bundled_checkpoints()) or 'none'})"
                                f" nor a checkpoint folder{did_you_mean(s, bundled_checkpoints())}")
    if not (p / CONFIG_FILE).is_file():
        raise FileNotFoundError(f"checkpoint folder {str(p)!r} has no {CONFIG_FILE}")
    if not (p / MODEL_FILE).is_file():
        raise FileNotFoundError(f"checkpoint folder {str(p)!r} has no {MODEL_FILE}")
    return p


def _siblings(folder: Path) -> tuple[Path, Path]:
    """The staging and set-aside folders of a commit into ``folder``."""
    return folder.with_name(folder.name + STAGING), folder.with_name(folder.name + ASIDE)


def recover_checkpoint(folder: str | os.PathLike) -> Path:
    """Repair what a kill during :func:`commit_checkpoint` into ``folder`` left (module notes) and refuse a
    ``folder`` holding anything but a checkpoint's files (a commit replaces the folder whole). Only the folder's
    writer may call it. Returns ``folder``, which then holds the last committed checkpoint or does not exist."""
    folder = Path(os.path.realpath(folder))
    staging, aside = _siblings(folder)
    if staging.is_dir():
        shutil.rmtree(staging)
    if aside.is_dir():
        if folder.exists():
            shutil.rmtree(aside)
        else:
            os.rename(aside, folder)
    if folder.is_dir():
        foreign = sorted(p.name for p in folder.iterdir() if p.name not in _OWN)
        if foreign:
            raise ValueError(f"{str(folder)!r} holds files that are not a checkpoint's ({', '.join(foreign[:3])}); "
                             f"a checkpoint folder is replaced whole at every save: choose a new or empty folder")
    elif folder.exists():
        raise ValueError(f"{str(folder)!r} is a file, not a checkpoint folder")
    return folder


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit_checkpoint(folder: str | os.PathLike, write) -> Path:
    """Write a checkpoint set whole or not at all (module notes): ``write(staging)`` writes the files (e.g.
    :func:`save_optimizer` then :func:`save_checkpoint`) into a fresh staging folder, which then replaces
    ``folder`` by renames; the files are flushed to disk before the swap. Returns ``folder``.

    A kill at any instant leaves ``folder`` (or, between the two renames, ``folder.prev``) holding either the
    previous checkpoint or the new one, whole; :func:`recover_checkpoint` tidies the rest.
    """
    folder = recover_checkpoint(folder)
    staging, aside = _siblings(folder)
    staging.mkdir(parents=True)
    write(staging)
    for p in staging.iterdir():
        _fsync(p)
    _fsync(staging)
    kill_point("checkpoint_staged")
    if folder.exists():
        os.rename(folder, aside)
        kill_point("checkpoint_aside")
    os.rename(staging, folder)
    _fsync(folder.parent)
    kill_point("checkpoint_swapped")
    shutil.rmtree(aside, ignore_errors=True)
    return folder


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _atomic_save(tensors: dict, path: Path, metadata: dict | None = None) -> str:
    """Write the tensors as safetensors through a temporary file; returns the hex SHA-256 of the bytes written."""
    data = save({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, metadata=metadata)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return hashlib.sha256(data).hexdigest()


def save_checkpoint(folder: str | os.PathLike, model: torch.nn.Module, info: dict) -> Path:
    """Write ``model.safetensors`` and ``config.json`` (``info`` plus format, model name and config)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cfg = model.config
    meta = dict(info)
    meta.update(format=FORMAT, model=model_name(cfg), config=cfg.to_dict(), n_parameters=count_parameters(model))
    weights = _atomic_save(model.state_dict(), folder / MODEL_FILE, metadata={"format": FORMAT})
    meta[DIGEST_KEY] = {MODEL_FILE: weights, "config": config_digest(meta)}
    kill_point("checkpoint_weights")
    _atomic_write_text(folder / CONFIG_FILE, json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return folder


def read_config(folder: str | os.PathLike) -> dict:
    """The validated JSON of a checkpoint folder."""
    path = Path(folder) / CONFIG_FILE
    try:
        meta = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"checkpoint config {str(path)!r} is corrupt (not valid JSON: {exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"checkpoint config {str(path)!r} is not an oscsim checkpoint (format "
                         f"{meta.get('format') if isinstance(meta, dict) else None!r}, expected {FORMAT!r})")
    for key in ("model", "config"):
        if key not in meta:
            raise ValueError(f"checkpoint config {str(path)!r} lacks the key {key!r}")
    dig = meta.get(DIGEST_KEY)
    if dig is not None and not (isinstance(dig, dict) and all(isinstance(dig.get(k), str) and len(dig[k]) == 64
                                                               for k in (MODEL_FILE, "config"))):
        raise ValueError(f"checkpoint config {str(path)!r}: {DIGEST_KEY!r} must hold the hex SHA-256 of "
                         f"{MODEL_FILE!r} and of 'config', got {dig!r}")
    return meta


def load_checkpoint(name_or_path: str | os.PathLike, *, device: str | torch.device = "cpu"):
    """Load a checkpoint by bundled name or path.

    Parameters
    ----------
    name_or_path : str or path
        ``"kuramoto-tiny"``, ``"ssa1d-tiny"``, ``"transformer-tiny"`` or a checkpoint folder (or a file in it).
    device : str or torch.device
        Where to put the model.

    Returns
    -------
    model : torch.nn.Module
        In eval mode.
    meta : dict
        The checkpoint's JSON (``model``, ``config``, ``corpus``, ``train``, ``step``, ``metrics``, ...).

    Raises
    ------
    FileNotFoundError
        Unknown name or missing files.
    ValueError
        Corrupt JSON or tensors, weights or a configuration that do not match the SHA-256 recorded in
        ``config.json``, a configuration that does not validate, tensors whose names or shapes do not match the
        configuration, or non-finite weights.
    """
    folder = resolve_checkpoint(name_or_path)
    meta = read_config(folder)
    try:
        if not isinstance(meta["model"], str) or not isinstance(meta["config"], dict):
            raise ValueError(f"'model' must be a name and 'config' an object, got {meta['model']!r} and "
                             f"{type(meta['config']).__name__}")
        cfg = config_from_dict(meta["model"], meta["config"])
        model = build_model(cfg)
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
        raise ValueError(f"checkpoint {str(folder)!r}: invalid model config in {CONFIG_FILE}: {exc}") from None
    dig = meta.get(DIGEST_KEY)
    if dig is not None and config_digest(meta) != dig["config"]:
        raise ValueError(f"checkpoint {str(folder)!r}: the model configuration in {CONFIG_FILE} does not match its "
                         f"recorded SHA-256 (edited after saving); refused")
    try:
        data = (folder / MODEL_FILE).read_bytes()
        if dig is not None and hashlib.sha256(data).hexdigest() != dig[MODEL_FILE]:
            raise ValueError(f"its SHA-256 is not the one recorded in {CONFIG_FILE} (the file was changed or "
                             f"damaged after saving); refused")
        tensors = load_bytes(data)
    except (SafetensorError, OSError, ValueError) as exc:
        raise ValueError(f"checkpoint weights {str(folder / MODEL_FILE)!r} are corrupt: {exc}") from None
    expected = model.state_dict()
    missing, unexpected = sorted(set(expected) - set(tensors)), sorted(set(tensors) - set(expected))
    if missing or unexpected:
        raise ValueError(f"checkpoint {str(folder)!r} does not match its {meta['model']} config: missing tensors "
                         f"{missing[:5]}, unexpected tensors {unexpected[:5]}")
    for k, v in expected.items():
        if tuple(tensors[k].shape) != tuple(v.shape):
            raise ValueError(f"checkpoint {str(folder)!r}: tensor {k!r} has shape {tuple(tensors[k].shape)}, the "
                             f"config needs {tuple(v.shape)}")
        if tensors[k].is_floating_point() and not torch.isfinite(tensors[k]).all():
            raise ValueError(f"checkpoint {str(folder)!r}: tensor {k!r} holds NaN or infinite values")
    model.load_state_dict(tensors)
    return model.to(device).eval(), meta


def save_optimizer(folder: str | os.PathLike, optimizer: torch.optim.Optimizer) -> dict:
    """Write the optimizer's tensors to ``optimizer.safetensors``; returns the JSON-able rest (param groups)."""
    sd = optimizer.state_dict()
    tensors = {}
    for idx, st in sd["state"].items():
        for name, val in st.items():
            t = val if torch.is_tensor(val) else torch.tensor(val)
            tensors[f"state.{idx}.{name}"] = t
    _atomic_save(tensors, Path(folder) / OPTIM_FILE, metadata={"format": FORMAT})
    return {"param_groups": sd["param_groups"]}


def load_optimizer(folder: str | os.PathLike, optimizer: torch.optim.Optimizer, groups: dict) -> None:
    """Restore an optimizer saved by :func:`save_optimizer`."""
    path = Path(folder) / OPTIM_FILE
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ValueError(f"optimizer state {str(path)!r} is corrupt or missing: {exc}") from None
    state: dict = {}
    for key, val in tensors.items():
        _, idx, name = key.split(".", 2)
        state.setdefault(int(idx), {})[name] = val
    try:
        optimizer.load_state_dict({"state": state, "param_groups": groups["param_groups"]})
    except (ValueError, KeyError) as exc:
        raise ValueError(f"optimizer state {str(path)!r} does not match the model: {exc}") from None


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
