"""SPICE export of ring networks (ngspice netlists, the same level-1 transistors) and a batch-mode runner.

The netlist holds, per ring r, a supply ``vdd{r}``, nodes ``n{r}_{k}``, an inverter (``MP{r}_{k}``,
``MN{r}_{k}``) driving node k from node k−1, a load capacitor, and the couplers (``RC{j}`` resistors or
``MTN{j}``/``MTP{j}`` transmission gates). Each transistor gets its own model card when mismatch is given
(VTO shifted), otherwise one NMOS and one PMOS card per ring. ``.ic`` + ``uic`` set the start state.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

import numpy as np

from hw_models.params import ResistiveCoupler
from hw_models.ring import RingMismatch, RingNetwork, ring_initial_state

__all__ = ["ring_network_netlist", "transconductor_network_netlist", "run_ngspice", "SpiceResult", "NgspiceError",
           "ngspice_available"]


class NgspiceError(ValueError):
    """ngspice rejected a netlist or failed; the message quotes ngspice's own error lines."""


@dataclass(frozen=True)
class SpiceResult:
    """Waveforms read back from ngspice: ``t`` (S,) [s], ``v`` (S, D) [V] in global node order."""

    t: np.ndarray
    v: np.ndarray
    netlist: str
    log: str


def ngspice_available(executable: str = "ngspice") -> bool:
    return shutil.which(executable) is not None


def _model(name, kind, vto, kp, lam):
    return f".model {name} {kind} level=1 vto={vto:.12g} kp={kp:.12g} lambda={lam:.12g}"


def ring_network_netlist(network: RingNetwork, t_stop_s: float, t_step_s: float, *,
                         mismatch: RingMismatch | None = None, y0=None, out_file: str = "out.txt",
                         title: str = "oscsim ring network") -> str:
    """An ngspice netlist (str) for ``network`` with a transient from 0 to ``t_stop_s``.

    Parameters
    ----------
    network : RingNetwork
    t_stop_s, t_step_s : float
        Transient end and maximum internal step / output step [s].
    mismatch : RingMismatch, optional
        Per-device V_T shifts, load and coupler spread (same meaning as in :func:`pack_ring_params`).
    y0 : (D,) array, optional
        Initial node voltages [V] (default :func:`ring_initial_state`).
    out_file : str
        File ``wrdata`` writes (time and every node voltage).
    """
    if not (t_stop_s > 0 and 0 < t_step_s < t_stop_s):
        raise ValueError(f"need 0 < t_step_s < t_stop_s, got t_step_s={t_step_s}, t_stop_s={t_stop_s}")
    n = network.n_stages
    y0 = ring_initial_state(network) if y0 is None else np.asarray(y0, float)
    if y0.shape != (network.dim,):
        raise ValueError(f"y0 must have shape ({network.dim},), got {y0.shape}")
    L = [f"* {title}"]
    models = []
    for r, ring in enumerate(network.rings):
        L.append(f"V{r} vdd{r} 0 DC {ring.vdd_v:.12g}")
        for k in range(n):
            if mismatch is None:
                mn, mp = f"nch{r}", f"pch{r}"
            else:
                mn, mp = f"nch{r}_{k}", f"pch{r}_{k}"
                models.append(_model(mn, "nmos", ring.vto_n_v + mismatch.dvt_n_v[r, k], ring.kp_n_a_per_v2,
                                     ring.lambda_n_per_v))
                models.append(_model(mp, "pmos", ring.vto_p_v + mismatch.dvt_p_v[r, k], ring.kp_p_a_per_v2,
                                     ring.lambda_p_per_v))
            a, b = f"n{r}_{(k - 1) % n}", f"n{r}_{k}"
            L.append(f"MP{r}_{k} {b} {a} vdd{r} vdd{r} {mp} W={ring.w_p_m:.12g} L={ring.l_p_m:.12g}")
            L.append(f"MN{r}_{k} {b} {a} 0 0 {mn} W={ring.w_n_m:.12g} L={ring.l_n_m:.12g}")
            c = ring.c_load_f * (1.0 + (0.0 if mismatch is None else mismatch.c_rel[r, k]))
            L.append(f"C{r}_{k} {b} 0 {c:.12g}")
        if mismatch is None:
            models.append(_model(f"nch{r}", "nmos", ring.vto_n_v, ring.kp_n_a_per_v2, ring.lambda_n_per_v))
            models.append(_model(f"pch{r}", "pmos", ring.vto_p_v, ring.kp_p_a_per_v2, ring.lambda_p_per_v))
    for j, cp in enumerate(network.couplings):
        rel = 0.0 if mismatch is None else mismatch.coupler_rel[j]
        a, b = f"n{cp.ring_a}_{cp.node_a}", f"n{cp.ring_b}_{cp.node_b}"
        if isinstance(cp.coupler, ResistiveCoupler):
            L.append(f"RC{j} {a} {b} {cp.coupler.resistance_ohm / (1.0 + rel):.12g}")
        else:
            tg, ra = cp.coupler, network.rings[cp.ring_a]
            models.append(_model(f"ntg{j}", "nmos", ra.vto_n_v, ra.kp_n_a_per_v2 * (1 + rel), ra.lambda_n_per_v))
            models.append(_model(f"ptg{j}", "pmos", ra.vto_p_v, ra.kp_p_a_per_v2 * (1 + rel), ra.lambda_n_per_v))
            L.append(f"MTN{j} {b} vdd{cp.ring_a} {a} 0 ntg{j} W={tg.w_n_m:.12g} L={tg.l_m:.12g}")
            L.append(f"MTP{j} {b} 0 {a} vdd{cp.ring_a} ptg{j} W={tg.w_p_m:.12g} L={tg.l_m:.12g}")
    L += models
    ics = " ".join(f"v(n{i // n}_{i % n})={y0[i]:.12g}" for i in range(network.dim))
    L.append(f".ic {ics}")
    L.append(".options reltol=1e-5 abstol=1e-15 vntol=1e-7")
    L.append(f".tran {t_step_s:.12g} {t_stop_s:.12g} 0 {t_step_s:.12g} uic")
    vecs = " ".join(f"v(n{i // n}_{i % n})" for i in range(network.dim))
    L += [".control", "set wr_singlescale", "set wr_vecnames", "option numdgt=12", "run",
          f"wrdata {out_file} {vecs}", "quit", ".endc", ".end", ""]
    return "\n".join(L)


