"""Every config field acts or is refused (issue 10 item 3): a field with no effect on the chip it configures is
refused at compile time with the reason, while the defaults and the ideal limit compile for every model."""

import dataclasses

import pytest

from mapping import ChipConfig, compile, load_model
from mapping.config import CouplingConfig, SSAConfig
from mapping.compiler.inert import inert_fields


@pytest.fixture(scope="module")
def kuramoto():
    return load_model("kuramoto-tiny")[0]


@pytest.fixture(scope="module")
def ssa():
    return load_model("ssa1d-tiny")[0]


def _coupling(**kw):
    return ChipConfig(coupling=CouplingConfig(**kw))


@pytest.mark.parametrize("cfg,field", [
    (_coupling(range=2.0), "coupling.range"),
    (_coupling(gain_bits=4), "coupling.gain_bits"),
    (_coupling(gain_range=2.0), "coupling.gain_range"),
    (_coupling(row_scaled=False), "coupling.row_scaled"),
    (ChipConfig(norm_reference="closed-form"), "norm_reference"),
    (ChipConfig(settle_cycles=8.0), "settle_cycles"),
    (ChipConfig(steps_per_cycle=16), "steps_per_cycle"),
    (ChipConfig().with_kappa_tau(0.5), "settle_cycles"),  # --kappa-tau on an SSA chip
])
def test_ssa_chip_refuses_kuramoto_only_fields(ssa, cfg, field):
    with pytest.raises(ValueError, match=rf"no effect on an SSA chip.*{field} = .*\("):
        compile(ssa, cfg)


@pytest.mark.parametrize("ssa_cfg", [SSAConfig(mode="collective"), SSAConfig(settle_cycles=10.0),
                                     SSAConfig(averaging_cycles=100.0), SSAConfig(steps_per_cycle=8)])
def test_kuramoto_chip_refuses_the_ssa_section(kuramoto, ssa_cfg):
    with pytest.raises(ValueError, match=r"no effect on a Kuramoto chip.*ssa\.\w+ = .*no SSA cells"):
        compile(kuramoto, ChipConfig(ssa=ssa_cfg))


def test_kuramoto_norm_reference_acts_only_with_the_norm_bound(kuramoto):
    cfg = ChipConfig(norm_reference="closed-form")
    assert kuramoto.config.bound == "norm"
    chip = compile(kuramoto, cfg)  # acts: one bank instead of two
    assert chip.layers[0].banks == 1 and compile(kuramoto, ChipConfig()).layers[0].banks == 2
    tanh_cfg = dataclasses.replace(kuramoto.config, bound="tanh")
    assert "norm_reference" in inert_fields(cfg, "kuramoto", tanh_cfg)
    assert "norm_reference" not in inert_fields(cfg, "kuramoto", kuramoto.config)


def test_every_refusal_names_all_inert_fields_at_once(ssa):
    cfg = ChipConfig(settle_cycles=8.0, coupling=CouplingConfig(range=2.0, gain_bits=3))
    with pytest.raises(ValueError) as exc:
        compile(ssa, cfg)
    for name in ("settle_cycles", "coupling.range", "coupling.gain_bits"):
        assert name in str(exc.value)


@pytest.mark.parametrize("make", [ChipConfig, lambda: ChipConfig().idealised(),
                                  lambda: ChipConfig(coupling=CouplingConfig(fraction=0.05)).idealised()])
def test_defaults_and_the_ideal_limit_compile_for_both_kinds(kuramoto, ssa, make):
    cfg = make()
    assert inert_fields(cfg, "kuramoto", kuramoto.config) == {}
    assert inert_fields(cfg, "ssa", ssa.config) == {}


def test_fields_that_act_on_ssa_are_accepted(ssa):
    # bits and spread act on SSA couplers; [ssa] settles the cells
    compile(ssa, ChipConfig(coupling=CouplingConfig(bits=4, spread=0.05), ssa=SSAConfig(settle_cycles=20.0)))


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be"):
        inert_fields(ChipConfig(), "transformer")


@pytest.mark.parametrize("mode", ["pairwise", "collective"])
def test_ssa_resources_from_a_hand_count(ssa, mode):
    """Resources of an SSA chip counted by hand: per layer and head, T(T−1)/2 token pairs; a pairwise chip holds
    one two-oscillator Adler cell (one coupler, one quadrature detector with its two readout channels, two
    trims) per pair, a collective chip one oscillator (and detector) per token with a coupler per pair; no
    receive gains either way (ideal device: one tap)."""
    cfg = ChipConfig(device="ideal", coupling=CouplingConfig(bits=5), ssa=SSAConfig(mode=mode))
    chip = compile(ssa, cfg)
    mc = ssa.config
    L, h, T = mc.n_layers, mc.n_heads, mc.seq_len
    pairs = h * T * (T - 1) // 2
    osc = h * T if mode == "collective" else 2 * pairs
    detectors = L * (h * T if mode == "collective" else pairs)
    assert chip.resources == {"oscillators": L * osc, "couplers": L * pairs, "coupler_bits": L * pairs * 5,
                              "phase_detectors": detectors, "readout_channels": 2 * detectors,
                              "gain_dacs": 0, "trim_dacs": L * osc}


def test_top_k_ssa_is_refused_with_the_reason(ssa):
    top = dataclasses.replace(ssa.config, top_k=4)
    model = type(ssa)(top)
    with pytest.raises(ValueError, match=r"top-k selection is not a physical operation\); compile a model with "
                                         r"top_k=None"):
        compile(model, ChipConfig())
