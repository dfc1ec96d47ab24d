"""Decode with a phase memory (mapping.backends.phase_memory, mapping.energy.phase_memory): the held drift's
statistics against its model (confidence intervals), the key-error matrices, the energy of held and re-injected
keys against hand calculations, and the [decode] section as a chip mode."""

import math

import numpy as np
import pytest
from scipy import stats

from mapping.backends.phase_memory import HeldMemory, Reinjection, held_error_rms, held_loss_age, held_validity


def test_held_drift_is_a_drifting_brownian_path_per_oscillator():
    """E_u(a) = ε N a + σ √N W(a): mean, variance at every age (chi-square CI) and independent increments."""
    n_osc, T, N = 4000, 6, 250.0
    eps = np.full(n_osc, 2e-4)  # rad/cycle
    sigma = 3e-3  # rad/sqrt(cycle)
    E = HeldMemory(cycles_per_token=N).drift(eps, sigma, np.random.default_rng(0), T)  # (n, age)
    assert np.all(E[:, 0] == 0)
    alpha = 1e-3
    for a in range(1, T):
        dev = E[:, a] - eps * N * a
        var = sigma**2 * N * a
        ratio = np.mean(dev**2) / var
        lo, hi = stats.chi2.ppf([alpha / 2, 1 - alpha / 2], n_osc) / n_osc
        t = dev.mean() / math.sqrt(var / n_osc)
        assert lo < ratio < hi and abs(t) < 3.3, (a, ratio, t)
    inc = np.diff(E - eps[:, None] * N * np.arange(T), axis=1)  # Brownian increments between ages
    r = np.corrcoef(inc[:, 1], inc[:, 3])[0, 1]
    assert abs(r) < 3.3 / math.sqrt(n_osc)  # independent: consecutive ages share one path, not one draw


def test_held_key_errors_gather_each_key_at_its_age():
    T = 5
    eps = np.array([[1e-3, -2e-3, 0.5e-3, 0.0, 3e-3]])
    w = np.array([[0.01, 0.02, 0.03, 0.04, 0.05]])
    mem = HeldMemory(cycles_per_token=100.0)
    k = mem.key_errors(w, eps, 0.0, np.random.default_rng(0))
    for t in range(T):
        for u in range(t + 1):
            assert k[0, t, u] == pytest.approx(w[0, u] + eps[0, u] * 100.0 * (t - u))
    fresh = Reinjection().key_errors(w, eps, 0.0, None, lambda shape: np.full(shape, 7.0))
    low = np.tril(np.ones((T, T), dtype=bool), -1)
    assert np.all(fresh[0][low] == 7.0) and np.allclose(np.diag(fresh[0]), w[0])
    assert np.all(Reinjection().key_errors(0.0, eps, 0.0, None)[0] == 0.0)  # exact writes


def test_predicted_rms_loss_age_and_validity():
    N, eps, sig = 200.0, 1e-4, 2e-3
    assert held_error_rms(3, eps, sig, N) == pytest.approx(math.sqrt(sig**2 * N * 3 + (eps * N * 3) ** 2))
    a = held_loss_age(0.1, eps, sig, N)
    assert held_error_rms(a, eps, sig, N) == pytest.approx(0.1)
    assert held_loss_age(0.1, 0.0, sig, N) == pytest.approx(0.01 / (sig**2 * N))
    assert held_loss_age(0.1, 0.0, 0.0, N) == math.inf
    with pytest.warns(UserWarning, match="oldest held keys carry little phase"):
        v = held_validity(1e-3, sig, N, 127)
    assert not v["valid"] and v["age_at_1_rad"] == pytest.approx(held_loss_age(1.0, 1e-3, sig, N))


# ------------------------------------------------------------------------------------------------- energy
MC = {"k": 8, "n_heads": 2, "n_layers": 2, "ffn_hidden": 16, "vocab_size": 256}


def spec(**kw):
    from _energy_spec import make_spec

    base = dict(kind="kuramoto", layer_kind="kuramoto", n_layers=2, n_heads=2, head_dim=4, banks=2, taps=2, T=16,
                model_config=MC, f0_hz=1e9, p_osc_w=100e-6, p_coupler_w=20e-6, e_bit_write_j=10e-15,
                settle_cycles=4.0, read_cycles=4.0, coupler_bits=6, gain_bits=8, readout_bits=10,
                digital_precision="int8", array_area_mm2=1.0,
                diffusion_rad2_per_s=1e4, injection_s=20e-9, injection_driver_w=30e-6, sources={},
                freq_residual_rms=1e-4, write_rms_rad=0.05)
    base.update(kw)
    return make_spec(**base)


