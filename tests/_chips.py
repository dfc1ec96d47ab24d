"""Small seeded models and their compiled chips, shared by the mapping tests; pytest puts this folder on
``sys.path`` (no ``__init__.py``), so the test modules import it by name."""

from __future__ import annotations

import torch


def seeded_kuramoto(**config):
    """A `KuramotoLM` of ``KuramotoConfig(**config)`` initialised from torch seed 0 (the same weights every
    run)."""
    from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM

    torch.manual_seed(0)
    return KuramotoLM(KuramotoConfig(**config))


def saved_chip(model, tmp_path_factory, config=None):
    """(chip, path): ``model`` compiled for ``config`` (default: ``ChipConfig()``) and saved as chip.json in a
    fresh temporary folder."""
    from mapping import ChipConfig, compile

    chip = compile(model, ChipConfig() if config is None else config)
    return chip, chip.save(tmp_path_factory.mktemp("chip") / "chip.json")
