"""CACTI 7 SRAM macros (hw_models.cacti) and the chip's SRAM figures taken from them (mapping.energy.sram)."""

import os
import stat
import warnings

import pytest

from hw_models import cacti
from hw_models.technology import (HOROWITZ_REFERENCE, TechnologyExtrapolationWarning, TechnologyNode, chip_node,
                                  stated_extrapolation)
from mapping.energy import constants as ec
from mapping.energy import sram


def test_macro_figures_at_45nm_hp_within_3x_of_horowitz():
    """CACTI at [Hor14]'s node and supply (45 nm HP, 0.9 V) against the published 64-bit reads: 8 kB 10 pJ,
    1 MB 100 pJ. Measured: 0.43x and 0.55x (CACTI's energy-delay-optimised organisation without ECC; Horowitz's
    figures are rounded slide values of a real design, peripheral overheads included). The bound, 3x either way,
    holds two independent estimates of the same C V^2 to the same order; the ratios themselves are in
    BENCHMARKS.md."""
    for size, pj in ((8192, 10.0), (1 << 20, 100.0)):
        m = cacti.sram_macro(size, HOROWITZ_REFERENCE)
        assert 1 / 3 < m.read_j.value / (pj * 1e-12) < 3.0, (size, m.read_j.value)
        assert m.read_j.unit == "J/access" and "CACTI 7" in m.read_j.source


def test_macro_units_monotone_and_supply_rule():
    n65 = chip_node(65)
    small, big = cacti.sram_macro(8192, n65), cacti.sram_macro(1 << 20, n65)
    assert small.read_j.value < big.read_j.value and small.area_mm2.value < big.area_mm2.value
    assert small.leakage_w.value < big.leakage_w.value
    assert big.leakage_w.unit == "W" and big.area_mm2.unit == "mm^2" and big.access_s.unit == "s"
    # 65 nm LP at 1.2 V is CACTI's own LSTP supply: no supply scaling; at 1.0 V the energy goes as V^2
    low = cacti.sram_macro(8192, TechnologyNode(node_nm=65, vdd_v=1.0))
    assert low.read_j.value == pytest.approx(small.read_j.value * (1.0 / 1.2) ** 2, rel=1e-12)
    assert low.leakage_w.value == pytest.approx(small.leakage_w.value * (1.0 / 1.2), rel=1e-12)
    # a buffer that is not a power of two: the next macro's energy per access, its area per bit
    odd = cacti.sram_macro(6000, n65)
    assert odd.macro_bytes == 8192 and odd.read_j.value == small.read_j.value
    assert odd.area_mm2.value == pytest.approx(small.area_mm2.value * 6000 / 8192, rel=1e-12)


def test_flavours_one_fit_at_65nm_apart_below():
    assert cacti.sram_macro(32768, chip_node(65, "HP")) == cacti.sram_macro(32768, chip_node(65, "LP"))
    lp, hp = cacti.sram_macro(32768, chip_node(45, "LP")), cacti.sram_macro(32768, chip_node(45, "HP"))
    assert hp.leakage_w.value > 100 * lp.leakage_w.value  # ITRS HP against LSTP devices


def test_outside_cacti_nodes_is_carried_and_warned():
    with pytest.warns(TechnologyExtrapolationWarning, match="CACTI 7 covers 22-90 nm"):
        m7 = cacti.sram_macro(32768, TechnologyNode(node_nm=16))
    m22 = cacti.sram_macro(32768, TechnologyNode(node_nm=22))
    assert m7.read_j.value < m22.read_j.value and m7.area_mm2.value < m22.area_mm2.value
    assert "carried from 22 nm to 16 nm" in m7.source
    with warnings.catch_warnings():
        warnings.simplefilter("error", TechnologyExtrapolationWarning)
        with stated_extrapolation() as stated:
            cacti.sram_macro(32768, TechnologyNode(node_nm=16))
    assert any("CACTI 7 covers" in s for s in stated)


