"""A device is one module and its registration: a toy oscillator (tests/toy_device.py) compiled, run and costed
end to end, every device figure of the chip asked of the device object (mapping never asks a device's kind)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import toy_device
from mapping import ChipConfig, compile, energy_report, load_chip, run

from _chips import seeded_kuramoto

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def toy_chip():
    model = seeded_kuramoto(k=8, n_heads=2, n_layers=1, seq_len=12, vocab_size=256)
    return compile(model, ChipConfig(device=toy_device.NAME))


def test_a_registered_toy_device_compiles_runs_and_is_costed(toy_chip, tmp_path):
    chip = toy_chip
    p = toy_device.ToyParams()
    assert chip.device.f0_hz == p.f0_hz and chip.device.power_w == p.power_w
    # its coupling function reached the chip's phase network, second harmonic and all
    np.testing.assert_allclose(chip.harmonics, [[1.0, 0.0], [p.second_harmonic, 0.0]])
    tokens = torch.randint(0, 256, (3, 12), generator=torch.Generator().manual_seed(0))
    out = run(chip, tokens, seed=0, batch_size=3, closed_form=False)
    assert out.logits.shape == (3, 12, 256) and torch.isfinite(out.logits).all()
    one = run(chip, tokens, seed=0, batch_size=1, closed_form=False).logits
    assert torch.equal(one, out.logits)  # one seed, one answer, whatever the batch
    rep = energy_report(chip)
    assert rep["area"]["cells_um2"]["oscillator"] == p.cell_um2  # the device's own cell, not a ring's
    assert rep["area"]["sources"]["oscillator_um2"].startswith("toy cell")
    srcs = json.dumps(rep)
    assert "toy coupler (a field of the params)" in srcs
    assert rep["energy_per_token_chip_j"] > 0
    # the chip file carries the device, and loads back through the oscillator registry
    again = load_chip(chip.save(tmp_path / "toy.json"), model=chip.model)
    assert type(again.device.oscillator) is toy_device.ToyOscillator
    assert again.device.oscillator.params == p


def test_fields_that_do_not_act_on_the_toy_are_asked_of_it():
    with pytest.raises(ValueError, match="'toy-phase' device has no cited temperature coefficient"):
        compile(seeded_kuramoto(k=8, n_heads=2, n_layers=1, seq_len=12, vocab_size=256),
                ChipConfig(device=toy_device.NAME, calibration_temperature_k=310.0))


def test_unknown_devices_are_refused_with_the_registered_ones():
    with pytest.raises(ValueError, match=r"device must be one of ideal, ring-macromodel, ring-circuit, spin-torque"):
        ChipConfig(device="toy-missing")


def test_mapping_never_asks_a_device_kind():
    """No ``is_ring``/``is_stno`` and no oscillator-kind or device-name comparison anywhere in mapping/ outside
    the backends' registrations (the name comparisons are checked by tests/test_architecture_rooms.py)."""
    out = subprocess.run(["grep", "-rnE", r"is_ring|is_stno|\.kind ?(==|!=|in) ?\(?['\"](ring|stno|ideal)",
                          "mapping/"], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout == "", out.stdout
    assert re.search("is_ring", "x.is_ring")  # the pattern does match what it looks for
