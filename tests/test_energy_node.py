"""The technology node wired through the chip (issue 20 item 2): every figure the energy and area models assume at
65 nm is carried to the chip's node by hw_models.technology and no other rule; the rules against hand evaluations
of the papers' fits and tables; 7 nm spends less per token than 65 nm on the same design; each scaled term names
its scaling; extrapolation warns; leakage by hand."""

import math
import warnings

import pytest

from hw_models.technology import REFERENCE_NODE, TechnologyExtrapolationWarning, TechnologyNode, chip_node
from mapping import ChipConfig, compile, energy_report
from mapping.energy import constants as ec
from hw_models.devices import make_device

from _chips import seeded_kuramoto


def _e(c, v):  # a Stillmaker-Baas energy fit, e2 V^2 + e1 V + e0
    return c[0] * v**2 + c[1] * v + c[2]


def _d(c, v):  # a delay fit, d3 V^3 + d2 V^2 + d1 V + d0
    return c[0] * v**3 + c[1] * v**2 + c[2] * v + c[3]


E65, D65 = (3.755, -4.398, 1.975), (-53.3, 230.4, -333.9, 178.6)           # [SB17] 65 nm bulk
ELP7, DLP7 = (0.09365, -0.03409, 0.02043), (-61.79, 196.1, -210.3, 79.55)  # [SB17] 7 nm LP (PTM-MG)


def test_the_node_rules_against_the_fits_by_hand():
    n7 = chip_node(7)
    assert n7.vdd == 0.7 and chip_node(65).vdd == 1.2  # the node's nominal supply; 65 nm keeps the card's 1.2 V
    r_e = _e(ELP7, 0.7) / _e(E65, 1.2)
    assert ec.at_node(1.0, n7, "energy") == pytest.approx(r_e, rel=1e-12)
    assert ec.at_node(1.0, n7, "capacitance") == pytest.approx(r_e * 1.2**2 / 0.7**2, rel=1e-12)
    r_d = _d(DLP7, 0.7) / _d(D65, 1.2)
    assert ec.at_node(1.0, n7, "delay") == pytest.approx(r_d, rel=1e-12)
    assert ec.at_node(1.0, n7, "rate") == pytest.approx(1 / r_d, rel=1e-12)
    assert ec.at_node(25.0, n7, "area") == pytest.approx(1.0)  # [SB17] area table: 65 nm is 25x the 7 nm area
    assert ec.at_node(3.7, REFERENCE_NODE, "energy") == 3.7  # every figure holds as given at 65 nm, 1.2 V
    with pytest.raises(ValueError, match="how must be one of"):
        ec.at_node(1.0, n7, "volume")


def test_published_tables_used_by_the_area_model():
    # high-density 6T bitcells [um^2] (the data file's published cells) and the coupler built of them
    for node, cell in ((65, 0.52), (45, 0.346), (28, 0.127), (22, 0.092), (16, 0.074), (7, 0.027)):
        assert TechnologyNode(node_nm=node).sram_cell_area().value == cell
    n7 = chip_node(7)
    assert make_device("ring", "cmos_65nm").coupler_area_um2(6, n7)[0] == pytest.approx((6 * 0.027 + 63 * 1.0 / 25) * 1.5)
    # [HP19] int16 MAC (adder 67 + multiplier 1001 um^2 at 45 nm) carried to 65 nm by the [SB17] table (row 65:
    # the 45 nm area is 0.66 of the 65 nm one)
    assert ec.mac_area_um2("int16") == pytest.approx((67 + 1001) / 0.66)


def test_mac_areas_are_the_printed_45nm_table():
    # Hennessy & Patterson 6th ed. Fig. 1.13 (= Kim et al. 2023 Fig. 15), TSMC 45 nm synthesis [um^2]: 8b add 36,
    # 16b add 67, 16b FP add 1360, 32b FP add 4184, 8b mult 282, 16b FP mult 1640, 32b FP mult 7700; 32b mult 3495
    # only enters the interpolated 16-bit multiplier, b^2 from either end: mean(282 * 4, 3495 / 4) = 1000.9
    t = ec.ARITH_45NM_AREA_UM2
    assert {k: (v["add"], v["mul"]) for k, v in t.items()} == {
        "int8": (36, 282), "int16": (67, 1001), "fp16": (1360, 1640), "fp32": (4184, 7700)}
    assert round((282 * 4 + 3495 / 4) / 2) == t["int16"]["mul"]
    assert "[HP19]" in ec.MAC_AREA_SOURCE and "[HP19]" in ec.__doc__ and "Design Compiler" in ec.__doc__


def test_adc_fom_checked_against_the_survey_and_called_optimistic():
    from hw_models.technology import figures_checked

    (entry,) = figures_checked()["adc_fom_65nm_j_per_step"]
    assert "ADC-survey" in entry["against"] and "median 30" in entry["against"]
    assert "optimistic" in TechnologyNode(node_nm=65).adc_fom().source and "optimistic" in ec.ADC_FOM_J_PER_STEP.source


def test_no_source_string_left_recalled():
    # every transcribed figure is checked against a shown source or says "assumed" with its reason (issue 32 item 5)
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    for pkg in ("mapping", "hw_models", "oscsim"):
        for f in (root / pkg).rglob("*"):
            if f.suffix in (".py", ".json") and f.is_file():
                text = f.read_text(encoding="utf-8").lower()
                assert "recalled: check" not in text and "recalled without" not in text, f


