"""Reading a chip file: validate the JSON, re-attach the model, and check that the file regenerates.

A chip file is a compiled artifact, so loading it compiles its model with its config and compares
(`_check_regenerates`): this module therefore sits above both `chip` (the data structure) and `compiler`,
and neither of those imports the other.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .chip import CHIP_LAYER_KINDS, FORMAT, KINDS, Chip, LayerMap, _named
from .compiler.build import chip_score_array
from .compiler.build import compile as compile_chip
from .compiler.coupling_rule import coupling_rule
from .compiler.device import chip_device_from_dict
from .compiler.schedule import build_schedule
from .config import config_from_dict
from .model_io import attach_model

__all__ = ["load_chip", "chip_from_json"]


def load_chip(path: str | Path, model=None) -> Chip:
    """Load and validate a chip JSON file.

    Parameters
    ----------
    path : path
    model : torch.nn.Module, optional
        The model whose static weights the chip uses; if None the checkpoint named in the file is loaded.
        Its fingerprint must match the file's.

    Raises
    ------
    FileNotFoundError, ValueError
        Missing file, unknown format version, wrong shapes, NaN, or a model that does not match.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"chip file {path} is a directory, not a chip JSON")
    if not path.is_file():
        raise FileNotFoundError(f"chip file {path} does not exist")
    try:
        d = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"chip file {path} is not valid JSON: {exc}") from None
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"chip file {path} is not a JSON text: {type(exc).__name__}") from None
    bad = _non_finite(d)
    if bad is not None:
        raise ValueError(f"chip file {path}: field {bad[0]} holds the non-finite number {bad[1]}")
    try:
        return chip_from_json(d, model=model)
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"chip file {path}: {exc}") from None


def _non_finite(tree, where=""):
    """(path, value) of the first NaN or infinity in a parsed JSON tree, or None.

    A list of numbers (a chip file's per-oscillator arrays) is checked as an array: a 1M model's file holds a
    million of them, which a walk of the elements took 1 s over."""
    if isinstance(tree, list):
        arr = _numbers(tree)
        if arr is not None:
            ok = np.isfinite(arr)
            if ok.all():
                return None
            idx = np.unravel_index(int(np.argmin(ok.reshape(-1))), ok.shape)
            return ((where + "".join(f"[{i}]" for i in idx)).lstrip("."), float(arr[idx]))
    if isinstance(tree, float) and not math.isfinite(tree):
        return (where.lstrip(".") or "(top level)", tree)
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else ()
    for k, v in items:
        r = _non_finite(v, f"{where}[{k}]" if isinstance(tree, list) else f"{where}.{k}")
        if r:
            return r
    return None


def chip_from_json(d: dict, model=None) -> Chip:
    """Validate and build a :class:`Chip` from its JSON dict (see :func:`load_chip`)."""
    if not isinstance(d, dict):
        raise ValueError("the chip JSON must be an object")
    fmt = d.get("format")
    if fmt != FORMAT:
        raise ValueError(f"unknown chip format {fmt!r}; this version of oscsim reads {FORMAT!r}")
    need = {"format", "kind", "config", "device", "model", "timebase", "static_digital", "resources", "layers",
            "coupling_rule", "schedule"}
    missing, unknown = sorted(need - set(d)), sorted(set(d) - need)
    if missing or unknown:
        raise ValueError(f"missing keys {missing}, unknown keys {unknown}")
    if d["kind"] not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {d['kind']!r}")
    with _named("config"):
        config = config_from_dict(d["config"])
    with _named("device"):
        device = chip_device_from_dict(d["device"])
    if device.name != config.device:
        raise ValueError(f"device.level {device.name!r} differs from config.device {config.device!r}")
    if not isinstance(d["layers"], list) or not d["layers"]:
        raise ValueError("layers must be a non-empty list")
    layers, digests = [], {}
    for i, x in enumerate(d["layers"]):
        with _named(f"layers[{i}]"):
            layers.append(LayerMap.from_json(x, i, digests))
    for i, lm in enumerate(layers):
        if lm.index != i:
            raise ValueError(f"layers[{i}].index is {lm.index}, expected {i}")
        if lm.kind not in CHIP_LAYER_KINDS[d["kind"]]:
            raise ValueError(f"layers[{i}].kind {lm.kind!r} does not fit a {d['kind']!r} chip")
    info = d["model"]
    if not isinstance(info, dict) or not {"name", "checkpoint", "config", "fingerprint"} <= set(info):
        raise ValueError("model must hold name, checkpoint, config and fingerprint")
    if not (isinstance(info["name"], str) and isinstance(info["fingerprint"], str) and isinstance(info["config"], dict)
            and (info["checkpoint"] is None or isinstance(info["checkpoint"], str))):
        raise ValueError("model.name and model.fingerprint must be strings, model.config an object and "
                         "model.checkpoint a string or null")
    for k in ("kappa_tau", "f0_hz", "kappa_rad_per_cycle", "settle_cycles", "sigma_rad_per_sqrt_cycle"):
        v = d["timebase"].get(k) if isinstance(d["timebase"], dict) else None
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"timebase.{k} must be a finite number, got {v!r}")
    rule = d["coupling_rule"]
    with _named("coupling_rule.harmonics"):
        h = np.asarray(rule.get("harmonics") if isinstance(rule, dict) else None, dtype=float)
    if h.ndim != 2 or h.shape[1] != 2 or not np.all(np.isfinite(h)) or h[0, 0] != 1.0:
        raise ValueError("coupling_rule.harmonics must be an (M, 2) finite array with a_1 = 1")
    expect = np.asarray(coupling_rule(config, device, d["kind"])["harmonics"], dtype=float)
    if h.shape != expect.shape or not np.allclose(h, expect, rtol=1e-6, atol=1e-9):
        raise ValueError("coupling_rule.harmonics differ from those the chip's device and config give "
                         "(edited file, or a different device model version)")
    schedule = build_schedule(config.array, layers[0].kind, len(layers), layers[0].oscillator_shape)
    chip = Chip(kind=d["kind"], config=config, device=device, model_info=info, timebase=d["timebase"],
                layers=layers, static_digital=d["static_digital"], resources=d["resources"], coupling_rule=rule,
                schedule=schedule)
    chip.score_array = chip_score_array(config, chip.kind, layers)  # the score stage's units (None: digital)
    if not isinstance(d["static_digital"], list) or not all(
            isinstance(s, dict) and set(s) == {"name", "shape"} for s in d["static_digital"]):
        raise ValueError("static_digital must be a list of {name, shape} objects")
    for i, sd in enumerate(d["static_digital"]):
        if not isinstance(sd["name"], str):
            raise ValueError(f"static_digital[{i}].name must be a string, got {sd['name']!r}")
        shp = sd["shape"]
        if not isinstance(shp, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                                for n in shp):
            raise ValueError(f"static_digital[{i}].shape must be a list of non-negative integers, got {shp!r}")
    if not isinstance(d["resources"], dict):
        raise ValueError("resources must be an object")
    with _named("model"):
        attach_model(chip, model)
    _check_regenerates(chip, d)
    return chip


