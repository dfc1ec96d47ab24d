"""Where the ring phase macromodel agrees with the circuit: measurements and the stored validity map.

Two measurements, each macromodel against the node-voltage circuit model (the ring's own transistors):

* **locking boundary** of two rings, ring 1's load × (1 + δ), through one coupler (resistor: bidirectional;
  transconductor: one way): the detuning Δω* at the edge of locking, macromodel
  (:func:`hw_models.ring_macro.macro_locking_boundary`) vs circuit
  (:func:`hw_models.ring_sim.circuit_locking_boundary`); error |Δω*_macro / Δω*_circuit − 1|.
* **increment** of a receiving ring driven one way by ``fan_in`` free-running source rings (transconductors,
  g_m each = total / fan_in) at random phases, over a window with κτ ≈ 0.25 rad (the chip's default):
  Δθ(τ) of the circuit (interpolated V_DD/2 crossings vs the free-running ring) against the macromodel
  dθ/dt = Σ_u H(θ_u − θ) integrated from the same phases; error ‖Δθ_c − Δθ_m‖ / ‖Δθ_m‖ over the draws.

The coupling strength is expressed as κ/f₀ = a₁/ω (a₁: first sine harmonic of the total H into the ring, ω
the ring's angular frequency), the chip's ``coupling.fraction``. The measured map is stored as package data
(``hw_models/data/macromodel_validity.json``, written by ``benchmarks/validity_map.py`` with its provenance)
and read by :func:`check_operating_point`, which warns with :class:`MacromodelValidityWarning` when a chip's
operating point lies outside the region where the macromodel is within the threshold (5 %) of the circuit.
"""

from __future__ import annotations

import functools
import json
import math
import warnings
from pathlib import Path

import numpy as np

__all__ = ["MacromodelValidityWarning", "DeviceSizingWarning", "MAP_PATH", "locking_point", "increment_point", "load_validity_map",
           "valid_kappa_limit", "check_operating_point"]

MAP_PATH = Path(__file__).parent / "data" / "macromodel_validity.json"


class DeviceSizingWarning(UserWarning):
    """A chip sizes its devices (``device_node_nm``) outside the range where the device model was stated
    (:meth:`hw_models.devices.Oscillator.sizing_check`; docs/devices.md, "Sizing")."""


class MacromodelValidityWarning(UserWarning):
    """A chip's operating point lies outside the measured region where the ring macromodel is within the
    threshold of the circuit model (see docs/devices.md, validity map)."""


def _kappa_over_f0(ring_dev, coupler) -> float:
    """κ/f₀ = a₁/ω of one coupler on ``ring_dev`` (identical source)."""
    return float(ring_dev.coupling_function(coupler).harmonics[0, 0]) / ring_dev.omega()


def locking_point(ring, coupler, *, delta_max: float, n_grid: int = 8, n_rounds: int = 2, n_cycles: int = 300):
    """Two-ring locking boundary, macromodel vs circuit, for one coupler. Returns a dict (JSON-ready)."""
    from hw_models.devices.registry import device_for
    from hw_models.ring_macro import macro_locking_boundary
    from hw_models.ring_sim import circuit_locking_boundary

    dev = device_for(ring)  # the ring's device object (registered by hw_models.devices)
    for _ in range(4):  # widen the search until the pair drifts at delta_max
        try:
            ds_m, dw_m = macro_locking_boundary(ring, coupler, delta_max=delta_max, tol=2e-4)
            break
        except ValueError as exc:
            if "still locked" not in str(exc):
                raise
            delta_max *= 2
    else:
        raise ValueError(f"the macromodel is still locked at delta_max = {delta_max}")
    dmax_c = 1.6 * ds_m
    for _ in range(4):
        ds_c, dw_c, (lo, hi) = circuit_locking_boundary(ring, coupler, delta_max=dmax_c, n_grid=n_grid,
                                                        n_rounds=n_rounds, n_cycles=n_cycles)
        if hi < dmax_c:
            break
        dmax_c *= 2  # locked over the whole grid: widen
    return {"coupler": type(coupler).__name__, "strength": (coupler.resistance_ohm if hasattr(coupler, "resistance_ohm")
                                                           else coupler.gm_s),
            "kappa_over_f0": _kappa_over_f0(dev, coupler), "fan_in": 1,
            "macro_load_ratio": 1 + ds_m, "circuit_load_ratio_bracket": [1 + lo, 1 + hi],
            "macro_dw_rad_s": dw_m, "circuit_dw_rad_s": dw_c,
            "rel_error": abs(dw_m / dw_c - 1), "delta_rel_error": abs(ds_m / ds_c - 1)}


