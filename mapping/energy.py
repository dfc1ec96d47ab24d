"""Energy: chip energy per token with its breakdown, and the GPU energy of the closed-form attention.

Scope: the attention layers only (for both the chip and the GPU); embedding, feed-forward and the output
head are the same digital work on either and are left out.

Chip, per token and summed over layers (``T`` tokens per sequence, a sequence's arrays amortised over its
tokens):

- oscillators: N_osc · P_osc · (τ_s + t_readout) / T, P_osc from the device profile;
- coupler programming: N_couplers · bits · E_bit / T (analog couplers counted at 8 bits, assumed);
- readout: conversions · FoM · 2**bits / T, two ADC channels per measured phase;
- digital periphery: the attention's digital operations (projections, scores, softmax, gates, rescaling,
  bound; for SSA Δω, J, r, normalisation, S V, output projection) · E_flop.

GPU, per token: FLOPs F and HBM bytes Q of the closed-form attention (counted below) with a roofline at the
board power: E = TDP · max(F / peak_flops, Q / bandwidth) (an upper bound: the GPU at full power for the
time the roofline allows; DESIGN §5.2: A100 ≈ 1.3 pJ/FLOP, H100/H200 ≈ 0.7 pJ/FLOP from TDP over peak).
Also reported: the FLOP-only term and FLOPs at TDP/peak plus bytes at the physical HBM energy.
On a machine with a CUDA GPU, :func:`measure_gpu_energy` reads NVML's total-energy counter over many
repetitions (optional imports; returns None on CPU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .chip import Chip

__all__ = ["GPUSpec", "GPUS", "chip_energy_per_token", "gpu_energy_per_token", "attention_cost",
           "measure_gpu_energy", "energy_report"]

_ANALOG_BITS = 8  # bits charged for an analog coupler or an unquantised readout (assumed)


@dataclass(frozen=True, kw_only=True)
class GPUSpec:
    """A GPU's board power and peaks, with the source."""

    name: str
    tdp_w: float
    peak_flops: float
    hbm_bytes_per_s: float
    source: str


GPUS = {
    "A100-SXM": GPUSpec(name="A100-SXM", tdp_w=400.0, peak_flops=312e12, hbm_bytes_per_s=2.039e12,
                        source="NVIDIA A100 datasheet (400 W, 312 TFLOP/s dense BF16, 2.0 TB/s HBM2e)"),
    "H100-SXM": GPUSpec(name="H100-SXM", tdp_w=700.0, peak_flops=989e12, hbm_bytes_per_s=3.35e12,
                        source="NVIDIA H100 datasheet (700 W, 989 TFLOP/s dense BF16, 3.35 TB/s HBM3)"),
    "H200": GPUSpec(name="H200", tdp_w=700.0, peak_flops=989e12, hbm_bytes_per_s=4.8e12,
                    source="NVIDIA H200 datasheet (700 W, 989 TFLOP/s dense BF16, 4.8 TB/s HBM3e)"),
}
HBM_J_PER_BYTE = 3.9e-12 * 8  # O'Connor et al., MICRO 2017: HBM2 ≈ 3.9 pJ/bit
HBM_SOURCE = "M. O'Connor et al., 'Fine-grained DRAM', MICRO 2017: HBM2 access about 3.9 pJ/bit"


