"""``oscsim device {ring,stno,ideal} --preset NAME [--json] [--plot DIR]``: every figure asked of the device
object (:mod:`hw_models.devices`), none by its kind."""

from __future__ import annotations

import argparse
import json
import math
import os

import numpy as np

from oscsim.cli import float_range, int_range

__all__ = ["register", "run"]


def register(subparsers) -> None:
    p = subparsers.add_parser("device", help="device figures: frequency, amplitude, power, energy, phase noise",
                              description="The figures of one oscillator device at a temperature: frequency, "
                                          "amplitude, power, energy per cycle, phase diffusion and phase noise at "
                                          "standard offsets (the table of --json), from the device models of "
                                          "hw_models (docs/devices.md); with --plot, its waveform and phase-noise "
                                          "plots. KIND is a registered device kind with presets (hw_models.presets).")
    p.add_argument("kind", help="device kind: ring, stno, ideal (or a registered one with a preset)")
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
    """(resolved preset name, its params at TNOM); ``stages`` goes to a preset that takes ``n_stages``."""
    import inspect

    from hw_models.presets import PRESETS

    if kind not in PRESETS:
        raise ValueError(f"kind must be one of {', '.join(PRESETS)}, got {kind!r}")
    names = PRESETS[kind]
    name = name or next(iter(names))
    if name not in names:
        raise ValueError(f"unknown {kind} preset {name!r}; valid: {sorted(names)}")
    fn = names[name]
    return name, (fn(n_stages=stages) if "n_stages" in inspect.signature(fn).parameters else fn())


PN_OFFSETS_HZ = (1e4, 1e5, 1e6)
"""Offsets of the ``phase_noise_dbc_hz`` table [Hz] (issue 11 item 6)."""


def operating_point(params, temperature_k: float):
    """The device at ``temperature_k`` (:meth:`hw_models.devices.Oscillator.at_temperature`): every figure of the
    report comes from this one object (ring: the circuit at T by ngspice's level-1 law; spin-torque: the preset
    at T, only its thermal noise depends on T; ideal: the preset, D scaled ∝ T by the device model, assumed)."""
    from hw_models.devices import device_for

    return device_for(params).at_temperature(float(temperature_k))


def phase_noise(dev, temperature_k: float, offset_hz, *, flicker: bool = True) -> np.ndarray:
    """L(f_m) [dBc/Hz] of the device ``dev`` (from :func:`operating_point`) at offsets ``offset_hz``: the
    thermal diffusion's Lorentzian line (Demir 2000) plus, with ``flicker``, the 1/f³ part of the flicker
    current noise where the device models it (:meth:`~hw_models.devices.Oscillator.flicker_phase_coefficient`:
    a ring's through the PPV's cycle average, :mod:`hw_models.flicker`, corner assumed 1 MHz)."""
    from hw_models.flicker import phase_noise_dbc_hz

    A = dev.flicker_phase_coefficient() if flicker else 0.0
    return phase_noise_dbc_hz(dev.diffusion(temperature_k), offset_hz, A, lorentzian=True)


def device_report(params, temperature_k: float, offset_hz: float = 1e6, *, preset: str = "custom") -> dict:
    """Every figure of ``oscsim device`` at one operating point (``temperature_k``): see :func:`operating_point`.

    Returns
    -------
    dict
        ``kind``, ``frequency_hz`` (= ``f0_hz``), ``power_w``, ``energy_per_cycle_j``,
        ``phase_diffusion_rad2_per_s``, ``linewidth_fwhm_hz`` (D/2π), ``phase_noise_at_offset_dbc_hz`` and the
        ``phase_noise_dbc_hz`` table (one function), and the device's own figures
        (:meth:`~hw_models.devices.Oscillator.report_figures`: drift slopes at T, amplitude, ``realism_models``).
    """
    from hw_models.devices import device_for

    T = float(temperature_k)
    nominal = device_for(params)
    dev = nominal.at_temperature(T)
    f0 = dev.frequency()
    D = dev.diffusion(T)
    offs = np.array(PN_OFFSETS_HZ)
    out = {"kind": dev.kind, "preset": preset, "temperature_k": T, "frequency_hz": f0, "f0_hz": f0,
           "power_w": dev.power(), "energy_per_cycle_j": dev.power() / f0, "phase_diffusion_rad2_per_s": D,
           "linewidth_fwhm_hz": D / (2 * math.pi), "phase_noise_offset_hz": float(offset_hz),
           "phase_noise_at_offset_dbc_hz": float(phase_noise(dev, T, offset_hz)),
           "phase_noise_dbc_hz": dict(zip([f"{int(f)}" for f in PN_OFFSETS_HZ],
                                          map(float, phase_noise(dev, T, offs))))}
    out.update(nominal.report_figures(T))
    return out


def run(args: argparse.Namespace) -> int:
    name, params = _preset(args.kind, args.preset, args.stages)
    T = float(args.temperature)
    out = device_report(params, T, args.offset_hz, preset=name)
    if args.plot:
        out["plots"] = [str(p) for p in device_plots(params, T, args.plot, preset=name)]
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, val in out.items():
            print(f"{k:28s} {val}")
    return 0


def device_plots(params, temperature_k: float, plot_dir, *, preset: str = "custom") -> list:
    """The waveform and the phase noise L(f_m) of the device at ``temperature_k`` (the operating point of
    :func:`device_report`), saved as PNG in ``plot_dir``. Returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from oscsim import plotting

    T = float(temperature_k)
    dev = operating_point(params, T)
    kind, f0 = dev.kind, dev.frequency()
    os.makedirs(plot_dir, exist_ok=True)
    where = f"{kind} {preset}, {T:g} K"
    t, v, ylab, names = dev.waveform()
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
    has_flicker = dev.flicker_phase_coefficient() > 0
    ax.semilogx(fm, phase_noise(dev, T, fm), lw=1.6, label="thermal + flicker" if has_flicker else "thermal")
    if has_flicker:
        ax.semilogx(fm, phase_noise(dev, T, fm, flicker=False), "--", lw=1.2, label="thermal only")
    pts = np.array(PN_OFFSETS_HZ)
    ax.plot(pts, phase_noise(dev, T, pts), "o", color="k", ms=4, label="table of --json")
    plotting.si_log_ticks(ax, "x", "Hz")  # "1 kHz" ... "1 GHz": each tick in its own SI prefix
    ax.set_xlabel("offset f_m [Hz]")
    ax.set_ylabel("L(f_m) [dBc/Hz]")
    ax.set_title(f"phase noise, {where}")
    ax.legend()
    pn = plotting.save(fig, os.path.join(plot_dir, f"{kind}_phase_noise"))[0]
    plt.close(fig)
    return [wf, pn]
