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
    """(path, value) of the first NaN or infinity in a parsed JSON tree, or None."""
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
    layers = []
    for i, x in enumerate(d["layers"]):
        with _named(f"layers[{i}]"):
            layers.append(LayerMap.from_json(x, i))
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


def _first_difference(a, b, where: str = "") -> str | None:
    """Path of the first place where two JSON trees differ (floats to 1e-9 relative), or None."""
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
    ref = json.loads(json.dumps(compile_chip(chip.model, chip.config, checkpoint=chip.model_info.get("checkpoint"))
                                .to_json(), allow_nan=False))
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
