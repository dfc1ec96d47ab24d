"""Energy on the same terms for the chip and the GPU (DESIGN §5.5): chip terms, GPU bounds, Amdahl, scope.

Everything is per token. Two phases: **prefill** (the T tokens of a sequence at once; a sequence's arrays are
programmed once and amortised over its T tokens) and **decode** (one new token at position t against the
stored phases of the t − 1 earlier ones, averaged over t = 1..T). Two scopes: the attention layers only (the
headline, ``energy_per_token_chip_j`` / ``energy_per_token_gpu_j``) and the whole model (embedding,
feed-forward, output head added, all digital on either machine).

Chip terms (per layer, summed; every term carries a source string, constants in
:mod:`mapping.energy_constants`, device numbers from :mod:`hw_models`):

- ``oscillators_j``: N_osc · P_osc · (τ_s + t_read), P_osc from ``hw_models.power``;
- ``injection_j``: phase initialisation by injection locking, N_osc · (P_osc + C_inj V² f₀) · t_inj with the
  Adler locking time t_inj = ln(π / ε) / K_inj (assumed model until the realism work provides its own);
- ``static_coupler_j``: N_couplers · P_coupler · τ_s (Kuramoto: the couplers open for the readout window,
  :mod:`mapping.readout`; SSA: τ_s + averaging window), P_coupler from ``hw_models.coupler_power``
  (ring; or the chip's coupler object's ``power``) or assumed (spin-torque), every coupler at full scale
  (an upper estimate);
- ``coupler_programming_j``: coupler-register bits × E_bit (a latch write, assumed 10 fJ/bit);
- ``dac_j``: the binary-weighted coupler and receive-gain DACs, ½ (2^b − 1) C_u V² per conversion, their
  settling time (b + 1) ln 2 · R · 2^(b−1) C_u reported in ``timeline_s``;
- ``clock_j``: the reference clock to every injection and detector site, (2 × pitch × c_wire + C_sink) V² f₀
  over the window (pitch from :mod:`mapping.area`);
- ``phase_detector_j``: XOR/mixer detectors, C_det V² · 2 f₀ · t_read per channel;
- ``readout_j``: ADC conversions, FoM · 2^bits per channel;
- ``sram_j``: SRAM reads/writes of the weights, of A into the array and of the phases in and out (array sized
  per buffer, [Hor14] scaled to 65 nm) plus the bus wires across the array;
- ``digital_periphery_j``: the attention's digital operations × ½ MAC energy at ``energy.digital_precision``
  and 65 nm ([Hor14] table scaled C V²).

GPU, same operations and bytes at the precision of the FLOP figure (``energy.gpu_precision``):

- lower bound: FLOPs × TDP/peak at that precision + compulsory bytes (inputs, outputs, weights once per batch,
  the K/V cache in decode) × physical energy per byte: on-chip SRAM ([Hor14] scaled to the GPU's node, an
  optimistic rule there) when the working set fits in L2, HBM ([OCo17]) otherwise;
- upper bound: the roofline at board power, TDP × (FLOPs / peak + bytes_eager / HBM bandwidth), with the
  eager traffic of an unfused implementation (every intermediate written and read once) and no overlap of
  compute and memory (so that it is never below the lower bound; the classical max form is reported as
  ``roofline_max_j``). It is the board at full power for the roofline's time; small kernels at low
  occupancy run longer than the roofline, and NVML (:func:`measure_gpu_energy`) is then the arbiter.

Amdahl: the array replaces ``offloaded_flops`` of the chip's digital work; with the offloaded fraction f (of
the chip's digital operations), no array can make the chip more than ``amdahl_max_gain`` = 1 / (1 − f) times
better than the same chip doing that work digitally (``digital_only_chip_j``). The gain over the GPU
factorises as (GPU / digital-only chip) × (array gain ≤ amdahl_max_gain).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from . import energy_constants as ec
from .area import ANALOG_BITS, chip_area
from .chip import Chip
from .energy_constants import GPUS, GPUSpec

__all__ = ["GPUSpec", "GPUS", "chip_energy_per_token", "gpu_energy_per_token", "attention_cost", "model_cost",
           "measure_gpu_energy", "energy_report", "coupler_static_power", "HBM_J_PER_BYTE", "HBM_SOURCE"]

HBM_J_PER_BYTE = ec.HBM_J_PER_BIT.value * 8
HBM_SOURCE = ec.HBM_J_PER_BIT.source
PHASES = ("prefill", "decode")
ARRAY_TERMS = ("oscillators_j", "injection_j", "static_coupler_j", "coupler_programming_j", "dac_j", "clock_j",
               "phase_detector_j", "readout_j", "score_oscillators_j", "score_mixers_j", "score_readout_j")


# ---------------------------------------------------------------------------------------------- op counting
def attention_cost(model_kind: str, mc: dict, T: int) -> dict:
    """Operations and activations per token of one closed-form attention layer, and what the chip offloads.

    Parameters
    ----------
    model_kind : {'kuramoto', 'ssa'}
    mc : dict
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
    if model_kind not in ("kuramoto", "ssa"):
        raise ValueError(f"model_kind must be 'kuramoto' or 'ssa', got {model_kind!r}")
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise ValueError(f"T must be a positive integer, got {T!r}")
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
        chip_digital = lin + elem + scores + softmax + 4 * k  # + per-oscillator rescaling, both banks
        offloaded = av
        io, kv = 2 * k, 4 * k                # θ in, Δ out; cached key (2k) and value [cos, sin] (2k)
        weights = 3 * (2 * k * k + k) + k + 1
    else:
        d, h = mc["d_model"], mc["n_heads"]
        F = 1 if mc.get("frequency") == "scalar" else d // h
        lin = 2 * d * h * F + 3 * 2 * d * d  # ω, θ, V projections + output
        dwf = pairs * h * (2 * F + 2)        # Δω² by a dot product, sqrt
        jf = pairs * h * 3                   # J = exp(−α Δω²)
        sf = pairs * h * 8                   # threshold, ratio, sqrt, lock mask
        rf = 4 * d                           # order parameter (cos, sin, prefix mean, modulus)
        norm = pairs * h * 2
        sv = pairs * 2 * d
        flops = lin + dwf + jf + sf + rf + norm + sv
        act = 3 * d + d + d + 2 * h
        chip_digital = lin + dwf + jf + rf + norm + sv + pairs * h  # S from the chip: one multiply by J
        offloaded = sf
        scores = 0.0
        io, kv = 2 * d, h * F + d + d        # x in, out; cached ω, θ, V
        weights = d * h * F + h * F + 3 * (d * d + d) + 2 * h + 1
    return {"flops": float(flops), "act_elements": float(act), "bytes": float(4 * act * 2),
            "io_elements": float(io), "kv_elements": float(kv), "weights": float(weights),
            "chip_digital_flops": float(chip_digital), "offloaded_flops": float(offloaded),
            "score_flops": float(scores)}


