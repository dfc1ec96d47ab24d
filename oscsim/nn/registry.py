"""Named models and sizes: ``model_config("kuramoto", "tiny")``, ``build_model(config)``.

Sizes (project choice; the source papers' exact 1M/5M shapes are not available): ``tiny`` ≈ 0.2M parameters
(minutes on a CPU core), ``1m`` and ``5m`` within 5 % of 1M and 5M parameters. The transformer of each size
has the width, depth and heads of the Kuramoto model and a SwiGLU width chosen to match its parameter count.
"""

from __future__ import annotations

from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM
from oscsim.nn.osn import OSNConfig, OSNModel
from oscsim.nn.transformer import TransformerConfig, TransformerLM

__all__ = ["MODELS", "SIZES", "model_config", "config_from_dict", "build_model", "count_parameters",
           "model_name"]

MODELS = ("kuramoto", "ssa", "ssa1d", "transformer")
SIZES = ("tiny", "1m", "5m")

_KURAMOTO = {"tiny": dict(k=64, n_heads=4, n_layers=4, ffn_hidden=128, seq_len=128),
             "1m": dict(k=128, n_heads=4, n_layers=4, ffn_hidden=368, seq_len=256),
             "5m": dict(k=256, n_heads=8, n_layers=6, ffn_hidden=544, seq_len=256)}
_TRANSFORMER = {"tiny": dict(d_model=64, n_heads=4, n_layers=4, ffn_hidden=171, seq_len=128),
                "1m": dict(d_model=128, n_heads=4, n_layers=4, ffn_hidden=453, seq_len=256),
                "5m": dict(d_model=256, n_heads=8, n_layers=6, ffn_hidden=715, seq_len=256)}
_SSA = {"tiny": dict(d_model=64, n_heads=4, n_layers=4, seq_len=128),
        "1m": dict(d_model=128, n_heads=4, n_layers=5, seq_len=256),
        "5m": dict(d_model=256, n_heads=8, n_layers=6, seq_len=256)}
_SSA1D = {"tiny": dict(d_model=64, n_heads=4, n_layers=4, seq_len=128),
          "1m": dict(d_model=132, n_heads=4, n_layers=5, seq_len=256),
          "5m": dict(d_model=256, n_heads=8, n_layers=7, seq_len=256)}

_CLASSES = {"kuramoto": (KuramotoConfig, KuramotoLM), "ssa": (OSNConfig, OSNModel),
            "ssa1d": (OSNConfig, OSNModel), "transformer": (TransformerConfig, TransformerLM)}


def _check(model: str, size: str | None = None) -> None:
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; valid: {', '.join(MODELS)}")
    if size is not None and size not in SIZES:
        raise ValueError(f"unknown size {size!r}; valid: {', '.join(SIZES)}")


def model_config(model: str, size: str = "tiny", **overrides):
    """The configuration of a named model and size; ``overrides`` replace single fields."""
    _check(model, size)
    if model == "kuramoto":
        kw = _KURAMOTO[size]
    elif model == "transformer":
        kw = _TRANSFORMER[size]
    elif model == "ssa":
        kw = _SSA[size]
    else:
        kw = dict(_SSA1D[size], frequency="scalar")
    cls = _CLASSES[model][0]
    return cls(**{**kw, **overrides})


def config_from_dict(model: str, d: dict):
    """Rebuild a validated configuration from its JSON dict (unknown keys are refused)."""
    _check(model)
    cls = _CLASSES[model][0]
    fields = set(cls.__dataclass_fields__)
    unknown = set(d) - fields
    if unknown:
        raise ValueError(f"config for model {model!r} has unknown fields {sorted(unknown)}; valid: {sorted(fields)}")
    return cls(**d)


def model_name(config) -> str:
    """The model name of a configuration."""
    if isinstance(config, KuramotoConfig):
        return "kuramoto"
    if isinstance(config, TransformerConfig):
        return "transformer"
    if isinstance(config, OSNConfig):
        return "ssa1d" if config.frequency == "scalar" else "ssa"
    raise TypeError(f"not a model configuration: {type(config).__name__}")


def build_model(config):
    """A freshly initialised model for a configuration (call ``torch.manual_seed`` first for repeatability)."""
    return _CLASSES[model_name(config)][1](config)


def count_parameters(model) -> int:
    """Number of distinct trainable parameters (tied weights counted once)."""
    seen, n = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            n += p.numel()
    return n
