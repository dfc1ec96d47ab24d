"""mapping: configuration, TOML, units, quantiser, readout."""

import math
from pathlib import Path

import numpy as np
import pytest

from mapping import ChipConfig, CouplingConfig, PhaseReadout, Quantiser, ReadoutConfig, load_config, units
from mapping.config import config_from_dict
from mapping.periphery.readout import wrap

ROOT = Path(__file__).resolve().parents[1]


def test_example_toml_loads_and_matches_defaults():
    cfg = load_config(ROOT / "examples" / "chip.toml")
    assert cfg == ChipConfig()


def test_unknown_keys_are_refused_listing_valid_ones(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('device = "ideal"\ncolour = 3\n')
    with pytest.raises(ValueError, match="unknown option.*colour.*valid:.*device"):
        load_config(p)
    p.write_text('[coupling]\nbitz = 3\n')
    with pytest.raises(ValueError, match=r"bitz in \[coupling\]"):
        load_config(p)


@pytest.mark.parametrize("bad, match", [
    (dict(device="tube"), "device must be one of"),
    (dict(coupling=dict(fraction=2.0)), "coupling.fraction"),
    (dict(coupling=dict(bits=0)), "coupling.bits"),
    (dict(readout=dict(response="square")), "readout.response"),
    (dict(settle_cycles=-1.0), "settle_cycles"),
    (dict(temperature_k=float("nan")), "temperature_k"),
    (dict(ssa=dict(mode="global")), "ssa.mode"),
])
def test_invalid_values_name_the_field(bad, match):
    with pytest.raises(ValueError, match=match):
        config_from_dict(bad)


def test_none_strings_and_idealised():
    cfg = config_from_dict({"trim_bits": "none", "coupling": {"bits": "none"}})
    assert cfg.trim_bits is None and cfg.coupling.bits is None
    ideal = ChipConfig().idealised()
    assert ideal.device == "ideal" and not ideal.noise and not ideal.mismatch
    assert ideal.coupling.bits is None and ideal.readout.bits is None and ideal.readout.noise_rad == 0
    with pytest.warns(DeprecationWarning, match=r"ChipConfig.ideal\(\) is deprecated: use ChipConfig\(\).idealised\(\)"):
        assert ChipConfig.ideal() == ideal  # the one name is idealised(); ideal() stays for old scripts


def test_units_in_one_place():
    cfg = ChipConfig(settle_cycles=3.0, coupling=CouplingConfig(fraction=0.02))
    assert math.isclose(cfg.kappa_tau, 2 * math.pi * 0.02 * 3.0)
    assert math.isclose(units.coupling_rad_per_s(0.02, 1e9), 2 * math.pi * 0.02 * 1e9)
    assert math.isclose(units.settle_time_s(3.0, 1e9), 3e-9)
    assert math.isclose(units.diffusion_per_cycle(2e4, 1e9), 2e-5)
    assert math.isclose(units.noise_sigma_per_cycle(2e4, 1e9) ** 2, 2e-5)
    assert math.isclose(cfg.with_kappa_tau(0.3).kappa_tau, 0.3)
    assert math.isclose(units.lorentzian_fwhm_to_diffusion(1e6), 2 * math.pi * 1e6)


def test_quantiser_levels_and_error():
    x = np.linspace(-1.2, 1.2, 2001)
    q = Quantiser(bits=4, range=1.0, signed=True)
    y = q(x)
    assert len(np.unique(y)) == 2 * 7 + 1 and y.min() == -1 and y.max() == 1
    inside = np.abs(x) <= 1
    assert np.max(np.abs(y - x)[inside]) <= q.step / 2 + 1e-12
    assert q(0.0) == 0.0
    u = Quantiser(bits=3, range=2.0)
    assert np.all(u(np.linspace(0, 2, 101)) >= 0) and len(np.unique(u(np.linspace(0, 2, 101)))) == 8
    assert np.array_equal(Quantiser(bits=None, range=1.0)(np.array([0.3, 1.5])), [0.3, 1.0])
    with pytest.raises(ValueError, match="bits"):
        Quantiser(bits=0, range=1.0)


@pytest.mark.parametrize("response", ["cosine", "triangular"])
def test_readout_inverts_exactly_and_quantisation_is_bounded(response):
    th = np.linspace(-math.pi + 1e-9, math.pi, 1001)
    assert np.allclose(PhaseReadout(response=response).measure(th), th, atol=1e-12)
    bits = 10
    err = np.abs(wrap(PhaseReadout(response=response, bits=bits).measure(th) - th))
    # one LSB of 2/(2^(b-1)-1) on each channel, a phase error of at most ~pi/2 LSB
    assert err.max() < (math.pi / 2) * 2 / (2 ** (bits - 1) - 1)


def test_readout_noise_statistics():
    """Cosine detector: phase error std ≈ σ/sqrt(window) (small σ), within a 99 % chi-square interval."""
    n, sig, win = 20000, 0.01, 4.0
    r = PhaseReadout(noise_rad=sig, averaging_cycles=win)
    th = np.random.default_rng(1).uniform(-3, 3, n)
    e = r.measure(th, np.random.default_rng(2)) - th
    s2 = np.var(e)
    expect = (sig / math.sqrt(win)) ** 2
    # var of the sample variance ≈ 2 σ⁴ / n
    assert abs(s2 - expect) < 3 * math.sqrt(2 / n) * expect
    with pytest.raises(ValueError, match="rng"):
        r.measure(th)


def test_readout_config_in_chip():
    cfg = ChipConfig(readout=ReadoutConfig(response="triangular", bits=None, noise_rad=0.0))
    assert cfg.readout.response == "triangular"


def test_f0_outside_the_accepted_envelope_is_refused_before_compile():
    from mapping.config import F0_RANGE_HZ

    for bad in (1e308, 0.5 * F0_RANGE_HZ[0], 2 * F0_RANGE_HZ[1]):
        with pytest.raises(ValueError, match="f0_hz must be in"):
            ChipConfig(f0_hz=bad)
