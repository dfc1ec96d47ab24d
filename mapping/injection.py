"""Phase injection: writing the token phases by injection locking to a reference, its error, time and energy.

Notes
-----
With ``[injection] mode = "injected"`` every oscillator of a Kuramoto layer is locked to a reference of its
token phase θ_t for ``cycles`` cycles before the couplers switch on. In the frame of the reference (time in
cycles) the phase network integrated on the engine is

    dθ_i = [2π ε_i + K_inj sin(θ_t − θ_i)] dt + σ dW_i,      K_inj = 2π · strength_fraction [rad/cycle],

(``oscsim.engine.PhaseNetwork`` with an ``ExternalDrive`` of amplitude K_inj at zero frequency and phase θ_t),
ε_i the oscillator's residual frequency error after trim. The error ψ = θ − θ_t follows Adler's equation
dψ/dt = 2π ε − K_inj sin ψ (:func:`hw_models.injection.adler_phase_error`, closed form): it decays at the
locking rate ρ = sqrt(K_inj² − (2πε)²) from ψ(0) to the locked offset arcsin(2πε/K_inj). ψ(0) is drawn
uniform on (−π, π] (the phase the oscillator was left in: assumed), so the residual after n cycles is of
order 2 e^{−ρn} plus the locked offset and the noise (stationary RMS σ/sqrt(2ρ)). The periphery subtracts the
intended θ_t, so the residual enters the increment as error/(κτ_s). An oscillator that starts a distance δ
from the unstable point ψ = π escapes only after ~ln(4/δ)/K_inj, so the residual has a tail that decays more
slowly than the typical e^{−ρn}. ``mode = "ideal"`` starts the network
exactly at θ_t (the default: the idealisation the chip used so far).

Time: ``cycles``/f₀ per layer (:func:`injection_time_s`). Energy per layer (:func:`injection_energy_j`): the
oscillators run during the injection (N_osc P_osc t_inj) plus the reference drivers: ring devices, the
class-B current driver of the current that gives K_inj through the ring's PPV
(:func:`hw_models.injection.ring_injection_current`); other devices, not modelled (stated in the source).

References
----------
R. Adler, Proc. IRE 34, 351 (1946).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["INJECTION_MODES", "InjectionConfig", "inject_phases", "injection_time_s", "injection_energy_j",
           "residual_error_rms", "layer_initial_errors"]

INJECTION_MODES = ("ideal", "injected")
INJECTION_STREAM = 6
"""Stream family of the injection draws (after mapping.seeds.PURPOSE's 1-5), so they never reuse another's."""


@dataclass(frozen=True, kw_only=True)
class InjectionConfig:
    """How token phases are written (``[injection]`` in the chip TOML).

    Attributes
    ----------
    mode : {'ideal', 'injected'}
        ``ideal``: the network starts exactly at the token phases; ``injected``: Adler lock-in to a reference
        for ``cycles`` cycles (see :mod:`mapping.injection`).
    cycles : float
        Injection time [cycles of f₀], (0, 1e6].
    strength_fraction : float
        K_inj as a fraction of f₀ (K_inj = 2π · strength_fraction rad/cycle; the locking range is
        ± strength_fraction · f₀), (0, 0.5]. Default 0.05 (assumed; a 5 % locking range).
    """

    mode: str = "ideal"
    cycles: float = 20.0
    strength_fraction: float = 0.05

    def __post_init__(self):
        if self.mode not in INJECTION_MODES:
            raise ValueError(f"injection.mode must be one of {', '.join(INJECTION_MODES)}; got {self.mode!r}")
        for name, hi in (("cycles", 1e6), ("strength_fraction", 0.5)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and 0 < v <= hi):
                raise ValueError(f"injection.{name} must be a number in (0, {hi:g}], got {v!r}")

    @property
    def strength(self) -> float:
        """K_inj [rad/cycle]."""
        return 2 * math.pi * self.strength_fraction


def inject_phases(target, detuning, *, config: InjectionConfig, sigma: float = 0.0, seed: int = 0,
                  method: str = "engine"):
    """Phases after injection locking to ``target`` (the engine's phase network with the injection drive).

    Parameters
    ----------
    target : (G, N) token phases [rad].
    detuning : (G, N) or broadcastable, residual angular frequency 2π ε [rad/cycle].
    config : InjectionConfig
    sigma : float
        Phase-noise intensity [rad/sqrt(cycle)].
    seed : int
        Draws ψ(0) and the noise.
    method : {'engine', 'closed-form'}
        ``engine``: the phase network with the injection drive (the reference). ``closed-form``:
        :func:`hw_models.injection.adler_phase_error` plus, when σ > 0, the noise linearised about the
        trajectory's end: Gaussian of variance σ² (1 − e^{−2ρt}) / (2ρ) when locked (an Ornstein–Uhlenbeck
        process at the locking rate ρ), σ² t when not (what chips use: the engine costs a group per oscillator).

    Returns
    -------
    (G, N) phases [rad] (target + residual error, unwrapped near the target).
    """
    target = np.asarray(target, dtype=np.float64)
    det = np.broadcast_to(np.asarray(detuning, dtype=np.float64), target.shape)
    rng = np.random.default_rng([int(seed), 0x1A7])
    psi0 = rng.uniform(-np.pi, np.pi, target.shape)
    t = float(config.cycles)
    if method == "closed-form":
        from hw_models.injection import adler_lock_rate, adler_phase_error

        psi = adler_phase_error(psi0, det, config.strength, t)
        if sigma > 0:
            rho = adler_lock_rate(det, config.strength)
            with np.errstate(divide="ignore", invalid="ignore"):
                var = np.where(rho > 0, sigma**2 * -np.expm1(-2 * rho * t) / (2 * np.where(rho > 0, rho, 1.0)),
                               sigma**2 * t)
            psi = psi + np.sqrt(var) * rng.standard_normal(psi.shape)
        return target + psi
    if method != "engine":
        raise ValueError(f"method must be 'engine' or 'closed-form', got {method!r}")
    from oscsim.engine import ExternalDrive, Heun, PhaseNetwork, SaveAt, StochasticHeun, simulate

    # every oscillator is its own one-oscillator group: no coupling during injection
    shape = target.shape
    y0 = (target + psi0).reshape(-1, 1)
    model = PhaseNetwork(det.reshape(-1, 1), np.zeros((1, 1)), sigma=float(sigma),
                         drive=ExternalDrive(amplitude=config.strength, angular_frequency=0.0,
                                             phase=target.reshape(-1, 1)))
    # 100 Heun steps per 1/K_inj: error < 5e-5 rad (measured against the closed form, tests)
    n = max(int(math.ceil(t * config.strength * 100)), 8)
    solver = StochasticHeun() if sigma > 0 else Heun()
    sol = simulate(model, solver, 0.0, t, t / n, y0, save=SaveAt(np.array([t])), seed=int(rng.integers(2**31)))
    out = np.asarray(sol.y_final).reshape(shape)
    return target + (np.pi - np.mod(np.pi - (out - target), 2 * np.pi))


def residual_error_rms(config: InjectionConfig, detuning_rms: float = 0.0, sigma: float = 0.0) -> float:
    """Predicted RMS residual [rad] after injection: the transient for ψ(0) uniform (RMS π/√3 at Δω = 0 decays
    as e^{−K n} near lock: bounded by 2 e^{−K n}), the locked offset Δω/K and the noise σ/sqrt(2K)."""
    K = config.strength
    tr = 2.0 * math.exp(-K * config.cycles)
    return math.sqrt(tr**2 + (detuning_rms / K) ** 2 + sigma**2 / (2 * K))


def injection_time_s(config, f0_hz: float) -> float:
    """Injection time per layer [s] (0 in ``ideal`` mode): ``injection.cycles`` / f₀."""
    inj = config.injection
    return 0.0 if inj.mode == "ideal" else float(inj.cycles) / float(f0_hz)


def injection_energy_j(config, device, n_oscillators: float) -> dict:
    """Energy of one injection of ``n_oscillators`` [J]: oscillators on during t_inj plus reference drivers.

    Returns {"oscillators_j", "drivers_j", "total_j", "source"}.
    """
    t = injection_time_s(config, device.f0_hz)
    osc = float(n_oscillators) * device.power_w * t
    drv, src = 0.0, "reference drivers not modelled for this device (only the oscillators' on-time is charged)"
    if t > 0 and device.name.startswith("ring"):
        try:
            import hw_models as hw
            from hw_models.injection import ring_injection_current

            ring = hw.cmos_65nm_ring()
            cur = ring_injection_current(ring, config.injection.strength * device.f0_hz)
            drv = float(n_oscillators) * cur["driver_power_w"] * t
            src = cur["source"] + f"; I = {cur['amplitude_a']:.3g} A per ring"
        except Exception as exc:  # noqa: BLE001 - the device model may be unavailable: say so
            src = f"reference drivers not modelled ({type(exc).__name__}: {exc})"
    return {"oscillators_j": osc, "drivers_j": drv, "total_j": osc + drv,
            "source": f"N_osc x P_osc x t_inj (t_inj = {t:.3g} s) + drivers: {src}"}


def layer_initial_errors(chip, lm, sequence_ids, T: int, seed: int, sigma: float):
    """(banks, B, h, k_h, T) phase errors left by the injection for one layer, closed form plus linearised noise
    (:func:`inject_phases`); every (sequence, bank) draws from its own stream keyed on the sequence id (the same
    errors whatever the batch)."""
    from . import units
    from .seeds import stream_seeds

    seq = np.asarray(sequence_ids, dtype=np.int64).ravel()
    fr = units.relative_frequency_to_rad_per_cycle(lm.freq_residual_rel)[..., :T]  # (banks, h, kh, T)
    out = np.empty((lm.banks, seq.size) + fr.shape[1:])
    for bank in range(lm.banks):
        for b, sid in enumerate(seq):
            key = int(stream_seeds(int(seed), INJECTION_STREAM, int(sid), bank)) % 2**63
            out[bank, b] = inject_phases(np.zeros(fr.shape[1:]).reshape(-1, T), fr[bank].reshape(-1, T),
                                         config=chip.config.injection, sigma=sigma, seed=key,
                                         method="closed-form").reshape(fr.shape[1:])
    return out
