"""What the chip energy model reads: :class:`ChipEnergySpec`, frozen groups of figures by concept (the attention's
shape, the oscillator array, the node, the schedule, the periphery, the score stage, the decode keys, the
workload), built from a compiled chip by :meth:`ChipEnergySpec.from_chip` (or by hand in tests), and how each
layer kind uses its array (:data:`LAYER_ENERGY`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from ..backends.blocking import block_plan
from . import constants as ec
from .area import ANALOG_BITS, chip_area
from .constants import GPUS
from .device_power import coupler_static_power, oscillator_power

__all__ = ["ChipEnergySpec", "AttentionShape", "ArrayFigures", "ScheduleFigures", "PeripheryFigures",
           "ScoreStageFigures", "DecodeFigures", "Workload", "LAYER_ENERGY", "LayerEnergyModel"]


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


def _positive_int(owner: str, obj, names) -> None:
    for n in names:
        v = getattr(obj, n)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{owner}.{n} must be a positive integer, got {v!r}")


def _finite(owner: str, obj, names, *, positive: bool = False, optional: bool = False) -> None:
    for n in names:
        v = getattr(obj, n)
        if optional and v is None:
            continue
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and (v > 0 if positive
                                                                                                else v >= 0)
        if not ok:
            raise ValueError(f"{owner}.{n} must be {'None or ' if optional else ''}finite and "
                             f"{'> 0' if positive else '>= 0'}, got {v!r}")


def _bits(owner: str, obj, names) -> None:
    for n in names:
        v = getattr(obj, n)
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 24:
            raise ValueError(f"{owner}.{n} must be an integer in [1, 24], got {v!r}")


@dataclass(frozen=True, kw_only=True)
class AttentionShape:
    """What the model asks of every attention layer.

    Attributes
    ----------
    kind : {'kuramoto', 'ssa'}
    layer_kind : {'kuramoto', 'ssa-pairwise', 'ssa1d-collective'}
    n_layers, n_heads, head_dim, banks, taps, T : int
        Layers, heads, coordinates per head, oscillator banks (Kuramoto: gain + reference), coupler taps per
        coupling, tokens per sequence.
    model_config : dict
        The model's configuration (operation counts, :mod:`mapping.energy.ops`).
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

    def __post_init__(self):
        _positive_int("AttentionShape", self, ("n_layers", "n_heads", "head_dim", "banks", "taps", "T"))
        if self.layer_kind not in LAYER_ENERGY:
            raise ValueError(f"AttentionShape.layer_kind must be one of {', '.join(LAYER_ENERGY)}, "
                             f"got {self.layer_kind!r}")


