"""The ``ring-circuit`` backend: every Kuramoto layer as node-voltage SDEs of its rings and couplers.

The physics (rings, two-tap transconductors, mismatch, calibration, trim, injection, readout) is
:mod:`hw_models.coupled_rings`, built from the chip's own :class:`hw_models.RingOscillator`. This module is the
chip's side: it programs the same couplers and gains as the phase macromodel
(:func:`mapping.periphery.programming.program_kuramoto`), with the chip's coupler spread, residual frequency
errors and a circuit mismatch draw per layer (seed ``[mismatch_seed, layer, 3]``; rings shared by the B
sequences are calibrated once per layer and run, in the settings ``prepare`` builds); it keys the thermal noise of network (sequence, bank, head,
coordinate) as the macromodel does; and it forms the same periphery estimate from the read phases.

Programming: C_{t,u} = κ Q_c(A_{t,u}) Q_g(v_t) (1 + δ_{t,u}) [rad/cycle] is realised by g_m,{t,u} =
f₀ |C_{t,u}| / a₁, a₁ [rad/s per S] the first sine harmonic of the two-tap coupling function, so both rungs
program the same physical coupling strength. The ring's frequency trim is a load trim set so that the ring's
residual frequency error equals the chip's recorded post-trim residual ``freq_residual_rel`` (the draw the
macromodel uses). Phases are written by ideal placement on each ring's own limit cycle or, with
``[injection] mode = "injected"``, by a circuit-level injection transient; they are read through the chip's
detector chain (:func:`mapping.periphery.readout.read_free_running`) from the line fitted through the
free-running crossings after τ_s.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from hw_models.coupled_rings import (DEFAULT_STEPS_PER_PERIOD, CircuitHead, build_head, calibrate_rings,
                                     circuit_device, draw_circuit_mismatch, inject_rings, reference_offset_injected,
                                     simulate_heads)

from ..periphery.programming import program_kuramoto
from ..periphery.readout import PhaseReadout, chip_readout, read_free_running, wrap
from ..seeds import PURPOSE, LayerSeeds, stream_seeds
from .base import Description, KuramotoInputs, KuramotoOutput
from .kuramoto import KuramotoBackend, increment_estimate, ring_only
from .registry import register

__all__ = ["RingCircuit", "CircuitSettings", "circuit_step", "circuit_chip_step", "layer_head", "periphery",
           "circuit_flicker", "circuit_summary", "chip_circuit_device"]


def chip_circuit_device(chip):
    """The circuit device of a chip: its own ring (``chip.device.oscillator``) at the chip's temperature."""
    return circuit_device(chip.device.oscillator, float(chip.config.temperature_k))


def circuit_flicker():
    """The node flicker bank of a ``flicker = true`` chip: :func:`hw_models.cmos_65nm_flicker` (1 MHz corner,
    assumed from Hansen 2009; band 1 kHz–100 MHz, 2 OU processes per decade, 11 per node)."""
    from hw_models.flicker import cmos_65nm_flicker

    return cmos_65nm_flicker()


def circuit_summary(config) -> str:
    """Lines of :meth:`mapping.Chip.summary` for a ``ring-circuit`` chip's flicker and injection (empty if off)."""
    out = ""
    if config.flicker and config.noise:
        fl = circuit_flicker()
        out += (f"\nflicker: 1/f drain-current noise at every ring node, corner {fl.corner_hz:.3g} Hz (assumed), "
                f"{fl.n_processes} OU currents per node over {fl.f_min_hz:.3g}-{fl.f_max_hz:.3g} Hz")
    if config.injection.injected:
        inj = config.injection
        out += (f"\nphase write: injection transient at circuit level, {inj.cycles:g} cycles at K = "
                f"{inj.strength:.3g} rad/cycle (reference current into node 0; includes the release error)")
    return out


