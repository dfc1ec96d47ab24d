"""Hardware-aware training: a differentiable surrogate of the Kuramoto chip step (DESIGN §5.6).

The chip (:mod:`mapping.backends.phase`) estimates v ⊙ a per (sequence, head, coordinate)
by letting T oscillators settle for τ_s cycles and reading their phases. The surrogate replaces the ODE by
its Taylor expansion in κτ_s and every error source by a random draw with the chip's distribution, in torch,
so gradients flow to the model. Per token t and coordinate j (time in cycles, phases in rad):

    F_t   = e_t + g_t Σ_{u≠t} Ã_tu H(θ_u − θ_t)                       (f_t / κ, the first-order drift)
    x̂_t  = F_t + (κτ_s / 2) g_t Σ_{u≠t} Ã_tu H'(θ_u − θ_t) (F_u − F_t)   (second-order Taylor term)
           − H(0) g_t Σ_u Q_A(A)_tu                                    (the periphery's known offset)
           + (σ √τ_s ξ_t + ε^r_t) / (κτ_s)                             (phase diffusion, readout error)

with

- g = Q_g(v): the signed receive gain, rounded to the gain DAC and clipped to ±gain_range (straight-through
  rounding; the clip has zero gradient outside the range, as on the chip);
- Q_A(A) = m_t Q(A_tu / m_t) (row-scaled) or Q(A): the coupler DAC, straight-through;
- Ã = Q_A(A) (1 + δ), δ ~ N(0, s²) per physical coupler (s: the device's coupler spread). Its term
  g_t Σ_u Q_A(A)_tu δ_tu sin(θ_u − θ_t) is Gaussian given A and θ and independent across (t, j) (each uses
  its own couplers), so it is drawn as one Gaussian of variance g_t² s² Σ_u Q_A(A)_tu² sin²(θ_u − θ_t);
- e_t = 2π ε_t / κ: the residual frequency error after trimming, ε ~ N(0, σ_f²) trimmed exactly as the
  compiler does (:func:`mapping.compiler.mismatch.trim`, its torch twin :func:`~mapping.compiler.mismatch.trim_residual_torch`);
- ξ ~ N(0, 1): phase diffusion σ √τ_s of one oscillator over the window (its O(κτ_s) propagation through the
  couplings is neglected);
- ε^r ~ N(0, σ_r² + Δ²/12): the readout's phase error, σ_r the detector channel noise after averaging and
  Δ = 1/(2**(bits−1) − 1) the ADC step (the rounding error treated as uniform and independent, exact when the
  noise dithers it, σ_r ≳ Δ).

A second, unit-gain bank (g = 1, independent draws) gives â when the chip uses ``norm_reference = "chip"``;
the model's bound B is applied to (x̂, â) exactly as the chip's periphery does. Wrapping of θ(τ_s) − θ(0) is
not modelled (|Δθ| ≤ κτ_s · gain_range · max|a| = 1 rad at the default chip, inside (−π, π]).

Validity: the Taylor expansion holds while κτ_s · |g| ≪ 1 (the chip default κτ_s = 0.25; the expansion's
third-order remainder is O((κτ_s |g|)²) relative). The statistics are checked against the compiled chip in
tests/test_hwa_surrogate.py.

Two modes: ``fresh`` (hardware-aware training: δ and ε drawn anew every step, so the model learns to tolerate
any chip of the family) and ``fixed`` (chip-in-the-loop calibration: δ and ε are one compiled chip's own
mismatch draw; only the noise is random).

``oscsim`` never imports this module: the training loop receives the surrogate as an ``attn_override``
factory, loaded from the entry point group ``oscsim.increment_transforms`` (name ``chip``).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass

import numpy as np
import torch

from . import units
from .chip import Chip
from .compiler.mismatch import trim_residual_torch
from .periphery.quantise import Quantiser

__all__ = ["SurrogateSpec", "ChipSurrogate", "surrogate_increment", "from_cli", "is_periphery", "PERIPHERY"]

#: Parameter-name prefixes/suffixes of the digital periphery of a Kuramoto model: the metric gates, the
#: value (receive-gain) projection, the score temperature, and the readout. Chip-in-the-loop calibration
#: trains only these.
PERIPHERY = ("attn.gate_q.", "attn.gate_k.", "attn.value.", "attn.log_tau", "psi", "w", "beta", "bias")


def _is_periphery(name: str) -> bool:
    leaf = name.split(".")[-1]
    return any(p in name for p in PERIPHERY[:4]) or (name.count(".") == 0 and leaf in PERIPHERY[4:])


@dataclass(frozen=True, kw_only=True)
class SurrogateSpec:
    """Everything the surrogate needs from a compiled chip (units in the names).

    Attributes
    ----------
    kappa_tau : float
        κ τ_s [rad].
    settle_cycles : float
        τ_s [cycles].
    kappa_rad_per_cycle : float
        κ [rad/cycle].
    harmonics : tuple of (a_m, b_m)
        Effective coupling-function harmonics (a₁ = 1) after the chip's phase correction.
    sigma_rad_per_sqrt_cycle : float
        Phase-diffusion intensity σ.
    readout_sigma_rad : float
        Per-channel detector noise after averaging (≈ rad of phase error); 0 when noise is off.
    readout_step : float
        ADC step of one channel (full scale 1); 0 when unquantised.
    coupling_bits, gain_bits : int or None
    coupling_range, gain_range : float
    row_scaled : bool
    coupler_spread_rel : float
        Relative std s of the coupler strengths (0 without mismatch).
    freq_spread_rel : float
        Relative std σ_f of the oscillator frequencies before trimming (0 without mismatch).
    trim_bits : int or None
    reference_bank : bool
        ‖a‖ of the norm bound comes from a unit-gain bank (True) or the closed form.
    """

    kappa_tau: float
    settle_cycles: float
    kappa_rad_per_cycle: float
    harmonics: tuple
    sigma_rad_per_sqrt_cycle: float
    readout_sigma_rad: float
    readout_step: float
    coupling_bits: int | None
    coupling_range: float
    gain_bits: int | None
    gain_range: float
    row_scaled: bool
    coupler_spread_rel: float
    freq_spread_rel: float
    trim_bits: int | None
    reference_bank: bool
    drift_factor: float = 1.0
    """(τ_s + t̄)/τ_s: a residual frequency keeps shifting the phase through the readout window (t̄ its weighted
    mean time, :meth:`mapping.periphery.readout.PhaseReadout.error_model`)."""

    @classmethod
    def from_chip(cls, chip: Chip, *, readout_noise_scale: float = 1.0) -> "SurrogateSpec":
        """The surrogate of a compiled Kuramoto chip (``readout_noise_scale`` multiplies its detector noise)."""
        from .backends import backend_for
        from .backends.kuramoto import KuramotoBackend

        if not isinstance(backend_for(chip, 0), KuramotoBackend):
            raise ValueError(f"hardware-aware training needs a Kuramoto chip, got a {chip.kind!r} chip")
        if not (math.isfinite(readout_noise_scale) and readout_noise_scale >= 0):
            raise ValueError(f"readout_noise_scale must be finite and >= 0, got {readout_noise_scale!r}")
        cfg, tb, lm = chip.config, chip.timebase, chip.layers[0]
        r = cfg.readout
        noise = r.noise_rad * readout_noise_scale if cfg.noise else 0.0
        # the readout chain linearised (mapping.periphery.readout.PhaseReadout.error_model): filter gain, the window's
        # diffusion and the drift of the residual frequency during the window
        from .periphery.readout import PhaseReadout

        em = PhaseReadout(noise_rad=noise, bits=r.bits, averaging_cycles=r.averaging_cycles,
                          samples_per_cycle=r.samples_per_cycle, bandwidth_fraction=r.bandwidth_fraction).error_model()
        sig = float(tb["sigma_rad_per_sqrt_cycle"])
        return cls(kappa_tau=float(cfg.kappa_tau), settle_cycles=float(cfg.settle_cycles),
                   kappa_rad_per_cycle=float(cfg.kappa), harmonics=tuple(map(tuple, chip.harmonics.tolist())),
                   sigma_rad_per_sqrt_cycle=sig,
                   readout_sigma_rad=math.sqrt(em["noise_rad"] ** 2 + sig**2 * em["diffusion_cycles"]),
                   readout_step=em["step_rad"], drift_factor=1.0 + em["drift_cycles"] / float(cfg.settle_cycles),
                   coupling_bits=lm.coupling_quantiser.bits, coupling_range=lm.coupling_quantiser.range,
                   gain_bits=lm.gain_quantiser.bits, gain_range=lm.gain_quantiser.range,
                   row_scaled=bool(cfg.coupling.row_scaled), coupler_spread_rel=float(tb["coupler_spread_rel"]),
                   freq_spread_rel=float(tb["freq_spread_rel"]), trim_bits=cfg.trim_bits,
                   reference_bank=lm.banks == 2)

    @property
    def noise_rms(self) -> float:
        """RMS of the additive noise on x̂ [model units of v ⊙ a]: (σ² τ_s + σ_r² + Δ²/12)^½ / (κτ_s)."""
        var = self.sigma_rad_per_sqrt_cycle ** 2 * self.settle_cycles + self.readout_sigma_rad ** 2 \
            + self.readout_step ** 2 / 12
        return math.sqrt(var) / self.kappa_tau

    def to_dict(self) -> dict:
        return {k: (list(map(list, v)) if k == "harmonics" else v) for k, v in self.__dict__.items()}


def _quant_unsigned(x, bits, rng):
    return Quantiser(bits=bits, range=rng, signed=False).straight_through(x)


def _quant_signed(x, bits, rng):
    return Quantiser(bits=bits, range=rng, signed=True).straight_through(x)


def _heads(x, h):
    b, t, k = x.shape
    return x.view(b, t, h, k // h).transpose(1, 2)


def _unheads(x):
    b, h, t, kh = x.shape
    return x.transpose(1, 2).reshape(b, t, h * kh)


def surrogate_increment(theta, A, v, spec: SurrogateSpec, gen: torch.Generator | None, *,
                        freq_residual=None, coupler_gain=None, noise: bool = True, order: int = 2):
    """Surrogate chip estimates (x̂ of v ⊙ a, â or None), differentiable in ``theta``, ``A`` and ``v``.

    Parameters
    ----------
    theta : (B, T, k) input phases [rad].
    A : (B, h, T, T) causal softmax weights.
    v : (B, T, k) value gate (receive gain before quantisation).
    spec : SurrogateSpec
    gen : torch.Generator or None
        Source of every random draw (None only when nothing is drawn: ``noise=False`` and fixed mismatch).
    freq_residual : (banks, h, k_h, T_max) array or None
        Fixed residual relative frequency errors δf/f₀ (calibration mode); None: drawn fresh.
    coupler_gain : (banks, h, k_h, T_max, T_max) array or None
        Fixed coupler strengths 1 + δ (calibration mode); None: the spread is drawn fresh.
    noise : bool
        Draw phase and readout noise.
    order : {1, 2}
        Taylor order in κτ_s of the deterministic increment (1: drop the second-order term; for tests).

    Returns
    -------
    va : (B, T, k) tensor
    a_ref : (B, T, k) tensor or None (when the chip has no reference bank)
    """
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got {order!r}")
    B, T, k = theta.shape
    h = A.shape[1]
    kh = k // h
    dt, dev = theta.dtype, theta.device

    def randn(shape):
        return torch.randn(shape, generator=gen, dtype=dt, device="cpu").to(dev)

    if spec.row_scaled:
        m = A.detach().amax(-1, keepdim=True).clamp_min(1e-30)
        Aq = m * _quant_unsigned(A / m, spec.coupling_bits, spec.coupling_range)
    else:
        Aq = _quant_unsigned(A, spec.coupling_bits, spec.coupling_range)
    Aq = Aq * (1.0 - torch.eye(T, dtype=dt, device=dev))  # no self-couplers
    th = _heads(theta, h)  # (B, h, T, kh)
    c1, s1 = th.cos(), th.sin()
    harm = np.asarray(spec.harmonics, dtype=float)
    trig = []
    for mm in range(1, len(harm) + 1):
        trig += [torch.cos(mm * th), torch.sin(mm * th)] if mm > 1 else [c1, s1]
    P = Aq @ torch.cat(trig, dim=-1)  # (B, h, T, 2 M kh): Σ_u Aq_tu [cos mθ_u, sin mθ_u]
    H = 0.0
    for mm, (am, bm) in enumerate(harm):
        cm, sm = trig[2 * mm], trig[2 * mm + 1]
        Pc, Ps = P[..., 2 * mm * kh:(2 * mm + 1) * kh], P[..., (2 * mm + 1) * kh:(2 * mm + 2) * kh]
        sin_sum = cm * Ps - sm * Pc  # Σ Aq sin(m(θ_u − θ_t))
        cos_sum = cm * Pc + sm * Ps  # Σ Aq cos(m(θ_u − θ_t))
        H = H + am * sin_sum + bm * cos_sum
    h0 = float(harm[:, 1].sum())
    rowsum = Aq.sum(-1, keepdim=True)  # (B, h, T, 1)
    g_full = _heads(_quant_signed(v, spec.gain_bits, spec.gain_range), h)
    kt = spec.kappa_tau
    nb = 2 if spec.reference_bank else 1
    if coupler_gain is None and spec.coupler_spread_rel > 0:
        # Σ_u Aq² sin²(θ_u − θ_t) = ½ [Σ Aq² − cos 2θ_t (Aq² cos 2θ)_u − sin 2θ_t (Aq² sin 2θ)_u]
        c2, s2 = torch.cos(2 * th), torch.sin(2 * th)
        P2 = Aq.square() @ torch.cat([c2, s2], dim=-1)
        var_sp = 0.5 * (Aq.square().sum(-1, keepdim=True) - c2 * P2[..., :kh] - s2 * P2[..., kh:])
        # clamp away from 0 before the root: rows without couplers (t = 0) have zero variance, and d√x/dx = ∞
        sd_sp = spec.coupler_spread_rel * var_sp.clamp_min(1e-24).sqrt()
    outs = []
    for bank in range(nb):
        g = g_full if bank == 0 else torch.ones_like(g_full)
        F = g * H
        # residual frequency after trimming, in units of κ (2π ε / κ)
        if freq_residual is not None:
            fr = torch.as_tensor(np.asarray(freq_residual)[bank][:, :, :T], dtype=dt, device=dev)  # (h, kh, T)
            F = F + (units.TWO_PI * spec.drift_factor / spec.kappa_rad_per_cycle) * fr.permute(0, 2, 1)[None]
        elif spec.freq_spread_rel > 0:
            eps = trim_residual_torch(spec.freq_spread_rel * randn((1, h, T, kh)), spec.freq_spread_rel,
                                      spec.trim_bits)
            F = F + (units.TWO_PI * spec.drift_factor / spec.kappa_rad_per_cycle) * eps
        # coupler spread
        if coupler_gain is not None:
            cg = torch.as_tensor(np.asarray(coupler_gain)[bank][:, :, :T, :T], dtype=dt, device=dev)  # (h,kh,T,T)
            dsum = []
            for j in range(kh):
                Ad = Aq * (cg[None, :, j] - 1.0)  # (B, h, T, T)
                pj = Ad @ torch.stack([c1[..., j], s1[..., j]], dim=-1)  # (B, h, T, 2)
                dsum.append(c1[..., j] * pj[..., 1] - s1[..., j] * pj[..., 0])
            F = F + g * torch.stack(dsum, dim=-1)
        elif spec.coupler_spread_rel > 0:
            F = F + g * sd_sp * randn(g.shape)
        # second-order Taylor term (first harmonic of H', Aq without spread)
        Q = Aq @ torch.cat([c1 * F, s1 * F], dim=-1)
        cos_sum1 = c1 * P[..., :kh] + s1 * P[..., kh:2 * kh]
        second = (c1 * Q[..., :kh] + s1 * Q[..., kh:]) - F * cos_sum1
        x = F + (0.5 * kt * g * second if order == 2 else 0.0) - h0 * g * rowsum
        if noise:
            sd = math.sqrt(spec.sigma_rad_per_sqrt_cycle ** 2 * spec.settle_cycles + spec.readout_sigma_rad ** 2
                           + spec.readout_step ** 2 / 12)
            if sd > 0:
                x = x + (sd / kt) * randn(x.shape)
        outs.append(_unheads(x))
    return outs[0], (outs[1] if nb == 2 else None)


class ChipSurrogate:
    """Per-layer increment transform for :class:`oscsim.nn.kuramoto.KuramotoLM` (``attn_override``).

    Parameters
    ----------
    chip : Chip
        A compiled Kuramoto chip (its config sets every error source).
    mode : {'fresh', 'fixed'}
        ``fresh``: mismatch drawn anew every call (hardware-aware training); ``fixed``: the chip's own mismatch
        draw (chip-in-the-loop calibration).
    readout_noise_scale : float
        Multiplies the chip's detector noise.
    """

    def __init__(self, chip: Chip, *, mode: str = "fresh", readout_noise_scale: float = 1.0):
        if mode not in ("fresh", "fixed"):
            raise ValueError(f"mode must be 'fresh' or 'fixed', got {mode!r}")
        self.chip, self.mode = chip, mode
        self.spec = SurrogateSpec.from_chip(chip, readout_noise_scale=readout_noise_scale)
        self.readout_noise_scale = readout_noise_scale

    def override(self, gen: torch.Generator):
        """An ``attn_override(i, theta, parts) -> Δ`` drawing its randomness from ``gen``."""
        chip, spec = self.chip, self.spec
        fixed = self.mode == "fixed"

        def attn_override(i, theta, parts):
            lm = chip.layers[i]
            attn = chip.model.layers[i].attn if chip.model is not None else None
            fr = lm.freq_residual_rel if fixed and chip.config.mismatch else None
            cg = lm.coupler_gain() if fixed and lm.coupler_spread_rel > 0 else None
            va, a_ref = surrogate_increment(theta, parts.A, parts.v, spec, gen, freq_residual=fr,
                                            coupler_gain=cg, noise=True)
            if a_ref is None:
                a_ref = parts.a
            return attn.apply_bound(va, a_ref)

        return attn_override

    def bind(self, model) -> "ChipSurrogate":
        """Use ``model``'s layers for the bound (the model being trained, not the compiled copy)."""
        self.chip.model = model
        return self

    def describe(self) -> dict:
        """JSON-able description (recorded in the checkpoint)."""
        d = {"mode": self.mode, "readout_noise_scale": self.readout_noise_scale, "spec": self.spec.to_dict(),
             "config_sha256": hashlib.sha256(json.dumps(self.chip.to_json()["config"], sort_keys=True)
                                             .encode()).hexdigest()[:16]}
        return d


def from_cli(model, chip_toml: str, *, calibrate: bool = False, readout_noise_scale: float = 1.0) -> ChipSurrogate:
    """Entry point ``oscsim.increment_transforms:chip``: the surrogate of ``model`` compiled with a chip TOML.

    ``calibrate=True`` gives chip-in-the-loop calibration (the compiled chip's own mismatch draw, fixed).
    """
    from .compiler.build import compile as compile_chip
    from .config import ChipConfig, load_config

    cfg = ChipConfig() if chip_toml in (None, "", "default") else load_config(chip_toml)
    chip = compile_chip(model, cfg)
    return ChipSurrogate(chip, mode="fixed" if calibrate else "fresh",
                         readout_noise_scale=readout_noise_scale).bind(model)


def is_periphery(name: str) -> bool:
    """Whether a KuramotoLM parameter name belongs to the digital periphery (see :data:`PERIPHERY`)."""
    return _is_periphery(name)
