"""Technology nodes (hw_models.technology): the Stillmaker-Baas fits against their table, the area table's own
consistency, interpolation and extrapolation warnings, Pelgrom, SRAM, leakage, and the ring ported by the
self-similar rule (its f0, power and phase diffusion follow the stated exponents exactly)."""

import math
import warnings

import pytest

from hw_models.technology import (HOROWITZ_REFERENCE, SUPPORTED_NODES_NM, Figure, TechnologyExtrapolationWarning,
                                  TechnologyNode, figures_checked, figures_to_check)

# Stillmaker & Baas 2017, the per-node fits (delay cubic, energy and power quadratic in VDD), as transcribed in
# github.com/wromaszkan/nodeScale (UCLA NanoCAD): the paper's coefficient tables. Copied here independently of the
# data file so that a slip in either shows. (Not compared with the printed paper: listed to check.)
SB17_TABLE = {  # key: (d3, d2, d1, d0), (e2, e1, e0), (p2, p1, p0), nominal VDD [V] (PTM)
    "65": ((-53.3, 230.4, -333.9, 178.6), (3.755, -4.398, 1.975), (12890, -10510, 4362), 1.1),
    "HP45": ((-501.6, 1567, -1619, 566.1), (1.018, -0.3107, 0.1539), (5462, -1760, 522.4), 1.0),
    "LP45": ((-285.7, 1239, -1795, 898.8), (1.103, -0.362, 0.2767), (6297, -3009, 1124), 1.1),
    "HP32": ((-1047, 2982, -2797, 873.5), (0.8367, -0.4341, 0.1701), (4001, -1733, 533.6), 0.9),
    "HP20": ((0, 34.63, -66.37, 41.15), (0.373, -0.1582, 0.04104), (2922, -1286, 299.9), 0.9),
    "HP16": ((0, 24.8, -47.52, 28.87), (0.2958, -0.1241, 0.03024), (2133, -882.6, 197.7), 0.85),
    "LP16": ((-114.6, 366.7, -397.4, 153.6), (0.2139, -0.1187, 0.05639), (1609, -715.5, 205.7), 0.85),
    "HP7": ((-28.58, 76.6, -70.26, 24.69), (0.1776, -0.09097, 0.02447), (1179, -515.7, 123.4), 0.7),
    "LP7": ((-61.79, 196.1, -210.3, 79.55), (0.09365, -0.03409, 0.02043), (815.2, -307.3, 87.54), 0.7),
}
# The area table t[dst][src] = area at src / area at dst (nodeScale's areaDict layout), a few entries of it.
SB17_AREA = {("45", "65"): 1.5, ("65", "45"): 0.66, ("45", "7"): 0.059, ("7", "65"): 25, ("16", "7"): 0.31}


def _node(key: str, vdd=None) -> TechnologyNode:
    flavor = "LP" if key.startswith("LP") else "HP"
    return TechnologyNode(node_nm=float(key.lstrip("HLP")), flavor=flavor, vdd_v=vdd)


def _poly(c, v):
    return sum(ci * v ** (len(c) - 1 - i) for i, ci in enumerate(c))


@pytest.mark.parametrize("key", list(SB17_TABLE))
def test_fits_reproduce_the_table(key):
    d, e, p, v0 = SB17_TABLE[key]
    assert _node(key).nominal_vdd.value == v0
    for v in (0.8 * v0, v0, 1.1 * v0):
        n = _node(key, v)
        assert n.tabulated
        assert n.delay().value == pytest.approx(_poly(d, v), rel=1e-12)
        assert n.energy().value == pytest.approx(_poly(e, v), rel=1e-12)
        assert n.power().value == pytest.approx(_poly(p, v), rel=1e-12)


def test_fit_values_at_nominal_supply():
    # hand-evaluated from the table above (the numbers a reader of the paper can recompute)
    assert _node("65").delay().value == pytest.approx(19.152, abs=1e-3)
    assert _node("HP45").energy().value == pytest.approx(0.8612, abs=1e-4)
    assert _node("HP7").energy().value == pytest.approx(0.047815, abs=1e-6)
    assert _node("HP7").delay().value == pytest.approx(3.2386, abs=1e-3)


@pytest.mark.parametrize(("dst", "src"), list(SB17_AREA))
def test_area_table_entries(dst, src):
    a, b = TechnologyNode(node_nm=float(src)), TechnologyNode(node_nm=float(dst))
    # t[dst][src] = area at src / area at dst: an area of 1 at src is 1 / t at dst
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TechnologyExtrapolationWarning)
        assert b.scale_area(1.0, a) == pytest.approx(1 / SB17_AREA[(dst, src)], rel=1e-12)


