"""Operation counts per token: the closed-form attention layer (and what the chip's array offloads), and the
rest of the model (embedding, feed-forward, output head), all counted operation by operation.

One counter per model kind (:data:`ATTENTION_COSTS`, :data:`MODEL_COSTS`); the chip and the GPU models of
:mod:`mapping.energy` read the same counts.
"""

from __future__ import annotations

__all__ = ["attention_cost", "model_cost", "ATTENTION_COSTS", "MODEL_COSTS", "PHASES"]

PHASES = ("prefill", "decode")
"""Prefill: the T tokens of a sequence at once; decode: one new token against the stored earlier ones."""


def _kuramoto_attention(model_config: dict, T: int) -> dict:
    pairs = (T + 1) / 2
    k, h = model_config["k"], model_config["n_heads"]
    lin = 3 * 2 * (2 * k) * k            # gate_q, gate_k, value: Linear(2k, k)
    elem = 2 * k + 4 * k + 3 * k + 8 * k  # φ (cos, sin), softplus/normalise gates, rotation, a, bound
    scores = pairs * 2 * (2 * k)         # q·key over 2k_h per head, all heads
    softmax = pairs * 5 * h
    av = pairs * 2 * (2 * k)             # A [cos θ, sin θ]
    return {"flops": lin + elem + scores + softmax + av,
            "act": 2 * k + 2 * k + k + 2 * (2 * k) + 2 * k + 2 * k + k + k,  # φ, gates, v, q/key, vals, out, a, Δ
            "chip_digital": lin + elem + scores + softmax + 4 * k,  # + per-oscillator rescaling, both banks
            "offloaded": av, "scores": scores,
            "io": 2 * k, "kv": 4 * k,  # θ in, Δ out; cached key (2k) and value [cos, sin] (2k)
            "weights": 3 * (2 * k * k + k) + k + 1}


def _ssa_attention(model_config: dict, T: int) -> dict:
    pairs = (T + 1) / 2
    d, h = model_config["d_model"], model_config["n_heads"]
    F = 1 if model_config.get("frequency") == "scalar" else d // h
    lin = 2 * d * h * F + 3 * 2 * d * d  # ω, θ, V projections + output
    dwf = pairs * h * (2 * F + 2)        # Δω² by a dot product, sqrt
    jf = pairs * h * 3                   # J = exp(−α Δω²)
    sf = pairs * h * 8                   # threshold, ratio, sqrt, lock mask
    rf = 4 * d                           # order parameter (cos, sin, prefix mean, modulus)
    norm = pairs * h * 2
    sv = pairs * 2 * d
    return {"flops": lin + dwf + jf + sf + rf + norm + sv, "act": 3 * d + d + d + 2 * h,
            "chip_digital": lin + dwf + jf + rf + norm + sv + pairs * h,  # S from the chip: one multiply by J
            "offloaded": sf, "scores": 0.0,
            "io": 2 * d, "kv": h * F + d + d,  # x in, out; cached ω, θ, V
            "weights": d * h * F + h * F + 3 * (d * d + d) + 2 * h + 1}


ATTENTION_COSTS = {"kuramoto": _kuramoto_attention, "ssa": _ssa_attention}
"""Model kind -> counter of one attention layer's operations per token."""


def attention_cost(model_kind: str, model_config: dict, T: int) -> dict:
    """Operations and activations per token of one closed-form attention layer, and what the chip offloads.

    Parameters
    ----------
    model_kind : {'kuramoto', 'ssa'}
    model_config : dict
        The model config (``k``, ``n_heads`` / ``d_model``, ``n_heads``, ``frequency``).
    T : int
        Tokens per sequence (causal: a token attends to (T + 1) / 2 tokens on average).

    Returns
    -------
    dict with ``flops`` (GPU, per token), ``act_elements`` (intermediate activations per token an unfused
    implementation writes and reads once), ``bytes`` (the same at fp32, kept for old callers),
    ``io_elements`` (layer input + output per token), ``kv_elements`` (cached elements per earlier token in
    decode), ``weights`` (parameters of the layer), ``chip_digital_flops`` (what stays digital on the chip),
    ``offloaded_flops`` (what the array replaces) and ``score_flops`` (the digital scores, which the
    analog-score mode moves onto the oscillators).
    """
    if model_kind not in ATTENTION_COSTS:
        raise ValueError(f"model_kind must be one of {', '.join(repr(k) for k in ATTENTION_COSTS)}, got "
                         f"{model_kind!r}")
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise ValueError(f"T must be a positive integer, got {T!r}")
    counts = ATTENTION_COSTS[model_kind](model_config, T)
    return {"flops": float(counts["flops"]), "act_elements": float(counts["act"]),
            "bytes": float(4 * counts["act"] * 2), "io_elements": float(counts["io"]),
            "kv_elements": float(counts["kv"]), "weights": float(counts["weights"]),
            "chip_digital_flops": float(counts["chip_digital"]), "offloaded_flops": float(counts["offloaded"]),
            "score_flops": float(counts["scores"])}


def _kuramoto_model(model_config: dict) -> dict:
    V, L = model_config.get("vocab_size", 256), model_config["n_layers"]
    k, H = model_config["k"], model_config.get("ffn_hidden", 128)
    ffn = (k + 2 * 2 * k * H + 5 * H + 2 * H * k + 2 * k + 2 * k) if model_config.get("ffn", True) else 2 * k
    head = 2 * k + 2 * (2 * k) * V + V
    return {"flops": L * ffn + head, "act": L * (k + 3 * H + 2 * k) + 2 * k + V,
            "weights": L * 3 * k * H * (1 if model_config.get("ffn", True) else 0) + 2 * V * k + V + k + 1, "io": k + V}


def _ssa_model(model_config: dict) -> dict:
    V, L = model_config.get("vocab_size", 256), model_config["n_layers"]
    d, m = model_config["d_model"], model_config.get("ffn_mult", 4)
    ln = 8 * d
    ffn = 2 * ln + 2 * (2 * d * m * d) + 8 * m * d + 2 * d
    return {"flops": d + L * ffn + ln + 2 * d * V, "act": L * (2 * d + 2 * m * d + 2 * d) + d + V,
            "weights": V * d + L * (2 * d * m * d + m * d + d + 4 * d) + 2 * d, "io": d + V}


MODEL_COSTS = {"kuramoto": _kuramoto_model, "ssa": _ssa_model}
"""Model kind -> counter of everything but attention."""


def model_cost(model_kind: str, model_config: dict) -> dict:
    """Operations, activations and weights per token of everything but attention (all digital).

    Kuramoto LM: phase embedding lookup, per layer the bounded SwiGLU on wrapped angles, the phase readout.
    SSA (OSN): embedding × √d, per layer two LayerNorms and the GELU feed-forward, final LayerNorm, tied head.

    Returns
    -------
    dict with ``flops``, ``act_elements``, ``io_elements`` and ``weights`` (all layers together).
    """
    if model_kind not in MODEL_COSTS:
        raise ValueError(f"model_kind must be one of {', '.join(repr(k) for k in MODEL_COSTS)}, got {model_kind!r}")
    counts = MODEL_COSTS[model_kind](model_config)
    return {"flops": float(counts["flops"]), "act_elements": float(counts["act"]),
            "io_elements": float(counts["io"]), "weights": float(counts["weights"])}