@dataclass(frozen=True, kw_only=True)
class ArrayFigures:
    """The oscillator array one layer runs on: its device at the node, windows, converters and silicon.

    Attributes
    ----------
    f0_hz : float
        Oscillator frequency [Hz].
    p_osc_w, p_coupler_w : float
        Oscillator power (mean of the chip's instance draw) and full-scale static coupler dissipation [W].
    e_bit_write_j : float
        Coupler-register write energy per bit [J] (at the chip's node).
    settle_cycles, read_cycles : float
        Settle window and readout averaging window [cycles] (SSA: transient and averaging window).
    coupler_bits, gain_bits, readout_bits : int
        Resolutions (analog/unquantised charged as 8 bits); ``gain_bits`` is the receive-gain DAC (Kuramoto) or
        the per-oscillator frequency DAC (SSA).
    diffusion_rad2_per_s : float
        Oscillator phase diffusion D (held decode keys' drift).
    readout_samples : float
        Phase samples converted per oscillator (SSA-1D collective: the averaging window over the detector
        window, for ⟨cos(θ_i − θ_j)⟩; 1 otherwise).
    injection_s, injection_driver_w : float
        Injection time per phase write [s] and reference-driver power per oscillator [W]
        (:func:`mapping.periphery.injection.injection_energy_j`; charged on layers whose phases are written by
        injection, see :data:`LAYER_ENERGY`).
    channels_per_adc : int
        Detector channels converted in turn by one ADC (``[array] channels_per_adc``).
    area_mm2 : float
        Area of the array one layer runs on [mm²] (the layer's own on the spatial chip, every tile on a
        multiplexed one): clock and bus wire lengths.
    oscillators : float or None
        Oscillators of that array (None: the layer's own, its prefill count).
    """

    f0_hz: float
    p_osc_w: float
    p_coupler_w: float
    e_bit_write_j: float
    settle_cycles: float
    read_cycles: float
    coupler_bits: int
    gain_bits: int
    readout_bits: int
    diffusion_rad2_per_s: float = 0.0
    readout_samples: float = 1.0
    injection_s: float
    injection_driver_w: float
    channels_per_adc: int = 64
    area_mm2: float
    oscillators: float | None = None

    def __post_init__(self):
        _positive_int("ArrayFigures", self, ("channels_per_adc",))
        _finite("ArrayFigures", self, ("f0_hz", "read_cycles", "area_mm2", "readout_samples"), positive=True)
        _finite("ArrayFigures", self, ("p_osc_w", "p_coupler_w", "e_bit_write_j", "settle_cycles",
                                       "diffusion_rad2_per_s", "injection_s", "injection_driver_w"))
        _finite("ArrayFigures", self, ("oscillators",), positive=True, optional=True)
        _bits("ArrayFigures", self, ("coupler_bits", "gain_bits", "readout_bits"))


@dataclass(frozen=True, kw_only=True)
class ScheduleFigures:
    """How the schedule reuses the physical array (:class:`mapping.compiler.schedule.Schedule`); the defaults are
    the spatial chip's.

    Attributes
    ----------
    rounds_per_layer : int
        Rounds a layer takes on the array (1: spatial).
    program_fraction : float
        Units whose couplers are written per pass over the units, in (0, 1] (1: every unit; a tile that keeps its
        matrix for the next unit is not rewritten).
    matrix_load_factor, input_load_factor : float
        Coupling matrices and input-phase vectors read from SRAM per pass over the spatial chip's count (one per
        head, one per coordinate).
    reference_gain_updates : bool
        The reference bank's units set their tile's receive-gain DACs to unity (a multiplexed Kuramoto chip:
        a tile serves both banks); the spatial chip's reference bank has no gain DACs.
    block : int or None
        Block size of the blocked schedule (``[array] block``, :mod:`mapping.backends.blocking`): its pass events
        per block (:func:`mapping.compiler.resources.pass_events`) and a tile's 2B coupler rows;
        ``rounds_per_layer`` then counts the prefill block rounds (a decoded token's: ⌈t/B⌉, mean over its
        positions, :func:`mapping.energy.latency.pass_timeline`). None: unblocked.
    """

    rounds_per_layer: int = 1
    program_fraction: float = 1.0
    matrix_load_factor: float = 1.0
    input_load_factor: float = 1.0
    reference_gain_updates: bool = False
    block: int | None = None

    def __post_init__(self):
        _positive_int("ScheduleFigures", self, ("rounds_per_layer",))
        if self.block is not None and (isinstance(self.block, bool) or not isinstance(self.block, int)
                                       or self.block < 1):
            raise ValueError(f"ScheduleFigures.block must be None or a positive integer, got {self.block!r}")
        _finite("ScheduleFigures", self, ("program_fraction", "matrix_load_factor", "input_load_factor"),
                positive=True)
        if self.program_fraction > 1:
            raise ValueError(f"ScheduleFigures.program_fraction must be in (0, 1], got {self.program_fraction!r}")


