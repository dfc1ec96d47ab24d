"""Constants and argument handling shared by the SSA implementations (dense `ssa_functional`, `ssa_tiled`,
`ssa_tiled_numba`, `ssa_triton`), in a leaf module so that the fast paths do not import the dense one that
dispatches to them."""

from __future__ import annotations

import torch

__all__ = ["EPS", "SMOOTH_FLOOR", "BOUNDARIES", "ratio_floor", "check_boundary", "flatten_heads"]

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


def flatten_heads(omega: torch.Tensor, value: torch.Tensor, alpha: torch.Tensor, c: torch.Tensor):
    """The fused kernels' layout: batch and heads merged, contiguous, float32 or float64.

    Parameters
    ----------
    omega : Tensor, (B, H, N, F)
    value : Tensor, (B, H, N, d_v)
    alpha : Tensor, (H,)
    c : Tensor, (B, H, N) or broadcastable to it
        K r per query row.

    Returns
    -------
    om : Tensor, (B H, N, F)
    val : Tensor, (B H, N, d_v)
    al : Tensor, (B H,)
    cc : Tensor, (B H, N)

    Notes
    -----
    Half precision cannot hold the 1e-8 offsets of the reference form, so it is computed in float32 (the
    caller casts the output back to ``value.dtype``).
    """
    B, H, N, F = omega.shape
    dtype = omega.dtype if omega.dtype in (torch.float32, torch.float64) else torch.float32
    om = omega.to(dtype).reshape(B * H, N, F).contiguous()
    val = value.to(dtype).reshape(B * H, N, value.shape[-1]).contiguous()
    al = alpha.to(dtype).repeat(B).contiguous()
    cc = c.to(dtype).expand(B, H, N).reshape(B * H, N).contiguous()
    return om, val, al, cc
