"""``oscsim bench attention``: the CLI runs, prints the required keys, and its memory measure is right."""

from __future__ import annotations

import json

import pytest
import torch

from oscsim.bench.attention import peak_memory_bytes
from oscsim.cli import main


def test_peak_memory_sees_torch_allocations():
    n = 1 << 20

    def two_live_one_freed():
        a = torch.ones(n)  # 4 MiB
        b = torch.ones(n)  # 4 MiB, both alive: peak 8 MiB
        del a, b
        return torch.ones(n // 2)  # 2 MiB, returned

    assert peak_memory_bytes(two_live_one_freed) == 8 * n


def test_bench_attention_json(capsys):
    rc = main(["bench", "attention", "--json", "--lengths", "32,64", "--d-model", "16", "--heads", "2",
               "--repeats", "1", "--max-dense-gib", "0.0001"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    for key in ("ssa_tiled_vs_sdpa_time_4096", "ssa_tiled_vs_sdpa_mem_4096",
                "ssa_dense_vs_sdpa_time_4096", "ssa_dense_vs_sdpa_mem_4096"):
        assert key in res and res[key] is None  # 4096 was not run
    # the processor beside the figures (issue 22 item 4)
    assert res["environment"]["cpu_model"] and res["environment"]["cpu"]["model"] == res["environment"]["cpu_model"]
    assert res["interrupted"] is False and res["interrupted_at"] is None
    r32 = res["results"]["32"]
    assert set(r32) == {"sdpa", "kuramoto_sdpa", "kuramoto_explicit", "ssa_dense", "ssa_tiled"}
    assert r32["ssa_tiled"]["peak_bytes"] >= 0 and r32["ssa_tiled"]["time_s"] > 0
    # memory against hand counts (B=1, H=2, T=32, d_h=8, float32): every case returns its (B, H, T, d_h) output
    # (2 KiB, counted: "output included"); dense SSA must hold at least S (B, H, T, T) = 8 KiB besides, and the
    # skip rule's estimate of 12 live quadratic tensors (96 KiB) must not be exceeded by the measured peak,
    # or the --max-dense-gib cap would let through cases that do not fit.
    out_b, quad_b = 1 * 2 * 32 * 8 * 4, 1 * 2 * 32 * 32 * 4
    for case in ("sdpa", "ssa_dense", "ssa_tiled"):
        assert r32[case]["peak_bytes_profiler"] >= out_b, case
    assert quad_b + out_b <= r32["ssa_dense"]["peak_bytes_profiler"] <= 12 * quad_b + out_b
    assert r32["ssa_tiled"]["max_abs_diff_vs_dense"] < 1e-5
    # the quadratic cases are skipped above the memory cap, with the reason
    r64 = res["results"]["64"]
    assert r64["kuramoto_explicit"]["time_s"] is None and "exceeds" in r64["kuramoto_explicit"]["reason"]
    assert r64["kuramoto_explicit"]["time_vs_sdpa"] is None


def test_bench_attention_rejects_bad_arguments(capsys):
    assert main(["bench", "attention", "--d-model", "10", "--heads", "3"]) == 2
    assert "divisible" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "attention", "--cases", "sdpa,flash"])


def test_rss_peak_sees_worker_threads():
    # The headline memory measure must see allocations made on other threads (the tiled path's workers),
    # which the profiler timeline does not. Run in a fresh interpreter with the benchmark's malloc setting.
    import os
    import subprocess
    import sys

    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("needs Linux /proc")
    code = (
        "import threading, torch\n"
        "from oscsim.bench.attention import rss_peak_bytes\n"
        "def f():\n"
        "    def w():\n"
        "        a = torch.ones(1 << 22); b = torch.ones(1 << 22); del a, b\n"  # 2 x 16 MiB on a thread
        "    t = threading.Thread(target=w); t.start(); t.join()\n"
        "print(rss_peak_bytes(f))\n"
    )
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    peak = int(out.stdout.strip().splitlines()[-1])
    assert 30 * 2**20 < peak < 34 * 2**20


def test_bench_attention_ctrl_c_prints_the_finished_lengths(capsys, monkeypatch):
    # Ctrl-C during the second length: the first length's figures are printed, the JSON says where it
    # stopped, and the command exits with 130 (the usual code for SIGINT)
    import oscsim.bench.attention as ba

    real = ba._time_interleaved
    calls = []

    def interrupt_second(fns, repeats):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(fns, repeats)

    monkeypatch.setattr(ba, "_time_interleaved", interrupt_second)
    monkeypatch.setattr(ba, "_peak_in_subprocess", lambda case, n, args: 1)  # a fresh interpreter per case: slow
    rc = main(["bench", "attention", "--json", "--lengths", "32,64,128", "--d-model", "16", "--heads", "2",
               "--repeats", "1", "--cases", "sdpa,ssa_tiled"])
    assert rc == 130
    captured = capsys.readouterr()
    res = json.loads(captured.out)
    assert res["interrupted"] is True and res["interrupted_at"] == 64
    assert list(res["results"]) == ["32"] and res["results"]["32"]["ssa_tiled"]["time_s"] > 0
    assert res["ssa_tiled_vs_sdpa_time_32"] > 0 and "ssa_tiled_vs_sdpa_time_64" not in res
    assert "interrupted at N=64" in captured.err
    # the table form prints the finished lengths too
    calls.clear()
    assert main(["bench", "attention", "--lengths", "32,64", "--d-model", "16", "--heads", "2", "--repeats", "1",
                 "--cases", "sdpa"]) == 130
    out = capsys.readouterr().out
    assert out.startswith("cpu: ") and "    32 sdpa" in out and "    64 " not in out
