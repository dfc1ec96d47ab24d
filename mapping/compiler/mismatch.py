"""The chip's mismatch draw and its frequency trim (one rule, NumPy for the compiler, torch for training).

Each oscillator's relative frequency error ε, phase diffusion and power come from the device's own instance
draw (:meth:`hw_models.devices.Oscillator.draw_instances`). A per-oscillator trim DAC of ``trim_bits`` spans
±``TRIM_RANGE_SIGMA`` σ of the spread: code = clip(round(ε/step), −L, L), step = 4σ/L, L = 2**(b−1) − 1; the
residual ε − code · step is what the chip runs with. :func:`trim_residual_torch` is the same rule on torch
tensors (hardware-aware training draws fresh chips, :mod:`mapping.hwa`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["TRIM_RANGE_SIGMA", "ROTATED_STREAM", "draw_oscillators", "draw_score_oscillators", "trim",
           "trim_residual_torch"]

TRIM_RANGE_SIGMA = 4.0  # the trim DAC spans ±4 σ of the frequency spread (assumed)
ROTATED_STREAM = 3
"""Mismatch stream [mismatch_seed, layer, 3] of the rotated score oscillators (the banks use 1, the couplers 2)."""


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


def draw_score_oscillators(config, device, score_array, shape: tuple, freq_sigma: float, drift_rel: float = 0.0):
    """The rotated score oscillators of an analog-score chip, drawn once at compile time.

    Parameters
    ----------
    config : mapping.ChipConfig
        ``mismatch_seed``, ``mismatch`` and ``trim_bits`` are read.
    device : mapping.compiler.device.ChipDevice
    score_array : mapping.backends.score_array.ScoreArray
        Where the heads run (:mod:`mapping.backends.score_array`): every head its own unit, each layer draws its
        own from stream [mismatch_seed, layer, 3]; units shared by several heads are drawn once from
        [mismatch_seed, PHYSICAL_STREAM, 3] and each head carries its unit's draw.
    shape : tuple
        (n_heads, head_dim, T) of one layer.
    freq_sigma : float
        The frequency spread the trim DAC spans (``timebase["freq_spread_rel"]``).
    drift_rel : float
        Common-mode temperature drift added after trimming (:mod:`mapping.periphery.drift`).

    Returns
    -------
    list of (residual δf/f₀, D/D₀) pairs of float arrays ``shape``, one per layer.
    """
    from ..seeds import PHYSICAL_STREAM

    out = []
    if score_array.shared:
        rng = np.random.default_rng([config.mismatch_seed, PHYSICAL_STREAM, ROTATED_STREAM])
        unit_eps, unit_drel, _ = draw_oscillators(device, (score_array.units,) + tuple(shape[1:]), rng,
                                                  config.mismatch)
    for layer in range(score_array.n_layers):
        if score_array.shared:
            eps, drel = unit_eps[score_array.unit_of[layer]], unit_drel[score_array.unit_of[layer]]
        else:
            rng = np.random.default_rng([config.mismatch_seed, layer, ROTATED_STREAM])
            eps, drel, _ = draw_oscillators(device, tuple(shape), rng, config.mismatch)
        _, resid = trim(eps, freq_sigma, config.trim_bits)
        out.append((resid + drift_rel, drel))
    return out