def model_cost(model_kind: str, mc: dict) -> dict:
    """Operations, activations and weights per token of everything but attention (all digital).

    Kuramoto LM: phase embedding lookup, per layer the bounded SwiGLU on wrapped angles, the phase readout.
    SSA (OSN): embedding × √d, per layer two LayerNorms and the GELU feed-forward, final LayerNorm, tied head.

    Returns
    -------
    dict with ``flops``, ``act_elements``, ``io_elements`` and ``weights`` (all layers together).
    """
    V, L = mc.get("vocab_size", 256), mc["n_layers"]
    if model_kind == "kuramoto":
        k, H = mc["k"], mc.get("ffn_hidden", 128)
        ffn = (k + 2 * 2 * k * H + 5 * H + 2 * H * k + 2 * k + 2 * k) if mc.get("ffn", True) else 2 * k
        head = 2 * k + 2 * (2 * k) * V + V
        flops = L * ffn + head
        act = L * (k + 3 * H + 2 * k) + 2 * k + V
        weights = L * 3 * k * H * (1 if mc.get("ffn", True) else 0) + 2 * V * k + V + k + 1
        io = k + V
    elif model_kind == "ssa":
        d, m = mc["d_model"], mc.get("ffn_mult", 4)
        ln = 8 * d
        ffn = 2 * ln + 2 * (2 * d * m * d) + 8 * m * d + 2 * d
        flops = d + L * ffn + ln + 2 * d * V
        act = L * (2 * d + 2 * m * d + 2 * d) + d + V
        weights = V * d + L * (2 * d * m * d + m * d + d + 4 * d) + 2 * d
        io = d + V
    else:
        raise ValueError(f"model_kind must be 'kuramoto' or 'ssa', got {model_kind!r}")
    return {"flops": float(flops), "act_elements": float(act), "io_elements": float(io), "weights": float(weights)}


# ---------------------------------------------------------------------------------------------- device numbers
_COUPLER_CACHE: dict = {}


def _hw_source_key() -> str:
    """Hash of the hw_models sources (the disk cache of derived device numbers is keyed on it)."""
    import hashlib
    from pathlib import Path

    import hw_models

    h = hashlib.sha256()
    for f in sorted(Path(hw_models.__file__).parent.glob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:20]


def _disk_cached(key: str, fn) -> float:
    """``fn()`` cached on disk under ``key`` + the hw_models source hash (a ring's limit cycle takes seconds)."""
    import json
    import os
    from pathlib import Path

    path = Path(os.environ.get("OSCSIM_CACHE", Path.home() / ".cache" / "oscsim")) / "mapping-coupler-power.json"
    key = f"{key}:{_hw_source_key()}"
    try:
        cache = json.loads(path.read_text())
    except (OSError, ValueError):
        cache = {}
    if key in cache:
        return float(cache[key])
    v = float(fn())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({**cache, key: v}))
        os.replace(tmp, path)
    except OSError:
        pass
    return v


def coupler_static_power(device, kind: str = "kuramoto") -> tuple[float, str]:
    """Static dissipation of one coupler at full scale [W] and its source.

    Parameters
    ----------
    device : ChipDevice / DeviceProfile or str
        The chip's device (``chip.device``) or a device level name.
    kind : {'kuramoto', 'ssa'}
        The coupling matrix the coupler realises (one-way signed, or symmetric).

    Notes
    -----
    With hw_models device objects (``device.coupler(matrix).power(oscillator)``) the chip's own coupler is asked;
    otherwise ring levels use ``hw_models.coupler_power`` of the 65 nm ring preset with its resistive coupler.
    Bidirectional couplers are charged at Δ = π/2 (the mean over uniformly spread phase differences for
    near-sinusoidal node waveforms). Spin-torque electrical coupling without a coupler power: assumed
    (:data:`energy_constants.STNO_COUPLER_W`). Every coupler is charged at full scale (an upper estimate).
    """
    if kind not in ("kuramoto", "ssa"):
        raise ValueError(f"kind must be 'kuramoto' or 'ssa', got {kind!r}")
    name = device if isinstance(device, str) else device.name
    ck = (name, kind, repr(getattr(device, "oscillator", None)))
    if ck in _COUPLER_CACHE:
        return _COUPLER_CACHE[ck]
    full = " at full scale (an upper estimate: a coupler programmed to w dissipates about w times this)"
    osc = getattr(device, "oscillator", None)
    if name == "spin-torque":
        out = (ec.STNO_COUPLER_W.value, ec.STNO_COUPLER_W.source)
    elif osc is not None and osc.kind == "ring":  # the chip's own coupler for its matrix, asked directly
        c = device.coupler(kind)
        p = _disk_cached(f"{name}:{kind}:{c!r}", lambda: c.power(osc))
        out = (p, f"hw_models {type(c).__name__}.power(device) of the chip's {kind} coupler" + full)
    else:  # ideal devices (or a bare level name): the 65 nm ring preset's coupler of the same kind, assumed
        from hw_models import RingOscillator, cmos_65nm_ring

        ring = RingOscillator(cmos_65nm_ring())
        c = ring.coupler(one_way=kind == "kuramoto")
        p = _disk_cached(f"cmos_65nm_ring:{kind}:{c!r}", lambda: c.power(ring))
        out = (p, f"{name} device charged as the 65 nm ring's {type(c).__name__} (assumed): hw_models "
                  f"{type(c).__name__}.power(device)" + full)
    _COUPLER_CACHE[ck] = out
    return out


