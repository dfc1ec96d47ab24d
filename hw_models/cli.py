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
    p.add_argument("--preset", default=None, help="preset name (ring: cmos_65nm; stno: vortex; ideal: default)")
    p.add_argument("--stages", type=int_range(3), default=5, help="ring stages (odd, >= 3)")
    p.add_argument("--offset-hz", type=float_range(0, lo_open=True), default=1e6,
                   help="offset for the phase-noise figure [Hz], > 0")
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
           "phase_noise_dbc_hz": float(itf.phase_noise_dbc_hz(params, args.offset_hz))}
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
