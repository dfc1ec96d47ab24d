"""The one resource count (mapping.compiler.resources): the compiler's chip file, the area model and the energy
model read the same cells, for every layer kind and with the two-tap coupling rule."""

from __future__ import annotations

import pytest

from mapping.compiler.resources import RESOURCE_KEYS, layer_resources, pass_events


@pytest.mark.parametrize("kind, banks", [("kuramoto", 2), ("kuramoto", 1), ("ssa-pairwise", 1),
                                         ("ssa1d-collective", 1)])
@pytest.mark.parametrize("taps", [1, 2])
def test_static_counts_and_prefill_events_agree(kind, banks, taps):
    h, kh, T = 2, 4, 16
    r = layer_resources(kind, n_heads=h, head_dim=kh, T=T, banks=banks, taps=taps, coupler_bits=6)
    n = pass_events(kind, n_heads=h, head_dim=kh, T=T, banks=banks, taps=taps, prefill=True)
    assert (n["osc"], n["coup"], n["read"], n["gain"]) == (r.oscillators, r.couplers, r.phase_detectors,
                                                           r.dacs_per_pass)
    assert r.readout_channels == 2 * r.phase_detectors  # a quadrature detector: I and Q
    assert r.coupler_bits == 6 * r.couplers and r.couplers % taps == 0
    assert set(r.to_dict()) == set(RESOURCE_KEYS)
    pairs = T * (T - 1) // 2
    expect = {"kuramoto": (banks * h * kh * T, banks * h * kh * pairs),
              "ssa-pairwise": (2 * h * pairs, h * pairs), "ssa1d-collective": (h * T, h * pairs)}[kind]
    assert (r.oscillators, r.couplers // taps) == expect


def test_unknown_layer_kind_is_refused():
    with pytest.raises(ValueError, match="layer kind must be one of"):
        layer_resources("transformer", n_heads=1, head_dim=1, T=2)
    with pytest.raises(ValueError, match="layer kind must be one of"):
        pass_events("transformer", n_heads=1, head_dim=1, T=2, banks=1, taps=1, prefill=True)


@pytest.mark.parametrize("name, mode", [("kuramoto-tiny", None), ("ssa1d-tiny", "pairwise"),
                                        ("ssa1d-tiny", "collective")])
@pytest.mark.parametrize("schedule", ["spatial", "multiplexed"])
def test_compiler_area_and_energy_count_the_same_cells(name, mode, schedule):
    from mapping import ChipConfig, SSAConfig, compile, load_model
    from mapping.compiler.schedule import tile_resources
    from mapping.config import SCHEDULES
    from mapping.energy import ChipEnergySpec, chip_area, layer_events

    model, _ = load_model(name)
    cfg = ChipConfig(array=SCHEDULES[schedule]()) if mode is None else \
        ChipConfig(ssa=SSAConfig(mode=mode), array=SCHEDULES[schedule]())
    chip = compile(model, cfg, checkpoint=name)  # the ring preset: the two-tap rule doubles the couplers
    assert chip.coupling_rule["taps"] == 2
    assert chip_area(chip)["counts"] == chip.resources  # the area counts the silicon the compiler counted
    n = layer_events(ChipEnergySpec.from_chip(chip), "prefill")
    r = chip.layers[0].resources  # a layer's logical cells: what one pass of it runs
    assert (n.osc, n.coup, 2 * n.read) == (r["oscillators"], r["couplers"], r["readout_channels"])
    if schedule == "spatial":  # every layer its own cells
        assert chip.resources == {k: sum(lm.resources[k] for lm in chip.layers) for k in chip.resources}
    else:  # the tiles': one unit each
        lm = chip.layers[0]
        tile = tile_resources(lm.kind, T=lm.max_tokens, taps=2, coupler_bits=cfg.coupling.bits).to_dict()
        assert chip.resources == {k: chip.schedule.tiles * v for k, v in tile.items()}
        assert chip.resources["oscillators"] * chip.schedule.reuse == sum(lm.resources["oscillators"]
                                                                           for lm in chip.layers)
