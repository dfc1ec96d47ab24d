"""benchmarks/gap_curve.py: the 1M runs' committed logs read as curves, the gap's fit, bad logs refused."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gap_curve", ROOT / "benchmarks" / "gap_curve.py")
gap_curve = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gap_curve)


def test_the_committed_logs_give_twenty_evaluations_on_the_same_tokens():
    curves = {k: gap_curve.read_curve(ROOT / "train-runs" / f"{k}-1m.log") for k in gap_curve.KINDS}
    for t, v in curves.values():
        assert len(t) == 20 and t[-1] == 20_480_000 and np.all((v > 1.5) & (v < 4.0))
    assert np.array_equal(curves["kuramoto"][0], curves["transformer"][0])


def test_gap_fit_recovers_a_known_line_and_uses_the_second_half():
    t = np.arange(1, 21) * 1_000_000
    gap = np.where(t < 10_000_000, 0.3, 0.25 - 0.005 * t / 1e6)  # flat first half: the fit must not see it
    fit = gap_curve.gap_fit(t, gap)
    assert fit["points"] == 11 and fit["from_tokens"] == 10_000_000
    assert fit["slope_per_million"] == pytest.approx(-0.005) and fit["intercept"] == pytest.approx(0.25)


def test_a_log_without_evaluations_or_with_two_runs_is_refused(tmp_path):
    p = tmp_path / "a.log"
    p.write_text("step 1/10 tokens 100 lr 1e-3 train_bpc 3.0 elapsed 0:00:01\n")
    with pytest.raises(ValueError, match="no 'step"):
        gap_curve.read_curve(p)
    line = "step {}/10 tokens {} lr 1e-3 train_bpc 3.0 val_bpc~ 2.5 elapsed 0:00:01\n"
    p.write_text(line.format(1, "1,000") + line.format(2, "2,000") + line.format(1, "1,000"))
    with pytest.raises(ValueError, match="do not increase"):
        gap_curve.read_curve(p)
