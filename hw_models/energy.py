"""Energy and power per device, from the physics, with sources.

Notes
-----
Ring: the supply delivers Q = C V_DD per node per cycle (each node charges once), so the dynamic power
is P ≈ n C V_DD² f (Rabaey, Digital Integrated Circuits, ch. 5); the circuit model also gives the exact
average ⟨V_DD I_DD⟩ including short-circuit current (:func:`ring_power_circuit`). A resistive coupler
between two nodes dissipates ⟨(V_a − V_b)²⟩/R; for two identical rings at phase difference Δ this is
computed from the limit cycle. STNO: Joule power I² R of the bias current. Coupler programming: writing a
b-bit weight register, E = b · E_bit with E_bit = 10 fJ (assumed; SRAM write energy at 65 nm is of order
1–10 fJ/bit).
"""

from __future__ import annotations

import math

import numpy as np

from hw_models.params import ResistiveCoupler, RingOscillatorParams, STNOParams, TransmissionGateCoupler

__all__ = ["ring_power_cv2f", "ring_power_circuit", "coupler_power", "stno_power", "coupler_programming_energy",
           "E_BIT_WRITE_J"]

E_BIT_WRITE_J = 10e-15
"""Energy to write one bit of a coupler weight register [J] (assumed)."""


def ring_power_cv2f(ring: RingOscillatorParams, f_hz: float) -> float:
    """Dynamic power n C V_DD² f [W]."""
    return ring.n_stages * ring.c_load_f * ring.vdd_v ** 2 * f_hz


def ring_power_circuit(ring: RingOscillatorParams) -> float:
    """Average supply power ⟨V_DD I_DD⟩ over one limit cycle of the circuit model [W]."""
    from hw_models.ring import RingNetwork, pack_ring_params, supply_current
    from hw_models.ring_macro import limit_cycle

    lc = limit_cycle(ring)
    p = pack_ring_params(RingNetwork.single(ring))
    return float(ring.vdd_v * np.mean(supply_current(lc.x, p)))


def coupler_power(ring: RingOscillatorParams, coupler, delta_rad: float = math.pi / 2, node_a: int = 0,
                  node_b: int = 0) -> float:
    """Average power dissipated in one coupler between two identical rings at phase difference Δ [W]."""
    from hw_models.couplers import coupler_current
    from hw_models.ring_macro import limit_cycle

    lc = limit_cycle(ring)
    M = len(lc.theta)
    shift = int(round(delta_rad / (2 * math.pi) * M)) % M
    va = lc.x[:, node_a]
    vb = np.roll(lc.x[:, node_b], -shift)
    from hw_models.params import TransconductanceCoupler

    if isinstance(coupler, TransconductanceCoupler):
        return coupler.power(ring)
    i = coupler_current(coupler, ring, va, vb)
    return float(np.mean(i * (vb - va)))


def stno_power(p: STNOParams) -> float:
    """Joule power I² R [W] of the bias current."""
    return p.current_a ** 2 * p.resistance_ohm


def coupler_programming_energy(bits: int = 5, e_bit_j: float = E_BIT_WRITE_J) -> float:
    """Energy of one coupler programming event: bits × E_bit [J] (assumed model)."""
    if bits < 0:
        raise ValueError(f"bits must be >= 0, got {bits}")
    return bits * e_bit_j
