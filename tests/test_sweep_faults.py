"""Faults a sweep meets, each one line without a traceback (exit status 2; 1 when a point failed, with the
error printed): an --out that is a file, a read-only --out, a corrupt sweep.json, a corrupt part (recomputed), a
sweep whose every point fails. And the one grammar of distributions that sweeps and design searches share."""

import os
import subprocess

import pytest

from mapping.design.spec import design_spec_from_dict
from mapping.sweep.distributions import KINDS
from mapping.sweep.spec import spec_from_dict

SPEC = """
name = "faults"
checkpoint = "kuramoto-tiny"
[tokens]
windows = 1
seq_len = 16
[chip]
device = "ideal"
settle_cycles = 2.0
[axes]
"coupling.bits" = [4, 5]
"""


def _cli(capsys, *args):
    from oscsim.cli import main

    rc = main([str(a) for a in args])
    return rc, capsys.readouterr()


def _one_line(err: str, *words) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("oscsim sweep: faults:")]
    assert "Traceback" not in err and len(lines) == 1, err
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.fixture
def spec_path(tmp_path):
    p = tmp_path / "spec.toml"
    p.write_text(SPEC)
    return p


def test_an_out_that_is_a_file_a_read_only_out_and_a_corrupt_sweep_json(spec_path, tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    rc, cap = _cli(capsys, "sweep", spec_path, "--out", f, "--workers", "0", "--no-progress")
    assert rc == 2
    _one_line(cap.err, "is a file, not a folder")
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() == 0:  # root writes through permission bits: a read-only mount
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)]).returncode:
            pytest.skip("cannot mount a read-only tmpfs")
    else:
        ro.chmod(0o555)
    try:
        rc, cap = _cli(capsys, "sweep", spec_path, "--out", ro / "s", "--workers", "0", "--no-progress")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", "-l", str(ro)])
    assert rc == 2
    _one_line(cap.err, "cannot write in", "read-only file system" if os.geteuid() == 0 else "permission denied")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "sweep.json").write_text('{"spec_hash": ')
    rc, cap = _cli(capsys, "sweep", spec_path, "--out", bad, "--workers", "0", "--no-progress")
    assert rc == 2
    _one_line(cap.err, str(bad / "sweep.json"), "is damaged")


def test_every_point_failing_exits_1_and_says_the_error(spec_path, tmp_path, capsys, monkeypatch):
    import mapping.compiler.build

    def broken(*a, **k):
        raise RuntimeError("planted fault")

    monkeypatch.setattr(mapping.compiler.build, "compile", broken)
    rc, cap = _cli(capsys, "sweep", spec_path, "--out", tmp_path / "s", "--workers", "0", "--no-progress")
    assert rc == 1 and "RuntimeError: planted fault" in cap.out + cap.err
    assert "Traceback" not in cap.err


@pytest.mark.parametrize("dist, msg", [
    ({"randint": [3, 5]}, "the distribution must be one of uniform, loguniform, int, choice, got 'randint'"),
    ({"int": [5, 5]}, "int needs finite lo < hi, got [5, 5]"),
    ({"uniform": [0.1, 0.0]}, "uniform needs finite lo < hi"),
    ({"loguniform": [0.0, 0.1]}, "loguniform needs lo > 0"),
    ({"int": [3, 5.5]}, "int needs integer bounds"),
    ({"choice": []}, "choice is empty"),
    ({"choice": [4, 4]}, "choice repeats a value"),
    ({"int": 3}, "int takes a list"),
])
def test_sweeps_and_design_searches_share_one_distribution_grammar(dist, msg):
    """The same words and rules, refused with the same message naming the spec key."""
    base = {"checkpoint": "kuramoto-tiny", "chip": {"device": "ideal"}}
    sweep = {**base, "sample": {"n": 2, "seed": 0, "fields": {"coupling.bits": dist}}}
    design = {**base, "space": {"coupling.bits": dist}}
    for build, data, key in ((spec_from_dict, sweep, 'sample.fields."coupling.bits"'),
                             (design_spec_from_dict, design, 'space."coupling.bits"')):
        with pytest.raises(ValueError) as e:
            build(data)
        assert str(e.value).startswith(key) and msg in str(e.value), str(e.value)
    assert KINDS == ("uniform", "loguniform", "int", "choice")


def test_one_grammar_draws_and_searches_the_same_kinds():
    base = {"checkpoint": "kuramoto-tiny", "chip": {"device": "ideal"}}
    fields = {"coupling.bits": {"int": [3, 5]}, "readout.noise_rad": {"loguniform": [1e-3, 0.1]},
              "settle_cycles": {"uniform": [1.0, 3.0]}, "device": {"choice": ["ideal", "ring-macromodel"]}}
    s = spec_from_dict({**base, "sample": {"n": 40, "seed": 1, "fields": fields}})
    draws = [p.params for p in s.points]
    assert {d["coupling.bits"] for d in draws} == {3, 4, 5}
    assert all(1e-3 <= d["readout.noise_rad"] <= 0.1 and 1.0 <= d["settle_cycles"] <= 3.0 for d in draws)
    d = design_spec_from_dict({**base, "space": fields}).distributions()
    assert (d["coupling.bits"].low, d["coupling.bits"].high) == (3, 5) and d["readout.noise_rad"].log
    assert d["device"].choices == ("ideal", "ring-macromodel")
