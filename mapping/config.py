"""Chip configuration: frozen, validated dataclasses, loadable from TOML.

A :class:`ChipConfig` says which device implements the oscillators, how couplings are programmed and
quantised, how long the network settles, how phases are read out, and which noise and mismatch apply. All
conversions from these physical settings to simulation units live in :mod:`mapping.units`.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from . import units
from .config_checks import _check_bits, _check_choice, _check_int, _check_pos
from .config_modes import (NODE_FLAVORS, NODE_RANGE_NM, SCHEDULES, AnalogScores, ArrayConfig, DigitalScores, HeldKeys,
                           MultiplexedArray, ReinjectedKeys, SpatialArray, array_from_dict)
from .periphery.injection import InjectionConfig

__all__ = [
    "CouplingConfig",
    "ReadoutConfig",
    "SSAConfig",
    "InjectionConfig",
    "EnergyConfig",
    "ArrayConfig",
    "SpatialArray",
    "MultiplexedArray",
    "SCHEDULES",
    "NODE_FLAVORS",
    "DigitalScores",
    "AnalogScores",
    "ReinjectedKeys",
    "HeldKeys",
    "ChipConfig",
    "load_config",
    "config_to_dict",
    "config_from_dict",
]

RESPONSES = ("cosine", "triangular")
SSA_MODES = ("pairwise", "collective")
NORM_REFERENCES = ("chip", "closed-form")
PHASE_CORRECTIONS = ("auto", "none", "two-tap")
F0_RANGE_HZ = (1e3, 1e12)
"""Accepted oscillator frequencies [Hz] (assumed envelope: kHz relaxation oscillators to sub-THz; each device
then checks its own physical range when it is rescaled, ``hw_models`` ``with_frequency``)."""
IDEAL_KAPPA_TAU = 0.01
"""κτ_s [rad] of the ideal limit (``--ideal``): first-order error ≈ 0.3 % of the increment (measured); BPC on short samples is sensitive to rare wrap crossings of the angle feed-forward, so the window is kept well inside the limit."""


@dataclass(frozen=True, kw_only=True)
class CouplingConfig:
    """Programmable couplers.

    Attributes
    ----------
    fraction : float
        Coupling strength κ as a fraction of f₀ (κ = 2π · fraction · f₀ rad/s). Range (0, 0.5].
    bits : int or None
        Coupler resolution: the programmed value A ∈ [0, range] (Kuramoto) or K r J ∈ [0, K] (SSA) is rounded
        to one of 2**bits − 1 uniform non-zero levels (plus zero). None: analog (unquantised).
    range : float
        Full-scale programmed value in units of κ (a softmax weight A ≤ 1 uses range 1). Values above clip.
    gain_bits : int or None
        Resolution of the signed receive gain (Kuramoto value gate v); None: analog.
    gain_range : float
        Largest |receive gain|; larger gates clip (sign kept).
    spread : float or None
        Relative standard deviation of the coupler strengths (mismatch, per physical coupler). None: the
        device preset's value.
    phase_correction : {'auto', 'none', 'two-tap'}
        ``auto``: ``two-tap`` on ring devices, ``none`` otherwise. ``two-tap`` (ring devices): each coupling takes the source ring from two nodes (node phases
        k(π + π/n)) with weights chosen so the first harmonic of the effective coupling function is a pure
        sine (cancelling the b₁ cos Δ term of the ring's H); doubles the couplers.
    row_scaled : bool
        Kuramoto: program each row of A relative to its largest entry (A_tu = m_t · Q(A_tu / m_t)), the row
        scale m_t folded into the oscillator's analog receive gain, so the quantiser's levels follow the row
        instead of the absolute range (a softmax row over T tokens has entries ~1/T).
    """

    fraction: float = 0.01
    bits: int | None = 6
    range: float = 1.0
    gain_bits: int | None = 8
    gain_range: float = 4.0
    spread: float | None = None
    row_scaled: bool = True
    phase_correction: str = "auto"

    def __post_init__(self):
        _check_choice("coupling.phase_correction", self.phase_correction, PHASE_CORRECTIONS)
        if not isinstance(self.row_scaled, bool):
            raise ValueError(f"coupling.row_scaled must be true or false, got {self.row_scaled!r}")
        f = _check_pos("coupling.fraction", self.fraction)
        if f > 0.5:
            raise ValueError(f"coupling.fraction must be in (0, 0.5] (fraction of f0), got {f}")
        object.__setattr__(self, "bits", _check_bits("coupling.bits", self.bits))
        object.__setattr__(self, "gain_bits", _check_bits("coupling.gain_bits", self.gain_bits))
        _check_pos("coupling.range", self.range)
        _check_pos("coupling.gain_range", self.gain_range)
        if self.spread is not None:
            s = _check_pos("coupling.spread", self.spread, allow_zero=True)
            if s >= 1:
                raise ValueError(f"coupling.spread must be in [0, 1) (relative std), got {s}")


@dataclass(frozen=True, kw_only=True)
class ReadoutConfig:
    """Phase readout: a quadrature pair of phase detectors against the reference clock.

    Attributes
    ----------
    response : {'cosine', 'triangular'}
        Detector transfer curve: a mixer (cos Δφ, sin Δφ) or an XOR-type detector (triangle waves). The phase
        is recovered by atan2 (cosine) or the diamond angle (triangular).
    noise_rad : float
        RMS noise of each detector channel for a one-cycle measurement, in units of the channel full scale
        (≈ radians of phase error near the zero crossing): white sampler noise, RMS
        noise_rad · sqrt(samples_per_cycle) per sample, averaged over the window's samples.
    bits : int or None
        ADC resolution of each averaged channel over [−1, 1] (one conversion per channel); None: unquantised.
    averaging_cycles : float
        Averaging window in cycles: Kuramoto chips read the trajectory after the couplers open at τ_s;
        SSA chips use ``ssa.averaging_cycles`` for the window and this field for the detector noise per
        one-cycle measurement only.
    samples_per_cycle : int
        Samples of the trajectory per cycle that the detector averages (1–1024).
    bandwidth_fraction : float or "none"
        First-order detector bandwidth as a fraction of f₀, (0, 0.5] (assumed 0.25: the mixer's 2 f₀
        product is filtered); "none": an ideal detector with no filter. See :mod:`mapping.periphery.readout`.
    """

    response: str = "cosine"
    noise_rad: float = 2e-3
    bits: int | None = 10
    averaging_cycles: float = 4.0
    samples_per_cycle: int = 4
    bandwidth_fraction: float | None = 0.25

    def __post_init__(self):
        _check_choice("readout.response", self.response, RESPONSES)
        _check_pos("readout.noise_rad", self.noise_rad, allow_zero=True)
        object.__setattr__(self, "bits", _check_bits("readout.bits", self.bits))
        _check_pos("readout.averaging_cycles", self.averaging_cycles)
        _check_int("readout.samples_per_cycle", self.samples_per_cycle, 1, 1024)
        b = self.bandwidth_fraction
        if isinstance(b, str) and b.lower() == "none":
            object.__setattr__(self, "bandwidth_fraction", None)
        elif b is not None:
            v = _check_pos("readout.bandwidth_fraction", b)
            if v > 0.5:
                raise ValueError(f"readout.bandwidth_fraction must be in (0, 0.5] (fraction of f0) or 'none', "
                                 f"got {b!r}")


@dataclass(frozen=True, kw_only=True)
class SSAConfig:
    """How SSA layers run on the chip.

    Attributes
    ----------
    mode : {'pairwise', 'collective'}
        ``pairwise``: one Adler cell (two oscillators) per query–key pair, exact in the limit.
        ``collective``: SSA-1D only, one oscillator per token and head, all-to-all coupling.
    settle_cycles : float
        Transient discarded before averaging, in cycles.
    averaging_cycles : float
        Window over which ⟨cos φ⟩ is averaged, in cycles.
    steps_per_cycle : int
        Integration steps per cycle.
    """

    mode: str = "pairwise"
    settle_cycles: float = 50.0
    averaging_cycles: float = 400.0
    steps_per_cycle: int = 4

    def __post_init__(self):
        _check_choice("ssa.mode", self.mode, SSA_MODES)
        _check_pos("ssa.settle_cycles", self.settle_cycles, allow_zero=True)
        _check_pos("ssa.averaging_cycles", self.averaging_cycles)
        _check_int("ssa.steps_per_cycle", self.steps_per_cycle, 1, 10_000)


@dataclass(frozen=True, kw_only=True)
class EnergyConfig:
    """How energy is reported (mapping.energy; DESIGN §5.5), and the periphery's precision (which the fidelity run
    simulates); the fidelity run depends on nothing else here but the phase (decode pass).

    Attributes
    ----------
    digital_precision : {'int8', 'int16', 'fp16', 'fp32'}
        Arithmetic of the chip's digital periphery, charged at the chip's node, and simulated by the fidelity
        run at the same precision (the attention's projections, gates, queries, keys, scores and softmax:
        :mod:`mapping.periphery.precision`); a chip choice a design study may search.
    gpu : {'A100-SXM', 'H100-SXM', 'H200'}
        GPU the chip is compared with.
    gpu_precision : {'bf16', 'fp32', 'int8'}
        Precision of the GPU's FLOP figure; bytes are counted at the same precision.
    gpu_bound : {'lower', 'upper'}
        Which GPU bound the headline ``energy_per_token_gpu_j`` uses (both are always reported).
    phase : {'prefill', 'decode'}
        The pass the headline reports (both are always reported): prefill (T tokens of a sequence at once)
        or autoregressive decoding (one new token against the stored phases). On the phase macromodel the
        fidelity run simulates the same pass (decode: :mod:`mapping.backends.decode`), so the BPC and the
        headline describe one pass.
    batch : int
        Sequences that share one fetch of the weights (amortises weight traffic), in [1, 65536].
    weights : {'streamed', 'stationary'}
        Where the periphery reads its weights (:mod:`mapping.energy.sram`): 'streamed' (default) from the global
        SRAM's weight buffer for every use; 'stationary' from local stores beside the MACs (one small CACTI 7
        macro per MAC holding its share of the on-die weights), cheaper per access, charged their area and
        leakage. The digital baseline of the same die uses the same choice.
    sram_max_bytes : int
        The die's on-die SRAM capacity [bytes], in [4096, 2^40]; default 4 MiB (assumed:
        :data:`mapping.energy.constants.SRAM_MAX_BYTES`). Buffers beyond it go off chip, the stored keys first,
        then the weights, charged at ``offchip``'s energy per bit; the die holds at most this much SRAM.
    offchip : {'hbm', 'ddr'}
        The chip's off-chip memory: 'hbm' (HBM2, 3.9 pJ/bit, [OCo17], the GPU's figure) or 'ddr' (20.3 pJ/bit,
        [Hor14]).
    """

    digital_precision: str = "int16"
    gpu: str = "H100-SXM"
    gpu_precision: str = "bf16"
    gpu_bound: str = "lower"
    phase: str = "prefill"
    batch: int = 1
    weights: str = "streamed"
    sram_max_bytes: int = 4 * 2**20
    offchip: str = "hbm"

    def __post_init__(self):
        _check_choice("energy.digital_precision", self.digital_precision, ("int8", "int16", "fp16", "fp32"))
        _check_choice("energy.gpu", self.gpu, ("A100-SXM", "H100-SXM", "H200"))
        _check_choice("energy.gpu_precision", self.gpu_precision, ("bf16", "fp32", "int8"))
        _check_choice("energy.gpu_bound", self.gpu_bound, ("lower", "upper"))
        _check_choice("energy.phase", self.phase, ("prefill", "decode"))
        _check_int("energy.batch", self.batch, 1, 65536)
        _check_choice("energy.weights", self.weights, ("streamed", "stationary"))
        _check_int("energy.sram_max_bytes", self.sram_max_bytes, 4096, 2**40)
        _check_choice("energy.offchip", self.offchip, ("hbm", "ddr"))


@dataclass(frozen=True, kw_only=True)
class ChipConfig:
    """A complete chip configuration.

    Attributes
    ----------
    device : str
        The chip device implementing the oscillators, a name registered in :mod:`hw_models.devices`
        (:func:`~hw_models.devices.device_names`): ``ideal`` (a pure Kuramoto phase oscillator),
        ``ring-macromodel`` (the 65 nm rings' phase macromodel), ``ring-circuit`` (every Kuramoto layer as
        node-voltage SDEs of the same rings and their transconductance couplers, :mod:`mapping.backends.circuit`;
        SSA is refused on it), ``spin-torque``, or a plug-in's.
    f0_hz : float or None
        Nominal oscillation frequency [Hz]; None: the preset's.
    temperature_k : float
        Temperature [K]; thermal phase diffusion scales linearly with it.
    noise : bool
        Device phase noise and readout noise on/off (quantisation stays as configured).
    mismatch : bool
        Device mismatch (frequency and coupler spread) on/off.
    mismatch_seed : int
        Seed of the one mismatch draw made when the chip is compiled.
    settle_cycles : float
        Kuramoto settle window τ_s in cycles; κ τ_s = 2π · coupling.fraction · settle_cycles.
    steps_per_cycle : int
        Integration steps per cycle of the Kuramoto settle window (at least 4 steps per window are used).
    trim_bits : int or None
        Resolution of the per-oscillator frequency trim (calibration DAC over ±4σ of the frequency spread);
        None: no trim (the full mismatch remains).
    norm_reference : {'chip', 'closed-form'}
        Where the norm-matching bound B takes ‖a‖ from: a second, unit-gain oscillator bank on the chip
        (``chip``, doubles the Kuramoto arrays) or the digital closed form (``closed-form``). Unused with the
        tanh bound.
    calibration_temperature_k : float or None
        Temperature [K] at which the frequency trim was set; the run at ``temperature_k`` adds the drift
        f₀(T)/f₀(T_cal) − 1 to every oscillator's residual (:mod:`mapping.periphery.drift`). None: trimmed at
        ``temperature_k``.
    stno_model : {'auto', 'phase', 'amplitude'}
        Spin-torque chips: ``phase`` the phase macromodel, ``amplitude`` the complex-amplitude network
        (Kuramoto chips), ``auto`` the phase model only where its reduction is valid (settle window of several
        1/Γ_p, coupling ≪ Γ_p; :mod:`mapping.backends.stno`). Ignored by other devices.
    flicker : bool
        1/f drain-current noise at every ring node in the circuit model (``ring-circuit`` only, with ``noise``):
        the OU bank of :func:`hw_models.cmos_65nm_flicker` (1 MHz corner, assumed; band 1 kHz–100 MHz, 11
        processes per node) integrated with the node SDEs (:mod:`mapping.backends.circuit`). Default false, as the
        macromodel chips, which have no flicker process.
    node_nm : float
        CMOS technology node [nm] of the chip's logic: the ring oscillators unless ``device_node_nm`` sizes
        them apart (their circuit ported to the node, :meth:`hw_models.devices.RingOscillator.at_node`), couplers,
        converters, SRAM, wires, the digital periphery and leakage scale with it (:mod:`hw_models.technology`; fits 7–180 nm, 65, 45, 28, 22, 16 and
        7 nm tabulated or interpolated; outside the fits a warning). 65: the node of the cited ring chips
        [Lo23, Moy22, Ahm21] and of the ring model card.
    device_node_nm : float or None
        The sizing of the oscillators and couplers: the CMOS node [nm] their circuit is drawn at, apart from the
        logic node ``node_nm`` of the periphery, SRAM and converters (docs/devices.md, "Sizing"). A ring's
        circuit is the 65 nm model card ported to this node (:meth:`hw_models.devices.Oscillator.at_node`), so
        its f₀, power, phase noise (kT/C through the PPV/ISF) and mismatch (Pelgrom on its gate area) follow
        from the circuit model; its inverters, load capacitors and the couplers' unit cells are drawn at it,
        their configuration latches at ``node_nm``. At least ``node_nm`` (a die draws no device finer than its
        own node); 65 on a 28 nm die: the ring at its card's size. None (default): ``node_nm`` (every ring
        shrunk with the logic, the rule before this field). Devices without a CMOS model card (ideal,
        spin-torque) have no sizing.
    context_tokens : int or None
        The workload's context length T [tokens]: the arrays are built for it and a run's windows hold it (the
        Kuramoto model's positions are rotations ω t, defined at any t, so a model runs past the length it was
        trained at), in [2, 2^20]. None/'none' (the default): the model's ``seq_len``. Past one tile's couplers
        see ``[array] block``; a die past ``[array] die_limit_mm2`` is reported infeasible.
    node_flavor : {'LP', 'HP'}
        Device flavour below 65 nm (low standby power or high performance; [SB17] fits) and the off-current of
        the leakage at every node. 'LP': an inference chip that idles between windows (assumed).
    coupling, readout, ssa, energy : CouplingConfig, ReadoutConfig, SSAConfig, EnergyConfig
    scores : DigitalScores or AnalogScores
        Where the Kuramoto scores are computed (``[scores] mode``): the digital periphery or the oscillators.
    decode : ReinjectedKeys or HeldKeys
        How a decoded token's earlier phases reach the array (``[decode] keys``): re-injected from SRAM or held
        in running oscillators.
    injection : InjectionConfig
        How token phases are written (:mod:`mapping.periphery.injection`): ``ideal`` or Adler injection locking.
    array : SpatialArray or MultiplexedArray
        The physical array and the schedule (:class:`ArrayConfig`); default a 16-tile multiplexed array: for
        kuramoto-tiny (512 units of 128 oscillators) a die of about 36 mm² at 65 nm, under the 50 mm² a research
        team tapes out (docs/design.md, "The default chip").
    """

    device: str = "ring-macromodel"
    f0_hz: float | None = None
    temperature_k: float = 300.0
    noise: bool = True
    mismatch: bool = True
    mismatch_seed: int = 0
    settle_cycles: float = 4.0
    steps_per_cycle: int = 4
    trim_bits: int | None = 8
    norm_reference: str = "chip"
    calibration_temperature_k: float | None = None
    stno_model: str = "auto"
    flicker: bool = False
    node_nm: float = 65.0
    device_node_nm: float | None = None
    node_flavor: str = "LP"
    context_tokens: int | None = None
    coupling: CouplingConfig = field(default_factory=CouplingConfig)
    readout: ReadoutConfig = field(default_factory=ReadoutConfig)
    ssa: SSAConfig = field(default_factory=SSAConfig)
    injection: InjectionConfig = field(default_factory=InjectionConfig)
    energy: EnergyConfig = field(default_factory=EnergyConfig)
    array: ArrayConfig = field(default_factory=MultiplexedArray)
    scores: DigitalScores | AnalogScores = field(default_factory=DigitalScores)
    decode: ReinjectedKeys | HeldKeys = field(default_factory=ReinjectedKeys)

    @property
    def sizing_node_nm(self) -> float:
        """The node [nm] the oscillators and couplers are drawn at: ``device_node_nm``, else ``node_nm``."""
        return self.node_nm if self.device_node_nm is None else self.device_node_nm

    def __post_init__(self):
        from hw_models.devices.registry import device_names, device_spec

        _check_choice("device", self.device, device_names())
        node = _check_pos("node_nm", self.node_nm)
        if not NODE_RANGE_NM[0] <= node <= NODE_RANGE_NM[1]:
            raise ValueError(f"node_nm must be in [{NODE_RANGE_NM[0]:g}, {NODE_RANGE_NM[1]:g}] nm (the technology "
                             f"fits cover 7-180 nm), got {self.node_nm!r}")
        object.__setattr__(self, "node_nm", node)
        if isinstance(self.device_node_nm, str) and self.device_node_nm.lower() == "none":
            object.__setattr__(self, "device_node_nm", None)
        if self.device_node_nm is not None:
            dn = _check_pos("device_node_nm", self.device_node_nm)
            if not max(node, NODE_RANGE_NM[0]) <= dn <= NODE_RANGE_NM[1]:
                raise ValueError(f"device_node_nm must be in [node_nm = {node:g}, {NODE_RANGE_NM[1]:g}] nm (a die draws "
                                 f"no device finer than its own node) or 'none' (the logic node), got "
                                 f"{self.device_node_nm!r}")
            object.__setattr__(self, "device_node_nm", dn)
        _check_choice("node_flavor", self.node_flavor, NODE_FLAVORS)
        if isinstance(self.context_tokens, str) and self.context_tokens.lower() == "none":
            object.__setattr__(self, "context_tokens", None)
        if self.context_tokens is not None:
            _check_int("context_tokens", self.context_tokens, 2, 2**20)
        if not isinstance(self.array, ArrayConfig) or type(self.array) is ArrayConfig:
            raise ValueError(f"array must be one of {', '.join(c.__name__ for c in SCHEDULES.values())}, got "
                             f"{type(self.array).__name__}")
        if self.f0_hz is not None:
            f0 = _check_pos("f0_hz", self.f0_hz)
            if not F0_RANGE_HZ[0] <= f0 <= F0_RANGE_HZ[1]:
                raise ValueError(f"f0_hz must be in [{F0_RANGE_HZ[0]:g}, {F0_RANGE_HZ[1]:g}] Hz (None: the preset's), "
                                 f"got {self.f0_hz!r}")
        t = _check_pos("temperature_k", self.temperature_k)
        if t > 1000:
            raise ValueError(f"temperature_k must be in (0, 1000] K, got {t}")
        for name in ("noise", "mismatch", "flicker"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if isinstance(self.mismatch_seed, bool) or not isinstance(self.mismatch_seed, int) or self.mismatch_seed < 0:
            raise ValueError(f"mismatch_seed must be a non-negative integer, got {self.mismatch_seed!r}")
        _check_pos("settle_cycles", self.settle_cycles)
        _check_int("steps_per_cycle", self.steps_per_cycle, 1, 10_000)
        object.__setattr__(self, "trim_bits", _check_bits("trim_bits", self.trim_bits))
        _check_choice("norm_reference", self.norm_reference, NORM_REFERENCES)
        _check_choice("stno_model", self.stno_model, ("auto", "phase", "amplitude"))
        if self.flicker and not device_spec(self.device).node_noise:
            at_node = " or ".join(repr(n) for n in device_names() if device_spec(n).node_noise)
            raise ValueError(f"flicker = true is simulated at circuit level only (device = {at_node}); the "
                             f"{self.device!r} chip has no flicker process (set flicker = false)")
        if isinstance(self.calibration_temperature_k, str) and self.calibration_temperature_k.lower() == "none":
            object.__setattr__(self, "calibration_temperature_k", None)
        if self.calibration_temperature_k is not None:
            tc = _check_pos("calibration_temperature_k", self.calibration_temperature_k)
            if not 1 <= tc <= 1000:
                raise ValueError(f"calibration_temperature_k must be in [1, 1000] K or 'none', got {tc}")
        for name, cls in (("coupling", CouplingConfig), ("readout", ReadoutConfig), ("ssa", SSAConfig),
                          ("injection", InjectionConfig), ("energy", EnergyConfig)):
            if not isinstance(getattr(self, name), cls):
                raise ValueError(f"{name} must be a {cls.__name__}, got {type(getattr(self, name)).__name__}")
        for name, (_, modes) in _MODE_SECTIONS.items():
            if not isinstance(getattr(self, name), tuple(modes.values())):
                raise ValueError(f"{name} must be one of {', '.join(c.__name__ for c in modes.values())}, got "
                                 f"{type(getattr(self, name)).__name__}")

    # -- derived quantities (units in one place: mapping.units) --------------------------------------------
    @property
    def kappa(self) -> float:
        """κ in rad per cycle."""
        return units.coupling_rad_per_cycle(self.coupling.fraction)

    @property
    def kappa_tau(self) -> float:
        """κ τ_s [rad]."""
        return units.kappa_tau(self.coupling.fraction, self.settle_cycles)

    def with_kappa_tau(self, kt: float) -> "ChipConfig":
        """A copy whose settle window gives κ τ_s = kt at the same coupling fraction."""
        return dataclasses.replace(self, settle_cycles=units.settle_cycles_for_kappa_tau(kt, self.coupling.fraction))

    def replace(self, **changes) -> "ChipConfig":
        """A copy with top-level fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def idealised(self, kappa_tau: float | None = IDEAL_KAPPA_TAU) -> "ChipConfig":
        """The ideal limit of this configuration: ideal devices, no noise, no mismatch, unquantised couplings,
        gains, readout and digital periphery (``energy.digital_precision = "fp32"``), and a settle window no longer than κτ_s = ``kappa_tau`` (the first-order limit;
        None keeps the window). The coupling fraction is kept."""
        base = self
        if kappa_tau is not None and self.kappa_tau > kappa_tau:
            base = self.with_kappa_tau(kappa_tau)
        return dataclasses.replace(
            base,
            device="ideal",
            noise=False,
            flicker=False,
            mismatch=False,
            trim_bits=None,
            coupling=dataclasses.replace(self.coupling, bits=None, gain_bits=None, gain_range=1e6, range=1e6),
            readout=dataclasses.replace(self.readout, noise_rad=0.0, bits=None, bandwidth_fraction=None),
            scores=self.scores.idealised(),
            energy=dataclasses.replace(self.energy, digital_precision="fp32"),
        )

    @classmethod
    def ideal(cls, **changes) -> "ChipConfig":
        """Deprecated: ``ChipConfig().idealised()`` (one name for the ideal chip; ``.replace(...)`` for changes)."""
        import warnings

        warnings.warn("ChipConfig.ideal() is deprecated: use ChipConfig().idealised() (and .replace(...) for "
                      "changes)", DeprecationWarning, stacklevel=2)
        return dataclasses.replace(cls().idealised(), **changes)


