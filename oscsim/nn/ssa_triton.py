"""Fused SSA kernels in Triton (CUDA; on the CPU only through the Triton interpreter).

One program per (query block, batch x head) for the forward: it loops over key blocks, computes Δω² with
``tl.dot`` (IEEE fp32 or fp64, never TF32), J, the threshold, the locking mask and S in registers, and
accumulates ``S V`` and the row sums; only the output and the row sums (B H N) are written. The backward
recomputes S in two kernels, one per query block (∂ω of the query side, ∂(K r), ∂α partial sums) and one per
key block (∂V, ∂ω of the key side), so that no atomics are needed and results are deterministic. The
formulas are those of :mod:`oscsim.nn.ssa_tiled` (see its notes), which is the CPU twin of this module and
is tested against the dense reference.

Triton must be imported after ``TRITON_INTERPRET=1`` is set for the kernels to run on CPU tensors (the
tests do this in a subprocess). Half-precision inputs are computed in float32.
"""

from __future__ import annotations

import os

import torch
from torch import Tensor

from oscsim.nn.ssa_constants import BOUNDARIES, EPS, SMOOTH_FLOOR
from oscsim.nn.ssa_constants import ratio_floor as _ratio_floor

try:  # optional dependency
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - exercised only without triton
    triton = None
    tl = None

__all__ = ["ssa_triton", "triton_available"]


def triton_available() -> bool:
    """True when Triton is importable."""
    return triton is not None


