"""Tiled SSA in plain PyTorch: memory linear in N, a recomputing backward.

Forward and backward visit the N x N interaction one tile (``heads x block_q x block_k``) at a time: Δω²
comes from one matrix product of augmented vectors, J, the threshold, the locking mask and S are computed
in place in the tile, and row sums and ``S V`` are accumulated. No max-tracking is needed (unlike a
softmax) because 0 ≤ S ≤ 1. Nothing of size N x N is kept: the backward recomputes S tile by tile from
the saved inputs, the output and the row sums (the flash-attention recipe). Works on any device; it is the
CPU path of :func:`oscsim.nn.ssa_functional.ssa_attention` (``impl="tiled"``).

Notes
-----
Per element, with D = relu(Δω²), J = exp(−α D), thr = c_i J + 1e-8 (c_i = K r_i),
u = 1 − D/thr² = 1 − ratio²:

    S = J sqrt(max(u, f)) 1[u ≥ 0]             boundary "reference", f = 1 − (1 − 1e-8)² in the dtype
    S = J u⁺ / sqrt(u⁺ + SMOOTH_FLOOR)          boundary "smooth"

which is the reference form rewritten in Δω² (the ratio clamp becomes the floor f, which is 0 in float32).
With G = ∂L/∂S = (dO_i·V_j − dO_i·O_i)/Z_i (Z_i = Σ_j S_ij + 1e-8) and g_u = ∂L/∂u (locked entries only):

    ∂L/∂thr = g_u 2D/thr³,   γ = J ∂L/∂thr,   β = G S + c_i γ
    ∂L/∂D = −α β − g_u/thr²   (zero where Δω² ≤ 0, as the reference's relu),
    ∂L/∂α = −Σ D β,   ∂L/∂c_i = Σ_j γ_ij,   ∂L/∂V_j = Σ_i S_ij dO_i / Z_i,

and ∂L/∂ω from Δω²_ij = ‖ω_i‖² + ‖ω_j‖² − 2 ω_i·ω_j by two more matrix products per tile. The derivative in
Δω² (not Δω) has no 0/0 at Δω = 0; it equals the reference's autograd result wherever the latter is finite.

Attention dropout is not applied (the weights are never formed); see
:func:`oscsim.nn.ssa_functional.ssa_attention`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from oscsim.nn.ssa_functional import BOUNDARIES, EPS, SMOOTH_FLOOR, _ratio_floor

__all__ = ["ssa_tiled", "TILE_ELEMENTS"]

TILE_ELEMENTS = 1 << 18
"""Default elements per tile (heads x block_q x block_k): 1 MiB in float32, cache-sized."""

_DEFAULT_BLOCK_Q = 64
_DEFAULT_BLOCK_K = 4096


def _augment(omega: Tensor) -> tuple[Tensor, Tensor]:
    """Vectors whose product is −Δω²: [ω, ‖ω‖², 1] · [2ω, −1, −‖ω‖²] = 2ω_i·ω_j − ‖ω_i‖² − ‖ω_j‖²."""
    sq = omega.pow(2).sum(dim=-1, keepdim=True)
    one = torch.ones_like(sq)
    return torch.cat([omega, sq, one], dim=-1), torch.cat([2 * omega, -one, -sq], dim=-1)


def _eps(like: Tensor) -> Tensor:
    return torch.full((), EPS, dtype=like.dtype, device=like.device)


def _causal_keep(i0: int, i1: int, j0: int, j1: int, device) -> Tensor | None:
    """(bq, bk) bool mask of keys j ≤ i, or None when the tile needs no mask."""
    if j1 - 1 <= i0:
        return None
    i = torch.arange(i0, i1, device=device).unsqueeze(-1)
    j = torch.arange(j0, j1, device=device)
    return j <= i


def _tile_S(Wa, Wb, alpha, c, floor, boundary, keep):
    """S for one tile, in place as far as possible. Wa (h, bq, F+2), Wb (h, bk, F+2), alpha (h, 1, 1),
    c (h, bq, 1)."""
    M = torch.bmm(Wa, Wb.transpose(1, 2))  # −Δω²
    M.clamp_max_(0.0)  # −D, D = relu(Δω²)
    J = torch.mul(M, alpha).exp_()
    thr = torch.addcmul(_eps(M), J, c)  # K r J + 1e-8 in one pass
    M.addcmul_(thr, thr)  # thr² − D
    if boundary == "reference" and floor == 0.0:
        S = M.clamp_min_(0.0).sqrt_().mul_(J).div_(thr)  # J sqrt(relu(1 − D/thr²))
    else:
        u = M.div_(thr).div_(thr)  # 1 − D/thr²
        if boundary == "reference":
            S = torch.where(u >= 0, u.clamp_min(floor).sqrt_(), 0.0).mul_(J)
        else:
            u.clamp_min_(0.0)
            S = u.div(u.add(SMOOTH_FLOOR).sqrt_()).mul_(J)
    if keep is not None:
        S.masked_fill_(~keep, 0.0)
    return S


def _tiles(BH: int, N: int, block_q: int, block_k: int, tile_elements: int, causal: bool):
    bq = min(block_q, N)
    bk = min(block_k, N)
    hb = max(1, tile_elements // (bq * bk))
    for h0 in range(0, BH, hb):
        h1 = min(BH, h0 + hb)
        for i0 in range(0, N, bq):
            i1 = min(N, i0 + bq)
            for j0 in range(0, i1 if causal else N, bk):
                j1 = min(N, j0 + bk)
                yield h0, h1, i0, i1, j0, j1


def _forward(omega, value, alpha, c, causal, boundary, block_q, block_k, tile_elements):
    BH, N, _ = omega.shape
    floor = _ratio_floor(omega.dtype)
    a3 = alpha.view(BH, 1, 1)
    out = torch.zeros_like(value)
    Z = torch.zeros(BH, N, dtype=omega.dtype, device=omega.device)
    h_prev = None
    for h0, h1, i0, i1, j0, j1 in _tiles(BH, N, block_q, block_k, tile_elements, causal):
        if h0 != h_prev:  # augmented vectors for this chunk of heads only (keeps the extra memory small)
            Wa, Wb = _augment(omega[h0:h1])
            h_prev = h0
        keep = _causal_keep(i0, i1, j0, j1, omega.device) if causal else None
        S = _tile_S(Wa[:, i0:i1], Wb[:, j0:j1], a3[h0:h1], c[h0:h1, i0:i1, None], floor, boundary, keep)
        Z[h0:h1, i0:i1] += S.sum(dim=-1)
        out[h0:h1, i0:i1] += torch.bmm(S, value[h0:h1, j0:j1])
    Z.add_(EPS)
    out.div_(Z.unsqueeze(-1))
    return out, Z


def _tile_terms(om_i, om_j, alpha, c, floor, boundary, keep):
    """Everything the backward needs for one tile (readable, not in place)."""
    d2 = (om_i.pow(2).sum(-1, keepdim=True) + om_j.pow(2).sum(-1).unsqueeze(1)
          - 2 * torch.bmm(om_i, om_j.transpose(1, 2)))
    pos = d2 > 0
    D = d2.clamp_min(0.0)
    J = torch.exp(-alpha * D)
    thr = c * J + EPS
    u = 1 - D / thr.pow(2)
    locked = u >= 0
    if keep is not None:
        locked = locked & keep
    if boundary == "reference":
        m = locked & (u >= floor)
        q = torch.where(locked, u.clamp_min(floor).sqrt(), 0.0)
        Sx = q
        # ∂S/∂u = J / (2 q) where the clamp passes the gradient (inf at q = 0, as in the reference).
        dSdu = torch.where(m, J / (2 * torch.where(m, q, 1.0)), 0.0)
    else:
        up = torch.where(locked, u.clamp_min(0.0), 0.0)
        Sx = up / torch.sqrt(up + SMOOTH_FLOOR)
        dSdu = torch.where(locked & (u > 0), J * (up + 2 * SMOOTH_FLOOR) / (2 * (up + SMOOTH_FLOOR) ** 1.5), 0.0)
    return D, pos, J, thr, J * Sx, dSdu


def _backward(grad_out, omega, value, alpha, c, out, Z, causal, boundary, block_q, block_k, tile_elements):
    BH, N, _ = omega.shape
    floor = _ratio_floor(omega.dtype)
    a3 = alpha.view(BH, 1, 1)
    g_omega = torch.zeros_like(omega)
    g_value = torch.zeros_like(value)
    g_alpha = torch.zeros_like(alpha)
    g_c = torch.zeros_like(c)
    dOz = grad_out / Z.unsqueeze(-1)  # dO_i / Z_i
    delta = (grad_out * out).sum(-1) / Z  # dO_i·O_i / Z_i
    for h0, h1, i0, i1, j0, j1 in _tiles(BH, N, block_q, block_k, tile_elements, causal):
        keep = _causal_keep(i0, i1, j0, j1, omega.device) if causal else None
        om_i, om_j = omega[h0:h1, i0:i1], omega[h0:h1, j0:j1]
        ci = c[h0:h1, i0:i1, None]
        al = a3[h0:h1]
        D, pos, J, thr, S, dSdu = _tile_terms(om_i, om_j, al, ci, floor, boundary, keep)
        G = torch.bmm(dOz[h0:h1, i0:i1], value[h0:h1, j0:j1].transpose(1, 2)) - delta[h0:h1, i0:i1, None]
        g_value[h0:h1, j0:j1] += torch.bmm(S.transpose(1, 2), dOz[h0:h1, i0:i1])
        gu = G * dSdu
        gamma = J * gu * 2 * D / thr.pow(3)
        beta = G * S + ci * gamma
        gD = torch.where(pos, -al * beta - gu / thr.pow(2), 0.0)
        g_alpha[h0:h1] -= (D * beta).sum(dim=(1, 2))
        g_c[h0:h1, i0:i1] += gamma.sum(-1)
        g_omega[h0:h1, i0:i1] += 2 * (gD.sum(-1, keepdim=True) * om_i - torch.bmm(gD, om_j))
        g_omega[h0:h1, j0:j1] += 2 * (gD.sum(1).unsqueeze(-1) * om_j - torch.bmm(gD.transpose(1, 2), om_i))
    return g_omega, g_value, g_alpha, g_c


class _SSATiled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, omega, value, alpha, c, causal, boundary, block_q, block_k, tile_elements):
        out, Z = _forward(omega, value, alpha, c, causal, boundary, block_q, block_k, tile_elements)
        ctx.save_for_backward(omega, value, alpha, c, out, Z)
        ctx.cfg = (causal, boundary, block_q, block_k, tile_elements)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        omega, value, alpha, c, out, Z = ctx.saved_tensors
        g = _backward(grad_out.contiguous(), omega, value, alpha, c, out, Z, *ctx.cfg)
        return (*g, None, None, None, None, None)


def ssa_tiled(
    omega: Tensor,
    value: Tensor,
    alpha: Tensor,
    c: Tensor,
    *,
    causal: bool = False,
    boundary: str = "reference",
    block_q: int = _DEFAULT_BLOCK_Q,
    block_k: int = _DEFAULT_BLOCK_K,
    tile_elements: int = TILE_ELEMENTS,
) -> Tensor:
    """Tiled SSA output Σ_j S_ij V_j / (Σ_j S_ij + 1e-8) with a recomputing backward.

    Parameters
    ----------
    omega : Tensor, (B, H, N, F)
        Natural frequencies (F = 1 for SSA-1D).
    value : Tensor, (B, H, N, d_v)
        Values.
    alpha : Tensor, (H,)
        Coupling bandwidths, positive.
    c : Tensor, (B, H, N)
        K r for each query row (the prefix order parameter when causal); see
        :func:`oscsim.nn.ssa_functional.ssa_order_parameter`.
    causal : bool
        Mask keys j > i (tiles entirely above the diagonal are skipped).
    boundary : {"reference", "smooth"}
    block_q, block_k : int
        Query and key rows per tile (capped at N).
    tile_elements : int
        Target elements per tile; whole heads are batched into one tile while they fit.

    Returns
    -------
    out : Tensor, (B, H, N, d_v)

    Notes
    -----
    Extra memory (beyond inputs and output): a few tiles of ``tile_elements`` plus O(B H N) row sums.
    """
    if boundary not in BOUNDARIES:
        raise ValueError(f"boundary must be one of {BOUNDARIES}; got {boundary!r}")
    for name, v in (("block_q", block_q), ("block_k", block_k), ("tile_elements", tile_elements)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int; got {v!r}")
    B, H, N, F = omega.shape
    dv = value.shape[-1]
    om = omega.reshape(B * H, N, F).contiguous()
    val = value.reshape(B * H, N, dv).contiguous()
    al = alpha.to(omega.dtype).repeat(B)
    cc = c.to(omega.dtype).expand(B, H, N).reshape(B * H, N).contiguous()
    out = _SSATiled.apply(om, val, al, cc, causal, boundary, block_q, block_k, tile_elements)
    return out.view(B, H, N, dv)
