"""The ideal Kuramoto phase oscillator as a device object (:class:`IdealOscillator`): every number is a parameter.

It has no layout or coupler circuit of its own: a chip charges its cells and couplers as the CMOS ring's at the
chip's node (:class:`~hw_models.devices.ring.ChargedAsRing`, stated as assumed in each source).
"""

from __future__ import annotations

import math

import numpy as np

from hw_models.constants import T_ROOM_K
from hw_models.devices.base import (DeviceInstances, Oscillator, _check_f0, _check_method, _check_n, _check_t,
                                    _sign)
from hw_models.devices.ring import ChargedAsRing
from hw_models.ring_macro import CouplingFunction
from hw_models.params import IdealOscillatorParams

__all__ = ["IdealOscillator"]


class IdealOscillator(ChargedAsRing, Oscillator):
    """Ideal Kuramoto phase oscillator (:class:`IdealOscillatorParams`): every number is a parameter."""

    kind = "ideal"
    params_type = IdealOscillatorParams
    derived_sources = {"frequency": "f0_hz of the params", "diffusion": "diffusion_rad2_per_s of the params "
                       "(at 300 K, scaled with T: assumed)", "power": "power_w of the params",
                       "coupling_function": "harmonics of the params", "frequency_spread_rel": "sigma_f_rel"}

    def frequency(self) -> float:
        return self.params.f0_hz

    def coupling_function(self, coupler=None, source=None, *, beta_rad: float = 0.0, n_harmonics: int | None = None):
        """The preset harmonics × ``coupler`` (a strength [rad/s], default 1); no offset. ``n_harmonics`` is not
        used (the harmonics are parameters); an ideal coupler has no phase (``beta_rad`` 0 only)."""
        if beta_rad:
            raise ValueError(f"beta_rad: an ideal coupler has no coupling phase (0 only), got {beta_rad!r}")
        s = 1.0 if coupler is None else coupler
        if isinstance(s, bool) or not np.isscalar(s) or not math.isfinite(float(s)):
            raise ValueError("coupler for an ideal oscillator must be a coupling strength [rad/s] (a float)")
        return CouplingFunction(0.0, float(s) * np.asarray(self.params.harmonics, float))

    def diffusion(self, temperature_k: float | None = None, noise_scale: float = 1.0) -> float:
        """``diffusion_rad2_per_s`` at T_ROOM = 300 K, scaled ∝ T (thermal noise; assumed)."""
        T = T_ROOM_K if temperature_k is None else temperature_k
        _check_t(T)
        return self.params.diffusion_rad2_per_s * noise_scale * T / T_ROOM_K

    def power(self) -> float:
        return self.params.power_w

    def frequency_spread_rel(self) -> float:
        return self.params.sigma_f_rel

    def draw_instances(self, n: int, seed, *, method: str = "linear") -> DeviceInstances:
        """Gaussian relative spread of f₀; D and power equal for all instances."""
        _check_method(method)
        _check_n(n)
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        p = self.params
        f = p.f0_hz * (1 + rng.normal(0, p.sigma_f_rel, n))
        return DeviceInstances(p, f, np.full(n, p.diffusion_rad2_per_s), np.full(n, p.power_w), {})

    def coupler(self, one_way: bool, sign: int = 1):
        """Unit strength 1.0 [in units of κ]: an ideal coupler realises any sign and direction."""
        return float(_sign(sign))

    def with_frequency(self, f0_hz: float) -> "IdealOscillator":
        """f0_hz replaced; D, power and harmonics are parameters of the ideal device and stay as given."""
        _check_f0(f0_hz)
        return self._rescaled(self.params.replace(f0_hz=float(f0_hz)), "f0_hz", "config f0_hz")

    def report_figures(self, temperature_k: float) -> dict:
        return {"df0_dT_hz_per_k": 0.0, "df0_dvdd_hz_per_v": None, "flicker_corner_hz": None, "amplitude": 1.0,
                "realism_models": "ideal oscillator: no temperature, supply or flicker dependence of f0; its "
                                  "diffusion is the preset's at 300 K scaled with T (assumed)"}