def _oscillator_power(chip: Chip) -> float:
    """Mean oscillator power [W]: over the chip's per-instance draw where it carries one, else the nominal."""
    import numpy as np

    draws = [np.asarray(lm.power_w, float) for lm in chip.layers if getattr(lm, "power_w", None) is not None]
    if draws and all(np.any(d) for d in draws):
        return float(np.mean([d.mean() for d in draws]))
    return float(chip.device.power_w)


# ---------------------------------------------------------------------------------------------- the chip model
@dataclass(frozen=True, kw_only=True)
class ChipEnergySpec:
    """Everything the chip energy model reads, as plain numbers (built from a chip by :meth:`from_chip`).

    Attributes
    ----------
    kind : {'kuramoto', 'ssa'}
    layer_kind : {'kuramoto', 'ssa-pairwise', 'ssa1d-collective'}
    n_layers, n_heads, head_dim, banks, taps, T : int
    model_config : dict
    f0_hz : float
        Oscillator frequency [Hz].
    p_osc_w, p_coupler_w : float
        Oscillator power and full-scale static coupler dissipation [W].
    e_bit_write_j : float
        Coupler-register write energy per bit [J].
    settle_cycles, read_cycles : float
        Settle window and readout averaging window [cycles] (SSA: transient and averaging window).
    coupler_bits, gain_bits, readout_bits : int
        Resolutions (analog/unquantised charged as 8 bits).
    digital_precision, gpu, gpu_precision : str
    batch : int
    area_mm2_per_layer : float
        Layer area, for the clock and bus wire lengths.
    tau : tuple of float
        Score temperature τ of each layer (analog-score noise), 1.0 where unknown.
    readout_noise_rad, diffusion_rad2_per_s : float
        Detector noise (single cycle) and oscillator phase diffusion, for the analog-score noise.
    readout_samples : float
        Phase samples converted per oscillator (SSA-1D collective: the averaging window over the detector
        window, for ⟨cos(θ_i − θ_j)⟩; 1 otherwise).
    injection_s, injection_driver_w : float or None
        Injection time per phase write [s] and reference-driver power per oscillator [W] from
        :mod:`mapping.injection` where the chip has an ``[injection]`` section; None: the stated Adler model
        (:func:`injection_time_s`, driver C_inj V² f₀).
    sources : dict
    """

    kind: str
    layer_kind: str
    n_layers: int
    n_heads: int
    head_dim: int
    banks: int
    taps: int
    T: int
    model_config: dict
    f0_hz: float
    p_osc_w: float
    p_coupler_w: float
    e_bit_write_j: float
    settle_cycles: float
    read_cycles: float
    coupler_bits: int
    gain_bits: int
    readout_bits: int
    digital_precision: str = "int16"
    gpu: str = "H100-SXM"
    gpu_precision: str = "bf16"
    batch: int = 1
    area_mm2_per_layer: float
    tau: tuple = ()
    readout_noise_rad: float = 2e-3
    diffusion_rad2_per_s: float = 0.0
    readout_samples: float = 1.0
    injection_s: float | None = None
    injection_driver_w: float | None = None
    sources: dict

    def __post_init__(self):
        for n in ("n_layers", "n_heads", "head_dim", "banks", "taps", "T", "batch"):
            v = getattr(self, n)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"ChipEnergySpec.{n} must be a positive integer, got {v!r}")
        for n in ("f0_hz", "read_cycles", "area_mm2_per_layer", "readout_samples"):
            v = getattr(self, n)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"ChipEnergySpec.{n} must be finite and > 0, got {v!r}")
        for n in ("p_osc_w", "p_coupler_w", "e_bit_write_j", "settle_cycles", "readout_noise_rad",
                  "diffusion_rad2_per_s"):
            v = getattr(self, n)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"ChipEnergySpec.{n} must be finite and >= 0, got {v!r}")
        for n in ("coupler_bits", "gain_bits", "readout_bits"):
            v = getattr(self, n)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 24:
                raise ValueError(f"ChipEnergySpec.{n} must be an integer in [1, 24], got {v!r}")
        if self.digital_precision not in ec.PRECISIONS:
            raise ValueError(f"digital_precision must be one of {', '.join(ec.PRECISIONS)}")
        if self.gpu not in GPUS:
            raise ValueError(f"unknown GPU {self.gpu!r}; valid: {', '.join(GPUS)}")

    @classmethod
    def from_chip(cls, chip: Chip, T: int | None = None) -> "ChipEnergySpec":
        cfg, dev = chip.config, chip.device
        lm = chip.layers[0]
        T = int(T or lm.max_tokens)
        pc, pc_src = coupler_static_power(dev, "kuramoto" if chip.kind == "kuramoto" else "ssa")
        kura = lm.kind == "kuramoto"
        taus = ()
        if chip.model is not None and kura:
            try:
                taus = tuple(float(L.attn.tau.detach()) for L in chip.model.layers)
            except AttributeError:
                taus = ()
        area = chip_area(chip)
        t_inj, drv_w, inj_src = _injection_from_realism(chip)
        return cls(
            kind=chip.kind, layer_kind=lm.kind, n_layers=len(chip.layers), n_heads=lm.n_heads,
            head_dim=lm.head_dim, banks=lm.banks,
            taps=int(chip.coupling_rule.get("taps", 1)) if chip.coupling_rule else 1, T=T,
            model_config=dict(chip.model_info["config"]), f0_hz=dev.f0_hz, p_osc_w=_oscillator_power(chip),
            p_coupler_w=pc, e_bit_write_j=ec.COUPLER_WRITE_J_PER_BIT.value,
            settle_cycles=cfg.settle_cycles if kura else cfg.ssa.settle_cycles,
            read_cycles=cfg.readout.averaging_cycles if kura else cfg.ssa.averaging_cycles,
            coupler_bits=cfg.coupling.bits or ANALOG_BITS,
            # Kuramoto: the receive-gain DAC; SSA: the per-oscillator frequency DAC, at the trim resolution
            gain_bits=(cfg.coupling.gain_bits if kura else cfg.trim_bits) or ANALOG_BITS,
            readout_bits=cfg.readout.bits or ANALOG_BITS, digital_precision=cfg.energy.digital_precision,
            gpu=cfg.energy.gpu, gpu_precision=cfg.energy.gpu_precision, batch=cfg.energy.batch,
            area_mm2_per_layer=area["area_mm2"] / len(chip.layers), tau=taus,
            readout_noise_rad=cfg.readout.noise_rad if cfg.noise else 0.0,
            diffusion_rad2_per_s=dev.diffusion_at(cfg.temperature_k) if cfg.noise else 0.0,
            readout_samples=max(1.0, cfg.ssa.averaging_cycles / cfg.readout.averaging_cycles)
            if lm.kind == "ssa1d-collective" else 1.0,
            injection_s=t_inj, injection_driver_w=drv_w,
            sources={"p_osc_w": dev.sources.get("power_w", dev.sources.get("power", "assumed")) + " (mean over the "
                                "chip's instances where it carries a per-instance draw)",
                     "p_coupler_w": pc_src, "e_bit_write_j": ec.COUPLER_WRITE_J_PER_BIT.source,
                     **({"injection": inj_src} if inj_src else {}),
                     "area": area["validity"]},
        )


