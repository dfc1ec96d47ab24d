"""The SSA attention module: projections, parameters, position, initialisation (DESIGN §3.2).

The weights themselves come from :func:`oscsim.nn.ssa_functional.ssa_attention`; this module owns the
learned parts (W_ω, W_θ, W_v, output projection, α̂ per head, K̂ per layer, the positional frequency drift)
and the choices that make SSA usable as a causal language model.

References
----------
"Selective Synchronization Attention", arXiv 2602.14445; reference code ``osn_model.py`` of HasiHays/OSN.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from oscsim._validate import check_choice
from oscsim.nn import ssa_functional as ssaf

__all__ = ["SSAAttention", "FREQUENCIES", "POSITIONS", "INITS"]

FREQUENCIES = ("vector", "scalar")
POSITIONS = ("none", "drift")
INITS = ("reference", "locked")

#: Target RMS frequency mismatch Δω of two unrelated tokens at the ``"locked"`` initialisation (project
#: choice): with K r ≈ 1.3 and α ≈ 1.3 the locking condition Δω ≤ K r exp(−α Δω²) holds up to Δω ≈ 0.6.
LOCKED_INIT_DW = 0.5


def check_options(*, frequency, position, boundary, init, impl, top_k, dropout) -> None:
    """Refuse SSA options outside their valid values (`SSAAttention` and `OSNConfig` take the same ones)."""
    check_choice("frequency", frequency, FREQUENCIES)
    check_choice("position", position, POSITIONS)
    check_choice("boundary", boundary, ssaf.BOUNDARIES)
    check_choice("init", init, INITS)
    check_choice("impl", impl, ssaf.IMPLS)
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")


class SSAAttention(nn.Module):
    """Selective Synchronization Attention over (B, N, d) inputs.

    Parameters
    ----------
    d_model, n_heads : int
        Width and heads (head width d_h = d_model / n_heads).
    frequency : {"vector", "scalar"}
        ``"vector"``: ω = W_ω x ∈ R^{d_h} per head (reference). ``"scalar"``: SSA-1D, one frequency per token
        and head, Δω = |ω_i − ω_j| (one physical oscillator per token and head).
    causal : bool
        Mask future keys; r of query t over its prefix. False is the reference behaviour.
    position : {"none", "drift"}
        ``"none"``: reference, no position information. ``"drift"`` (project choice): a learned positional
        frequency offset ω_i ← ω_i + λ_h i (all coordinates of head h), so the mismatch of two tokens grows
        with their distance as in a frequency ramp; λ_h initialised at LOCKED_INIT_DW / (√F D_h) with
        D_h = 4, 8, 16, ... tokens.
    boundary : {"reference", "smooth"}
        Form of S at the locking boundary (``"smooth"`` has finite gradients).
    top_k : int or None
        Sparse variant: keep the k strongest locked pairs per row.
    init : {"reference", "locked"}
        ``"reference"``: every weight N(0, 0.02), biases 0 (no pair locks, DESIGN §3.2 (a)). ``"locked"``:
        W_ω scaled so that the RMS Δω of unrelated tokens is LOCKED_INIT_DW, giving a useful locked fraction.
    dropout : float
        Attention dropout on the normalised weights (0.1 in the reference).
    impl : {"dense", "tiled", "triton", "auto"}
        Passed to :func:`ssa_attention` (the dense path is used whenever weights are dropped out).
    """

    def __init__(self, d_model: int, n_heads: int, *, frequency: str = "vector", causal: bool = False,
                 position: str = "none", boundary: str = "reference", top_k: int | None = None,
                 init: str = "reference", dropout: float = 0.1, impl: str = "auto", max_len: int = 1024):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        check_options(frequency=frequency, position=position, boundary=boundary, init=init, impl=impl,
                      top_k=top_k, dropout=dropout)
        self.d, self.n_heads, self.dh = d_model, n_heads, d_model // n_heads
        self.frequency, self.causal, self.position = frequency, causal, position
        self.boundary, self.top_k, self.impl, self.dropout = boundary, top_k, impl, dropout
        self.F = self.dh if frequency == "vector" else 1
        self.w_omega = nn.Linear(d_model, n_heads * self.F)
        self.w_theta = nn.Linear(d_model, d_model)
        self.w_value = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)
        self.alpha_hat = nn.Parameter(torch.ones(n_heads))
        self.K_hat = nn.Parameter(torch.ones(()))
        if position == "drift":
            dist = 2.0 ** (torch.arange(n_heads, dtype=torch.float32) + 2)
            self.drift = nn.Parameter(LOCKED_INIT_DW / (math.sqrt(self.F) * dist))
        else:
            self.register_parameter("drift", None)
        for lin in (self.w_omega, self.w_theta, self.w_value, self.out):
            nn.init.normal_(lin.weight, std=0.02)
            nn.init.zeros_(lin.bias)
        if init == "locked":
            # LayerNorm'd inputs: Var(ω_i − ω_j) per coordinate ≈ 2 d σ², summed over F coordinates.
            nn.init.normal_(self.w_omega.weight, std=LOCKED_INIT_DW / math.sqrt(2 * d_model * self.F))

    @property
    def alpha(self) -> torch.Tensor:
        """(H,) coupling bandwidths softplus(α̂)."""
        return F.softplus(self.alpha_hat)

    @property
    def K(self) -> torch.Tensor:
        """Scalar coupling strength softplus(K̂)."""
        return F.softplus(self.K_hat)

    def _split(self, x: torch.Tensor, width: int) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.n_heads, width).transpose(1, 2)

    def project(self, x: torch.Tensor, *, with_drift: bool = True):
        """ω (B, H, N, F), θ (B, H, N, d_h), V (B, H, N, d_h) for inputs x (B, N, d).

        With ``with_drift=False`` ω is without the positional drift: the attention takes the drift as its own
        argument, so that Δω² is formed without cancellation at every position (issue 21; see
        :func:`oscsim.nn.ssa_functional.mismatch_sq`). The default (drift added) is the oscillators'
        frequencies, for the chip.
        """
        if x.dim() != 3 or x.shape[-1] != self.d:
            raise ValueError(f"x must have shape (B, N, {self.d}), got {tuple(x.shape)}")
        omega = self._split(self.w_omega(x), self.F)
        if self.drift is not None and with_drift:
            pos = torch.arange(x.shape[1], device=x.device, dtype=x.dtype)
            omega = omega + self.drift.view(1, -1, 1, 1) * pos.view(1, 1, -1, 1)
        return omega, self._split(self.w_theta(x), self.dh), self._split(self.w_value(x), self.dh)

    def _merge(self, y: torch.Tensor) -> torch.Tensor:
        b, _, n, _ = y.shape
        return self.out(y.transpose(1, 2).reshape(b, n, self.d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """SSA output (B, N, d) for inputs x (B, N, d)."""
        omega, theta, value = self.project(x, with_drift=False)
        kw = dict(causal=self.causal, boundary=self.boundary, top_k=self.top_k, drift=self.drift)
        if self.training and self.dropout > 0:
            _, W = ssaf.ssa_attention(omega, theta, value, self.alpha, self.K, impl="dense",
                                      return_weights=True, **kw)
            y = F.dropout(W, self.dropout, training=True) @ value
        else:
            y = ssaf.ssa_attention(omega, theta, value, self.alpha, self.K, impl=self.impl, **kw)
        return self._merge(y)

    def forward_with_weights(self, x: torch.Tensor, weights_fn) -> torch.Tensor:
        """SSA output (B, N, d) with the unnormalised weights S supplied by ``weights_fn``.

        ``weights_fn(components) -> S`` gets :meth:`components` of ``x`` and returns S (B, H, N, N) (e.g. measured
        by an oscillator chip); the rest is this module's own: top-k, row normalisation, S V (in float64) and
        the output projection. Chip inference fills this hook (the Kuramoto model's ``attn_override`` analogue).
        """
        comp = self.components(x)
        S = torch.as_tensor(weights_fn(comp), dtype=torch.float64)
        if S.shape != comp["S"].shape:
            raise ValueError(f"weights_fn must return S of shape {tuple(comp['S'].shape)}, got {tuple(S.shape)}")
        W = ssaf.normalise_weights(S, self.top_k)
        y = (W @ comp["value"].double()).to(x.dtype)
        return self._merge(y)

    def components(self, x: torch.Tensor) -> dict:
        """Per-layer quantities for the chip compiler and diagnostics (dense, no dropout).

        Returns a dict with ``omega`` (B, H, N, F), ``theta`` (B, H, N, d_h), ``value`` (B, H, N, d_h),
        ``r`` ((B, H) or (B, H, N) causal), ``J``, ``delta_omega``, ``threshold``, ``S``, ``locked`` and the
        normalised ``weights`` (B, H, N, N), ``K`` (scalar), ``alpha`` (H,), ``locked_fraction`` (the share of
        allowed off-diagonal pairs that lock, a float), ``top_k``, ``causal``, ``boundary``, and ``output``
        (B, N, d) (the layer's output).
        """
        omega, theta, value = self.project(x, with_drift=False)
        kw = dict(causal=self.causal, boundary=self.boundary, drift=self.drift)
        comp = ssaf.ssa_components(omega, theta, self.alpha, self.K, **kw)
        y, W = ssaf.ssa_attention(omega, theta, value, self.alpha, self.K, top_k=self.top_k, impl="dense",
                                  return_weights=True, **kw)
        if self.drift is not None:  # the oscillators' frequencies, for the chip
            pos = torch.arange(x.shape[1], device=x.device, dtype=x.dtype)
            omega = omega + self.drift.view(1, -1, 1, 1) * pos.view(1, 1, -1, 1)
        n = x.shape[1]
        allowed = ~torch.eye(n, dtype=torch.bool, device=x.device)
        if self.causal:
            allowed = allowed & torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
        n_allowed = max(int(allowed.sum()), 1) * comp.locked.shape[0] * comp.locked.shape[1]
        frac = float((comp.locked & allowed).sum()) / n_allowed
        return dict(omega=omega, theta=theta, value=value, r=comp.r, J=comp.J, delta_omega=comp.delta_omega,
                    threshold=comp.threshold, S=comp.S, locked=comp.locked, weights=W, K=self.K,
                    alpha=self.alpha, locked_fraction=frac, top_k=self.top_k, causal=self.causal,
                    boundary=self.boundary, output=self._merge(y))
