"""The OSN block and language model built on SSA (DESIGN §3.2).

Block: x ← x + SSA(LN(x)); x ← x + FFN(LN(x)), FFN = Linear(d, 4d) → GELU → Linear(4d, d).
Model: token embedding × √d, blocks, final LayerNorm, LM head tied to the embedding, weights N(0, 0.02).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import nn

from oscsim._validate import check_positive_ints
from oscsim.nn.config import LMConfig
from oscsim.nn.ssa import SSAAttention, check_options

__all__ = ["OSNConfig", "OSNBlock", "OSNModel"]


@dataclass(frozen=True, kw_only=True)
class OSNConfig(LMConfig):
    """OSN (SSA language model) configuration (with the fields of `LMConfig`: vocab_size, seq_len, n_heads,
    n_layers). The defaults are this project's fixed, causal model; the reference code's behaviour is
    :meth:`OSNConfig.reference`.

    Attributes
    ----------
    d_model : int
        Width.
    ffn_mult : int
        Feed-forward width multiple (4 in the reference).
    frequency : {"vector", "scalar"}
        Vector frequencies (SSA) or one scalar per token and head (SSA-1D).
    causal : bool
        Causal mask with prefix r (required for language modelling).
    position : {"none", "drift"}
        Positional frequency drift (project choice) or none (reference).
    boundary : {"reference", "smooth"}
        Locking-boundary form (smooth: finite gradients).
    init : {"reference", "locked"}
        Initialisation of W_ω (see :class:`SSAAttention`).
    top_k : int or None
        Sparse variant (k = 64 in the reference's sparse model).
    dropout : float
        Attention dropout (0.1 in the reference).
    impl : {"dense", "tiled", "triton", "auto"}
        SSA implementation.
    """

    d_model: int = 64
    ffn_mult: int = 4
    frequency: str = "vector"
    causal: bool = True
    position: str = "drift"
    boundary: str = "smooth"
    init: str = "locked"
    top_k: int | None = None
    dropout: float = 0.0
    impl: str = "auto"

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(self, "ffn_mult")
        self._check_heads_divide("d_model")
        check_options(frequency=self.frequency, position=self.position, boundary=self.boundary, init=self.init,
                      impl=self.impl, top_k=self.top_k, dropout=self.dropout)

    @classmethod
    def reference(cls, **overrides) -> "OSNConfig":
        """The reference code's semantics: non-causal, no position, reference boundary, N(0, 0.02) init,
        attention dropout 0.1."""
        base = cls(causal=False, position="none", boundary="reference", init="reference", dropout=0.1)
        return replace(base, **overrides)


class OSNBlock(nn.Module):
    """Pre-LayerNorm residual SSA, then pre-LayerNorm residual GELU feed-forward."""

    def __init__(self, cfg: OSNConfig):
        super().__init__()
        d = cfg.d_model
        self.norm1 = nn.LayerNorm(d)
        self.attn = SSAAttention(d, cfg.n_heads, frequency=cfg.frequency, causal=cfg.causal,
                                 position=cfg.position, boundary=cfg.boundary, top_k=cfg.top_k, init=cfg.init,
                                 dropout=cfg.dropout, impl=cfg.impl)
        self.norm2 = nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, cfg.ffn_mult * d), nn.GELU(), nn.Linear(cfg.ffn_mult * d, d))
        for lin in (self.ffn[0], self.ffn[2]):
            nn.init.normal_(lin.weight, std=0.02)
            nn.init.zeros_(lin.bias)

    def forward(self, x: torch.Tensor, *, weights_fn=None) -> torch.Tensor:
        """Block output; ``weights_fn(components) -> S`` replaces the SSA weights (see
        :meth:`SSAAttention.forward_with_weights`)."""
        h = self.norm1(x)
        x = x + (self.attn(h) if weights_fn is None else self.attn.forward_with_weights(h, weights_fn))
        return x + self.ffn(self.norm2(x))


class OSNModel(nn.Module):
    """SSA language model: embedding × √d, OSN blocks, final LayerNorm, tied head."""

    def __init__(self, config: OSNConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.blocks = nn.ModuleList(OSNBlock(config) for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.d_model)

    def forward(self, tokens: torch.Tensor, *, attn_override=None, return_diagnostics: bool = False):
        """Logits (B, N, V) for tokens (B, N) int64.

        Parameters
        ----------
        tokens : (B, N) int64
        attn_override : callable, optional
            ``attn_override(layer_index, components) -> S`` (B, H, N, N) replaces the unnormalised SSA weights
            of each layer (``components`` as :meth:`SSAAttention.components`); the model's own top-k,
            normalisation, S V and projections do the rest. Chip inference fills it.
        return_diagnostics : bool
            Also return a dict of per-layer ``locked_fraction`` (floats) and ``r`` tensors.
        """
        if tokens.dim() != 2:
            raise ValueError(f"tokens must have shape (B, N), got {tuple(tokens.shape)}")
        x = self.embed(tokens) * math.sqrt(self.config.d_model)
        diag = {"locked_fraction": [], "r": []}
        for i, blk in enumerate(self.blocks):
            if return_diagnostics:
                with torch.no_grad():
                    comp = blk.attn.components(blk.norm1(x))
                diag["locked_fraction"].append(comp["locked_fraction"])
                diag["r"].append(comp["r"])
            fn = None if attn_override is None else (lambda comp, i=i: attn_override(i, comp))
            x = blk(x, weights_fn=fn)
        logits = self.norm(x) @ self.embed.weight.T
        return (logits, diag) if return_diagnostics else logits

    def layer_components(self, tokens: torch.Tensor) -> list[dict]:
        """:meth:`SSAAttention.components` of every layer for tokens (B, N) (for the chip compiler)."""
        out = []
        x = self.embed(tokens) * math.sqrt(self.config.d_model)
        for blk in self.blocks:
            out.append(blk.attn.components(blk.norm1(x)))
            x = blk(x)
        return out
