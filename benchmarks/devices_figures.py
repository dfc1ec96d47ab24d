"""Validation figures of hw_models (printed as JSON): circuit vs ngspice, macromodel vs circuit, ISF
diffusion, mismatch propagation, spin-torque closed forms.

Usage: .venv/bin/python benchmarks/devices_figures.py --json   (about 2-4 minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np


def spice_frequencies():
    import hw_models as hm

    out = {}
    for n in (3, 5, 7):
        ring = hm.cmos_65nm_ring(n)
        lc = hm.limit_cycle(ring)
        T = lc.period_s
        res = hm.run_ngspice(hm.ring_network_netlist(hm.RingNetwork.single(ring), 25 * T, T / 400))
        f, a = hm.frequency_amplitude(res.t, res.v[:, 0], 0.5 * ring.vdd_v, 10 * T)
        out[f"n{n}"] = {"f_model_hz": lc.f0_hz, "f_ngspice_hz": f, "rel_error": f / lc.f0_hz - 1,
                        "amp_model_v": float(np.ptp(lc.x[:, 0])), "amp_ngspice_v": a}
    return out


def locking(resistances=(10e3, 20e3, 50e3, 100e3)):
    import hw_models as hm
    from hw_models.waveform import locked

    ring = hm.cmos_65nm_ring(5)
    T = hm.limit_cycle(ring).period_s
    rows = []
    for R in resistances:
        cp = hm.cmos_65nm_coupler(R)
        dm, wm = hm.macro_locking_boundary(ring, cp, delta_max=0.3, tol=2e-4)
        dc, wc, (lo, hi) = hm.circuit_locking_boundary(ring, cp, delta_max=1.4 * dm, n_grid=8)
        row = {"R_ohm": R, "circuit_delta": dc, "circuit_bracket": [lo, hi], "circuit_dw_rad_s": wc,
               "macro_delta": dm, "macro_dw_rad_s": wm, "macro_over_circuit": wm / wc,
               "lock_half_width_over_omega": wc / hm.limit_cycle(ring).omega}
        if R == 20e3:
            ds = dc * np.array([0.8, 0.9, 0.95, 1.05, 1.1, 1.2])
            res = hm.run_ngspice(hm.ring_network_netlist(hm.pairs_network(ring, cp, ds), 300 * T, T / 200))
            n = ring.n_stages
            row["ngspice_deltas"] = ds.tolist()
            row["ngspice_locked"] = [bool(locked(res.t, res.v[:, 2 * n * i], res.v[:, 2 * n * i + n], 0.6, 150 * T))
                                     for i in range(len(ds))]
        rows.append(row)
    for L in (0.5e-6, 1e-6):
        tg = hm.TransmissionGateCoupler(w_n_m=0.12e-6, w_p_m=0.24e-6, l_m=L)
        dm, wm = hm.macro_locking_boundary(ring, tg, delta_max=0.3, tol=2e-4)
        dc, wc, (lo, hi) = hm.circuit_locking_boundary(ring, tg, delta_max=1.4 * dm, n_grid=8)
        rows.append({"tg_l_m": L, "circuit_delta": dc, "macro_delta": dm, "macro_over_circuit": wm / wc,
                     "lock_half_width_over_omega": wc / hm.limit_cycle(ring).omega})
    return rows


def diffusion():
    import hw_models as hm
    from hw_models.waveform import crossing_times

    ring = hm.cmos_65nm_ring(5)
    lc = hm.limit_cycle(ring)
    T = lc.period_s
    scale = (0.02 ** 2 / T) / hm.isf_diffusion(ring)
    pred = hm.isf_diffusion(ring, scale)
    G = 100
    net = hm.RingNetwork.single(ring)
    ts, ys = hm.simulate_ring_networks([net] * G, 110 * T, dt_s=T / 400, sigma=hm.node_noise_sigma(ring, scale),
                                       save_every=4, seed=11)
    cr = [crossing_times(ts, ys[:, g, 0], 0.6) for g in range(G)]
    D, (lo, hi), n = hm.measure_phase_diffusion(cr, lc.omega)
    return {"noise_scale": scale, "isf_pred_rad2_s": pred, "sim_rad2_s": D, "ratio": D / pred,
            "ci95_ratio": [lo / pred, hi / pred], "n_increments": n,
            "physical_D_rad2_s": hm.isf_diffusion(ring), "physical_L_1MHz_dbc_hz": float(hm.phase_noise_dbc_hz(ring, 1e6)),
            "gamma_rms": hm.isf_rms(ring).tolist(), "S_i_A2_Hz": hm.thermal_current_psd(ring)}


def mismatch():
    import hw_models as hm

    ring = hm.cmos_65nm_ring(5)
    s = hm.analytic_frequency_spread(ring)
    inst = hm.draw_mismatch(ring, 400, seed=5, method="circuit")
    m = inst.f0_hz.std(ddof=1)
    k = len(inst.f0_hz) - 1
    return {"sigma_vt_n_v": ring.sigma_vt_n_v, "sigma_f_analytic_hz": s, "sigma_f_sampled_hz": float(m),
            "ratio": m / s, "ci95_ratio": [m / s * math.sqrt(k / 456.0), m / s * math.sqrt(k / 345.0)],
            "sigma_f_over_f0": s / hm.limit_cycle(ring).f0_hz}


def stno():
    import hw_models as hm
    from oscsim.analysis import ensemble_phase_diffusion
    from oscsim.engine import ExternalDrive

    p = hm.vortex_stno()
    p0 = hm.stno_power_p0(p)
    sol = hm.simulate_stno(p, 600e-9, save_every=10, y0=np.array([[0.5 * math.sqrt(p0) + 0j]]))
    c = sol.ys[:, 0, 0]
    m = sol.ts > 300e-9
    pw = float(np.mean(np.abs(c[m]) ** 2))
    w = np.polyfit(sol.ts[m], np.unwrap(-np.angle(c))[m], 1)[0]
    G = 256
    sol = hm.simulate_stno([[p]] * G, 3e-6, noise_scale=1.0, save_every=10, seed=2)
    ph = np.unwrap(-np.angle(sol.ys[:, :, 0]), axis=0)
    lam = 2 * hm.stno_relaxation_rate(p)
    slope, ci95 = ensemble_phase_diffusion(sol.ts, ph, 5 / lam, 5 / lam, n_boot=100, seed=0)
    D = hm.stno_diffusion(p)
    gp = hm.stno_relaxation_rate(p)
    half = 0.3 * gp
    F = half / hm.stno_locking_half_range(p, 1.0)
    x = np.arange(0.80, 1.2001, 0.025)
    wg = 2 * math.pi * hm.stno_frequency_hz(p)
    insts = [[p.replace(f0_hz=p.f0_hz + xi * half / (2 * math.pi))] for xi in x]
    s2 = hm.simulate_stno(insts, 10e-6, drive=ExternalDrive(amplitude=F, angular_frequency=wg), save_every=10)
    phd = np.unwrap(-np.angle(s2.ys[:, :, 0]), axis=0) - wg * s2.ts[:, None]
    mm = s2.ts > 2e-6
    lockd = np.abs(phd[mm][-1] - phd[mm][0]) < math.pi
    b = 0.5 * (x[np.argmin(lockd)] + x[np.argmin(lockd) - 1])
    return {"p0_closed": p0, "p0_sim": pw, "p0_rel_err": pw / p0 - 1,
            "f_closed_hz": hm.stno_frequency_hz(p), "f_sim_hz": w / (2 * math.pi),
            "f_rel_err": w / (2 * math.pi) / hm.stno_frequency_hz(p) - 1,
            "nu": hm.stno_nu(p), "linewidth_fwhm_closed_hz": D / (2 * math.pi),
            "linewidth_fwhm_sim_hz": slope / (2 * math.pi), "linewidth_ratio": slope / D,
            "linewidth_ratio_ci95": [ci95[0] / D, ci95[1] / D],
            "lock_half_range_theory_rad_s": half, "lock_boundary_over_theory": float(b), "lock_grid_step": 0.025,
            "power_w": hm.stno_power(p), "energy_per_cycle_j": hm.energy_per_cycle(p)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", default=None, help="comma-separated subset: spice,locking,diffusion,mismatch,stno")
    a = ap.parse_args(argv)
    parts = {"spice": spice_frequencies, "locking": locking, "diffusion": diffusion, "mismatch": mismatch, "stno": stno}
    sel = a.only.split(",") if a.only else list(parts)
    out = {k: parts[k]() for k in sel}
    print(json.dumps(out, indent=2, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
