"""``oscsim device {ring,stno,ideal} --preset NAME [--json] [--plot DIR]``."""

from __future__ import annotations

import argparse
import json
import math
import os

import numpy as np

from oscsim.cli import float_range, int_range

__all__ = ["register", "run"]


def register(subparsers) -> None:
    p = subparsers.add_parser("device", help="device figures: frequency, amplitude, power, energy, phase noise")
    p.add_argument("kind", choices=["ring", "stno", "ideal"], help="device kind")
    p.add_argument("--preset", default=None, help="preset name (default: the kind's first preset, ring cmos_65nm, stno vortex, "
                   "ideal default)")
    p.add_argument("--stages", type=int_range(3), default=5, help="ring stages (odd, >= 3)")
    p.add_argument("--offset-hz", type=float_range(0, lo_open=True), default=1e6,
                   help="offset for the phase-noise figure [Hz], > 0")
    p.add_argument("--temperature", type=float_range(1, 1000), default=300.0,
                   help="device temperature [K] for f0_hz, the drift slopes and the phase noise")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--plot", default=None, metavar="DIR", help="save waveform and phase-noise plots in DIR")
    p.set_defaults(func=run)


def _preset(kind, name, stages):
    from hw_models.presets import PRESETS

    names = PRESETS[kind]
    name = name or next(iter(names))
    if name not in names:
        raise ValueError(f"unknown {kind} preset {name!r}; valid: {sorted(names)}")
    return names[name](n_stages=stages) if kind == "ring" else names[name]()


def run(args: argparse.Namespace) -> int:
    from hw_models import interface as itf

    params = _preset(args.kind, args.preset, args.stages)
    f0 = itf.free_running_frequency(params)
    D = itf.phase_diffusion(params)
    out = {"kind": args.kind, "preset": args.preset or "default", "frequency_hz": f0,
           "power_w": itf.power(params), "energy_per_cycle_j": itf.energy_per_cycle(params),
           "phase_diffusion_rad2_per_s": D, "linewidth_fwhm_hz": D / (2 * math.pi),
           "phase_noise_offset_hz": args.offset_hz,
           "phase_noise_at_offset_dbc_hz": float(itf.phase_noise_dbc_hz(params, args.offset_hz))}
    out.update(_realism_figures(args.kind, params, float(args.temperature)))
    t = v = None
    if args.kind == "ring":
        from hw_models.ring_macro import limit_cycle

        lc = limit_cycle(params)
        out["amplitude_v_pp"] = float(lc.x[:, 0].max() - lc.x[:, 0].min())
        t, v = lc.theta / lc.omega, lc.x
    elif args.kind == "stno":
        from hw_models.stno import simulate_stno, stno_power_p0

        out["power_p0"] = stno_power_p0(params)
        out["amplitude_sqrt_p0"] = math.sqrt(stno_power_p0(params))
        if args.plot:
            sol = simulate_stno(params, 20 / f0, save_every=1)
            t, v = sol.ts, sol.ys[:, 0, :].real
    else:
        out["amplitude"] = 1.0
        t = np.linspace(0, 3 / f0, 300)
        v = np.sin(2 * math.pi * f0 * t)[:, None]
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        os.makedirs(args.plot, exist_ok=True)
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.plot(np.asarray(t) * 1e9, v)
        ax.set_xlabel("t [ns]")
        ax.set_ylabel("V [V]" if args.kind == "ring" else "Re c")
        ax.set_title(f"{args.kind} waveform")
        fig.tight_layout()
        wf = os.path.join(args.plot, f"{args.kind}_waveform.png")
        fig.savefig(wf, dpi=120)
        plt.close(fig)
        fm = np.logspace(3, 9, 200)
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.semilogx(fm, itf.phase_noise_dbc_hz(params, fm))
        ax.set_xlabel("offset f_m [Hz]")
        ax.set_ylabel("L(f_m) [dBc/Hz]")
        fig.tight_layout()
        pn = os.path.join(args.plot, f"{args.kind}_phase_noise.png")
        fig.savefig(pn, dpi=120)
        plt.close(fig)
        out["plots"] = [wf, pn]
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, val in out.items():
            print(f"{k:28s} {val}")
    return 0


PN_OFFSETS_HZ = (1e4, 1e5, 1e6)
"""Offsets of the ``phase_noise_dbc_hz`` table [Hz] (issue 11 item 6)."""


def _realism_figures(kind: str, params, temperature_k: float) -> dict:
    """PVT, flicker and amplitude figures at ``temperature_k`` (hw_models.pvt, hw_models.flicker, hw_models.stno)."""
    out = {"temperature_k": temperature_k}
    offs = np.array(PN_OFFSETS_HZ)
    key = [f"{int(f)}" for f in PN_OFFSETS_HZ]
    if kind == "ring":
        from hw_models import pvt
        from hw_models.flicker import cmos_65nm_flicker, phase_noise_dbc_hz, ring_flicker_coefficient

        rT = pvt.ring_at_temperature(params, temperature_k)
        fl = cmos_65nm_flicker()
        c = ring_flicker_coefficient(rT, fl)
        out.update({
            "f0_hz": pvt.ring_f0_hz(params, temperature_k),
            "df0_dT_hz_per_k": pvt.ring_df0_dT(params, temperature_k),
            "df0_dvdd_hz_per_v": pvt.ring_df0_dvdd(params, temperature_k),
            "k_vt_v_per_k": pvt.vt_temperature_coefficient(params, temperature_k),
            "flicker_corner_hz": fl.corner_hz, "phase_noise_1_f3_corner_hz": c["corner_1_f3_hz"],
            "phase_noise_dbc_hz": dict(zip(key, map(float, phase_noise_dbc_hz(c["diffusion_rad2_per_s"], offs,
                                                                                   c["A_rad2_per_s2"], lorentzian=True)))),
            "realism_models": "f0(T): circuit limit cycle with ngspice's level-1 temperature law (hw_models.pvt); "
                              "phase noise: ISF diffusion + flicker through the PPV's cycle average (hw_models.flicker, "
                              "corner assumed 1 MHz)",
        })
    elif kind == "stno":
        from hw_models.flicker import phase_noise_dbc_hz
        from hw_models.pvt import stno_df0_dT
        from hw_models.stno import stno_diffusion, stno_frequency_hz, stno_relaxation_rate

        pT = params.replace(temperature_k=temperature_k)
        out.update({
            "f0_hz": stno_frequency_hz(pT), "df0_dT_hz_per_k": 0.0, "df0_dvdd_hz_per_v": None,
            "flicker_corner_hz": None, "amplitude_relaxation_s": 1.0 / stno_relaxation_rate(pT),
            "phase_noise_dbc_hz": dict(zip(key, map(float, phase_noise_dbc_hz(stno_diffusion(pT), offs, lorentzian=True)))),
            "realism_models": f"df0/dT {stno_df0_dT(pT)['note']}; current-biased (no supply voltage: df0/dVDD "
                              "undefined); flicker not modelled; phase noise: the thermal diffusion's Lorentzian",
        })
    else:
        from hw_models.flicker import phase_noise_dbc_hz

        D = float(params.diffusion_rad2_per_s)
        out.update({"f0_hz": float(params.f0_hz), "df0_dT_hz_per_k": 0.0, "df0_dvdd_hz_per_v": None,
                    "flicker_corner_hz": None,
                    "phase_noise_dbc_hz": (dict(zip(key, map(float, phase_noise_dbc_hz(D, offs, lorentzian=True)))) if D > 0
                                           else None),
                    "realism_models": "ideal oscillator: no temperature, supply or flicker dependence"})
    return out