def test_area_table_is_self_consistent():
    """Reciprocity and transitivity of the transcribed table within its 2-significant-digit rounding: a typo in one
    entry breaks both."""
    import json
    from importlib import resources

    t = json.loads(resources.files("hw_models").joinpath("data/technology.json").read_text())
    area = t["stillmaker_baas_2017"]["area"]
    nodes = t["stillmaker_baas_2017"]["area_nodes"]
    for a in nodes:
        for b in nodes:
            assert area[a][b] * area[b][a] == pytest.approx(1.0, rel=0.09), (a, b)
            for c in nodes:
                assert area[a][b] * area[b][c] == pytest.approx(area[a][c], rel=0.13), (a, b, c)
    # smaller nodes are smaller
    for a, b in zip(nodes, nodes[1:]):
        assert area["45"][b] < area["45"][a]


def test_third_party_normalisation_65_to_45nm():
    """A public release normalises 65 -> 45 nm with 0.52 (energy) and 0.66 (area) from the same paper (65 nm at its
    nominal 1.1 V, 45 nm HP at 1.0 V): the fits reproduce both within the table's rounding."""
    n65, n45 = TechnologyNode(node_nm=65), TechnologyNode(node_nm=45, flavor="HP")
    assert n45.scale_energy(1.0, n65) == pytest.approx(0.52, rel=0.03)
    assert n45.scale_area(1.0, n65) == pytest.approx(0.66, rel=0.02)  # 1 / 1.5: the table's two-digit rounding


@pytest.mark.parametrize("flavor", ["LP", "HP"])
def test_energy_falls_with_the_node_and_7nm_beats_65nm(flavor):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TechnologyExtrapolationWarning)
        e = [TechnologyNode(node_nm=n, flavor=flavor).energy().value for n in SUPPORTED_NODES_NM]
        sram = [TechnologyNode(node_nm=n, flavor=flavor).sram_j_per_bit(32768).value for n in SUPPORTED_NODES_NM]
    assert all(b < a for a, b in zip(e, e[1:])), e
    assert all(b < a for a, b in zip(sram, sram[1:])), sram
    n65 = TechnologyNode(node_nm=65, vdd_v=1.2, flavor=flavor)
    assert TechnologyNode(node_nm=7, flavor=flavor).scale_energy(1.0, n65) < 0.05


@pytest.mark.parametrize("node", [28, 22])
def test_untabulated_nodes_interpolate_between_32_and_20(node):
    n = TechnologyNode(node_nm=node, flavor="HP", vdd_v=0.9)
    lo, hi = TechnologyNode(node_nm=20, flavor="HP", vdd_v=0.9), TechnologyNode(node_nm=32, flavor="HP", vdd_v=0.9)
    assert not n.tabulated and "interpolated" in n.energy().source
    w = math.log(node / 32) / math.log(20 / 32)
    expect = math.exp((1 - w) * math.log(hi.energy().value) + w * math.log(lo.energy().value))
    assert n.energy().value == pytest.approx(expect, rel=1e-12)
    assert lo.energy().value < n.energy().value < hi.energy().value


def test_extrapolation_warns_and_nonsense_is_refused():
    with pytest.warns(TechnologyExtrapolationWarning, match="outside the 7-180 nm|outside the table"):
        TechnologyNode(node_nm=5)
    with pytest.warns(TechnologyExtrapolationWarning, match="outside the assumed window"):
        TechnologyNode(node_nm=65, vdd_v=0.5)
    with pytest.warns(TechnologyExtrapolationWarning, match="HoMH01"):
        TechnologyNode(node_nm=7).wire_capacitance()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert TechnologyNode(node_nm=45).wire_capacitance().value == pytest.approx(0.2e-15 / 1e-6)
        TechnologyNode(node_nm=65, vdd_v=1.2)  # the ring chips' supply is inside the window
    for kw, msg in (({"node_nm": -1}, "node_nm must be"), ({"node_nm": 45, "flavor": "GP"}, "flavor must be one of HP, LP"),
                    ({"node_nm": 45, "vdd_v": 9.0}, "vdd_v must be"), ({"node_nm": "45"}, "node_nm must be")):
        with pytest.raises(ValueError, match=msg):
            TechnologyNode(**kw)


def test_pelgrom_sigma_follows_inverse_root_area():
    n = TechnologyNode(node_nm=28)
    a = n.a_vt().value
    assert n.sigma_vt(1e-6, 1e-6) == pytest.approx(a / 1e-6)  # A_VT [V m] over a 1 um^2 gate
    assert n.sigma_vt(4e-6, 1e-6) == pytest.approx(a / 1e-6 / 2)
    assert TechnologyNode(node_nm=65).a_vt().value == pytest.approx(3.9e-9)  # the ring card's figure at 65 nm
    assert TechnologyNode(node_nm=7).a_vt().value == pytest.approx(3.9e-9 * 1.0 / 2.5)  # the trend's ratio
    with pytest.raises(ValueError, match="w_m must be finite"):
        n.sigma_vt(0.0, 1e-6)


