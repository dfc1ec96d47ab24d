"""The chip's energy per token: a sum of named terms, each with its source (DESIGN §5.5).

Everything is per token, in one of two phases: **prefill** (the T tokens of a sequence at once; a sequence's
arrays are programmed once and amortised over its T tokens) and **decode** (one new token at position t
against the stored phases of the t − 1 earlier ones, averaged over t = 1..T). The cells and events of a pass
come from the one resource count (:func:`mapping.compiler.resources.pass_events`), the constants from
:mod:`mapping.energy.constants`, device numbers from :mod:`hw_models` (:mod:`mapping.energy.device_power`).

Terms (per layer, summed over layers):

- ``oscillators_j``: N_osc · P_osc · (τ_s + t_read);
- ``injection_j``: phase writing by injection locking, N_osc · (P_osc + P_driver) · t_inj
  (:mod:`mapping.periphery.injection`); SSA cells start free-running and write no phases;
- ``static_coupler_j``: N_couplers · P_coupler · the coupled time (Kuramoto: τ_s, the couplers open for the
  readout window; SSA: τ_s + averaging window), every coupler at full scale (an upper estimate);
- ``coupler_programming_j``: coupler-register bits × E_bit (a latch write);
- ``dac_j``: the binary-weighted coupler DACs and the DACs updated per pass (receive gains; SSA: frequency
  DACs), ½ (2^b − 1) C_u V² per conversion, their settling time reported in ``timeline_s``;
- ``clock_j``: the reference clock to every injection and detector site, (2 × pitch × c_wire + C_sink) V² f₀
  over the window (pitch from :mod:`mapping.energy.area`);
- ``phase_detector_j``: XOR/mixer detectors, C_det V² · 2 f₀ · t_read per channel;
- ``readout_j``: ADC conversions, FoM · 2^bits per channel;
- ``sram_j``: SRAM traffic of the weights, of A into the array, of the phases in and out and of the stored
  keys, plus the bus wires across the array (``sram_breakdown_j``);
- ``digital_periphery_j``: the attention's digital operations × ½ MAC energy at ``energy.digital_precision``
  and 65 nm;
- with analog scores (Kuramoto): ``score_oscillators_j``, ``score_mixers_j``, ``score_readout_j``
  (:mod:`mapping.energy.analog_scores`); decode with held keys: ``held_keys_j`` (:mod:`mapping.energy.phase_memory`).
  These modes' terms are registered in :data:`MODE_TERMS` (events, one layer's terms, sources, report).

Amdahl: the array replaces ``offloaded_flops`` of the chip's digital work; with the offloaded fraction f, no
array can make the chip more than ``amdahl_max_gain`` = 1 / (1 − f) times better than the same chip doing that
work digitally (``digital_only_chip_j``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..compiler.resources import pass_events
from . import analog_scores as _analog_scores
from . import constants as ec
from . import phase_memory as _phase_memory
from .area import ANALOG_BITS, chip_area
from .constants import GPUS
from .device_power import coupler_static_power, oscillator_power
from .ops import PHASES, attention_cost

__all__ = ["ChipEnergySpec", "chip_energy_per_token", "LAYER_ENERGY", "LayerEnergyModel", "PHASES",
           "ARRAY_TERMS"]

ARRAY_TERMS = ("oscillators_j", "injection_j", "static_coupler_j", "coupler_programming_j", "dac_j", "clock_j",
               "phase_detector_j", "readout_j", "score_oscillators_j", "score_mixers_j", "score_readout_j",
               "held_keys_j")
MODE_TERMS = (_analog_scores, _phase_memory)
"""The chip modes' term modules: ``events(spec, phase, analog, n) -> n``, ``add_terms(spec, c, b, sram)`` (one
layer), ``sources(spec, c)``, ``report(spec, c)``."""


@dataclass(frozen=True)
class LayerEnergyModel:
    """How a layer kind uses its array in the energy model.

    Attributes
    ----------
    couplers_open_for_readout : bool
        Kuramoto: the couplers open at τ_s and the readout reads the free-running window; SSA cells stay coupled
        while they average.
    digital_scores : bool
        The scores are digital (stored keys read; the analog-score mode can move them onto the oscillators).
    digital_coherence : bool
        ⟨cos(θ_i − θ_j)⟩ is accumulated digitally from the phase samples (collective SSA-1D).
    pass_dacs : str
        What the DACs updated per pass set ('receive-gain' or 'frequency').
    """

    couplers_open_for_readout: bool
    digital_scores: bool
    digital_coherence: bool
    pass_dacs: str


LAYER_ENERGY = {
    "kuramoto": LayerEnergyModel(True, True, False, "receive-gain"),
    "ssa-pairwise": LayerEnergyModel(False, False, False, "frequency"),
    "ssa1d-collective": LayerEnergyModel(False, False, True, "frequency"),
}
"""Layer kind -> :class:`LayerEnergyModel`."""


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
    injection_s, injection_driver_w : float
        Injection time per phase write [s] and reference-driver power per oscillator [W]
        (:func:`mapping.periphery.injection.injection_energy_j`; charged on layers whose phases are written by
        injection, see :data:`LAYER_ENERGY`).
    sources : dict
    score_adc_bits, score_gate_bits : int
        Analog-score mode: the score ADC's and the gate DACs' resolutions (analog charged as 8 bits).
    score_noise : dict or None
        The analog-score chain's predicted score error (the chip's, when its scores are analog).
    held_keys : bool
        Decode keys held in running oscillators (``[decode] keys = "held"``).
    inter_token_s : float or None
        Held keys' inter-token time [s] (None: the decode latency per token).
    freq_residual_rms, write_rms_rad : float
        RMS residual angular frequency of the oscillators [rad/cycle] and RMS error of one injection [rad]
        (the phase memory's trade).
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
    injection_s: float
    injection_driver_w: float
    sources: dict
    score_adc_bits: int = 10
    score_gate_bits: int = 8
    score_noise: dict | None = None
    held_keys: bool = False
    inter_token_s: float | None = None
    freq_residual_rms: float = 0.0
    write_rms_rad: float = 0.0

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
                  "diffusion_rad2_per_s", "injection_s", "injection_driver_w"):
            v = getattr(self, n)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"ChipEnergySpec.{n} must be finite and >= 0, got {v!r}")
        for n in ("coupler_bits", "gain_bits", "readout_bits", "score_adc_bits", "score_gate_bits"):
            v = getattr(self, n)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 24:
                raise ValueError(f"ChipEnergySpec.{n} must be an integer in [1, 24], got {v!r}")
        if self.digital_precision not in ec.PRECISIONS:
            raise ValueError(f"digital_precision must be one of {', '.join(ec.PRECISIONS)}")
        if self.gpu not in GPUS:
            raise ValueError(f"unknown GPU {self.gpu!r}; valid: {', '.join(GPUS)}")
        if self.layer_kind not in LAYER_ENERGY:
            raise ValueError(f"layer_kind must be one of {', '.join(LAYER_ENERGY)}, got {self.layer_kind!r}")

    @classmethod
    def from_chip(cls, chip, T: int | None = None) -> "ChipEnergySpec":
        """The spec of a compiled chip, for sequences of ``T`` tokens (default its context)."""
        cfg, dev = chip.config, chip.device
        lm = chip.layers[0]
        T = int(T or lm.max_tokens)
        pc, pc_src = coupler_static_power(dev, chip.kind)
        scores = LAYER_ENERGY[lm.kind].digital_scores  # Kuramoto: settle and readout windows, gain DACs, τ
        taus = ()
        if chip.model is not None and scores:
            try:
                taus = tuple(float(L.attn.tau.detach()) for L in chip.model.layers)
            except AttributeError:
                taus = ()
        area = chip_area(chip)
        t_inj, drv_w, inj_src = _injection(chip)
        modes = _mode_fields(chip, scores)
        return cls(
            kind=chip.kind, layer_kind=lm.kind, n_layers=len(chip.layers), n_heads=lm.n_heads,
            head_dim=lm.head_dim, banks=lm.banks,
            taps=int(chip.coupling_rule.get("taps", 1)) if chip.coupling_rule else 1, T=T,
            model_config=dict(chip.model_info["config"]), f0_hz=dev.f0_hz, p_osc_w=oscillator_power(chip),
            p_coupler_w=pc, e_bit_write_j=ec.COUPLER_WRITE_J_PER_BIT.value,
            settle_cycles=cfg.settle_cycles if scores else cfg.ssa.settle_cycles,
            read_cycles=cfg.readout.averaging_cycles if scores else cfg.ssa.averaging_cycles,
            coupler_bits=cfg.coupling.bits or ANALOG_BITS,
            # Kuramoto: the receive-gain DAC; SSA: the per-oscillator frequency DAC, at the trim resolution
            gain_bits=(cfg.coupling.gain_bits if scores else cfg.trim_bits) or ANALOG_BITS,
            readout_bits=cfg.readout.bits or ANALOG_BITS, digital_precision=cfg.energy.digital_precision,
            gpu=cfg.energy.gpu, gpu_precision=cfg.energy.gpu_precision, batch=cfg.energy.batch,
            area_mm2_per_layer=area["area_mm2"] / len(chip.layers), tau=taus,
            readout_noise_rad=cfg.readout.noise_rad if cfg.noise else 0.0,
            diffusion_rad2_per_s=dev.diffusion_at(cfg.temperature_k) if cfg.noise else 0.0,
            readout_samples=max(1.0, cfg.ssa.averaging_cycles / cfg.readout.averaging_cycles)
            if LAYER_ENERGY[lm.kind].digital_coherence else 1.0,
            injection_s=t_inj, injection_driver_w=drv_w,
            sources={"p_osc_w": dev.sources.get("power_w", dev.sources.get("power", "assumed")) + " (mean over the "
                                "chip's instances where it carries a per-instance draw)",
                     "p_coupler_w": pc_src, "e_bit_write_j": ec.COUPLER_WRITE_J_PER_BIT.source,
                     "injection": inj_src, "area": area["validity"]},
            **modes,
        )


def _injection(chip):
    """(t_inj [s], driver power per oscillator [W], source) of one phase write (:mod:`mapping.periphery.injection`).

    In ``mode = "ideal"`` the fidelity run starts at the token phases, but a physical chip still writes them:
    the energy is charged as an injection of ``injection.cycles`` cycles (stated in the source)."""
    import dataclasses

    from ..periphery.injection import injection_energy_j, injection_time_s

    inj = chip.config.injection
    cfg = chip.config
    ideal = not inj.injected
    if ideal:
        cfg = cfg.replace(injection=dataclasses.replace(inj, mode="injected"))
    t = injection_time_s(cfg, chip.device.f0_hz)
    e = injection_energy_j(cfg, chip.device, 1.0)
    how = (f"charged as injected for {inj.cycles:g} cycles (the fidelity run idealises injection: mode 'ideal')"
           if ideal else f"the chip's injection, configured t_inj = {inj.cycles:g} cycles")
    return t, float(e["drivers_j"]) / t, f"mapping.periphery.injection, {how}: {e['source']}"


def _mode_fields(chip, scores: bool) -> dict:
    """The spec's analog-score and decode-key fields of a chip (what :data:`MODE_TERMS` read)."""
    import numpy as np

    from ..config import AnalogScores
    from ..periphery.injection import residual_error_rms

    cfg = chip.config
    sc = cfg.scores if cfg.scores.analog else AnalogScores()  # a digital chip's what-if rows: the defaults
    eps = 2 * math.pi * float(np.sqrt(np.mean([np.mean(np.square(lm.freq_residual_rel)) for lm in chip.layers])))
    sigma = chip.timebase["sigma_rad_per_sqrt_cycle"]
    K = cfg.injection.strength
    write = residual_error_rms(cfg.injection, eps, sigma) if eps < K else math.pi / math.sqrt(3.0)
    out = {"score_adc_bits": sc.bits or ANALOG_BITS, "score_gate_bits": sc.gate_bits or ANALOG_BITS,
           "held_keys": cfg.decode.held, "inter_token_s": cfg.decode.inter_token_s if cfg.decode.held else None,
           "freq_residual_rms": eps, "write_rms_rad": write}
    if scores and cfg.scores.analog and chip.model is not None:
        from ..backends.analog_scores import score_error_model, score_settings

        models = []
        for i, L in enumerate(chip.model.layers):
            st = score_settings(chip, i)
            models.append(score_error_model(st, tau=float(L.attn.tau.detach()), kh=chip.layers[i].head_dim,
                                            write_rms=write if cfg.injection.injected else 0.0))
        out["score_noise"] = {"score_sigma_logit": [m["total"] for m in models], "terms": models,
                              "model": models[0]["model"] + "; unit gates, uniform phase differences (sin^2 = 1/2)"}
    return out


