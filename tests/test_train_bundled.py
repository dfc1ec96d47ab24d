"""The bundled tiny checkpoints: addressable by name, valid, same token budget, small, and they model text."""

import json
from importlib import resources
from pathlib import Path

import pytest

from oscsim.data import load_shakespeare
from oscsim.nn import count_parameters
from oscsim.train import bundled_checkpoints, evaluate_bpc, load_checkpoint

NAMES = ("kuramoto-tiny", "ssa1d-tiny", "transformer-tiny")


def test_bundled_names():
    assert set(NAMES) <= set(bundled_checkpoints())


def test_bundled_size_and_budget():
    root = Path(str(resources.files("oscsim.checkpoints")))
    total = sum(f.stat().st_size for n in NAMES for f in (root / n).iterdir())
    assert total < 4_000_000
    metas = [json.loads((root / n / "config.json").read_text()) for n in NAMES]
    assert len({m["tokens"] for m in metas}) == 1  # the same token budget
    assert all(m["corpus"] == "shakespeare" and m["step"] == m["train"]["steps"] for m in metas)
    assert all(not (root / n / "optimizer.safetensors").exists() for n in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_bundled_loads_and_models_text(name):
    model, meta = load_checkpoint(name)
    assert count_parameters(model) == meta["n_parameters"]
    assert meta["model"] == name.split("-")[0]
    if meta["model"] == "ssa1d":
        assert model.config.causal and model.config.frequency == "scalar"
    bpc = evaluate_bpc(model, load_shakespeare().valid[:20_000], model.config.seq_len)
    assert bpc < 3.5  # uniform over bytes is 8; the recorded full-split figure is in meta["metrics"]
    assert abs(bpc - meta["metrics"]["val_bpc"]) < 0.5
