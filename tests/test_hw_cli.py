import json

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
    assert ring["f0_hz"] < ring["frequency_hz"] and ring["df0_dT_hz_per_k"] < 0 < ring["df0_dvdd_hz_per_v"]
    assert list(ring["phase_noise_dbc_hz"]) == ["10000", "100000", "1000000"]
    assert main(["device", "stno", "--json"]) == 0
    stno = json.loads(capsys.readouterr().out)
    assert abs(stno["amplitude_relaxation_s"] - 63.66e-9) < 0.1e-9
    pn = list(stno["phase_noise_dbc_hz"].values())
    assert pn[0] > pn[1] > pn[2]