def test_sram_anchor_and_size_dependence():
    h = HOROWITZ_REFERENCE
    assert h.sram_j_per_bit(8192).value == pytest.approx(10e-12 / 64, rel=1e-12)
    assert h.sram_j_per_bit(1024 * 1024).value == pytest.approx(100e-12 / 64, rel=1e-12)
    assert h.sram_j_per_bit(1.0).value == h.sram_j_per_bit(8192).value  # clamped below 8 kB
    n = TechnologyNode(node_nm=16)
    assert n.sram_j_per_bit(8192).value < n.sram_j_per_bit(65536).value < n.sram_j_per_bit(1 << 20).value
    assert TechnologyNode(node_nm=7).sram_cell_area().value == pytest.approx(0.027)


def test_leakage_scales_with_the_off_current_and_the_flavour():
    hp, lp = TechnologyNode(node_nm=45, flavor="HP", vdd_v=1.0), TechnologyNode(node_nm=45, flavor="LP", vdd_v=1.0)
    # CACTI 7's 45 nm tables at 300 K: ITRS HP 280 nA/um, LSTP 10.1 pA/um
    assert hp.leakage_density().value / lp.leakage_density().value == pytest.approx(2.8e-7 / 1.01e-11)
    assert hp.leakage_density().unit == "W/mm^2" and "assumed" in hp.leakage_density().source
    # 0.5 * 280 nA/um * 1 V * 3.33e6 /mm^2 * 4 * 45 nm
    assert hp.leakage_density().value == pytest.approx(0.5 * 2.8e-7 / 1e-6 * 1.0 * 3.33e6 * 4 * 45e-9)


@pytest.mark.parametrize("node", [65, 90, 130])
def test_flavours_are_one_fit_at_and_above_65nm(node):
    """[SB17] has one bulk model per node from 65 nm up: HP and LP are the same node there, figure for figure."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TechnologyExtrapolationWarning)
        hp, lp = TechnologyNode(node_nm=node, flavor="HP"), TechnologyNode(node_nm=node, flavor="LP")
        assert hp.device_flavor == lp.device_flavor == "LP"
        assert hp.figures() == lp.figures()
    assert TechnologyNode(node_nm=45, flavor="HP").device_flavor == "HP"


def test_adc_fom_anchor_and_rule():
    assert TechnologyNode(node_nm=65).adc_fom().value == pytest.approx(5e-15)
    f7 = TechnologyNode(node_nm=7).adc_fom().value
    assert 2.5e-15 < f7 < 5e-15  # only the logic half scales


def test_every_figure_has_unit_and_source():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TechnologyExtrapolationWarning)
        figs = TechnologyNode(node_nm=22).figures()
    for name, f in figs.items():
        assert isinstance(f, Figure) and f.unit and f.source and math.isfinite(f.value) and f.value > 0, name
    todo = figures_to_check()
    for table, entries in todo.items():  # every figure left unchecked says which and why
        for e in entries:
            assert set(e) == {"figure", "reason"} and len(e["reason"]) > 40, (table, e)
    done = figures_checked()
    assert "corrigendum" in done["stillmaker_baas_2017"][0]["against"]
    assert all(set(e) == {"figure", "against"} for v in done.values() for e in v)


def test_corrigendum_rows_are_the_transcribed_fits():
    """The Stillmaker-Baas corrigendum prints Table 5's HP 32 nm and 65 nm energy rows and their values at 0.9 V
    and 1.3 V (0.4571 and 2.604): the data file's fits give the same."""
    assert TechnologyNode(node_nm=32, flavor="HP", vdd_v=0.9).energy().value == pytest.approx(0.4571, abs=1e-4)
    assert TechnologyNode(node_nm=65, vdd_v=1.3).energy().value == pytest.approx(2.604, abs=1e-3)


def test_ring_at_65nm_is_the_model_card():
    from hw_models import cmos_65nm_ring

    card = cmos_65nm_ring()
    assert TechnologyNode(node_nm=65, vdd_v=1.2).ring_params(card) is card


def test_ring_ported_to_7nm_follows_the_self_similar_rule():
    """The ported circuit is the card's with voltages x s_V and time x s_D, so the circuit model's f0, power and ISF
    phase diffusion must follow f0/s_D, P s_C s_V^2/s_D and D/(s_D s_C s_V^2) to solver precision."""
    from hw_models import RingOscillator, cmos_65nm_ring

    card = cmos_65nm_ring()
    ref, n7 = TechnologyNode(node_nm=65, vdd_v=1.2), TechnologyNode(node_nm=7)
    r0 = RingOscillator(card)
    r7 = RingOscillator(card).at_node(n7)
    s_v, s_d, s_c = n7.vdd / 1.2, n7.scale_delay(1.0, ref), n7.scale_capacitance(1.0, ref)
    assert r7.frequency() == pytest.approx(r0.frequency() / s_d, rel=1e-6)
    assert r7.power() == pytest.approx(r0.power() * s_c * s_v**2 / s_d, rel=1e-6)
    assert r7.diffusion() == pytest.approx(r0.diffusion() / (s_d * s_c * s_v**2), rel=1e-6)
    assert r7.params.a_vt_n_v_m == pytest.approx(card.a_vt_n_v_m * 1.0 / 2.5)
    assert r7.params.l_n_m == pytest.approx(7e-9)
    assert "no model card exists below 65 nm" in r7.sources["technology"]