_SECTIONS = {"coupling": CouplingConfig, "readout": ReadoutConfig, "ssa": SSAConfig, "injection": InjectionConfig,
             "energy": EnergyConfig}
_MODE_SECTIONS = {"scores": ("mode", {"digital": DigitalScores, "analog": AnalogScores}),
                  "decode": ("keys", {"reinjected": ReinjectedKeys, "held": HeldKeys})}
"""Sections whose mode is a class (STYLE 5): section -> (the key naming the mode, mode -> class)."""


def _build_mode(section: str, data: dict):
    """The mode class of ``[section]`` named by its mode key (default: the first mode), refusing a field that
    belongs to another mode with the mode it belongs to."""
    key, modes = _MODE_SECTIONS[section]
    mode = data.get(key, next(iter(modes)))
    if mode not in modes:
        raise ValueError(f"{section}.{key} must be one of {', '.join(modes)}; got {mode!r}")
    cls = modes[mode]
    own = {f.name for f in dataclasses.fields(cls)}
    for other, ocls in modes.items():
        alien = sorted(set(data) & ({f.name for f in dataclasses.fields(ocls)} - own))
        if alien:
            raise ValueError(f"{', '.join(f'{section}.{a}' for a in alien)} belong(s) to [{section}] {key} = "
                             f"{other!r}, not {mode!r}")
    return _build(cls, data, f"[{section}] ({key} = {mode!r})")