def test_leakage_density_by_hand():
    # 1/2 x I_off (LP: CACTI's 22 nm LSTP 24.3 pA/um, held below 22 nm) x V_DD x transistor density (Intel 45 nm
    # 3.33 M/mm^2 over the area ratio) x 4 F
    n7 = chip_node(7)
    dens = 3.33e6 / 0.059  # 7 nm is 0.059 of the 45 nm area
    assert n7.leakage_density().value == pytest.approx(0.5 * 2.43e-5 * 0.7 * dens * 4 * 7e-9, rel=1e-9)
    hp = chip_node(65, "HP")  # one bulk fit at 65 nm: read as LP (CACTI's 65 nm LSTP 9.12 pA/um)
    assert hp.leakage_density().value == pytest.approx(0.5 * 9.12e-6 * 1.2 * (3.33e6 / 1.5) * 4 * 65e-9, rel=1e-9)


@pytest.fixture(scope="module")
def model():
    return seeded_kuramoto(k=8, n_heads=2, n_layers=2, seq_len=16)


@pytest.fixture(scope="module")
def reports(model):
    out = {}
    for node in (65, 7):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TechnologyExtrapolationWarning)  # 0.2 fF/um wires below 35 nm
            out[node] = energy_report(compile(model, ChipConfig(node_nm=node)))
    return out


def test_seven_nanometres_spend_less_per_token_than_sixty_five(reports):
    r65, r7 = reports[65], reports[7]
    assert r7["energy_per_token_chip_j"] < r65["energy_per_token_chip_j"] / 5
    assert r7["area_mm2"] < r65["area_mm2"] / 5
    assert r7["node"] == {"node_nm": 7.0, "flavor": "LP", "vdd_v": 0.7}
    for term in ("digital_periphery_j", "sram_j", "readout_j", "dac_j", "coupler_programming_j", "oscillators_j"):
        assert r7["breakdown"][term] < r65["breakdown"][term], term
    # the digital periphery exactly by the energy ratio (same operations, the [Hor14] MAC carried by [SB17])
    ratio = _e(ELP7, 0.7) / _e(E65, 1.2)
    assert r7["breakdown"]["digital_periphery_j"] == pytest.approx(r65["breakdown"]["digital_periphery_j"] * ratio)


def test_each_scaled_term_names_its_scaling(reports):
    src = reports[7]["energy_sources"] if "energy_sources" in reports[7] else reports[7]["sources"]
    for term in ("coupler_programming_j", "dac_j", "clock_j", "phase_detector_j"):
        assert "at 7 nm LP, 0.7 V (65 nm figures carried by hw_models.technology)" in src[term], term
    assert "Stillmaker-Baas energy ratio" in src["digital_periphery_j"]
    assert "CACTI 7" in src["sram_j"] and "Stillmaker-Baas energy ratio" in src["sram_j"]  # carried from 22 nm
    assert "scales with the [SB17] energy ratio" in src["readout_j"]  # the ADC's FoM rule
    assert "leakage" in src["leakage_j"] and "I_off" in src["leakage_j"]
    assert "ring-7nm" in reports[7]["sources"]["oscillators_j"] or "ported" in reports[7]["area"]["sources"][
        "oscillator_um2"] or reports[7]["area"]["sources"]["oscillator_um2"]


def test_the_ring_follows_the_node(model):
    chip = compile(model, ChipConfig(node_nm=45))
    osc = chip.device.oscillator
    assert osc.name == "ring-45nm" and "ported" in osc.sources["technology"]
    assert chip.timebase["f0_hz"] == pytest.approx(osc.frequency())
    assert chip.device.f0_hz != compile(model, ChipConfig()).device.f0_hz


def test_extrapolation_warns(model):
    with pytest.warns(TechnologyExtrapolationWarning, match="outside the 7-180 nm"):
        TechnologyNode(node_nm=5)
    with pytest.warns(TechnologyExtrapolationWarning, match="wire capacitance at 16 nm"):
        energy_report(compile(model, ChipConfig(node_nm=16)))
    with pytest.raises(ValueError, match="node_nm must be in"):
        ChipConfig(node_nm=0.5)
    with pytest.raises(ValueError, match="node_flavor must be one of"):
        ChipConfig(node_flavor="ULP")


def test_gpu_sram_at_four_nanometres_is_stated_not_warned():
    with warnings.catch_warnings():
        warnings.simplefilter("error", TechnologyExtrapolationWarning)
        e, how = ec.GPUS["H100-SXM"].sram_j_per_bit(1e6)
    assert "extrapolated below the fits' 7 nm" in how and "CACTI 7" in how and math.isfinite(e) and e > 0


def _chip_statement():
    warnings.warn("the chip's own extrapolation statement", UserWarning)  # one location: issued once by default


def test_gpu_sram_figure_leaves_the_once_per_location_registry_alone():
    """Stating the GPU's extrapolation must not reset the warning registry (warnings.catch_warnings does), or every
    energy report re-issues the chip's own warnings (a design log repeated them 135 times)."""
    from hw_models.technology import stated_extrapolation

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")
        for _ in range(3):
            _chip_statement()
            ec.GPUS["H100-SXM"].sram_j_per_bit(1e6)
    assert sum("the chip's own" in str(w.message) for w in seen) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", TechnologyExtrapolationWarning)
        with stated_extrapolation() as stated:  # the statements are collected, not warned
            TechnologyNode(node_nm=4, flavor="HP").sram_j_per_bit(1e6)
    assert any("node_nm = 4 is outside the 7-180 nm" in m for m in stated)
