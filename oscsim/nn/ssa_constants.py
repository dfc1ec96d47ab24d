"""Constants and argument handling shared by the SSA implementations (dense `ssa_functional`, `ssa_tiled`,
`ssa_tiled_numba`, `ssa_triton`), in a leaf module so that the fast paths do not import the dense one that
dispatches to them."""

from __future__ import annotations

import math

import torch

__all__ = ["EPS", "SMOOTH_FLOOR", "BOUNDARIES", "ratio_floor", "check_boundary", "check_drift",
           "split_frequencies", "split_rows", "flatten_heads"]

EPS = 1e-8
"""The reference code's epsilon (threshold offset, ratio clamp, row-sum offset)."""

SMOOTH_FLOOR = 1e-6
"""Floor ε of the smooth boundary form u / sqrt(u + ε) (assumed: keeps the relative error below 5e-5 for
u = 1 − ratio² ≥ 0.01 and the slope at the boundary below 1e3)."""

BOUNDARIES = ("reference", "smooth")


def ratio_floor(dtype: torch.dtype) -> float:
    """1 − hi² where hi = 1 − 1e-8 rounded to ``dtype`` (0 in float32, where hi rounds to 1)."""
    hi = torch.tensor(1.0 - EPS, dtype=dtype)
    return float(1.0 - hi.double() ** 2)


def check_boundary(boundary: str) -> None:
    """Refuse a boundary form that is not one of `BOUNDARIES`."""
    if boundary not in BOUNDARIES:
        raise ValueError(f"boundary must be one of {BOUNDARIES}; got {boundary!r}")


def check_drift(drift, n_heads: int) -> None:
    """Refuse a positional drift that is not None or an (H,) tensor."""
    if drift is not None and (not isinstance(drift, torch.Tensor) or drift.shape != (n_heads,)):
        shape = tuple(drift.shape) if isinstance(drift, torch.Tensor) else type(drift).__name__
        raise ValueError(f"drift must be None or a tensor of shape (H,) = ({n_heads},); got {shape}")


def split_frequencies(omega: torch.Tensor, drift: torch.Tensor | None = None):
    """The form in which every SSA implementation computes Δω² without cancellation.

    With e = (1, …, 1)/√F, each frequency vector splits into its component along e and the rest,
    ω_i = q_i e + p_i (p_i ⊥ e), and a positional drift λ_h i on every coordinate is (√F λ_h i) e, so

        Δω²_ij = ‖p_i − p_j‖² + (q_i − q_j + μ (i − j))²,      μ = √F λ_h.

    Both terms are non-negative. The first is a matrix product of the p's (the GEMM form
    ‖p_i‖² + ‖p_j‖² − 2 p_i·p_j), whose rounding error is of order eps (‖p_i‖² + ‖p_j‖²): p carries neither
    the drift nor any offset common to the coordinates, so its size is the content's, whatever the position
    or N. (Centring p on the first token as well was tried and dropped: for zero-mean content it doubles
    ‖p‖², and the float32 error with it.) The second is a difference formed before it is squared,
    from the positions (i − j), exact in floating point, and the content's q. Forming
    ‖ω_i‖² + ‖ω_j‖² − 2 ω_i·ω_j from the drifted ω instead has an error of order eps (λ i)² F, which grows
    with the position (issue 21: weight error 0.011 at N = 256 and 0.14 at N = 1,024 in float32).

    Parameters
    ----------
    omega : Tensor, (B, H, N, F)
        Frequencies (with the drift, if any, not yet added).
    drift : Tensor, (H,), optional
        Positional frequency offset per head: token i has frequencies ω_i + λ_h i on every coordinate.

    Returns
    -------
    p : Tensor, (B, H, N, F), or None when F = 1 (then Δω² is the second term alone)
    q : Tensor, (B, H, N)
    mu : Tensor, (H,), or None without drift
    """
    p, q = split_rows(omega)
    mu = None if drift is None else drift * math.sqrt(omega.shape[-1])
    return p, q, mu


def flatten_heads(omega: torch.Tensor, value: torch.Tensor, alpha: torch.Tensor, c: torch.Tensor,
                  drift: torch.Tensor | None = None):
    """The fused kernels' layout: batch and heads merged, contiguous, float32 or float64.

    Parameters
    ----------
    omega : Tensor, (B, H, N, F)
    value : Tensor, (B, H, N, d_v)
    alpha : Tensor, (H,)
    c : Tensor, (B, H, N) or broadcastable to it
        K r per query row.
    drift : Tensor, (H,), optional
        Positional frequency offset per head (see `split_frequencies`).

    Returns
    -------
    om : Tensor, (B H, N, F)
    mu : Tensor, (B H,), √F times the drift, or None without drift
    val : Tensor, (B H, N, d_v)
    al : Tensor, (B H,)
    cc : Tensor, (B H, N)

    Notes
    -----
    Half precision cannot hold the 1e-8 offsets of the reference form, so it is computed in float32 (the
    caller casts the output back to ``value.dtype``). ``om`` is split by `split_rows` (the kernels need
    p and q of `split_frequencies`); differentiable (ordinary autograd) where the caller splits it.
    """
    B, H, N, F = omega.shape
    dtype = omega.dtype if omega.dtype in (torch.float32, torch.float64) else torch.float32
    om = omega.to(dtype).reshape(B * H, N, F).contiguous()
    mu = None if drift is None else (drift.to(dtype) * math.sqrt(F)).repeat(B).contiguous()
    val = value.to(dtype).reshape(B * H, N, value.shape[-1]).contiguous()
    al = alpha.to(dtype).repeat(B).contiguous()
    cc = c.to(dtype).expand(B, H, N).reshape(B * H, N).contiguous()
    return om, mu, val, al, cc


def split_rows(om: torch.Tensor, *, need_p: bool = True):
    """p (…, F) or None (F = 1, or not ``need_p``) and q (…) of `split_frequencies` for frequency rows (…, F).

    Row by row, so a slice of rows gives exactly the corresponding rows of the whole tensor's split (the
    tiled kernel splits one head chunk at a time instead of holding a copy of ω).
    """
    F = om.shape[-1]
    if F == 1:
        return None, om[..., 0]
    p = om - om.mean(dim=-1, keepdim=True) if need_p else None
    return p, om.sum(dim=-1) / math.sqrt(F)
