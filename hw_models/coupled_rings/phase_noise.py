"""Phase-noise spectrum of free-running rings simulated at circuit level against the macromodel's prediction."""

from __future__ import annotations

import math

import numpy as np

from hw_models.coupled_rings.device import CircuitDevice
from hw_models.coupled_rings.head import build_head
from hw_models.coupled_rings.integrate import crossings, integrate_networks
from hw_models.coupled_rings.readout import flicker_start
from hw_models.streams import stream_seeds

__all__ = ["ring_phase_noise"]


def ring_phase_noise(dev: CircuitDevice, flicker=None, *, n_cycles: int = 16384, n_rings: int = 8,
                     steps_per_period: int = 50, piece_cycles: int = 256, nperseg: int = 8192,
                     seed: int = 0) -> dict:
    """Phase-noise spectrum of free-running nominal rings simulated at circuit level, and the macromodel's.

    ``n_rings`` independent rings (white thermal node noise and, with ``flicker``, the OU bank of 1/f current
    noise at every node, :func:`build_head`) run for ``n_cycles`` cycles with stochastic Heun at
    T/``steps_per_period`` (in pieces of ``piece_cycles``, each piece its own keyed noise). The phase is sampled
    once per cycle at the rising V_DD/2 crossings of node 0, φ_k = 2π (t_k/T̄ − k); Welch's method (segments
    of ``nperseg`` cycles, linear detrend, averaged over the rings) gives S_φ(f) and L(f) = S_φ/2.

    The macromodel's prediction (Demir's PPV phase diffusion and Hajimiri–Lee's Γ_dc conversion of slow
    current noise; :mod:`hw_models.flicker`) with the same bank:

        L(f) = D/(4π² f²) + S_δω(f)/(8π² f²),  D = Σ_k ⟨v_k²⟩ S_w/(2C²),  S_δω(f) = Σ_k (v̄_k/C)² S_bank(f),

    S_bank the bank's own (band-limited) PSD, which is S_w f_c/f inside its band.

    Returns
    -------
    dict with ``f_hz`` (F,), ``L_dbc_hz`` (F,) simulated, ``L_macromodel_dbc_hz`` (F,), ``L_white_dbc_hz``
    (F,) (the white part of the prediction), ``diffusion_rad2_per_s`` (D), ``n_segments`` (segments averaged),
    ``period_s`` (mean simulated period), ``wall_s``.
    """
    import time

    from scipy.signal import welch

    t_start = time.perf_counter()
    ring = dev.ring
    n = ring.n_stages
    G = int(n_rings)
    head = build_head(dev, np.zeros((G, 1)), np.zeros((G, 1, 1)), steps_per_period=steps_per_period,
                      stochastic=True, noise=True, flicker=flicker)
    dt = dev.period_s / int(steps_per_period)
    y = head.y0
    sig = head.sigma
    if head.flicker is not None:
        y = np.concatenate([y, flicker_start(head, stream_seeds(seed, 0, np.arange(G)))], axis=1)
        sig = np.concatenate([sig, np.tile(head.flicker_sigma, n)[None, :].repeat(G, 0)], axis=1)
    n_pieces = int(math.ceil(n_cycles / piece_cycles))
    t1 = piece_cycles * dev.period_s
    wav = []
    for k in range(n_pieces):
        ts, v = integrate_networks(head.params, y, sig, t1, dt, stream_seeds(seed, 1 + k, np.arange(G)), True,
                           save_every=1, keep=np.arange(y.shape[1]))
        y = v[-1]
        wav.append(v[(1 if k else 0):, :, 0])
    v0 = np.concatenate(wav)
    tt = np.arange(v0.shape[0]) * (t1 / (ts.size - 1))
    _, ri, tc = crossings(tt, v0, 0.5 * ring.vdd_v)
    fs, Ss, per = [], [], []
    n_seg = 0
    for g in range(G):
        tk = np.sort(tc[ri == g])[4:]  # the first cycles: the start state relaxes onto the noisy cycle
        T_bar = (tk[-1] - tk[0]) / (len(tk) - 1)
        phi = 2 * math.pi * (tk / T_bar - np.arange(len(tk)))
        f, S = welch(phi, fs=1.0 / T_bar, nperseg=int(nperseg), detrend="linear")
        fs.append(f)
        Ss.append(S)
        per.append(T_bar)
        n_seg += max(1, 2 * (len(phi) - int(nperseg)) // int(nperseg) + 1)
    m = min(len(S) for S in Ss)
    f = np.mean([x[:m] for x in fs], axis=0)[1:]
    S = np.mean([x[:m] for x in Ss], axis=0)[1:]
    from hw_models.ring_macro import limit_cycle

    lc = limit_cycle(ring)
    sw = dev.s_i_a2_per_hz
    D = float(np.sum((lc.ppv**2).mean(axis=0)) * sw / (2 * ring.c_load_f**2))
    white = D / (4 * math.pi**2 * f**2)
    fl_part = np.zeros_like(f)
    if head.flicker is not None:
        vbar = lc.ppv.mean(axis=0)
        fl_part = float(np.sum(vbar**2)) / ring.c_load_f**2 * head.flicker.psd(f, sw) / (8 * math.pi**2 * f**2)
    return {"f_hz": f, "L_dbc_hz": 10 * np.log10(S / 2), "L_macromodel_dbc_hz": 10 * np.log10(white + fl_part),
            "L_white_dbc_hz": 10 * np.log10(white), "diffusion_rad2_per_s": D, "n_segments": n_seg,
            "period_s": float(np.mean(per)), "wall_s": time.perf_counter() - t_start}
