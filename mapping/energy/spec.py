"""What the chip energy model reads, as plain numbers: :class:`ChipEnergySpec` (built from a compiled chip by
:meth:`ChipEnergySpec.from_chip`, or by hand in tests), and how each layer kind uses its array
(:data:`LAYER_ENERGY`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import constants as ec
from .area import ANALOG_BITS, chip_area
from .constants import GPUS
from .device_power import coupler_static_power, oscillator_power

__all__ = ["ChipEnergySpec", "LAYER_ENERGY", "LayerEnergyModel"]


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
        Coupler-register write energy per bit [J] (at the chip's node).
    settle_cycles, read_cycles : float
        Settle window and readout averaging window [cycles] (SSA: transient and averaging window).
    coupler_bits, gain_bits, readout_bits : int
        Resolutions (analog/unquantised charged as 8 bits).
    digital_precision, gpu, gpu_precision : str
    batch : int
    array_area_mm2 : float
        Area of the oscillator array one layer runs on [mm²] (the layer's own on the spatial chip, every tile
        on a multiplexed one): clock and bus wire lengths.
    array_oscillators : float or None
        Oscillators of that array (None: the layer's own, its prefill count).
    die_area_mm2 : float or None
        The die without the analog-score array [mm²], whose leakage is charged over the latency (None: the
        layers' arrays plus the SRAM and periphery of the spec, :mod:`mapping.energy.area`); with analog scores
        the score array (``score_array_mm2``) joins it.
    score_array_mm2 : float
        Area of the analog-score array [mm²] (:func:`mapping.energy.area.score_array_area`): the chip's own when
        its scores are analog, the default score units' for a digital chip's analog what-if; 0 for a spec
        written by hand (its score silicon then costs nothing: say so where it matters).
    score_rounds_per_layer : int
        Score rounds of a layer on the score array, ⌈heads / ``[scores] units``⌉
        (:class:`mapping.compiler.score_array.ScoreArray`; 1: every head its own unit).
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
    node_nm, node_flavor : float, str
        Technology node of the chip (:func:`hw_models.technology.chip_node`).
    rounds_per_layer : int
        Rounds a layer takes on the array (:class:`mapping.compiler.schedule.Schedule`; 1: spatial).
    program_fraction : float
        Units whose couplers are written per pass over the units (1: every unit; a tile that keeps its matrix
        for the next unit is not rewritten).
    matrix_load_factor, input_load_factor : float
        Coupling matrices and input-phase vectors read from SRAM per pass over the spatial chip's count (one per
        head, one per coordinate).
    reference_gain_updates : bool
        The reference bank's units set their tile's receive-gain DACs to unity (a multiplexed Kuramoto chip:
        a tile serves both banks); the spatial chip's reference bank has no gain DACs.
    channels_per_adc, macs : int
        The array's ADC sharing and the periphery's MAC units (:class:`mapping.config.ArrayConfig`).
    sram_bytes : float or None
        The chip's SRAM (:func:`mapping.energy.sram.sram_buffers`), reported; None: computed from the spec.
    sources : dict
    score_adc_bits, score_gate_bits : int
        Analog-score mode (:mod:`mapping.energy.analog_scores`): the score ADC's and the gate DACs' resolutions
        (analog charged as 8 bits).
    score_noise : dict or None
        The analog-score chain's predicted score error (the chip's, when its scores are analog).
    held_keys : bool
        Decode keys held in running oscillators (``[decode] keys = "held"``, :mod:`mapping.energy.phase_memory`).
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
    array_area_mm2: float
    array_oscillators: float | None = None
    die_area_mm2: float | None = None
    score_array_mm2: float = 0.0
    score_rounds_per_layer: int = 1
    tau: tuple = ()
    readout_noise_rad: float = 2e-3
    diffusion_rad2_per_s: float = 0.0
    readout_samples: float = 1.0
    injection_s: float
    injection_driver_w: float
    node_nm: float = 65.0
    node_flavor: str = "LP"
    rounds_per_layer: int = 1
    program_fraction: float = 1.0
    matrix_load_factor: float = 1.0
    input_load_factor: float = 1.0
    reference_gain_updates: bool = False
    channels_per_adc: int = 64
    macs: int = 1024
    sram_bytes: float | None = None
    sources: dict
    score_adc_bits: int = 10
    score_gate_bits: int = 8
    score_noise: dict | None = None
    held_keys: bool = False
    inter_token_s: float | None = None
    freq_residual_rms: float = 0.0
    write_rms_rad: float = 0.0

    def __post_init__(self):
        for n in ("n_layers", "n_heads", "head_dim", "banks", "taps", "T", "batch", "rounds_per_layer",
                  "channels_per_adc", "macs", "score_rounds_per_layer"):
            v = getattr(self, n)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"ChipEnergySpec.{n} must be a positive integer, got {v!r}")
        for n in ("f0_hz", "read_cycles", "array_area_mm2", "readout_samples", "node_nm", "program_fraction",
                  "matrix_load_factor", "input_load_factor"):
            v = getattr(self, n)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"ChipEnergySpec.{n} must be finite and > 0, got {v!r}")
        for n in ("p_osc_w", "p_coupler_w", "e_bit_write_j", "settle_cycles", "readout_noise_rad",
                  "diffusion_rad2_per_s", "injection_s", "injection_driver_w", "score_array_mm2"):
            v = getattr(self, n)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"ChipEnergySpec.{n} must be finite and >= 0, got {v!r}")
        for n in ("array_oscillators", "die_area_mm2", "sram_bytes"):
            v = getattr(self, n)
            if v is not None and not (math.isfinite(v) and v > 0):
                raise ValueError(f"ChipEnergySpec.{n} must be None or finite and > 0, got {v!r}")
        for n in ("coupler_bits", "gain_bits", "readout_bits", "score_adc_bits", "score_gate_bits"):
            v = getattr(self, n)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 24:
                raise ValueError(f"ChipEnergySpec.{n} must be an integer in [1, 24], got {v!r}")
        if self.program_fraction > 1:
            raise ValueError(f"ChipEnergySpec.program_fraction must be in (0, 1], got {self.program_fraction!r}")
        if self.digital_precision not in ec.PRECISIONS:
            raise ValueError(f"digital_precision must be one of {', '.join(ec.PRECISIONS)}")
        if self.gpu not in GPUS:
            raise ValueError(f"unknown GPU {self.gpu!r}; valid: {', '.join(GPUS)}")
        if self.layer_kind not in LAYER_ENERGY:
            raise ValueError(f"layer_kind must be one of {', '.join(LAYER_ENERGY)}, got {self.layer_kind!r}")

    @property
    def node(self):
        """The chip's :class:`hw_models.technology.TechnologyNode`."""
        from hw_models.technology import chip_node

        return chip_node(self.node_nm, self.node_flavor)

    @classmethod
    def from_chip(cls, chip, T: int | None = None) -> "ChipEnergySpec":
        """The spec of a compiled chip, for sequences of ``T`` tokens (default its context)."""
        from hw_models.technology import chip_node

        cfg, dev = chip.config, chip.device
        lm = chip.layers[0]
        T = int(T or lm.max_tokens)
        node = chip_node(cfg.node_nm, cfg.node_flavor)
        pc, pc_src = coupler_static_power(dev, chip.kind, chip_node(cfg.sizing_node_nm, cfg.node_flavor))
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
        score_array = _score_array(chip, scores)
        sc = chip.schedule
        U, L = sc.units_per_layer, sc.n_layers
        spatial = sc.kind == "spatial"
        return cls(
            kind=chip.kind, layer_kind=lm.kind, n_layers=len(chip.layers), n_heads=lm.n_heads,
            head_dim=lm.head_dim, banks=lm.banks,
            taps=int(chip.coupling_rule.get("taps", 1)) if chip.coupling_rule else 1, T=T,
            model_config=dict(chip.model_info["config"]), f0_hz=dev.f0_hz, p_osc_w=oscillator_power(chip),
            p_coupler_w=pc, e_bit_write_j=ec.at_node(ec.COUPLER_WRITE_J_PER_BIT.value, node, "energy"),
            settle_cycles=cfg.settle_cycles if scores else cfg.ssa.settle_cycles,
            read_cycles=cfg.readout.averaging_cycles if scores else cfg.ssa.averaging_cycles,
            coupler_bits=cfg.coupling.bits or ANALOG_BITS,
            # Kuramoto: the receive-gain DAC; SSA: the per-oscillator frequency DAC, at the trim resolution
            gain_bits=(cfg.coupling.gain_bits if scores else cfg.trim_bits) or ANALOG_BITS,
            readout_bits=cfg.readout.bits or ANALOG_BITS, digital_precision=cfg.energy.digital_precision,
            gpu=cfg.energy.gpu, gpu_precision=cfg.energy.gpu_precision, batch=cfg.energy.batch,
            array_area_mm2=area["layer_array_mm2"], array_oscillators=float(area["array_oscillators"]),
            die_area_mm2=area["area_mm2"] - area["score_array_mm2"], tau=taus, **score_array,
            readout_noise_rad=cfg.readout.noise_rad if cfg.noise else 0.0,
            diffusion_rad2_per_s=dev.diffusion_at(cfg.temperature_k) if cfg.noise else 0.0,
            readout_samples=max(1.0, cfg.ssa.averaging_cycles / cfg.readout.averaging_cycles)
            if LAYER_ENERGY[lm.kind].digital_coherence else 1.0,
            injection_s=t_inj, injection_driver_w=drv_w, node_nm=cfg.node_nm, node_flavor=cfg.node_flavor,
            rounds_per_layer=sc.rounds_per_layer, program_fraction=sc.programs_per_layer / U,
            matrix_load_factor=sc.matrix_loads_per_layer / sc.matrices_per_layer,
            input_load_factor=sc.input_loads_per_layer / sc.inputs_per_layer,
            reference_gain_updates=not spatial and lm.banks > 1 and scores,
            channels_per_adc=cfg.array.channels_per_adc, macs=cfg.array.macs, sram_bytes=area["sram_bytes"],
            sources={"p_osc_w": dev.sources.get("power_w", dev.sources.get("power", "assumed")) + " (mean over the "
                                "chip's instances where it carries a per-instance draw)",
                     "p_coupler_w": pc_src, "e_bit_write_j": ec.COUPLER_WRITE_J_PER_BIT.source,
                     "injection": inj_src, "area": area["validity"],
                     "schedule": f"{sc.kind}: {sc.tiles} tiles, {sc.rounds_per_layer} round(s) per layer, "
                                 f"{sc.programs_per_layer:g} of {U} units programmed per layer and pass "
                                 f"(mapping.compiler.schedule); {L} layers"},
            **modes,
        )


def _score_array(chip, scores: bool) -> dict:
    """The spec's ``score_array_mm2`` and ``score_rounds_per_layer``: the chip's score array, or for a digital
    Kuramoto chip the one its analog what-if would have (the default ``[scores]`` of analog mode on its array)."""
    from ..compiler.layers import model_kind_spec
    from ..compiler.score_array import chip_score_array
    from ..config import AnalogScores
    from .area import score_array_area

    if not scores or not model_kind_spec(chip.kind).score_array:
        return {}
    cfg = chip.config
    sa = chip_score_array(chip, cfg if cfg.scores.analog else cfg.replace(scores=AnalogScores()))
    return {"score_array_mm2": score_array_area(chip, sa)["score_array_mm2"],
            "score_rounds_per_layer": sa.rounds_per_layer}


def _mode_fields(chip, scores: bool) -> dict:
    """The spec's analog-score and decode-key fields of a chip (what :mod:`mapping.energy.analog_scores` and
    :mod:`mapping.energy.phase_memory` read)."""
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
