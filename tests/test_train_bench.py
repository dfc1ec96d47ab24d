"""``oscsim bench train``: the JSON carries tokens/s of every model and size and the Kuramoto/transformer ratio."""

import json

import pytest

from oscsim.bench.train import run_benchmark
from oscsim.cli import main


def test_run_benchmark_keys_and_ratio():
    res = run_benchmark(models=("kuramoto", "transformer"), sizes=("tiny",), batch=1, steps=1, rounds=1)
    per = res["results"]["tiny"]
    for m in ("kuramoto", "transformer"):
        assert per[m]["tokens_per_s"] > 0 and per[m]["seq_len"] == 128
        assert per[m]["tokens_per_s"] == pytest.approx(128 / per[m]["seconds_per_step"])
    ratio = res["kuramoto_vs_transformer_time_per_token"]["tiny"]
    assert ratio == pytest.approx(per["transformer"]["tokens_per_s"] / per["kuramoto"]["tokens_per_s"])
    assert res["deterministic"] is True


def test_cli_json_and_bad_arguments(capsys):
    assert main(["bench", "train", "--json", "--models", "ssa1d,ssa", "--sizes", "tiny", "--batch", "1", "--steps", "1",
                 "--rounds", "1"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert set(res["results"]["tiny"]) == {"ssa1d", "ssa"} and "kuramoto_vs_transformer_time_per_token" not in res
    with pytest.raises(SystemExit):
        main(["bench", "train", "--models", "lstm"])
    assert "choose from kuramoto, ssa, ssa1d, transformer" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "train", "--batch", "0"])
