"""Validity map of the ring phase macromodel against the circuit model (issue 9 item 6).

Measures (see :mod:`hw_models.validity`)
* the two-ring locking boundary Δω*, macromodel vs circuit, over coupling strength: resistors 80 kΩ … 2 kΩ
  (bidirectional) on the issue's level-1 180 nm ring and on the chip's 65 nm ring, and transconductors
  g_m = 1/R (one way) on the 65 nm ring;
* the increment of a receiving 65 nm ring driven one way by fan-in 1 … 127 source rings at random phases, over
  total κ/f₀ = 0.003 … 0.1 (κτ ≈ 0.25 rad, 4 draws per point).

Writes the map with its provenance to hw_models/data/macromodel_validity.json (package data read by
``hw_models.validity.check_operating_point``), a plot, and prints the markdown tables of docs/devices.md.

Usage: NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/validity_map.py [--quick] [--out PATH] [--plot PATH]
(about 6-8 minutes on 2 cores; ``--quick``: a 3 x 3 increment grid and 3 resistors, ~1.5 minutes)
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="coarse grid (for a smoke run)")
    ap.add_argument("--out", default=str(ROOT / "hw_models" / "data" / "macromodel_validity.json"))
    ap.add_argument("--plot", default=str(ROOT / "docs" / "benchmarks" / "macromodel_validity.png"))
    ap.add_argument("--threshold", type=float, default=0.05, help="relative error defining 'valid' (default 0.05)")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import hw_models as hm
    from hw_models.validity import increment_point, locking_point

    t0 = time.time()
    rs = (40e3, 10e3, 2e3) if a.quick else (80e3, 40e3, 20e3, 10e3, 5e3, 2e3)
    kappas = (0.003, 0.03, 0.1) if a.quick else (0.003, 0.01, 0.02, 0.03, 0.05, 0.1)
    fans = (1, 16, 127) if a.quick else (1, 4, 16, 64, 127)
    locking = []
    rings = {"level1_180nm": hm.level1_180nm_ring(), "cmos_65nm": hm.cmos_65nm_ring()}
    for rname, ring in rings.items():
        couplers = [hm.ResistiveCoupler(resistance_ohm=R) for R in rs]
        if rname == "cmos_65nm":
            couplers += [hm.TransconductanceCoupler(gm_s=1.0 / R) for R in rs]
        for cp in couplers:
            s = getattr(cp, "resistance_ohm", None) or 1.0 / cp.gm_s
            dmax = min(2.5, 0.5 * 10e3 / s) if rname == "level1_180nm" else min(2.5, 0.3 * 10e3 / s)
            p = locking_point(ring, cp, delta_max=dmax, n_grid=8, n_rounds=3, n_cycles=400)
            p["ring"] = rname
            locking.append(p)
            print(f"locking {rname} {p['coupler']} {p['strength']:.3g}: kappa/f0 {p['kappa_over_f0']:.4f} "
                  f"macro ratio {p['macro_load_ratio']:.4f} circuit {p['circuit_load_ratio_bracket']} "
                  f"err dw {p['rel_error']:.3f}", flush=True)
    increment = []
    ring = rings["cmos_65nm"]
    for k in kappas:
        for f in fans:
            p = increment_point(ring, k, f, n_draws=4, seed=0)
            p["ring"] = "cmos_65nm"
            increment.append(p)
            print(f"increment kappa/f0 {k} fan-in {f}: err {p['rel_error']:.4f}", flush=True)
    out = {
        "provenance": {
            "command": "NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/validity_map.py" + (" --quick" if a.quick else ""),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "commit": _commit(), "runtime_s": round(time.time() - t0, 1),
            "models": "macromodel: hw_models.ring_macro (PPV x coupler current, first order); circuit: "
                      "hw_models.ring node-voltage ODE (SPICE level-1 MOSFETs), RK4 at T/200",
            "locking": "two rings, ring 1 load x (1 + delta); rel_error = |dw*_macro / dw*_circuit - 1| (circuit "
                       "bracket from a 3-round grid of 8, 400 cycles, lock = same cycle count +-0.5 over the 2nd half)",
            "increment": "receiver driven one way by fan_in transconductors (g_m = total / fan_in) from free-running "
                         "rings at uniform random phases (seed 0, 4 draws); window: crossing K >= 1 nearest "
                         "kappa*tau = 0.25 rad; rel_error = |dtheta_circuit - dtheta_macro| / |dtheta_macro|",
            "kappa_over_f0": "a_1 / omega of the total coupling function into one ring (chip coupling.fraction)",
        },
        "threshold": a.threshold,
        "locking": locking,
        "increment": increment,
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {a.out} ({time.time() - t0:.0f} s)")
    _plot(out, a.plot)
    print(_tables(out))
    return 0


def _plot(m, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    for (ring, cpl), mk in zip(sorted({(p["ring"], p["coupler"]) for p in m["locking"]}), "osd^"):
        pts = sorted((p for p in m["locking"] if (p["ring"], p["coupler"]) == (ring, cpl)),
                     key=lambda p: p["kappa_over_f0"])
        ax[0].loglog([p["kappa_over_f0"] for p in pts], [max(p["rel_error"], 1e-4) for p in pts], mk + "-",
                     label=f"{ring}, {cpl.replace('Coupler', '')}")
    ax[0].axhline(m["threshold"], color="k", ls=":", lw=1)
    ax[0].set_xlabel("kappa / f0 (one coupler)")
    ax[0].set_ylabel("locking range |dw*_macro/dw*_circuit - 1|")
    ax[0].legend(fontsize=7)
    kap = sorted({p["kappa_over_f0"] for p in m["increment"]})
    fan = sorted({p["fan_in"] for p in m["increment"]})
    E = np.array([[next(p["rel_error"] for p in m["increment"] if p["kappa_over_f0"] == k and p["fan_in"] == f)
                   for k in kap] for f in fan])
    im = ax[1].imshow(np.log10(E), origin="lower", aspect="auto", cmap="RdYlGn_r", vmin=-3, vmax=0)
    for i in range(len(fan)):
        for j in range(len(kap)):
            ax[1].text(j, i, f"{100 * E[i, j]:.1f}", ha="center", va="center", fontsize=7)
    ax[1].set_xticks(range(len(kap)), [f"{k:g}" for k in kap])
    ax[1].set_yticks(range(len(fan)), [str(f) for f in fan])
    ax[1].set_xlabel("total kappa / f0 into the ring")
    ax[1].set_ylabel("fan-in (one-way inputs)")
    ax[1].set_title("increment error [%], macromodel vs circuit", fontsize=9)
    fig.colorbar(im, ax=ax[1], label="log10 rel. error")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    print(f"wrote {path}")


def _tables(m) -> str:
    L = ["| ring | coupler | R or 1/g_m | κ/f₀ | macro load ratio | circuit load ratio | Δω* error |",
         "|---|---|---|---|---|---|---|"]
    for p in m["locking"]:
        s = p["strength"] if p["coupler"] == "ResistiveCoupler" else 1.0 / p["strength"]
        lo, hi = p["circuit_load_ratio_bracket"]
        L.append(f"| {p['ring']} | {p['coupler'].replace('Coupler', '')} | {s / 1e3:g} kΩ | {p['kappa_over_f0']:.4f} "
                 f"| {p['macro_load_ratio']:.4f} | {lo:.4f}–{hi:.4f} | {100 * p['rel_error']:.1f} % |")
    kap = sorted({p["kappa_over_f0"] for p in m["increment"]})
    fan = sorted({p["fan_in"] for p in m["increment"]})
    L += ["", "| fan-in \\ κ/f₀ | " + " | ".join(f"{k:g}" for k in kap) + " |", "|---" * (len(kap) + 1) + "|"]
    for f in fan:
        row = [next(p for p in m["increment"] if p["kappa_over_f0"] == k and p["fan_in"] == f) for k in kap]
        L.append(f"| {f} | " + " | ".join(f"{100 * p['rel_error']:.1f} %" for p in row) + " |")
    return "\n".join(L)


if __name__ == "__main__":
    raise SystemExit(main())
