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