def test_bad_arguments_refused_in_one_line():
    n = chip_node(65)
    for kw, msg in (({"capacity_bytes": 0}, "capacity_bytes must be"), ({"word_bits": 24}, "word_bits must be one of"),
                    ({"banks": 3}, "banks must be one of"), ({"ports": 0}, "ports must be one of")):
        args = {"capacity_bytes": 1024, **kw}
        with pytest.raises(ValueError, match=msg):
            cacti.sram_macro(args.pop("capacity_bytes"), n, **args)
    with pytest.raises(ValueError, match="node must be"):
        cacti.sram_macro(1024, 65)


def test_cached_on_disk_runs_the_binary_once(tmp_path, monkeypatch):
    monkeypatch.setenv("OSCSIM_CACHE", str(tmp_path))
    calls = []
    real = cacti._run_cacti

    def counting(*a):
        calls.append(a)
        return real(*a)

    monkeypatch.setattr(cacti, "_run_cacti", counting)
    cacti._cacti_cached.cache_clear()
    a = cacti.sram_macro(4096, chip_node(65))
    cacti._cacti_cached.cache_clear()  # a new process: only the disk cache is left
    b = cacti.sram_macro(4096, chip_node(65))
    assert a == b and len(calls) == 1
    assert list((tmp_path / "cacti").glob("*.npz"))
    cacti._cacti_cached.cache_clear()


def test_binary_without_execute_bit_is_copied(tmp_path, monkeypatch):
    src = cacti._package_dir()
    fake = tmp_path / "pkg"
    fake.mkdir()
    (fake / "cacti").write_bytes((src / "cacti").read_bytes())
    os.chmod(fake / "cacti", stat.S_IRUSR | stat.S_IWUSR)  # as a wheel may leave it
    os.symlink(src / "tech_params", fake / "tech_params")
    monkeypatch.setattr(cacti, "_package_dir", lambda: fake)
    monkeypatch.setenv("OSCSIM_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    cacti.cacti_dir.cache_clear()
    try:
        d = cacti.cacti_dir()
        assert d != fake and os.access(d / "cacti", os.X_OK) and (d / "tech_params" / "65nm.dat").is_file()
        r = cacti._run_cacti(4096, 64, 1, 1, 65.0, "itrs-lstp")
        assert r["read_j"] > 0
    finally:
        cacti.cacti_dir.cache_clear()


def test_chip_sram_figures_come_from_cacti():
    n = chip_node(65)
    m = sram.sram_figures(100_000, n)
    assert ec.sram_j_per_bit(100_000, n) == m.read_j_per_bit == sram.sram_read_j_per_bit(100_000, n)
    assert sram.sram_area_mm2(100_000, n) == m.area_mm2.value
    assert sram.sram_leakage_w(100_000, n) == m.leakage_w.value
    assert sram.sram_area_mm2(0, n) == 0.0 == sram.sram_leakage_w(0, n)
    assert "CACTI 7" in ec.SRAM_SOURCE
    # the former [Hor14]-scaled figure stays as the cross-check, within 3x of CACTI at the chips' buffers
    old = n.sram_j_per_bit(100_000).value
    assert 1 / 3 < old / m.read_j_per_bit < 3


def test_device_off_current_from_cacti_tables():
    lp = cacti.device_off_current(65, "LP")
    assert lp.value == pytest.approx(9.12e-12 / 1e-6) and lp.unit == "A/m"
    assert cacti.device_off_current(45, "HP").value == pytest.approx(2.8e-7 / 1e-6)
    mid = cacti.device_off_current(28, "LP").value  # linear between 32 (2.06e-11) and 22 nm (2.43e-11)
    assert mid == pytest.approx((0.6 * 2.06e-11 + 0.4 * 2.43e-11) / 1e-6)
    assert "held at its 22 nm value" in cacti.device_off_current(7, "LP").source


def test_large_buffers_are_banked_in_1mib_macros():
    n = chip_node(65)
    one, four = cacti.sram_macro(1 << 20, n), cacti.sram_macro(4 << 20, n)
    assert four.macro_bytes == 1 << 20 and four.read_j == one.read_j
    assert four.area_mm2.value == pytest.approx(4 * one.area_mm2.value, rel=1e-12)
    assert four.leakage_w.value == pytest.approx(4 * one.leakage_w.value, rel=1e-12)
