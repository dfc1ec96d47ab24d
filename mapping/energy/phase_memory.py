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

Δt is ``decode.inter_token_s``; it cannot be shorter than the chip's decode latency per token
L · (t_DAC + t_inj + τ_s + t_read + t_conv) plus, with analog scores, L · (t_inj + t_read + t_conv) for the score
window, t_conv one conversion (:func:`decode_latency_s`; ``feasible`` in the report). For re-injected keys the
report's held what-if takes Δt at that latency (back-to-back decoding). The receiver's own window is charged both in ``oscillators_j`` and inside its
held Δt (an upper estimate of one window per key, ≤ t_win/Δt of the held term).

:func:`report` gives the trade per key (one coordinate's keys of every bank): P_osc Δt held against the
re-injection's write, window, clock sink and SRAM read, the break-even Δt, and the age at which the held drift
reaches the write error of a fresh injection (:func:`mapping.backends.phase_memory.held_loss_age`).
"""

from __future__ import annotations

import math

from ..backends.phase_memory import held_error_rms, held_loss_age
from . import constants as ec

__all__ = ["TERMS", "events", "add_terms", "sources", "report", "decode_latency_s", "held_dt_s"]

TERMS = ("held_keys_j",)


def _held(s, c: dict) -> bool:
    return bool(s.held_keys) and c["phase"] == "decode"


def events(s, phase: str, analog: bool, n: dict) -> dict:
    """Decode with held keys: the receivers only are injected and run the window, the new token's phase only is
    read; the held cells (``held``, ``held_rot``) and the new key's hold write (``hold_writes``) are added."""
    if not (s.held_keys and phase == "decode"):
        return n
    n = dict(n)
    k = s.n_heads * s.head_dim
    m = (s.T + 1) / 2
    n.update(osc=s.banks * k, theta_in=k, held=s.banks * k * m, hold_writes=s.banks * k,
             held_rot=k * m if analog else 0.0)
    if analog:  # the rotated key oscillators hold their phases and gates: only the new token's are written
        n.update(rot_osc=k, keys_read=1.0)
    return n


def decode_latency_s(s, c: dict) -> float:
    """The chip's decode latency per token [s]: every layer's windows in order — the score window first with
    analog scores (injection, readout window, conversion) — then DAC settling, injection, settle and readout
    windows and one conversion (the new token's channels lie on distinct ADCs: assumed, so one conversion time,
    not the prefill's ``adc_serial`` of a shared ADC's 64 channels)."""
    t_conv = 1.0 / ec.ADC_RATE_HZ.value
    layer = c["t_dac"] + c["t_inj"] + c["t_win"] + t_conv
    if c["analog"]:
        layer += c["t_inj"] + c["t_read"] + t_conv
    return s.n_layers * layer


def held_dt_s(s, c: dict) -> float:
    """Δt [s]: ``inter_token_s`` of held keys; for re-injected keys (the what-if of :func:`report`) the decode
    latency per token (back-to-back decoding)."""
    return float(s.inter_token_s) if s.held_keys else decode_latency_s(s, c)


def add_terms(s, c: dict, b: dict, sram: dict) -> None:
    """Add one layer's ``held_keys_j`` [J/token] (decode with held keys)."""
    if not _held(s, c):
        return
    n = c["n"]
    dt = held_dt_s(s, c)
    b["held_keys_j"] = b.get("held_keys_j", 0.0) + (
        (n["held"] + n["held_rot"]) * s.p_osc_w * dt + n["hold_writes"] * c["inj_power"] * c["t_inj"])


def sources(s, c: dict) -> dict:
    """The source of ``held_keys_j``."""
    if not _held(s, c):
        return {}
    how = "decode.inter_token_s"
    return {"held_keys_j": f"banks x k x (T+1)/2 held keys{' + the rotated ones' if c['analog'] else ''} x P_osc "
                           f"{s.p_osc_w:.3g} W x dt {held_dt_s(s, c):.3g} s ({how}) + one hold write per new key "
                           f"(injection as above)"}


def report(s, c: dict) -> dict:
    """``phase_memory`` (decode only): Δt, its cycles, the held and re-injected energy per key and token, the
    break-even Δt, the predicted held drift at the oldest age and the age at which it reaches a fresh write's
    error."""
    if c["phase"] != "decode" or not c["lk"].digital_scores:  # SSA layers hold no token phases
        return {}
    dt = held_dt_s(s, c)
    cycles = dt * c["f0"]
    V, f0 = c["V"], c["f0"]
    per_osc_reinject = (c["inj_power"] * c["t_inj"] + s.p_osc_w * c["t_win"]
                        + c["c_sink"] * V**2 * f0 * (c["t_inj"] + c["t_win"]))
    phase_read = s.readout_bits * (c["e_ph"] + c["e_bus_bit"])  # one coordinate's phase from SRAM
    reinject = s.banks * per_osc_reinject + phase_read
    held = s.banks * s.p_osc_w * dt
    sigma = math.sqrt(s.diffusion_rad2_per_s / f0)
    latency = decode_latency_s(s, c)
    return {"phase_memory": {
        "keys": "held" if s.held_keys else "reinjected",
        "inter_token_s": dt, "cycles_per_token": cycles, "decode_latency_s": latency,
        "feasible": dt >= latency * (1 - 1e-12),
        "held_j_per_key_token": held, "reinjected_j_per_key_token": reinject,
        "held_over_reinjected": held / reinject,
        "break_even_inter_token_s": reinject / (s.banks * s.p_osc_w) if s.p_osc_w > 0 else math.inf,
        "drift_rms_oldest_rad": float(held_error_rms(s.T - 1, s.freq_residual_rms, sigma, cycles)),
        "write_rms_rad": s.write_rms_rad,
        "loss_age_tokens": held_loss_age(s.write_rms_rad, s.freq_residual_rms, sigma, cycles),
        "model": "per key (one coordinate, every bank) and token: held P_osc dt against re-injection (write, window, "
                 "clock sink) + its phase read from SRAM and the bus; the loss age is where the held drift "
                 "sqrt(sigma^2 N a + eps^2 N^2 a^2) reaches the RMS error of a fresh injection (the configured "
                 "[injection]'s predicted residual, charged as injected)",
    }}
