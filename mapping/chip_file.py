"""Loading a chip file (:func:`load_chip`): the structural checks of :mod:`mapping.chip`, then a regeneration
check that needs the compiler (kept here so that :mod:`mapping.chip` and :mod:`mapping.compiler` do not import
each other)."""

from __future__ import annotations

import json
from pathlib import Path

from .chip import Chip, _first_difference
from .chip import load_chip as _load_structure
from .compiler import compile as compile_chip

__all__ = ["load_chip"]


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
        Missing file, unknown format version, wrong shapes, NaN, a model that does not match, or a number that
        is not what the file's config and model compile to (each naming the file and the field).
    """
    chip = _load_structure(path, model=model)
    try:
        _check_regenerates(chip, json.loads(Path(path).read_text()))
    except ValueError as exc:
        raise ValueError(f"chip file {path}: {exc}") from None
    return chip


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