@dataclass(frozen=True, kw_only=True)
class PeripheryFigures:
    """The digital side of the die: the periphery's arithmetic, its MACs, the SRAM and the die's area.

    Attributes
    ----------
    digital_precision : {'int8', 'int16', 'fp16', 'fp32'}
        Arithmetic of the periphery (and the width of the weights and keys in SRAM).
    macs : int
        Multiply-accumulate units (``[array] macs``).
    sram_bytes : float or None
        The chip's SRAM (:func:`mapping.energy.sram.sram_buffers`); None: computed from the spec.
    die_area_mm2 : float or None
        The die without the analog-score array [mm²], whose leakage is charged over the latency (None: the
        layers' arrays plus the SRAM and periphery of the spec, :mod:`mapping.energy.area`).
    weights : {'streamed', 'stationary'}
        Weights read from the global SRAM for every use, or held in local stores beside the MACs
        (``[energy] weights``, :func:`mapping.energy.sram.sram_plan`).
    sram_max_bytes : float
        On-die SRAM capacity [B] (``[energy] sram_max_bytes``); the buffers beyond it go off chip.
    offchip : {'hbm', 'ddr'}
        The off-chip memory (a key of :data:`mapping.energy.constants.OFFCHIP_MEMORY`).
    """

    digital_precision: str = "int16"
    macs: int = 1024
    sram_bytes: float | None = None
    die_area_mm2: float | None = None
    weights: str = "streamed"
    sram_max_bytes: float = ec.SRAM_MAX_BYTES.value
    offchip: str = "hbm"

    def __post_init__(self):
        _positive_int("PeripheryFigures", self, ("macs",))
        _finite("PeripheryFigures", self, ("sram_bytes", "die_area_mm2"), positive=True, optional=True)
        _finite("PeripheryFigures", self, ("sram_max_bytes",), positive=True)
        if self.weights not in ("streamed", "stationary"):
            raise ValueError(f"PeripheryFigures.weights must be 'streamed' or 'stationary', got {self.weights!r}")
        if self.offchip not in ec.OFFCHIP_MEMORY:
            raise ValueError(f"PeripheryFigures.offchip must be one of {', '.join(ec.OFFCHIP_MEMORY)}, "
                             f"got {self.offchip!r}")
        if self.digital_precision not in ec.PRECISIONS:
            raise ValueError(f"PeripheryFigures.digital_precision must be one of {', '.join(ec.PRECISIONS)}, "
                             f"got {self.digital_precision!r}")


@dataclass(frozen=True, kw_only=True)
class ScoreStageFigures:
    """The analog-score stage's silicon and converters (:mod:`mapping.energy.analog_scores`): the chip's own when
    its scores are analog, the default ``[scores]`` of analog mode for a digital chip's analog what-if.

    Attributes
    ----------
    array_mm2 : float
        Area of the score array [mm²] (:func:`mapping.energy.area.score_array_area`); 0 for a spec written by hand
        (its score silicon then costs nothing: say so where it matters).
    rounds_per_layer : int
        Score rounds of a layer, ⌈heads / ``[scores] units``⌉ (:class:`mapping.backends.score_array.ScoreArray`).
    adc_bits, gate_bits : int
        The score ADC's and the gate DACs' resolutions (analog charged as 8 bits).
    noise : dict or None
        The chain's predicted score error (the chip's, when its scores are analog; None otherwise).
    """

    array_mm2: float = 0.0
    rounds_per_layer: int = 1
    adc_bits: int = 10
    gate_bits: int = 8
    noise: dict | None = None

    def __post_init__(self):
        _positive_int("ScoreStageFigures", self, ("rounds_per_layer",))
        _finite("ScoreStageFigures", self, ("array_mm2",))
        _bits("ScoreStageFigures", self, ("adc_bits", "gate_bits"))


