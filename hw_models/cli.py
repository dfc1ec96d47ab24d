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
                   help="device temperature [K]: every figure of the report and the plots is at this temperature")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--plot", default=None, metavar="DIR", help="save waveform and phase-noise plots in DIR")
    p.set_defaults(func=run)


def _preset(kind, name, stages):
    """(resolved preset name, its params at TNOM)."""
    from hw_models.presets import PRESETS

    names = PRESETS[kind]
    name = name or next(iter(names))
    if name not in names:
        raise ValueError(f"unknown {kind} preset {name!r}; valid: {sorted(names)}")
    return name, (names[name](n_stages=stages) if kind == "ring" else names[name]())


PN_OFFSETS_HZ = (1e4, 1e5, 1e6)
"""Offsets of the ``phase_noise_dbc_hz`` table [Hz] (issue 11 item 6)."""


def operating_point(kind: str, params, temperature_k: float):
    """The device at ``temperature_k``: every figure of the report comes from this one object.

    Ring: the circuit with KP and V_TO at T by ngspice's level-1 law and its thermal noise at T
    (:func:`hw_models.pvt.ring_at_temperature`), so f₀, the PPV, D, power and amplitude all belong to T.
    Spin-torque: the preset at T (only the thermal noise depends on T: no cited temperature coefficient of
    the universal model's parameters). Ideal: the preset (D scaled ∝ T by the device model, assumed).
    """
    from hw_models.devices import device_for

    if kind == "ring":
        from hw_models.pvt import ring_at_temperature

        return device_for(ring_at_temperature(params, temperature_k))
    if kind == "stno":
        return device_for(params.replace(temperature_k=float(temperature_k)))
    return device_for(params)


def phase_noise(kind: str, dev, temperature_k: float, offset_hz, *, flicker: bool = True) -> np.ndarray:
    """L(f_m) [dBc/Hz] of the device ``dev`` (from :func:`operating_point`) at offsets ``offset_hz``: the
    thermal diffusion's Lorentzian line (Demir 2000) plus, for rings and ``flicker``, the 1/f³ part of the
    flicker current noise through the PPV's cycle average (:mod:`hw_models.flicker`, corner assumed 1 MHz)."""
    from hw_models.flicker import cmos_65nm_flicker, phase_noise_dbc_hz, ring_flicker_coefficient

    A = 0.0
    if kind == "ring" and flicker:
        A = ring_flicker_coefficient(dev.params, cmos_65nm_flicker())["A_rad2_per_s2"]
    return phase_noise_dbc_hz(dev.diffusion(temperature_k), offset_hz, A, lorentzian=True)


def device_report(kind: str, params, temperature_k: float, offset_hz: float = 1e6, *, preset: str = "custom") -> dict:
    """Every figure of ``oscsim device`` at one operating point (``temperature_k``): see :func:`operating_point`.

    Returns
    -------
    dict
        ``frequency_hz`` (= ``f0_hz``), ``power_w``, ``energy_per_cycle_j``, ``phase_diffusion_rad2_per_s``,
        ``linewidth_fwhm_hz`` (D/2π), ``phase_noise_at_offset_dbc_hz`` and the ``phase_noise_dbc_hz`` table
        (one function), drift slopes at T, the kind's amplitude figure and ``realism_models`` (which models).
    """
    T = float(temperature_k)
    dev = operating_point(kind, params, T)
    f0 = dev.frequency()
    D = dev.diffusion(T)
    offs = np.array(PN_OFFSETS_HZ)
    out = {"kind": kind, "preset": preset, "temperature_k": T, "frequency_hz": f0, "f0_hz": f0,
           "power_w": dev.power(), "energy_per_cycle_j": dev.power() / f0, "phase_diffusion_rad2_per_s": D,
           "linewidth_fwhm_hz": D / (2 * math.pi), "phase_noise_offset_hz": float(offset_hz),
           "phase_noise_at_offset_dbc_hz": float(phase_noise(kind, dev, T, offset_hz)),
           "phase_noise_dbc_hz": dict(zip([f"{int(f)}" for f in PN_OFFSETS_HZ],
                                          map(float, phase_noise(kind, dev, T, offs))))}
    if kind == "ring":
        from hw_models import pvt
        from hw_models.flicker import cmos_65nm_flicker, ring_flicker_coefficient

        fl = cmos_65nm_flicker()
        lc = dev.limit_cycle()
        out.update({
            "df0_dT_hz_per_k": pvt.ring_df0_dT(params, T), "df0_dvdd_hz_per_v": pvt.ring_df0_dvdd(params, T),
            "k_vt_v_per_k": pvt.vt_temperature_coefficient(params, T), "flicker_corner_hz": fl.corner_hz,
            "phase_noise_1_f3_corner_hz": ring_flicker_coefficient(dev.params, fl)["corner_1_f3_hz"],
            "amplitude_v_pp": float(lc.x[:, 0].max() - lc.x[:, 0].min()),
            "realism_models": "every figure at T: the circuit with ngspice's level-1 temperature law (hw_models.pvt) "
                              "and thermal noise at T; f0, power and amplitude from its limit cycle; phase noise: ISF "
                              "diffusion + flicker through the PPV's cycle average (hw_models.flicker, corner assumed "
                              "1 MHz)",
        })
    elif kind == "stno":
        from hw_models.pvt import stno_df0_dT
        from hw_models.stno import stno_power_p0, stno_relaxation_rate

        p0 = stno_power_p0(dev.params)
        out.update({
            "df0_dT_hz_per_k": 0.0, "df0_dvdd_hz_per_v": None, "flicker_corner_hz": None,
            "amplitude_relaxation_s": 1.0 / stno_relaxation_rate(dev.params), "power_p0": p0,
            "amplitude_sqrt_p0": math.sqrt(p0),
            "realism_models": f"df0/dT {stno_df0_dT(dev.params)['note']}; current-biased (no supply voltage: df0/dVDD "
                              "undefined); flicker not modelled; phase noise: the thermal diffusion's Lorentzian",
        })
    else:
        out.update({"df0_dT_hz_per_k": 0.0, "df0_dvdd_hz_per_v": None, "flicker_corner_hz": None, "amplitude": 1.0,
                    "realism_models": "ideal oscillator: no temperature, supply or flicker dependence of f0; its "
                                      "diffusion is the preset's at 300 K scaled with T (assumed)"})
    return out