def _check_rule(chip, dev) -> None:
    """The compiled coupling rule (mapping.compiler, from hw_models' coupler objects) and the circuit's own
    two-tap transconductor must be the same circuit; refuse a chip whose rule this circuit does not build."""
    rule = chip.coupling_rule or {}
    cp = rule.get("coupler") or {}
    if cp and cp.get("kind") not in (None, "transconductance"):
        raise ValueError(f"the circuit rung builds unilateral transconductance couplers; this chip's coupling rule "
                         f"uses {cp.get('kind')!r}")
    if float((cp.get("params") or {}).get("g_out_s", 0.0) or 0.0) != 0.0:
        raise ValueError("the circuit rung models an ideal transconductor output (g_out_s = 0); this chip's "
                         f"coupler has g_out_s = {cp['params']['g_out_s']} S")
    if rule.get("taps") == 2:
        if int(rule["tap_node"]) != dev.tap_node or not np.allclose(rule["weights"], dev.weights, rtol=1e-6):
            raise ValueError(f"the chip's two-tap rule (node {rule['tap_node']}, weights {rule['weights']}) differs "
                             f"from the circuit's (node {dev.tap_node}, weights {list(dev.weights)})")
    elif rule.get("phase_correction") == "none":
        raise ValueError("the circuit rung is built with the two-tap correction; compile with "
                         "coupling.phase_correction = 'auto' or 'two-tap'")