def _injection_from_realism(chip: Chip):
    """(t_inj [s], driver power per oscillator [W], source) from :mod:`mapping.injection` where the chip's config
    has an ``[injection]`` section; (None, None, "") otherwise (the stated Adler model is used).

    In ``mode = "ideal"`` the fidelity run starts at the token phases, but a physical chip still writes them:
    the energy is charged as an injection of ``injection.cycles`` cycles (stated in the source)."""
    import dataclasses

    inj = getattr(chip.config, "injection", None)
    if inj is None:
        return None, None, ""
    from .injection import injection_energy_j
    cfg = chip.config
    ideal = getattr(inj, "mode", "injected") == "ideal"
    if ideal:
        cfg = cfg.replace(injection=dataclasses.replace(inj, mode="injected"))
    t = float(inj.cycles) / chip.device.f0_hz
    e = injection_energy_j(cfg, chip.device, 1.0)
    how = (f"charged as injected for {inj.cycles:g} cycles (the fidelity run idealises injection: mode 'ideal')"
           if ideal else f"the chip's injection, configured t_inj = {inj.cycles:g} cycles")
    return t, float(e["drivers_j"]) / t, f"mapping.injection, {how}: {e['source']}"


def _dac_conversion_j(bits: int, vdd: float) -> float:
    """Switching energy of one binary-weighted DAC update, ½ (2^b − 1) C_u V² (half the gates toggle, assumed)."""
    return 0.5 * (2**bits - 1) * ec.C_UNIT_SWITCH_F.value * vdd**2


def _dac_settle_s(bits: int) -> float:
    """Settling to ½ LSB of the MSB gate bank: (b + 1) ln 2 · R · 2^(b−1) C_u."""
    return (bits + 1) * math.log(2) * ec.R_DAC_DRIVER_OHM.value * 2 ** (bits - 1) * ec.C_UNIT_SWITCH_F.value


def injection_time_s(f0_hz: float) -> float:
    """Adler locking time to a residual ε from an initial error up to π: ln(π/ε) / K_inj [s] (assumed model:
    K_inj = 2π · INJECTION_FRACTION · f₀, ε = INJECTION_RESIDUAL_RAD)."""
    k_inj = 2 * math.pi * ec.INJECTION_FRACTION.value * f0_hz
    return math.log(math.pi / ec.INJECTION_RESIDUAL_RAD.value) / k_inj


def _layer_counts(s: ChipEnergySpec, phase: str) -> dict:
    """Cells and events of one layer, per token (prefill: per sequence / T; decode: mean over positions)."""
    T = s.T
    if s.layer_kind == "kuramoto":
        k = s.n_heads * s.head_dim
        if phase == "prefill":
            n = {"osc": s.banks * k * T, "coup": s.taps * s.banks * k * T * (T - 1) / 2, "read": s.banks * k * T,
                 "gain": k * T, "a_values": s.n_heads * T * (T + 1) / 2, "theta_in": k * T, "per": T}
            n["rot_osc"], n["mixers"], n["score_conv"] = k * T, k * T * (T + 1) / 2, s.n_heads * T * (T + 1) / 2
        else:  # one new token at t, sources u < t re-injected from their stored phases; mean over t = 1..T
            m = (T + 1) / 2
            n = {"osc": s.banks * k * m, "coup": s.taps * s.banks * k * (T - 1) / 2, "read": s.banks * k,
                 "gain": k, "a_values": s.n_heads * m, "theta_in": k * m, "per": 1}
            n["rot_osc"], n["mixers"], n["score_conv"] = k * m, k * m, s.n_heads * m
        n["inject"] = True
    elif s.layer_kind == "ssa-pairwise":
        cells = s.n_heads * T * (T - 1) / 2 if phase == "prefill" else s.n_heads * (T - 1) / 2
        n = {"osc": 2 * cells, "coup": cells, "read": cells, "gain": 2 * cells, "a_values": cells,
             "theta_in": 0.0, "per": T if phase == "prefill" else 1, "inject": False}
    else:
        if phase == "prefill":
            n = {"osc": s.n_heads * T, "coup": s.n_heads * T * (T - 1) / 2, "read": s.n_heads * T,
                 "gain": s.n_heads * T, "a_values": s.n_heads * T * (T - 1) / 2, "theta_in": 0.0, "per": T}
        else:  # the collective network has no per-token update: the whole prefix is rerun (stated)
            m = (T + 1) / 2
            n = {"osc": s.n_heads * m, "coup": s.n_heads * m * (m - 1) / 2, "read": s.n_heads * m,
                 "gain": s.n_heads * m, "a_values": s.n_heads * m * (m - 1) / 2, "theta_in": 0.0, "per": 1}
        n["inject"] = False
    return n