def transconductor_network_netlist(ring, *, vto_n, vto_p, c_load, gm, taps, tap_weights, y0, t_enable_off_s: float,
                                   t_stop_s: float, t_step_s: float, out_file: str = "out.txt",
                                   title: str = "oscsim transconductor-coupled ring networks",
                                   reltol: float = 1e-6, max_step_div: int = 4) -> str:
    """ngspice netlist of G independent networks of R rings coupled by unilateral transconductors.

    Ring r of network g has nodes ``n{g}_{r}_{k}``; inverter k (``MP``/``MN``, level-1 cards with the given
    thresholds) drives node k from node k−1, with load ``C`` to ground. Each source ring u has, per tap
    (node ``taps[i]``), a gated tap signal ``s{g}_{u}_{i}`` = (V(n_u,tap) − V_DD/2)·V(en) (a behavioural source
    standing for the transconductors' enable switch: V(en) = 1 until ``t_enable_off_s``, then 0 within one
    ``t_step_s``), and every coupling u → r is one VCCS per tap, ``G… 0 n{g}_{r}_0 s{g}_{u}_{i} 0
    w_i·|g_m|``, which injects w_i g_m (V_src − V_DD/2) into node 0 of ring r; a negative g_m is the same
    element with its control pair swapped (the transconductor's differential swap). ``.ic`` + ``uic`` set the
    start state; ``wrdata`` writes node 0 of every ring on the ``t_step_s`` grid (``.options interp``).

    Parameters
    ----------
    ring : RingOscillatorParams
        Supply, KP, λ, W, L of every inverter.
    vto_n, vto_p : (G, R, n) thresholds [V] (PMOS negative); c_load : (G, R, n) [F]
    gm : (G, R, R) signed transconductance [S] of the coupler u → r (entry [g, r, u], lower triangle used).
    taps : sequence of int; tap_weights : sequence of float
        Source-ring nodes and their weights (Σ w = 1).
    y0 : (G, R·n) initial node voltages [V].
    t_enable_off_s, t_stop_s, t_step_s : float
        Coupler switch-off time, transient end, output step and maximum internal step [s].
    """
    vto_n, vto_p, c_load = (np.asarray(a, float) for a in (vto_n, vto_p, c_load))
    gm = np.asarray(gm, float)
    G, R, n = c_load.shape
    y0 = np.asarray(y0, float).reshape(G, R * n)
    if vto_n.shape != (G, R, n) or vto_p.shape != (G, R, n) or gm.shape != (G, R, R):
        raise ValueError(f"shapes: vto_n {vto_n.shape}, vto_p {vto_p.shape} must be {(G, R, n)}, gm {gm.shape} "
                         f"must be {(G, R, R)}")
    if not (t_stop_s > 0 and 0 < t_step_s < t_stop_s and 0 < t_enable_off_s < t_stop_s):
        raise ValueError(f"need 0 < t_step_s < t_stop_s and 0 < t_enable_off_s < t_stop_s, got t_step_s={t_step_s}, "
                         f"t_enable_off_s={t_enable_off_s}, t_stop_s={t_stop_s}")
    if not np.all(np.isfinite(gm)) or not np.all(np.isfinite(y0)) or np.any(c_load <= 0):
        raise ValueError("gm and y0 must be finite and c_load > 0")
    vm = 0.5 * ring.vdd_v
    L = [f"* {title}", f"VDD vdd 0 DC {ring.vdd_v:.12g}", f"VMID vmid 0 DC {vm:.12g}",
         f"VEN en 0 PWL(0 1 {t_enable_off_s:.12g} 1 {t_enable_off_s + t_step_s:.12g} 0)"]
    for g in range(G):
        for r in range(R):
            for k in range(n):
                a, b = f"n{g}_{r}_{(k - 1) % n}", f"n{g}_{r}_{k}"
                L.append(f"MP{g}_{r}_{k} {b} {a} vdd vdd p{g}_{r}_{k} W={ring.w_p_m:.12g} L={ring.l_p_m:.12g}")
                L.append(f"MN{g}_{r}_{k} {b} {a} 0 0 n{g}_{r}_{k} W={ring.w_n_m:.12g} L={ring.l_n_m:.12g}")
                L.append(f"C{g}_{r}_{k} {b} 0 {c_load[g, r, k]:.12g}")
                L.append(f".model n{g}_{r}_{k} nmos level=1 vto={vto_n[g, r, k]:.12g} kp={ring.kp_n_a_per_v2:.12g} "
                         f"lambda={ring.lambda_n_per_v:.12g}")
                L.append(f".model p{g}_{r}_{k} pmos level=1 vto={vto_p[g, r, k]:.12g} kp={ring.kp_p_a_per_v2:.12g} "
                         f"lambda={ring.lambda_p_per_v:.12g}")
        for u in range(R - 1):  # the last ring drives no one
            for i, tap in enumerate(taps):
                L.append(f"BS{g}_{u}_{i} s{g}_{u}_{i} 0 V=(v(n{g}_{u}_{int(tap)})-v(vmid))*v(en)")
        for r in range(1, R):
            for u in range(r):
                if gm[g, r, u] == 0.0:
                    continue
                for i, w in enumerate(tap_weights):
                    ctrl = f"s{g}_{u}_{i} 0" if gm[g, r, u] > 0 else f"0 s{g}_{u}_{i}"
                    L.append(f"G{g}_{r}_{u}_{i} 0 n{g}_{r}_0 {ctrl} {abs(gm[g, r, u]) * float(w):.12g}")
    ics = " ".join(f"v(n{g}_{r}_{k})={y0[g, r * n + k]:.12g}" for g in range(G) for r in range(R) for k in range(n))
    L.append(f".ic {ics}")
    # internal steps at most t_step/MAXSTEP_DIV: the output grid is interpolated from them (.options interp)
    L.append(f".options interp reltol={reltol:.3g} abstol=1e-15 vntol=1e-9")
    L.append(f".tran {t_step_s:.12g} {t_stop_s:.12g} 0 {t_step_s / max_step_div:.12g} uic")
    vecs = " ".join(f"v(n{g}_{r}_0)" for g in range(G) for r in range(R))
    L += [".control", "set wr_singlescale", "set wr_vecnames", "option numdgt=12", "run",
          f"wrdata {out_file} {vecs}", "quit", ".endc", ".end", ""]
    return "\n".join(L)


