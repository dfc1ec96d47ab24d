"""The engine's command-line entry points: kuramoto-demo and bench integrator."""

import json

import pytest

from oscsim.cli import main


def test_kuramoto_demo_writes_plot_and_json(tmp_path, capsys, monkeypatch):
    from oscsim.demos import kuramoto_transition as kt

    real = kt.sweep
    monkeypatch.setattr(kt, "sweep", lambda **kw: real(**{**kw, "n": 120, "K": [0.5, 2.0, 4.0]}, t1=30.0, t_avg=15.0))
    assert main(["kuramoto-demo", "--out", str(tmp_path / "k")]) == 0
    res = json.loads((tmp_path / "k" / "kuramoto_r_of_K.json").read_text())
    assert (tmp_path / "k" / "kuramoto_r_of_K.png").stat().st_size > 1000
    assert res["r"][-1] == pytest.approx(res["r_theory"][-1], abs=0.1)
    assert str(tmp_path / "k") in capsys.readouterr().out


@pytest.mark.slow
def test_bench_integrator_quick_json(capsys):
    assert main(["bench", "integrator", "--json", "--quick"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["engine_vs_brian2"] > 0 and 0 < res["gemm_fraction"]
    assert res["brian2_target"] in ("cython", "numpy")
    assert res["cpu"]["model"] and res["numba_target"]["cpu_name"] == res["coupling_kernel"]["cpu_name"]
    assert res["coupling_kernel"]["fma_vector_bits"] in (128, 256, 512)
