"""Couplers between ring nodes: the current each one injects, as used by the macromodel and the circuit.

The coupler classes themselves (frozen params with behaviour: ``bidirectional`` / ``unilateral``,
``can_realise(sign, one_way)``, ``require(...)``, ``power(device)``) live in :mod:`hw_models.params`:

* :class:`~hw_models.params.ResistiveCoupler` and :class:`~hw_models.params.TransmissionGateCoupler` join two
  nodes; current flows both ways, so they realise only a positive, symmetric coupling (SSA pairs).
* :class:`~hw_models.params.TransconductanceCoupler` is a unilateral OTA: it senses the source node (a gate,
  no current drawn) and injects i = sign · g_m (V_src − V_DD/2) − g_out (V_rcv − V_DD/2) into the receiving
  node. ``sign = −1`` is the same circuit with its differential output pair crossed. It realises a causal,
  signed matrix (Kuramoto attention).

Convention everywhere (macromodel, circuit right-hand side, SPICE export): node **a** is the receiver, node
**b** the source; :func:`coupler_current` is the current into node a.
"""

from __future__ import annotations

import numpy as np

from hw_models.mosfet import ids_nmos_np
from hw_models.params import (ResistiveCoupler, RingOscillatorParams, TransconductanceCoupler,
                              TransmissionGateCoupler)

__all__ = ["COUPLERS", "coupler_current", "coupler_from_dict", "coupler_to_dict"]

COUPLERS = {"resistive": ResistiveCoupler, "transmission-gate": TransmissionGateCoupler,
            "transconductance": TransconductanceCoupler}
"""Coupler classes by their ``kind`` name (chip JSON)."""


def coupler_current(coupler, ring: RingOscillatorParams, va, vb):
    """Current [A] into node a (receiver) from the coupler joining it to node b (source); arrays broadcast.

    Resistor: (V_b − V_a)/R. Transmission gate: NMOS (gate V_DD) ∥ PMOS (gate 0), ring's KP/VTO/LAMBDA.
    Transconductor: sign · g_m (V_b − V_DD/2) − g_out (V_a − V_DD/2); it draws nothing from node b.
    """
    va, vb = np.asarray(va, float), np.asarray(vb, float)
    if isinstance(coupler, ResistiveCoupler):
        return (vb - va) / coupler.resistance_ohm
    if isinstance(coupler, TransmissionGateCoupler):
        bn = ring.kp_n_a_per_v2 * coupler.w_n_m / coupler.l_m
        bp = ring.kp_p_a_per_v2 * coupler.w_p_m / coupler.l_m
        i = ids_nmos_np(ring.vdd_v, vb, va, ring.vto_n_v, bn, ring.lambda_n_per_v)
        i = i - ids_nmos_np(0.0, -vb, -va, -ring.vto_p_v, bp, ring.lambda_n_per_v)
        return i
    if isinstance(coupler, TransconductanceCoupler):
        mid = 0.5 * ring.vdd_v
        return coupler.sign * coupler.gm_s * (vb - mid) - coupler.g_out_s * (va - mid)
    raise ValueError(f"unknown coupler {type(coupler).__name__}; valid: "
                     f"{', '.join(c.__name__ for c in COUPLERS.values())}")


def coupler_to_dict(coupler) -> dict:
    """{"kind": ..., "params": {...}} for a chip JSON."""
    from dataclasses import asdict

    for k, cls in COUPLERS.items():
        if type(coupler) is cls:
            return {"kind": k, "params": asdict(coupler)}
    raise ValueError(f"unknown coupler {type(coupler).__name__}")


def coupler_from_dict(d: dict, where: str = "coupler"):
    """Inverse of :func:`coupler_to_dict`, validated (unknown kind or field -> ValueError naming it)."""
    from dataclasses import fields

    if not isinstance(d, dict) or set(d) != {"kind", "params"}:
        raise ValueError(f"{where} must be an object with keys 'kind' and 'params'")
    if d["kind"] not in COUPLERS:
        raise ValueError(f"{where}.kind must be one of {sorted(COUPLERS)}, got {d['kind']!r}")
    cls = COUPLERS[d["kind"]]
    names = {f.name for f in fields(cls)}
    bad = sorted(set(d["params"]) - names)
    if bad:
        raise ValueError(f"{where}.params: unknown field(s) {bad}; valid: {sorted(names)}")
    c = cls(**d["params"])
    rng = {"resistance_ohm": (1.0, 1e9), "gm_s": (1e-12, 1e-1), "g_out_s": (0.0, 1e-1), "sigma_rel": (0.0, 0.5),
           "w_n_m": (1e-9, 1e-3), "w_p_m": (1e-9, 1e-3), "l_m": (1e-9, 1e-4), "gm_over_id_per_v": (1.0, 40.0)}
    for k, v in d["params"].items():
        if k in rng and not (rng[k][0] <= float(v) <= rng[k][1]):  # assumed envelopes (catch corrupt files)
            raise ValueError(f"{where}.params.{k} = {v!r} is outside the physical range [{rng[k][0]:g}, {rng[k][1]:g}]")
    return c