def test_held_keys_energy_by_hand():
    from mapping.energy import chip_energy_per_token

    L, T, k, banks = 2, 16, 8, 2
    m = (T + 1) / 2
    P, Pd, t_inj, t_win = 100e-6, 30e-6, 20e-9, 8e-9
    dt = 1e-6
    re = chip_energy_per_token(spec(), phase="decode")
    he = chip_energy_per_token(spec(held_keys=True, inter_token_s=dt), phase="decode")
    b = he["breakdown"]
    assert b["held_keys_j"] == pytest.approx(L * (banks * k * m * P * dt + banks * k * (P + Pd) * t_inj))
    assert b["oscillators_j"] == pytest.approx(L * banks * k * P * t_win)  # the receivers only
    assert b["injection_j"] == pytest.approx(L * banks * k * (P + Pd) * t_inj)
    assert re["breakdown"]["injection_j"] == pytest.approx(L * banks * k * m * (P + Pd) * t_inj)  # every key
    # one phase read per coordinate instead of m
    assert he["sram_breakdown_j"]["phases_in_j"] == pytest.approx(re["sram_breakdown_j"]["phases_in_j"] / m)
    # digital scores still read every stored key
    assert he["sram_breakdown_j"]["keys_j"] == pytest.approx(re["sram_breakdown_j"]["keys_j"])
    assert he["energy_per_token_chip_j"] == pytest.approx(sum(b.values()))
    assert "held_keys_j" in he["sources"] and "held_keys_j" not in re["breakdown"]
    # prefill is untouched by the decode keys
    assert chip_energy_per_token(spec(held_keys=True, inter_token_s=dt), phase="prefill") == \
        chip_energy_per_token(spec(), phase="prefill")


def test_held_keys_with_analog_scores_read_no_stored_key():
    from mapping.energy import chip_energy_per_token

    L, T, k = 2, 16, 8
    m = (T + 1) / 2
    re = chip_energy_per_token(spec(), phase="decode", analog_scores=True)
    he = chip_energy_per_token(spec(held_keys=True, inter_token_s=1e-6), phase="decode", analog_scores=True)
    assert he["sram_breakdown_j"]["keys_j"] == pytest.approx(re["sram_breakdown_j"]["keys_j"] / m)
    P, Pd = 100e-6, 30e-6
    # the rotated oscillators: one written per token (the new query), the m held through dt
    assert he["breakdown"]["score_oscillators_j"] == pytest.approx(L * k * ((P + Pd) * 20e-9 + P * 4e-9))
    assert he["breakdown"]["held_keys_j"] == pytest.approx(L * ((2 * k * m + k * m) * P * 1e-6 + 2 * k * (P + Pd)
                                                                * 20e-9))


def test_phase_memory_report_trade():
    from mapping.energy import chip_energy_per_token

    pm = chip_energy_per_token(spec(held_keys=True, inter_token_s=3e-7), phase="decode")["phase_memory"]
    banks, P = 2, 100e-6
    assert pm["held_j_per_key_token"] == pytest.approx(banks * P * 3e-7)
    assert pm["break_even_inter_token_s"] == pytest.approx(pm["reinjected_j_per_key_token"] / (banks * P))
    # decode latency: the schedule's decode pass (mapping.energy.latency), per layer at least the DAC settle
    # (8 bits), injection, window and one conversion
    t_dac = 9 * math.log(2) * 2e3 * 128 * 1e-15
    tl = chip_energy_per_token(spec(held_keys=True, inter_token_s=3e-7), phase="decode")["timeline_s"]
    assert pm["decode_latency_s"] == pytest.approx(tl["pass_s"]) and tl["tokens_per_pass"] == 1
    assert pm["decode_latency_s"] >= 2 * (t_dac + 20e-9 + 8e-9 + 10e-9)
    assert pm["feasible"] is True
    sig = math.sqrt(1e4 / 1e9)
    assert pm["loss_age_tokens"] == pytest.approx(held_loss_age(0.05, 1e-4, sig, 300.0))
    assert not chip_energy_per_token(spec(held_keys=True, inter_token_s=1e-9), phase="decode")["phase_memory"][
        "feasible"]
    assert "phase_memory" not in chip_energy_per_token(spec(), phase="prefill")


# --------------------------------------------------------------------------------------------- the mode
def test_the_decode_section_is_a_mode_class():
    from mapping.config import HeldKeys, ReinjectedKeys, config_from_dict

    assert isinstance(config_from_dict({}).decode, ReinjectedKeys)
    assert config_from_dict({"decode": {"keys": "held", "inter_token_s": 2e-7}}).decode == HeldKeys(inter_token_s=2e-7)
    with pytest.raises(ValueError, match=r"decode.inter_token_s belong\(s\) to \[decode\] keys = 'held'"):
        config_from_dict({"decode": {"inter_token_s": 1e-7}})
    with pytest.raises(ValueError, match=r"decode.inter_token_s must be in \(0, 1\]"):
        HeldKeys(inter_token_s=2.0)
    with pytest.raises(ValueError, match="decode.keys must be one of reinjected, held"):
        config_from_dict({"decode": {"keys": "cached"}})