def chip_energy_per_token(chip: Chip | ChipEnergySpec, T: int | None = None, *, phase: str | None = None,
                          analog_scores: bool | None = None) -> dict:
    """Chip energy per token [J] of the attention layers, with its breakdown and a source for every term.

    Parameters
    ----------
    chip : Chip or ChipEnergySpec
    T : int, optional
        Tokens per sequence (default: the chip's context).
    phase : {'prefill', 'decode'}, optional
        Default: ``chip.config.energy.phase`` (``'prefill'`` for a spec).
    analog_scores : bool, optional
        Analog-score mode (Kuramoto only); default ``chip.config.energy.analog_scores``.

    Returns
    -------
    dict with ``energy_per_token_chip_j``, ``breakdown`` (J per term), ``sources`` (same keys),
    ``digital_only_chip_j`` (the same chip with the offloaded work done by its digital periphery),
    ``offloaded_fraction``, ``amdahl_max_gain``, ``array_gain``, ``ops`` (per token), ``timeline_s``,
    ``analog_score_noise`` (analog mode), ``phase``, ``tokens_per_sequence``, ``scope``.
    """
    if isinstance(chip, Chip):
        spec = ChipEnergySpec.from_chip(chip, T)
        phase = chip.config.energy.phase if phase is None else phase
        analog_scores = chip.config.energy.analog_scores if analog_scores is None else analog_scores
    else:
        spec = chip if T is None else replace(chip, T=int(T))
        phase = "prefill" if phase is None else phase
        analog_scores = bool(analog_scores)
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
    return _chip_energy(spec, phase, analog_scores)