def layer_head(chip, layer: int, theta, A, v, *, reference_bank: bool = True, noise: bool | None = None,
               steps_per_period: int = DEFAULT_STEPS_PER_PERIOD, coordinates=None, heads=None,
               theta_offset=None, calibrations: dict | None = None) -> tuple:
    """The circuit networks of one Kuramoto layer (or of some heads / coordinates of it) for inputs θ, A, v.

    One network per (bank, sequence, head, coordinate), in that order; the chip's coupler quantisation,
    receive-gain quantisation, coupler spread, residual frequency errors and the circuit mismatch of layer
    ``layer`` (seed ``[mismatch_seed, layer, 3]``); rings shared by the B sequences are calibrated once, kept in
    ``calibrations`` (a dict the caller keeps across batches; None: a fresh one).

    Returns (head, meta); meta holds what the periphery needs (``gains`` per bank (B, hs, cs, T), ``Aq``
    (B, h, T, T), ``heads``, ``coords``, ``shape`` (nb, B, hs, cs, T)).
    """
    cfg = chip.config
    lm = chip.layers[layer]
    theta = np.asarray(theta, dtype=np.float64)
    A = np.asarray(A, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    B, T, k = theta.shape
    h, kh = lm.n_heads, lm.head_dim
    if T > lm.max_tokens:
        raise ValueError(f"sequence of {T} tokens is longer than the chip's arrays ({lm.max_tokens})")
    if A.shape != (B, h, T, T) or v.shape != theta.shape or k != h * kh:
        raise ValueError(f"shapes: theta {theta.shape}, A {A.shape}, v {v.shape} do not fit the layer "
                         f"({h} heads x {kh} coordinates)")
    if reference_bank and lm.banks < 2:
        raise ValueError("reference_bank: this chip has no unit-gain bank (norm_reference = 'closed-form')")
    dev = chip_circuit_device(chip)
    _check_rule(chip, dev)
    noise = cfg.noise if noise is None else bool(noise)
    nb = 2 if reference_bank else 1
    heads = list(range(h)) if heads is None else [int(x) for x in heads]
    coords = list(range(kh)) if coordinates is None else [int(x) for x in coordinates]
    for name, vals, hi in (("heads", heads, h), ("coordinates", coords, kh)):
        if not vals or min(vals) < 0 or max(vals) >= hi:
            raise ValueError(f"{name} must be non-empty indices in [0, {hi - 1}], got {vals}")
    th = theta.reshape(B, T, h, kh).transpose(0, 2, 3, 1)  # (B, h, kh, T)
    Aq, g = program_kuramoto(A, v, n_heads=h, coupling_q=lm.coupling_quantiser, gain_q=lm.gain_quantiser,
                             row_scaled=cfg.coupling.row_scaled)
    cg = lm.coupler_gain() if lm.coupler_spread_rel > 0 else None
    resid = lm.freq_residual_rel if cfg.mismatch else None
    hs, cs = len(heads), len(coords)
    sel = np.ix_(range(B), heads, coords)
    blocks, theta0s, gains = [], [], []
    for bank in range(nb):
        gb = g if bank == 0 else np.ones_like(g)
        Cb = cfg.kappa * Aq[:, :, None] * gb[..., None]  # (B, h, kh, T, T)
        if cg is not None:
            Cb = Cb * cg[bank][None, :, :, :T, :T]
        blocks.append(Cb[sel].reshape(-1, T, T))
        theta0s.append(th[sel].reshape(-1, T))
        gains.append(gb[sel])
    Cs = np.concatenate(blocks)
    th0 = np.concatenate(theta0s)
    if theta_offset is not None:  # placement phases differ from the token phases (injection error)
        th0 = th0 + np.asarray(theta_offset, float).reshape(th0.shape)
    stochastic = bool(noise)
    res_g = mm_g = cal = cal_idx = None
    if cfg.mismatch:
        # the physical rings (bank, head, coordinate, token) are shared by the B sequences
        phys = lambda a: a[:nb][:, heads][:, :, coords][:, :, :, :T]  # noqa: E731
        res_g = np.broadcast_to(phys(resid)[:, None], (nb, B, hs, cs, T)).reshape(-1, T)
        mm = draw_circuit_mismatch(dev, tuple(lm.oscillator_shape), [cfg.mismatch_seed, layer, 3])
        mm_g = tuple(np.broadcast_to(phys(a)[:, None], (nb, B, hs, cs, T, a.shape[-1])).reshape(-1, T, a.shape[-1])
                     for a in mm)
        key = (layer, nb, tuple(heads), tuple(coords), T, int(steps_per_period), stochastic)
        store = {} if calibrations is None else calibrations
        if key not in store:
            n = dev.ring.n_stages
            c0 = dev.ring.c_load_f * (1.0 + phys(mm[2]))
            store[key] = calibrate_rings(dev, phys(mm[0]).reshape(-1, n), phys(mm[1]).reshape(-1, n),
                                         c0.reshape(-1, n), dev.period_s / int(steps_per_period), stochastic)
        cal = store[key]
        cal_idx = np.broadcast_to(np.arange(nb * hs * cs * T).reshape(nb, 1, hs, cs, T), (nb, B, hs, cs, T)).reshape(-1)
    flicker = circuit_flicker() if cfg.flicker and noise else None
    head = build_head(dev, th0, Cs, steps_per_period=steps_per_period, stochastic=stochastic,
                      freq_residual_rel=res_g, mismatch=mm_g, noise=noise, calibration=cal,
                      calibration_index=cal_idx, flicker=flicker)
    meta = {"gains": gains, "Aq": Aq, "heads": heads, "coords": coords, "shape": (nb, B, hs, cs, T), "k": k,
            "n_heads": h, "head_dim": kh}
    return head, meta


def periphery(chip, head: CircuitHead, meta: dict, psi) -> list:
    """The periphery's increment estimate per bank, (B, T, k) each (NaN where not simulated), from read phases
    ψ̂ (G, T): x̂ = wrap(ψ̂ − θ₀)/(κτ_s) − (H(0)/a₁) g_t Σ_u Q(A_{t,u}) (known offset of the programmed couplers)."""
    dev = head.device
    nb, B, hs, cs, T = meta["shape"]
    h, kh, k = meta["n_heads"], meta["head_dim"], meta["k"]
    dth = wrap(np.asarray(psi) - head.theta0).reshape(nb, B, hs, cs, T)
    kt = chip.config.kappa_tau
    Aq_sel = meta["Aq"][:, meta["heads"]]  # (B, hs, T, T)
    est = []
    for bank in range(nb):
        x = increment_estimate(dth[bank], kt, dev.offset_norm, meta["gains"][bank], Aq_sel)
        full = np.full((B, h, kh, T), np.nan)
        full[np.ix_(range(B), meta["heads"], meta["coords"])] = x
        est.append(full.transpose(0, 3, 1, 2).reshape(B, T, k))
    return est


def injection_start_errors(chip, layer: int, seed: int, sequence_ids, meta: dict) -> np.ndarray:
    """ψ₀ (G, T) [rad] of every ring of a circuit head before injection: the same uniform draw per
    (sequence, bank) as the macromodel chip's (:func:`mapping.periphery.injection.layer_initial_errors`, stream
    ``[key, 0x1A7]``), so both rungs start the write from the same phases."""

    nb, B, hs, cs, T = meta["shape"]
    lm = chip.layers[layer]
    h, kh = lm.n_heads, lm.head_dim
    out = np.empty((nb, B, hs, cs, T))
    hi, ci = np.asarray(meta["heads"]), np.asarray(meta["coords"])
    for bank in range(nb):
        for b, sid in enumerate(np.asarray(sequence_ids)):
            key = int(stream_seeds(int(seed), PURPOSE["injection"], int(sid), bank)) % 2**63
            full = np.random.default_rng([key, 0x1A7]).uniform(-np.pi, np.pi, (h * kh, T)).reshape(h, kh, T)
            out[bank, b] = full[np.ix_(hi, ci, range(T))]
    return out.reshape(-1, T)


@dataclass(frozen=True, kw_only=True)
class CircuitSettings:
    """What one layer's circuit step reads besides the chip (built by :meth:`RingCircuit.prepare`).

    Attributes
    ----------
    chip, layer : the compiled chip and the layer's index.
    readout : PhaseReadout or None
        Detector noise and ADC applied to the circuit-read phase (None: ideal detector).
    reference_bank : bool
        Also run the unit-gain bank (â).
    noise : bool or None
        Thermal node noise (None: the chip config's ``noise``).
    steps_per_period : int
    coordinates, heads : sequences of int or None
        Run only these coordinates / heads (others are returned as NaN); for comparisons.
    injection : bool or None
        Write the token phases by a circuit-level injection transient (``[injection]`` cycles and strength of
        the chip, start errors ψ₀ the same uniform draw per (sequence, bank) as the macromodel chip's, thermal
        noise keyed per network). None: the chip's ``injection.mode``.
    initial_phase_error : (banks, B, h, k_h, T) or None
        Phase error left by an injection modelled elsewhere (e.g. the closed form of
        :mod:`mapping.periphery.injection`): rings start at θ + error. Not combined with ``injection``.
    waveforms : bool
        Keep node 0 of every ring over the settle and readout windows (``KuramotoOutput.waveforms``; plots).
    calibrations : dict
        The layer's ring calibrations (each ring run alone with the chip's integrator), computed at the first
        step and reused by the later ones: the physical rings are the same for every batch.
    """

    chip: object
    layer: int
    readout: PhaseReadout | None = None
    reference_bank: bool = True
    noise: bool | None = None
    steps_per_period: int = DEFAULT_STEPS_PER_PERIOD
    coordinates: object = None
    heads: object = None
    injection: bool | None = None
    initial_phase_error: object = None
    waveforms: bool = False
    calibrations: dict = field(default_factory=dict, compare=False, repr=False)


def _start(st: CircuitSettings, inp: KuramotoInputs):
    """The head (placed at θ + error when an injection error is given, the periphery keeping θ) and its meta."""
    kw = dict(reference_bank=st.reference_bank, noise=st.noise, steps_per_period=st.steps_per_period,
              coordinates=st.coordinates, heads=st.heads, calibrations=st.calibrations)
    head, meta = layer_head(st.chip, st.layer, inp.theta, inp.A, inp.v, **kw)
    if st.initial_phase_error is not None:
        # injection leaves each ring at θ + error; the periphery still subtracts the intended θ
        err = np.asarray(st.initial_phase_error, float)[:meta["shape"][0]][:, :, meta["heads"]][:, :, :, meta["coords"]]
        intended = head.theta0
        head, meta = layer_head(st.chip, st.layer, inp.theta, inp.A, inp.v, theta_offset=err.reshape(intended.shape),
                                **kw)
        head.theta0 = intended
    return head, meta


def circuit_step(st: CircuitSettings, inp: KuramotoInputs, seeds: LayerSeeds) -> KuramotoOutput:
    """One Kuramoto layer's coupling step at circuit level (see the module notes)."""
    chip, seed = st.chip, seeds.seed
    head, meta = _start(st, inp)
    nb, B, hs, cs, T = meta["shape"]
    seq = seeds.sequences(B)
    # one noise stream per network keyed on (sequence, bank, head, coordinate), as the macromodel's
    gseed = stream_seeds(seed, PURPOSE["kuramoto"], seq[None, :, None, None], np.arange(nb)[:, None, None, None],
                         np.asarray(meta["heads"])[None, None, :, None],
                         np.asarray(meta["coords"])[None, None, None, :]).reshape(-1)
    inj = chip.config.injection
    injection = st.injection
    if injection is None:
        injection = inj.injected and st.initial_phase_error is None
    y_start = ref = None
    if injection:
        if st.initial_phase_error is not None:
            raise ValueError("circuit chip step: initial_phase_error and a circuit injection transient are two models "
                             "of the same write; pass one")
        psi0 = injection_start_errors(chip, st.layer, seed, seq, meta)
        y_start = inject_rings(head, cycles=float(inj.cycles), strength_rad_per_cycle=inj.strength, psi0=psi0,
                               seed=gseed)["y"]
        ref = reference_offset_injected(head.device, float(chip.config.settle_cycles), head.steps_per_period,
                                        head.stochastic, float(inj.cycles), float(inj.strength))
    out = simulate_heads(head, settle_cycles=chip.config.settle_cycles, seed=gseed, y_start=y_start, reference=ref,
                         return_waveforms=st.waveforms)
    psi = out["psi"]
    if st.readout is not None:
        # the detector averages the ring's own free-running phase over its window: the line measured after τ_s
        # (start phase and residual frequency), with the chip's phase diffusion added between samples
        sig = chip.timebase["sigma_rad_per_sqrt_cycle"] if head.stochastic else 0.0
        psi = read_free_running(st.readout, psi, out["slope_rad_per_cycle"], sig, seed=seed, sequences=seq,
                                banks=nb)
    est = periphery(chip, head, meta, psi)
    fl = head.flicker
    fl_txt = "" if fl is None else (f", flicker {fl.corner_hz:.3g} Hz corner (assumed), OU band "
                                    f"{fl.f_min_hz:.3g}-{fl.f_max_hz:.3g} Hz x {fl.n_processes} per node")
    waves = None if not st.waveforms else {"t": out["t"], "v0": out["v0"], "theta0": head.theta0,
                                            "reference_offset_rad": out["reference_offset_rad"], "device": head.device}
    return KuramotoOutput(va=est[0], a=est[1] if st.reference_bank else None, ts=None, traj=None,
                          backend=f"circuit ({head.device.ring.n_stages}-stage rings, oscsim.engine CustomODE, "
                                  f"T/{st.steps_per_period}{fl_txt})", waveforms=waves)


def circuit_chip_step(chip, layer: int, theta, A, v, *, seed: int = 0, sequence_ids=None,
                      **settings) -> KuramotoOutput:
    """One layer's circuit step from explicit settings: ``settings`` are the fields of :class:`CircuitSettings`
    (besides ``chip`` and ``layer``), ``seed`` the layer's seed and ``sequence_ids`` each sequence's index in
    the run (:class:`mapping.seeds.LayerSeeds`)."""
    return circuit_step(CircuitSettings(chip=chip, layer=layer, **settings), KuramotoInputs.of(theta, A, v),
                        LayerSeeds(seed, sequence_ids))


@register
class RingCircuit(KuramotoBackend):
    """Kuramoto layers of a ``ring-circuit`` chip as node-voltage SDEs (see the module notes)."""

    name = "ring circuit"
    blockable = False  # its networks are built for the compiled tile (no blocked schedule)
    devices = ("ring-circuit",)
    refusals = {"ssa": "device = 'ring-circuit' simulates Kuramoto attention layers at circuit level; the circuit "
                       "rung is not built for SSA (its pairwise cells would need resistive ring pairs at "
                       "node-voltage level), and a silent fallback to the macromodel would mislabel the result: use "
                       "device = 'ring-macromodel' for SSA"}
    trajectories_from = "ring-macromodel"
    """Whole-layer trajectories are not kept at circuit level: comparisons plot the macromodel of the same rings."""
    refuse = classmethod(ring_only("the circuit rung is a CMOS ring circuit"))

    def prepare(self, chip, layer: int, *, integrator: str = "auto", **overrides) -> CircuitSettings:
        """The circuit's settings (``integrator`` is not used: the circuit runs RK4 / stochastic Heun on its
        node equations at ``steps_per_period``)."""
        s = CircuitSettings(chip=chip, layer=layer, readout=chip_readout(chip),
                            reference_bank=chip.layers[layer].banks == 2)
        return dataclasses.replace(s, **overrides) if overrides else s

    def step(self, prepared: CircuitSettings, inputs: KuramotoInputs, seeds: LayerSeeds) -> KuramotoOutput:
        return circuit_step(prepared, inputs, seeds)

    def describe(self, chip) -> Description:
        d = super().describe(chip)
        return dataclasses.replace(d, realism=circuit_summary(chip.config))

    def macromodel_validity(self, chip, *, warn: bool = True, stacklevel: int = 2) -> dict | None:
        return {"inside": None, "metric": None, "message": "circuit-level chip: node voltages are integrated, "
                "the macromodel's validity map does not apply"}
