"""The decode pass of a Kuramoto layer on the phase macromodel: one new token against its keys (``[energy] phase =
"decode"``), with keys re-injected from SRAM or held in running oscillators (:mod:`~mapping.backends.phase_memory`).

The physical step of decoded token t, per (sequence, bank, head, coordinate): only row t of the couplers is
programmed, C_{t,u} = κ Q_c(A_{t,u}) (1 + δ_{t,u}) with receive gain Q_g(v_t); the receiver oscillator t is
written to θ_t (write error r_t) and the key oscillators u < t stand at θ_u + k_{t,u}, the key-side error of
their memory (fresh write, or write plus held drift E_u(t − u)). The couplers being one-way, the keys are
sources only: they free-run, φ_u(τ) = θ_u + k_{t,u} + ε_u τ + σ_u W_u(τ), and the receiver obeys

    dθ_t = [ε_t + Σ_u C_{t,u} H(φ_u(τ) − θ_t)] dτ + σ_t dW_t,     0 ≤ τ ≤ τ_s,

with H(x) = Σ_m a_m sin(m x) + b_m cos(m x) the device's coupling function, so the drive is
Σ_m a_m Im(e^{−imθ_t} Z_m) + b_m Re(e^{−imθ_t} Z_m), Z_{m,t}(τ) = Σ_u C_{t,u} e^{im φ_u(τ)}: a matrix product per
time step (:func:`integrate_receivers`, stochastic Heun with the engine's step, Heun without noise). The couplers
then open and the readout reads the receiver over its window, as in prefill
(:func:`mapping.periphery.readout.read_free_running`); the periphery forms the same increment estimate.

**Why the whole window at once is the token-by-token decode.** The model is causal: layer l's input for token t
depends on tokens ≤ t only, and the chip's output for (t, l) is computed once, by its own step, with its own
noise (streams keyed on the sequence, not on the batch). Running every receiver t of a window in one call, each
against its own keys k_{t,u} at their age t − u, is therefore exactly decoding the window token by token, with
one stated shortcut: a key's in-window wiggle ε_u τ + σ_u W_u(τ) is drawn once per key and shared by the
receivers that read it (in a true token-by-token decode, each step's window is a different, independent piece
of the key's path). Its effect is second order: the wiggle, σ sqrt(τ_s) ≈ 3e-3 rad on the default ring, reaches
the increment weighted by A and not divided by κτ_s, against the receiver's own σ sqrt(τ_s) / κτ_s.

Differences from the prefill network (:mod:`mapping.backends.phase`), all physical: the keys are not coupled
to their own predecessors (the prefill network's second-order motion of the sources is absent) and carry their
decode memory's error. Runs the devices of :class:`~mapping.backends.phase.PhaseMacromodel` (ideal, ring
macromodel, spin-torque phase model); the amplitude and circuit rungs simulate the prefill network only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..periphery.readout import read_free_running, wrap
from ..seeds import PURPOSE, LayerSeeds, sequence_rng
from .base import Description, KuramotoInputs, KuramotoOutput
from .kuramoto import increment_estimate
from .phase import PhaseMacromodel, PhaseSettings, phase_settings
from .phase_memory import HeldMemory, Reinjection, held_validity
from .receivers import integrate_receivers
from .registry import register

__all__ = ["DecodeSettings", "PhaseDecode", "decode_settings", "decode_step", "integrate_receivers",
           "runs_decode_pass", "simulated_pass", "key_memory"]


@dataclass(frozen=True, kw_only=True)
class DecodeSettings:
    """A decode step's settings: the phase step's (:class:`~mapping.backends.phase.PhaseSettings`), the keys'
    memory, the write errors of one injection, and the layer's analog-score settings (or None)."""

    phase: PhaseSettings
    keys: Reinjection | HeldMemory
    write: object = None
    scores: object = None


def decode_settings(chip, layer: int, **overrides) -> DecodeSettings:
    """The :class:`DecodeSettings` of ``layer`` (``overrides`` go to the phase settings)."""
    from ..periphery.injection import inject_phases
    from .scores import score_stage

    ps = phase_settings(chip, layer, **overrides)
    write = None
    if chip.config.injection.injected:
        inj, sigma = chip.config.injection, chip.timebase["sigma_rad_per_sqrt_cycle"]

        def write(rng, detuning):
            """Write errors of one injection of oscillators with residuals ``detuning`` [rad/cycle]."""
            return inject_phases(np.zeros(np.shape(detuning)), detuning, config=inj, sigma=sigma,
                                 seed=int(rng.integers(2**63)), method="closed-form")
    return DecodeSettings(phase=ps, keys=key_memory(chip), write=write,
                          scores=score_stage(chip.config).prepare(chip, layer))