@dataclass(frozen=True, kw_only=True)
class DecodeFigures:
    """The decode keys (``[decode]``, :mod:`mapping.energy.phase_memory`).

    Attributes
    ----------
    held_keys : bool
        Keys held in running oscillators (``keys = "held"``); False: re-injected from SRAM every token.
    inter_token_s : float or None
        Held keys' inter-token time [s] (None: the decode latency per token).
    freq_residual_rms, write_rms_rad : float
        RMS residual angular frequency of the oscillators [rad/cycle] and RMS error of one injection [rad] (the
        phase memory's trade).
    """

    held_keys: bool = False
    inter_token_s: float | None = None
    freq_residual_rms: float = 0.0
    write_rms_rad: float = 0.0

    def __post_init__(self):
        _finite("DecodeFigures", self, ("freq_residual_rms", "write_rms_rad"))
        _finite("DecodeFigures", self, ("inter_token_s",), positive=True, optional=True)


@dataclass(frozen=True, kw_only=True)
class Workload:
    """What the chip is compared on: sequences per weight fetch and the GPU it is set against.

    Attributes
    ----------
    batch : int
        Sequences sharing one weight fetch.
    gpu : str
        A key of :data:`mapping.energy.constants.GPUS`.
    gpu_precision : {'bf16', 'fp32', 'int8'}
    """

    batch: int = 1
    gpu: str = "H100-SXM"
    gpu_precision: str = "bf16"

    def __post_init__(self):
        _positive_int("Workload", self, ("batch",))
        if self.gpu not in GPUS:
            raise ValueError(f"unknown GPU {self.gpu!r}; valid: {', '.join(GPUS)}")


