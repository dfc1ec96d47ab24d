"""Inputs and the error measure shared by the SSA kernel tests (dense, tiled, Numba tiles); pytest puts this
folder on ``sys.path`` (no ``__init__.py``), so the test modules import it by name."""

from __future__ import annotations

import torch

F64 = torch.float64


def ssa_inputs(F, *, B=2, H=3, N=37, d=4, dtype=F64, seed=0, scale=None):
    """(omega, theta, value, alpha, K), all requiring grad: a mix of locked and unlocked pairs at the default
    scale (0.5 for vector frequencies, 1 for SSA-1D) and N = 37, ragged for every tiling the tests use."""
    g = torch.Generator().manual_seed(seed)
    scale = (0.5 if F > 1 else 1.0) if scale is None else scale
    om = (scale * torch.randn(B, H, N, F, generator=g, dtype=dtype)).requires_grad_()
    th = (2.0 * torch.rand(B, H, N, d, generator=g, dtype=dtype)).requires_grad_()
    v = torch.randn(B, H, N, d, generator=g, dtype=dtype).requires_grad_()
    a = (0.5 + torch.rand(H, generator=g, dtype=dtype)).requires_grad_()
    K = torch.tensor(2.0, dtype=dtype).requires_grad_()
    return om, th, v, a, K


def drift_for(omega, *, seed=1):
    """A positional drift λ (H,) requiring grad, one sign per head mixed, of the size that moves a token's
    frequencies by about the content's spread over ten positions (so the drift changes which pairs lock)."""
    g = torch.Generator().manual_seed(seed)
    H, F = omega.shape[1], omega.shape[-1]
    spread = float(omega.detach().std())
    sign = torch.tensor([(-1.0) ** h for h in range(H)], dtype=omega.dtype)
    lam = sign * spread * (0.05 + 0.1 * torch.rand(H, generator=g, dtype=omega.dtype)) / F ** 0.5
    return lam.requires_grad_()


def rel_err(x, y) -> float:
    """max |x − y| / max |y| (y is the reference)."""
    x, y = x.detach(), y.detach()
    return float((x - y).abs().max() / y.abs().max().clamp_min(1e-300))
