"""The decode pass on the phase macromodel (mapping.backends.decode): its receiver integrator against the NumPy
reference of the full decode-step network, the first-order limit, held keys' error against its first-order
prediction, one seed one answer, and the chip-level choice (energy.phase = 'decode', refusals)."""

import math

import numpy as np
import pytest
import torch

from mapping import ChipConfig, Quantiser, closed_form_increment, compile, relative_error
from mapping.backends.base import KuramotoInputs
from mapping.backends.decode import DecodeSettings, decode_step, integrate_receivers
from mapping.backends.phase import PhaseSettings
from mapping.backends.phase_memory import HeldMemory, Reinjection
from mapping.config import EnergyConfig, HeldKeys, MultiplexedArray, SpatialArray
from mapping.seeds import LayerSeeds
from test_mapping_kuramoto import _layer as _kuramoto_layer

ANALOG = Quantiser(bits=None, range=1e6)
ANALOG_S = Quantiser(bits=None, range=1e6, signed=True)
RING_H = np.array([[1.0, 0.0], [0.037, -0.027], [-0.0046, 0.002]])  # a ring's harmonics (a_m, b_m)


def _reference(psi, C, eps, sig, y0, t1, n, h, dW, dW_src):
    """The full decode-step network of every receiver (one group per (network, receiver t), its sources
    uncoupled, only row t coupled) on oscsim.reference.simulate_numpy, with the same Brownian increments."""
    from oscsim.engine import PhaseNetwork
    from oscsim.reference import simulate_numpy

    G, T = y0.shape
    y, om, cp, sg, dw = [], [], [], [], []
    for g in range(G):
        for t in range(T):
            start = psi[g, t].copy()
            start[t] = y0[g, t]
            c = np.zeros((T, T))
            c[t] = C[g, t]
            y.append(start), om.append(eps[g]), cp.append(c), sg.append(sig[g])
            d = dW_src[:, g].copy()
            d[:, t] = dW[:, g, t]
            dw.append(d)
    net = PhaseNetwork(np.array(om), np.array(cp), harmonics=h, sigma=np.array(sg))
    ys = simulate_numpy(net, "stochastic_heun", 0.0, t1 / n, n, np.array(y), dW=np.stack(dw, axis=1))
    return ys[-1].reshape(G, T, T)[:, np.arange(T), np.arange(T)]


def test_receiver_integrator_matches_the_reference_network():
    rng = np.random.default_rng(0)
    G, T, n, t1 = 3, 7, 16, 4.0
    psi = rng.uniform(-np.pi, np.pi, (G, T, T))
    C = 0.3 * np.tril(rng.uniform(0, 1, (G, T, T)), -1)
    eps = 0.01 * rng.standard_normal((G, T))
    sig = np.full((G, T), 0.05)
    y0 = rng.uniform(-np.pi, np.pi, (G, T))
    dt = t1 / n
    dW, dW_src = rng.standard_normal((2, n, G, T)) * math.sqrt(dt)
    ours = integrate_receivers(psi, C, eps, sig, y0, t1=t1, n_steps=n, harmonics=RING_H, dW=dW, dW_src=dW_src)
    ref = _reference(psi, C, eps, sig, y0, t1, n, RING_H, dW, dW_src)
    print(f"max |receiver - reference| {np.abs(ours - ref).max():.2e} rad")
    assert np.allclose(ours, ref, rtol=0, atol=1e-12)


def _layer(B=2, T=16, k=8, h=2, seed=0):
    """Phases, causal softmax weights and values of a random layer (the Kuramoto tests' layer, without its
    closed-form increment)."""
    return _kuramoto_layer(B=B, T=T, k=k, h=h, seed=seed)[:3]


def _settings(kt, keys=None, **kw):
    kappa = 2 * math.pi * 0.01
    ps = PhaseSettings(n_heads=2, kappa=kappa, settle_cycles=kt / kappa, n_steps=kw.pop("n_steps", 32),
                       coupling_q=ANALOG, gain_q=ANALOG_S, **kw)
    return DecodeSettings(phase=ps, keys=Reinjection() if keys is None else keys)


