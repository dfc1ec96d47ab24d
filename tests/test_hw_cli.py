import json
import math

import pytest

from oscsim.cli import main


def test_device_ring_json(capsys):
    assert main(["device", "ring", "--preset", "cmos_65nm", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for k in ("frequency_hz", "amplitude_v_pp", "power_w", "energy_per_cycle_j", "phase_noise_dbc_hz"):
        assert k in out
    assert 1e8 < out["frequency_hz"] < 1e11


def test_device_stno_json_and_errors(capsys, tmp_path):
    assert main(["device", "stno", "--preset", "vortex", "--json", "--plot", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert abs(out["power_w"] - 6e-3 ** 2 * 40) < 1e-12
    assert (tmp_path / "stno_phase_noise.png").exists()
    assert main(["device", "ring", "--stages", "4"]) == 2


def test_device_json_has_the_realism_figures(capsys):
    """issue 11 item 6: f0 at --temperature, drift slopes, flicker corner, relaxation time, phase-noise table."""
    assert main(["device", "ring", "--json", "--temperature", "350"]) == 0
    ring = json.loads(capsys.readouterr().out)
    for k in ("f0_hz", "df0_dT_hz_per_k", "df0_dvdd_hz_per_v", "flicker_corner_hz"):
        assert ring[k] is not None
    assert ring["f0_hz"] == ring["frequency_hz"] and ring["df0_dT_hz_per_k"] < 0 < ring["df0_dvdd_hz_per_v"]
    assert list(ring["phase_noise_dbc_hz"]) == ["10000", "100000", "1000000"]
    assert main(["device", "stno", "--json"]) == 0
    stno = json.loads(capsys.readouterr().out)
    assert abs(stno["amplitude_relaxation_s"] - 63.66e-9) < 0.1e-9
    pn = list(stno["phase_noise_dbc_hz"].values())
    assert pn[0] > pn[1] > pn[2]


def test_every_figure_of_a_device_report_is_at_its_temperature(capsys, tmp_path):
    """issue 23 item 5: one operating point. Between 300 K and 350 K every figure of the ring moves, each as the
    circuit at T says: f0 from the circuit at T, D its ISF diffusion (thermal noise ∝ T at a fixed circuit,
    times the circuit's own change), the linewidth D/2π, L(1 MHz) in the 1/f² region by 10 log10(D ratio), the
    --offset-hz figure one of the table; the preset is named as it can be passed back."""
    from hw_models.noise import isf_diffusion
    from hw_models.presets import cmos_65nm_ring
    from hw_models.pvt import ring_at_temperature, ring_f0_hz

    ring = cmos_65nm_ring()
    rep = {}
    for T in (300.0, 350.0):
        assert main(["device", "ring", "--temperature", str(T), "--json", "--plot", str(tmp_path / f"{T:g}")]) == 0
        r = rep[T] = json.loads(capsys.readouterr().out)
        assert r["preset"] == "cmos_65nm" and r["temperature_k"] == T
        assert r["frequency_hz"] == r["f0_hz"] == pytest.approx(ring_f0_hz(ring, T), rel=1e-12)
        D = isf_diffusion(ring_at_temperature(ring, T))
        assert r["phase_diffusion_rad2_per_s"] == pytest.approx(D, rel=1e-12)
        assert r["linewidth_fwhm_hz"] == pytest.approx(D / (2 * math.pi), rel=1e-12)
        assert r["phase_noise_at_offset_dbc_hz"] == r["phase_noise_dbc_hz"]["1000000"]
        assert r["energy_per_cycle_j"] == pytest.approx(r["power_w"] / r["frequency_hz"], rel=1e-12)
        assert {p.rsplit("/", 1)[-1] for p in r["plots"]} == {"ring_waveform.png", "ring_phase_noise.png"}
    lo, hi = rep[300.0], rep[350.0]
    assert hi["frequency_hz"] < 0.95 * lo["frequency_hz"]  # mobility ∝ T^-1.5 slows the ring
    assert hi["power_w"] != lo["power_w"] and hi["amplitude_v_pp"] != lo["amplitude_v_pp"]
    ratio = hi["phase_diffusion_rad2_per_s"] / lo["phase_diffusion_rad2_per_s"]
    assert ratio > 1.1
    assert hi["phase_noise_at_offset_dbc_hz"] - lo["phase_noise_at_offset_dbc_hz"] == pytest.approx(
        10 * math.log10(ratio), abs=0.02)
    # the physics of the thermal part: at a fixed circuit, D ∝ T exactly
    fixed = ring_at_temperature(ring, 300.0)
    assert isf_diffusion(fixed.replace(temperature_k=350.0)) / isf_diffusion(fixed) == pytest.approx(350 / 300, rel=1e-12)


@pytest.mark.parametrize("kind, preset", [("stno", "vortex"), ("ideal", "default")])
def test_devices_without_a_temperature_coefficient_move_only_their_noise(kind, preset):
    """Spin-torque and ideal devices: f0 and power stay (no cited coefficient), D ∝ T and L(f) far outside the
    line (10 GHz; the spin-torque line is MHz wide) rises by 10 log10(T ratio)."""
    from hw_models.cli import _preset, device_report

    name, params = _preset(kind, None, 5)
    assert name == preset
    lo, hi = (device_report(params, T, 1e10, preset=name) for T in (300.0, 350.0))
    assert hi["frequency_hz"] == lo["frequency_hz"] == hi["f0_hz"] and hi["power_w"] == lo["power_w"]
    assert hi["phase_diffusion_rad2_per_s"] / lo["phase_diffusion_rad2_per_s"] == pytest.approx(350 / 300, rel=1e-12)
    assert hi["phase_noise_at_offset_dbc_hz"] - lo["phase_noise_at_offset_dbc_hz"] == pytest.approx(
        10 * math.log10(350 / 300), abs=1e-3)
