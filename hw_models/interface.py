"""Free functions of the device interface, kept for users; each delegates to the device object.

The logic lives once, in :mod:`hw_models.devices` (one module per device: ``RingOscillator``,
``SpinTorqueOscillator``, ``IdealOscillator``, and any registered one); these functions take a params
dataclass, build (and cache) its object with :func:`hw_models.devices.device_for` and call the method. See
docs/devices.md.
"""

from __future__ import annotations

import numpy as np

from hw_models.devices import DeviceInstances, device_for
from hw_models.energy import coupler_programming_energy  # noqa: F401  (re-export)

__all__ = ["free_running_frequency", "phase_diffusion", "coupling_function", "power", "energy_per_cycle",
           "phase_noise_dbc_hz", "draw_mismatch", "DeviceInstances", "coupler_programming_energy"]


def free_running_frequency(params) -> float:
    """Free-running frequency f₀ [Hz] (``device_for(params).frequency()``)."""
    return device_for(params).frequency()


def phase_diffusion(params, noise_scale: float = 1.0) -> float:
    """Phase diffusion D [rad²/s] at the params' temperature (``device_for(params).diffusion()``)."""
    return device_for(params).diffusion(None, noise_scale=noise_scale)


def phase_noise_dbc_hz(params, offset_hz) -> np.ndarray:
    """Single-sideband phase noise L(f_m) [dBc/Hz] at offset(s) ``offset_hz`` (Lorentzian, Demir 2000)."""
    from hw_models.noise import phase_noise_dbc_hz_from_diffusion

    return phase_noise_dbc_hz_from_diffusion(phase_diffusion(params), offset_hz)


def coupling_function(params, coupler=None, *, beta_rad: float = 0.0, n_harmonics: int = 8):
    """H(Δ) = offset + Σ a_m sin mΔ + b_m cos mΔ [rad/s] (``device_for(params).coupling_function(coupler)``).

    ``coupler``: the device's coupler (ring: a coupler object, default the 20 kΩ resistor preset; STNO: the
    coupling rate Ω [1/s], with phase ``beta_rad``; ideal: a strength in rad/s, default 1). ``n_harmonics``:
    harmonics kept where H is computed numerically (the ring's), closed forms keep their own.
    """
    return device_for(params).coupling_function(coupler, beta_rad=beta_rad, n_harmonics=n_harmonics)


def power(params, coupler=None, n_couplers: int = 0) -> float:
    """Average power of one running oscillator [W] (+ n_couplers × the coupler's static dissipation)."""
    dev = device_for(params)
    p = dev.power()
    if coupler is not None and n_couplers:
        p += n_couplers * coupler.power(dev)
    return p


def energy_per_cycle(params, coupler=None, n_couplers: int = 0) -> float:
    """Energy per oscillation cycle of one oscillator [J] = power / f₀."""
    return power(params, coupler, n_couplers) / free_running_frequency(params)


def draw_mismatch(params, n: int, seed, *, method: str = "linear") -> DeviceInstances:
    """n instances with mismatch (``device_for(params).draw_instances(n, seed, method=method)``)."""
    return device_for(params).draw_instances(n, seed, method=method)
