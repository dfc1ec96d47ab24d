"""The analog-score mode: the Kuramoto scores measured by the oscillators, the softmax digital (``[scores]``).

Physical model
--------------
The score of Kuramoto attention (DESIGN §3.1) is a gated phase coherence,

    s_{t,u} = τ/√k_h Σ_j g^q_{t,j} g^k_{u,j} cos(θ_{t,j} − θ_{u,j} + ω_j (t − u)).

- **What oscillates.** One *rotated* oscillator per (token u, coordinate j) of every head, written by injection
  locking (:mod:`mapping.periphery.injection`) to the phase ρ_{u,j} = θ_{u,j} + ω_j u (the rotation is added to
  the injection reference's phase, digitally). It is never coupled: it serves as the key of every later query
  and as the query of its own token. During the window it free-runs in the reference frame,
  Φ_{u,j}(τ) = ρ_{u,j} + w_{u,j} + ε_{u,j} τ + σ_{u,j} W(τ) (w the write error, ε the trim residual, σ² = D/f₀;
  :func:`mapping.periphery.readout.free_running_samples`). Its mismatch is drawn once, when the chip is compiled,
  from stream [mismatch_seed, layer, 3] (or, where ``[scores] units`` makes heads share a score unit, once per
  unit from [mismatch_seed, PHYSICAL_STREAM, 3], :mod:`mapping.backends.score_array`), trimmed like the value
  banks' and stored on the chip's layers (:func:`mapping.compiler.mismatch.draw_score_oscillators`).
- **What the mixer outputs.** A mixer per (query t, key u ≤ t, coordinate j) multiplies the two oscillators'
  outputs; with a small key amplitude on its linear port and the query on its switching port, its output current
  is ∝ (key amplitude) × (tail current) × c(Φ_t − Φ_u) plus a 2f₀ product the low-pass removes (f_bw ≪ 2 f₀),
  where c is the chip's detector response (``readout.response``: cos for a mixer, the triangle of an XOR
  detector — which is *not* the model's cosine: a systematic score error the BPC shows).
- **The gates: analog gain.** The key gate ĝ^k_u = Q(g^k_u) sets the key oscillator's buffer amplitude, the
  query gate ĝ^q_t = Q(g^q_t) the tail current of the mixers of row t, each through an unsigned DAC of
  ``gate_bits`` over [0, ``gate_range``] (2 k T DACs per layer instead of k T²), so the product ĝ^q ĝ^k is formed
  in the mixer. Chosen over digital post-scaling, which would need one ADC conversion per (t, u, j) — k_h times
  the conversions — and keep the k_h-term multiply-accumulate digital, leaving only the cosine offloaded.
- **The chain.** The k_h mixer currents of a head are summed on one node, low-passed (first order, bandwidth
  ``readout.bandwidth_fraction`` f₀, reset at the window start), sampled ``readout.samples_per_cycle`` per cycle
  over ``readout.averaging_cycles``, averaged and converted once per (t, u, head) by a signed ``scores.bits``-bit
  ADC whose full scale is ``full_scale`` per coordinate (times the filter's known gain) — the chip's
  :class:`~mapping.periphery.readout.PhaseReadout` (its :meth:`~PhaseReadout.window_weights` and
  :meth:`~PhaseReadout.measure_mean`). The averaged channel is

      y_{t,u} = (1/(k_h F g)) Σ_j ĝ^q_{t,j} ĝ^k_{u,j} Σ_m W_m c(Φ_{t,j}(τ_m) − Φ_{u,j}(τ_m) − e_{t,u,j}) + n_{t,u},

  W_m the window weights (Σ W = g, the filter gain), F = ``full_scale``, n the sampler noise (RMS
  ``readout.noise_rad``/sqrt(W) in full-scale units, drawn as the exact Gaussian of M samples' mean),
  e_{t,u,j} the extra key-side error of decode (:mod:`mapping.backends.phase_memory`; 0 in prefill). The
  periphery forms s = τ √k_h F ADC(y) and the digital causal softmax.

Error model (:func:`score_error_model`), per score, in logits: sampler noise τ √k_h F ν_eff; ADC quantisation
τ √k_h F Δ/√12 (Δ = 1/(2^(b−1) − 1)); the phase errors of the two oscillators (write, residual drift over the
window's weighted mean time t̄, diffusion over its weighted variance time) reach the score through
sin(Δθ) × τ/√k_h ⟨ĝ^q ĝ^k⟩ per coordinate, added over k_h independent coordinates; gate quantisation
through cos(Δθ). Valid while the phase errors are small (≪ 1 rad), the gates and scores inside their ranges
(clipping is counted by :func:`clipped_fraction`) and the mixer linear in its key amplitude (the gates' dynamic
range is the DAC's, assumed linear). The noiseless, unquantised, mismatch-free chip reproduces the closed form
exactly (tests).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import units
from ..periphery.quantise import Quantiser
from ..periphery.readout import PhaseReadout, free_running_samples
from ..seeds import PURPOSE, sequence_rng

__all__ = ["ScoreSettings", "score_settings", "chip_scores", "closed_form_scores", "causal_softmax",
           "chip_attention", "model_score_inputs", "score_error_model", "clipped_fraction"]

@dataclass(frozen=True, kw_only=True)
class ScoreSettings:
    """What a layer's analog scores read (built once per layer by :func:`score_settings`).

    Attributes
    ----------
    readout : PhaseReadout
        The score channel's detector response, low-pass, window, sampler noise and ADC (bits = ``scores.bits``).
    gate_q : Quantiser
        The unsigned gate DACs.
    full_scale : float
        ADC full scale per coordinate.
    freq_residual : (h, k_h, T) or None
        Residual angular frequency of the rotated oscillators [rad/cycle].
    sigma : float or (h, k_h, T)
        Their phase-noise intensity [rad/sqrt(cycle)].
    write : callable or None
        ``write(rng, shape) -> errors`` of one injection of rotated oscillators (``shape`` ending in T), drawn with
        their residuals; None: exact writes (``injection.mode = "ideal"``).
    """

    readout: PhaseReadout
    gate_q: Quantiser
    full_scale: float
    freq_residual: np.ndarray | None = None
    sigma: object = 0.0
    write: object = None


def _rotated_oscillators(chip, layer: int):
    """(ε [rad/cycle], D/D₀) of the rotated oscillators (h, k_h, T) of ``layer``: the chip's compiled draw
    (:func:`mapping.compiler.mismatch.draw_score_oscillators`: the device's instance draw, trimmed as the banks,
    plus the chip's temperature drift, following the score array's assignment of heads to units)."""
    lm = chip.layers[layer]
    if lm.score_freq_residual_rel is None:
        raise ValueError(f"layer {layer} of this chip carries no score-oscillator draw: it was compiled with "
                         f"digital scores ([scores] mode = 'digital'); compile it with mode = 'analog'")
    return units.relative_frequency_to_rad_per_cycle(lm.score_freq_residual_rel), lm.score_diffusion_rel


def score_settings(chip, layer: int, **overrides) -> ScoreSettings:
    """The :class:`ScoreSettings` of ``layer`` (``overrides`` replace fields)."""
    import dataclasses

    from ..periphery.injection import inject_phases

    cfg = chip.config
    sc, r = cfg.scores, cfg.readout
    readout = PhaseReadout(response=r.response, noise_rad=r.noise_rad if cfg.noise else 0.0, bits=sc.bits,
                           averaging_cycles=r.averaging_cycles, samples_per_cycle=r.samples_per_cycle,
                           bandwidth_fraction=r.bandwidth_fraction)
    eps, drel = _rotated_oscillators(chip, layer)
    sigma = chip.timebase["sigma_rad_per_sqrt_cycle"]
    sig = sigma * np.sqrt(drel) if sigma and np.any(drel != 1) else sigma
    write = None
    if cfg.injection.injected:
        def write(rng, shape):
            """Write errors of the rotated oscillators, (h, k_h, T) or per pair (h, k_h, T_t, T_u) (key u's)."""
            det = eps.reshape(eps.shape[:-1] + (1,) * (len(shape) - eps.ndim) + eps.shape[-1:])
            return inject_phases(np.zeros(shape), np.broadcast_to(det, shape), config=cfg.injection, sigma=sigma,
                                 seed=int(rng.integers(2**63)), method="closed-form")
    s = ScoreSettings(readout=readout, gate_q=Quantiser(bits=sc.gate_bits, range=sc.gate_range, signed=False),
                      full_scale=sc.full_scale, freq_residual=eps if np.any(eps) else None, sigma=sig, write=write)
    return dataclasses.replace(s, **overrides) if overrides else s


def model_score_inputs(attn, theta):
    """(ρ, g^q, g^k, τ) of a Kuramoto attention layer ``attn`` for phases ``theta`` (B, T, k): the rotated phases
    ρ_{t,j} = θ_{t,j} + ω_j t and the gates, (B, h, T, k_h) float64, and the temperature τ (digital, from the
    model's own gate network)."""
    import torch

    with torch.no_grad():
        _, _, _, gq, gk = attn._qk(theta)
        th = attn._heads(theta)
        pos = torch.arange(theta.shape[1], dtype=theta.dtype)
        rot = th + attn.omega.view(attn.n_heads, 1, attn.kh) * pos[:, None]
    f = lambda x: x.detach().double().numpy()  # noqa: E731
    return f(rot), f(gq), f(gk), float(attn.tau.detach())


def closed_form_scores(rot, gq, gk, tau: float):
    """s_{t,u} = τ/√k_h Σ_j g^q_{t,j} g^k_{u,j} cos(ρ_{t,j} − ρ_{u,j}) (B, h, T, T), the explicit reference."""
    kh = rot.shape[-1]
    c, s = np.cos(rot), np.sin(rot)
    return tau / math.sqrt(kh) * (np.einsum("bhtj,bhuj->bhtu", gq * c, gk * c)
                                  + np.einsum("bhtj,bhuj->bhtu", gq * s, gk * s))


def causal_softmax(s):
    """Row softmax of scores (..., T, T) over u ≤ t (float64)."""
    T = s.shape[-1]
    mask = np.tril(np.ones((T, T), dtype=bool))
    z = np.where(mask, s, -np.inf)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _window_coherence(readout: PhaseReadout, phi, gq, gk, extra=None):
    """Σ_j ĝ^q_{t,j} ĝ^k_{u,j} Σ_m W_m c(Φ_{t,j}(m) − Φ_{u,j}(m) − e_{t,u,j}) (h, T, T) for one sequence.

    phi : (M, h, T, k_h) oscillator phases at the window's samples; gq, gk : (h, T, k_h); extra : (h, T, T, k_h)
    or None. The cosine detector factorises (cos(a − b) = Re e^{ia} e^{−ib}) into one complex product per head;
    other responses are evaluated sample by sample (:meth:`PhaseReadout.channels`)."""
    w = readout.window_weights()
    if readout.response == "cosine":
        z = np.exp(1j * phi)  # (M, h, T, kh)
        if extra is None:
            a = (w[:, None, None, None] * gq[None] * z).transpose(1, 2, 3, 0)  # (h, T, kh, M)
            b = (gk[None] * np.conj(z)).transpose(1, 2, 3, 0)
            h, T = a.shape[:2]
            return np.real(a.reshape(h, T, -1) @ b.reshape(h, T, -1).transpose(0, 2, 1))
        a = (w[:, None, None, None] * z).transpose(1, 3, 2, 0)  # (h, kh, T, M)
        m = a @ np.conj(z).transpose(1, 3, 0, 2)  # (h, kh, T, T): Σ_m W_m e^{iΦ_t} e^{-iΦ_u}
        prod = np.real(m.transpose(0, 2, 3, 1) * np.exp(-1j * extra))  # (h, T, T, kh)
        return np.einsum("htuj,htj,huj->htu", prod, gq, gk)
    out = np.zeros(gq.shape[:2] + (gq.shape[1],))
    for m, wm in enumerate(w):
        d = phi[m][:, :, None, :] - phi[m][:, None, :, :]  # (h, T, T, kh)
        if extra is not None:
            d = d - extra
        out += wm * np.einsum("htuj,htj,huj->htu", readout.channels(d)[0], gq, gk)
    return out


def chip_scores(s: ScoreSettings, rot, gq, gk, tau: float, seeds, *, keys=None) -> np.ndarray:
    """The chip's scores (B, h, T, T) [logits] (−inf above the diagonal), see the module notes.

    Parameters
    ----------
    s : ScoreSettings
    rot, gq, gk : (B, h, T, k_h)
        Rotated phases [rad] and gates (:func:`model_score_inputs`).
    tau : float
    seeds : mapping.seeds.LayerSeeds
        The rotated oscillators of sequence b draw from stream (seed, scores, sequence), its sampler noise from
        (seed, score_readout, sequence): the same numbers in any batch.
    keys : Reinjection or HeldMemory, optional
        Decode: how the keys reach token t (:mod:`mapping.backends.phase_memory`); None: prefill (every key
        written once with the sequence).
    """
    B, h, T, kh = rot.shape
    seq = seeds.sequences(B)
    rd = s.readout
    qg, kg = s.gate_q(gq), s.gate_q(gk)
    eps = None if s.freq_residual is None else s.freq_residual[..., :T].transpose(0, 2, 1)  # (h, T, kh)
    sig = s.sigma if np.ndim(s.sigma) == 0 else np.asarray(s.sigma)[..., :T].transpose(0, 2, 1)
    times = rd.sample_times()
    scale = tau * math.sqrt(kh) * s.full_scale
    norm = kh * s.full_scale * rd.filter_gain()
    out = np.empty((B, h, T, T))
    for b in range(B):
        rng = sequence_rng(seeds.seed, PURPOSE["scores"], int(seq[b]))
        w = 0.0 if s.write is None else s.write(rng, (h, kh, T)).transpose(0, 2, 1)  # (h, T, kh)
        start = rot[b] + w
        phi = free_running_samples(start, 0.0 if eps is None else eps, sig, times, rng)  # (M, h, T, kh)
        extra = None
        if keys is not None:  # decode: the key side of pair (t, u) beyond the oscillator's own write
            eh = np.zeros((h, kh, T)) if eps is None else eps.transpose(0, 2, 1)
            sh = sig if np.ndim(sig) == 0 else np.asarray(sig).transpose(0, 2, 1)
            wh = np.broadcast_to(w, (h, T, kh)).transpose(0, 2, 1)
            fresh = None if s.write is None else (lambda shape, _r=rng: s.write(_r, shape))
            k = keys.key_errors(wh, eh, sh, rng, fresh)  # (h, kh, t, u)
            extra = (k - wh[..., None, :]).transpose(0, 2, 3, 1)  # (h, T, T, kh)
        y = _window_coherence(rd, phi, qg[b], kg[b], extra) / norm
        r2 = sequence_rng(seeds.seed, PURPOSE["score_readout"], int(seq[b]))
        out[b] = scale * rd.measure_mean(y, r2 if rd.effective_noise > 0 else None)
    return np.where(np.tril(np.ones((T, T), dtype=bool)), out, -np.inf)


def chip_attention(chip, layer: int, theta, seeds, *, settings: ScoreSettings | None = None, keys=None):
    """The causal softmax weights A (B, h, T, T) of ``layer`` from the chip's scores (float64), for input phases
    ``theta`` (B, T, k) torch; ``keys``: decode (see :func:`chip_scores`)."""
    s = score_settings(chip, layer) if settings is None else settings
    rot, gq, gk, tau = model_score_inputs(chip.model.layers[layer].attn, theta)
    return causal_softmax(chip_scores(s, rot, gq, gk, tau, seeds, keys=keys))


def clipped_fraction(s: ScoreSettings, rot, gq, gk) -> dict:
    """Fractions of gates above ``gate_range`` and of causal scores beyond the ADC's full scale (noise-free)."""
    T = rot.shape[2]
    kh = rot.shape[-1]
    y = closed_form_scores(rot, gq, gk, math.sqrt(kh)) / kh  # per-coordinate score
    low = np.tril(np.ones((T, T), dtype=bool))
    return {"gates": float(np.mean(np.concatenate([gq.ravel(), gk.ravel()]) > s.gate_q.range)),
            "scores": float(np.mean(np.abs(y[..., low]) > s.full_scale))}


def score_error_model(s: ScoreSettings, *, tau: float, kh: int, write_rms: float = 0.0,
                      mean_gate_product: float = 1.0, mean_gate_square: float = 1.0, mean_sin2: float = 0.5) -> dict:
    """Predicted error of one score [logits RMS], term by term (see the module notes).

    Parameters
    ----------
    s : ScoreSettings
    tau : float
        The layer's temperature.
    kh : int
        Coordinates per head.
    write_rms : float
        RMS write error of one rotated oscillator [rad].
    mean_gate_product : float
        ⟨(ĝ^q ĝ^k)²⟩^{1/2}, the RMS gate product (1 for unit gates).
    mean_gate_square : float
        ⟨g²⟩, the mean square gate (1 for unit gates): gate-DAC rounding (uniform, step/√12 per gate) reaches the
        score through cos(Δθ).
    mean_sin2 : float
        ⟨sin² Δθ⟩ over the pairs (½ for uniform phase differences).

    Returns
    -------
    dict with ``sampler``, ``adc``, ``gates``, ``write``, ``drift``, ``diffusion``, ``total`` [logits RMS] and
    ``model``.
    """
    rd = s.readout
    em = rd.error_model()
    g = em["gain"]
    scale = tau * math.sqrt(kh) * s.full_scale
    sampler = scale * rd.effective_noise
    step = 0.0 if rd.bits is None else 1.0 / max(2 ** (rd.bits - 1) - 1, 1)
    adc = scale * step / math.sqrt(12.0)
    eps = 0.0 if s.freq_residual is None else float(np.sqrt(np.mean(np.square(s.freq_residual))))
    sig2 = float(np.mean(np.square(s.sigma)))
    per_coord = tau / math.sqrt(kh) * mean_gate_product * math.sqrt(mean_sin2 * kh)  # Σ_j over k_h coordinates
    # the pair's phase difference: two independent writes, residuals and diffusions (the filter gain divides out)
    write = per_coord * math.sqrt(2.0) * write_rms
    drift = per_coord * math.sqrt(2.0) * eps * em["drift_cycles"]
    diffusion = per_coord * math.sqrt(2.0 * sig2 * em["diffusion_cycles"])
    gstep = s.gate_q.step
    gates = tau * gstep / math.sqrt(12.0) * math.sqrt(2.0 * mean_gate_square * (1.0 - mean_sin2))
    terms = {"sampler": sampler, "adc": adc, "gates": gates, "write": write, "drift": drift, "diffusion": diffusion}
    terms["total"] = math.sqrt(sum(v * v for v in terms.values()))
    terms["model"] = (f"per score: sampler noise tau sqrt(k_h) F nu_eff; ADC tau sqrt(k_h) F Delta/sqrt(12); two "
                      f"oscillators' write, residual drift over the window's mean time {em['drift_cycles']:.3g} "
                      f"cycles and diffusion over {em['diffusion_cycles']:.3g} cycles, through sin(dtheta) over k_h "
                      f"coordinates (filter gain {g:.3g} divided out)")
    return terms