if triton is not None:

    @triton.jit
    def _s_tile(om_i, n_i, om_j, n_j, c_i, alpha, valid, FLOOR, SMOOTH: tl.constexpr):
        """Recompute one tile: returns d2, D, J, thr, u, locked, S (all (BM, BN))."""
        dot = tl.dot(om_i, tl.trans(om_j), input_precision="ieee")
        d2 = n_i[:, None] + n_j[None, :] - 2.0 * dot
        D = tl.maximum(d2, 0.0)
        J = tl.exp(-alpha * D)
        thr = c_i[:, None] * J + 1e-8
        u = 1.0 - D / (thr * thr)
        locked = (u >= 0.0) & valid
        if SMOOTH:
            up = tl.where(locked, tl.maximum(u, 0.0), 0.0)
            S = J * (up / tl.sqrt(up + 1e-6))
        else:
            S = tl.where(locked, J * tl.sqrt(tl.maximum(u, FLOOR)), 0.0)
        return d2, D, J, thr, u, locked, S

    @triton.jit
    def _grad_tile(G, d2, D, J, thr, u, locked, S, c_i, alpha, FLOOR, SMOOTH: tl.constexpr):
        """∂L/∂(Δω²) and the pieces γ (∂L/∂c per element) and β (for ∂L/∂α) of one tile."""
        if SMOOTH:
            up = tl.maximum(u, 0.0)
            dSdu = tl.where(locked & (u > 0.0), J * (up + 2e-6) / (2.0 * (up + 1e-6) * tl.sqrt(up + 1e-6)), 0.0)
        else:
            m = locked & (u >= FLOOR)
            q = tl.where(m, tl.sqrt(tl.maximum(u, FLOOR)), 1.0)
            dSdu = tl.where(m, J / (2.0 * q), 0.0)
        gu = G * dSdu
        gamma = J * gu * 2.0 * D / (thr * thr * thr)
        beta = G * S + c_i[:, None] * gamma
        gD = tl.where(d2 > 0.0, -alpha * beta - gu / (thr * thr), 0.0)
        return gD, gamma, beta

    @triton.jit
    def _ssa_fwd(OM, NRM, V, ALPHA, C, OUT, Z, N, FD, DV, FLOOR,
                 CAUSAL: tl.constexpr, SMOOTH: tl.constexpr,
                 BM: tl.constexpr, BN: tl.constexpr, FP: tl.constexpr, DP: tl.constexpr):
        pid_m = tl.program_id(0)
        bh = tl.program_id(1)
        rows = pid_m * BM + tl.arange(0, BM)
        fcol = tl.arange(0, FP)
        dcol = tl.arange(0, DP)
        rmask = rows < N
        om_i = tl.load(OM + bh * N * FD + rows[:, None] * FD + fcol[None, :],
                       mask=rmask[:, None] & (fcol[None, :] < FD), other=0.0)
        n_i = tl.load(NRM + bh * N + rows, mask=rmask, other=0.0)
        c_i = tl.load(C + bh * N + rows, mask=rmask, other=0.0)
        alpha = tl.load(ALPHA + bh)
        acc = tl.zeros((BM, DP), dtype=OUT.dtype.element_ty)
        z = tl.zeros((BM,), dtype=OUT.dtype.element_ty)
        hi = N
        if CAUSAL:
            hi = tl.minimum(N, (pid_m + 1) * BM)
        for j0 in range(0, hi, BN):
            cols = j0 + tl.arange(0, BN)
            cmask = cols < N
            om_j = tl.load(OM + bh * N * FD + cols[:, None] * FD + fcol[None, :],
                           mask=cmask[:, None] & (fcol[None, :] < FD), other=0.0)
            n_j = tl.load(NRM + bh * N + cols, mask=cmask, other=0.0)
            v_j = tl.load(V + bh * N * DV + cols[:, None] * DV + dcol[None, :],
                          mask=cmask[:, None] & (dcol[None, :] < DV), other=0.0)
            valid = rmask[:, None] & cmask[None, :]
            if CAUSAL:
                valid = valid & (cols[None, :] <= rows[:, None])
            d2, D, J, thr, u, locked, S = _s_tile(om_i, n_i, om_j, n_j, c_i, alpha, valid, FLOOR, SMOOTH)
            z += tl.sum(S, axis=1)
            acc += tl.dot(S, v_j, input_precision="ieee")
        z = z + 1e-8
        tl.store(OUT + bh * N * DV + rows[:, None] * DV + dcol[None, :], acc / z[:, None],
                 mask=rmask[:, None] & (dcol[None, :] < DV))
        tl.store(Z + bh * N + rows, z, mask=rmask)

    @triton.jit
    def _ssa_bwd_q(OM, NRM, V, ALPHA, C, DOZ, DELTA, GOM, GC, GALPHA, N, FD, DV, FLOOR, NMB,
                   CAUSAL: tl.constexpr, SMOOTH: tl.constexpr,
                   BM: tl.constexpr, BN: tl.constexpr, FP: tl.constexpr, DP: tl.constexpr):
        pid_m = tl.program_id(0)
        bh = tl.program_id(1)
        rows = pid_m * BM + tl.arange(0, BM)
        fcol = tl.arange(0, FP)
        dcol = tl.arange(0, DP)
        rmask = rows < N
        om_i = tl.load(OM + bh * N * FD + rows[:, None] * FD + fcol[None, :],
                       mask=rmask[:, None] & (fcol[None, :] < FD), other=0.0)
        n_i = tl.load(NRM + bh * N + rows, mask=rmask, other=0.0)
        c_i = tl.load(C + bh * N + rows, mask=rmask, other=0.0)
        doz_i = tl.load(DOZ + bh * N * DV + rows[:, None] * DV + dcol[None, :],
                        mask=rmask[:, None] & (dcol[None, :] < DV), other=0.0)
        delta_i = tl.load(DELTA + bh * N + rows, mask=rmask, other=0.0)
        alpha = tl.load(ALPHA + bh)
        g_om = tl.zeros((BM, FP), dtype=GOM.dtype.element_ty)
        g_c = tl.zeros((BM,), dtype=GOM.dtype.element_ty)
        g_a = tl.zeros((BM,), dtype=GOM.dtype.element_ty)
        hi = N
        if CAUSAL:
            hi = tl.minimum(N, (pid_m + 1) * BM)
        for j0 in range(0, hi, BN):
            cols = j0 + tl.arange(0, BN)
            cmask = cols < N
            om_j = tl.load(OM + bh * N * FD + cols[:, None] * FD + fcol[None, :],
                           mask=cmask[:, None] & (fcol[None, :] < FD), other=0.0)
            n_j = tl.load(NRM + bh * N + cols, mask=cmask, other=0.0)
            v_j = tl.load(V + bh * N * DV + cols[:, None] * DV + dcol[None, :],
                          mask=cmask[:, None] & (dcol[None, :] < DV), other=0.0)
            valid = rmask[:, None] & cmask[None, :]
            if CAUSAL:
                valid = valid & (cols[None, :] <= rows[:, None])
            d2, D, J, thr, u, locked, S = _s_tile(om_i, n_i, om_j, n_j, c_i, alpha, valid, FLOOR, SMOOTH)
            G = tl.dot(doz_i, tl.trans(v_j), input_precision="ieee") - delta_i[:, None]
            gD, gamma, beta = _grad_tile(G, d2, D, J, thr, u, locked, S, c_i, alpha, FLOOR, SMOOTH)
            g_om += 2.0 * (tl.sum(gD, axis=1)[:, None] * om_i - tl.dot(gD, om_j, input_precision="ieee"))
            g_c += tl.sum(gamma, axis=1)
            g_a -= tl.sum(D * beta, axis=1)
        tl.store(GOM + bh * N * FD + rows[:, None] * FD + fcol[None, :], g_om,
                 mask=rmask[:, None] & (fcol[None, :] < FD))
        tl.store(GC + bh * N + rows, g_c, mask=rmask)
        tl.store(GALPHA + bh * NMB + pid_m, tl.sum(g_a, axis=0))

    @triton.jit
    def _ssa_bwd_k(OM, NRM, V, ALPHA, C, DOZ, DELTA, GOM, GV, N, FD, DV, FLOOR,
                   CAUSAL: tl.constexpr, SMOOTH: tl.constexpr,
                   BM: tl.constexpr, BN: tl.constexpr, FP: tl.constexpr, DP: tl.constexpr):
        pid_n = tl.program_id(0)
        bh = tl.program_id(1)
        cols = pid_n * BN + tl.arange(0, BN)
        fcol = tl.arange(0, FP)
        dcol = tl.arange(0, DP)
        cmask = cols < N
        om_j = tl.load(OM + bh * N * FD + cols[:, None] * FD + fcol[None, :],
                       mask=cmask[:, None] & (fcol[None, :] < FD), other=0.0)
        n_j = tl.load(NRM + bh * N + cols, mask=cmask, other=0.0)
        v_j = tl.load(V + bh * N * DV + cols[:, None] * DV + dcol[None, :],
                      mask=cmask[:, None] & (dcol[None, :] < DV), other=0.0)
        alpha = tl.load(ALPHA + bh)
        g_om = tl.zeros((BN, FP), dtype=GOM.dtype.element_ty)
        g_v = tl.zeros((BN, DP), dtype=GV.dtype.element_ty)
        lo = 0
        if CAUSAL:
            lo = (pid_n * BN // BM) * BM
        for i0 in range(lo, N, BM):
            rows = i0 + tl.arange(0, BM)
            rmask = rows < N
            om_i = tl.load(OM + bh * N * FD + rows[:, None] * FD + fcol[None, :],
                           mask=rmask[:, None] & (fcol[None, :] < FD), other=0.0)
            n_i = tl.load(NRM + bh * N + rows, mask=rmask, other=0.0)
            c_i = tl.load(C + bh * N + rows, mask=rmask, other=0.0)
            doz_i = tl.load(DOZ + bh * N * DV + rows[:, None] * DV + dcol[None, :],
                            mask=rmask[:, None] & (dcol[None, :] < DV), other=0.0)
            delta_i = tl.load(DELTA + bh * N + rows, mask=rmask, other=0.0)
            valid = rmask[:, None] & cmask[None, :]
            if CAUSAL:
                valid = valid & (cols[None, :] <= rows[:, None])
            d2, D, J, thr, u, locked, S = _s_tile(om_i, n_i, om_j, n_j, c_i, alpha, valid, FLOOR, SMOOTH)
            G = tl.dot(doz_i, tl.trans(v_j), input_precision="ieee") - delta_i[:, None]
            gD, gamma, beta = _grad_tile(G, d2, D, J, thr, u, locked, S, c_i, alpha, FLOOR, SMOOTH)
            g_v += tl.dot(tl.trans(S), doz_i, input_precision="ieee")
            g_om += 2.0 * (tl.sum(gD, axis=0)[:, None] * om_j
                           - tl.dot(tl.trans(gD), om_i, input_precision="ieee"))
        tl.store(GOM + bh * N * FD + cols[:, None] * FD + fcol[None, :], g_om,
                 mask=cmask[:, None] & (fcol[None, :] < FD))
        tl.store(GV + bh * N * DV + cols[:, None] * DV + dcol[None, :], g_v,
                 mask=cmask[:, None] & (dcol[None, :] < DV))


def _pad(n: int) -> int:
    return max(16, triton.next_power_of_2(n))


class _SSATriton(torch.autograd.Function):
    @staticmethod
    def forward(ctx, omega, value, alpha, c, causal, boundary, block_m, block_n):
        BH, N, FD = omega.shape
        DV = value.shape[-1]
        floor = _ratio_floor(omega.dtype)
        nrm = omega.pow(2).sum(-1).contiguous()
        out = torch.empty_like(value)
        Z = torch.empty(BH, N, dtype=omega.dtype, device=omega.device)
        grid = (triton.cdiv(N, block_m), BH)
        _ssa_fwd[grid](omega, nrm, value, alpha, c, out, Z, N, FD, DV, floor,
                       CAUSAL=causal, SMOOTH=boundary == "smooth", BM=block_m, BN=block_n,
                       FP=_pad(FD), DP=_pad(DV))
        ctx.save_for_backward(omega, nrm, value, alpha, c, out, Z)
        ctx.cfg = (causal, boundary, block_m, block_n)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        omega, nrm, value, alpha, c, out, Z = ctx.saved_tensors
        causal, boundary, block_m, block_n = ctx.cfg
        BH, N, FD = omega.shape
        DV = value.shape[-1]
        floor = _ratio_floor(omega.dtype)
        grad_out = grad_out.contiguous()
        doz = (grad_out / Z.unsqueeze(-1)).contiguous()
        delta = ((grad_out * out).sum(-1) / Z).contiguous()
        nmb = triton.cdiv(N, block_m)
        g_om_q = torch.empty_like(omega)
        g_om_k = torch.empty_like(omega)
        g_v = torch.empty_like(value)
        g_c = torch.empty_like(c)
        g_a = torch.empty(BH, nmb, dtype=omega.dtype, device=omega.device)
        meta = dict(CAUSAL=causal, SMOOTH=boundary == "smooth", BM=block_m, BN=block_n, FP=_pad(FD), DP=_pad(DV))
        _ssa_bwd_q[(nmb, BH)](omega, nrm, value, alpha, c, doz, delta, g_om_q, g_c, g_a,
                              N, FD, DV, floor, nmb, **meta)
        _ssa_bwd_k[(triton.cdiv(N, block_n), BH)](omega, nrm, value, alpha, c, doz, delta, g_om_k, g_v,
                                                  N, FD, DV, floor, **meta)
        return g_om_q + g_om_k, g_v, g_a.sum(-1), g_c, None, None, None, None


def ssa_triton(
    omega: Tensor,
    value: Tensor,
    alpha: Tensor,
    c: Tensor,
    *,
    causal: bool = False,
    boundary: str = "reference",
    block_m: int = 64,
    block_n: int = 64,
) -> Tensor:
    """Fused SSA output with the Triton kernels; same contract as :func:`oscsim.nn.ssa_tiled.ssa_tiled`.

    Parameters
    ----------
    omega : Tensor, (B, H, N, F)
    value : Tensor, (B, H, N, d_v)
    alpha : Tensor, (H,)
    c : Tensor, (B, H, N)
        K r per query row.
    causal : bool
    boundary : {"reference", "smooth"}
    block_m, block_n : int
        Query and key rows per program and loop step (powers of two, at least 16).

    Returns
    -------
    out : Tensor, (B, H, N, d_v)
    """
    if triton is None:
        raise ValueError("impl='triton' needs the 'triton' package; use impl='tiled' or 'auto'")
    if boundary not in BOUNDARIES:
        raise ValueError(f"boundary must be one of {BOUNDARIES}; got {boundary!r}")
    for name, b in (("block_m", block_m), ("block_n", block_n)):
        if not isinstance(b, int) or b < 16 or b & (b - 1):
            raise ValueError(f"{name} must be a power of two >= 16; got {b!r}")
    if not omega.is_cuda and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("impl='triton' needs CUDA tensors (or TRITON_INTERPRET=1 set before Triton is imported, "
                         "for the slow CPU interpreter); use impl='tiled' on the CPU")
    B, H, N, F = omega.shape
    dv = value.shape[-1]
    dtype = omega.dtype if omega.dtype in (torch.float32, torch.float64) else torch.float32
    om = omega.to(dtype).reshape(B * H, N, F).contiguous()
    val = value.to(dtype).reshape(B * H, N, dv).contiguous()
    al = alpha.to(dtype).repeat(B).contiguous()
    cc = c.to(dtype).expand(B, H, N).reshape(B * H, N).contiguous()
    out = _SSATriton.apply(om, val, al, cc, causal, boundary, block_m, block_n)
    return out.view(B, H, N, dv).to(value.dtype)


assert SMOOTH_FLOOR == 1e-6 and EPS == 1e-8, "the kernels hard-code these constants"
