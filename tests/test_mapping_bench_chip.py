"""`oscsim bench chip` (issue 22, item 2): the JSON keys of its quick mode (figures are not tested: timings)."""

import json

import pytest


@pytest.mark.slow
def test_bench_chip_quick_json_keys(capsys):
    from oscsim.cli import main

    assert main(["bench", "chip", "--quick", "--no-competitors", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    for kind in ("macromodel", "circuit", "stno"):
        assert set(res["chip_tokens_per_s"][kind]) == {"tiny", "1m"}
        assert all(v > 0 for v in res["chip_tokens_per_s"][kind].values())
    assert set(res["closed_form_tokens_per_s"]) == {"tiny", "1m"}
    for key in ("engine_fraction_of_chip_time", "engine_fraction_of_chip_time_1m", "engine_vs_gemm"):
        assert 0 < res[key] < 1.5, key  # fractions of a time, and of the GEMM rate (flops of the columns run)
    assert res["engine_oscillator_steps_per_s"] > 0 and res["gemm_flops_per_s"] > 0
    for size in ("tiny", "1m"):  # the hook's time in three parts, and the share's bound without the third
        b = res["chip_time_breakdown_s"][size]
        assert b["integration"] > 0 and b["readout"] > 0 and b["other"] >= 0
        assert res["engine_fraction_ceiling"][size] == pytest.approx(
            b["integration"] / (b["integration"] + b["readout"]))
        assert res["engine_fraction_ceiling"][size] >= (res["engine_fraction_of_chip_time"] if size == "tiny" else
                                                        res["engine_fraction_of_chip_time_1m"])
    for key in ("circuit_vs_ngspice", "engine_vs_brian2", "gemm_fraction"):
        assert key in res and res[key] is None  # --no-competitors
    assert "1m" in res["models"] and res["quick"] is True
