"""Integrate coupled-ring networks for the settle window and read every ring's phase, against a reference
calibrated on nominal rings through the same integrator, step and readout (:func:`simulate_heads`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from hw_models.coupled_rings.device import CircuitDevice
from hw_models.coupled_rings.head import CircuitHead, build_head
from hw_models.coupled_rings.injection import inject_rings
from hw_models.coupled_rings.readout import run_readout
from hw_models.waveform import wrap

__all__ = ["reference_offset", "reference_offset_injected", "simulate_heads"]


@lru_cache(maxsize=16)
def reference_offset(dev: CircuitDevice, settle_cycles: float, steps_per_period: int, stochastic: bool):
    """Readout phase of nominal uncoupled rings placed at 16 phases, minus the placement: (mean, std) [rad].

    The mean is the reference's phase calibration (integrator and crossing-interpolation bias common to all
    rings); the std is what that calibration cannot remove (reported)."""
    th = 2 * math.pi * np.arange(16) / 16
    head = build_head(dev, th[None], np.zeros((1, 16, 16)), steps_per_period=steps_per_period,
                      stochastic=stochastic)
    head.params[:, 9] = 0.0
    psi = run_readout(head, settle_cycles, 0, 0.0)
    d = wrap(psi[0] - th)
    return float(np.angle(np.mean(np.exp(1j * d)))), float(np.std(d))


@lru_cache(maxsize=16)
def reference_offset_injected(dev: CircuitDevice, settle_cycles: float, steps_per_period: int, stochastic: bool,
                               cycles: float, strength: float):
    """The reference calibration of a chip that writes its phases by injection: nominal uncoupled rings at 16
    phases written by :func:`inject_rings` (from ψ₀ = 0) and read; (mean, std) [rad] of read − intended. The
    mean holds the circuit's common lock offset (and the readout's bias), which a chip calibrates on replica
    rings through the same write and read path; the std (the θ-dependent release error) stays in the chip."""
    th = 2 * math.pi * np.arange(16) / 16
    head = build_head(dev, th[None], np.zeros((1, 16, 16)), steps_per_period=steps_per_period,
                      stochastic=stochastic)
    head.params[:, 9] = 0.0
    y = inject_rings(head, cycles=cycles, strength_rad_per_cycle=strength, psi0=np.zeros((1, 16)))["y"]
    psi = run_readout(head, settle_cycles, 0, 0.0, y_start=y)
    d = wrap(psi[0] - th)
    return float(np.angle(np.mean(np.exp(1j * d)))), float(np.std(d))



def simulate_heads(head: CircuitHead, *, settle_cycles: float, seed=0, return_waveforms: bool = False,
                   y_start=None, reference=None) -> dict:
    """Integrate the networks for τ_s (couplers on), then read every ring's phase (couplers off).

    ``seed``: an int, or one stream seed per network (G,) (uint64, :func:`hw_models.streams.stream_seeds`).

    Returns a dict: ``psi`` (G, T) read phase in the reference frame [rad], ``dtheta`` (G, T) =
    wrap(ψ̂ − θ₀) [rad], ``reference_offset_rad`` and ``reference_spread_rad`` (the phase calibration of the
    reference and its residual spread over placement phases); with ``return_waveforms`` also ``t`` (S,) [s] and
    ``v0`` (S, G, T) node-0 voltages [V] over the settle and readout windows. ``y_start`` (G, D): the start state
    (e.g. what :func:`inject_rings` wrote) instead of ``head.y0`` (and a fresh draw of the OU currents).
    ``reference``: (offset, spread) [rad] of the reference calibration when the phases were written another way
    (:func:`reference_offset_injected`); default: nominal rings placed on their cycle."""
    if reference is None:
        off, spread = reference_offset(head.device, float(settle_cycles), head.steps_per_period, head.stochastic)
    else:
        off, spread = (float(x) for x in reference)
    waves = {"v0": None} if return_waveforms else {}
    psi = run_readout(head, settle_cycles, seed, off, waves, y_start=y_start)
    out = {"psi": psi, "dtheta": wrap(psi - head.theta0), "reference_offset_rad": off,
           "reference_spread_rad": spread, "slope_rad_per_cycle": waves["slope_rad_per_cycle"]}
    if return_waveforms:
        out.update(t=waves["t"], v0=waves["v0"])
    return out
