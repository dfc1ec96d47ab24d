"""Energy of decode with a phase memory (``[decode] keys = "held"``) against re-injection from SRAM.

The physics of a held key is :mod:`mapping.backends.phase_memory`; this module charges it. Decode of token t
(averaged over t = 1..T: m = (T + 1)/2 keys per (bank, coordinate), the new token's included):

- **re-injected** (:func:`mapping.compiler.resources.pass_events`, decode): every key oscillator is re-injected and
  runs through the window (``injection_j``, ``oscillators_j``: banks · k · m per layer), its phase read from SRAM
  (``phases_in_j``: k · m phases per layer, bus included); the oscillators are off between tokens;
- **held**: only the receivers (banks · k) are injected and run the window in those terms and only the new
  token's phase is read (k); the new key is written a second time, to hold θ_t after its receiver moved
  (banks · k writes), and every held key runs for the whole inter-token time Δt:

      held_keys_j = L · [banks · k · m · P_osc · Δt + banks · k · (P_osc + P_driver) · t_inj]

  plus, with analog scores, the k · m rotated oscillators held over Δt (each is written once, as the query of its
  own token, and never re-read: its gate stays in its DAC, so the stored keys are read for the new token only).

Δt is ``decode.inter_token_s``; it cannot be shorter than the chip's decode latency per token: the schedule's
windows of the decode pass in order (:func:`mapping.energy.latency.pass_timeline`: periphery, DAC settling,
injection, settle, readout, serial conversions; with analog scores every layer's score rounds first: gate-DAC
settle, injection, mixer window, serial score conversions) (:func:`decode_latency_s`; ``feasible`` in the
report). Holding keys needs every unit its own tile (a spatial array, or as many tiles as units): on a tile that
serves other units in turn the held phases would be overwritten (refused by
:func:`mapping.compiler.inert.check_fields_act`). For re-injected keys the
report's held what-if takes Δt at that latency (back-to-back decoding). The receiver's own window is charged both in ``oscillators_j`` and inside its
held Δt (an upper estimate of one window per key, ≤ t_win/Δt of the held term).

:func:`report` gives the trade per key (one coordinate's keys of every bank): P_osc Δt held against the
re-injection's write, window, clock sink and SRAM read, the break-even Δt, and the age at which the held drift
reaches the write error of a fresh injection (:func:`mapping.backends.phase_memory.held_loss_age`).
"""

from __future__ import annotations

import dataclasses
import math

from ..backends.phase_memory import held_error_rms, held_loss_age
from .terms import ChipTerm, register_term

__all__ = ["TERMS", "events", "report", "decode_latency_s", "held_dt_s"]

TERMS = ("held_keys_j",)


def _held(s, c) -> bool:
    return bool(s.decode.held_keys) and c.phase == "decode"


def events(s, phase: str, analog: bool, n):
    """Decode with held keys: the receivers only are injected and run the window, the new token's phase only is
    read; the held cells (``held``, ``held_rot``) and the new key's hold write (``hold_writes``) are added
    (``n``: :class:`mapping.energy.context.PassEvents`)."""
    if not (s.decode.held_keys and phase == "decode"):
        return n
    k = s.shape.n_heads * s.shape.head_dim
    m = (s.shape.T + 1) / 2
    n = dataclasses.replace(n, osc=s.shape.banks * k, theta_in=k, held=s.shape.banks * k * m,
                            hold_writes=s.shape.banks * k, held_rot=k * m if analog else 0.0)
    if analog:  # the rotated key oscillators hold their phases and gates: only the new token's are written
        n = dataclasses.replace(n, rot_osc=k, keys_read=1.0)
    return n


def decode_latency_s(s, c) -> float:
    """The chip's decode latency per token [s] in the decode context ``c``: the schedule's decode pass
    (``c.timeline``, :func:`mapping.energy.latency.pass_timeline`, with analog scores every layer's score
    rounds included)."""
    return c.timeline["pass_s"] / c.timeline["tokens_per_pass"]


def held_dt_s(s, c) -> float:
    """Δt [s]: ``inter_token_s`` of held keys; for re-injected keys (the what-if of :func:`report`) the decode
    latency per token (back-to-back decoding)."""
    return float(s.decode.inter_token_s) if s.decode.held_keys else decode_latency_s(s, c)


def _energy(s, c) -> float:
    """One layer's ``held_keys_j`` [J/token] (decode with held keys)."""
    n = c.events
    return (n.held + n.held_rot) * s.array.p_osc_w * held_dt_s(s, c) + n.hold_writes * c.inj_power * c.t_inj


def _source(s, c) -> str:
    return (f"banks x k x (T+1)/2 held keys{' + the rotated ones' if c.analog else ''} x P_osc {s.array.p_osc_w:.3g} W "
            f"x dt {held_dt_s(s, c):.3g} s (decode.inter_token_s) + one hold write per new key (injection as above)")


def report(s, c) -> dict:
    """``phase_memory`` (decode only): Δt, its cycles, the held and re-injected energy per key and token, the
    break-even Δt, the predicted held drift at the oldest age and the age at which it reaches a fresh write's
    error."""
    if c.phase != "decode" or not c.layer.digital_scores:  # SSA layers hold no token phases
        return {}
    dt = held_dt_s(s, c)
    cycles = dt * c.f0
    V, f0 = c.tech.vdd, c.f0
    per_osc_reinject = (c.inj_power * c.t_inj + s.array.p_osc_w * c.t_win
                        + c.c_sink * V**2 * f0 * (c.t_inj + c.t_win))
    phase_read = s.array.readout_bits * (c.sram.e_ph + c.e_bus_bit)  # one coordinate's phase from SRAM
    reinject = s.shape.banks * per_osc_reinject + phase_read
    held = s.shape.banks * s.array.p_osc_w * dt
    sigma = math.sqrt(s.array.diffusion_rad2_per_s / f0)
    latency = decode_latency_s(s, c)
    return {"phase_memory": {
        "keys": "held" if s.decode.held_keys else "reinjected",
        "inter_token_s": dt, "cycles_per_token": cycles, "decode_latency_s": latency,
        "feasible": dt >= latency * (1 - 1e-12),
        "held_j_per_key_token": held, "reinjected_j_per_key_token": reinject,
        "held_over_reinjected": held / reinject,
        "break_even_inter_token_s": reinject / (s.shape.banks * s.array.p_osc_w) if s.array.p_osc_w > 0 else math.inf,
        "drift_rms_oldest_rad": float(held_error_rms(s.shape.T - 1, s.decode.freq_residual_rms, sigma, cycles)),
        "write_rms_rad": s.decode.write_rms_rad,
        "loss_age_tokens": held_loss_age(s.decode.write_rms_rad, s.decode.freq_residual_rms, sigma, cycles),
        "model": "per key (one coordinate, every bank) and token: held P_osc dt against re-injection (write, window, "
                 "clock sink) + its phase read from SRAM and the bus; the loss age is where the held drift "
                 "sqrt(sigma^2 N a + eps^2 N^2 a^2) reaches the RMS error of a fresh injection (the configured "
                 "[injection]'s predicted residual, charged as injected)",
    }}


register_term(ChipTerm("held_keys_j", _energy, _source, when=_held, events=events, report=report))
