"""Selective Synchronization Attention (SSA): functional API and the dense reference form.

The SSA module (:mod:`oscsim.nn.ssa`) owns the projections, dropout and parameters; this module owns the
mathematics of the attention weights and three interchangeable implementations of ``S V``:

``"dense"``
    the readable reference form (DESIGN §3.2), materialising (B, H, N, N) tensors; the only path that
    supports ``top_k`` and ``return_weights``.
``"tiled"``
    :mod:`oscsim.nn.ssa_tiled`, memory linear in N (one tile of the N x N matrices at a time), a custom
    autograd function with a recomputing backward. On CPU (float32/float64) each tile's elementwise work is
    one fused Numba pass between two BLAS products (:mod:`oscsim.nn.ssa_tiled_numba`); elsewhere, or with
    ``kernel="torch"`` in :func:`oscsim.nn.ssa_tiled.ssa_tiled`, the tile is plain PyTorch. Any device.
``"triton"``
    :mod:`oscsim.nn.ssa_triton`, a fused Triton kernel (CUDA, or the Triton interpreter on CPU when
    ``TRITON_INTERPRET=1`` was set before Triton was imported).

Notes
-----
For one batch element and head, with ω_i ∈ R^F (F = d_h vector frequencies, or F = 1 for SSA-1D):

    Δω²_ij = ‖ω_i − ω_j‖²,   Δω_ij = sqrt(Δω²_ij)
    J_ij   = exp(−α Δω²_ij)
    r      = mean_k |(1/N) Σ_j exp(i θ_jk)|            (causal: r_t over the prefix j ≤ t)
    thr_ij = K r J_ij + 1e-8
    locked = 1[Δω_ij ≤ thr_ij]
    S_ij   = J_ij sqrt(1 − clamp(Δω_ij / thr_ij, −1 + 1e-8, 1 − 1e-8)²) locked     (boundary="reference")
    out_i  = Σ_j S_ij V_j / (Σ_j S_ij + 1e-8)

With a positional drift (``drift`` = λ, one per head), token i's frequencies are ω_i + λ i on every
coordinate. The reference code forms Δω² as relu(‖ω_i‖² + ‖ω_j‖² − 2 ω_i·ω_j); every implementation here
forms it as ‖p_i − p_j‖² + (q_i − q_j + √F λ (i − j))² instead (the split of
:func:`oscsim.nn.ssa_constants.split_frequencies`), the same number without the cancellation whose error
grows with ‖ω‖² and so with the position when the drift is in ω (issue 21).

The reference code writes ``cos(asin(ratio))``; that is ``sqrt(1 − ratio²)`` with the same derivative
``−ratio / sqrt(1 − ratio²)``. Its derivative is infinite at ratio → 1 (and ``1 − 1e-8`` rounds to 1 in
float32), DESIGN §3.2 (e). ``boundary="smooth"`` replaces ``sqrt(u)``, u = 1 − ratio² =
(thr − Δω)(thr + Δω)/thr², by ``u / sqrt(u + SMOOTH_FLOOR)``: equal to sqrt(u) within a relative
``SMOOTH_FLOOR / (2u)``, continuous (zero) at the locking boundary, with slope at most
``1/sqrt(SMOOTH_FLOOR)`` there, and computed from Δω² (not Δω), so gradients are finite everywhere,
including at Δω = 0 and exactly at the boundary.

Facts about the reference form (DESIGN §3.2): at the reference initialisation no off-diagonal pair locks
(SSA is the identity map, (a)); r ≈ 0.847 is an initialisation artefact (b); it has no causal mask (c);
``causal=True`` here masks future keys and uses the prefix order parameter of the query row.

References
----------
H. Hays, "Resonant Sparse Geometry Networks", reference code ``osn_model.py`` (github.com/HasiHays/OSN).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from oscsim.nn.ssa_constants import BOUNDARIES, EPS, SMOOTH_FLOOR, check_boundary, check_drift, split_frequencies
from oscsim.nn.ssa_constants import ratio_floor as _ratio_floor

__all__ = [
    "EPS",
    "mismatch_sq",
    "normalise_weights",
    "SMOOTH_FLOOR",
    "BOUNDARIES",
    "IMPLS",
    "SSAComponents",
    "ssa_order_parameter",
    "ssa_components",
    "ssa_attention",
]

IMPLS = ("dense", "tiled", "triton", "auto")

# Pairs (B H N²) from which impl="auto" picks the tiled path: below, the tiled path's thread pool and
# per-tile calls cost more than the dense form's passes. Measured (forward and backward, causal, smooth
# boundary, drift, H = 4, d_h = 32, 2 cores, load average 11–12, one process): B = 8, N = 64 (131k pairs):
# dense 0.45 s, tiled 0.11 s (F = 32), 0.27 / 0.20 s (F = 1); B = 8, N = 256: 4.4 / 1.7 s and 3.0 / 0.85 s;
# B = 1, N = 64 (16k pairs): dense 0.066 s, tiled 0.23 s. (Until this change the rule was N ≥ 512.)
_AUTO_TILED_MIN_PAIRS = 1 << 16
_ORDER_CHUNK_ELEMENTS = 1 << 18


class SSAComponents(NamedTuple):
    """Unnormalised pieces of SSA for one input (dense, shapes (B, H, N, N) unless noted).

    Attributes
    ----------
    J : coupling exp(−α Δω²).
    delta_omega : frequency mismatch Δω (rad per time unit, the units of ω).
    threshold : K r J + 1e-8.
    locked : bool, Δω ≤ threshold (and j ≤ i when causal).
    S : synchronisation strength before top-k and normalisation.
    r : order parameter, (B, H) non-causal or (B, H, N) causal.
    """

    J: Tensor
    delta_omega: Tensor
    threshold: Tensor
    locked: Tensor
    S: Tensor
    r: Tensor


def _check_inputs(omega: Tensor, theta: Tensor, value: Tensor | None, alpha: Tensor, K: Tensor,
                  drift: Tensor | None = None) -> None:
    if omega.dim() != 4:
        raise ValueError(f"omega must have shape (B, H, N, F); got {tuple(omega.shape)}")
    B, H, N, _ = omega.shape
    if theta.dim() != 4 or theta.shape[:3] != (B, H, N):
        raise ValueError(f"theta must have shape (B, H, N, d_h) = ({B}, {H}, {N}, d_h); got {tuple(theta.shape)}")
    if value is not None and (value.dim() != 4 or value.shape[:3] != (B, H, N)):
        raise ValueError(f"value must have shape (B, H, N, d_h) = ({B}, {H}, {N}, d_h); got {tuple(value.shape)}")
    if alpha.shape != (H,):
        raise ValueError(f"alpha must have shape (H,) = ({H},); got {tuple(alpha.shape)}")
    if K.numel() != 1:
        raise ValueError(f"K must be a scalar tensor; got shape {tuple(K.shape)}")
    check_drift(drift, H)


def mismatch_sq(omega: Tensor, drift: Tensor | None = None) -> Tensor:
    """Δω²_ij = ‖ω_i + λ i − (ω_j + λ j)‖² (dense, (B, H, N, N)) without cancellation.

    Parameters
    ----------
    omega : Tensor, (B, H, N, F)
        Frequencies without the drift.
    drift : Tensor, (H,), optional
        Positional frequency offset λ per head, added to every coordinate of token i as λ i.

    Returns
    -------
    Tensor, (B, H, N, N), non-negative.

    Notes
    -----
    Computed as ‖p_i − p_j‖² + (q_i − q_j + μ (i − j))² (:func:`oscsim.nn.ssa_constants.split_frequencies`);
    the first term by the matrix-product form on p, relu'd, as the reference does with ω. The outer relu
    changes no value; it gives the gradient 0 where Δω² = 0 (the diagonal, duplicate tokens), where the
    reference's relu does and where Δω = sqrt(Δω²) has a 0/0.
    """
    p, q, mu = split_frequencies(omega, drift)
    t = q.unsqueeze(-1) - q.unsqueeze(-2)
    if mu is not None:
        pos = torch.arange(omega.shape[2], device=omega.device, dtype=omega.dtype)
        t = t + mu.view(1, -1, 1, 1) * (pos.unsqueeze(-1) - pos)
    d2 = t.square()
    if p is not None:
        sq = p.pow(2).sum(dim=-1)
        d2 = d2 + torch.relu(sq.unsqueeze(-1) + sq.unsqueeze(-2) - 2 * (p @ p.transpose(-2, -1)))
    return torch.relu(d2)


def ssa_order_parameter(theta: Tensor, causal: bool = False) -> Tensor:
    """Kuramoto order parameter of the phases, averaged over the head's coordinates.

    Parameters
    ----------
    theta : Tensor, (B, H, N, d_h)
        Phases (rad).
    causal : bool
        If True, r for query t is computed over the prefix of tokens u ≤ t.

    Returns
    -------
    r : Tensor, (B, H) if not causal, (B, H, N) if causal. In [0, 1].

    Notes
    -----
    r = (1/d_h) Σ_k |(1/N) Σ_j exp(i θ_jk)|, written as sqrt(mean(cos)² + mean(sin)²) as in the reference code.
    """
    if theta.dim() != 4:
        raise ValueError(f"theta must have shape (B, H, N, d_h); got {tuple(theta.shape)}")
    # Chunks of heads keep the cos/sin temporaries small (the tiled path's memory is linear in N with a
    # small constant; this must not be the peak).
    B, H, N, d = theta.shape
    step = max(1, _ORDER_CHUNK_ELEMENTS // max(1, B * N * d))
    parts = [_order_parameter_chunk(theta[:, h:h + step], causal) for h in range(0, H, step)]
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)


def _order_parameter_chunk(theta: Tensor, causal: bool) -> Tensor:
    c, s = theta.cos(), theta.sin()
    if not causal:
        return (c.mean(dim=2).pow(2) + s.mean(dim=2).pow(2)).sqrt().mean(dim=-1)
    n = torch.arange(1, theta.shape[2] + 1, device=theta.device, dtype=theta.dtype).view(1, 1, -1, 1)
    mc = c.cumsum(dim=2) / n
    ms = s.cumsum(dim=2) / n
    return (mc.pow(2) + ms.pow(2)).sqrt().mean(dim=-1)


def _coupling_scale(theta: Tensor, K: Tensor, causal: bool) -> Tensor:
    """K r as a (B, H, N) tensor (one value per query row)."""
    r = ssa_order_parameter(theta, causal)
    if not causal:
        r = r.unsqueeze(-1).expand(*r.shape, theta.shape[2])
    return K.reshape(()) * r


def ssa_components(
    omega: Tensor,
    theta: Tensor,
    alpha: Tensor,
    K: Tensor,
    *,
    causal: bool = False,
    boundary: str = "reference",
    drift: Tensor | None = None,
) -> SSAComponents:
    """Dense, unnormalised SSA pieces (J, Δω, threshold, locked, S, r), e.g. for the chip compiler.

    Parameters
    ----------
    omega : Tensor, (B, H, N, F)
        Natural frequencies (F = d_h, or F = 1 for SSA-1D).
    theta : Tensor, (B, H, N, d_h)
        Phases (rad), used only for the order parameter r.
    alpha : Tensor, (H,)
        Coupling bandwidths, positive (already softplus'd).
    K : Tensor, scalar
        Coupling strength, positive (already softplus'd).
    causal : bool
        Mask future keys (``locked`` and ``S`` are zero for j > i) and use the prefix r of each query row.
    boundary : {"reference", "smooth"}
        Form of S near the locking boundary (see the module notes).
    drift : Tensor, (H,), optional
        Positional frequency offset per head: token i's frequencies are ω_i + λ_h i (see :func:`mismatch_sq`).

    Returns
    -------
    SSAComponents
    """
    _check_inputs(omega, theta, None, alpha, K, drift)
    check_boundary(boundary)
    B, H, N, _ = omega.shape
    d2 = mismatch_sq(omega, drift)
    dw = d2.sqrt()
    J = torch.exp(-alpha.view(1, H, 1, 1) * d2)
    c = _coupling_scale(theta, K, causal)  # (B, H, N)
    thr = c.unsqueeze(-1) * J + EPS
    locked = dw <= thr
    if causal:
        locked = locked & torch.ones(N, N, dtype=torch.bool, device=omega.device).tril()
    if boundary == "reference":
        ratio = torch.clamp(dw / thr, -1.0 + EPS, 1.0 - EPS)
        S = J * torch.sqrt(1 - ratio.pow(2)) * locked
    else:
        # u = 1 − ratio² = (thr − Δω)(thr + Δω)/thr², from Δω² so that nothing is singular.
        u = torch.relu(thr.pow(2) - d2) / thr.pow(2)
        S = J * (u / torch.sqrt(u + SMOOTH_FLOOR)) * locked
    r = ssa_order_parameter(theta, causal)
    return SSAComponents(J=J, delta_omega=dw, threshold=thr, locked=locked, S=S, r=r)


def normalise_weights(S: Tensor, top_k: int | None = None) -> Tensor:
    """Attention weights W from unnormalised SSA weights S (…, N, N): the optional top-k per row (after the
    locking mask), then the row normalisation S_ij / (Σ_j S_ij + 1e-8) (not a softmax)."""
    N = S.shape[-1]
    if top_k is not None and top_k < N:
        vals, idx = S.topk(top_k, dim=-1)
        S = torch.zeros_like(S).scatter(-1, idx, vals)
    return S / (S.sum(dim=-1, keepdim=True) + EPS)


def _dense_attention(omega, theta, value, alpha, K, *, causal, boundary, top_k, drift):
    comp = ssa_components(omega, theta, alpha, K, causal=causal, boundary=boundary, drift=drift)
    W = normalise_weights(comp.S, top_k)
    return W @ value, W


def _pick_impl(impl: str, omega: Tensor, top_k, return_weights: bool) -> str:
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {IMPLS}; got {impl!r}")
    dense_only = top_k is not None or return_weights
    if impl == "auto":
        if dense_only:
            return "dense"
        # The Triton kernels have only run under the interpreter so far (no GPU was available when they
        # were written): "auto" uses the tiled path on every device until they are validated on a GPU;
        # impl="triton" selects them explicitly.
        B, H, N, _ = omega.shape
        return "tiled" if B * H * N * N >= _AUTO_TILED_MIN_PAIRS else "dense"
    if dense_only and impl != "dense":
        what = "top_k" if top_k is not None else "return_weights=True"
        raise ValueError(f"{what} is only supported by impl='dense' (or 'auto'); got impl={impl!r}")
    return impl


def ssa_attention(
    omega: Tensor,
    theta: Tensor,
    value: Tensor,
    alpha: Tensor,
    K: Tensor,
    *,
    causal: bool = False,
    boundary: str = "reference",
    top_k: int | None = None,
    impl: str = "dense",
    return_weights: bool = False,
    drift: Tensor | None = None,
):
    """SSA attention output Σ_j S_ij V_j / (Σ_j S_ij + 1e-8) for every batch element and head.

    Parameters
    ----------
    omega : Tensor, (B, H, N, F)
        Natural frequencies (F = d_h vector frequencies, or F = 1 for SSA-1D).
    theta : Tensor, (B, H, N, d_h)
        Phases (rad), used only for the order parameter r.
    value : Tensor, (B, H, N, d_v)
        Values.
    alpha : Tensor, (H,)
        Coupling bandwidth per head, positive (already softplus'd).
    K : Tensor, scalar
        Coupling strength, positive (already softplus'd).
    causal : bool
        Mask future keys; query t uses the order parameter of its prefix u ≤ t.
    boundary : {"reference", "smooth"}
        "reference": the reference code's clamp-and-sqrt (infinite gradient at the locking boundary).
        "smooth": u / sqrt(u + SMOOTH_FLOOR), finite gradients (see the module notes).
    top_k : int or None
        Keep the k largest S per row (after the locking mask, before normalisation). Dense only: the
        tiled and Triton paths do not implement it (``impl="auto"`` then uses the dense path).
    impl : {"dense", "tiled", "triton", "auto"}
        "auto": "dense" when top_k or return_weights is given, otherwise "tiled" from B H N² ≥ 2^16 pairs
        and "dense" below ("triton" is opt-in until the kernels have been validated on a GPU).
    return_weights : bool
        Also return the normalised weights (B, H, N, N) (dense only).
    drift : Tensor, (H,), optional
        Positional frequency offset λ per head: token i's frequencies are ω_i + λ_h i on every coordinate
        (positions 0, …, N − 1). Passing the drift here rather than adding it to ω keeps Δω² exact to
        rounding whatever the position (see :func:`mismatch_sq`); gradients reach it on every path.

    Returns
    -------
    out : Tensor, (B, H, N, d_v)
    weights : Tensor, (B, H, N, N), only if ``return_weights``.

    Notes
    -----
    Attention dropout is not applied here (the module applies it to the weights on the dense path). The
    tiled and Triton paths never form the weights, so they cannot drop them; the module should use the
    dense path when training with attention dropout, or apply dropout elsewhere.
    """
    _check_inputs(omega, theta, value, alpha, K, drift)
    check_boundary(boundary)
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive int or None; got {top_k!r}")
    which = _pick_impl(impl, omega, top_k, return_weights)
    if which == "dense":
        out, W = _dense_attention(omega, theta, value, alpha, K, causal=causal, boundary=boundary, top_k=top_k,
                                  drift=drift)
        return (out, W) if return_weights else out
    if theta.dtype not in (torch.float32, torch.float64):  # the kernels compute half precision in float32
        theta, K = theta.float(), K.float()
    c = _coupling_scale(theta, K, causal)  # (B, H, N), differentiable w.r.t. theta and K
    if which == "tiled":
        from oscsim.nn.ssa_tiled import ssa_tiled

        return ssa_tiled(omega, value, alpha, c, causal=causal, boundary=boundary, drift=drift)
    from oscsim.nn.ssa_triton import ssa_triton

    return ssa_triton(omega, value, alpha, c, causal=causal, boundary=boundary, drift=drift)