def _bank_sequence(ds: DecodeSettings, th_b, Aq_b, g_bank, bank: int, eps, sig, r0, rng):
    """Receivers' final phases (h, k_h, T) of one (sequence, bank)."""
    s = ds.phase
    h, kh, T = th_b.shape
    C = s.kappa * np.broadcast_to(Aq_b[:, None], (h, kh, T, T)) * g_bank[..., None]
    cg = s.coupler_gain_per_unit()
    if cg is not None:
        C = C * cg[bank][:, :, :T, :T]
    fresh = None if ds.write is None else (lambda shape: ds.write(rng, np.broadcast_to(eps[..., None, :], shape)))
    own = 0.0 if ds.write is None else ds.write(rng, eps)  # the key's write (held: once; reinjected: diagonal)
    k = ds.keys.key_errors(own, eps, sig, rng, fresh)  # (h, kh, t, u)
    psi = th_b[..., None, :] + k
    y0 = th_b + r0
    G = h * kh
    y1 = integrate_receivers(psi.reshape(G, T, T), C.reshape(G, T, T), eps.reshape(G, T),
                             sig if np.ndim(sig) == 0 else np.reshape(sig, (G, T)), y0.reshape(G, T),
                             t1=s.settle_cycles, n_steps=s.n_steps, harmonics=s.harmonics, rng=rng)
    return y1.reshape(h, kh, T)


def decode_step(ds: DecodeSettings, inp: KuramotoInputs, seeds: LayerSeeds, *, dense: bool = False) -> KuramotoOutput:
    """One Kuramoto layer's decode pass over a window (every receiver against its keys; see the module notes).

    Without per-(t, u) key errors (keys re-injected by ideal writes) the sources' sums are shared products
    (:func:`mapping.backends.blocked_decode.block_round`: one product per (head, tile) over all step times, the
    receivers' Heun compiled), equal to each unit's own complex product (:func:`integrate_receivers`, which
    ``dense=True`` runs, the check) on the same draws to rounding; held keys and injected writes run the latter."""
    from .blocked_decode import programmed_window

    s = ds.phase
    theta = inp.theta
    B, T, k = theta.shape
    nh, kh, nb, seq, th, Aq, gains = programmed_window(ds, inp, seeds)
    zeros = np.zeros((nh, kh, T))
    r_all = None if s.injection is None else np.asarray(s.injection(seq, T, seeds.seed))  # receivers' writes
    y1 = np.empty((nb, B, nh, kh, T))
    omg = np.empty_like(y1)
    sig_all = None if np.ndim(s.sigma) == 0 else np.empty_like(y1)
    shared = not dense and ds.write is None and isinstance(ds.keys, Reinjection)  # no per-(t, u) key error
    if shared:
        from .blocked_decode import block_round, coupler_elements

        E, eidx = coupler_elements(s, nb, nh, kh)
        whole = (slice(0, T),) * 4  # every receiver against every key (the couplers are causal, no self-coupler)
    for bank in range(nb):
        eps = zeros if s.freq_residual is None else s.freq_residual[bank][..., :T]
        sig = s.sigma if np.ndim(s.sigma) == 0 else np.asarray(s.sigma)[bank][..., :T]
        for b in range(B):
            rng = sequence_rng(seeds.seed, PURPOSE["decode"], int(seq[b]), bank)
            r0 = 0.0 if r_all is None else r_all[bank, b]
            if shared:  # the same draws as _bank_sequence's: the receivers' increments, then the keys'
                y1[bank, b] = block_round(ds, th[b], Aq[b], gains[bank][b], E, None if eidx is None else eidx[bank],
                                          eps, sig, r0, rng, whole)
            else:
                y1[bank, b] = _bank_sequence(ds, th[b], Aq[b], gains[bank][b], bank, eps, sig, r0, rng)
            omg[bank, b] = eps
            if sig_all is not None:
                sig_all[bank, b] = sig
    G = nb * B * nh * kh
    sigma = s.sigma if sig_all is None else sig_all.reshape(G, T)
    y0 = np.broadcast_to(th[None], (nb, B, nh, kh, T)).reshape(G, T)
    y1 = y1.reshape(G, T)
    meas = y1 if s.readout is None else read_free_running(s.readout, y1, omg.reshape(G, T), sigma, seed=seeds.seed,
                                                          sequences=seq, banks=nb)
    dtheta = wrap(meas - y0).reshape(nb, B, nh, kh, T)
    h0 = float(np.sum(np.asarray(s.harmonics, dtype=float)[:, 1]))
    kt = s.kappa * s.settle_cycles
    est = [increment_estimate(dtheta[bank], kt, h0, gains[bank], Aq).transpose(0, 3, 1, 2).reshape(B, T, k)
           for bank in range(nb)]
    return KuramotoOutput(va=est[0], a=est[1] if s.reference_bank else None, backend="decode (receivers)")


