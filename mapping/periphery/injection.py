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

import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["INJECTION_MODES", "InjectionConfig", "inject_phases", "injection_time_s", "injection_energy_j",
           "residual_error_rms", "residual_error_terms", "transient_rms", "cycles_for_rms", "write_error_report",
           "layer_initial_errors"]

INJECTION_MODES = ("ideal", "injected")


@dataclass(frozen=True, kw_only=True)
class InjectionConfig:
    """How token phases are written (``[injection]`` in the chip TOML).

    Attributes
    ----------
    mode : {'ideal', 'injected'}
        ``ideal``: the network starts exactly at the token phases; ``injected``: Adler lock-in to a reference
        for ``cycles`` cycles (see :mod:`mapping.periphery.injection`).
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

    @property
    def injected(self) -> bool:
        """Whether the phases are written by an injection transient (``mode = "injected"``)."""
        return self.mode == INJECTION_MODES[1]


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


def transient_rms(strength_cycles: float) -> float:
    """RMS phase error [rad] left by Adler's transient for start errors ψ(0) uniform on (−π, π], Δω = 0.

    Parameters
    ----------
    strength_cycles : float
        K t, the injection strength times the injection time (dimensionless, >= 0).

    Notes
    -----
    With tan(ψ/2) = tan(ψ₀/2) c, c = e^{−Kt}, the mean square over ψ₀ uniform is, after w = tan(ψ₀/2) and
    s = c w, E[ψ²] = (8c/π) ∫₀^∞ atan(s)² / (c² + s²) ds. It is dominated by the oscillators that start near the
    unstable point ψ₀ = ±π: for large K t, E[ψ²] → 8 ln 2 · e^{−Kt}, so the RMS decays as 2.355 e^{−Kt/2} — at
    **half** the locking rate, not at the rate e^{−Kt} of a typical oscillator's error (the median error decays
    as 2 e^{−Kt}).

    Evaluated as ∫₀^{π/2} u² / (c² cos²u + sin²u) du (s = tan u: a smooth integrand on a finite interval) by
    24-point Gauss–Legendre on the panels [0, c], [c, 2c], [2c, 4c], … up to π/2: the integrand's poles sit at
    u = ± i artanh(c), about c from the real axis, and each panel is no longer than its distance from them, so
    every panel converges to rounding. Agrees with a 40-digit mpmath quadrature within 1e-15 relative at K t =
    2, 5, 12 and 20 (SciPy's ``quad`` on the s form, used before, was off by 1.1e-6 at K t = 12 and failed for
    K t > 372, where c² underflows), and needs no SciPy import (0.4 s in every new process that reports energy).
    From K t = 40 on, the asymptote (within 1.5e-18 there).
    """
    x = float(strength_cycles)
    if not (math.isfinite(x) and x >= 0):
        raise ValueError(f"strength_cycles must be a finite number >= 0, got {strength_cycles!r}")
    if x == 0.0:
        return math.pi / math.sqrt(3.0)
    c = math.exp(-x)
    if x >= 40.0:  # the asymptote: its relative error is 1.5e-18 at K t = 40 (mpmath), and c² would underflow
        return math.sqrt(8.0 * math.log(2.0) * c)
    edges = [0.0]
    e = c
    while e < 0.5 * math.pi:
        edges.append(e)
        e *= 2.0
    edges.append(0.5 * math.pi)
    b = np.asarray(edges)
    lo, hi = b[:-1, None], b[1:, None]
    nodes, weights = _gauss_legendre()
    u = 0.5 * (hi - lo) * nodes + 0.5 * (hi + lo)
    val = float(np.sum(0.5 * (hi - lo) * weights * u * u / ((c * np.cos(u)) ** 2 + np.sin(u) ** 2)))
    return math.sqrt(8.0 * c / math.pi * val)


@functools.lru_cache(maxsize=1)
def _gauss_legendre(n: int = 24):
    """Gauss–Legendre nodes and weights on [−1, 1]."""
    return np.polynomial.legendre.leggauss(n)


def residual_error_terms(config: InjectionConfig, detuning_rms: float = 0.0, sigma: float = 0.0) -> dict:
    """The three independent parts of the residual phase error after injection [rad, RMS].

    ``transient_rad``: :func:`transient_rms` at the locking rate ρ = sqrt(K² − Δω²) (Δω = ``detuning_rms``;
    the transient with detuning is taken at Δω = 0 with K → ρ, an approximation within a few per cent for
    Δω ≤ K/10); ``locked_offset_rad``: arcsin(Δω/K); ``noise_floor_rad``: σ/sqrt(2ρ), the stationary spread of
    the Ornstein–Uhlenbeck process about the lock (independent of the cycles: only a stronger injection lowers
    it); ``total_rad``: their root sum of squares.

    Parameters
    ----------
    config : InjectionConfig
    detuning_rms : float
        RMS detuning of the oscillators from the reference [rad/cycle], < K.
    sigma : float
        Phase-noise intensity [rad/sqrt(cycle)].
    """
    K = config.strength
    d = abs(float(detuning_rms))
    if not d < K:
        raise ValueError(f"detuning_rms must be below the injection strength K = {K:.4g} rad/cycle "
                         f"(the oscillators would not lock), got {detuning_rms!r}")
    rho = math.sqrt(K * K - d * d)
    t = {"transient_rad": transient_rms(rho * config.cycles), "locked_offset_rad": math.asin(d / K),
         "noise_floor_rad": float(sigma) / math.sqrt(2 * rho)}
    t["total_rad"] = math.sqrt(sum(v * v for v in t.values()))
    return t


def residual_error_rms(config: InjectionConfig, detuning_rms: float = 0.0, sigma: float = 0.0) -> float:
    """Predicted RMS residual phase error [rad] after injection (start errors uniform, as the chips draw them):
    ``total_rad`` of :func:`residual_error_terms`."""
    return residual_error_terms(config, detuning_rms, sigma)["total_rad"]


def cycles_for_rms(config: InjectionConfig, target_rad: float) -> float:
    """Injection cycles for which the transient alone leaves ``target_rad`` RMS (Δω = 0, no noise)."""
    if not 0 < target_rad < math.pi / math.sqrt(3.0):
        raise ValueError(f"target_rad must be in (0, pi/sqrt(3)), got {target_rad!r}")
    from scipy.optimize import brentq

    return brentq(lambda n: transient_rms(config.strength * n) - target_rad, 0.0, 200.0 / config.strength)


def write_error_report(config: InjectionConfig, *, detuning_rms: float, sigma: float, settle_cycles: float,
                       kappa_tau: float | None = None) -> dict:
    """The predicted write error of an injected chip against the error the settle window itself adds.

    The settle window's own first-order phase errors are the phase diffusion σ sqrt(τ_s) and the trim
    residual's drift Δω τ_s (RMS, τ_s in cycles); the injection is said to **dominate** when its total write
    error exceeds their root sum of squares. Every one of these phase errors reaches the increment divided by
    κτ_s on a Kuramoto chip (the increment is Δθ / κτ_s).

    Parameters
    ----------
    config : InjectionConfig
    detuning_rms : float
        RMS residual frequency of the oscillators after trim [rad/cycle].
    sigma : float
        Phase-noise intensity [rad/sqrt(cycle)].
    settle_cycles : float
        τ_s [cycles].
    kappa_tau : float, optional
        κτ_s of a Kuramoto chip [rad]; None for SSA chips.

    Returns
    -------
    dict with the terms of :func:`residual_error_terms`, ``settle_error_rad`` (the settle window's own),
    ``level`` ('dominates': above the settle error; 'comparable': above a third of it; 'small'), ``dominates``
    (bool), ``over_kappa_tau`` (total / κτ_s or None), ``cycles_to_settle_error`` (cycles after which the
    transient alone falls to a third of the settle error), ``strength_fraction_to_settle_error`` (the
    ``strength_fraction`` whose noise floor and locked offset are a third of it) and ``message``.
    """
    budget = math.hypot(float(sigma) * math.sqrt(settle_cycles), abs(float(detuning_rms)) * settle_cycles)
    if not abs(float(detuning_rms)) < config.strength:  # no lock: say so instead of failing in Chip.summary()
        k_fix = 2 * abs(float(detuning_rms)) / (2 * math.pi)
        return {"transient_rad": None, "locked_offset_rad": None, "noise_floor_rad": None, "total_rad": None,
                "cycles": float(config.cycles), "strength_rad_per_cycle": config.strength, "settle_error_rad": budget,
                "level": "dominates", "dominates": True, "over_kappa_tau": None, "cycles_to_settle_error": None,
                "strength_fraction_to_settle_error": k_fix if k_fix <= 0.5 else None,
                "message": (f"phase injection: the RMS trim residual {abs(float(detuning_rms)):.3g} rad/cycle is not "
                            f"below K = {config.strength:.3g} rad/cycle, so the oscillators do not lock and the "
                            f"written phases are not the token phases; raise strength_fraction (twice the "
                            f"residual: {k_fix:.3g})")}
    terms = residual_error_terms(config, detuning_rms, sigma)
    budget = math.hypot(float(sigma) * math.sqrt(settle_cycles), abs(float(detuning_rms)) * settle_cycles)
    tgt = budget / 3.0
    n_fix = cycles_for_rms(config, tgt) if 0 < tgt < math.pi / math.sqrt(3.0) else None
    # noise floor σ/sqrt(2K) <= tgt  ->  K >= σ² / (2 tgt²); locked offset arcsin(Δω/K) <= tgt  ->  K >= Δω / sin(tgt)
    k_need = max(float(sigma) ** 2 / (2 * tgt * tgt), abs(float(detuning_rms)) / math.sin(min(tgt, 1.0))) \
        if tgt > 0 else None
    k_fix = None if k_need is None else k_need / (2 * math.pi)
    tot = terms["total_rad"]
    msg = (f"phase injection: {config.cycles:g} cycles at K = {config.strength:.3g} rad/cycle leave {tot:.3g} rad "
           f"RMS (Adler transient from uniform start phases {terms['transient_rad']:.3g}, noise floor "
           f"{terms['noise_floor_rad']:.3g}, locked offset {terms['locked_offset_rad']:.3g}) against the settle "
           f"window's own {budget:.3g} rad")
    over = None if not kappa_tau else tot / kappa_tau
    if over is not None:
        msg += f"; / kappa*tau_s: {over:.3g} in the increment"
    level = "dominates" if tot > budget else "comparable" if tot > tgt else "small"
    if level != "small":
        fixes = []
        if n_fix is not None and terms["transient_rad"] > tgt:
            fixes.append(f"about {math.ceil(n_fix)} cycles bring the transient (RMS ~ 2.36 exp(-K n / 2), set by "
                         f"the oscillators that start near the unstable point) to {tgt:.2g} rad")
        if k_fix is not None and k_fix <= 0.5 and max(terms["noise_floor_rad"], terms["locked_offset_rad"]) > tgt:
            fixes.append(f"strength_fraction >= {k_fix:.3g} brings the noise floor sigma/sqrt(2K) and the locked "
                         f"offset arcsin(dw/K) to {tgt:.2g} rad")
        msg += (f"; the write error {'dominates' if level == 'dominates' else 'is comparable to'} the settle "
                f"window's" + (": " + "; ".join(fixes) if fixes else ""))
    return {**terms, "cycles": float(config.cycles), "strength_rad_per_cycle": config.strength,
            "settle_error_rad": budget, "level": level, "dominates": level == "dominates", "over_kappa_tau": over,
            "cycles_to_settle_error": n_fix, "strength_fraction_to_settle_error": k_fix, "message": msg}


def injection_time_s(config, f0_hz: float) -> float:
    """Injection time per layer [s] (0 in ``ideal`` mode): ``injection.cycles`` / f₀."""
    inj = config.injection
    return float(inj.cycles) / float(f0_hz) if inj.injected else 0.0


def injection_energy_j(config, device, n_oscillators: float) -> dict:
    """Energy of one injection of ``n_oscillators`` [J]: oscillators on during t_inj plus reference drivers.

    Returns {"oscillators_j", "drivers_j", "total_j", "source"}.
    """
    t = injection_time_s(config, device.f0_hz)
    osc = float(n_oscillators) * device.power_w * t
    drv, src = 0.0, "reference drivers not modelled for this device (only the oscillators' on-time is charged)"
    if t > 0:
        try:
            cur = device.oscillator.injection_driver(config.injection.strength * device.f0_hz)
            if cur is not None:
                drv = float(n_oscillators) * cur["driver_power_w"] * t
                src = cur["source"] + f"; I = {cur['amplitude_a']:.3g} A per oscillator"
        except Exception as exc:  # noqa: BLE001 - the device model may be unavailable: say so
            src = f"reference drivers not modelled ({type(exc).__name__}: {exc})"
    return {"oscillators_j": osc, "drivers_j": drv, "total_j": osc + drv,
            "source": f"N_osc x P_osc x t_inj (t_inj = {t:.3g} s) + drivers: {src}"}


def layer_initial_errors(chip, lm, sequence_ids, T: int, seed: int, sigma: float):
    """(banks, B, h, k_h, T) phase errors left by the injection for one layer, closed form plus linearised noise
    (:func:`inject_phases`); every (sequence, bank) draws from its own stream keyed on the sequence id (the same
    errors whatever the batch)."""
    from .. import units
    from ..seeds import PURPOSE, stream_seeds

    seq = np.asarray(sequence_ids, dtype=np.int64).ravel()
    fr = units.relative_frequency_to_rad_per_cycle(lm.freq_residual_rel)[..., :T]  # (banks, h, kh, T)
    out = np.empty((lm.banks, seq.size) + fr.shape[1:])
    for bank in range(lm.banks):
        for b, sid in enumerate(seq):
            key = int(stream_seeds(int(seed), PURPOSE["injection"], int(sid), bank)) % 2**63
            out[bank, b] = inject_phases(np.zeros(fr.shape[1:]).reshape(-1, T), fr[bank].reshape(-1, T),
                                         config=chip.config.injection, sigma=sigma, seed=key,
                                         method="closed-form").reshape(fr.shape[1:])
    return out
