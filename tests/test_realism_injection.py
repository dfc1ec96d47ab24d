"""Phase injection (issue 11 item 1): the Adler lock-in transient, on the engine and in closed form."""

import math

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp

from hw_models.injection import adler_lock_rate, adler_phase_error, ring_injection_current
from mapping import ChipConfig, compile, energy_report, run
from mapping.periphery.injection import InjectionConfig, inject_phases, injection_time_s
from mapping.periphery.readout import wrap


@pytest.mark.parametrize("d", [0.0, 0.13, -0.25, 0.45])  # K = 0.4: three locked cases and one beating
def test_adler_closed_form_matches_a_tight_ode_solution(d):
    K, psi0 = 0.4, np.linspace(-3.1, 3.1, 9)
    t = np.array([0.5, 3.0, 12.0])
    for p0 in psi0:
        sol = solve_ivp(lambda _, y: d - K * np.sin(y), (0, t[-1]), [p0], t_eval=t, rtol=1e-11, atol=1e-12)
        assert np.allclose(wrap(adler_phase_error(p0, d, K, t) - sol.y[0]), 0, atol=1e-7)


def test_residual_error_vs_cycles_follows_the_adler_transient_on_the_engine():
    """Engine (phase network with the injection drive) vs the closed form, noise off, for 2..64 cycles; the
    error relative to the locked offset decays at the locking rate rho (fitted slope within 2 %)."""
    rng = np.random.default_rng(0)
    det = rng.uniform(-0.1, 0.1, (4, 8))  # 2 pi epsilon [rad/cycle], K = 2 pi 0.05 = 0.314
    cycles = [2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    errs = []
    for n in cycles:
        cfg = InjectionConfig(mode="injected", cycles=n)
        eng = inject_phases(np.zeros((4, 8)), det, config=cfg, seed=5)
        cf = inject_phases(np.zeros((4, 8)), det, config=cfg, seed=5, method="closed-form")
        assert np.max(np.abs(wrap(eng - cf))) < 5e-5, n  # Heun at 100 steps per 1/K
        errs.append(wrap(cf - np.arcsin(det / cfg.strength)))
    errs = np.abs(np.array(errs))  # (n_cycles, 4, 8)
    rho = adler_lock_rate(det, InjectionConfig().strength)
    # late times (ψ near the fixed point): log|ψ − ψ*| is linear in t with slope −ρ
    slope = (np.log(errs[-1]) - np.log(errs[-2])) / (cycles[-1] - cycles[-2])
    ok = errs[-1] > 1e-12  # not yet at round-off
    assert np.allclose(slope[ok], -rho[ok], rtol=0.02)


def test_closed_form_noise_matches_the_engine_statistics():
    """Locked oscillators with phase noise: the closed-form + Ornstein-Uhlenbeck residual has the engine's
    variance (chi-square 99.9 % interval on the engine's sample variance)."""
    from scipy.stats import chi2

    cfg, sig, n = InjectionConfig(mode="injected", cycles=30.0), 0.05, 2000
    det = np.full((1, n), 0.05)
    eng = inject_phases(np.zeros((1, n)), det, config=cfg, sigma=sig, seed=2)
    mean = np.arcsin(0.05 / cfg.strength)
    v = float(np.mean(wrap(eng - mean) ** 2))
    rho = adler_lock_rate(0.05, cfg.strength)
    expect = sig**2 * (1 - math.exp(-2 * rho * 30)) / (2 * rho)
    assert expect * chi2.ppf(0.0005, n) / n < v < expect * chi2.ppf(0.9995, n) / n


def test_injected_chip_error_falls_with_cycles_and_is_charged():
    from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM

    torch.manual_seed(0)
    model = KuramotoLM(KuramotoConfig(k=8, n_heads=2, n_layers=1, seq_len=8))
    tok = torch.randint(0, 256, (1, 8), generator=torch.Generator().manual_seed(0))
    errs = {}
    for n in (2.0, 80.0):
        cfg = ChipConfig().idealised(kappa_tau=0.05).replace(injection=InjectionConfig(mode="injected", cycles=n))
        r = run(compile(model, cfg), tok, seed=1, progress=False)
        errs[n] = float(np.mean(r.layers[0]["increment_rel_error"]))
    ideal = float(np.mean(run(compile(model, ChipConfig().idealised(kappa_tau=0.05)), tok, progress=False)
                          .layers[0]["increment_rel_error"]))
    # 2 cycles leave ~1 rad (x 1/(kappa tau_s) = 20); 80 cycles: e^{-K 80} = 1e-11, below the ideal chip's own
    # first-order error unless psi(0) fell within ~1e-9 of the unstable point (slow escape, ln(4/delta)/K)
    assert errs[2.0] > 1.0
    assert errs[80.0] < ideal + 0.01
    cfg = ChipConfig(device="ring-macromodel", injection=InjectionConfig(mode="injected", cycles=20.0))
    chip = compile(model, cfg)
    e = energy_report(chip)
    assert e["breakdown"]["injection_j"] > 0 and "mapping.periphery.injection" in e["sources"]["injection_j"]
    assert injection_time_s(cfg, chip.device.f0_hz) == pytest.approx(20.0 / chip.device.f0_hz)
    assert e["timeline_s"]["injection"] == pytest.approx(20.0 / chip.device.f0_hz)
    cfg40 = cfg.replace(injection=InjectionConfig(mode="injected", cycles=40.0))
    e40 = energy_report(compile(model, cfg40))
    assert e40["breakdown"]["injection_j"] == pytest.approx(2 * e["breakdown"]["injection_j"], rel=1e-9)
    with pytest.raises(ValueError, match="injection.mode"):
        InjectionConfig(mode="magic")


def test_ring_injection_current_gives_the_strength_through_the_ppv():
    import hw_models as hw

    ring = hw.cmos_65nm_ring()
    K = 2 * math.pi * 0.05 * hw.free_running_frequency(ring)
    cur = ring_injection_current(ring, K)
    assert cur["amplitude_a"] * cur["ppv_first_harmonic_rad_per_v"] / ring.c_load_f == pytest.approx(K)
    assert 1e-6 < cur["amplitude_a"] < 1e-2  # microamps to milliamps for a 20 fF node at GHz
    with pytest.raises(ValueError, match="node"):
        ring_injection_current(ring, K, node=9)


def test_realism_example_config_loads_and_compiles():
    from pathlib import Path

    from mapping import load_config

    cfg = load_config(Path(__file__).resolve().parents[1] / "examples" / "chip-realism.toml")
    assert cfg.injection.mode == "injected" and cfg.calibration_temperature_k == 300.0
    assert cfg.readout.samples_per_cycle == 4 and cfg.temperature_k == 300.2  # (compile: test_realism_pvt)


@pytest.mark.parametrize("kt", [0.5, 2.0, 2 * math.pi])
def test_transient_rms_matches_monte_carlo_of_uniform_start_phases(kt):
    """The predicted RMS write error is the mean square of Adler's closed form over ψ(0) uniform (the chips'
    draw): within 4 standard errors of a 400,000-sample Monte Carlo."""
    from mapping.periphery.injection import transient_rms

    psi = adler_phase_error(np.random.default_rng(5).uniform(-np.pi, np.pi, 400_000), 0.0, 1.0, kt)
    sq = psi**2
    assert abs(transient_rms(kt) ** 2 - sq.mean()) < 4 * sq.std() / math.sqrt(sq.size)


def test_transient_rms_decays_at_half_the_locking_rate():
    """The start phases near the unstable point set the RMS: E[ψ²] → 8 ln 2 e^{−Kt}, so the RMS falls as
    e^{−Kt/2} (a typical oscillator's error falls as e^{−Kt}); cycles_for_rms inverts it."""
    from mapping.periphery.injection import InjectionConfig, cycles_for_rms, transient_rms

    for kt in (10.0, 16.0):
        assert transient_rms(kt) ** 2 == pytest.approx(8 * math.log(2) * math.exp(-kt), rel=2e-3)
    slope = math.log(transient_rms(16.0) / transient_rms(10.0)) / 6.0
    assert slope == pytest.approx(-0.5, abs=0.01)
    cfg = InjectionConfig(mode="injected")
    n = cycles_for_rms(cfg, 0.0125)
    assert transient_rms(cfg.strength * n) == pytest.approx(0.0125, rel=1e-6)
    with pytest.raises(ValueError, match="strength_cycles"):
        transient_rms(-1.0)


def test_injected_chip_summary_states_the_write_error_and_the_cycles_that_fix_it():
    from _chips import seeded_kuramoto

    model = seeded_kuramoto(k=8, n_heads=2, n_layers=1, seq_len=8)
    base = ChipConfig(device="ring-macromodel")
    assert compile(model, base).injection_write_error() is None
    rep = {}
    for n in (20.0, 40.0):
        chip = compile(model, base.replace(injection=InjectionConfig(mode="injected", cycles=n)))
        rep[n] = chip.injection_write_error()
        assert rep[n]["message"] in chip.summary()
    # 20 cycles at K = 0.314 rad/cycle: transient 2.36 e^{-3.14} = 0.10 rad, ~0.4 of the increment at
    # kappa*tau_s = 0.25, far above the settle window's own diffusion and trim drift: dominates
    r = rep[20.0]
    assert r["dominates"] and 0.09 < r["transient_rad"] < 0.11 and r["total_rad"] > 5 * r["settle_error_rad"]
    assert "cycles bring the transient" in r["message"]
    # the cycles it names bring the transient to a third of the settle error (the chip no longer dominated)
    n = math.ceil(r["cycles_to_settle_error"])
    fixed = compile(model, base.replace(injection=InjectionConfig(mode="injected", cycles=float(n))))
    assert fixed.injection_write_error()["transient_rad"] <= r["settle_error_rad"] / 3
    assert not fixed.injection_write_error()["dominates"] and rep[40.0]["total_rad"] < rep[20.0]["total_rad"] / 10


def test_write_error_report_says_when_the_oscillators_cannot_lock():
    from mapping.periphery.injection import write_error_report

    cfg = InjectionConfig(mode="injected", strength_fraction=1e-4)  # K = 6.3e-4 rad/cycle
    r = write_error_report(cfg, detuning_rms=2e-3, sigma=0.0, settle_cycles=1.0, kappa_tau=0.25)
    assert r["dominates"] and r["total_rad"] is None and "do not lock" in r["message"]
    assert r["strength_fraction_to_settle_error"] > 2e-3 / (2 * math.pi)


@pytest.mark.parametrize("kt, exact", [(2.0, 0.82721301845094795935), (5.0, 0.19282759095926972879),
                                       (12.0, 0.0058370023771731080536), (20.0, 0.00010690866456822018541),
                                       (40.0, 4.8536458660064691776e-9), (80.0, 1.0004109758753165025e-17)])
def test_transient_rms_against_a_40_digit_quadrature(kt, exact):
    """References: mpmath.quad of (8c/π) ∫₀^∞ atan(s)²/(c² + s²) ds at 50 digits, panels split at c, 2c, 10c, 1
    (the SciPy quad used before was off by 1.1e-6 at K t = 12)."""
    from mapping.periphery.injection import transient_rms

    assert transient_rms(kt) == pytest.approx(exact, rel=1e-14)


def test_transient_rms_of_a_very_strong_injection_is_finite_and_small():
    from mapping.periphery.injection import transient_rms

    assert transient_rms(500.0) == pytest.approx(math.sqrt(8 * math.log(2) * math.exp(-500.0)), rel=1e-15)
    assert transient_rms(1e4) == 0.0
    assert transient_rms(1e-12) == pytest.approx(math.pi / math.sqrt(3.0), rel=1e-11)


def test_ssa_realism_example_is_the_realism_example_without_its_kuramoto_only_section():
    """examples/chip-realism-ssa.toml: every field of examples/chip-realism.toml that acts on an SSA chip (the
    temperature drift, the detector readout), compiled for an SSA model; the Kuramoto one is refused there."""
    import dataclasses

    from mapping import compile, load_model
    from mapping.config import load_config

    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "examples"
    kur, ssa = load_config(root / "chip-realism.toml"), load_config(root / "chip-realism-ssa.toml")
    assert dataclasses.replace(kur, injection=ssa.injection) == ssa
    assert not ssa.injection.injected
    model, _ = load_model("ssa1d-tiny")
    assert compile(model, ssa).kind == "ssa"
    with pytest.raises(ValueError, match="injection"):
        compile(model, kur)