def simulated_pass(chip) -> str:
    """'decode' when the backend that runs the chip simulates the decode pass, else 'prefill'."""
    from .registry import backend_for

    return "decode" if getattr(backend_for(chip, 0), "decode_pass", False) else "prefill"


def key_memory(chip):
    """The :class:`~mapping.backends.phase_memory.Reinjection` or :class:`~mapping.backends.phase_memory.HeldMemory`
    of a chip's ``[decode]`` section (held: N = ``inter_token_s`` · f₀ cycles per token)."""
    if not chip.config.decode.held:
        return Reinjection()
    return HeldMemory(cycles_per_token=chip.config.decode.inter_token_s * chip.device.f0_hz)


def runs_decode_pass(chip_kind: str, device: str) -> bool:
    """Whether a backend registered on ``device`` simulates the decode pass of ``chip_kind`` layers."""
    from .registry import _REGISTRY, runs_as

    device = runs_as(device)
    return any(getattr(c, "decode_pass", False) and c.chip_kind == chip_kind
               for (_, dev), classes in _REGISTRY.items() if dev == device for c in classes)


@register
class PhaseDecode(PhaseMacromodel):
    """The decode pass on the phase macromodel (see the module notes): runs chips whose ``[energy] phase`` is
    ``decode`` (the pass the headline reports), ahead of the prefill network."""

    name = "phase macromodel (decode)"
    priority = 2
    decode_pass = True

    @classmethod
    def refuse(cls, chip) -> str | None:
        energy = getattr(chip.config, "energy", None)
        if energy is None or energy.phase != "decode":
            return "the chip reports the prefill pass ([energy] phase = 'prefill')"
        reg = chip.timebase.get("stno")
        if isinstance(reg, dict) and reg.get("model") == "amplitude":
            return "the spin-torque chip runs outside the phase reduction (amplitude model, prefill network)"
        return None

    def prepare(self, chip, layer: int, *, integrator: str = "auto", **overrides) -> DecodeSettings:
        ds = decode_settings(chip, layer, integrator=integrator, **overrides)
        if isinstance(ds.keys, HeldMemory):
            lm = chip.layers[layer]
            eps = ds.phase.freq_residual
            held_validity(0.0 if eps is None else float(np.sqrt(np.mean(np.square(eps)))),
                          float(np.sqrt(np.mean(np.square(ds.phase.sigma)))), ds.keys.cycles_per_token,
                          lm.max_tokens - 1, stacklevel=3)
        return ds

    def step(self, prepared: DecodeSettings, inputs: KuramotoInputs, seeds: LayerSeeds) -> KuramotoOutput:
        return decode_step(prepared, inputs, seeds)

    def blocked_step(self, prepared: DecodeSettings, inputs: KuramotoInputs, seeds: LayerSeeds, plan):
        """The decode pass under the blocked schedule (:func:`mapping.backends.blocked_decode.blocked_decode_step`;
        ``plan`` a blocked :class:`~mapping.backends.blocking.BlockPlan`)."""
        from .blocked_decode import blocked_decode_step

        return blocked_decode_step(prepared, inputs, seeds, plan)

    def attention_weights(self, chip, layer: int, prepared, theta, parts, seeds):
        """The softmax weights of the chip's score stage (:mod:`mapping.backends.scores`) with the decode keys."""
        from .scores import score_stage

        return score_stage(chip.config).attention_weights(chip, layer, theta, parts, seeds,
                                                          settings=prepared.scores, keys=prepared.keys)

    def describe(self, chip) -> Description:
        d = super().describe(chip)
        keys = "held in running oscillators" if chip.config.decode.held else "re-injected from SRAM"
        return dataclasses.replace(d, window=d.window + f"; decode pass, keys {keys}")
