"""The fields every language model of the project has, and their checks (a base for the model configs)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from oscsim._validate import check_positive_ints

__all__ = ["LMConfig"]


@dataclass(frozen=True, kw_only=True)
class LMConfig:
    """Base of the model configurations (`KuramotoConfig`, `OSNConfig`, `TransformerConfig`).

    Attributes
    ----------
    vocab_size : int
        Number of token classes (256 for bytes).
    seq_len : int
        Longest context the model is trained on (tokens).
    n_heads, n_layers : int
        Heads per layer and number of layers.
    """

    vocab_size: int = 256
    seq_len: int = 128
    n_heads: int = 4
    n_layers: int = 4

    def __post_init__(self):
        check_positive_ints(self, "vocab_size", "seq_len", "n_heads", "n_layers")

    def _check_heads_divide(self, name: str) -> int:
        """Refuse a width ``name`` (a positive integer field) that ``n_heads`` does not divide; return the
        head width."""
        check_positive_ints(self, name)
        width = getattr(self, name)
        if width % self.n_heads:
            raise ValueError(f"{name} ({width}) must be divisible by n_heads ({self.n_heads})")
        return width // self.n_heads

    def to_dict(self) -> dict:
        """The fields as the JSON dict a checkpoint stores (`oscsim.nn.registry.config_from_dict` reads it)."""
        return asdict(self)