@dataclass(frozen=True, kw_only=True)
class ChipEnergySpec:
    """Everything the chip energy model reads, grouped by concept (built from a compiled chip by
    :meth:`from_chip`, or by hand in tests). Every group is a frozen dataclass; a new figure goes into the group
    of its concept (or a new group) with its unit and its validation.

    Attributes
    ----------
    shape : AttentionShape
        Layers, heads, coordinates, banks, taps, tokens, the model's config.
    array : ArrayFigures
        The oscillator array: device figures at the node, windows, converter resolutions, its area.
    node : hw_models.technology.TechnologyNode
        The chip's node (``chip.node``: built once per chip); every periphery, converter, wire and leakage
        figure is carried to it.
    schedule : ScheduleFigures
        The schedule's reuse of the array (default: spatial).
    periphery : PeripheryFigures
        Digital precision, MACs, SRAM and the die's area.
    scores : ScoreStageFigures
        The analog-score stage (charged only in a pass with analog scores).
    decode : DecodeFigures
        The decode keys (held or re-injected).
    workload : Workload
        Batch and the GPU compared against.
    sources : dict
        Where the device, schedule and area figures come from (``p_osc_w``, ``p_coupler_w``, ``e_bit_write_j``,
        ``injection``, ``area``, ``schedule``; each optional).
    """

    shape: AttentionShape
    array: ArrayFigures
    node: Any
    schedule: ScheduleFigures = ScheduleFigures()
    periphery: PeripheryFigures = PeripheryFigures()
    scores: ScoreStageFigures = ScoreStageFigures()
    decode: DecodeFigures = DecodeFigures()
    workload: Workload = Workload()
    sources: dict = field(default_factory=dict)

    def __post_init__(self):
        for name, cls in (("shape", AttentionShape), ("array", ArrayFigures), ("schedule", ScheduleFigures),
                          ("periphery", PeripheryFigures), ("scores", ScoreStageFigures),
                          ("decode", DecodeFigures), ("workload", Workload)):
            if not isinstance(getattr(self, name), cls):
                raise ValueError(f"ChipEnergySpec.{name} must be a {cls.__name__}, got "
                                 f"{type(getattr(self, name)).__name__}")
        if not hasattr(self.node, "vdd") or not hasattr(self.node, "node_nm"):
            raise ValueError(f"ChipEnergySpec.node must be a hw_models.technology.TechnologyNode, got "
                             f"{type(self.node).__name__}")

    @property
    def layer(self) -> LayerEnergyModel:
        """How the layer kind uses its array (:data:`LAYER_ENERGY`)."""
        return LAYER_ENERGY[self.shape.layer_kind]

    def with_tokens(self, T: int) -> "ChipEnergySpec":
        """The same chip for sequences of ``T`` tokens."""
        return replace(self, shape=replace(self.shape, T=int(T)))

    @classmethod
    def from_chip(cls, chip, T: int | None = None) -> "ChipEnergySpec":
        """The spec of a compiled chip, for sequences of ``T`` tokens (default its context): every figure read
        from the compiled chip (its node, schedule, score array and draws), none by running a backend."""
        cfg, dev, node = chip.config, chip.device, chip.node
        lm = chip.layers[0]
        lk = LAYER_ENERGY[lm.kind]
        scores = lk.digital_scores  # Kuramoto: settle and readout windows, gain DACs, the analog-score what-if
        pc, pc_src = coupler_static_power(dev, chip.kind, chip.device_node)  # the coupler at the device's sizing
        area = chip_area(chip)
        t_inj, drv_w, inj_src = _injection(chip)
        sc = chip.schedule
        U, L = sc.units_per_layer, sc.n_layers
        shape = AttentionShape(kind=chip.kind, layer_kind=lm.kind, n_layers=len(chip.layers), n_heads=lm.n_heads,
                               head_dim=lm.head_dim, banks=lm.banks,
                               taps=int(chip.coupling_rule.get("taps", 1)) if chip.coupling_rule else 1,
                               T=int(T or lm.max_tokens), model_config=dict(chip.model_info["config"]))
        array = ArrayFigures(
            f0_hz=dev.f0_hz, p_osc_w=oscillator_power(chip), p_coupler_w=pc,
            e_bit_write_j=ec.at_node(ec.COUPLER_WRITE_J_PER_BIT.value, node, "energy"),
            settle_cycles=cfg.settle_cycles if scores else cfg.ssa.settle_cycles,
            read_cycles=cfg.readout.averaging_cycles if scores else cfg.ssa.averaging_cycles,
            coupler_bits=cfg.coupling.bits or ANALOG_BITS,
            # Kuramoto: the receive-gain DAC; SSA: the per-oscillator frequency DAC, at the trim resolution
            gain_bits=(cfg.coupling.gain_bits if scores else cfg.trim_bits) or ANALOG_BITS,
            readout_bits=cfg.readout.bits or ANALOG_BITS,
            diffusion_rad2_per_s=dev.diffusion_at(cfg.temperature_k) if cfg.noise else 0.0,
            readout_samples=max(1.0, cfg.ssa.averaging_cycles / cfg.readout.averaging_cycles)
            if lk.digital_coherence else 1.0,
            injection_s=t_inj, injection_driver_w=drv_w, channels_per_adc=cfg.array.channels_per_adc,
            area_mm2=area["layer_array_mm2"], oscillators=float(area["array_oscillators"]))
        plan = block_plan(shape.T, cfg.array.block)
        # the blocked schedule runs block-major: the units' rounds of block (0, 0), then (1, 0), ...; a tile keeps a
        # block's couplers for the next coordinate of its head as it keeps a matrix unblocked
        schedule = ScheduleFigures(
            rounds_per_layer=sc.rounds_per_layer * plan.rounds_per_unit, block=cfg.array.block,
            program_fraction=sc.programs_per_layer / U,
            matrix_load_factor=sc.matrix_loads_per_layer / sc.matrices_per_layer,
            input_load_factor=sc.input_loads_per_layer / sc.inputs_per_layer,
            reference_gain_updates=sc.kind != "spatial" and lm.banks > 1 and scores)
        periphery = PeripheryFigures(digital_precision=cfg.energy.digital_precision, macs=cfg.array.macs,
                                     sram_bytes=area["sram_bytes"],
                                     die_area_mm2=area["area_mm2"] - area["score_array_mm2"],
                                     weights=cfg.energy.weights, sram_max_bytes=float(cfg.energy.sram_max_bytes),
                                     offchip=cfg.energy.offchip)
        decode = _decode_figures(chip)
        return cls(
            shape=shape, array=array, node=node, schedule=schedule, periphery=periphery,
            scores=_score_stage_figures(chip, scores, decode.write_rms_rad), decode=decode,
            workload=Workload(batch=cfg.energy.batch, gpu=cfg.energy.gpu, gpu_precision=cfg.energy.gpu_precision),
            sources={"p_osc_w": dev.sources.get("power_w", dev.sources.get("power", "assumed")) + " (mean over the "
                                "chip's instances where it carries a per-instance draw)",
                     "p_coupler_w": pc_src, "e_bit_write_j": ec.COUPLER_WRITE_J_PER_BIT.source,
                     "injection": inj_src, "area": area["validity"],
                     "schedule": f"{sc.kind}: {sc.tiles} tiles, {sc.rounds_per_layer} round(s) per layer, "
                                 f"{sc.programs_per_layer:g} of {U} units programmed per layer and pass "
                                 f"(mapping.compiler.schedule); {L} layers"
                                 + (f"; blocked (B = {plan.block}): {plan.rounds_per_unit} block rounds per unit on "
                                    f"tiles of {plan.tile_tokens} oscillators, block-major "
                                    f"(mapping.backends.blocking); decode: a token's keys in key blocks, "
                                    f"{plan.mean_decode_rounds:.4g} rounds per unit (ceil(t/B), mean over its "
                                    f"positions; mapping.backends.blocked_decode)" if plan.blocked else "")})


