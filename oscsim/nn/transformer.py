"""The baseline: a pre-norm RoPE + SwiGLU transformer language model (DESIGN §3.1, item 9)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from oscsim._validate import check_positive_ints
from oscsim.nn.config import LMConfig

__all__ = ["TransformerConfig", "TransformerLM", "rope"]


@dataclass(frozen=True, kw_only=True)
class TransformerConfig(LMConfig):
    """Transformer baseline configuration (with the fields of `LMConfig`: vocab_size, seq_len, n_heads,
    n_layers).

    Attributes
    ----------
    d_model : int
        Width (head width d_model / n_heads, even).
    ffn_hidden : int
        SwiGLU hidden width (chosen so the parameter count matches the Kuramoto model of the same size).
    rope_base : float
        RoPE base (rotation frequencies rope_base^(−2j/d_h)).
    """

    d_model: int = 64
    ffn_hidden: int = 171
    rope_base: float = 10000.0

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(self, "ffn_hidden")
        if self._check_heads_divide("d_model") % 2:  # RoPE rotates coordinate pairs
            raise ValueError(f"d_model ({self.d_model}) / n_heads ({self.n_heads}) must be an even integer")
        if not self.rope_base > 1.0:
            raise ValueError(f"rope_base must be > 1, got {self.rope_base}")


def rope(x: torch.Tensor, base: float) -> torch.Tensor:
    """Rotary position embedding of x (B, h, T, d_h), rotating coordinate pairs (j, j + d_h/2)."""
    _, _, t, dh = x.shape
    half = dh // 2
    freq = base ** (-torch.arange(half, device=x.device, dtype=x.dtype) / half)
    ang = torch.arange(t, device=x.device, dtype=x.dtype)[:, None] * freq
    c, s = ang.cos(), ang.sin()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)


class _Block(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        d = cfg.d_model
        self.cfg = cfg
        self.norm1 = nn.RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.norm2 = nn.RMSNorm(d)
        self.w1 = nn.Linear(d, cfg.ffn_hidden, bias=False)
        self.w3 = nn.Linear(d, cfg.ffn_hidden, bias=False)
        self.w2 = nn.Linear(cfg.ffn_hidden, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.cfg.n_heads
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        q, k = rope(q, self.cfg.rope_base), rope(k, self.cfg.rope_base)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        z = self.norm2(x)
        return x + self.w2(F.silu(self.w1(z)) * self.w3(z))


class TransformerLM(nn.Module):
    """Pre-norm (RMSNorm) RoPE + SwiGLU transformer with untied embedding and head."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.n_layers))
        self.norm = nn.RMSNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)
            if name.endswith("w2.weight") or name.endswith("proj.weight"):
                nn.init.normal_(p, std=0.02 / (2 * config.n_layers) ** 0.5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, V) for tokens (B, T) int64."""
        if tokens.dim() != 2:
            raise ValueError(f"tokens must have shape (B, T), got {tuple(tokens.shape)}")
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x))
