"""Spin-torque chips: when the phase reduction holds, and the complex-amplitude network when it does not.

Notes
-----
A spin-torque oscillator (universal auto-oscillator model, Slavin & Tiberkevich 2009; :mod:`hw_models.stno`)
has an amplitude degree of freedom relaxing at Γ_p = p₀ (Γ_G Q + σI). Its phase model (the chip's default
macromodel, coupling H(Δ) = Ω √(1+ν²) sin(Δ − β + arctan ν)) eliminates the amplitude adiabatically, which
needs (DESIGN §5.4)

- the settle window to span several relaxation times, τ_s ≥ ``RELAX_TIMES`` / Γ_p (the amplitude transient
  after the couplers switch on lasts ~1/Γ_p, during which the amplitude-mediated part ν of the coupling is
  missing), and
- the coupling into an oscillator to stay well below Γ_p, κ · gain_range ≤ ``COUPLING_FRACTION`` · Γ_p.

Otherwise (``stno_model = "auto"`` or ``"amplitude"``) the Kuramoto layer integrates the complex amplitudes
(the :class:`STNOAmplitude` backend, the phase macromodel's step with this integrator)
of the same network on the engine (:class:`oscsim.engine.StuartLandauNetwork`), in the frame rotating at the
free-running ω_g, time in cycles of f₀ = ω_g/2π:

    dc_i = [(−i(2π ε_i − N p₀) + (σI − Γ_G)) c_i + (−i N − (Γ_G Q + σI)) |c_i|² c_i
            + Σ_j Ω_ij e^{iβ} c_j] dt + σ_n dZ_i,     c_i(0) = √p₀ e^{−iθ_i(0)},

with the chip's residual frequency errors ε_i (mismatch after trim), the coupling of the phase model mapped to
Ω_ij = C_ij / √(1+ν²) and β = arctan ν (so the adiabatic limit is exactly the phase model's pure sine),
thermal noise σ_n = √(2 D_n) of the preset, and the phase read as θ = −arg c. After τ_s the couplers open
and the readout window is integrated with the couplers off (the amplitude relaxes back, shifting the phase
by the nonlinear frequency shift: part of what a real readout sees).

The thresholds ``RELAX_TIMES`` and ``COUPLING_FRACTION`` are where the two models agree within 2 % in the
increment (measured, see tests/test_realism_stno.py and BENCHMARKS.md, section *Devices*).

References
----------
A. Slavin, V. Tiberkevich, IEEE Trans. Magn. 45, 1875 (2009).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..periphery.readout import wrap
from .kuramoto import KuramotoBackend
from .phase import phase_settings, phase_step
from .registry import register

__all__ = ["STNO_MODELS", "RELAX_TIMES", "COUPLING_FRACTION", "STNOAmplitudeModel", "stno_regime",
           "PhaseReductionWarning", "STNOAmplitude", "regime_summary"]

STNO_MODELS = ("auto", "phase", "amplitude")
RELAX_TIMES = 30.0
"""τ_s Γ_p at or above which the phase reduction is taken as valid (measured: the increment error of the
phase model vs the amplitude model falls below 2 % there at weak coupling)."""
COUPLING_FRACTION = 0.05
"""κ · gain_range / Γ_p at or below which the coupling is weak enough for the phase reduction (measured)."""


class PhaseReductionWarning(UserWarning):
    """The spin-torque phase model is used (or was asked for) outside its validity."""


def _preset():
    import hw_models as hw

    return hw.vortex_stno()


def _stno_params(device):
    """STNOParams of a chip device (:class:`mapping.compiler.device.ChipDevice`), an oscillator object, params, or
    None (the vortex preset)."""
    if device is None:
        return _preset()
    osc = getattr(device, "oscillator", device)
    return getattr(osc, "params", osc)


def stno_regime(config, device=None, kind: str = "kuramoto") -> dict:
    """Which spin-torque model a chip uses and why, with the two time scales.

    Parameters
    ----------
    config : ChipConfig
    device : ChipDevice, SpinTorqueOscillator, STNOParams or None
        The chip's spin-torque device (None: the vortex preset); its f₀ is the chip's.
    kind : {'kuramoto', 'ssa'}

    Returns
    -------
    dict with ``model`` ('phase' or 'amplitude'), ``requested``, ``phase_reduction_valid``, ``reason``,
    ``fix``, ``relaxation_time_s`` (1/Γ_p), ``settle_time_s``, ``gamma_p_rad_per_s``,
    ``coupling_max_rad_per_s``, ``nu``, and the thresholds.
    """
    from hw_models.stno import stno_frequency_hz, stno_nu, stno_relaxation_rate

    p = _stno_params(device)
    f0_hz = stno_frequency_hz(p)
    gp = stno_relaxation_rate(p)
    if kind == "kuramoto":
        settle_cycles = config.settle_cycles
        coupling = 2 * math.pi * config.coupling.fraction * f0_hz * config.coupling.gain_range
        what = "settle window"
    else:
        settle_cycles = config.ssa.settle_cycles
        coupling = 2 * math.pi * config.coupling.fraction * f0_hz
        what = "SSA settle window"
    settle_s = settle_cycles / f0_hz
    time_ok = settle_s * gp >= RELAX_TIMES
    coup_ok = coupling <= COUPLING_FRACTION * gp
    valid = time_ok and coup_ok
    reasons, fixes = [], []
    if not time_ok:
        reasons.append(f"the {what} {settle_s * 1e9:.3g} ns is shorter than {RELAX_TIMES:g}/Gamma_p = "
                       f"{RELAX_TIMES / gp * 1e9:.3g} ns (1/Gamma_p = {1e9 / gp:.3g} ns)")
        key = "settle_cycles" if kind == "kuramoto" else "ssa.settle_cycles"
        fixes.append(f"{key} >= {math.ceil(RELAX_TIMES / gp * f0_hz)}")
    if not coup_ok:
        gain = f" x gain_range {config.coupling.gain_range:g}" if kind == "kuramoto" else ""
        reasons.append(f"the coupling kappa{gain} = {coupling:.3g} rad/s exceeds {COUPLING_FRACTION:g} Gamma_p = "
                       f"{COUPLING_FRACTION * gp:.3g} rad/s (Gamma_p = {gp:.3g} rad/s)")
        g = config.coupling.gain_range if kind == "kuramoto" else 1.0
        fixes.append(f"coupling.fraction <= {COUPLING_FRACTION * gp / (2 * math.pi * f0_hz * g):.3g}")
    # thermal phase noise alone: increment error RMS per unit increment sqrt(D tau_s) / (kappa tau_s)
    from hw_models.stno import stno_diffusion

    D = stno_diffusion(p.replace(temperature_k=float(config.temperature_k)))
    kappa_s = 2 * math.pi * config.coupling.fraction * f0_hz
    noise_rms = math.sqrt(D * settle_s) / (kappa_s * settle_s) if config.noise else 0.0
    requested = config.stno_model
    if requested == "auto":
        model = "phase" if valid else "amplitude"
    else:
        model = requested
    if kind == "ssa" and model == "amplitude":
        if requested == "amplitude":
            raise ValueError("stno_model = 'amplitude' is implemented for Kuramoto chips only; SSA chips on "
                             "spin-torque run the phase model (use stno_model = 'phase' or 'auto')")
        model = "phase"
    return {
        "model": model, "requested": requested, "phase_reduction_valid": bool(valid),
        "reason": "; ".join(reasons) if reasons else "settle window spans >= "
                  f"{RELAX_TIMES:g}/Gamma_p and the coupling is <= {COUPLING_FRACTION:g} Gamma_p",
        "fix": " and ".join(fixes),
        "relaxation_time_s": 1.0 / gp, "settle_time_s": settle_s, "gamma_p_rad_per_s": gp,
        "coupling_max_rad_per_s": coupling, "nu": float(stno_nu(p)),
        "phase_diffusion_rad2_per_s": D, "noise_increment_rms": noise_rms,
        "relax_times_threshold": RELAX_TIMES, "coupling_fraction_threshold": COUPLING_FRACTION,
        "source": "the chip's spin-torque device params (Slavin & Tiberkevich 2009 closed forms)",
    }


def regime_summary(reg: dict) -> str:
    """One line for the chip summary."""
    s = (f"spin-torque {reg['model']} model (1/Gamma_p = {reg['relaxation_time_s'] * 1e9:.3g} ns, settle "
         f"{reg['settle_time_s'] * 1e9:.3g} ns, coupling max {reg['coupling_max_rad_per_s']:.3g} rad/s vs Gamma_p "
         f"{reg['gamma_p_rad_per_s']:.3g} rad/s)")
    if reg.get("noise_increment_rms", 0) > 0.05:
        s += (f"; thermal phase noise alone gives {reg['noise_increment_rms']:.2g} RMS per unit increment "
              f"(sqrt(D tau_s)/(kappa tau_s), D = {reg['phase_diffusion_rad2_per_s']:.3g} rad^2/s)")
    if not reg["phase_reduction_valid"]:
        s += f": phase reduction invalid because {reg['reason']}; fix: {reg['fix']}"
        if reg["model"] == "phase":
            s += " (the phase model was kept: results are outside its validity)"
    return s


def warn_regime(reg: dict, stacklevel: int = 3) -> None:
    """Warn when the phase reduction does not hold (whichever model runs)."""
    if reg["phase_reduction_valid"]:
        return
    what = ("integrating the complex amplitudes instead" if reg["model"] == "amplitude"
            else "the phase model is used anyway")
    warnings.warn(f"spin-torque chip: the phase reduction is invalid ({reg['reason']}); {what}. To make the phase "
                  f"model valid: {reg['fix']}", PhaseReductionWarning, stacklevel=stacklevel)


@dataclass(frozen=True)
class STNOAmplitudeModel:
    """Complex-amplitude integrator for a Kuramoto layer on spin-torque oscillators (see the module notes).

    All rates in rad per cycle of the chip's f₀. Build with :meth:`from_params`.
    """

    growth: float         # (σI − Γ_G)
    saturation: float     # Γ_G Q + σI
    n_shift: float        # N
    p0: float
    nu: float
    noise: float          # σ_n [1/sqrt(cycle)] (0: noise off)
    steps_per_cycle: int = 8

    @classmethod
    def from_preset(cls, f0_hz: float | None = None, *, noise: bool, temperature_k: float, steps_per_cycle: int = 8):
        """The vortex preset (``f0_hz`` is informational: rates are per cycle of the preset's own f₀)."""
        return cls.from_params(_preset(), noise=noise, temperature_k=temperature_k, steps_per_cycle=steps_per_cycle)

    @classmethod
    def from_params(cls, params, *, noise: bool, temperature_k: float, steps_per_cycle: int = 8):
        """From the chip's STNOParams (or device): rates per cycle of its free-running f₀, noise at T."""
        from hw_models.stno import stno_frequency_hz, stno_noise_sigma, stno_nu, stno_power_p0

        p = _stno_params(params).replace(temperature_k=float(temperature_k))
        fg = stno_frequency_hz(p)
        # per cycle of the device's own f0 (the chip's f0): its rates / f_g
        sI = p.supercriticality * p.gamma_g_per_s
        sig = stno_noise_sigma(p) / math.sqrt(fg) if noise else 0.0
        return cls(growth=(sI - p.gamma_g_per_s) / fg, saturation=(p.gamma_g_per_s * p.q_nonlinear_damping + sI) / fg,
                   n_shift=2 * math.pi * p.n_shift_hz / fg, p0=stno_power_p0(p), nu=stno_nu(p), noise=sig,
                   steps_per_cycle=steps_per_cycle)

    @property
    def gamma_p(self) -> float:
        """Γ_p [rad/cycle] = p₀ (Γ_G Q + σI)."""
        return self.p0 * self.saturation

    def _network(self, omega, coupling):
        from oscsim.engine import StuartLandauNetwork

        beta = math.atan(self.nu)
        a = -1j * (np.asarray(omega, dtype=np.float64) - self.n_shift * self.p0) + self.growth
        b = complex(-self.saturation, -self.n_shift)
        C = None if coupling is None else (np.asarray(coupling, dtype=np.float64)
                                           * (np.exp(1j * beta) / math.sqrt(1.0 + self.nu**2)))
        return a, b, C

    def integrate(self, omega, coupling, y0, *, t1: float, seed: int, sample_times=None):
        """Integrate G networks from phases y0 over [0, t1] cycles with couplings ``coupling`` (the phase
        model's C_ij, rad/cycle), then, when ``sample_times`` (M,) is given, the readout window with the
        couplers open. Returns (final phases (G, N), samples (M, G, N) or None).

        With one stream seed per network, each network's step comes from its own fastest rate, so its numbers
        do not depend on the other networks of the call (networks of equal step share one engine call); with
        an int seed (streams keyed on the position) the whole call is one unit and takes the fastest rate.
        """
        y0 = np.asarray(y0, dtype=np.float64)
        G, N = y0.shape
        coupling = np.asarray(coupling, dtype=np.float64)
        rows = np.abs(coupling).sum(-1).max(-1) if coupling.size else np.zeros(())
        spc = np.maximum(self.steps_per_cycle,
                         np.ceil(np.maximum(abs(self.n_shift) + self.saturation, rows) * 10).astype(np.int64))
        if np.ndim(seed) == 0 or coupling.ndim < 3 or np.all(spc == spc.flat[0]):
            return self._integrate(omega, coupling, y0, int(spc.max()), t1, seed, sample_times)
        omega = np.broadcast_to(np.asarray(omega, dtype=np.float64), (G, N))
        seed = np.asarray(seed, dtype=np.uint64)
        y1 = np.empty((G, N))
        samples = None
        for s in np.unique(spc):
            g = np.flatnonzero(spc == s)
            y1[g], smp = self._integrate(omega[g], coupling[g], y0[g], int(s), t1, seed[g], sample_times)
            if smp is not None:
                samples = np.empty((smp.shape[0], G, N)) if samples is None else samples
                samples[:, g] = smp
        return y1, samples

    def _integrate(self, omega, coupling, y0, spc: int, t1: float, seed, sample_times):
        """:meth:`integrate` with ``spc`` steps per cycle for all G networks."""
        from oscsim.engine import RK4, SaveAt, StochasticHeun, StuartLandauNetwork, simulate

        G, N = y0.shape
        a, b, C = self._network(omega, coupling)
        c0 = math.sqrt(self.p0) * np.exp(-1j * y0)
        n = max(int(math.ceil(t1 * spc)), 4)
        noisy = self.noise > 0
        solver = StochasticHeun() if noisy else RK4()
        model = StuartLandauNetwork(a=np.broadcast_to(a, (G, N)), b=b, coupling=C, sigma=self.noise)
        # seed: an int, or one stream seed per network (mapping.seeds: independent of the batch)
        seed = int(seed) if np.ndim(seed) == 0 else np.asarray(seed, dtype=np.uint64)
        sol = simulate(model, solver, 0.0, float(t1), float(t1) / n, c0, save=SaveAt(np.array([float(t1)])),
                       seed=seed)
        c1 = np.asarray(sol.y_final)
        y1 = y0 + wrap(-np.angle(c1) - y0)
        if sample_times is None:
            return y1, None
        ts = np.asarray(sample_times, dtype=np.float64)
        free = StuartLandauNetwork(a=np.broadcast_to(a, (G, N)), b=b, coupling=np.zeros((N, N), complex),
                                   sigma=self.noise)
        dt = min(1.0 / spc, float(ts[0]))
        seed2 = seed + 1 if np.ndim(seed) == 0 else seed ^ np.uint64(0x5EAD)  # the readout window's own streams
        sol2 = simulate(free, solver, 0.0, float(ts[-1]), dt, c1, save=SaveAt(ts), seed=seed2)
        samples = -np.angle(np.asarray(sol2.ys))
        return y1, samples


@register
class STNOAmplitude(KuramotoBackend):
    """Kuramoto layers on spin-torque oscillators outside the phase reduction: the complex-amplitude network.

    Runs when the compiler recorded ``timebase['stno']['model'] == 'amplitude'`` (:func:`stno_regime`); the
    phase macromodel runs spin-torque chips otherwise. Its step is the phase backend's with the amplitude
    integrator (same programming, noise keys, readout and periphery).
    """

    name = "spin-torque complex amplitude"
    devices = ("spin-torque",)
    priority = 1

    @classmethod
    def refuse(cls, chip) -> str | None:
        reg = chip.timebase.get("stno")
        if isinstance(reg, dict) and reg.get("model") == "amplitude":
            return None
        return "the chip's spin-torque regime is the phase model (timebase['stno'])"

    @classmethod
    def compile_record(cls, config, device, chip_kind: str) -> dict:
        """Which spin-torque model runs and why (stated in the timebase, warned when the reduction fails)."""
        reg = stno_regime(config, device, chip_kind)
        warn_regime(reg, stacklevel=5)
        return {"stno": reg}

    @classmethod
    def device_note(cls, chip) -> str | None:
        """The regime line of every chip on this device (phase or amplitude model)."""
        reg = chip.timebase.get("stno")
        return regime_summary(reg) if isinstance(reg, dict) else None

    def prepare(self, chip, layer: int, *, integrator: str = "auto", **overrides):
        amp = STNOAmplitudeModel.from_params(chip.device, noise=chip.config.noise,
                                             temperature_k=chip.config.temperature_k)
        return phase_settings(chip, layer, **{"amplitude": amp, "integrator": integrator, **overrides})

    def step(self, prepared, inputs, seeds):
        return phase_step(prepared, inputs, seeds)
