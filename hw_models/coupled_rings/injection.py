"""Phase in at circuit level: token phases written into coupled rings by injection locking to a reference
current (:func:`inject_rings`), the drive that gives a chosen Adler strength, and the residuals of the write.
"""

from __future__ import annotations

import math

import numpy as np

from hw_models.coupled_rings.device import CircuitDevice
from hw_models.coupled_rings.head import CircuitHead, numerical_cycle, place_on_limit_cycle, place_on_own_cycle
from hw_models.coupled_rings.integrate import crossings, integrate_networks
from hw_models.coupled_rings.readout import start_state
from hw_models.streams import stream_seeds
from hw_models.waveform import wrap

__all__ = ["injection_drive", "inject_rings", "injection_residuals"]


def injection_drive(dev: CircuitDevice, strength_rad_per_cycle: float, steps_per_period: int, stochastic: bool):
    """Current amplitude I [A], PPV phase α [rad] and reference ω_ref [rad/s] that lock the nominal ring with
    Adler strength K = ``strength_rad_per_cycle`` through node 0 (:func:`hw_models.injection.ring_injection_current`,
    K = I |V₁| / C), in the frame of the chip's numerical reference (the readout's ω_ref)."""
    from hw_models.injection import ring_injection_current

    _, per_ref = numerical_cycle(dev, dev.period_s / int(steps_per_period), bool(stochastic))
    cur = ring_injection_current(dev.ring, float(strength_rad_per_cycle) / per_ref)
    return cur["amplitude_a"], cur["ppv_phase_rad"], 2 * math.pi / per_ref


def inject_rings(head: CircuitHead, *, cycles: float, strength_rad_per_cycle: float, psi0, seed=0,
                 save_from_cycle: float | None = None) -> dict:
    """Write the head's token phases θ₀ by injection locking at circuit level (couplers off).

    Every ring starts on its own limit cycle at θ₀ + ψ₀ (the phase it was left in) and receives
    i_r(t) = I cos(ω_ref t + φ_r) into node 0 for ``cycles`` reference cycles; with φ_r = θ₀,r + α − π/2 −
    ω_ref t_inj the cycle-averaged phase equation is Adler's, dψ/dt = Δω − K sin ψ, ψ = θ − θ_ref, locking
    each ring at its token phase when the window ends (α the PPV phase, K = I|V₁|/C: the ring's own strength,
    which varies with its load mismatch and trim). Thermal node noise (and flicker) act as in the settle
    window; the noise is keyed on ``seed`` (per network) like the settle run's.

    Parameters
    ----------
    head : CircuitHead
    cycles : float
        Injection time [reference cycles].
    strength_rad_per_cycle : float
        K of the nominal ring [rad/cycle] (``injection.strength``).
    psi0 : (G, T) start errors [rad].
    seed : int or (G,) uint64 stream seeds.
    save_from_cycle : float, optional
        Also return node-0 waveforms from this time on (``t`` (S,) [s], ``v0`` (S, G, T) [V]).

    Returns
    -------
    dict with ``y`` (G, D) the state when the injection ends (the settle window's start), ``amplitude_a`` (I),
    ``strength_rad_s`` (nominal K), ``t_inj_s``; with ``save_from_cycle`` also ``t`` and ``v0``.
    """
    dev = head.device
    G, T = head.theta0.shape
    n = dev.ring.n_stages
    if not (isinstance(cycles, (int, float)) and math.isfinite(cycles) and cycles > 0):
        raise ValueError(f"cycles must be a number > 0, got {cycles!r}")
    psi0 = np.broadcast_to(np.asarray(psi0, float), (G, T))
    amp, alpha, w_ref = injection_drive(dev, strength_rad_per_cycle, head.steps_per_period, head.stochastic)
    dt0 = dev.period_s / head.steps_per_period
    per_ref = 2 * math.pi / w_ref
    n_inj = max(int(round(float(cycles) * per_ref / dt0)), 1)
    t_inj = float(cycles) * per_ref
    dt = t_inj / n_inj
    if head.calibration is None:
        cycle, _ = numerical_cycle(dev, dt0, head.stochastic)
        y_place = place_on_limit_cycle(dev, head.theta0 + psi0, cycle).reshape(G, T * n)
    else:  # own-cycle placement: the head's calibration rows in the order of its rings
        idx = head.calibration_index
        y_place = place_on_own_cycle(head.calibration, (head.theta0 + psi0).reshape(-1), idx).reshape(G, T * n)
    y0, sig = start_state(head, seed)
    y0 = y0.copy()
    y0[:, :T * n] = y_place
    p = head.params.copy()
    p[:, 9] = 0.0  # couplers off while the phases are written
    p[:, 14] = amp
    p[:, 15] = w_ref
    p[:, 16] = p.shape[1]
    phi = head.theta0 + alpha - 0.5 * math.pi - w_ref * t_inj
    p = np.concatenate([p, phi], axis=1)
    s_inj = stream_seeds(0, np.asarray(seed, dtype=np.uint64), 11) if np.ndim(seed) else int(seed) + 15485863
    out = {"amplitude_a": amp, "strength_rad_s": float(strength_rad_per_cycle) / per_ref, "t_inj_s": t_inj}
    if save_from_cycle is None:
        out["y"] = integrate_networks(p, y0, sig, t_inj, dt, s_inj, head.stochastic)
    else:
        k0 = min(max(int(round(float(save_from_cycle) * per_ref / dt)), 0), n_inj)
        ts, ys = integrate_networks(p, y0, sig, t_inj, dt, s_inj, head.stochastic, save_from=k0)
        out["y"] = ys[-1]
        out["t"], out["v0"] = ts, ys[:, :, 0:T * n:n]
    return out


def injection_residuals(head: CircuitHead, t, v0, omega_ref: float, t_inj: float):
    """ψ = θ − θ_ref [rad] at every rising node-0 crossing during the injection: (list of G·T arrays of times
    [s] relative to the window's end, list of ψ) — the reference of ring r has phase ω_ref (t − t_inj) + θ₀,r."""
    G, T = head.theta0.shape
    vm = 0.5 * head.device.ring.vdd_v
    _, ri, tc = crossings(np.asarray(t), np.asarray(v0).reshape(len(t), G * T), vm)
    th0 = head.theta0.reshape(-1)
    times, psis = [], []
    for r in range(G * T):
        tk = np.sort(tc[ri == r])
        times.append(tk - t_inj)
        psis.append(wrap(-omega_ref * (tk - t_inj) - th0[r]))
    return times, psis
