"""The phase macromodel of a Kuramoto layer: T phase oscillators per (sequence, head, coordinate, bank).

In the frame rotating at the nominal 2π f₀, with residual frequency errors ε_t (mismatch left after trimming),
time in cycles,

    dθ_t = [2π ε_t + Q_g(v_t) Σ_{u≤t} C_{t,u} H(θ_u − θ_t)] dt + σ dW_t,     0 ≤ t ≤ τ_s,

H(x) = Σ_m a_m sin(m x) + b_m cos(m x) (a_1 = 1), the coupling function the chip's coupling rule programs.
One batched engine call per layer (:func:`mapping.backends.integrate.integrate_phase`). The couplers open
at τ_s; the readout averages samples of the free-running trajectory over its window
(:func:`mapping.periphery.readout.read_free_running`). Runs the ``ideal``, ``ring-macromodel`` and
``spin-torque`` (phase model) devices.

Deterministic error: θ(τ) − θ(0) = τ f(θ₀) + τ²/2 (∂f f)(θ₀) + …, so the relative error of x̂ is linear in
κ τ_s; noise adds σ sqrt(τ_s) / (κ τ_s) (phase diffusion) and the readout error / (κ τ_s).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from .. import units
from ..periphery.programming import program_kuramoto
from ..periphery.readout import PhaseReadout, chip_readout, read_free_running, wrap
from ..seeds import PURPOSE, LayerSeeds
from .base import KuramotoInputs, KuramotoOutput
from .integrate import CouplingFactors, integrate_phase_product
from .kuramoto import KuramotoBackend, increment_estimate
from .registry import register

__all__ = ["PhaseSettings", "PhaseMacromodel", "phase_settings", "kuramoto_chip_step"]


@dataclass(frozen=True, kw_only=True)
class PhaseSettings:
    """What one Kuramoto layer's phase step reads (built once per layer by :func:`phase_settings`).

    Attributes
    ----------
    n_heads, kappa, settle_cycles, n_steps : int, float, float, int
        Heads; κ [rad per cycle]; τ_s [cycles]; integration steps over τ_s.
    coupling_q, gain_q : Quantiser
        Coupler (A, unsigned) and receive-gain (v, signed) quantisers.
    harmonics : (M, 2)
        Coupling function harmonics (a_1 = 1).
    freq_residual : (banks, h, k_h, T_max) or None
        Residual angular frequency of each oscillator after trimming [rad/cycle]; bank 0 is the gain bank,
        bank 1 the unit-gain reference bank.
    coupler_gain : (banks, h, k_h, T_max, T_max) or (tiles, T_max, T_max) or None
        Multiplicative coupler strengths 1 + δ (mismatch): per unit, or per physical tile with ``coupler_tile``.
    coupler_tile : (banks, h, k_h) int or None
        A multiplexed chip's tile of each unit: unit (bank, head, j) has ``coupler_gain[coupler_tile[bank, head,
        j]]``, handed to the engine as such (the per-unit array is never built: 8 MB per layer of the tiny model,
        a gather and a copy per compiled chip). None: ``coupler_gain`` is per unit.
    sigma : float or (banks, h, k_h, T_max) array
        Phase-noise intensity [rad / sqrt(cycle)], per oscillator when an array (the device's instance draw).
    readout : PhaseReadout or None
        None: ideal readout.
    reference_bank : bool
        Also simulate a unit-gain bank giving â.
    save_every : int or None
        Keep gain-bank trajectories every k steps (for plots).
    row_scaled : bool
        Quantise each row of A relative to its maximum m_t (m_t applied as an analog receive gain).
    integrator : {'auto', 'engine', 'numpy'}
    amplitude : object or None
        A complex-amplitude integrator (:class:`mapping.backends.stno.STNOAmplitudeModel`) used instead of the
        phase macromodel: ``amplitude.integrate(omega, coupling, y0, t1=, seed=, sample_times=)``.
    injection : callable or None
        ``injection(sequence_ids, T, seed) -> (banks, B, h, k_h, T)`` phase errors left by the injection
        (:func:`mapping.periphery.injection.layer_initial_errors`): the network starts at θ + error while the
        periphery subtracts the intended θ. None: phases written exactly.
    """

    n_heads: int
    kappa: float
    settle_cycles: float
    n_steps: int
    coupling_q: object
    gain_q: object
    harmonics: object = ((1.0, 0.0),)
    freq_residual: np.ndarray | None = None
    coupler_gain: np.ndarray | None = None
    coupler_tile: np.ndarray | None = None
    sigma: object = 0.0
    readout: PhaseReadout | None = None
    reference_bank: bool = True
    save_every: int | None = None
    row_scaled: bool = False
    integrator: str = "auto"
    amplitude: object = None
    injection: object = None
    # what the layer's calls share (packed engine model, per-oscillator constants); not an
    # argument: dataclasses.replace gives the new settings an empty one
    workspace: dict = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)

    def coupler_gain_per_unit(self) -> np.ndarray | None:
        """``coupler_gain`` laid out per unit, (banks, h, k_h, T_max, T_max) (gathered once from the tiles when
        it is per tile; kept in the workspace), or None without a coupler spread."""
        if self.coupler_gain is None or self.coupler_tile is None:
            return self.coupler_gain
        per_unit = self.workspace.get("coupler_gain_per_unit")
        if per_unit is None:
            per_unit = self.workspace["coupler_gain_per_unit"] = np.asarray(self.coupler_gain)[self.coupler_tile]
        return per_unit


def phase_settings(chip, layer: int, **overrides) -> PhaseSettings:
    """The :class:`PhaseSettings` of layer ``layer`` of ``chip`` as a run uses them; ``overrides`` replace
    fields (e.g. ``save_every=1``, ``readout=None``); an overriding ``coupler_gain`` is per unit unless a
    ``coupler_tile`` is given with it."""
    from ..periphery.injection import layer_initial_errors

    cfg, lm = chip.config, chip.layers[layer]
    sigma = chip.timebase["sigma_rad_per_sqrt_cycle"]
    fr = units.relative_frequency_to_rad_per_cycle(lm.freq_residual_rel)
    s = PhaseSettings(
        n_heads=lm.n_heads, kappa=cfg.kappa, settle_cycles=cfg.settle_cycles,
        n_steps=max(int(math.ceil(cfg.settle_cycles * cfg.steps_per_cycle)), 4),
        coupling_q=lm.coupling_quantiser, gain_q=lm.gain_quantiser, harmonics=chip.harmonics,
        freq_residual=fr if np.any(fr) else None,
        coupler_gain=(None if lm.coupler_spread_rel == 0 else lm.coupler_gain() if lm.tiles is None
                      else lm.coupler_gain_per_tile()),
        coupler_tile=lm.tiles.tile_of if lm.coupler_spread_rel > 0 and lm.tiles is not None else None,
        # per-oscillator noise of the device's instance draw
        sigma=sigma * np.sqrt(lm.diffusion_rel) if sigma and np.any(lm.diffusion_rel != 1) else sigma,
        readout=chip_readout(chip), reference_bank=lm.banks == 2, row_scaled=cfg.coupling.row_scaled,
        injection=functools.partial(layer_initial_errors, chip, lm, sigma=sigma) if cfg.injection.injected else None)
    if "coupler_gain" in overrides and "coupler_tile" not in overrides:  # an override's couplers are per unit
        overrides = {**overrides, "coupler_tile": None}
    return dataclasses.replace(s, **overrides) if overrides else s


def _integrate_phases(s: PhaseSettings, omega, factors, y_start, gseed, sigma):
    """Final phases (G, T), readout samples or None, trajectory times and trajectories (or None), backend."""
    if s.amplitude is not None:
        y1, samples = s.amplitude.integrate(omega, factors.dense(), y_start, t1=s.settle_cycles, seed=gseed,
                                            sample_times=None if s.readout is None else s.readout.sample_times())
        return y1, samples, None, None, "engine (complex amplitude)"
    res = integrate_phase_product(omega, factors, y_start, t1=s.settle_cycles, n_steps=s.n_steps,
                                  harmonics=s.harmonics, sigma=sigma, seed=gseed, save_every=s.save_every,
                                  backend=s.integrator, workspace=s.workspace)
    return res.y_final, None, res.ts, res.ys, res.backend


def _per_bank(s: PhaseSettings, key: str, B: int, T: int, make):
    """A (G, T) array of the layer's per-oscillator constants laid out (bank, B, h, k_h, T), made once per (B, T)
    and kept in the layer's workspace (every window of a run has the same)."""
    cache = s.workspace.setdefault("per_bank", {})
    arr = cache.get((key, B, T))
    if arr is None:
        arr = cache[(key, B, T)] = make()
        arr.setflags(write=False)
    return arr


def phase_step(s: PhaseSettings, inp: KuramotoInputs, seeds: LayerSeeds) -> KuramotoOutput:
    """One Kuramoto layer's coupling step on the chip (one batched engine call); see the module notes.

    Network g = (bank, sequence b, head, coordinate j) has the coupling κ (Aq[b, head] · g_bank[b, head, j, :]
    per row) · coupler_gain[bank, head, j]: handed to the engine as these factors
    (:class:`mapping.backends.integrate.CouplingFactors`), whose group loop writes each network's (T, T) matrix
    into that group's scratch before its first step (the (G, T, T) array is never built); per-oscillator
    constants and the packed model are kept across the layer's calls (``s.workspace``)."""
    theta, A, v = inp.theta, inp.A, inp.v
    B, T, k = theta.shape
    n_heads = s.n_heads
    if k % n_heads:
        raise ValueError(f"k ({k}) must be divisible by n_heads ({n_heads})")
    kh = k // n_heads
    if A.shape != (B, n_heads, T, T):
        raise ValueError(f"A must have shape {(B, n_heads, T, T)}, got {A.shape}")
    if v.shape != theta.shape:
        raise ValueError(f"v must have the shape of theta {theta.shape}, got {v.shape}")
    nb = 2 if s.reference_bank else 1
    seq = seeds.sequences(B)
    th = theta.reshape(B, T, n_heads, kh).transpose(0, 2, 3, 1)  # (B, h, kh, T)
    Aq, g = program_kuramoto(A, v, n_heads=n_heads, coupling_q=s.coupling_q, gain_q=s.gain_q,
                             row_scaled=s.row_scaled)
    banks_gain = [g] + ([np.ones_like(g)] if s.reference_bank else [])
    G = nb * B * n_heads * kh
    # C[bank, b, head, j] = (κ Aq[b, head] · gain[bank][b, head, j][:, None]) · coupler_gain[bank, head, j]
    index = _per_bank(s, "index", B, T, lambda: np.stack(np.broadcast_arrays(
        np.arange(B * n_heads).reshape(1, B, n_heads, 1) + np.zeros((nb, 1, 1, kh), dtype=np.int64),
        (np.arange(nb)[:, None, None, None] * n_heads * kh + np.arange(n_heads * kh).reshape(1, 1, n_heads, kh)
         + np.zeros((1, B, 1, 1), dtype=np.int64)))).reshape(2, G))
    cg = eidx = None
    if s.coupler_gain is not None and s.coupler_tile is None:  # per unit (bank, head, j)
        cg = _per_bank(s, "coupler_gain", 0, T, lambda: np.ascontiguousarray(
            s.coupler_gain[:nb, :, :, :T, :T]).reshape(nb * n_heads * kh, T, T))
        eidx = index[1]
    elif s.coupler_gain is not None:  # per tile: each network reads its unit's tile (the same entries, no gather)
        cg = _per_bank(s, "coupler_gain_tiles", 0, T, lambda: np.ascontiguousarray(s.coupler_gain[:, :T, :T]))
        eidx = _per_bank(s, "coupler_tile_index", B, T, lambda: np.ascontiguousarray(
            np.asarray(s.coupler_tile, dtype=np.int64)[:nb].reshape(-1)[index[1]]))
    factors = CouplingFactors(base=(s.kappa * Aq).reshape(B * n_heads, T, T), base_index=index[0],
                              row_gain=np.stack(banks_gain).reshape(G, T), elem=cg, elem_index=eidx)
    if s.freq_residual is not None:
        omega = _per_bank(s, "omega", B, T, lambda: np.ascontiguousarray(np.broadcast_to(
            s.freq_residual[:nb, None, :, :, :T], (nb, B, n_heads, kh, T)).reshape(G, T)))
    else:
        omega = _per_bank(s, "omega0", B, T, lambda: np.zeros((G, T)))
    sigma = s.sigma
    if np.ndim(sigma):  # per-oscillator noise of the mismatch draw, laid out like freq_residual
        sig = np.asarray(sigma, dtype=float)
        sigma = _per_bank(s, "sigma", B, T, lambda: np.ascontiguousarray(np.broadcast_to(
            sig[:nb, None, :, :, :T], (nb, B, n_heads, kh, T)).reshape(G, T)))
    y0 = np.broadcast_to(th[None], (nb, B, n_heads, kh, T)).reshape(G, T)
    # one stream per network, keyed on (sequence, bank, head, coordinate): groups are ordered (bank, B, h, kh)
    gseed = seeds.unit_streams(PURPOSE["kuramoto"], seq, (nb, n_heads, kh)).reshape(G)
    err = None if s.injection is None else s.injection(seq, T, seeds.seed)
    y_start = y0 if err is None else y0 + np.asarray(err)[:nb].reshape(G, T)
    y1, samples, ts, ys, backend = _integrate_phases(s, omega, factors, y_start, gseed, sigma)
    meas = y1 if s.readout is None else read_free_running(s.readout, y1, omega, sigma, seed=seeds.seed,
                                                          sequences=seq, banks=nb, samples=samples)
    dtheta = wrap(meas - y0).reshape(nb, B, n_heads, kh, T)
    h0 = float(np.sum(np.asarray(s.harmonics, dtype=float)[:, 1]))
    kt = s.kappa * s.settle_cycles
    est = [increment_estimate(dtheta[bank], kt, h0, banks_gain[bank], Aq).transpose(0, 3, 1, 2).reshape(B, T, k)
           for bank in range(nb)]
    traj = None if ys is None else ys.reshape(-1, nb, B, n_heads, kh, T)[:, 0]
    return KuramotoOutput(va=est[0], a=est[1] if s.reference_bank else None, ts=ts, traj=traj, backend=backend)


@register
class PhaseMacromodel(KuramotoBackend):
    """Kuramoto layers as phase networks with the device's coupling function (see the module notes)."""

    name = "phase macromodel"
    devices = ("ideal", "ring-macromodel", "spin-torque")

    def prepare(self, chip, layer: int, *, integrator: str = "auto", **overrides) -> PhaseSettings:
        return phase_settings(chip, layer, integrator=integrator, **overrides)

    def step(self, prepared: PhaseSettings, inputs: KuramotoInputs, seeds: LayerSeeds) -> KuramotoOutput:
        return phase_step(prepared, inputs, seeds)


def kuramoto_chip_step(theta, A, v, *, seed: int = 0, sequence_ids=None, initial_phase_error=None,
                       backend: str = "auto", **settings) -> KuramotoOutput:
    """One Kuramoto layer's phase step from explicit settings (no compiled chip needed).

    ``settings`` are the fields of :class:`PhaseSettings` (``n_heads``, ``kappa``, ``settle_cycles``,
    ``n_steps``, ``coupling_q``, ``gain_q`` required); ``backend`` is its ``integrator``; ``seed`` the layer's
    seed and ``sequence_ids`` each sequence's index in the run (:class:`mapping.seeds.LayerSeeds`);
    ``initial_phase_error`` (banks, B, h, k_h, T) a fixed injection error [rad]."""
    injection = None if initial_phase_error is None else (lambda seq, T, sd: initial_phase_error)
    s = PhaseSettings(integrator=backend, injection=injection, **settings)
    return phase_step(s, KuramotoInputs.of(theta, A, v), LayerSeeds(seed, sequence_ids))