def attention_cost(model_kind: str, mc: dict, T: int) -> dict:
    """FLOPs and HBM bytes per token of one closed-form attention layer, and the FLOPs the chip offloads.

    Parameters
    ----------
    model_kind : {'kuramoto', 'ssa'}
    mc : dict
        The model config (``k``, ``n_heads`` / ``d_model``, ``n_heads``, ``frequency``).
    T : int
        Tokens per sequence (causal: a token attends to (T + 1) / 2 tokens on average).

    Returns
    -------
    dict with ``flops`` (GPU), ``bytes`` (GPU), ``chip_digital_flops`` (what stays digital on the chip),
    ``offloaded_flops``.
    """
    pairs = (T + 1) / 2
    if model_kind == "kuramoto":
        k, h = mc["k"], mc["n_heads"]
        lin = 3 * 2 * (2 * k) * k            # gate_q, gate_k, value: Linear(2k, k)
        elem = 2 * k + 4 * k + 3 * k + 8 * k  # φ (cos, sin), softplus/normalise gates, rotation, a, bound
        scores = pairs * 2 * (2 * k)         # q·key over 2k_h per head, all heads
        softmax = pairs * 5 * h
        av = pairs * 2 * (2 * k)             # A [cos θ, sin θ]
        flops = lin + elem + scores + softmax + av
        act = 2 * k + 2 * k + k + 2 * (2 * k) + 2 * k + 2 * k + k + k  # φ, gates, v, q/key, vals, out, a, Δ
        nbytes = 4 * act * 2
        chip_digital = lin + elem + scores + softmax + 4 * k  # + per-oscillator rescaling, both banks
        offloaded = av
    else:
        d, h = mc["d_model"], mc["n_heads"]
        F = 1 if mc.get("frequency") == "scalar" else d // h
        lin = 3 * 2 * d * (d if F > 1 else d) + 2 * d * d  # ω (≤ d), θ, V projections + output
        dwf = pairs * h * (2 * F + 2)        # Δω² by a dot product, sqrt
        jf = pairs * h * 3                   # J = exp(−α Δω²)
        sf = pairs * h * 8                   # threshold, ratio, sqrt, lock mask
        rf = 4 * d                           # order parameter (cos, sin, prefix mean, modulus)
        norm = pairs * h * 2
        sv = pairs * 2 * d
        flops = lin + dwf + jf + sf + rf + norm + sv
        act = 3 * d + d + d + 2 * h
        nbytes = 4 * act * 2
        chip_digital = lin + dwf + jf + rf + norm + sv + pairs * h  # S from the chip: one multiply by J
        offloaded = sf
    return {"flops": float(flops), "bytes": float(nbytes), "chip_digital_flops": float(chip_digital),
            "offloaded_flops": float(offloaded)}


def chip_energy_per_token(chip: Chip, T: int | None = None) -> dict:
    """Chip energy per token [J] with its breakdown and sources (see the module notes)."""
    cfg, dev = chip.config, chip.device
    T = T or chip.layers[0].max_tokens
    f0 = dev.f0_hz
    mc = chip.model_info["config"]
    bits_c = cfg.coupling.bits or _ANALOG_BITS
    bits_r = cfg.readout.bits or _ANALOG_BITS
    conv_j = dev.adc_fom_j_per_step * 2**bits_r
    taps = int(chip.coupling_rule.get("taps", 1)) if chip.coupling_rule else 1
    e = {"oscillators_j": 0.0, "coupler_programming_j": 0.0, "readout_j": 0.0, "digital_periphery_j": 0.0}
    for lm in chip.layers:
        if lm.kind == "kuramoto":
            k = lm.n_heads * lm.head_dim
            n_osc = lm.banks * k * T
            n_coup = lm.banks * k * T * (T - 1) / 2
            t_on = (cfg.settle_cycles + cfg.readout.averaging_cycles) / f0
            conversions = 2 * n_osc
        elif lm.kind == "ssa-pairwise":
            cells = lm.n_heads * T * (T - 1) / 2
            n_osc, n_coup = 2 * cells, cells
            t_on = (cfg.ssa.settle_cycles + cfg.ssa.averaging_cycles) / f0
            conversions = 2 * cells  # one averaged (cos, sin) detector pair per cell
        else:
            n_osc = lm.n_heads * T
            n_coup = lm.n_heads * T * (T - 1) / 2
            t_on = (cfg.ssa.settle_cycles + cfg.ssa.averaging_cycles) / f0
            samples = max(1.0, cfg.ssa.averaging_cycles / cfg.readout.averaging_cycles)
            conversions = 2 * n_osc * samples
        e["oscillators_j"] += n_osc * dev.power_w * t_on / T
        e["coupler_programming_j"] += taps * n_coup * bits_c * dev.coupler_write_j_per_bit / T
        e["readout_j"] += conversions * conv_j / T
        cost = attention_cost(chip.kind, mc, T)
        dig = cost["chip_digital_flops"]
        if lm.kind == "ssa1d-collective":  # ⟨cos(θ_i − θ_j)⟩ accumulated digitally from the phase samples
            dig += lm.n_heads * (T + 1) / 2 * 4 * max(1.0, cfg.ssa.averaging_cycles / cfg.readout.averaging_cycles)
        e["digital_periphery_j"] += dig * dev.digital_j_per_flop
    # device realism (issue 11, mapping.injection): the phase-injection term, only in 'injected' mode
    from .injection import injection_energy_per_token

    inj = injection_energy_per_token(chip, T)
    if inj is not None:
        e["injection_j"] = inj["injection_j"]
    total = sum(e.values())
    sources = {
        "oscillators_j": f"N_osc x P_osc x (settle + readout window) / T; P_osc = {dev.power_w:.3g} W: "
                         f"{dev.sources.get('power_w', 'assumed')}",
        "coupler_programming_j": f"N_couplers x {bits_c} bits x {dev.coupler_write_j_per_bit:.3g} J/bit / T: "
                                 f"{dev.sources.get('coupler_write_j_per_bit', 'assumed')}",
        "readout_j": f"2 channels per phase x FoM x 2^{bits_r} ({conv_j:.3g} J/conversion): "
                     f"{dev.sources.get('adc_fom_j_per_step', 'assumed')}",
        "digital_periphery_j": f"digital attention operations x {dev.digital_j_per_flop:.3g} J/FLOP: "
                               f"{dev.sources.get('digital_j_per_flop', 'assumed')}",
    }
    if inj is not None:
        sources["injection_j"] = inj["source"]
    return {"energy_per_token_chip_j": total, "breakdown": e, "sources": sources, "tokens_per_sequence": T,
            "scope": "attention layers only"}