def _chip_energy(s: ChipEnergySpec, phase: str, analog: bool) -> dict:
    V = ec.PERIPHERY_VDD_V.value
    f0 = s.f0_hz
    kura = s.layer_kind == "kuramoto"
    analog = bool(analog and kura)
    n = _layer_counts(s, phase)
    per = n["per"]  # tokens sharing one programming of the arrays
    t_win = (s.settle_cycles + s.read_cycles) / f0
    t_read = s.read_cycles / f0
    # Kuramoto chips open the couplers at τ_s and read the free-running window (mapping.readout); SSA cells stay
    # coupled while they average
    t_coupled = s.settle_cycles / f0 if kura else t_win
    if s.injection_s is not None:
        t_inj = s.injection_s if n["inject"] else 0.0
        inj_power = s.p_osc_w + (s.injection_driver_w or 0.0)
    else:
        t_inj = injection_time_s(f0) if n["inject"] else 0.0
        inj_power = s.p_osc_w + ec.C_INJECTION_F.value * V**2 * f0
    t_dac = max(_dac_settle_s(s.coupler_bits), _dac_settle_s(s.gain_bits))
    e_dac_c, e_dac_g = _dac_conversion_j(s.coupler_bits, V), _dac_conversion_j(s.gain_bits, V)
    e_conv = ec.ADC_FOM_J_PER_STEP.value * 2**s.readout_bits
    e_op = ec.op_energy_j(s.digital_precision)
    # clock and bus wires take their lengths from the layer's area (mapping.area)
    pitch_m = math.sqrt(s.area_mm2_per_layer * 1e-6 / max(1.0, _layer_counts(s, "prefill")["osc"]))
    c_sink = ec.CLOCK_TREE_FACTOR.value * pitch_m * ec.C_WIRE_F_PER_M.value + ec.C_CLOCK_SINK_F.value
    side_m = math.sqrt(s.area_mm2_per_layer * 1e-6)
    e_bus_bit = 0.5 * ec.C_WIRE_F_PER_M.value * side_m * V**2  # a bus line across the array, activity ½
    mc = s.model_config
    cost = attention_cost(s.kind, mc, s.T)
    dig_ops = cost["chip_digital_flops"]
    if s.layer_kind == "ssa1d-collective":  # ⟨cos(θ_i − θ_j)⟩ accumulated digitally from the phase samples
        dig_ops += s.n_heads * (s.T + 1) / 2 * 4 * s.readout_samples
    off_ops = cost["offloaded_flops"]
    if analog:
        dig_ops -= cost["score_flops"]
        off_ops += cost["score_flops"]
    # SRAM buffers and sizes (bytes) -> energy per bit
    wbytes = ec.BYTES[s.digital_precision]
    w_bits_layer = cost["weights"] * wbytes * 8
    e_w = ec.sram_j_per_bit(cost["weights"] * wbytes * s.n_layers)
    a_buf = s.n_heads * s.T * s.T * s.coupler_bits / 8
    e_a = ec.sram_j_per_bit(a_buf)
    ph_buf = max(1.0, _layer_counts(s, "prefill")["read"]) * 2 * s.readout_bits / 8
    e_ph = ec.sram_j_per_bit(ph_buf)
    # stored keys of the digital scores (Kuramoto: key_u = g^k [cos, sin] of the rotated phase, 2k values per
    # token): read once per sequence in prefill (a score array reuses each key over the queries), for every
    # earlier token in decode; in the analog-score mode the same bits carry the key gates to the mixers (an
    # upper estimate: k gates would do)
    key_bits = 0.0
    if kura:
        k_all = s.n_heads * s.head_dim
        key_bits = 2 * k_all * wbytes * 8 * (1.0 if phase == "prefill" else (s.T + 1) / 2)
    e_key = ec.sram_j_per_bit(2 * s.n_heads * s.head_dim * s.T * wbytes)

    b = dict.fromkeys(("oscillators_j", "injection_j", "static_coupler_j", "coupler_programming_j", "dac_j",
                       "clock_j", "phase_detector_j", "readout_j", "sram_j", "digital_periphery_j"), 0.0)
    if analog:
        b.update(score_oscillators_j=0.0, score_mixers_j=0.0, score_readout_j=0.0)
    sram_detail = {"weights_j": 0.0, "keys_j": 0.0, "a_into_array_j": 0.0, "phases_in_j": 0.0, "phases_out_j": 0.0,
                   "scores_j": 0.0, "array_bus_j": 0.0}
    L = s.n_layers
    channels = 2 * n["read"]
    conversions = channels * s.readout_samples
    sinks = n["osc"] + channels
    a_bits = n["a_values"] * s.coupler_bits
    th_bits = n["theta_in"] * s.readout_bits
    out_bits = conversions * s.readout_bits
    w_reuse = s.batch * (per if phase == "prefill" else 1)
    for _ in range(L):
        b["oscillators_j"] += n["osc"] * s.p_osc_w * t_win / per
        b["injection_j"] += n["osc"] * inj_power * t_inj / per
        b["static_coupler_j"] += n["coup"] * s.p_coupler_w * t_coupled / per
        b["coupler_programming_j"] += n["coup"] * s.coupler_bits * s.e_bit_write_j / per
        b["dac_j"] += (n["coup"] * e_dac_c + n["gain"] * e_dac_g) / per
        b["clock_j"] += sinks * c_sink * V**2 * f0 * (t_inj + t_win) / per
        b["phase_detector_j"] += channels * ec.C_DETECTOR_F.value * V**2 * 2 * f0 * t_read / per
        b["readout_j"] += conversions * e_conv / per
        sram_detail["weights_j"] += w_bits_layer * e_w / w_reuse
        sram_detail["a_into_array_j"] += 2 * a_bits * e_a / per  # softmax writes A, the array loader reads it
        sram_detail["phases_in_j"] += th_bits * e_ph / per
        sram_detail["keys_j"] += key_bits * e_key
        sram_detail["phases_out_j"] += 2 * out_bits * e_ph / per  # ADC writes, periphery reads
        sram_detail["array_bus_j"] += (a_bits + th_bits + out_bits) * e_bus_bit / per
        b["digital_periphery_j"] += dig_ops * e_op
        if analog:
            t_sw = s.read_cycles / f0  # the score mixers average over the readout window (assumed)
            b["score_oscillators_j"] += n["rot_osc"] * (inj_power * t_inj + s.p_osc_w * t_sw) / per
            b["score_mixers_j"] += n["mixers"] * ec.C_DETECTOR_F.value * V**2 * 2 * f0 * t_sw / per
            b["score_readout_j"] += (n["score_conv"] * e_conv + 2 * n["rot_osc"] * e_dac_g) / per
            b["clock_j"] += n["rot_osc"] * c_sink * V**2 * f0 * (t_inj + t_sw) / per
            sc_bits = n["score_conv"] * s.readout_bits
            sram_detail["scores_j"] += 2 * sc_bits * e_a / per
            sram_detail["array_bus_j"] += sc_bits * e_bus_bit / per
    b["sram_j"] = sum(sram_detail.values())
    total = sum(b.values())
    sram_common = b["sram_j"] - sram_detail["array_bus_j"]
    digital_only = (dig_ops + off_ops) * e_op * L + sram_common
    f_off = off_ops / (dig_ops + off_ops)
    prec = s.digital_precision
    src = {
        "oscillators_j": f"N_osc x P_osc x (settle {s.settle_cycles:g} + readout {s.read_cycles:g} cycles) at "
                         f"f0 = {f0:.3g} Hz; P_osc = {s.p_osc_w:.3g} W: {s.sources.get('p_osc_w', 'assumed')}",
        "injection_j": (s.sources["injection"] if s.injection_s is not None and "injection" in s.sources else
                        f"injection locking for t_inj = ln(pi/eps)/K_inj = {t_inj * 1e9:.3g} ns per oscillator at "
                        f"P_osc + C_inj V^2 f0: {ec.INJECTION_FRACTION.source}; {ec.INJECTION_RESIDUAL_RAD.source};"
                        f" {ec.C_INJECTION_F.source}") if n["inject"] else
                       "not used: SSA cells start free-running (the locked state and the drift average do not "
                       "depend on the initial phases)",
        "static_coupler_j": f"N_couplers x {s.p_coupler_w:.3g} W x "
                            f"{'settle window (couplers open for the readout, mapping.readout)' if kura else 'settle + averaging window'}: "
                            f"{s.sources.get('p_coupler_w', 'assumed')}",
        "coupler_programming_j": f"N_couplers x {s.coupler_bits} bits x {s.e_bit_write_j:.3g} J/bit: "
                                 f"{s.sources.get('e_bit_write_j', 'assumed')}",
        "dac_j": f"coupler ({s.coupler_bits}-bit) and {'receive-gain' if kura else 'frequency'} ({s.gain_bits}-bit) DACs, 1/2 (2^b - 1) C_u V^2 "
                 f"per update, settling {t_dac * 1e9:.3g} ns: {ec.C_UNIT_SWITCH_F.source}; "
                 f"{ec.R_DAC_DRIVER_OHM.source}",
        "clock_j": f"reference clock to {sinks:.3g} sinks per layer-pass, (2 x pitch {pitch_m * 1e6:.3g} um x "
                   f"0.2 fF/um + {ec.C_CLOCK_SINK_F.value * 1e15:g} fF) V^2 f0 over injection + window: "
                   f"{ec.C_WIRE_F_PER_M.source}; {ec.CLOCK_TREE_FACTOR.source}; {ec.C_CLOCK_SINK_F.source}",
        "phase_detector_j": f"2 channels per phase, C_det V^2 x 2 f0 x readout window: {ec.C_DETECTOR_F.source}",
        "readout_j": f"2 ADC conversions per phase{f' x {s.readout_samples:g} samples' if s.readout_samples > 1 else ''} x FoM x 2^{s.readout_bits} ({e_conv:.3g} J each): "
                     f"{ec.ADC_FOM_J_PER_STEP.source}",
        "sram_j": f"weights (once per {w_reuse} tokens), stored keys of the digital scores, A into the array, "
                  f"phases in and out, at "
                  f"{ec.SRAM_SOURCE}; plus the array bus ({e_bus_bit:.3g} J/bit over the {side_m * 1e3:.3g} mm "
                  f"array side, activity 1/2)",
        "digital_periphery_j": f"{dig_ops:.4g} digital attention ops/token/layer x {e_op:.3g} J ({prec} at 65 nm, "
                               f"1.2 V: half a MAC of [Hor14] 45 nm scaled C V^2); the fidelity run computes this "
                               f"periphery in fp32",
    }
    out = {"energy_per_token_chip_j": total, "breakdown": b, "sram_breakdown_j": sram_detail,
           "digital_only_chip_j": digital_only, "offloaded_fraction": f_off,
           "amdahl_max_gain": 1.0 / (1.0 - f_off), "array_gain": digital_only / total,
           "ops": {"chip_digital": dig_ops * L, "offloaded": off_ops * L},
           "timeline_s": {"dac_settle": t_dac, "injection": t_inj, "settle": s.settle_cycles / f0,
                          "readout": t_read,
                          "adc_serial": ec.ADC_SHARE.value / ec.ADC_RATE_HZ.value},
           "phase": phase, "analog_scores": analog, "tokens_per_sequence": s.T, "scope": "attention layers only"}
    if analog:
        t_sw = s.read_cycles / f0
        # relative phase of two oscillators diffuses as 2 D t; its window mean has variance 2 D t / 3, and
        # the cos error is sin(Δ) times that, ½ on average over Δ
        var_cos = (s.readout_noise_rad**2 / s.read_cycles + 0.5 * 2 * s.diffusion_rad2_per_s * t_sw / 3
                   + (2 / 2**s.readout_bits) ** 2 / 12)
        tau = s.tau or (1.0,)
        sig = [t * math.sqrt(var_cos) for t in tau]
        src.update({
            "score_oscillators_j": "one rotated oscillator per (token, coordinate) at theta + omega t, shared by "
                                   "query and key, injected and run for the readout window (as above)",
            "score_mixers_j": "one XOR/mixer per (query, key, coordinate) pair, gains g^q g^k as mixer gains, "
                              f"low-passed over {s.read_cycles:g} cycles: {ec.C_DETECTOR_F.source}",
            "score_readout_j": f"one ADC conversion per (query, key, head) of the summed mixer currents "
                               f"({e_conv:.3g} J) + 2 gain-DAC updates per rotated oscillator",
        })
        out["analog_score_noise"] = {
            "score_sigma_logit": sig,
            "model": "first order: per-coordinate cos error variance = detector noise^2 / N_avg + D t_window "
                     "(two oscillators, averaged over the phase difference) + ADC quantisation (2/2^b)^2/12; "
                     "score sigma = tau x that (unit gates); the relative error of A is about the score sigma",
            "tau": list(tau) if s.tau else "unknown (1.0 assumed)",
        }
    out["sources"] = {k: src[k] for k in b}
    return out


