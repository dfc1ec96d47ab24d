"""Tiled SSA in plain PyTorch: memory linear in N, a recomputing backward.

Forward and backward visit the N x N interaction one tile (``heads x block_q x block_k``) at a time: Δω²
comes from one matrix product of augmented vectors plus a squared difference (below), J, the threshold, the
locking mask and S are computed in place in the tile, and row sums and ``S V`` are accumulated. No max-tracking is needed (unlike a
softmax) because 0 ≤ S ≤ 1. Nothing of size N x N is kept: the backward recomputes S tile by tile from
the saved inputs, the output and the row sums (the flash-attention recipe). Works on any device; it is the
CPU path of :func:`oscsim.nn.ssa_functional.ssa_attention` (``impl="tiled"``).

Notes
-----
Δω² = ‖p_i − p_j‖² + t_ij², t_ij = q_i − q_j + μ (i − j) (:func:`oscsim.nn.ssa_constants.split_frequencies`;
p: the frequencies without their component along (1, …, 1), centred on the first token; q: that component;
μ: √F times the positional drift). The first term is the product of augmented vectors
[p_i, ‖p_i‖², 1]·[2p_j, −1, −‖p_j‖²] (relu'd), the second is formed as a difference before it is squared,
so no term grows with the position (absent for SSA-1D: F = 1 has no p and no product).
Per element, with D = Δω², J = exp(−α D), thr = c_i J + 1e-8 (c_i = K r_i),
u = 1 − D/thr² = 1 − ratio²:

    S = J sqrt(max(u, f)) 1[u ≥ 0]             boundary "reference", f = 1 − (1 − 1e-8)² in the dtype
    S = J u⁺ / sqrt(u⁺ + SMOOTH_FLOOR)          boundary "smooth"

which is the reference form rewritten in Δω² (the ratio clamp becomes the floor f, which is 0 in float32).
With G = ∂L/∂S = (dO_i·V_j − dO_i·O_i)/Z_i (Z_i = Σ_j S_ij + 1e-8) and g_u = ∂L/∂u (locked entries only):

    ∂L/∂thr = g_u 2D/thr³,   γ = J ∂L/∂thr,   β = G S + c_i γ
    ∂L/∂D = −α β − g_u/thr²   (zero where Δω² ≤ 0, as the reference's relu),
    ∂L/∂α = −Σ D β,   ∂L/∂c_i = Σ_j γ_ij,   ∂L/∂V_j = Σ_i S_ij dO_i / Z_i,

and, with g = ∂L/∂D: ∂L/∂p_i = 2 Σ_j g_ij (p_i − p_j) by two more matrix products per tile (where the
product term is positive), ∂L/∂t_ij = 2 g_ij t_ij, ∂L/∂q_i = Σ_j ∂L/∂t_ij, ∂L/∂q_j = −Σ_i ∂L/∂t_ij and
∂L/∂μ = Σ ∂L/∂t_ij (i − j); then ∂L/∂ω = ∂L/∂p − mean_f ∂L/∂p + ∂L/∂q / √F (p and q are formed per head
chunk inside the kernel, so no second copy of ω is held), and autograd carries ∂L/∂μ to the drift. The derivative in
Δω² (not Δω) has no 0/0 at Δω = 0; it equals the reference's autograd result wherever the latter is finite.

Tile kernels (``kernel=``): on the CPU in float32/float64 the default is a fused Numba pass
(:mod:`oscsim.nn.ssa_tiled_numba`): forward, the product tile from ``bmm`` becomes S and the row sums in one
pass, then ``S V`` by ``bmm``; 512 x 256 tiles, one buffer per worker; backward, the product tile and
(dO/Z) Vᵀ become S and ∂L/∂‖p_i − p_j‖² in one pass that also adds the row, column and per-head sums,
between BLAS products. ``kernel="torch"`` keeps the plain-PyTorch
tile (any device; the reference and fallback), where float32 tiles with the reference boundary use an
equivalent two-buffer form built on ``exp2`` (see the comment above ``_tile_S_fast``). Either way, on the
CPU the tiles run on single-threaded worker threads (see ``_forward``). Attention dropout is not applied
(the weights are never formed); see
:func:`oscsim.nn.ssa_functional.ssa_attention`. Design and measurements: ``docs/ssa_kernels.md``.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import torch
from torch import Tensor

from oscsim.nn.ssa_constants import EPS, SMOOTH_FLOOR, check_boundary, check_drift, flatten_heads, split_rows
from oscsim.nn.ssa_constants import ratio_floor as _ratio_floor

__all__ = ["ssa_tiled", "TILE_ELEMENTS", "KERNELS"]

TILE_ELEMENTS = 1 << 17
"""Default elements per tile (heads x block_q x block_k): 512 KiB in float32, cache-sized."""

_DEFAULT_BLOCK_Q = 32
_DEFAULT_BLOCK_K = 4096
# The Numba path keeps one tile buffer per worker (the torch path two), and its products are the larger
# share of its time: taller blocks make the BLAS products more efficient at the same 512 KiB tile.
_NUMBA_BLOCK_Q = 512
_NUMBA_BLOCK_K = 256


def _causal_keep(i0: int, i1: int, j0: int, j1: int, device) -> Tensor | None:
    """(bq, bk) bool mask of keys j ≤ i, or None when the tile needs no mask."""
    if j1 - 1 <= i0:
        return None
    i = torch.arange(i0, i1, device=device).unsqueeze(-1)
    j = torch.arange(j0, j1, device=device)
    return j <= i


def _drift_t(qi, qj, mu, i0, j0):
    """t = q_i − q_j + μ (i − j) of a tile: qi (h, bq), qj (h, bk), mu (h,) or None -> (h, bq, bk)."""
    t = qi.unsqueeze(-1) - qj.unsqueeze(1)
    if mu is not None:
        i = torch.arange(i0, i0 + qi.shape[1], device=qi.device, dtype=qi.dtype)
        j = torch.arange(j0, j0 + qj.shape[1], device=qi.device, dtype=qi.dtype)
        t.add_(mu.view(-1, 1, 1) * (i.unsqueeze(-1) - j))
    return t


def _neg_mismatch(Wa, Wb, t):
    """−Δω² of a tile: −relu(‖p_i − p_j‖²) (from the augmented product, or 0 without p) − t²."""
    if Wa is None:
        return t.square().neg_()
    M = torch.bmm(Wa, Wb.transpose(1, 2))  # −‖p_i − p_j‖²
    return M.clamp_max_(0.0).addcmul_(t, t, value=-1.0)


def _tile_S(Wa, Wb, t, alpha, c, floor, boundary, keep):
    """S for one tile, the exact general form (any dtype and boundary). Wa (h, bq, F+2), Wb (h, bk, F+2) or
    both None (F = 1), t (h, bq, bk), alpha (h, 1, 1), c (h, bq, 1)."""
    M = _neg_mismatch(Wa, Wb, t)  # −D
    J = torch.mul(M, alpha).exp_()
    thr = torch.mul(J, c).add_(EPS)
    u = M.addcmul_(thr, thr).div_(thr).div_(thr)  # 1 − D/thr²
    if boundary == "reference":
        S = torch.where(u >= 0, u.clamp_min(floor).sqrt_(), 0.0).mul_(J)
    else:
        u.clamp_min_(0.0)
        S = u.div(u.add(SMOOTH_FLOOR).sqrt_()).mul_(J)
    if keep is not None:
        S.masked_fill_(~keep, 0.0)
    return S


# Fast float32 form (boundary "reference", where the ratio clamp is a no-op because 1 − 1e-8 rounds to 1).
# With κ = α log2(e) folded into the query vectors (and √κ into t), the tile is A = −κ Δω²; with τ = √κ thr and
# c_s = √κ K r:  J = 2^A,  κ(thr² − D) = A + τ²,  and
#     c_s S = sqrt(relu(A + τ²)) (1 − √κ 1e-8 / τ)      (since J c_s / τ = 1 − √κ 1e-8 / τ),
# so a tile needs two buffers, and the per-row factor c_s is divided out of the row sums and outputs.
# Three tricks, each measured on the CPU: exp2 is about 3x faster than exp; A is capped at −115
# (J ≥ 2^−115 ≈ 2.4e−35) because subnormal results make exp several times slower (such pairs cannot lock:
# their threshold is 1e-8 + c·2.4e−35; the cap also is the relu of Δω²); sqrt of exact zeros is several
# times slower than of normal numbers, so unlocked entries are raised to _TINY before the sqrt and set
# back to zero after it. Used when every c = K r of the head chunk exceeds _FAST_MIN_C (1 − √κ 1e-8 / τ
# loses relative precision only when c J is comparable to 1e-8, i.e. for c of that order).
_LOG2E = 1.4426950408889634
_EXP2_CAP = 115.0
_TINY = 1e-30
_SQRT_TINY = float(torch.tensor(_TINY).sqrt())
_FAST_MIN_C = 1e-4


def _tile_S_fast(Wa, Wb, t, c_s, eps_s, keep):
    """c_s S for one float32 tile. Wa (h, bq, F+2) pre-scaled by κ, Wb (h, bk, F+2) (both None for F = 1),
    t (h, bq, bk) scaled by √κ, c_s (h, bq, 1), eps_s = √κ 1e-8 (h, 1, 1)."""
    A = _neg_mismatch(Wa, Wb, t)  # −κ Δω²
    A.clamp_min_(-_EXP2_CAP)
    T = torch.exp2(A)  # J
    T.mul_(c_s).add_(eps_s)  # τ
    S = A.addcmul_(T, T).clamp_min_(_TINY).sqrt_()  # √κ sqrt(thr² − D), or √_TINY where unlocked
    torch.nn.functional.threshold_(S, _SQRT_TINY, 0.0)
    torch.div(eps_s, T, out=T)
    S.addcmul_(S, T, value=-1.0)
    if keep is not None:
        S.masked_fill_(~keep, 0.0)
    return S


def _plan(BH, N, block_q, block_k, tile_elements):
    bq, bk = min(block_q, N), min(block_k, N)
    hb = max(1, tile_elements // (bq * bk))
    chunks = [(h0, min(BH, h0 + hb)) for h0 in range(0, BH, hb)]
    iblocks = [(i0, min(N, i0 + bq)) for i0 in range(0, N, bq)]
    return bk, chunks, iblocks


def _run_chunks(fn, chunks, iblocks):
    """Run ``fn(chunk, iblocks)`` for every head chunk, whole chunks dealt out to single-threaded workers.

    Used by the backward, where key rows receive contributions from every query block of their chunk, so
    a chunk must stay with one worker. Chunks are disjoint: results do not depend on the thread count.
    """
    workers = min(torch.get_num_threads(), len(chunks))
    if workers <= 1:
        for ch in chunks:
            fn(ch, iblocks)
        return

    def work(part):
        torch.set_num_threads(1)
        with torch.no_grad():  # grad mode is thread-local
            for ch in part:
                fn(ch, iblocks)

    prev = torch.get_num_threads()
    try:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(work, [chunks[w::workers] for w in range(workers)]))
    finally:
        torch.set_num_threads(prev)


def _numba_kernels():
    """The Numba tile kernels, or None where Numba cannot be imported."""
    global _NUMBA
    if _NUMBA is None:
        try:
            from oscsim.nn import ssa_tiled_numba
        except ImportError:  # pragma: no cover - numba is a dependency
            _NUMBA = False
        else:
            _NUMBA = ssa_tiled_numba
    return _NUMBA or None


_NUMBA = None
KERNELS = ("auto", "numba", "torch")


def _use_numba(kernel, tensor):
    if kernel == "torch":
        return False
    ok = tensor.device.type == "cpu" and tensor.dtype in (torch.float32, torch.float64)
    if kernel == "numba" and not ok:
        raise ValueError(f"kernel='numba' needs CPU float32/float64 tensors; got {tensor.device}, "
                         f"{tensor.dtype}")
    if not ok:
        return False
    if _numba_kernels() is None:
        if kernel == "numba":
            raise RuntimeError("kernel='numba' but numba cannot be imported")
        return False
    return True


def _scratch(local, n, dtype):
    """A flat buffer of at least n elements, kept per thread in ``local``."""
    buf = getattr(local, "buf", None)
    if buf is None or buf.numel() < n or buf.dtype != dtype:
        buf = local.buf = torch.empty(n, dtype=dtype)
    return buf[:n]


def _key_vectors(om):
    """Key vectors [2p, −1, −‖p‖²] (h, N, F+2) and ‖p‖² (h, N, 1) of a head chunk's frequencies om (h, N, F),
    p = ω − mean_f ω (`split_rows`) formed in the key buffer: no separate copy of p is held (p is
    ``Wb[..., :F] / 2``, exactly)."""
    h, N, F = om.shape
    Wb = torch.empty(h, N, F + 2, dtype=om.dtype, device=om.device)
    p = torch.sub(om, om.mean(dim=-1, keepdim=True), out=Wb[..., :F])
    # a norm reduction needs no (h, N, F) temporary beside Wb (p.pow(2) did: +1 MiB per worker at N = 4,096)
    sq = torch.linalg.vector_norm(p, dim=-1, keepdim=True).square_()
    p.mul_(2.0)
    Wb[..., F] = -1.0
    torch.neg(sq, out=Wb[..., F + 1:])
    return Wb, sq


def _query_vectors(Wb, sq, i0, i1):
    """Query vectors [p_i, ‖p_i‖², 1] of rows i0:i1 (from the key vectors Wb): their product with the keys
    is −‖p_i − p_j‖²."""
    F = Wb.shape[-1] - 2
    return torch.cat([Wb[:, i0:i1, :F] * 0.5, sq[:, i0:i1], torch.ones_like(sq[:, i0:i1])], dim=-1)


class _Perp:
    """p of `split_rows` for the rows asked for (``perp[h0:h1]``, ``perp[h0:h1, i0:i1]``), computed when
    asked: a whole p would be a second copy of ω alive beside it (measured: the tiled forward's peak at
    N = 4,096 went from 1.2x to 2.2x SDPA's with one). The fused paths do not even hold a chunk's p: it
    lives, doubled, in the key vectors (`_key_vectors`)."""

    def __init__(self, omega):
        self.omega = omega

    def __getitem__(self, rows):
        return split_rows(self.omega[rows])[0]


def _forward(omega, q_om, mu, value, alpha, c, causal, boundary, block_q, block_k, tile_elements, kernel="auto"):
    """Output and row sums; omega (BH, N, F), q_om (BH, N) (`split_rows`), mu (BH,) or None."""
    BH, N = q_om.shape
    dtype, device = q_om.dtype, q_om.device
    floor = _ratio_floor(dtype)
    a3 = alpha.view(BH, 1, 1)
    nb = _numba_kernels() if _use_numba(kernel, q_om) else None
    scratch = threading.local()  # one tile buffer per worker thread (numba path), freed on return
    out = torch.empty_like(value)
    Z = torch.empty(BH, N, dtype=dtype, device=device)
    bk, chunks, iblocks = _plan(BH, N, block_q, block_k, tile_elements)

    prepare = partial(_prepare_chunk, omega=omega, q_om=q_om, mu=mu, alpha=alpha, c=c, boundary=boundary,
                      floor=floor, nb=nb)

    def task(h0, h1, i0, i1, p):
        v = value[h0:h1]
        Wb, cc, fast, c_s, qs, ms = p["Wb"], p["cc"], p["fast"], p["c_s"], p["qs"], p["ms"]
        Wa = None
        if Wb is not None:
            Wa = _query_vectors(Wb, p["sq"], i0, i1)
            if fast or p["fast_smooth"]:
                Wa.mul_(p["kappa"])
        acc = z = None
        for j0 in range(0, i1 if causal else N, bk):
            j1 = min(N, j0 + bk)
            if nb is not None:  # one fused Numba pass over the product tile, in a per-worker buffer
                if z is None:
                    z = torch.zeros(h1 - h0, i1 - i0, dtype=dtype)
                    z_np = z.numpy()
                shape = (h1 - h0, i1 - i0, j1 - j0)
                S = _scratch(scratch, shape[0] * shape[1] * shape[2], dtype).view(shape)
                if Wa is not None:
                    torch.bmm(Wa, Wb[:, j0:j1].transpose(1, 2), out=S)
                else:  # SSA-1D: no product term
                    S.zero_()
                drift_args = (p["qs_np"][:, i0:i1], p["qs_np"][:, j0:j1], p["ms_np"])
                if fast or p["fast_smooth"]:
                    nb.tile_fast_f32(S.numpy(), p["c_s_np"][:, i0:i1], p["eps_s_np"], z_np, i0, j0, causal,
                                     p["fast_smooth"], *drift_args)
                else:
                    nb.tile_exact(S.numpy(), p["alpha_np"], p["cc_np"][:, i0:i1], floor, boundary == "smooth",
                                  z_np, i0, j0, causal, *drift_args)
                if acc is None:
                    acc = torch.bmm(S, v[:, j0:j1])
                else:
                    acc.baddbmm_(S, v[:, j0:j1])
                del S
                continue
            keep = _causal_keep(i0, i1, j0, j1, device) if causal else None
            t = _drift_t(qs[:, i0:i1], qs[:, j0:j1], ms, i0, j0)
            Wbj = None if Wb is None else Wb[:, j0:j1]
            if fast:
                S = _tile_S_fast(Wa, Wbj, t, c_s[:, i0:i1], p["eps_s"], keep)
            else:
                S = _tile_S(Wa, Wbj, t, a3[h0:h1], cc[:, i0:i1], floor, boundary, keep)
            zs, av = S.sum(dim=-1), torch.bmm(S, v[:, j0:j1])
            del S
            acc, z = (av, zs) if acc is None else (acc.add_(av), z.add_(zs))
        if fast:  # rows of c_s S: divide c_s out
            acc.div_(c_s[:, i0:i1])
            z.div_(c_s[:, i0:i1, 0])
        z.add_(EPS)
        Z[h0:h1, i0:i1] = z
        out[h0:h1, i0:i1] = acc.div_(z.unsqueeze(-1))

    _run_tasks(prepare, task, chunks, iblocks, device)
    return out, Z


def _prepare_chunk(h0, h1, *, omega, q_om, mu, alpha, c, boundary, floor, nb):
    """Key vectors and constants of the head chunk h0:h1 (the ``p`` of `_forward`'s tasks)."""
    dtype = q_om.dtype
    a3 = alpha.view(-1, 1, 1)
    cc = c[h0:h1].unsqueeze(-1)
    Wb, sq = _key_vectors(omega[h0:h1]) if omega.shape[-1] > 1 else (None, None)
    fast = (boundary == "reference" and dtype == torch.float32 and floor == 0.0
            and bool((cc > _FAST_MIN_C).all()))
    # the Numba kernel also has a float32 smooth-boundary form on the κ-scaled product (S, not c_s S)
    fast_smooth = nb is not None and boundary == "smooth" and dtype == torch.float32
    kappa = a3[h0:h1] * _LOG2E
    # t = q_i − q_j + μ (i − j) enters squared: on the κ-scaled paths q and μ carry √κ
    scale = kappa.sqrt().view(-1, 1) if fast or fast_smooth else None
    qs = q_om[h0:h1] if scale is None else q_om[h0:h1] * scale
    ms = None if mu is None else (mu[h0:h1] if scale is None else mu[h0:h1] * scale[:, 0])
    p = dict(sq=sq, Wb=Wb, cc=cc, fast=fast, fast_smooth=fast_smooth, kappa=kappa, c_s=cc * kappa.sqrt(),
             eps_s=kappa.sqrt() * EPS, qs=qs, ms=ms)
    if nb is not None:
        p.update(c_s_np=p["c_s"][..., 0].detach().numpy(), cc_np=cc[..., 0].detach().numpy(),
                 eps_s_np=p["eps_s"].reshape(-1).detach().numpy(), alpha_np=alpha[h0:h1].detach().numpy(),
                 qs_np=qs.detach().numpy(), ms_np=None if ms is None else ms.detach().numpy())
    return p


def _run_tasks(prepare, task, chunks, iblocks, device):
    """``task(h0, h1, i0, i1, prepare(h0, h1))`` for every (head chunk, query block), on
    ``torch.get_num_threads()`` single-threaded workers (CPU) or in order."""
    tasks = [(ch, ib) for ch in chunks for ib in iblocks]
    workers = min(torch.get_num_threads(), len(tasks)) if device.type == "cpu" else 1
    if workers <= 1:
        for h0, h1 in chunks:
            p = prepare(h0, h1)
            for i0, i1 in iblocks:
                task(h0, h1, i0, i1, p)
        return

    # Single-threaded workers pull (head chunk, query block) tasks in order from a shared queue: one
    # parallel region per call instead of one per tensor operation (on a busy machine, thousands of small
    # OpenMP regions each wait for the slowest core), and no barrier a descheduled worker could stall.
    # A chunk's key vectors are built by the first worker that needs them and freed after its last block,
    # so at most about one chunk per worker is alive. Workers write disjoint rows: the result does not
    # depend on the number of threads.
    lock = threading.Lock()
    queue = iter(tasks)
    prepared: dict = {}  # chunk -> [data, blocks left]

    def work():
        torch.set_num_threads(1)
        with torch.no_grad():  # grad mode is thread-local; the autograd.Function handles the graph
            while True:
                with lock:
                    item = next(queue, None)
                    if item is None:
                        return
                    ch, (i0, i1) = item
                    if ch not in prepared:
                        prepared[ch] = [prepare(*ch), len(iblocks)]
                    p = prepared[ch][0]
                task(*ch, i0, i1, p)
                with lock:
                    prepared[ch][1] -= 1
                    if prepared[ch][1] == 0:
                        del prepared[ch]
                del p

    prev_threads = torch.get_num_threads()
    try:
        with ThreadPoolExecutor(workers) as pool:
            for f in [pool.submit(work) for _ in range(workers)]:
                f.result()
    finally:
        torch.set_num_threads(prev_threads)


def _tile_terms(p_i, p_j, t, alpha, c, floor, boundary, keep):
    """Everything the backward needs for one tile (readable, not in place): p_i (h, bq, F), p_j (h, bk, F) or
    both None (F = 1), t (h, bq, bk)."""
    if p_i is None:
        gp, ppos = None, None
    else:
        gp = (p_i.pow(2).sum(-1, keepdim=True) + p_j.pow(2).sum(-1).unsqueeze(1)
              - 2 * torch.bmm(p_i, p_j.transpose(1, 2)))
        ppos = gp > 0
        gp = gp.clamp_min(0.0)
    D = t.square() if gp is None else gp + t.square()
    pos = D > 0
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
    return D, pos, ppos, J, thr, J * Sx, dSdu


def _numba_backward_chunk(nb, dOz, delta, omega, q_om, mu, value, alpha, c, floor, causal, boundary, bk,
                          g_p, g_q, g_value, g_c, g_scal):
    """``run(chunk, blocks)``: the backward of one head chunk with the fused Numba tile
    (:func:`oscsim.nn.ssa_tiled_numba.tile_backward`). Per tile, BLAS products give −‖p_i − p_j‖² and
    (dO_i/Z_i)·V_j, one Numba pass turns them into S and ∂L/∂‖p_i − p_j‖² and adds the row, column and
    per-head sums, and BLAS products add ∂V and ∂p. g_scal (BH, 2) receives (∂L/∂α, ∂L/∂μ) per head."""
    N = q_om.shape[1]
    dtype = q_om.dtype
    smooth = boundary == "smooth"
    mu = torch.zeros_like(q_om[:, 0]) if mu is None else mu
    arr = {name: t.detach().numpy() for name, t in dict(alpha=alpha, c=c, delta=delta, q=q_om, mu=mu, g_c=g_c,
                                                          g_q=g_q, g_scal=g_scal).items()}

    def run(chunk, blocks):
        h0, h1 = chunk
        h = h1 - h0
        Wb = sq = None
        if omega.shape[-1] > 1:
            Wb, sq = _key_vectors(omega[h0:h1])
        for i0, i1 in blocks:
            dOz_i = dOz[h0:h1, i0:i1]
            Wa = None if Wb is None else _query_vectors(Wb, sq, i0, i1)
            gp_row = torch.zeros(h, i1 - i0, dtype=dtype)
            for j0 in range(0, i1 if causal else N, bk):
                j1 = min(N, j0 + bk)
                if Wa is not None:
                    P = torch.bmm(Wa, Wb[:, j0:j1].transpose(1, 2))
                else:  # SSA-1D: no product term
                    P = torch.zeros(h, i1 - i0, j1 - j0, dtype=dtype)
                G = torch.bmm(dOz_i, value[h0:h1, j0:j1].transpose(1, 2))
                gp_col = torch.zeros(h, j1 - j0, dtype=dtype)
                nb.tile_backward(P.numpy(), G.numpy(), arr["alpha"][h0:h1], arr["c"][h0:h1, i0:i1],
                                 arr["delta"][h0:h1, i0:i1], floor, smooth, arr["q"][h0:h1, i0:i1],
                                 arr["q"][h0:h1, j0:j1], arr["mu"][h0:h1], i0, j0, causal,
                                 arr["g_c"][h0:h1, i0:i1], arr["g_q"][h0:h1], gp_row.numpy(), gp_col.numpy(),
                                 arr["g_scal"][h0:h1])
                g_value[h0:h1, j0:j1].baddbmm_(P.transpose(1, 2), dOz_i)  # P now holds S
                if Wa is not None:  # G now holds ∂L/∂‖p_i − p_j‖² =: g; ∂L/∂p_i = 2 Σ_j g_ij (p_i − p_j)
                    p2_i, p2_j = Wb[:, i0:i1, :-2], Wb[:, j0:j1, :-2]  # 2p, exactly
                    g_p[h0:h1, i0:i1].baddbmm_(G, p2_j, alpha=-1.0)
                    g_p[h0:h1, j0:j1].baddbmm_(G.transpose(1, 2), p2_i, alpha=-1.0).addcmul_(
                        gp_col.unsqueeze(-1), p2_j)
            if Wa is not None:
                g_p[h0:h1, i0:i1].addcmul_(gp_row.unsqueeze(-1), Wb[:, i0:i1, :-2])

    return run


def _backward(grad_out, omega, q_om, mu, value, alpha, c, out, Z, causal, boundary, block_q, block_k,
              tile_elements, kernel="auto"):
    """Gradients with respect to ω (through p and q), μ, the values, α and c (see the module notes)."""
    g_p, g_q, g_mu, g_value, g_alpha, g_c = _backward_split(grad_out, omega, q_om, mu, value, alpha, c, out, Z,
                                                            causal, boundary, block_q, block_k, tile_elements,
                                                            kernel)
    F = omega.shape[-1]
    if g_p is None:  # F = 1: q = ω
        return g_q.unsqueeze(-1), g_mu, g_value, g_alpha, g_c
    # p = ω − mean_f ω, q = Σ_f ω / √F
    g_p.sub_(g_p.mean(dim=-1, keepdim=True)).add_(g_q.unsqueeze(-1), alpha=1.0 / math.sqrt(F))
    return g_p, g_mu, g_value, g_alpha, g_c


def _backward_split(grad_out, omega, q_om, mu, value, alpha, c, out, Z, causal, boundary, block_q, block_k,
                    tile_elements, kernel):
    BH, N = q_om.shape
    floor = _ratio_floor(q_om.dtype)
    device = q_om.device
    a3 = alpha.view(BH, 1, 1)
    p_om = _Perp(omega) if omega.shape[-1] > 1 else None
    g_p = None if p_om is None else torch.zeros_like(omega)
    g_q = torch.zeros_like(q_om)
    g_mu = None if mu is None else torch.zeros_like(mu)
    g_value = torch.zeros_like(value)
    g_alpha = torch.zeros_like(alpha)
    g_c = torch.zeros_like(c)
    dOz = grad_out / Z.unsqueeze(-1)  # dO_i / Z_i
    delta = (grad_out * out).sum(-1) / Z  # dO_i·O_i / Z_i
    bk, chunks, iblocks = _plan(BH, N, block_q, block_k, tile_elements)
    nb = _numba_kernels() if _use_numba(kernel, q_om) else None
    if nb is not None:
        g_scal = torch.zeros(BH, 2, dtype=q_om.dtype)
        _run_chunks(_numba_backward_chunk(nb, dOz, delta, omega, q_om, mu, value, alpha, c, floor, causal, boundary,
                                          bk, g_p, g_q, g_value, g_c, g_scal), chunks, iblocks)
        g_alpha += g_scal[:, 0]
        if g_mu is not None:
            g_mu += g_scal[:, 1]
        return g_p, g_q, g_mu, g_value, g_alpha, g_c

    def run(chunk, blocks):
        h0, h1 = chunk
        al = a3[h0:h1]
        q, m = q_om[h0:h1], None if mu is None else mu[h0:h1]
        for i0, i1 in blocks:
            ci, dOz_i = c[h0:h1, i0:i1, None], dOz[h0:h1, i0:i1]
            p_i = None if p_om is None else p_om[h0:h1, i0:i1]
            for j0 in range(0, i1 if causal else N, bk):
                j1 = min(N, j0 + bk)
                keep = _causal_keep(i0, i1, j0, j1, device) if causal else None
                p_j = None if p_om is None else p_om[h0:h1, j0:j1]
                t = _drift_t(q[:, i0:i1], q[:, j0:j1], m, i0, j0)
                D, pos, ppos, J, thr, S, dSdu = _tile_terms(p_i, p_j, t, al, ci, floor, boundary, keep)
                G = torch.bmm(dOz_i, value[h0:h1, j0:j1].transpose(1, 2)) - delta[h0:h1, i0:i1, None]
                g_value[h0:h1, j0:j1] += torch.bmm(S.transpose(1, 2), dOz_i)
                gu = G * dSdu
                gamma = J * gu * 2 * D / thr.pow(3)
                beta = G * S + ci * gamma
                gD = torch.where(pos, -al * beta - gu / thr.pow(2), 0.0)
                g_alpha[h0:h1] -= (D * beta).sum(dim=(1, 2))
                g_c[h0:h1, i0:i1] += gamma.sum(-1)
                g_t = 2 * gD * t  # ∂L/∂t
                g_q[h0:h1, i0:i1] += g_t.sum(-1)
                g_q[h0:h1, j0:j1] -= g_t.sum(1)
                if m is not None:
                    ij = (torch.arange(i0, i1, device=device, dtype=t.dtype).unsqueeze(-1)
                          - torch.arange(j0, j1, device=device, dtype=t.dtype))
                    g_mu[h0:h1] += (g_t * ij).sum(dim=(1, 2))
                if p_i is not None:
                    gP = torch.where(ppos, gD, 0.0)
                    g_p[h0:h1, i0:i1] += 2 * (gP.sum(-1, keepdim=True) * p_i - torch.bmm(gP, p_j))
                    g_p[h0:h1, j0:j1] += 2 * (gP.sum(1).unsqueeze(-1) * p_j - torch.bmm(gP.transpose(1, 2), p_i))

    _run_chunks(run, chunks, iblocks)
    return g_p, g_q, g_mu, g_value, g_alpha, g_c


class _SSATiled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, omega, mu, value, alpha, c, causal, boundary, block_q, block_k, tile_elements, kernel):
        q_om = split_rows(omega, need_p=False)[1].contiguous()
        out, Z = _forward(omega, q_om, mu, value, alpha, c, causal, boundary, block_q, block_k, tile_elements,
                          kernel)
        ctx.save_for_backward(omega, q_om, mu, value, alpha, c, out, Z)
        ctx.cfg = (causal, boundary, block_q, block_k, tile_elements, kernel)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        omega, q_om, mu, value, alpha, c, out, Z = ctx.saved_tensors
        g = _backward(grad_out.contiguous(), omega, q_om, mu, value, alpha, c, out, Z, *ctx.cfg)
        return (*g, None, None, None, None, None, None)


def ssa_tiled(
    omega: Tensor,
    value: Tensor,
    alpha: Tensor,
    c: Tensor,
    *,
    causal: bool = False,
    boundary: str = "reference",
    block_q: int | None = None,
    block_k: int | None = None,
    tile_elements: int = TILE_ELEMENTS,
    kernel: str = "auto",
    drift: Tensor | None = None,
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
    block_q, block_k : int, optional
        Query and key rows per tile (capped at N). Default 512 x 256 for the Numba kernel, 32 x 4096 for
        the torch kernel (512 KiB float32 tiles either way).
    tile_elements : int
        Target elements per tile; whole heads are batched into one tile while they fit.
    kernel : {"auto", "numba", "torch"}
        Tile computation, forward and backward. "numba": one fused Numba pass per tile between BLAS
        products (:mod:`oscsim.nn.ssa_tiled_numba`; CPU float32/float64). "torch": the plain-PyTorch tile
        (any device; the reference). "auto": "numba" on the CPU when Numba imports, else "torch".
    drift : Tensor, (H,), optional
        Positional frequency offset per head, token i's frequencies being ω_i + λ_h i (see
        :func:`oscsim.nn.ssa_functional.mismatch_sq`).

    Returns
    -------
    out : Tensor, (B, H, N, d_v)

    Notes
    -----
    Extra memory (beyond inputs and output): a few tiles of ``tile_elements`` plus O(B H N) row sums.
    """
    check_boundary(boundary)
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}; got {kernel!r}")
    check_drift(drift, omega.shape[1])
    om, mu, val, al, cc = flatten_heads(omega, value, alpha, c, drift)
    kernel = "numba" if _use_numba(kernel, om) else "torch"
    if block_q is None:
        block_q = _NUMBA_BLOCK_Q if kernel == "numba" else _DEFAULT_BLOCK_Q
    if block_k is None:
        block_k = _NUMBA_BLOCK_K if kernel == "numba" else _DEFAULT_BLOCK_K
    for name, v in (("block_q", block_q), ("block_k", block_k), ("tile_elements", tile_elements)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int; got {v!r}")
    out = _SSATiled.apply(om, mu, val, al, cc, causal, boundary, block_q, block_k, tile_elements, kernel)
    return out.view(value.shape).to(value.dtype)
