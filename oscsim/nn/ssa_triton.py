"""Fused SSA kernels in Triton (CUDA; on the CPU only through the Triton interpreter).

One program per (query block, batch x head) for the forward: it loops over key blocks, computes Δω² as
‖p_i − p_j‖² with ``tl.dot`` (IEEE fp32 or fp64, never TF32) plus (q_i − q_j + μ (i − j))² formed as a
difference (the split of :func:`oscsim.nn.ssa_constants.split_frequencies`; no p and no product for SSA-1D), J, the threshold, the locking mask and S in registers, and
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

from oscsim.nn.ssa_constants import EPS, SMOOTH_FLOOR, check_boundary, check_drift, flatten_heads, split_rows
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
    def _load_rows(PTR, bh, idx, mask, N, W, col):
        """Rows ``idx`` (zero where ``mask`` is off) of program bh's (N, W) matrix, columns ``col`` padded with
        zeros beyond W: (len(idx), len(col))."""
        return tl.load(PTR + bh * N * W + idx[:, None] * W + col[None, :],
                       mask=mask[:, None] & (col[None, :] < W), other=0.0)

    @triton.jit
    def _store_rows(PTR, value, bh, idx, mask, N, W, col):
        """The inverse of `_load_rows`: writes the unpadded part of ``value``."""
        tl.store(PTR + bh * N * W + idx[:, None] * W + col[None, :], value,
                 mask=mask[:, None] & (col[None, :] < W))

    @triton.jit
    def _load_entries(PTR, bh, idx, mask, N):
        """Entries ``idx`` of program bh's length-N vector (zero where ``mask`` is off)."""
        return tl.load(PTR + bh * N + idx, mask=mask, other=0.0)

    @triton.jit
    def _query_side(OM, NRM, Q, C, bh, rows, N, FD, fcol):
        """What a query block needs: its row mask, p_i (BM, FP), |p_i|², q_i and K r of each row."""
        rmask = rows < N
        om_i = _load_rows(OM, bh, rows, rmask, N, FD, fcol)
        return (rmask, om_i, _load_entries(NRM, bh, rows, rmask, N), _load_entries(Q, bh, rows, rmask, N),
                _load_entries(C, bh, rows, rmask, N))

    @triton.jit
    def _key_side(OM, NRM, Q, V, bh, j0, N, FD, DV, fcol, dcol, BN: tl.constexpr):
        """What the key block starting at row j0 needs: its rows and row mask, p_j (BN, FP), |p_j|², q_j and
        V_j (BN, DP)."""
        cols = j0 + tl.arange(0, BN)
        cmask = cols < N
        om_j = _load_rows(OM, bh, cols, cmask, N, FD, fcol)
        n_j = _load_entries(NRM, bh, cols, cmask, N)
        q_j = _load_entries(Q, bh, cols, cmask, N)
        return cols, cmask, om_j, n_j, q_j, _load_rows(V, bh, cols, cmask, N, DV, dcol)

    @triton.jit
    def _program_block(BX: tl.constexpr, FP: tl.constexpr, DP: tl.constexpr):
        """This program's block index, its batch x head index, the BX rows of its block, and the padded
        column ranges of ω (FP) and V (DP)."""
        pid = tl.program_id(0)
        return pid, tl.program_id(1), pid * BX + tl.arange(0, BX), tl.arange(0, FP), tl.arange(0, DP)

    @triton.jit
    def _keys_end(N, pid_m, BM: tl.constexpr, CAUSAL: tl.constexpr):
        """End of the key rows query block pid_m sees: N, or (causal) the end of its own block."""
        hi = N
        if CAUSAL:
            hi = tl.minimum(N, (pid_m + 1) * BM)
        return hi

    @triton.jit
    def _s_tile(om_i, n_i, q_i, rows, rmask, om_j, n_j, q_j, cols, cmask, c_i, alpha, mu, FLOOR,
                CAUSAL: tl.constexpr, SMOOTH: tl.constexpr, HAS_P: tl.constexpr):
        """Recompute one tile: returns gp (the product term before its relu), t, D = Δω², J, thr, u, locked,
        S (all (BM, BN))."""
        valid = rmask[:, None] & cmask[None, :]
        if CAUSAL:
            valid = valid & (cols[None, :] <= rows[:, None])
        t = q_i[:, None] - q_j[None, :] + mu * (rows[:, None] - cols[None, :]).to(q_i.dtype)
        D = t * t
        gp = D  # Triton needs gp bound on both branches; read only when HAS_P (SSA-1D has no p)
        if HAS_P:
            dot = tl.dot(om_i, tl.trans(om_j), input_precision="ieee")
            gp = n_i[:, None] + n_j[None, :] - 2.0 * dot
            D = D + tl.maximum(gp, 0.0)
        J = tl.exp(-alpha * D)
        thr = c_i[:, None] * J + 1e-8
        u = 1.0 - D / (thr * thr)
        locked = (u >= 0.0) & valid
        if SMOOTH:
            up = tl.where(locked, tl.maximum(u, 0.0), 0.0)
            S = J * (up / tl.sqrt(up + 1e-6))
        else:
            S = tl.where(locked, J * tl.sqrt(tl.maximum(u, FLOOR)), 0.0)
        return gp, t, D, J, thr, u, locked, S

    @triton.jit
    def _grad_tile(doz_i, delta_i, v_j, D, J, thr, u, locked, S, c_i, alpha, FLOOR, SMOOTH: tl.constexpr):
        """∂L/∂(Δω²) and the pieces γ (∂L/∂c per element) and β (for ∂L/∂α) of one tile, from
        G = ∂L/∂S = (∂L/∂out / Z) V_jᵀ − δ_i."""
        G = tl.dot(doz_i, tl.trans(v_j), input_precision="ieee") - delta_i[:, None]
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
        gD = tl.where(D > 0.0, -alpha * beta - gu / (thr * thr), 0.0)
        return gD, gamma, beta

    @triton.jit
    def _ssa_fwd(OM, NRM, Q, MU, V, ALPHA, C, OUT, Z, N, FD, DV, FLOOR,
                 CAUSAL: tl.constexpr, SMOOTH: tl.constexpr, HAS_P: tl.constexpr,
                 BM: tl.constexpr, BN: tl.constexpr, FP: tl.constexpr, DP: tl.constexpr):
        pid_m, bh, rows, fcol, dcol = _program_block(BM, FP, DP)
        rmask, om_i, n_i, q_i, c_i = _query_side(OM, NRM, Q, C, bh, rows, N, FD, fcol)
        alpha = tl.load(ALPHA + bh)
        mu = tl.load(MU + bh)
        acc = tl.zeros((BM, DP), dtype=OUT.dtype.element_ty)
        z = tl.zeros((BM,), dtype=OUT.dtype.element_ty)
        for j0 in range(0, _keys_end(N, pid_m, BM, CAUSAL), BN):
            cols, cmask, om_j, n_j, q_j, v_j = _key_side(OM, NRM, Q, V, bh, j0, N, FD, DV, fcol, dcol, BN)
            gp, t, D, J, thr, u, locked, S = _s_tile(om_i, n_i, q_i, rows, rmask, om_j, n_j, q_j, cols, cmask, c_i,
                                                     alpha, mu, FLOOR, CAUSAL, SMOOTH, HAS_P)
            z += tl.sum(S, axis=1)
            acc += tl.dot(S, v_j, input_precision="ieee")
        z = z + 1e-8
        _store_rows(OUT, acc / z[:, None], bh, rows, rmask, N, DV, dcol)
        tl.store(Z + bh * N + rows, z, mask=rmask)

    @triton.jit
    def _ssa_bwd_q(OM, NRM, Q, MU, V, ALPHA, C, DOZ, DELTA, GOM, GQ, GC, GALPHA, GMU, N, FD, DV, FLOOR, NMB,
                   CAUSAL: tl.constexpr, SMOOTH: tl.constexpr, HAS_P: tl.constexpr,
                   BM: tl.constexpr, BN: tl.constexpr, FP: tl.constexpr, DP: tl.constexpr):
        pid_m, bh, rows, fcol, dcol = _program_block(BM, FP, DP)
        rmask, om_i, n_i, q_i, c_i = _query_side(OM, NRM, Q, C, bh, rows, N, FD, fcol)
        doz_i = _load_rows(DOZ, bh, rows, rmask, N, DV, dcol)
        delta_i = _load_entries(DELTA, bh, rows, rmask, N)
        alpha = tl.load(ALPHA + bh)
        mu = tl.load(MU + bh)
        g_om = tl.zeros((BM, FP), dtype=GOM.dtype.element_ty)
        g_q = tl.zeros((BM,), dtype=GOM.dtype.element_ty)
        g_c = tl.zeros((BM,), dtype=GOM.dtype.element_ty)
        g_a = tl.zeros((BM,), dtype=GOM.dtype.element_ty)
        g_m = tl.zeros((BM,), dtype=GOM.dtype.element_ty)
        for j0 in range(0, _keys_end(N, pid_m, BM, CAUSAL), BN):
            cols, cmask, om_j, n_j, q_j, v_j = _key_side(OM, NRM, Q, V, bh, j0, N, FD, DV, fcol, dcol, BN)
            gp, t, D, J, thr, u, locked, S = _s_tile(om_i, n_i, q_i, rows, rmask, om_j, n_j, q_j, cols, cmask, c_i,
                                                     alpha, mu, FLOOR, CAUSAL, SMOOTH, HAS_P)
            gD, gamma, beta = _grad_tile(doz_i, delta_i, v_j, D, J, thr, u, locked, S, c_i, alpha, FLOOR, SMOOTH)
            g_t = 2.0 * gD * t
            g_q += tl.sum(g_t, axis=1)
            g_m += tl.sum(g_t * (rows[:, None] - cols[None, :]).to(g_t.dtype), axis=1)
            if HAS_P:
                gP = tl.where(gp > 0.0, gD, 0.0)
                g_om += 2.0 * (tl.sum(gP, axis=1)[:, None] * om_i - tl.dot(gP, om_j, input_precision="ieee"))
            g_c += tl.sum(gamma, axis=1)
            g_a -= tl.sum(D * beta, axis=1)
        _store_rows(GOM, g_om, bh, rows, rmask, N, FD, fcol)
        tl.store(GQ + bh * N + rows, g_q, mask=rmask)
        tl.store(GC + bh * N + rows, g_c, mask=rmask)
        tl.store(GALPHA + bh * NMB + pid_m, tl.sum(g_a, axis=0))
        tl.store(GMU + bh * NMB + pid_m, tl.sum(g_m, axis=0))

    @triton.jit
    def _ssa_bwd_k(OM, NRM, Q, MU, V, ALPHA, C, DOZ, DELTA, GOM, GQ, GV, N, FD, DV, FLOOR,
                   CAUSAL: tl.constexpr, SMOOTH: tl.constexpr, HAS_P: tl.constexpr,
                   BM: tl.constexpr, BN: tl.constexpr, FP: tl.constexpr, DP: tl.constexpr):
        pid_n, bh, _, fcol, dcol = _program_block(BN, FP, DP)
        cols, cmask, om_j, n_j, q_j, v_j = _key_side(OM, NRM, Q, V, bh, pid_n * BN, N, FD, DV, fcol, dcol, BN)
        alpha = tl.load(ALPHA + bh)
        mu = tl.load(MU + bh)
        g_om = tl.zeros((BN, FP), dtype=GOM.dtype.element_ty)
        g_q = tl.zeros((BN,), dtype=GOM.dtype.element_ty)
        g_v = tl.zeros((BN, DP), dtype=GV.dtype.element_ty)
        lo = 0
        if CAUSAL:
            lo = (pid_n * BN // BM) * BM
        for i0 in range(lo, N, BM):
            rows = i0 + tl.arange(0, BM)
            rmask, om_i, n_i, q_i, c_i = _query_side(OM, NRM, Q, C, bh, rows, N, FD, fcol)
            doz_i = _load_rows(DOZ, bh, rows, rmask, N, DV, dcol)
            delta_i = _load_entries(DELTA, bh, rows, rmask, N)
            gp, t, D, J, thr, u, locked, S = _s_tile(om_i, n_i, q_i, rows, rmask, om_j, n_j, q_j, cols, cmask, c_i,
                                                     alpha, mu, FLOOR, CAUSAL, SMOOTH, HAS_P)
            gD, gamma, beta = _grad_tile(doz_i, delta_i, v_j, D, J, thr, u, locked, S, c_i, alpha, FLOOR, SMOOTH)
            g_v += tl.dot(tl.trans(S), doz_i, input_precision="ieee")
            g_q -= tl.sum(2.0 * gD * t, axis=0)
            if HAS_P:
                gP = tl.where(gp > 0.0, gD, 0.0)
                g_om += 2.0 * (tl.sum(gP, axis=0)[:, None] * om_j
                               - tl.dot(tl.trans(gP), om_i, input_precision="ieee"))
        _store_rows(GOM, g_om, bh, cols, cmask, N, FD, fcol)
        tl.store(GQ + bh * N + cols, g_q, mask=cmask)
        _store_rows(GV, g_v, bh, cols, cmask, N, DV, dcol)


def _pad(n: int) -> int:
    return max(16, triton.next_power_of_2(n))


class _SSATriton(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p_om, q_om, mu, value, alpha, c, causal, boundary, block_m, block_n):
        BH, N = q_om.shape
        DV = value.shape[-1]
        floor = _ratio_floor(q_om.dtype)
        has_p = p_om is not None
        # without p (SSA-1D) the kernels never read OM and NRM; q stands in for both pointers
        om = p_om if has_p else q_om.unsqueeze(-1)
        nrm = om.pow(2).sum(-1).contiguous() if has_p else q_om
        mu_k = mu if mu is not None else torch.zeros(BH, dtype=q_om.dtype, device=q_om.device)
        out = torch.empty_like(value)
        Z = torch.empty(BH, N, dtype=q_om.dtype, device=q_om.device)
        grid = (triton.cdiv(N, block_m), BH)
        FD = om.shape[-1]
        _ssa_fwd[grid](om, nrm, q_om, mu_k, value, alpha, c, out, Z, N, FD, DV, floor,
                       CAUSAL=causal, SMOOTH=boundary == "smooth", HAS_P=has_p, BM=block_m, BN=block_n,
                       FP=_pad(FD), DP=_pad(DV))
        ctx.save_for_backward(om, nrm, q_om, mu_k, value, alpha, c, out, Z)
        ctx.cfg = (causal, boundary, block_m, block_n, has_p, mu is not None)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        om, nrm, q_om, mu_k, value, alpha, c, out, Z = ctx.saved_tensors
        causal, boundary, block_m, block_n, has_p, has_mu = ctx.cfg
        BH, N, FD = om.shape
        DV = value.shape[-1]
        floor = _ratio_floor(q_om.dtype)
        grad_out = grad_out.contiguous()
        doz = (grad_out / Z.unsqueeze(-1)).contiguous()
        delta = ((grad_out * out).sum(-1) / Z).contiguous()
        nmb = triton.cdiv(N, block_m)
        g_om_q = torch.zeros_like(om)
        g_om_k = torch.zeros_like(om)
        g_q_q = torch.empty_like(q_om)
        g_q_k = torch.empty_like(q_om)
        g_v = torch.empty_like(value)
        g_c = torch.empty_like(c)
        g_a = torch.empty(BH, nmb, dtype=q_om.dtype, device=q_om.device)
        g_m = torch.empty(BH, nmb, dtype=q_om.dtype, device=q_om.device)
        meta = dict(CAUSAL=causal, SMOOTH=boundary == "smooth", HAS_P=has_p, BM=block_m, BN=block_n,
                    FP=_pad(FD), DP=_pad(DV))
        _ssa_bwd_q[(nmb, BH)](om, nrm, q_om, mu_k, value, alpha, c, doz, delta, g_om_q, g_q_q, g_c, g_a, g_m,
                              N, FD, DV, floor, nmb, **meta)
        _ssa_bwd_k[(triton.cdiv(N, block_n), BH)](om, nrm, q_om, mu_k, value, alpha, c, doz, delta, g_om_k,
                                                  g_q_k, g_v, N, FD, DV, floor, **meta)
        g_p = g_om_q + g_om_k if has_p else None
        g_mu = g_m.sum(-1) if has_mu else None
        return g_p, g_q_q + g_q_k, g_mu, g_v, g_a.sum(-1), g_c, None, None, None, None


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
    drift: Tensor | None = None,
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
    drift : Tensor, (H,), optional
        Positional frequency offset per head (see :func:`oscsim.nn.ssa_functional.mismatch_sq`).

    Returns
    -------
    out : Tensor, (B, H, N, d_v)
    """
    if triton is None:
        raise ValueError("impl='triton' needs the 'triton' package; use impl='tiled' or 'auto'")
    check_boundary(boundary)
    for name, b in (("block_m", block_m), ("block_n", block_n)):
        if not isinstance(b, int) or b < 16 or b & (b - 1):
            raise ValueError(f"{name} must be a power of two >= 16; got {b!r}")
    if not omega.is_cuda and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("impl='triton' needs CUDA tensors (or TRITON_INTERPRET=1 set before Triton is imported, "
                         "for the slow CPU interpreter); use impl='tiled' on the CPU")
    check_drift(drift, omega.shape[1])
    om, mu, val, al, cc = flatten_heads(omega, value, alpha, c, drift)
    p_om, q_om = split_rows(om)  # differentiable: autograd carries ∂p, ∂q to ω
    p_om = None if p_om is None else p_om.contiguous()
    out = _SSATriton.apply(p_om, q_om.contiguous(), mu, val, al, cc, causal, boundary, block_m, block_n)
    return out.view(value.shape).to(value.dtype)


assert SMOOTH_FLOOR == 1e-6 and EPS == 1e-8, "the kernels hard-code these constants"
