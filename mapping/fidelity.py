"""Fidelity metrics: chip vs closed form.

All functions take NumPy arrays (or anything ``np.asarray`` accepts) and return floats or arrays.
"""

from __future__ import annotations

import math

import numpy as np

from hw_models.waveform import wrap

__all__ = ["relative_error", "cosine_similarity", "phase_error", "locked_agreement", "order_parameter",
           "bits_per_character", "per_head", "LayerFidelity"]


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


def _f(x):
    x = float(x)
    return x if math.isfinite(x) else None


class LayerFidelity:
    """Running per-head fidelity of one chip layer against the closed form on the same input.

    Chip inference adds one batch at a time (:meth:`add_kuramoto`, :meth:`add_ssa`) and reads the totals
    with :meth:`result` (the metrics of docs/mapping.md: ``rel_error``, ``cosine``, ``increment_rel_error``,
    ``phase_error_rad``, ``order_parameter_chip``/``_closed_form``, ``S_rel_error``, ``locked_agreement``,
    ``locked_jaccard``, each a list over heads, plus ``layer_rel_error`` and ``layer_cosine``). Sums, not
    means, are kept, so the result does not depend on how the windows were batched.
    """

    def __init__(self, n_heads: int):
        z = lambda: np.zeros(n_heads)  # noqa: E731
        self.n_heads = n_heads
        self.d2, self.r2, self.c2, self.dot = z(), z(), z(), z()
        self.va_d2, self.va_r2 = z(), z()
        self.ph, self.n = z(), z()
        self.R_chip, self.R_cf, self.nseq = z(), z(), z()
        self.S_d2, self.S_r2 = z(), z()
        self.agree, self.union, self.inter, self.npairs = z(), z(), z(), z()

    def _add_out(self, chip, ref):  # (h, ...) arrays
        ax = tuple(range(1, chip.ndim))
        self.d2 += ((chip - ref) ** 2).sum(ax)
        self.r2 += (ref**2).sum(ax)
        self.c2 += (chip**2).sum(ax)
        self.dot += (chip * ref).sum(ax)

    def add_kuramoto(self, theta, delta_chip, delta_ref, va_chip, va_ref):
        """One batch of a Kuramoto layer: input phases θ, increments Δ (bound applied) and v ⊙ a, all (B, T, k)."""
        h = self.n_heads
        dc, dr = per_head(delta_chip, h), per_head(delta_ref, h)
        self._add_out(dc, dr)
        vc, vr = per_head(va_chip, h), per_head(va_ref, h)
        self.va_d2 += ((vc - vr) ** 2).sum((1, 2, 3))
        self.va_r2 += (vr**2).sum((1, 2, 3))
        self.ph += np.abs(wrap(dc - dr)).sum((1, 2, 3))
        self.n += dc[0].size
        th = per_head(theta, h)
        R = lambda x: np.abs(np.exp(1j * x).mean(axis=2)).mean(-1).sum(-1)  # noqa: E731  (h,) summed over B
        self.R_chip += R(th + dc)
        self.R_cf += R(th + dr)
        self.nseq += th.shape[1]

    def add_ssa(self, y_chip, y_ref, S_chip, S_ref, locked_chip, locked_ref, *, causal: bool, J=None,
                coherence=None):
        """One batch of an SSA layer: head outputs y (B, H, N, d_h), weights S and locked sets (B, H, N, N);
        for collective networks also J and the chip's coherence ⟨cos(θ_i − θ_j)⟩ (B, H, N, N)."""
        self._add_out(np.asarray(y_chip).transpose(1, 0, 2, 3), np.asarray(y_ref).transpose(1, 0, 2, 3))
        B, H, N, _ = S_chip.shape
        allowed = ~np.eye(N, dtype=bool)
        if causal:
            allowed &= np.tril(np.ones((N, N), dtype=bool))
        m = np.broadcast_to(allowed, (B, N, N))
        for hh in range(H):
            self.S_d2[hh] += ((S_chip[:, hh] - S_ref[:, hh]) ** 2)[m].sum()
            self.S_r2[hh] += (S_ref[:, hh] ** 2)[m].sum()
            a, c = locked_chip[:, hh] & m, locked_ref[:, hh] & m
            self.agree[hh] += ((locked_chip[:, hh] == locked_ref[:, hh]) & m).sum()
            self.inter[hh] += (a & c).sum()
            self.union[hh] += (a | c).sum()
            self.npairs[hh] += m.sum()
            if coherence is not None:
                Jh = J[:, hh]
                with np.errstate(invalid="ignore", divide="ignore"):
                    sj = np.where(Jh > 0, S_ref[:, hh] / np.where(Jh > 0, Jh, 1), 0)
                self.R_chip[hh] += np.sqrt(np.clip(coherence[:, hh][m].reshape(B, -1).mean(-1), 0, None)).sum()
                self.R_cf[hh] += np.sqrt(np.clip(sj[m].reshape(B, -1).mean(-1), 0, None)).sum()
                self.nseq[hh] += B

    def result(self) -> dict:
        """The layer's metrics (lists over heads; None where undefined)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            out = {
                "rel_error": (np.sqrt(self.d2) / np.sqrt(self.r2)).tolist(),
                "cosine": (self.dot / np.sqrt(self.c2 * self.r2)).tolist(),
            }
            if self.va_r2.any():
                out["increment_rel_error"] = (np.sqrt(self.va_d2) / np.sqrt(self.va_r2)).tolist()
            if self.n.any():
                out["phase_error_rad"] = (self.ph / self.n).tolist()
            if self.nseq.any():
                out["order_parameter_chip"] = (self.R_chip / self.nseq).tolist()
                out["order_parameter_closed_form"] = (self.R_cf / self.nseq).tolist()
            if self.npairs.any():
                out["S_rel_error"] = (np.sqrt(self.S_d2) / np.sqrt(self.S_r2)).tolist()
                out["locked_agreement"] = (self.agree / self.npairs).tolist()
                out["locked_jaccard"] = (self.inter / self.union).tolist()
        out = {k: [None if not math.isfinite(x) else float(x) for x in v] for k, v in out.items()}
        with np.errstate(invalid="ignore", divide="ignore"):
            out["layer_rel_error"] = _f(np.sqrt(self.d2.sum()) / np.sqrt(self.r2.sum()))
            out["layer_cosine"] = _f(self.dot.sum() / np.sqrt(self.c2.sum() * self.r2.sum()))
        return out
