"""Device profiles: what the mapping needs to know about an oscillator technology.

A :class:`DeviceProfile` condenses a device preset into the few numbers a chip simulation uses: nominal
frequency, phase diffusion, mismatch spreads, the coupling function's harmonics, and energies. Profiles are
taken from :mod:`hw_models` when it provides the preset (see :func:`device_profile`); the fallback values
below are used otherwise and each carries its source or the word "assumed".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from . import units

__all__ = ["DeviceProfile", "device_profile", "FALLBACK_PROFILES"]

T_REF_K = 300.0  # reference temperature of the phase-diffusion figures below [K]


@dataclass(frozen=True, kw_only=True)
class DeviceProfile:
    """Per-oscillator figures of a device technology.

    Attributes
    ----------
    name : str
    f0_hz : float
        Nominal frequency [Hz].
    phase_diffusion_rad2_per_s : float
        D at ``t_ref_k``, Var[θ(t) − θ(0)] = D t [rad²/s]; thermal, so scaled ∝ T.
    t_ref_k : float
        Temperature of the D figure [K].
    freq_spread_rel : float
        Relative standard deviation of f₀ across oscillators (mismatch) [1].
    coupler_spread_rel : float
        Relative standard deviation of coupler strengths [1].
    harmonics : tuple of (a_m, b_m)
        Coupling function H(x) = Σ_m a_m sin(m x) + b_m cos(m x), normalised to a_1 = 1 (κ sets the scale).
    power_w : float
        Power of one running oscillator [W].
    coupler_write_j_per_bit : float
        Energy to program one coupler bit [J].
    adc_fom_j_per_step : float
        Readout ADC Walden figure of merit [J per conversion step]; one conversion costs FoM · 2**bits.
    digital_j_per_flop : float
        Energy per digital operation of the periphery [J].
    sources : dict
        Field name → citation or "assumed".
    """

    name: str
    f0_hz: float
    phase_diffusion_rad2_per_s: float
    t_ref_k: float = T_REF_K
    freq_spread_rel: float
    coupler_spread_rel: float
    harmonics: tuple = ((1.0, 0.0),)
    power_w: float
    coupler_write_j_per_bit: float = 10e-15
    adc_fom_j_per_step: float = 5e-15
    digital_j_per_flop: float = 2.3e-12
    sources: dict = field(default_factory=dict)

    def __post_init__(self):
        for n in ("f0_hz", "power_w", "t_ref_k"):
            v = getattr(self, n)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"DeviceProfile.{n} must be finite and > 0, got {v!r}")
        h = np.asarray(self.harmonics, dtype=float)
        if h.ndim != 2 or h.shape[1] != 2 or not np.all(np.isfinite(h)) or abs(h[0, 0]) == 0:
            raise ValueError(f"DeviceProfile.harmonics must be (M, 2) finite with a_1 != 0, got {self.harmonics!r}")

    def harmonics_array(self) -> np.ndarray:
        """(M, 2) harmonics normalised to a_1 = 1."""
        h = np.asarray(self.harmonics, dtype=float)
        return h / h[0, 0]

    def diffusion_at(self, temperature_k: float) -> float:
        """D [rad²/s] at a temperature (thermal noise: D ∝ T)."""
        return self.phase_diffusion_rad2_per_s * float(temperature_k) / self.t_ref_k

    def to_dict(self) -> dict:
        return {
            "name": self.name, "f0_hz": self.f0_hz, "phase_diffusion_rad2_per_s": self.phase_diffusion_rad2_per_s,
            "t_ref_k": self.t_ref_k, "freq_spread_rel": self.freq_spread_rel,
            "coupler_spread_rel": self.coupler_spread_rel, "harmonics": [list(map(float, r)) for r in self.harmonics],
            "power_w": self.power_w, "coupler_write_j_per_bit": self.coupler_write_j_per_bit,
            "adc_fom_j_per_step": self.adc_fom_j_per_step, "digital_j_per_flop": self.digital_j_per_flop,
            "sources": dict(self.sources),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "DeviceProfile":
        d = dict(d)
        d["harmonics"] = tuple(tuple(float(x) for x in r) for r in d["harmonics"])
        return cls(**d)


_COMMON_SOURCES = {
    "coupler_write_j_per_bit": "assumed: 10 fJ per SRAM-cell write, order of 65 nm 6T SRAM write energy",
    "adc_fom_j_per_step": "assumed: 5 fJ/conversion-step, a representative SAR ADC Walden FoM "
                          "(B. Murmann, ADC Performance Survey 1997-2024)",
    "digital_j_per_flop": "M. Horowitz, 'Computing's energy problem', ISSCC 2014: 45 nm fp32 multiply 3.7 pJ + "
                          "add 0.9 pJ, i.e. 2.3 pJ per FLOP of a fused multiply-add",
}

# Phase noise of a 1 GHz ring oscillator L(1 MHz) ≈ −90 dBc/Hz (assumed, typical of 65 nm rings) gives
# c = 10^(−9) · (1e6)² / (1e9)² = 1e−15 s (Demir: L(f_m) ≈ c f₀² / f_m²), D = (2π f₀)² c.
_RING_C = 1e-15
_RING_F0 = 1e9

FALLBACK_PROFILES: dict[str, DeviceProfile] = {
    "ideal": DeviceProfile(
        name="ideal", f0_hz=1e9, phase_diffusion_rad2_per_s=0.0, freq_spread_rel=0.0, coupler_spread_rel=0.0,
        harmonics=((1.0, 0.0),), power_w=20e-6,
        sources={"f0_hz": "assumed", "power_w": "assumed (as the 65 nm ring)", **_COMMON_SOURCES},
    ),
    "ring-macromodel": DeviceProfile(
        name="ring-macromodel", f0_hz=_RING_F0,
        phase_diffusion_rad2_per_s=(2 * math.pi * _RING_F0) ** 2 * _RING_C,
        freq_spread_rel=0.02, coupler_spread_rel=0.02,
        harmonics=((1.0, 0.0), (0.1, 0.0)), power_w=21e-6,
        sources={
            "f0_hz": "assumed: 1 GHz, order of 65 nm coupled-ring Ising chips",
            "phase_diffusion_rad2_per_s": "assumed L(1 MHz) = -90 dBc/Hz at 1 GHz; D = (2 pi f0)^2 c, "
                                          "Demir et al., IEEE TCAS-I 47, 655 (2000)",
            "freq_spread_rel": "assumed 2 %, Pelgrom mismatch of minimum-size 65 nm inverters",
            "coupler_spread_rel": "assumed 2 %",
            "harmonics": "assumed second harmonic 0.1 (ring coupling functions are not sinusoidal: "
                         "Hasan et al. 2026, arXiv 2605.17243)",
            "power_w": "42 mW / 1,968 nodes = 21 uW per node incl. couplers, Moy et al., Nat. Electron. 2022",
            **_COMMON_SOURCES,
        },
    ),
    "spin-torque": DeviceProfile(
        name="spin-torque", f0_hz=300e6,
        phase_diffusion_rad2_per_s=units.lorentzian_fwhm_to_diffusion(1e6),
        freq_spread_rel=0.01, coupler_spread_rel=0.05,
        harmonics=((1.0, 0.0),), power_w=1e-3,
        sources={
            "f0_hz": "vortex STNO near 300 MHz, Torrejon et al., Nature 547, 428 (2017)",
            "phase_diffusion_rad2_per_s": "assumed Lorentzian linewidth 1 MHz, D = 2 pi FWHM",
            "freq_spread_rel": "assumed 1 %",
            "coupler_spread_rel": "assumed 5 % (electrical coupling through shared lines)",
            "harmonics": "assumed sinusoidal (weak-coupling universal auto-oscillator model)",
            "power_w": "assumed 1 mW (5 mA through ~40 ohm)",
            **_COMMON_SOURCES,
        },
    ),
}
FALLBACK_PROFILES["ring-circuit"] = replace(
    FALLBACK_PROFILES["ring-macromodel"], name="ring-circuit",
    sources={**FALLBACK_PROFILES["ring-macromodel"].sources,
             "harmonics": "assumed (fallback: hw_models did not provide the circuit-derived harmonics)"},
)


_HW_CACHE: dict = {}
HW_ERRORS: dict = {}
"""Why a preset fell back to the table (name → error text), for reports."""


def _from_hw_models(name: str) -> DeviceProfile | None:
    """The profile built from :mod:`hw_models` presets, or None when that interface is not available (the
    failure is remembered in :data:`HW_ERRORS` and not retried in this process)."""
    if name in _HW_CACHE:
        return _HW_CACHE[name]
    try:
        from . import _hw_adapter

        prof = _hw_adapter.profile(name, FALLBACK_PROFILES[name])
    except Exception as exc:  # noqa: BLE001 - any failure of the device models falls back to the cited table
        HW_ERRORS[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
        prof = None
    _HW_CACHE[name] = prof
    return prof


def device_profile(name: str, *, f0_hz: float | None = None, use_hw_models: bool = True) -> DeviceProfile:
    """The :class:`DeviceProfile` of a device preset.

    Parameters
    ----------
    name : {'ideal', 'ring-macromodel', 'ring-circuit', 'spin-torque'}
    f0_hz : float, optional
        Override the nominal frequency (phase diffusion scales as f₀² for a fixed c, and power ∝ f₀).
    use_hw_models : bool
        Take the figures from :mod:`hw_models` presets where available.
    """
    if name not in FALLBACK_PROFILES:
        raise ValueError(f"unknown device {name!r}; valid: {', '.join(FALLBACK_PROFILES)}")
    prof = (_from_hw_models(name) if use_hw_models else None) or FALLBACK_PROFILES[name]
    if prof is FALLBACK_PROFILES[name] and name in HW_ERRORS:
        prof = replace(prof, sources={**prof.sources, "fallback": f"hw_models unavailable ({HW_ERRORS[name]})"})
    if f0_hz is not None and float(f0_hz) != prof.f0_hz:
        s = float(f0_hz) / prof.f0_hz
        prof = replace(prof, f0_hz=float(f0_hz), phase_diffusion_rad2_per_s=prof.phase_diffusion_rad2_per_s * s**2,
                       power_w=prof.power_w * s,
                       sources={**prof.sources, "f0_hz": "config override (D scaled as f0^2, power as f0)"})
    return prof