# ---------------------------------------------------------------------------------------------- the GPU bounds
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
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
    if scope not in ("attention", "whole"):
        raise ValueError(f"scope must be 'attention' or 'whole', got {scope!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    g = GPUS[gpu]
    c = attention_cost(model_kind, mc, T)
    by = ec.BYTES[precision]
    F = c["flops"] * n_layers
    act = c["act_elements"] * n_layers
    io = c["io_elements"] * n_layers
    W = c["weights"] * n_layers
    kv_per_tok = c["kv_elements"] * n_layers
    if scope == "whole":
        r = model_cost(model_kind, mc)
        F, act, io, W = F + r["flops"], act + r["act_elements"], io + r["io_elements"], W + r["weights"]
    reuse = batch * (T if phase == "prefill" else 1)
    # compulsory elements per token: inputs/outputs, weights once per reuse, in decode the K/V cache of the
    # (T - 1)/2 earlier tokens on average plus writing the new token's entry
    comp = io + W / reuse + (kv_per_tok * ((T - 1) / 2 + 1) if phase == "decode" else 0.0)
    eager = 2 * act + W / reuse + (kv_per_tok * ((T - 1) / 2 + 1) if phase == "decode" else 0.0)
    Q, Qe = comp * by, eager * by
    working = (W + kv_per_tok * T * batch + act * batch) * by
    fits = working <= g.l2_bytes
    e_sram = ec.sram_j_per_bit(working, node_nm=g.node_nm, vdd_v=g.core_vdd_v) * 8
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
                          f"{g.l2_bytes / 1e6:g} MB; {ec.SRAM_SOURCE}, scaled to {g.node_nm:g} nm: optimistic "
                          f"below 20 nm, so the bound stays low)" if fits else
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


# ---------------------------------------------------------------------------------------------- the report
def energy_report(chip: Chip, T: int | None = None, *, gpu: str | None = None) -> dict:
    """Chip and GPU energy per token on the same terms (DESIGN §5.5), the headline and everything behind it.

    The headline (``energy_per_token_chip_j`` vs ``energy_per_token_gpu_j``) is attention only, in the phase
    ``chip.config.energy.phase``, against the GPU bound ``chip.config.energy.gpu_bound``; ``headline`` says so.

    Returns
    -------
    dict with the keys of :func:`chip_energy_per_token` plus ``energy_per_token_gpu_j``,
    ``gpu_energy_bounds_j`` {lower, upper}, ``gpu`` (the GPU model dict), ``whole_model`` {chip_j, gpu_j,
    gpu_bounds_j, offloaded_fraction, amdahl_max_gain}, ``phases`` (prefill and decode, with and without
    analog scores where applicable), ``gain_vs_gpu``, ``area_mm2``, ``area``, ``headline``.
    """
    ecfg = chip.config.energy
    gpu = gpu or ecfg.gpu
    T = T or chip.layers[0].max_tokens
    spec = replace(ChipEnergySpec.from_chip(chip, T), gpu=gpu)
    mc, L = chip.model_info["config"], len(chip.layers)
    rest = model_cost(chip.kind, mc)
    e_op = ec.op_energy_j(spec.digital_precision)
    e_w_rest = ec.sram_j_per_bit(rest["weights"] * ec.BYTES[spec.digital_precision])

    def rest_chip_j(phase):
        reuse = spec.batch * (T if phase == "prefill" else 1)
        return rest["flops"] * e_op + rest["weights"] * ec.BYTES[spec.digital_precision] * 8 * e_w_rest / reuse

    kura = chip.kind == "kuramoto"
    phases = {}
    for ph in PHASES:
        for an in ((False, True) if kura else (False,)):
            ce = _chip_energy(spec, ph, an)
            ga = gpu_energy_per_token(chip.kind, mc, L, T, gpu, precision=spec.gpu_precision, phase=ph,
                                      batch=spec.batch)
            gw = gpu_energy_per_token(chip.kind, mc, L, T, gpu, precision=spec.gpu_precision, phase=ph,
                                      scope="whole", batch=spec.batch)
            whole_chip = ce["energy_per_token_chip_j"] + rest_chip_j(ph)
            whole_off = ce["ops"]["offloaded"] / (ce["ops"]["offloaded"] + ce["ops"]["chip_digital"] + rest["flops"])
            phases[ph + ("+analog_scores" if an else "")] = {
                "chip_j": ce["energy_per_token_chip_j"], "gpu_lower_j": ga["lower_j"], "gpu_upper_j": ga["upper_j"],
                "offloaded_fraction": ce["offloaded_fraction"], "amdahl_max_gain": ce["amdahl_max_gain"],
                "array_gain": ce["array_gain"], "digital_only_chip_j": ce["digital_only_chip_j"],
                "whole_model": {"chip_j": whole_chip, "gpu_lower_j": gw["lower_j"], "gpu_upper_j": gw["upper_j"],
                                "offloaded_fraction": whole_off, "amdahl_max_gain": 1 / (1 - whole_off)},
                "largest_term": max(ce["breakdown"], key=ce["breakdown"].get),
            }
    ph = ecfg.phase
    ce = _chip_energy(spec, ph, ecfg.analog_scores)
    ge = gpu_energy_per_token(chip.kind, mc, L, T, gpu, precision=spec.gpu_precision, phase=ph, batch=spec.batch)
    gw = gpu_energy_per_token(chip.kind, mc, L, T, gpu, precision=spec.gpu_precision, phase=ph, scope="whole",
                              batch=spec.batch)
    bound = ecfg.gpu_bound
    g_head = ge[f"{bound}_j"]
    whole_chip = ce["energy_per_token_chip_j"] + rest_chip_j(ph)
    whole_off = ce["ops"]["offloaded"] / (ce["ops"]["offloaded"] + ce["ops"]["chip_digital"] + rest["flops"])
    area = chip_area(chip)
    chip_j = ce["energy_per_token_chip_j"]
    largest = max(ce["breakdown"], key=ce["breakdown"].get)
    headline = (f"attention only, {ph}{', analog scores' if ce['analog_scores'] else ''}: chip {chip_j:.3g} J vs "
                f"{gpu} {bound} bound {g_head:.3g} J ({spec.gpu_precision}) per token; "
                f"{'chip' if chip_j < g_head else 'GPU'} lower by {max(chip_j, g_head) / min(chip_j, g_head):.3g}x; "
                f"array offloads {ce['offloaded_fraction']:.1%} of the chip's operations (Amdahl bound "
                f"{ce['amdahl_max_gain']:.3g}x, array gain {ce['array_gain']:.3g}x); largest chip term {largest} "
                f"({ce['breakdown'][largest] / chip_j:.0%})")
    return {
        **ce,
        "energy_per_token_gpu_j": g_head,
        "gpu_energy_bounds_j": {"lower": ge["lower_j"], "upper": ge["upper_j"]},
        "gpu_bound": bound, "gpu": ge,
        "whole_model": {"chip_j": whole_chip, "gpu_j": gw[f"{bound}_j"],
                        "gpu_bounds_j": {"lower": gw["lower_j"], "upper": gw["upper_j"]},
                        "offloaded_fraction": whole_off, "amdahl_max_gain": 1 / (1 - whole_off),
                        "sources": {"chip_j": f"attention chip + embedding, feed-forward and head on the digital "
                                              f"periphery ({spec.digital_precision}, 65 nm) with weight SRAM reads",
                                    "gpu_j": gw["sources"][f"{bound}_j"]}},
        "gain_vs_gpu": g_head / chip_j,
        "periphery_gain": g_head / ce["digital_only_chip_j"],
        "phases": phases,
        "area_mm2": area["area_mm2"], "area": area,
        "headline": headline,
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