def _dac_conversion_j(bits: int, vdd: float) -> float:
    """Switching energy of one binary-weighted DAC update, ½ (2^b − 1) C_u V² (half the gates toggle, assumed)."""
    return 0.5 * (2**bits - 1) * ec.C_UNIT_SWITCH_F.value * vdd**2


def _dac_settle_s(bits: int) -> float:
    """Settling to ½ LSB of the MSB gate bank: (b + 1) ln 2 · R · 2^(b−1) C_u."""
    return (bits + 1) * math.log(2) * ec.R_DAC_DRIVER_OHM.value * 2 ** (bits - 1) * ec.C_UNIT_SWITCH_F.value


def _events(s: "ChipEnergySpec", phase: str) -> dict:
    """Cells and events of one layer per pass (:func:`mapping.compiler.resources.pass_events`)."""
    return pass_events(s.layer_kind, n_heads=s.n_heads, head_dim=s.head_dim, T=s.T, banks=s.banks, taps=s.taps,
                       prefill=phase == PHASES[0])


def chip_energy_per_token(chip, T: int | None = None, *, phase: str | None = None,
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
        Analog-score mode (Kuramoto only); default the chip's ``[scores]`` mode.

    Returns
    -------
    dict with ``energy_per_token_chip_j``, ``breakdown`` (J per term), ``sources`` (same keys),
    ``digital_only_chip_j`` (the same chip with the offloaded work done by its digital periphery),
    ``offloaded_fraction``, ``amdahl_max_gain``, ``array_gain``, ``ops`` (per token), ``timeline_s``,
    ``analog_score_noise`` (analog mode), ``phase``, ``tokens_per_sequence``, ``scope``.
    """
    if isinstance(chip, ChipEnergySpec):
        spec = chip if T is None else replace(chip, T=int(T))
        phase = PHASES[0] if phase is None else phase
        analog_scores = bool(analog_scores)
    else:
        spec = ChipEnergySpec.from_chip(chip, T)
        phase = chip.config.energy.phase if phase is None else phase
        analog_scores = chip.config.scores.analog if analog_scores is None else analog_scores
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
    return chip_energy(spec, phase, analog_scores)


def _context(s: ChipEnergySpec, phase: str, analog: bool) -> dict:
    """Times, per-event energies and counts of one pass that the terms share."""
    V = ec.PERIPHERY_VDD_V.value
    f0 = s.f0_hz
    lk = LAYER_ENERGY[s.layer_kind]
    n = _events(s, phase)
    for mode in MODE_TERMS:
        n = mode.events(s, phase, analog, n)
    prefill = _events(s, PHASES[0])
    c = {"V": V, "f0": f0, "lk": lk, "n": n, "per": n["per"], "analog": analog, "phase": phase,
         "t_win": (s.settle_cycles + s.read_cycles) / f0, "t_read": s.read_cycles / f0}
    # Kuramoto chips open the couplers at τ_s and read the free-running window (mapping.periphery.readout); SSA
    # cells stay coupled while they average
    c["t_coupled"] = s.settle_cycles / f0 if lk.couplers_open_for_readout else c["t_win"]
    c["t_inj"] = s.injection_s if n["inject"] else 0.0
    c["inj_power"] = s.p_osc_w + s.injection_driver_w
    c["t_dac"] = max(_dac_settle_s(s.coupler_bits), _dac_settle_s(s.gain_bits))
    c["e_dac_c"], c["e_dac_g"] = _dac_conversion_j(s.coupler_bits, V), _dac_conversion_j(s.gain_bits, V)
    c["e_conv"] = ec.ADC_FOM_J_PER_STEP.value * 2**s.readout_bits
    c["e_op"] = ec.op_energy_j(s.digital_precision)
    # clock and bus wires take their lengths from the layer's area (mapping.energy.area)
    c["pitch_m"] = math.sqrt(s.area_mm2_per_layer * 1e-6 / max(1.0, prefill["osc"]))
    c["c_sink"] = ec.CLOCK_TREE_FACTOR.value * c["pitch_m"] * ec.C_WIRE_F_PER_M.value + ec.C_CLOCK_SINK_F.value
    c["side_m"] = math.sqrt(s.area_mm2_per_layer * 1e-6)
    c["e_bus_bit"] = 0.5 * ec.C_WIRE_F_PER_M.value * c["side_m"] * V**2  # a bus line across the array, activity ½
    cost = attention_cost(s.kind, s.model_config, s.T)
    dig_ops = cost["chip_digital_flops"]
    if lk.digital_coherence:  # ⟨cos(θ_i − θ_j)⟩ accumulated digitally from the phase samples
        dig_ops += s.n_heads * (s.T + 1) / 2 * 4 * s.readout_samples
    off_ops = cost["offloaded_flops"]
    if analog:
        dig_ops -= cost["score_flops"]
        off_ops += cost["score_flops"]
    c["dig_ops"], c["off_ops"] = dig_ops, off_ops
    # SRAM buffers and sizes (bytes) -> energy per bit
    wbytes = ec.BYTES[s.digital_precision]
    c["w_bits_layer"] = cost["weights"] * wbytes * 8
    c["e_w"] = ec.sram_j_per_bit(cost["weights"] * wbytes * s.n_layers)
    c["e_a"] = ec.sram_j_per_bit(s.n_heads * s.T * s.T * s.coupler_bits / 8)
    c["e_ph"] = ec.sram_j_per_bit(max(1.0, prefill["read"]) * 2 * s.readout_bits / 8)
    # stored keys of the digital scores (Kuramoto: key_u = g^k [cos, sin] of the rotated phase, 2k values per
    # token): read once per sequence in prefill (a score array reuses each key over the queries), for every
    # earlier token in decode; in the analog-score mode the same bits carry the key gates to the mixers (an
    # upper estimate: k gates would do)
    c["key_bits"] = 0.0
    if lk.digital_scores:
        k_all = s.n_heads * s.head_dim
        c["key_bits"] = 2 * k_all * wbytes * 8 * n.get("keys_read", 1.0 if phase == PHASES[0] else (s.T + 1) / 2)
    c["e_key"] = ec.sram_j_per_bit(2 * s.n_heads * s.head_dim * s.T * wbytes)
    c["channels"] = 2 * n["read"]
    c["conversions"] = c["channels"] * s.readout_samples
    c["sinks"] = n["osc"] + c["channels"]
    c["a_bits"] = n["a_values"] * s.coupler_bits
    c["th_bits"] = n["theta_in"] * s.readout_bits
    c["out_bits"] = c["conversions"] * s.readout_bits
    c["w_reuse"] = s.batch * (c["per"] if phase == PHASES[0] else 1)
    return c


def _terms(s: ChipEnergySpec, c: dict) -> tuple[dict, dict]:
    """(breakdown, SRAM breakdown) [J per token]: every term accumulated layer by layer."""
    n, per, V, f0 = c["n"], c["per"], c["V"], c["f0"]
    t_win, t_inj, inj_power = c["t_win"], c["t_inj"], c["inj_power"]
    b = dict.fromkeys(("oscillators_j", "injection_j", "static_coupler_j", "coupler_programming_j", "dac_j",
                       "clock_j", "phase_detector_j", "readout_j", "sram_j", "digital_periphery_j"), 0.0)
    sram = {"weights_j": 0.0, "keys_j": 0.0, "a_into_array_j": 0.0, "phases_in_j": 0.0, "phases_out_j": 0.0,
            "scores_j": 0.0, "array_bus_j": 0.0}
    for _ in range(s.n_layers):
        b["oscillators_j"] += n["osc"] * s.p_osc_w * t_win / per
        b["injection_j"] += n["osc"] * inj_power * t_inj / per
        b["static_coupler_j"] += n["coup"] * s.p_coupler_w * c["t_coupled"] / per
        b["coupler_programming_j"] += n["coup"] * s.coupler_bits * s.e_bit_write_j / per
        b["dac_j"] += (n["coup"] * c["e_dac_c"] + n["gain"] * c["e_dac_g"]) / per
        b["clock_j"] += c["sinks"] * c["c_sink"] * V**2 * f0 * (t_inj + t_win) / per
        b["phase_detector_j"] += c["channels"] * ec.C_DETECTOR_F.value * V**2 * 2 * f0 * c["t_read"] / per
        b["readout_j"] += c["conversions"] * c["e_conv"] / per
        sram["weights_j"] += c["w_bits_layer"] * c["e_w"] / c["w_reuse"]
        sram["a_into_array_j"] += 2 * c["a_bits"] * c["e_a"] / per  # softmax writes A, the array loader reads it
        sram["phases_in_j"] += c["th_bits"] * c["e_ph"] / per
        sram["keys_j"] += c["key_bits"] * c["e_key"]
        sram["phases_out_j"] += 2 * c["out_bits"] * c["e_ph"] / per  # ADC writes, periphery reads
        sram["array_bus_j"] += (c["a_bits"] + c["th_bits"] + c["out_bits"]) * c["e_bus_bit"] / per
        b["digital_periphery_j"] += c["dig_ops"] * c["e_op"]
        for mode in MODE_TERMS:
            mode.add_terms(s, c, b, sram)
    b["sram_j"] = sum(sram.values())
    return b, sram


def _sources(s: ChipEnergySpec, c: dict) -> dict:
    """The source of every term (the figures and models behind it)."""
    lk, n, f0 = c["lk"], c["n"], c["f0"]
    src = {
        "oscillators_j": f"N_osc x P_osc x (settle {s.settle_cycles:g} + readout {s.read_cycles:g} cycles) at "
                         f"f0 = {f0:.3g} Hz; P_osc = {s.p_osc_w:.3g} W: {s.sources.get('p_osc_w', 'assumed')}",
        "injection_j": s.sources.get("injection", "assumed") if n["inject"] else
                       "not used: SSA cells start free-running (the locked state and the drift average do not "
                       "depend on the initial phases)",
        "static_coupler_j": f"N_couplers x {s.p_coupler_w:.3g} W x "
                            + ("settle window (couplers open for the readout, mapping.periphery.readout)"
                               if lk.couplers_open_for_readout else "settle + averaging window")
                            + f": {s.sources.get('p_coupler_w', 'assumed')}",
        "coupler_programming_j": f"N_couplers x {s.coupler_bits} bits x {s.e_bit_write_j:.3g} J/bit: "
                                 f"{s.sources.get('e_bit_write_j', 'assumed')}",
        "dac_j": f"coupler ({s.coupler_bits}-bit) and {lk.pass_dacs} ({s.gain_bits}-bit) DACs, 1/2 (2^b - 1) C_u V^2 "
                 f"per update, settling {c['t_dac'] * 1e9:.3g} ns: {ec.C_UNIT_SWITCH_F.source}; "
                 f"{ec.R_DAC_DRIVER_OHM.source}",
        "clock_j": f"reference clock to {c['sinks']:.3g} sinks per layer-pass, (2 x pitch {c['pitch_m'] * 1e6:.3g} um x "
                   f"0.2 fF/um + {ec.C_CLOCK_SINK_F.value * 1e15:g} fF) V^2 f0 over injection + window: "
                   f"{ec.C_WIRE_F_PER_M.source}; {ec.CLOCK_TREE_FACTOR.source}; {ec.C_CLOCK_SINK_F.source}",
        "phase_detector_j": f"2 channels per phase, C_det V^2 x 2 f0 x readout window: {ec.C_DETECTOR_F.source}",
        "readout_j": f"2 ADC conversions per phase{f' x {s.readout_samples:g} samples' if s.readout_samples > 1 else ''}"
                     f" x FoM x 2^{s.readout_bits} ({c['e_conv']:.3g} J each): {ec.ADC_FOM_J_PER_STEP.source}",
        "sram_j": f"weights (once per {c['w_reuse']} tokens), stored keys of the digital scores, A into the array, "
                  f"phases in and out, at "
                  f"{ec.SRAM_SOURCE}; plus the array bus ({c['e_bus_bit']:.3g} J/bit over the "
                  f"{c['side_m'] * 1e3:.3g} mm array side, activity 1/2)",
        "digital_periphery_j": f"{c['dig_ops']:.4g} digital attention ops/token/layer x {c['e_op']:.3g} J "
                               f"({s.digital_precision} at 65 nm, 1.2 V: half a MAC of [Hor14] 45 nm scaled C V^2); "
                               f"the fidelity run computes this periphery in fp32",
    }
    for mode in MODE_TERMS:
        src.update(mode.sources(s, c))
    return src


def chip_energy(s: ChipEnergySpec, phase: str, analog: bool) -> dict:
    """:func:`chip_energy_per_token` of a spec (``phase`` checked by the caller)."""
    analog = bool(analog and LAYER_ENERGY[s.layer_kind].digital_scores)
    c = _context(s, phase, analog)
    b, sram_detail = _terms(s, c)
    L = s.n_layers
    dig_ops, off_ops, e_op = c["dig_ops"], c["off_ops"], c["e_op"]
    total = sum(b.values())
    sram_common = b["sram_j"] - sram_detail["array_bus_j"]
    digital_only = (dig_ops + off_ops) * e_op * L + sram_common
    f_off = off_ops / (dig_ops + off_ops)
    src = _sources(s, c)
    out = {"energy_per_token_chip_j": total, "breakdown": b, "sram_breakdown_j": sram_detail,
           "digital_only_chip_j": digital_only, "offloaded_fraction": f_off,
           "amdahl_max_gain": 1.0 / (1.0 - f_off), "array_gain": digital_only / total,
           "ops": {"chip_digital": dig_ops * L, "offloaded": off_ops * L},
           "timeline_s": {"dac_settle": c["t_dac"], "injection": c["t_inj"], "settle": s.settle_cycles / s.f0_hz,
                          "readout": c["t_read"], "adc_serial": ec.ADC_SHARE.value / ec.ADC_RATE_HZ.value},
           "phase": phase, "analog_scores": analog, "tokens_per_sequence": s.T, "scope": "attention layers only"}
    for mode in MODE_TERMS:
        out.update(mode.report(s, c))
    out["sources"] = {k: src[k] for k in b}
    return out
