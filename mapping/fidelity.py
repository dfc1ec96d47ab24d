"""Fidelity metrics: chip vs closed form.

All functions take NumPy arrays (or anything ``np.asarray`` accepts) and return floats or arrays.
"""

from __future__ import annotations

import math

import numpy as np

from .readout import wrap

__all__ = ["relative_error", "cosine_similarity", "phase_error", "locked_agreement", "order_parameter",
           "bits_per_character", "per_head"]


def relative_error(chip, ref, axis=None):
    """‖chip − ref‖ / ‖ref‖ (Frobenius over ``axis``; nan where ‖ref‖ = 0)."""
    chip, ref = np.asarray(chip, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    num = np.sqrt(np.sum((chip - ref) ** 2, axis=axis))
    den = np.sqrt(np.sum(ref**2, axis=axis))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def cosine_similarity(chip, ref, axis=None):
    """⟨chip, ref⟩ / (‖chip‖ ‖ref‖) over ``axis``."""
    chip, ref = np.asarray(chip, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    num = np.sum(chip * ref, axis=axis)
    den = np.sqrt(np.sum(chip**2, axis=axis) * np.sum(ref**2, axis=axis))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def phase_error(chip, ref, axis=None):
    """Mean absolute wrapped phase difference [rad]."""
    return np.mean(np.abs(wrap(np.asarray(chip) - np.asarray(ref))), axis=axis)


def locked_agreement(chip_locked, ref_locked, mask=None):
    """Share of pairs (within ``mask``) whose lock state agrees, and the Jaccard index of the locked sets.

    Returns
    -------
    (agreement, jaccard) : floats (jaccard is nan when neither locks any pair)
    """
    a = np.asarray(chip_locked, dtype=bool)
    b = np.asarray(ref_locked, dtype=bool)
    m = np.ones_like(a) if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), a.shape)
    n = m.sum()
    agree = float(((a == b) & m).sum() / n) if n else math.nan
    union = ((a | b) & m).sum()
    jac = float(((a & b) & m).sum() / union) if union else math.nan
    return agree, jac


def order_parameter(theta, axis=-2):
    """Kuramoto order parameter |mean e^{iθ}| along ``axis`` (default: tokens of (…, T, k)), then mean over k."""
    z = np.exp(1j * np.asarray(theta, dtype=np.float64)).mean(axis=axis)
    return np.abs(z).mean(axis=-1)


def bits_per_character(logits, targets) -> float:
    """Mean cross-entropy in bits of next-byte predictions: logits (…, V), targets (…) int."""
    import torch

    logits = torch.as_tensor(logits, dtype=torch.float64)
    targets = torch.as_tensor(targets, dtype=torch.long)
    ce = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return float(ce) / math.log(2)


def per_head(x, n_heads):
    """(B, T, k) → (h, B, T, k_h) for per-head metrics."""
    x = np.asarray(x)
    B, T, k = x.shape
    return x.reshape(B, T, n_heads, k // n_heads).transpose(2, 0, 1, 3)