def test_decode_pass_is_first_order_exact():
    """Ideal decode: the increment error shrinks linearly with κτ_s (fitted slope 1 ± 0.1), like prefill's."""
    th, A, v = _layer()
    a = closed_form_increment(th, A, 2)
    kts = np.array([0.4, 0.2, 0.1, 0.05, 0.025])
    err = [relative_error(decode_step(_settings(kt), KuramotoInputs.of(th, A, v), LayerSeeds(0)).va, v * a)
           for kt in kts]
    slope = np.polyfit(np.log(kts), np.log(err), 1)[0]
    print(f"decode first-order slope {slope:.3f}, errors {np.round(err, 5)}")
    assert abs(slope - 1) < 0.1 and err[-1] < 0.01


def test_held_key_error_enters_as_the_coupling_function_predicts():
    """Held keys with a known drift (residual only, no noise): the increment moves from the re-injected one by
    g_t Σ_u A_tu [sin(θ_u + E_u(t − u) − θ_t) − sin(θ_u − θ_t)], up to O(κτ_s)."""
    th, A, v = _layer(B=1)
    T, kh = 16, 4
    rng = np.random.default_rng(1)
    eps = 2e-4 * rng.standard_normal((2, 2, kh, T))  # (banks, h, kh, T) rad/cycle
    N = 300.0  # cycles per token: E up to ε N 15 ≈ 1 rad
    kt = 0.01
    inp = KuramotoInputs.of(th, A, v)
    re = decode_step(_settings(kt, freq_residual=eps), inp, LayerSeeds(0))
    he = decode_step(_settings(kt, HeldMemory(cycles_per_token=N), freq_residual=eps), inp, LayerSeeds(0))
    t_idx, u_idx = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    age = np.clip(t_idx - u_idx, 0, None)
    thh = th[0].reshape(T, 2, kh).transpose(1, 2, 0)  # (h, kh, T)
    E = eps[0][..., u_idx] * N * age  # (h, kh, t, u): the gain bank's keys
    d0 = thh[..., None, :] - thh[..., :, None]  # θ_u − θ_t at [t, u]
    Al = np.tril(A[0], -1)[:, None]  # no self-coupler
    pred = np.einsum("hjtu,hjtu->hjt", Al * np.ones_like(E), np.sin(d0 + E) - np.sin(d0))
    pred = (pred * v[0].reshape(T, 2, kh).transpose(1, 2, 0)).transpose(2, 0, 1).reshape(T, -1)
    got = (he.va - re.va)[0]
    rel = np.abs(got - pred).max() / np.abs(pred).max()
    print(f"held-key shift: max |pred| {np.abs(pred).max():.3f}, relative deviation {rel:.3g}")
    assert np.abs(pred).max() > 0.1 and rel < 0.05


def test_decode_same_seed_same_numbers_in_any_batch():
    th, A, v = _layer(B=3)
    s = _settings(0.25, HeldMemory(cycles_per_token=100.0), sigma=0.01,
                  freq_residual=1e-4 * np.ones((2, 2, 4, 16)))
    whole = decode_step(s, KuramotoInputs.of(th, A, v), LayerSeeds(5, np.array([4, 5, 6])))
    alone = decode_step(s, KuramotoInputs.of(th[2:], A[2:], v[2:]), LayerSeeds(5, np.array([6])))
    assert np.array_equal(whole.va[2], alone.va[0]) and np.array_equal(whole.a[2], alone.a[0])


# ----------------------------------------------------------------------------------------- on a chip
@pytest.fixture(scope="module")
def tiny():
    from _chips import seeded_kuramoto

    return seeded_kuramoto(vocab_size=32, seq_len=16, n_heads=2, n_layers=2, k=8, ffn_hidden=16)


def _tokens(B=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 32, (B, 16), generator=g), torch.randint(0, 32, (B, 16), generator=g)