def _build(cls, data: dict, where: str):
    valid = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - valid)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} in {where}; valid: {', '.join(sorted(valid))}")
    return cls(**data)


def config_from_dict(data: dict) -> ChipConfig:
    """Build a :class:`ChipConfig` from a nested dict (the TOML/JSON layout), rejecting unknown keys."""
    if not isinstance(data, dict):
        raise ValueError(f"chip config must be a table/dict, got {type(data).__name__}")
    top = dict(data)
    for key, cls in _SECTIONS.items():
        if key in top:
            sub = top[key]
            if not isinstance(sub, dict):
                raise ValueError(f"[{key}] must be a table, got {sub!r}")
            sub = dict(sub)
            if isinstance(sub.get("spread"), str) and key == "coupling" and sub["spread"].lower() == "none":
                sub["spread"] = None  # TOML has no null
            if key == "energy" and "analog_scores" in sub:
                raise ValueError("energy.analog_scores is gone: the analog-score mode is simulated now, a chip "
                                 "choice rather than an energy flag; set [scores] mode = \"analog\" (or remove "
                                 "the field for digital scores)")
            top[key] = _build(cls, sub, f"[{key}]")
    for key in _MODE_SECTIONS:
        if key in top:
            if not isinstance(top[key], dict):
                raise ValueError(f"[{key}] must be a table, got {top[key]!r}")
            top[key] = _build_mode(key, dict(top[key]))
    for key in ("f0_hz", "trim_bits"):
        if isinstance(top.get(key), str) and top[key].lower() == "none":
            top[key] = None
    if "array" in top:
        top["array"] = array_from_dict(top["array"])
    return _build(ChipConfig, top, "the chip config (top level)")


def config_to_dict(config: ChipConfig) -> dict:
    """Nested plain-dict form of a config (``None`` kept; JSON-serialisable); ``array`` carries its
    ``schedule``."""
    d = dataclasses.asdict(config)
    d["array"] = config.array.to_dict()
    return d


def read_toml(path: str | Path, what: str, build):
    """``build(data)`` of the TOML file ``path``; a missing file, bad TOML or a refused field is an error that
    names ``what`` (e.g. "chip config") and the file."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what} {path} is a directory, not a TOML file")
    if not path.is_file():
        raise FileNotFoundError(f"{what} {path} does not exist")
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{what} {path} is not valid TOML: {exc}") from None
    try:
        return build(data)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{what} {path}: {exc}") from None


def load_config(path: str | Path) -> ChipConfig:
    """Load a :class:`ChipConfig` from a TOML file (see ``examples/chip.toml``).

    Use the string ``"none"`` for an optional field that should be None (TOML has no null).
    """
    return read_toml(path, "chip config", config_from_dict)
