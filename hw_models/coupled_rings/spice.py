"""SPICE export of a head of coupled-ring networks (the fourth rung of the fidelity ladder) and an ngspice runner.

A head (:class:`hw_models.coupled_rings.CircuitHead`, e.g. one compiled Kuramoto head built at circuit level by
:mod:`mapping.backends.circuit`) is written as an ngspice netlist with the same elements the circuit model
integrates: level-1 inverters with each transistor's own V_T card, each node's load (mismatch and trim
included), the two-tap unilateral transconductors as VCCS ``G`` elements (a negative gain is the swapped
control pair), the couplers' enable switch at τ_s, ``.ic`` of every node (each ring on its own limit cycle at
its token phase, exactly the circuit model's start state) and probes on node 0 of every ring. One extra
network of R nominal, uncoupled rings placed at R evenly spaced phases on the exact limit cycle is the
reference: its read phases calibrate the reference phase (ngspice's own time-step error and the crossing
interpolation), as the circuit model does with its integrator.

The runner (:func:`run_head_spice`) executes ``ngspice -b`` (:func:`hw_models.run_ngspice`) and reads the
phases from the waveforms with the circuit model's readout (rising V_DD/2 crossings of node 0 after τ_s,
window-averaged against the reference at the nominal frequency).
"""

from __future__ import annotations

import math

import numpy as np

from hw_models.coupled_rings.head import CircuitHead, place_on_limit_cycle
from hw_models.coupled_rings.integrate import read_phases
from hw_models.coupled_rings.readout import READ_CYCLES, READ_SKIP_CYCLES
from hw_models.coupled_rings.rhs import HEADER, PER_NODE
from hw_models.spice import run_ngspice, transconductor_network_netlist
from hw_models.waveform import wrap

__all__ = ["SPICE_MAX_TOKENS", "SPICE_MAX_RINGS", "head_netlist", "run_head_spice"]

SPICE_MAX_TOKENS = 64
"""Largest T the export accepts: a T-ring network has T(T−1) transconductors (two taps) and ngspice's dense
transient grows faster than that (measured in BENCHMARKS.md: T = 16 with 16 coordinates in ~1 min)."""
SPICE_MAX_RINGS = 1024
"""Largest number of rings (all networks of one netlist together) the runner accepts."""
_STEPS_PER_PERIOD = 200  # output grid and maximum internal step of ngspice: T/200 (same readout as the circuit)


def head_netlist(head: CircuitHead, *, settle_cycles: float, groups=None, title: str = "oscsim head") -> tuple:
    """Netlist (str) of networks ``groups`` (default all) of ``head`` plus the reference network.

    Returns (netlist, meta) with meta: ``groups``, ``t_settle_s``, ``t_stop_s``, ``t_step_s``, ``ref_theta``.

    Raises
    ------
    ValueError
        T above :data:`SPICE_MAX_TOKENS` or more rings than :data:`SPICE_MAX_RINGS`.
    """
    dev = head.device
    G, T = head.theta0.shape
    n = dev.ring.n_stages
    groups = list(range(G)) if groups is None else [int(g) for g in groups]
    if getattr(head, "flicker", None) is not None:
        raise ValueError("head: the SPICE export is a noise-free transient (no thermal or flicker sources); build "
                         "the head with noise=False")
    if T > SPICE_MAX_TOKENS:
        raise ValueError(f"--seq-len: the SPICE export allows T <= {SPICE_MAX_TOKENS} tokens per network, got {T}")
    if T < 2:
        raise ValueError(f"--seq-len: a network needs T >= 2 tokens to hold a coupler, got {T}")
    if (len(groups) + 1) * T > SPICE_MAX_RINGS:
        raise ValueError(f"the netlist would hold {(len(groups) + 1) * T} rings (networks x T, plus the reference "
                         f"network); the SPICE runner allows {SPICE_MAX_RINGS}: export fewer coordinates")
    ring = dev.ring
    per = dev.period_s
    t_settle = float(settle_cycles) * per
    t_stop = t_settle + READ_CYCLES * per
    t_step = per / _STEPS_PER_PERIOD
    P = head.params
    node = P[:, HEADER:HEADER + PER_NODE * T * n].reshape(G, T, n, PER_NODE)
    ref_theta = 2 * math.pi * np.arange(T) / T
    vto_n = np.concatenate([node[groups, :, :, 0], np.full((1, T, n), ring.vto_n_v)])
    vto_p = np.concatenate([node[groups, :, :, 1], np.full((1, T, n), ring.vto_p_v)])
    c_load = np.concatenate([head.c_load[groups], np.full((1, T, n), ring.c_load_f)])
    gm = np.concatenate([head.gm[groups], np.zeros((1, T, T))])
    y0 = np.concatenate([head.y0[groups], place_on_limit_cycle(dev, ref_theta).reshape(1, T * n)])
    net = transconductor_network_netlist(
        ring, vto_n=vto_n, vto_p=vto_p, c_load=c_load, gm=gm, taps=(0, dev.tap_node), tap_weights=dev.weights,
        y0=y0, t_enable_off_s=t_settle, t_stop_s=t_stop, t_step_s=t_step,
        title=f"{title}: {len(groups)} network(s) of {T} {n}-stage rings + 1 reference network; "
              f"f0 = {1 / per:.6g} Hz, couplers off at {t_settle:.6g} s")
    return net, {"groups": groups, "t_settle_s": t_settle, "t_stop_s": t_stop, "t_step_s": t_step,
                 "ref_theta": ref_theta}