def test_decode_chip_runs_the_decode_pass_and_reports_it(tiny):
    from mapping.backends import backend_for
    from mapping.simulation import simulate_report

    x, y = _tokens()
    ideal = ChipConfig.ideal(energy=EnergyConfig(phase="decode"), array=SpatialArray())  # held keys: own tiles
    chip = compile(tiny, ideal)
    assert backend_for(chip, 0).name == "phase macromodel (decode)"
    rep = simulate_report(chip, x, y, measure_gpu=False, warn=False)
    assert rep.simulated_pass == "decode" and rep.decode_keys == "reinjected"
    assert abs(rep.bpc_difference) < 0.01  # the ideal limit (κτ_s = 0.01)
    pre = simulate_report(compile(tiny, ChipConfig.ideal()), x, y, measure_gpu=False, energy=False, warn=False)
    assert pre.simulated_pass == "prefill"
    # held keys on an ideal chip (no drift, no diffusion) are the re-injected keys
    held = compile(tiny, ideal.replace(decode=HeldKeys(inter_token_s=1e-6)))
    rh = simulate_report(held, x, y, measure_gpu=False, warn=False)
    assert rh.bpc_chip == pytest.approx(rep.bpc_chip, abs=1e-9)
    assert rh.to_dict()["phase_memory"]["keys"] == "held"


def test_held_keys_degrade_a_drifting_chip(tiny):
    from mapping.simulation import simulate_report

    x, y = _tokens(B=2, seed=3)
    base = ChipConfig(energy=EnergyConfig(phase="decode"), array=SpatialArray())
    r_re = simulate_report(compile(tiny, base), x, y, measure_gpu=False, warn=False)
    with pytest.warns(UserWarning, match="held key phases"):
        r_he = simulate_report(compile(tiny, base.replace(decode=HeldKeys(inter_token_s=1e-6))), x, y,
                               measure_gpu=False, warn=False)
    print(f"decode BPC: re-injected {r_re.bpc_chip:.4f}, held {r_he.bpc_chip:.4f}")
    assert r_he.bpc_chip > r_re.bpc_chip
    assert r_he.energy["breakdown"]["held_keys_j"] > 0


def test_decode_rates_the_chip_cannot_reach_are_refused_before_the_run(tiny):
    from mapping.simulation import simulate_report

    x, y = _tokens()
    chip = compile(tiny, ChipConfig(energy=EnergyConfig(phase="decode"), decode=HeldKeys(inter_token_s=1e-9),
                                    array=SpatialArray()))
    with pytest.raises(ValueError, match="shorter than the chip's decode latency"):
        simulate_report(chip, x, y, measure_gpu=False)


def lay_units(model) -> int:
    """Units (bank x head x coordinate networks) of every layer of a Kuramoto model: 2 banks."""
    c = model.config
    return c.n_layers * 2 * c.k


def test_held_keys_are_refused_where_they_would_not_act(tiny):
    from oscsim.nn.osn import OSNConfig, OSNModel

    with pytest.raises(ValueError, match="held keys act in decode only"):
        compile(tiny, ChipConfig(decode=HeldKeys()))
    with pytest.raises(ValueError, match="no backend of the 'ring-circuit' device simulates the decode pass"):
        compile(tiny, ChipConfig(device="ring-circuit", energy=EnergyConfig(phase="decode"), decode=HeldKeys()))
    # a tile that serves other units in turn cannot hold its keys' phases
    with pytest.raises(ValueError, match="runs up to 4 units on one tile in turn"):
        compile(tiny, ChipConfig(energy=EnergyConfig(phase="decode"), decode=HeldKeys(),
                                 array=MultiplexedArray(tiles=lay_units(tiny) // 4)))
    ssa = OSNModel(OSNConfig(d_model=16, n_heads=2, n_layers=1, seq_len=8, frequency="scalar"))
    with pytest.raises(ValueError, match="SSA cells start free-running and hold no token phases"):
        compile(ssa, ChipConfig(energy=EnergyConfig(phase="decode"), decode=HeldKeys()))


def test_chip_file_keeps_the_modes(tiny, tmp_path):
    from mapping import load_chip
    from mapping.config import AnalogScores

    cfg = ChipConfig(energy=EnergyConfig(phase="decode"), decode=HeldKeys(inter_token_s=3e-7),
                     scores=AnalogScores(bits=9), array=SpatialArray())
    chip = compile(tiny, cfg)
    back = load_chip(chip.save(tmp_path / "chip.json"), model=tiny)
    assert back.config == cfg
