"""The chip's mismatch draw and its frequency trim (one rule, NumPy for the compiler, torch for training).

Each oscillator's relative frequency error ε, phase diffusion and power come from the device's own instance
draw (:meth:`hw_models.devices.Oscillator.draw_instances`). A per-oscillator trim DAC of ``trim_bits`` spans
±``TRIM_RANGE_SIGMA`` σ of the spread: code = clip(round(ε/step), −L, L), step = 4σ/L, L = 2**(b−1) − 1; the
residual ε − code · step is what the chip runs with. :func:`trim_residual_torch` is the same rule on torch
tensors (hardware-aware training draws fresh chips, :mod:`mapping.hwa`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["TRIM_RANGE_SIGMA", "draw_oscillators", "trim", "trim_residual_torch"]

TRIM_RANGE_SIGMA = 4.0  # the trim DAC spans ±4 σ of the frequency spread (assumed)


def _trim_levels(sigma: float, bits: int | None):
    """(L, step) of the trim DAC, or None when there is nothing to trim (no spread, or no trim DAC)."""
    if sigma == 0 or bits is None:
        return None
    L = max(2 ** (bits - 1) - 1, 1)
    return L, TRIM_RANGE_SIGMA * sigma / L


def trim(eps: np.ndarray, sigma: float, bits: int | None):
    """Trim codes (int64) and residual relative errors of the drawn errors ``eps`` (see the module notes)."""
    lv = _trim_levels(sigma, bits)
    if lv is None:
        return np.zeros(eps.shape, dtype=np.int64), eps
    L, step = lv
    code = np.clip(np.round(eps / step), -L, L).astype(np.int64)
    return code, eps - code * step


def trim_residual_torch(eps, sigma: float, bits: int | None):
    """Residual relative frequency error after the trim DAC for a torch tensor ``eps`` (same rule as
    :func:`trim`)."""
    import torch

    lv = _trim_levels(sigma, bits)
    if lv is None:
        return eps
    L, step = lv
    return eps - torch.clamp(torch.round(eps / step), -L, L) * step


def draw_oscillators(device, n_shape, rng, mismatch: bool):
    """Per-oscillator relative frequency error, D / D_nominal and power [W] from the device's instance draw
    (all nominal without ``mismatch``)."""
    n = int(np.prod(n_shape))
    osc = device.oscillator
    if not mismatch:
        return np.zeros(n_shape), np.ones(n_shape), np.full(n_shape, device.power_w)
    inst = osc.draw_instances(n, rng)
    eps = (np.asarray(inst.f0_hz) / device.f0_hz - 1.0).reshape(n_shape)
    d0 = float(osc.diffusion())
    drel = (np.asarray(inst.diffusion_rad2_per_s) / d0).reshape(n_shape) if d0 > 0 else np.ones(n_shape)
    return eps, drel, np.asarray(inst.power_w, dtype=float).reshape(n_shape)
