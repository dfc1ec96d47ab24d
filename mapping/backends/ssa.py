"""The SSA family of backends: pairwise Adler cells and the collective SSA-1D network.

**Pairwise cell.** Two oscillators with detuning Δω and mutual coupling κ obey the Adler equation for
φ = θ_j − θ_i:  dφ/dt = Δω − 2κ sin φ. With 2κ = K r J: if Δω ≤ K r J the pair locks at sin φ* = Δω/(K r J)
and cos φ* = sqrt(1 − (Δω/(K r J))²); otherwise it drifts and the time average of cos φ over a whole slip
period is exactly 0. So S_ij = J_ij ⟨cos φ⟩ is the closed form (:func:`ssa_closed_form`). Over a finite
window W the drifting average is off by at most :func:`adler_window_error_bound`, which diverges at the
locking boundary. That is the error band the chip adds (:mod:`~mapping.backends.ssa_pairwise`).

**Collective SSA-1D network.** Per (sequence, head) one oscillator per token, coupled all-to-all; the chip
weight is S^chip_ij = J_ij ⟨cos(θ_i − θ_j)⟩ over the window. The closed form is the pairwise approximation of
this collective flow; how far they differ is a measured result (:mod:`~mapping.backends.ssa_collective`).

Model rates are mapped to the chip with λ = κ / K (:func:`mapping.units.ssa_time_scale`), so the largest
possible coupling K (r = J = 1) is the chip coupling κ. Time is in cycles. J, Δω, r are digital; the backend
returns S and the model's own top-k, normalisation, S V and projections follow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import units
from ..periphery.readout import chip_readout
from .base import Description, LayerBackend, SSAInputs, SSAOutput

__all__ = ["SSABackend", "SSASettings", "ssa_closed_form", "adler_window_error_bound", "J_MIN"]

J_MIN = 1e-6
"""SSA cells with J below this are not built (S < 1e-6)."""
_MAX_COUPLING_ELEMENTS = 2**24  # per engine call: 128 MiB of float64 couplings


def ssa_closed_form(delta_omega, thr):
    """Closed-form S/J = sqrt(1 − (Δω/thr)²) on the locked set, 0 elsewhere; returns (S_over_J, locked)."""
    dw = np.asarray(delta_omega, dtype=np.float64)
    thr = np.asarray(thr, dtype=np.float64)
    locked = dw <= thr
    ratio = np.where(thr > 0, dw / np.where(thr > 0, thr, 1.0), np.inf)
    s = np.where(locked, np.sqrt(np.clip(1.0 - ratio**2, 0.0, 1.0)), 0.0)
    return s, locked


def adler_window_error_bound(delta_omega, thr, window):
    """Upper bound on |⟨cos φ⟩_W| for a drifting pair: ln((Δω + thr)/(Δω − thr)) / (thr W) (model time units)."""
    dw = np.asarray(delta_omega, dtype=np.float64)
    thr = np.asarray(thr, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.log((dw + thr) / (dw - thr)) / (thr * window)
    return np.where(dw > thr, b, np.nan)



@dataclass(frozen=True, kw_only=True)
class SSASettings:
    """What one SSA layer's step reads (built once per layer by :meth:`SSABackend.prepare`).

    Attributes
    ----------
    lam : float
        λ [rad/cycle per model rate unit].
    settle_cycles, averaging_cycles : float
        Discarded transient and averaging window [cycles] (``[ssa]``).
    steps_per_cycle : int
        Minimum integration steps per cycle (raised to resolve the fastest rate).
    coupling_q : Quantiser
    sigma : float
        Nominal phase-noise intensity [rad/sqrt(cycle)]; ``diffusion_rel`` scales it per oscillator.
    diffusion_rel : array, the layer's oscillator shape
    freq_residual : array or None
        Residual angular frequency of each oscillator [rad/cycle] (None: all zero).
    coupler_gain : (h, T, T) array or None
    readout : PhaseReadout or None
        The detector chain over the averaging window (None: ideal).
    harmonics : (M, 2)
    integrator : str
        'auto' or a named integrator of the kernels.
    """

    lam: float
    settle_cycles: float
    averaging_cycles: float
    steps_per_cycle: int
    coupling_q: object
    sigma: float
    diffusion_rel: np.ndarray
    freq_residual: np.ndarray | None
    coupler_gain: np.ndarray | None
    readout: object
    harmonics: object
    integrator: str = "auto"


class SSABackend(LayerBackend):
    """Base of the SSA backends: settings, the model's hook, the batch size, the description."""

    chip_kind = "ssa"
    devices = ("ideal", "ring-macromodel", "spin-torque")

    def prepare(self, chip, layer: int, *, integrator: str = "auto", **overrides) -> SSASettings:
        import dataclasses

        sc, lm = chip.config.ssa, chip.layers[layer]
        fr = units.relative_frequency_to_rad_per_cycle(lm.freq_residual_rel)
        s = SSASettings(lam=lm.lam, settle_cycles=sc.settle_cycles, averaging_cycles=sc.averaging_cycles,
                        steps_per_cycle=sc.steps_per_cycle, coupling_q=lm.coupling_quantiser,
                        sigma=chip.timebase["sigma_rad_per_sqrt_cycle"], diffusion_rel=lm.diffusion_rel,
                        freq_residual=fr if np.any(fr) else None,
                        coupler_gain=lm.coupler_gain() if lm.coupler_spread_rel > 0 else None,
                        readout=chip_readout(chip, window_cycles=sc.averaging_cycles), harmonics=chip.harmonics,
                        integrator=integrator)
        return dataclasses.replace(s, **overrides) if overrides else s

    def step(self, prepared: SSASettings, inputs: SSAInputs, seeds) -> SSAOutput:
        """S on the chip: the digital diagonal (Δω_ii = 0: a token is locked to itself), the cells or network
        for the rest (:meth:`_measure`)."""
        J = inputs.J
        B, H, N, _ = J.shape
        S = np.zeros_like(J)
        locked = np.zeros(J.shape, dtype=bool)
        idx = np.arange(N)
        S[:, :, idx, idx] = J[:, :, idx, idx]
        locked[:, :, idx, idx] = True
        return self._measure(prepared, inputs, seeds.sequences(B), seeds.seed, S, locked)

    def batch_size(self, chip, T: int) -> int:
        """Sequences per step: as many as fit the engine's coupling array (h · N² per sequence)."""
        return max(1, _MAX_COUPLING_ELEMENTS // (chip.layers[0].n_heads * T * T))

    def run_hook(self, chip, layer: int, prepared, args, seeds, stats):
        """Run the layer inside the model's forward pass (``attn_override(i, comp)``): S from the chip, the model's
        normalisation of it, the fidelity record. Returns (S, backend name)."""
        import torch

        from oscsim.nn.ssa_functional import normalise_weights

        (comp,) = args
        lm = chip.layers[layer]
        N = comp["J"].shape[-1]
        if N > lm.max_tokens:
            raise ValueError(f"sequence of {N} tokens is longer than the chip's arrays ({lm.max_tokens})")
        out = self.step(prepared, SSAInputs.of(comp), seeds)
        value = comp["value"].detach().double()
        Wc = comp["weights"].detach().double()
        W = normalise_weights(torch.from_numpy(out.S), comp["top_k"])
        stats.add_ssa((W @ value).numpy(), (Wc @ value).numpy(), out.S, comp["S"].detach().double().numpy(),
                      out.locked, comp["locked"].detach().numpy(), causal=bool(comp["causal"]),
                      J=comp["J"].detach().double().numpy(), coherence=out.coherence)
        return torch.from_numpy(out.S), out.backend

    def capture(self, model, tokens, layer: int) -> tuple:
        """(inputs, comp) of ``layer`` from the model's own forward pass (its ``attn_override`` hook)."""
        import torch

        got = {}

        def override(i, comp):
            if i == layer:
                got["comp"] = comp
            return comp["S"]  # the closed form: this pass only reads the layer's input

        with torch.no_grad():
            model(tokens, attn_override=override)
        return SSAInputs.of(got["comp"]), got["comp"]

    def describe(self, chip) -> Description:
        sc = chip.config.ssa
        return Description(name=self.name, window=f"{sc.mode} SSA, averaging {sc.averaging_cycles:g} cycles",
                           settle_window_rad=None)

    def macromodel_validity(self, chip, *, warn: bool = True, stacklevel: int = 2) -> dict | None:
        """Operating point κ/f₀ = coupling.fraction and fan-in 1, against the two-ring locking map."""
        return chip.device.oscillator.operating_point_check(chip.config.coupling.fraction, 1, "locking", warn=warn,
                                                            stacklevel=stacklevel + 1)

    @staticmethod
    def _rate_steps(settings: SSASettings, rate) -> np.ndarray:
        """Steps per cycle (int64, the shape of ``rate``): the configured ones, or 5 per radian of the fastest
        rate [rad/cycle] if more. Each sequence gets its own from its own fastest rate, never the batch's: a
        sequence's numbers must not depend on the other sequences of its batch."""
        return np.maximum(settings.steps_per_cycle, np.ceil(5 * np.asarray(rate, dtype=np.float64)).astype(np.int64))
