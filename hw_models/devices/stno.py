"""The spin-torque nano-oscillator as a device object (:class:`SpinTorqueOscillator`, params :class:`STNOParams`).

Universal auto-oscillator model (Slavin & Tiberkevich 2009, closed forms in :mod:`hw_models.stno`), with an
amplitude degree of freedom (the chip integrates the complex amplitudes where the phase reduction fails).
"""

from __future__ import annotations

import math

import numpy as np

from hw_models import layout
from hw_models.devices.base import (DeviceInstances, Oscillator, _check_f0, _check_method, _check_n, _check_t,
                                    _sign)
from hw_models.ring_macro import CouplingFunction
from hw_models.params import STNOParams

__all__ = ["SpinTorqueOscillator"]


class SpinTorqueOscillator(Oscillator):
    """Spin-torque nano-oscillator in the universal auto-oscillator model (:class:`STNOParams`)."""

    kind = "stno"
    params_type = STNOParams
    amplitude_model = True
    derived_sources = {
        "frequency": "universal model closed form omega0 + N p0 (Slavin & Tiberkevich 2009)",
        "diffusion": "(D_n/p0)(1 + nu^2), Slavin & Tiberkevich 2009",
        "power": "Joule power I^2 R of the bias current",
        "coupling_function": "phase reduction of the coupling Omega e^{i beta} (hw_models.stno)",
        "frequency_spread_rel": "sigma_f0_rel of the params",
    }

    def frequency(self) -> float:
        from hw_models.stno import stno_frequency_hz

        return stno_frequency_hz(self.params)

    def coupling_function(self, coupler=None, source=None, *, beta_rad: float = 0.0, n_harmonics: int | None = None):
        """Phase reduction of the electrical coupling Ω e^{iβ} between identical oscillators [rad/s].

        ``coupler``: the coupling rate Ω [1/s] (float; default 1), ``beta_rad`` its phase. ``source`` must be
        None (identical oscillators). ``n_harmonics`` is not used (the closed form has its own harmonics)."""
        from hw_models.stno import stno_coupling_function

        if source is not None:
            raise ValueError("source: the STNO phase reduction is for identical oscillators (pass None)")
        rate = 1.0 if coupler is None else coupler
        if isinstance(rate, bool) or not np.isscalar(rate) or not math.isfinite(float(rate)):
            raise ValueError("coupler for an STNO must be the coupling rate Ω [1/s] (a finite float)")
        off, h = stno_coupling_function(self.params, float(rate), beta_rad)
        return CouplingFunction(float(off), np.asarray(h, float))

    def diffusion(self, temperature_k: float | None = None, noise_scale: float = 1.0) -> float:
        """D = (D_n/p₀)(1 + ν²) [rad²/s] (Slavin & Tiberkevich 2009), D_n ∝ T."""
        from hw_models.stno import stno_diffusion

        p = self.params if temperature_k is None else self.params.replace(temperature_k=float(temperature_k))
        _check_t(p.temperature_k)
        return stno_diffusion(p, noise_scale)

    def power(self) -> float:
        """Joule power I² R of the bias current [W]."""
        from hw_models.energy import stno_power

        return stno_power(self.params)

    def relaxation_rate(self) -> float:
        """Amplitude relaxation rate Γ_p [1/s] (the phase reduction needs coupling ≪ Γ_p)."""
        from hw_models.stno import stno_relaxation_rate

        return stno_relaxation_rate(self.params)

    def frequency_spread_rel(self) -> float:
        """σ(f)/f from the ω₀ spread (dominant; the N and Γ_G spreads enter through N p₀, assumed small)."""
        p = self.params
        return p.sigma_f0_rel * p.f0_hz / self.frequency()

    def draw_instances(self, n: int, seed, *, method: str = "linear") -> DeviceInstances:
        """Gaussian relative spread of ω₀, N, Γ_G per instance; f₀, D, P recomputed per instance."""
        _check_method(method)
        _check_n(n)
        from hw_models.energy import stno_power
        from hw_models.stno import stno_diffusion, stno_frequency_hz

        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        p = self.params
        inst = []
        for _ in range(n):
            inst.append(p.replace(
                f0_hz=p.f0_hz * (1 + rng.normal(0, p.sigma_f0_rel)),
                n_shift_hz=p.n_shift_hz * (1 + rng.normal(0, p.sigma_n_rel)),
                gamma_g_per_s=p.gamma_g_per_s * max(0.1, 1 + rng.normal(0, p.sigma_gamma_rel))))
        return DeviceInstances(p, np.array([stno_frequency_hz(q) for q in inst]),
                               np.array([stno_diffusion(q) for q in inst]), np.array([stno_power(q) for q in inst]),
                               {"instances": tuple(inst)})

    def coupler(self, one_way: bool, sign: int = 1):
        """The coupling rate Ω = 1 /s (unit shape; the chip sets the strength); a negative coupling is the phase
        β + π of the same electrical coupling (Ω e^{i(β+π)} = −Ω e^{iβ} in the model). A one-way coupling
        assumes an isolating buffer amplifier on the shared line (assumed, not modelled: the shared line
        itself is reciprocal)."""
        _sign(sign)
        return 1.0

    def with_frequency(self, f0_hz: float) -> "SpinTorqueOscillator":
        """Rescale ω₀ (the gyrotropic frequency, set by the disk aspect ratio) so that ω₀ + N p₀ = 2π f0_hz;
        D and power do not depend on ω₀ in the model and are recomputed unchanged."""
        _check_f0(f0_hz)
        from hw_models.stno import stno_power_p0

        w0 = float(f0_hz) - self.params.n_shift_hz * stno_power_p0(self.params)
        lo, hi, _ = STNOParams.RANGES["f0_hz"]
        if not lo <= w0 <= hi:
            raise ValueError(f"f0_hz = {f0_hz:g} Hz needs omega0/2pi = {w0:.3g} Hz, outside [{lo:g}, {hi:g}] Hz")
        return self._rescaled(self.params.replace(f0_hz=w0), "f0_hz",
                              f"rescaled so that f0 = {f0_hz:g} Hz (config f0_hz)")

    # -- what a chip asks of its device ------------------------------------------------------------------------
    def matrix_coupling_function(self, coupler, *, sign: int = 1, source_node: int = 0):
        """H(Δ) [rad/s] of the coupling rate ``coupler`` with the phase β the compiler programs: β = ψ so that
        H's first harmonic is a pure sine (H₁ = R sin(Δ + ψ)), + π for a negative coupling."""
        if source_node:
            raise ValueError("source_node: only ring devices have node taps")
        return self.coupling_function(float(coupler), beta_rad=self.programmed_beta() + (math.pi if _sign(sign) < 0
                                                                                           else 0.0))

    def programmed_beta(self) -> float:
        """The coupling phase β [rad] that makes H's first harmonic a pure sine (β = ψ of H₁ = R sin(Δ + ψ))."""
        h1 = np.asarray(self.coupling_function(1.0, beta_rad=0.0).harmonics, dtype=float)[0]
        return math.atan2(h1[1], h1[0])

    def area_um2(self, node, trim_bits: int | None, *, latch_node=None) -> tuple[float, str]:
        """Pillar + its mA bias source [µm²]: the pillar does not scale with the CMOS node, its bias transistor
        does; no trim DAC is charged (f₀ is tuned by the bias current), so no latch (``latch_node`` unused)."""
        ar = layout.DEVICE_AREA
        return (ar["stno_pillar_um2"].value + layout.cell_um2("stno_bias_um2", node),
                f"STNO pillar + bias: {ar['stno_pillar_um2'].source}; {ar['stno_bias_um2'].source}")

    def coupler_static_power(self, one_way: bool, node=None) -> tuple[float, str]:
        """One transconductance amplifier per electrical coupling (:data:`hw_models.layout.STNO_COUPLER_W`,
        assumed: the model has no coupler dissipation)."""
        return layout.STNO_COUPLER_W.value, layout.STNO_COUPLER_W.source

    # -- the device report ----------------------------------------------------------------------------------------
    def at_temperature(self, temperature_k: float) -> "SpinTorqueOscillator":
        """The preset at T (only the thermal noise depends on T: no cited temperature coefficient of the universal
        model's parameters)."""
        from hw_models.devices.registry import device_for

        return device_for(self.params.replace(temperature_k=float(temperature_k)))

    def report_figures(self, temperature_k: float) -> dict:
        from hw_models.pvt import stno_df0_dT
        from hw_models.stno import stno_power_p0, stno_relaxation_rate

        dev = self.at_temperature(temperature_k)
        p0 = stno_power_p0(dev.params)
        return {"df0_dT_hz_per_k": 0.0, "df0_dvdd_hz_per_v": None, "flicker_corner_hz": None,
                "amplitude_relaxation_s": 1.0 / stno_relaxation_rate(dev.params), "power_p0": p0,
                "amplitude_sqrt_p0": math.sqrt(p0),
                "realism_models": f"df0/dT {stno_df0_dT(dev.params)['note']}; current-biased (no supply voltage: "
                                  "df0/dVDD undefined); flicker not modelled; phase noise: the thermal diffusion's "
                                  "Lorentzian"}

    def waveform(self, n_cycles: float = 3.0) -> tuple:
        """The complex amplitude's real part over ``n_cycles`` periods (:func:`hw_models.stno.simulate_stno`)."""
        from hw_models.stno import simulate_stno

        sol = simulate_stno(self.params, n_cycles / self.frequency(), save_every=1)
        return np.asarray(sol.ts), np.asarray(sol.ys)[:, 0, :].real, "Re c, complex amplitude [1]", None