def increment_point(ring, kappa_over_f0: float, fan_in: int, *, n_draws: int = 4, seed: int = 0,
                    kappa_tau: float = 0.25, steps_per_period: int = 200):
    """Increment error of the macromodel vs the circuit for one receiver with ``fan_in`` one-way inputs.

    The total first harmonic into the receiver is κ = 2π (κ/f₀) f₀ split equally over the inputs (each a
    :class:`TransconductanceCoupler` of g_m = total / fan_in); the sources start at uniform random phases
    (``seed``), the receiver at phase 0, every ring on its limit cycle. Window: the crossing K ≥ 1 closest
    to κτ = ``kappa_tau``. Returns a dict (JSON-ready) with the error and the increments.
    """
    from hw_models.devices.registry import device_for
    from hw_models.params import TransconductanceCoupler
    from hw_models.ring import Coupling, RingNetwork
    from hw_models.ring_sim import simulate_ring_networks
    from hw_models.waveform import crossing_times

    if isinstance(fan_in, bool) or not isinstance(fan_in, int) or fan_in < 1:
        raise ValueError(f"fan_in must be an int >= 1, got {fan_in!r}")
    if not (math.isfinite(kappa_over_f0) and 0 < kappa_over_f0 <= 0.5):
        raise ValueError(f"kappa_over_f0 must be in (0, 0.5], got {kappa_over_f0!r}")
    dev = device_for(ring)  # the ring's device object (registered by hw_models.devices)
    lc = dev.limit_cycle()
    w, T = dev.omega(), lc.period_s
    a1_per_s = _kappa_over_f0(dev, TransconductanceCoupler(gm_s=1.0)) * w  # a₁ per siemens [rad/s/S]
    gm = kappa_over_f0 * w / (fan_in * a1_per_s)
    cp = TransconductanceCoupler(gm_s=gm)
    H = dev.coupling_function(cp)
    K = max(1, int(round(kappa_tau / (2 * math.pi * kappa_over_f0))))
    rng = np.random.default_rng([seed, fan_in, int(round(1e6 * kappa_over_f0))])
    M = len(lc.theta)
    n = ring.n_stages
    idx = rng.integers(0, M, (n_draws, fan_in))
    net = RingNetwork(rings=(ring,) * (fan_in + 1),
                      couplings=tuple(Coupling(ring_a=0, node_a=0, ring_b=u + 1, node_b=0, coupler=cp)
                                      for u in range(fan_in)))
    y0 = np.empty((n_draws, net.dim))
    for g in range(n_draws):
        y0[g, :n] = lc.x[0]
        for u in range(fan_in):
            y0[g, (u + 1) * n:(u + 2) * n] = lc.x[idx[g, u]]
    ts, ys = simulate_ring_networks([net] * n_draws, (K + 1.5) * T, dt_s=T / steps_per_period, y0=y0,
                                    save_every=1)
    th_u = lc.theta[idx]  # (G, F)
    circ, macro = np.empty(n_draws), np.empty(n_draws)
    for g in range(n_draws):
        tc = crossing_times(ts, ys[:, g, 0], 0.5 * ring.vdd_v)
        tc = tc[tc > 0.5 * T]  # crossing k = 1, 2, ...
        tk = float(tc[K - 1])
        circ[g] = 2 * math.pi * K - w * tk
        # macromodel in the rotating frame: dφ/dt = Σ_u H(θ_u − φ), RK4 to t_k
        nst = 400 * K
        h = tk / nst
        phi = 0.0
        f = lambda p: float(np.sum(H(th_u[g] - p)))  # noqa: E731
        for _ in range(nst):
            k1 = f(phi)
            k2 = f(phi + 0.5 * h * k1)
            k3 = f(phi + 0.5 * h * k2)
            k4 = f(phi + h * k3)
            phi += h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        macro[g] = phi
    err = float(np.linalg.norm(circ - macro) / np.linalg.norm(macro))
    return {"kappa_over_f0": float(kappa_over_f0), "fan_in": fan_in, "gm_s_per_input": gm, "window_cycles": K,
            "kappa_tau_rad": 2 * math.pi * kappa_over_f0 * K, "n_draws": n_draws, "rel_error": err,
            "circuit_increment_rad": circ.tolist(), "macro_increment_rad": macro.tolist()}


