"""Oscillators sized apart from the logic node (``device_node_nm``): the device, its cells and its cost follow
the sizing, the periphery the logic node; a sizing outside the ring model's range is warned, an impossible one
refused."""

from __future__ import annotations

import pytest

from hw_models.devices import make_device
from hw_models.layout import ring_area_um2
from hw_models.technology import chip_node
from hw_models.validity import DeviceSizingWarning
from mapping import ChipConfig, compile, energy_report
from mapping.config import config_from_dict
from mapping.design import design_spec_from_dict
from mapping.sweep.spec import config_with

from _chips import seeded_kuramoto

MODEL = {"k": 8, "n_heads": 2, "n_layers": 1, "seq_len": 16, "vocab_size": 256}


@pytest.fixture(scope="module")
def chips():
    model = seeded_kuramoto(**MODEL)
    return {name: compile(model, cfg) for name, cfg in {
        "65": ChipConfig(), "28": ChipConfig(node_nm=28), "28/65": ChipConfig(node_nm=28, device_node_nm=65)}.items()}


def test_the_sized_ring_is_the_card_on_a_28nm_die(chips):
    card, shrunk, sized = (chips[k].device for k in ("65", "28", "28/65"))
    assert sized.oscillator.params == card.oscillator.params  # the 65 nm card as it is
    assert sized.f0_hz == card.f0_hz and sized.power_w == card.power_w
    assert sized.diffusion_at(300) == card.diffusion_at(300) and sized.freq_spread_rel == card.freq_spread_rel
    # the ring shrunk with the logic: smaller load C and gate area, so more kT/C noise and Pelgrom spread
    assert shrunk.oscillator.params.c_load_f < card.oscillator.params.c_load_f
    assert shrunk.diffusion_at(300) / shrunk.f0_hz > 4 * card.diffusion_at(300) / card.f0_hz
    assert shrunk.freq_spread_rel > 1.5 * card.freq_spread_rel


@pytest.mark.filterwarnings("ignore::hw_models.technology.TechnologyExtrapolationWarning")  # 0.2 fF/um wires at 28 nm
def test_cells_follow_the_sizing_and_latches_the_logic(chips):
    n28, n65 = chip_node(28), chip_node(65)
    rep = {k: energy_report(c) for k, c in chips.items()}
    cells = {k: r["area"]["cells_um2"] for k, r in rep.items()}
    # ring: 5 inverters, 20 fF caps, 255 trim unit gates and the switch at 65 nm; its 8 trim latches at 28 nm
    by_hand = ring_area_um2(5, 20e-15, 8, node=n65) - 8 * n65.sram_cell_area().value + 8 * n28.sram_cell_area().value
    assert cells["28/65"]["oscillator"] == pytest.approx(by_hand, rel=1e-12)
    assert cells["28"]["oscillator"] < 0.5 * cells["28/65"]["oscillator"] < cells["65"]["oscillator"]
    ring = make_device("ring", "cmos_65nm")
    assert cells["28/65"]["coupler"] == pytest.approx(ring.coupler_area_um2(6, n65, latch_node=n28)[0])
    assert "sizing node 65 nm" in rep["28/65"]["area"]["sources"]["oscillator_um2"]
    # the periphery is at 28 nm either way; the array's device power is the card's
    e = {k: r["breakdown"] for k, r in rep.items()}
    assert e["28/65"]["digital_periphery_j"] == e["28"]["digital_periphery_j"] < e["65"]["digital_periphery_j"]
    assert e["28/65"]["oscillators_j"] == e["65"]["oscillators_j"]
    assert rep["28/65"]["energy_per_token_chip_j"] < rep["65"]["energy_per_token_chip_j"]


@pytest.mark.parametrize(("over", "msg"), [
    ({"node_nm": 28, "device_node_nm": 22}, r"device_node_nm must be in \[node_nm = 28"),
    ({"device_node_nm": -1}, "device_node_nm must be"),
    ({"device_node_nm": 5000}, "device_node_nm must be in"),
])
def test_impossible_sizings_are_refused(over, msg):
    with pytest.raises(ValueError, match=msg):
        ChipConfig(**over)


def test_none_is_the_logic_node_and_the_toml_spelling():
    cfg = config_from_dict({"node_nm": 45, "device_node_nm": "none"})
    assert cfg.device_node_nm is None and cfg.sizing_node_nm == 45
    assert ChipConfig(node_nm=28, device_node_nm=65).sizing_node_nm == 65


def test_a_ring_sized_below_its_card_is_warned():
    model = seeded_kuramoto(**MODEL)
    with pytest.warns(DeviceSizingWarning, match="below its 65 nm model card"):
        compile(model, ChipConfig(node_nm=28, device_node_nm=45))
    assert make_device("ring", "cmos_65nm").sizing_check(90, warn=False) is None


def test_devices_without_a_model_card_refuse_a_sizing():
    with pytest.raises(ValueError, match="device_node_nm = 65.0 .the 'spin-torque' device has no CMOS model card"):
        compile(seeded_kuramoto(**MODEL), ChipConfig(device="spin-torque", node_nm=28, device_node_nm=65))


def test_a_design_study_can_search_the_sizing():
    spec = design_spec_from_dict({
        "name": "t", "checkpoint": "kuramoto-tiny", "trials": 4, "population": 2,
        "tokens": {"windows": 1, "seq_len": 16},
        "space": {"node_nm": {"choice": [65, 28]}, "device_node_nm": {"choice": [65, 90, 130]}}})
    assert spec.distributions()["device_node_nm"].choices == (65, 90, 130)
    cfg = config_with(spec.base, {"node_nm": 28, "device_node_nm": 90})
    assert (cfg.node_nm, cfg.sizing_node_nm) == (28, 90)


def test_a_spin_torque_chip_is_costed_with_its_own_cell():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tiny chip's phase-reduction regime warning
        rep = energy_report(compile(seeded_kuramoto(**MODEL), ChipConfig(device="spin-torque")))
    assert rep["area"]["cells_um2"]["oscillator"] == pytest.approx(0.11 + 20.0)  # pillar + bias at 65 nm
    assert rep["energy_per_token_chip_j"] > 0