def run(args: argparse.Namespace) -> int:
    name, params = _preset(args.kind, args.preset, args.stages)
    T = float(args.temperature)
    out = device_report(args.kind, params, T, args.offset_hz, preset=name)
    if args.plot:
        out["plots"] = [str(p) for p in device_plots(args.kind, params, T, args.plot, preset=name)]
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, val in out.items():
            print(f"{k:28s} {val}")
    return 0


def device_plots(kind: str, params, temperature_k: float, plot_dir, *, preset: str = "custom") -> list:
    """The waveform and the phase noise L(f_m) of the device at ``temperature_k`` (the operating point of
    :func:`device_report`), saved as PNG in ``plot_dir``. Returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from oscsim import plotting

    T = float(temperature_k)
    dev = operating_point(kind, params, T)
    f0 = dev.frequency()
    os.makedirs(plot_dir, exist_ok=True)
    where = f"{kind} {preset}, {T:g} K"
    if kind == "ring":
        lc = dev.limit_cycle()
        t, v, ylab = lc.theta / (2 * math.pi * f0), lc.x, "node voltage [V]"
        names = [f"node {k}" for k in range(v.shape[1])]
    elif kind == "stno":
        from hw_models.stno import simulate_stno

        sol = simulate_stno(dev.params, 3 / f0, save_every=1)
        t, v, ylab = np.asarray(sol.ts), np.asarray(sol.ys)[:, 0, :].real, "Re c, complex amplitude [1]"
        names = None
    else:
        t = np.linspace(0, 3 / f0, 300)
        v, ylab, names = np.sin(2 * math.pi * f0 * t)[:, None], "signal [rel.]", None
    ft, tu = plotting.si_scale(t, "s")
    fig, ax = plotting.figure(width=5.6, height=3.2)
    for k in range(v.shape[1]):
        ax.plot(np.asarray(t) * ft, v[:, k], lw=1.2, label=names[k] if names else "_")
    ax.set_xlabel(f"time [{tu}]")
    ax.set_ylabel(ylab)
    ff, fu = plotting.si_scale([f0], "Hz")
    ax.set_title(f"waveform, {where}: f0 = {f0 * ff:.4g} {fu}")
    if names:
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    wf = plotting.save(fig, os.path.join(plot_dir, f"{kind}_waveform"))[0]
    plt.close(fig)
    fm = np.logspace(3, 9, 200)
    fig, ax = plotting.figure(width=5.6, height=3.6)
    ax.semilogx(fm, phase_noise(kind, dev, T, fm), lw=1.6, label="thermal + flicker" if kind == "ring" else "thermal")
    if kind == "ring":
        ax.semilogx(fm, phase_noise(kind, dev, T, fm, flicker=False), "--", lw=1.2, label="thermal only")
    pts = np.array(PN_OFFSETS_HZ)
    ax.plot(pts, phase_noise(kind, dev, T, pts), "o", color="k", ms=4, label="table of --json")
    plotting.log_ticks(ax, "x")
    ax.set_xlabel("offset f_m [Hz]")
    ax.set_ylabel("L(f_m) [dBc/Hz]")
    ax.set_title(f"phase noise, {where}")
    ax.legend()
    pn = plotting.save(fig, os.path.join(plot_dir, f"{kind}_phase_noise"))[0]
    plt.close(fig)
    return [wf, pn]