@functools.lru_cache(maxsize=1)
def load_validity_map(path: str | None = None) -> dict:
    """The stored validity map (JSON with ``provenance``, ``threshold``, ``locking``, ``increment``)."""
    p = MAP_PATH if path is None else Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"validity map {p} not found; make it with benchmarks/validity_map.py")
    d = json.loads(p.read_text())
    for key in ("provenance", "threshold", "locking", "increment"):
        if key not in d:
            raise ValueError(f"validity map {p}: missing key {key!r}")
    return d


def valid_kappa_limit(metric: str, fan_in: int = 1, vmap: dict | None = None):
    """Largest measured κ/f₀ below which every measured point (at the nearest measured fan-in at or above
    ``fan_in``, or the largest) is within the threshold; None when even the weakest measured coupling is not.

    ``metric``: 'increment' (Kuramoto chips: one-way inputs) or 'locking' (SSA pairs: two-ring boundary).
    """
    vmap = load_validity_map() if vmap is None else vmap
    thr = float(vmap["threshold"])
    if metric == "locking":
        pts = [p for p in vmap["locking"] if p["coupler"] == "ResistiveCoupler"]
    elif metric == "increment":
        fans = sorted({p["fan_in"] for p in vmap["increment"]})
        f = next((x for x in fans if x >= fan_in), fans[-1])
        pts = [p for p in vmap["increment"] if p["fan_in"] == f]
    else:
        raise ValueError(f"metric must be 'increment' or 'locking', got {metric!r}")
    lim = None
    for p in sorted(pts, key=lambda p: p["kappa_over_f0"]):
        if p["rel_error"] > thr:
            break
        lim = p["kappa_over_f0"]
    return lim


def check_operating_point(kappa_over_f0: float, fan_in: int, metric: str, *, warn: bool = True,
                          stacklevel: int = 2) -> dict:
    """Is (κ/f₀, fan-in) inside the region where the macromodel is within the threshold of the circuit?

    Returns {"inside", "kappa_over_f0", "fan_in", "limit_kappa_over_f0", "threshold", "metric", "message"};
    warns :class:`MacromodelValidityWarning` when outside (and ``warn``).
    """
    vmap = load_validity_map()
    lim = valid_kappa_limit(metric, fan_in, vmap)
    fans = sorted({p["fan_in"] for p in vmap["increment"]}) if metric == "increment" else [1]
    thr = float(vmap["threshold"])
    inside = lim is not None and kappa_over_f0 <= lim and (metric == "locking" or fan_in <= fans[-1])
    where = f"kappa/f0 = {kappa_over_f0:.3g}, fan-in {fan_in}"
    if inside:
        msg = (f"macromodel valid: {where} is inside the measured region (kappa/f0 <= {lim:.3g}: "
               f"{metric} within {thr:.0%} of the circuit)")
    elif lim is None:
        msg = (f"macromodel outside its validity map: {where}; no measured coupling strength keeps the {metric} "
               f"within {thr:.0%} of the circuit")
    elif metric == "increment" and fan_in > fans[-1]:
        msg = (f"macromodel outside its validity map: {where}; fan-in above {fans[-1]} is not measured "
               f"(measured: kappa/f0 <= {lim:.3g} within {thr:.0%} at fan-in {fans[-1]})")
    else:
        msg = (f"macromodel outside its validity map: {where} exceeds kappa/f0 <= {lim:.3g} (fan-in <= {fans[-1]}) "
               f"where the {metric} is within {thr:.0%} of the circuit; use a weaker coupling.fraction or the "
               f"circuit-level device")
    if warn and not inside:
        warnings.warn(msg, MacromodelValidityWarning, stacklevel=stacklevel)
    return {"inside": bool(inside), "kappa_over_f0": float(kappa_over_f0), "fan_in": int(fan_in),
            "limit_kappa_over_f0": lim, "threshold": thr, "metric": metric, "message": msg}
