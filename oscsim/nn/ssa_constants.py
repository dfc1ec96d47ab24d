"""Constants shared by the SSA implementations (dense `ssa_functional`, `ssa_tiled`, `ssa_tiled_numba`,
`ssa_triton`), in a leaf module so that the fast paths do not import the dense one that dispatches to them."""

from __future__ import annotations

import torch

__all__ = ["EPS", "SMOOTH_FLOOR", "BOUNDARIES", "ratio_floor"]

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