_ERR = re.compile(r"^(.*(error|Error|ERROR|unknown|Unknown|fatal|Fatal|singular|abort).*)$", re.M)


def run_ngspice(netlist: str, *, out_file: str = "out.txt", timeout_s: float = 600.0,
                executable: str = "ngspice") -> SpiceResult:
    """Run ngspice in batch mode (``ngspice -b``) on ``netlist`` and read back the ``wrdata`` waveforms.

    Raises
    ------
    FileNotFoundError
        ngspice is not installed (``apt-get install ngspice``; the Makefile does it).
    NgspiceError
        ngspice failed or wrote no waveform; the message quotes its error lines.
    """
    exe = shutil.which(executable)
    if exe is None:
        raise FileNotFoundError(f"{executable} not found on PATH; install it (Debian: apt-get install ngspice)")
    with tempfile.TemporaryDirectory(prefix="oscsim_spice_") as d:
        cir = os.path.join(d, "net.cir")
        with open(cir, "w") as f:
            f.write(netlist)
        env = dict(os.environ, SPICE_ASCIIRAWFILE="1")
        try:
            proc = subprocess.run([exe, "-b", cir], cwd=d, capture_output=True, text=True, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired as exc:
            raise NgspiceError(f"ngspice did not finish within {timeout_s} s") from exc
        log = proc.stdout + proc.stderr
        path = os.path.join(d, out_file)
        lines = log.splitlines()
        errs = []
        for i, ln in enumerate(lines):
            if _ERR.match(ln) and "reltol" not in ln.lower():
                # ngspice puts the offending card / reason on the following lines
                errs.append(" ".join(x.strip() for x in lines[i:i + 3] if x.strip()))
        if proc.returncode != 0 or not os.path.exists(path) or os.path.getsize(path) == 0:
            detail = "; ".join(errs[:8]) or log.strip()[-2000:]
            raise NgspiceError(f"ngspice rejected the netlist or failed (exit {proc.returncode}): {detail}")
        data = np.loadtxt(path, skiprows=1, ndmin=2)
    return SpiceResult(t=data[:, 0], v=data[:, 1:], netlist=netlist, log=log)
