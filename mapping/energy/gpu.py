"""The GPU on the same terms as the chip: energy bounds per token from FLOPs and bytes, and NVML measurement.

Same operations and bytes as the chip model, at the precision of the FLOP figure (``energy.gpu_precision``):

- lower bound: FLOPs × TDP/peak at that precision + compulsory bytes (inputs, outputs, weights once per batch,
  the K/V cache in decode) × physical energy per byte: on-chip SRAM (CACTI 7 at the GPU's node, carried below
  CACTI's 22 nm by the Stillmaker-Baas fits, an optimistic rule there: :meth:`constants.GPUSpec.sram_j_per_bit`)
  when the working set fits in L2, HBM ([OCo17] 3.9 pJ/bit) otherwise;
- upper bound: the roofline at board power, TDP × (FLOPs / peak + bytes_eager / HBM bandwidth), with the
  eager traffic of an unfused implementation (every intermediate written and read once) and no overlap of
  compute and memory (so that it is never below the lower bound; the classical max form is reported as
  ``roofline_max_j``). Small kernels at low occupancy run longer than the roofline, and NVML
  (:func:`measure_gpu_energy`) is then the arbiter.
"""

from __future__ import annotations

import math

from . import constants as ec
from .constants import GPUS
from .ops import PHASES as _PHASES
from .ops import attention_cost, model_cost

__all__ = ["gpu_energy_per_token", "measure_gpu_energy", "HBM_J_PER_BYTE", "HBM_SOURCE", "BOUND_NAMES"]

#: What each of the GPU model's two board-power figures is, in words (the config and the JSON keep the historical
#: keys ``lower`` / ``upper``): both are board power (TDP), not the GPU's datapath; the datapath bound on the same
#: terms as the chip is :mod:`mapping.energy.baselines` ``gpu_datapath``.
BOUND_NAMES = {"lower": "board figure at peak, 100 % utilisation", "upper": "board power over the roofline time"}

HBM_J_PER_BYTE = ec.HBM_J_PER_BIT.value * 8
HBM_SOURCE = ec.HBM_J_PER_BIT.source
_SCOPES = ("attention", "whole")