def gpu_energy_per_token(model_kind: str, mc: dict, n_layers: int, T: int, gpu: str = "H100-SXM") -> dict:
    """GPU energy per token [J] of the closed-form attention (roofline at TDP), with its sources."""
    if gpu not in GPUS:
        raise ValueError(f"unknown GPU {gpu!r}; valid: {', '.join(GPUS)}")
    g = GPUS[gpu]
    c = attention_cost(model_kind, mc, T)
    F, Q = c["flops"] * n_layers, c["bytes"] * n_layers
    roofline = g.tdp_w * max(F / g.peak_flops, Q / g.hbm_bytes_per_s)
    return {
        "energy_per_token_gpu_j": roofline,
        "flops_per_token": F, "bytes_per_token": Q,
        "flop_only_j": F * g.tdp_w / g.peak_flops,
        "flop_plus_hbm_physical_j": F * g.tdp_w / g.peak_flops + Q * HBM_J_PER_BYTE,
        "gpu": g.name,
        "sources": {"energy_per_token_gpu_j": f"TDP x max(FLOPs/peak, bytes/bandwidth): {g.source}",
                    "flop_plus_hbm_physical_j": HBM_SOURCE,
                    "flops_per_token": "counted operation by operation in mapping.energy.attention_cost"},
    }


def measure_gpu_energy(model, tokens, *, repeats: int = 200) -> dict | None:
    """Measured GPU energy per token [J] of the closed-form attention layers, with NVML's total-energy counter.

    Returns None when no CUDA GPU, torch.cuda or pynvml is available (optional imports).
    """
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        import pynvml
    except Exception:
        return None
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        import copy

        dev = torch.device("cuda")
        m = copy.deepcopy(model).to(dev)  # the caller's model stays where it is
        tok = torch.as_tensor(tokens, dtype=torch.long, device=dev)
        with torch.no_grad():
            if type(m).__name__ == "KuramotoLM":
                theta = m.embed[tok]
                fns = [lambda th=theta, L=L: L.attn(th) for L in m.layers]
            else:
                x = m.embed(tok) * math.sqrt(m.config.d_model)
                fns = [lambda x=x, b=b: b.attn(b.norm1(x)) for b in m.blocks]
            for f in fns:
                f()
            torch.cuda.synchronize()
            e0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)  # mJ
            for _ in range(repeats):
                for f in fns:
                    f()
            torch.cuda.synchronize()
            e1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        j = (e1 - e0) * 1e-3 / (repeats * tok.numel())
        return {"measured_gpu_j_per_token": j, "repeats": repeats, "device": torch.cuda.get_device_name(),
                "source": "NVML nvmlDeviceGetTotalEnergyConsumption (whole board, idle power included)"}
    except Exception as exc:  # pragma: no cover - hardware dependent
        return {"error": f"{type(exc).__name__}: {exc}"}


def energy_report(chip: Chip, T: int | None = None, *, gpu: str = "H100-SXM") -> dict:
    """Chip and GPU energy per token side by side (attention layers only)."""
    T = T or chip.layers[0].max_tokens
    ce = chip_energy_per_token(chip, T)
    ge = gpu_energy_per_token(chip.kind, chip.model_info["config"], len(chip.layers), T, gpu)
    return {**ce, "gpu": ge, "energy_per_token_gpu_j": ge["energy_per_token_gpu_j"]}