def _numbers(x) -> np.ndarray | None:
    """A (nested, rectangular, non-empty) list of numbers as a float64 array, else None (text, None, bools
    alone, ragged, ints beyond int64). A bool among numbers is 0 or 1, as ``==`` compares it below."""
    if not x or not isinstance(x[0], (list, int, float)):
        return None
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError, OverflowError):  # ragged, or numbers NumPy cannot hold
        return None
    if arr.dtype.kind not in "if" or arr.size == 0:
        return None
    return arr.astype(np.float64, copy=False)


def _first_difference(a, b, where: str = "") -> str | None:
    """Path of the first place where two JSON trees differ (floats to 1e-9 relative), or None.

    Lists of numbers (a chip file's per-oscillator arrays: a million entries in a 1M model's) are compared as
    arrays, with the same test as :func:`math.isclose` below; the first differing entry in row-major order is
    the one a walk would find first."""
    if isinstance(a, list) and isinstance(b, list):
        xa, xb = _numbers(a), _numbers(b)
        if xa is not None and xb is not None and xa.shape == xb.shape:
            with np.errstate(invalid="ignore", over="ignore"):
                same = (xa == xb) | (np.abs(xa - xb) <= np.maximum(1e-9 * np.maximum(np.abs(xa), np.abs(xb)),
                                                                    1e-300))
            if same.all():
                return None
            idx = np.unravel_index(int(np.argmin(same.reshape(-1))), same.shape)
            return (where + "".join(f"[{i}]" for i in idx)).lstrip(".")
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return f"{where}.{k}".lstrip(".")
            r = _first_difference(a[k], b[k], f"{where}.{k}")
            if r:
                return r
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return where.lstrip(".") or "(top level)"
        for i, (x, y) in enumerate(zip(a, b)):
            r = _first_difference(x, y, f"{where}[{i}]")
            if r:
                return r
        return None
    if isinstance(a, bool) or isinstance(b, bool) or not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        return None if a == b else (where.lstrip(".") or "(top level)")
    # relative only: device numbers are as small as 1e-15 (farads), so an absolute tolerance would hide edits
    return None if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-300) else (where.lstrip(".") or "(top level)")


def _check_regenerates(chip: "Chip", d: dict) -> None:
    """A chip file is a compiled artifact: compiling its model with its config must give the same file. An edit
    (a device number, a timebase entry, a resource count, a trim code) is refused naming the field, so that the
    numbers a run prints always come from the models that produced them."""
    again = compile_chip(chip.model, chip.config, checkpoint=chip.model_info.get("checkpoint"))
    for la, lm in zip(again.layers, chip.layers):
        # the digest is a function of the coupler key, and the loader checked the file's against that key's draw:
        # equal keys give it without drawing and hashing again (the keys themselves are compared below)
        if la.coupler_sha256 is None and la.coupler_key() == lm.coupler_key():
            la.coupler_sha256 = lm.coupler_sha256
    ref = json.loads(json.dumps(again.to_json(), allow_nan=False))
    where = _first_difference(d, ref)
    if where is not None:
        def get(tree):
            for part in where.replace("]", "").replace("[", ".").split("."):
                if isinstance(tree, list) and part.isdigit() and int(part) < len(tree):
                    tree = tree[int(part)]
                elif isinstance(tree, dict) and part in tree:
                    tree = tree[part]
                else:
                    return "(absent)"
            return tree

        got, want = repr(get(d))[:60], repr(get(ref))[:60]
        raise ValueError(f"field {where} = {got} is not what the chip's config and model compile to ({want}); "
                         f"the file was edited or written by another version: change the config and recompile")