def run_head_spice(head: CircuitHead, *, settle_cycles: float, groups=None, timeout_s: float = 600.0,
                   networks_per_run: int = 4, return_waveforms: bool = False) -> dict:
    """Run the head's networks in ngspice (``networks_per_run`` networks and a reference network per netlist:
    ngspice's time grows faster than linearly with the netlist, measured 4 s for 4 + 1 networks of 8 rings
    and 42 s for 16 + 1) and read the phases.

    Returns a dict: ``psi`` (G', T) read phases [rad], ``dtheta`` (G', T) = wrap(ψ̂ − θ₀), ``groups``,
    ``reference_offset_rad`` and ``reference_spread_rad`` (per run, from its reference network),
    ``netlists``; with ``return_waveforms`` ``t`` (S,) [s] and ``v0`` (S, G', T) node-0 voltages [V].

    Raises
    ------
    hw_models.NgspiceError
        ngspice rejected a netlist (its error lines are quoted).
    """
    dev = head.device
    G, T = head.theta0.shape
    groups = list(range(G)) if groups is None else [int(g) for g in groups]
    if not groups or min(groups) < 0 or max(groups) >= G:
        raise ValueError(f"groups must be indices in [0, {G - 1}], got {groups}")
    omega = 2 * math.pi / dev.period_s
    psi_all, offs, spreads, nets, waves, t = [], [], [], [], [], None
    for c in range(0, len(groups), max(1, int(networks_per_run))):
        gs = groups[c:c + max(1, int(networks_per_run))]
        net, meta = head_netlist(head, settle_cycles=settle_cycles, groups=gs)
        res = run_ngspice(net, timeout_s=timeout_s)
        ng = len(gs)
        if res.v.shape[1] != (ng + 1) * T:
            raise ValueError(f"ngspice returned {res.v.shape[1]} waveforms, expected {(ng + 1) * T}")
        psi = read_phases(omega, 0.5 * dev.ring.vdd_v, res.t, res.v,
                           meta["t_settle_s"] + READ_SKIP_CYCLES * dev.period_s, meta["t_settle_s"]).reshape(ng + 1, T)
        dref = wrap(psi[-1] - meta["ref_theta"])
        off = float(np.angle(np.mean(np.exp(1j * dref))))
        psi_all.append(wrap(psi[:-1] - off))
        offs.append(off)
        spreads.append(float(np.std(wrap(dref - off))))
        nets.append(net)
        if return_waveforms:
            t = res.t if t is None else t
            waves.append(res.v.reshape(len(res.t), ng + 1, T)[: len(t), :ng])
    psi = np.concatenate(psi_all)
    out = {"psi": psi, "dtheta": wrap(psi - head.theta0[groups]), "groups": groups, "reference_offset_rad": offs,
           "reference_spread_rad": spreads, "netlists": nets}
    if return_waveforms:
        out["t"] = t
        out["v0"] = np.concatenate(waves, axis=1)
    return out
