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

__all__ = ["ring_network_netlist", "run_ngspice", "SpiceResult", "NgspiceError", "ngspice_available"]


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