def gpu_energy_per_token(model_kind: str, mc: dict, n_layers: int, T: int, gpu: str = "H100-SXM", *,
                         precision: str = "bf16", phase: str = "prefill", scope: str = "attention",
                         batch: int = 1) -> dict:
    """GPU energy per token [J]: the lower and upper bound (see the module notes), with sources.

    Parameters
    ----------
    model_kind : {'kuramoto', 'ssa'}
    mc : dict
        Model config.
    n_layers, T : int
        Attention layers counted; tokens per sequence.
    gpu : str
        A key of :data:`GPUS`.
    precision : {'bf16', 'fp32', 'int8'}
        Precision of the FLOP figure; bytes are counted at the same precision.
    phase : {'prefill', 'decode'}
    scope : {'attention', 'whole'}
    batch : int
        Sequences sharing one fetch of the weights.

    Returns
    -------
    dict with ``lower_j``, ``upper_j``, ``roofline_max_j``, ``energy_per_token_gpu_j`` (= ``upper_j``),
    ``flops_per_token``, ``bytes_per_token`` (compulsory), ``bytes_eager_per_token``, ``memory`` ('sram' or
    'hbm' for the lower bound), ``working_set_bytes``, ``flop_only_j``, ``flop_plus_hbm_physical_j``,
    ``gpu``, ``precision``, ``sources``.
    """
    if gpu not in GPUS:
        raise ValueError(f"unknown GPU {gpu!r}; valid: {', '.join(GPUS)}")
    if precision not in ec.GPU_PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(ec.GPU_PRECISIONS)}, got {precision!r}")
    if phase not in _PHASES:
        raise ValueError(f"phase must be one of {', '.join(_PHASES)}, got {phase!r}")
    if scope not in _SCOPES:
        raise ValueError(f"scope must be 'attention' or 'whole', got {scope!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    g = GPUS[gpu]
    cost = attention_cost(model_kind, mc, T)
    by = ec.BYTES[precision]
    F = cost["flops"] * n_layers
    act = cost["act_elements"] * n_layers
    io = cost["io_elements"] * n_layers
    W = cost["weights"] * n_layers
    kv_per_tok = cost["kv_elements"] * n_layers
    if scope == _SCOPES[1]:
        r = model_cost(model_kind, mc)
        F, act, io, W = F + r["flops"], act + r["act_elements"], io + r["io_elements"], W + r["weights"]
    reuse = batch * (T if phase == _PHASES[0] else 1)
    # compulsory elements per token: inputs/outputs, weights once per reuse, in decode the K/V cache of the
    # (T - 1)/2 earlier tokens on average plus writing the new token's entry
    comp = io + W / reuse + (kv_per_tok * ((T - 1) / 2 + 1) if phase == _PHASES[1] else 0.0)
    eager = 2 * act + W / reuse + (kv_per_tok * ((T - 1) / 2 + 1) if phase == _PHASES[1] else 0.0)
    Q, Qe = comp * by, eager * by
    working = (W + kv_per_tok * T * batch + act * batch) * by
    fits = working <= g.l2_bytes
    e_sram, node_note = g.sram_j_per_bit(working)
    e_sram *= 8
    e_byte = e_sram if fits else HBM_J_PER_BYTE
    e_flop = g.j_per_op(precision)
    lower = F * e_flop + Q * e_byte
    # the roofline time without overlap of compute and memory: it bounds the lower bound from above
    # (TDP / bandwidth exceeds any physical energy per byte, and the eager traffic the compulsory one)
    upper = g.tdp_w * (F / g.peaks[precision] + Qe / g.hbm_bytes_per_s)
    roofline = g.tdp_w * max(F / g.peaks[precision], Qe / g.hbm_bytes_per_s)
    return {
        "lower_j": lower, "upper_j": upper, "roofline_max_j": roofline, "energy_per_token_gpu_j": upper,
        "flops_per_token": F, "bytes_per_token": Q, "bytes_eager_per_token": Qe,
        "memory": "sram" if fits else "hbm", "working_set_bytes": working,
        "flop_only_j": F * e_flop, "flop_plus_hbm_physical_j": F * e_flop + Q * HBM_J_PER_BYTE,
        "gpu": g.name, "precision": precision, "phase": phase, "scope": scope,
        "sources": {
            "lower_j": f"FLOPs x TDP/peak ({e_flop:.3g} J/op at {precision}) + compulsory bytes at {by} B/element x "
                       + (f"on-chip SRAM {e_sram:.3g} J/B (working set {working / 1e6:.3g} MB <= L2 "
                          f"{g.l2_bytes / 1e6:g} MB; {ec.SRAM_SOURCE}; {node_note})" if fits else
                          f"HBM {HBM_J_PER_BYTE:.3g} J/B ({HBM_SOURCE})") + f"; {g.source}",
            "upper_j": f"TDP x (FLOPs/peak + eager bytes/HBM bandwidth): the board at full power for the roofline "
                       f"time without compute/memory overlap, every intermediate written and read once; {g.source}",
            "roofline_max_j": f"TDP x max(FLOPs/peak, eager bytes/HBM bandwidth) (the classical roofline); "
                              f"{g.source}",
            "energy_per_token_gpu_j": "= upper_j",
            "flop_plus_hbm_physical_j": HBM_SOURCE,
            "flops_per_token": "counted operation by operation in mapping.energy.attention_cost / model_cost",
        },
    }


def measure_gpu_energy(model, tokens, *, repeats: int = 200, device=None, nvml=None) -> dict | None:
    """Measured GPU energy per token [J] of the closed-form attention layers, with NVML's total-energy counter.

    Runs every attention layer once (warm-up), reads ``nvmlDeviceGetTotalEnergyConsumption`` (mJ since driver
    load), runs them ``repeats`` times, reads it again: J/token = ΔE / (repeats × tokens). Whole board, idle
    power included.

    Parameters
    ----------
    model : KuramotoLM or OSNModel
    tokens : (B, T) int64
    repeats : int
        Timed repetitions, >= 1.
    device : str or torch.device, optional
        Where to run (default ``'cuda'``); another device only together with ``nvml`` (tests).
    nvml : module-like, optional
        An object with pynvml's ``nvmlInit``, ``nvmlDeviceGetHandleByIndex`` and
        ``nvmlDeviceGetTotalEnergyConsumption`` (default: ``import pynvml``).

    Returns
    -------
    dict or None
        None when no CUDA GPU, torch.cuda or pynvml is available (optional imports) and no ``nvml`` is given;
        a dict with ``error`` when NVML fails.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    try:
        import torch

        if nvml is None:
            if not torch.cuda.is_available():
                return None
            import pynvml as nvml
    except Exception:
        return None
    try:
        import copy

        dev = torch.device(device or "cuda")
        cuda = dev.type == "cuda"
        sync = torch.cuda.synchronize if cuda else (lambda: None)
        nvml.nvmlInit()
        handle = nvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device() if cuda else 0)
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
            sync()
            e0 = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)  # mJ
            for _ in range(repeats):
                for f in fns:
                    f()
            sync()
            e1 = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        j = (e1 - e0) * 1e-3 / (repeats * tok.numel())
        return {"measured_gpu_j_per_token": j, "repeats": repeats,
                "device": torch.cuda.get_device_name(dev) if cuda else str(dev),
                "source": "NVML nvmlDeviceGetTotalEnergyConsumption (whole board, idle power included)"}
    except Exception as exc:  # noqa: BLE001 - hardware dependent; reported, not raised
        return {"error": f"{type(exc).__name__}: {exc}"}
