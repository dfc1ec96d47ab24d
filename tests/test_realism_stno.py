"""Spin-torque chips with amplitude dynamics (issue 11 item 3)."""

import math
import warnings

import numpy as np
import pytest
import torch

from mapping import ChipConfig, compile
from mapping.backends.phase import kuramoto_chip_step
from mapping.periphery.quantise import Quantiser
from mapping.backends.stno import COUPLING_FRACTION, RELAX_TIMES, PhaseReductionWarning, STNOAmplitudeModel


def _layer(seed=0, B=1, T=12, k=4, h=1):
    rng = np.random.default_rng(seed)
    theta = rng.uniform(-np.pi, np.pi, (B, T, k))
    L = np.tril(rng.uniform(0, 1, (B, h, T, T)))
    return theta, L / L.sum(-1, keepdims=True), rng.uniform(-1, 1, (B, T, k))


def _increments(relax_times, coupling_over_gamma, **extra):
    am = STNOAmplitudeModel.from_preset(3.067e8, noise=False, temperature_k=300.0)
    theta, A, v = _layer()
    tau = relax_times / am.gamma_p
    q, g = Quantiser(bits=None, range=1e6, signed=False), Quantiser(bits=None, range=1e6, signed=True)
    kw = dict(n_heads=1, kappa=coupling_over_gamma * am.gamma_p, settle_cycles=tau, n_steps=int(4 * tau) + 4,
              coupling_q=q, gain_q=g, reference_bank=False, **extra)
    p = kuramoto_chip_step(theta, A, v, **kw).va
    a = kuramoto_chip_step(theta, A, v, amplitude=am, **kw).va
    return np.linalg.norm(a - p) / np.linalg.norm(p)


@pytest.mark.parametrize("relax_times, coupling", [(RELAX_TIMES, COUPLING_FRACTION), (RELAX_TIMES, 0.02),
                                                   (2 * RELAX_TIMES, COUPLING_FRACTION)])
def test_amplitude_and_phase_models_agree_where_the_reduction_is_valid(relax_times, coupling):
    """Settle window >= RELAX_TIMES / Gamma_p and coupling <= COUPLING_FRACTION Gamma_p: the complex-amplitude
    network's increment is within 2 % of the phase model's (noise and mismatch off; the residual is the
    amplitude transient after the couplers switch on, ~1/(tau Gamma_p))."""
    assert _increments(relax_times, coupling) < 0.02


def test_amplitude_and_phase_models_part_on_the_defaults_time_scales():
    """The default spin-torque window (0.2 / Gamma_p) and coupling (4.9 Gamma_p): the models differ by > 30 %."""
    assert _increments(0.2, 4.9) > 0.3


@pytest.fixture(scope="module")
def model():
    from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM

    torch.manual_seed(0)
    return KuramotoLM(KuramotoConfig(k=8, n_heads=2, n_layers=1, seq_len=8))


def test_spin_torque_default_states_its_regime_and_warns(model):
    with pytest.warns(PhaseReductionWarning, match="settle_cycles >= .* coupling.fraction <="):
        chip = compile(model, ChipConfig(device="spin-torque"))
    reg = chip.timebase["stno"]
    assert reg["model"] == "amplitude" and not reg["phase_reduction_valid"]
    assert reg["relaxation_time_s"] == pytest.approx(63.7e-9, rel=0.02)  # 1/Gamma_p of the vortex preset
    assert reg["settle_time_s"] == pytest.approx(4 / 3.067e8, rel=0.01)
    s = chip.summary()
    assert "amplitude model" in s and "1/Gamma_p" in s and "fix:" in s
    with pytest.warns(PhaseReductionWarning):
        ph = compile(model, ChipConfig(device="spin-torque", stno_model="phase"))
    assert "outside its validity" in ph.summary()


def test_spin_torque_fix_makes_the_phase_model_valid(model):
    import dataclasses

    base = ChipConfig(device="spin-torque")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PhaseReductionWarning)
        reg = compile(model, base).timebase["stno"]
    f0 = 3.067e8
    gp = reg["gamma_p_rad_per_s"]
    cfg = base.replace(settle_cycles=math.ceil(RELAX_TIMES / gp * f0),
                       coupling=dataclasses.replace(base.coupling, fraction=COUPLING_FRACTION * gp / (2 * math.pi * f0 * 4)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PhaseReductionWarning)
        chip = compile(model, cfg)
    assert chip.timebase["stno"]["model"] == "phase" and chip.timebase["stno"]["phase_reduction_valid"]


def test_amplitude_chip_runs_with_noise_and_mismatch_and_is_seeded(model):
    from mapping import run

    tok = torch.randint(0, 256, (1, 8), generator=torch.Generator().manual_seed(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PhaseReductionWarning)
        chip = compile(model, ChipConfig(device="spin-torque"))
    r1, r2 = run(chip, tok, seed=2, progress=False), run(chip, tok, seed=2, progress=False)
    assert torch.equal(r1.logits, r2.logits) and "complex amplitude" in r1.backend
    assert all(np.isfinite(x) for x in r1.layers[0]["increment_rel_error"])
    with pytest.raises(ValueError, match="stno_model"):
        ChipConfig(stno_model="exact")


def test_realism_fields_that_do_not_act_are_refused(model):
    """mapping.inert: stno_model on a ring, calibration on a device with no cited drift, [injection] on SSA."""
    from mapping.periphery.injection import InjectionConfig
    from oscsim.nn.osn import OSNConfig, OSNModel

    with pytest.raises(ValueError, match="stno_model"):
        compile(model, ChipConfig(stno_model="amplitude"))
    with pytest.raises(ValueError, match="calibration_temperature_k"):
        compile(model, ChipConfig(device="ideal", calibration_temperature_k=290.0))
    with pytest.raises(ValueError, match="injection.cycles"):
        compile(model, ChipConfig(injection=InjectionConfig(cycles=5.0)))  # mode 'ideal'
    ssa = OSNModel(OSNConfig(d_model=16, n_heads=2, n_layers=1, seq_len=8, frequency="scalar"))
    with pytest.raises(ValueError, match="injection.mode"):
        compile(ssa, ChipConfig(injection=InjectionConfig(mode="injected")))