def _decode_figures(chip) -> DecodeFigures:
    """The decode keys of a chip and the phase memory's trade figures (what :mod:`mapping.energy.phase_memory`
    reads): the RMS trim residual of the banks and the RMS error of one injection (the configured
    ``[injection]``'s predicted residual; π/√3, a uniform phase, when the residual is outside the lock range)."""
    import numpy as np

    from ..periphery.injection import residual_error_rms

    cfg = chip.config
    eps = 2 * math.pi * float(np.sqrt(np.mean([np.mean(np.square(lm.freq_residual_rel)) for lm in chip.layers])))
    sigma = chip.timebase["sigma_rad_per_sqrt_cycle"]
    write = residual_error_rms(cfg.injection, eps, sigma) if eps < cfg.injection.strength else math.pi / math.sqrt(3)
    return DecodeFigures(held_keys=cfg.decode.held, inter_token_s=cfg.decode.inter_token_s if cfg.decode.held
                         else None, freq_residual_rms=eps, write_rms_rad=write)


def _score_stage_figures(chip, scores: bool, write_rms: float) -> ScoreStageFigures:
    """The score stage's figures of a chip (:mod:`mapping.backends.scores`): its compiled score array, converters
    and predicted score error when the chip measures its scores on the array; for a digital Kuramoto chip those of
    its analog what-if (the analog stage's array under the default ``[scores]`` of that mode, on the chip's own
    ``[array]``); the defaults for SSA chips (no score stage)."""
    from ..backends.scores import SCORE_STAGES, score_stage
    from ..config import AnalogScores
    from .area import score_array_area

    cfg = chip.config
    stage = score_stage(cfg)
    sc = cfg.scores if stage.on_array else AnalogScores()  # a digital chip's what-if rows: the defaults
    bits = {"adc_bits": sc.bits or ANALOG_BITS, "gate_bits": sc.gate_bits or ANALOG_BITS}
    if not scores:
        return ScoreStageFigures(**bits)
    sa = chip.score_array
    if sa is None:  # the analog what-if of a digital chip
        lm = chip.layers[0]
        what_if = cfg.replace(scores=AnalogScores())
        sa = SCORE_STAGES[AnalogScores.mode].score_array(what_if, n_layers=len(chip.layers), n_heads=lm.n_heads,
                                                         head_dim=lm.head_dim, T=lm.max_tokens)
    return ScoreStageFigures(array_mm2=score_array_area(chip, sa)["score_array_mm2"],
                             rounds_per_layer=sa.rounds_per_layer, noise=stage.score_noise(chip, write_rms), **bits)


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
