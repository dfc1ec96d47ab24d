"""A toy oscillator added the way a new device is added: this one module, its class and two registrations.

Not a physical model: a phase oscillator whose every number is a field (like the ideal one) with a second
harmonic in its coupling function and its own cell area and coupler power, so that a chip on it shows that
``mapping`` asks the device and never its kind (tests/test_device_plugin.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from hw_models.devices import DeviceInstances, Oscillator, register_device, register_oscillator
from hw_models.ring_macro import CouplingFunction

NAME = "toy-phase"


@dataclass(frozen=True, kw_only=True)
class ToyParams:
    f0_hz: float = 5e8
    diffusion_rad2_per_s: float = 2e3
    power_w: float = 3e-5
    sigma_f_rel: float = 0.004
    second_harmonic: float = 0.2
    cell_um2: float = 42.0
    coupler_w: float = 2e-6

    def replace(self, **kw) -> "ToyParams":
        return replace(self, **kw)


@register_oscillator
class ToyOscillator(Oscillator):
    """H(Δ) = s (sin Δ + h₂ sin 2Δ); D, power, area and coupler power are fields."""

    kind = "toy"
    params_type = ToyParams
    derived_sources = {"frequency": "f0_hz of the params (toy)"}

    def frequency(self) -> float:
        return self.params.f0_hz

    def coupling_function(self, coupler=None, source=None, *, beta_rad: float = 0.0, n_harmonics=None):
        s = 1.0 if coupler is None else float(coupler)
        return CouplingFunction(0.0, s * np.array([[1.0, 0.0], [self.params.second_harmonic, 0.0]]))

    def diffusion(self, temperature_k=None, noise_scale: float = 1.0) -> float:
        return self.params.diffusion_rad2_per_s * noise_scale * (300.0 if temperature_k is None else temperature_k) / 300

    def power(self) -> float:
        return self.params.power_w

    def frequency_spread_rel(self) -> float:
        return self.params.sigma_f_rel

    def draw_instances(self, n: int, seed, *, method: str = "linear") -> DeviceInstances:
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        p = self.params
        return DeviceInstances(p, p.f0_hz * (1 + rng.normal(0, p.sigma_f_rel, n)),
                               np.full(n, p.diffusion_rad2_per_s), np.full(n, p.power_w))

    def coupler(self, one_way: bool, sign: int = 1):
        return float(sign)

    def with_frequency(self, f0_hz: float) -> "ToyOscillator":
        return self._rescaled(self.params.replace(f0_hz=float(f0_hz)), "f0_hz", "config f0_hz")

    def area_um2(self, node, trim_bits, *, latch_node=None):
        return self.params.cell_um2, "toy cell (a field of the params)"

    def coupler_static_power(self, one_way: bool, node=None):
        return self.params.coupler_w, "toy coupler (a field of the params)"


register_device(NAME, lambda: ToyOscillator(ToyParams(), name="toy"), runs_as="ideal",
                summary="toy phase oscillator with a second harmonic (tests)")
