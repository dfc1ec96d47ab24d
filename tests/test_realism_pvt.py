"""PVT (issue 11 item 4): ring f0(T) of the circuit model vs ngspice .temp; trim at T_cal, run at T."""

import numpy as np
import pytest

import hw_models as hw
from hw_models import RingNetwork, frequency_amplitude, ring_network_netlist, run_ngspice
from hw_models.pvt import ngspice_level1_vto, ring_at_temperature, ring_df0_dvdd, ring_f0_hz

pytestmark = pytest.mark.skipif(not __import__("shutil").which("ngspice"), reason="ngspice not installed")


def test_ring_f0_of_temperature_matches_ngspice_temp():
    """The circuit model's f0 at 250, 300, 350 K within 3 % of ngspice (.temp, level-1 with its own
    temperature law, parameters at TNOM = 27 C), while f0 itself moves by > 15 % over the range (so the
    comparison would fail without the temperature law)."""
    ring = hw.cmos_65nm_ring()
    f_sp = {}
    for T in (250.0, 300.0, 350.0):
        f = ring_f0_hz(ring, T)
        P = 1 / f
        net = ring_network_netlist(RingNetwork.single(ring), 25 * P, P / 400)
        net = net.replace(".options", f".temp {T - 273.15:.6f}\n.options", 1)
        res = run_ngspice(net)
        f_sp[T], _ = frequency_amplitude(res.t, res.v[:, 0], 0.5 * ring.vdd_v, 10 * P)
        assert abs(f_sp[T] / f - 1) < 0.03, (T, f, f_sp[T])
    assert f_sp[250.0] / f_sp[350.0] > 1.15


def test_threshold_law_is_ngspice_level1_at_tnom_and_slopes_like_bulk_cmos():
    assert ngspice_level1_vto(0.4, 300.15, 1) == pytest.approx(0.4, abs=1e-12)
    r = ring_at_temperature(hw.cmos_65nm_ring(), 350.0)
    assert r.vto_n_v < 0.4 and r.vto_p_v > -0.4 and r.kp_n_a_per_v2 < 300e-6  # |V_T| and mobility fall with T
    assert 0.5e-3 < (0.4 - r.vto_n_v) / 49.85 < 4e-3  # k_VT in the 1-4 mV/K range of bulk CMOS (Sze & Ng)
    assert ring_df0_dvdd(hw.cmos_65nm_ring(), 300.0) > 0  # a ring speeds up with its supply
    with pytest.raises(ValueError, match="mos_type"):
        ngspice_level1_vto(0.4, 300.0, 0)


def test_trim_at_calibration_then_run_at_another_temperature():
    import torch

    from mapping import ChipConfig, compile
    from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM

    torch.manual_seed(0)
    model = KuramotoLM(KuramotoConfig(k=8, n_heads=2, n_layers=1, seq_len=8))
    base = compile(model, ChipConfig(trim_bits=6))
    hot = compile(model, ChipConfig(trim_bits=6, temperature_k=302.0, calibration_temperature_k=300.0))
    ring = hw.cmos_65nm_ring()
    drift = ring_f0_hz(ring, 302.0) / ring_f0_hz(ring, 300.0) - 1
    assert hot.timebase["pvt"]["drift_rel"] == pytest.approx(drift, rel=1e-9) and drift < -1e-3
    assert np.allclose(hot.layers[0].freq_residual_rel - base.layers[0].freq_residual_rel, drift)
    assert np.array_equal(hot.layers[0].freq_trim_code, base.layers[0].freq_trim_code)
    assert "trimmed at 300 K, run at 302 K: common-mode drift" in hot.summary()
    with pytest.raises(ValueError, match="calibration_temperature_k"):
        ChipConfig(calibration_temperature_k=-3.0)
