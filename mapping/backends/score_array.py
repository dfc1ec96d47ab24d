"""The score array of the analog-score mode: the silicon that measures the Kuramoto scores (``[scores] mode =
"analog"``, DESIGN §5.5, §5.7) and the schedule of the heads on it.

One **score unit** measures the scores of one head of one layer at once (the chain of
:mod:`mapping.backends.analog_scores`). For T tokens and k_h coordinates per head it holds

==========================  ====================  ================================================================
cell                        count per unit        what it is
==========================  ====================  ================================================================
rotated oscillators         k_h · T               one per (token, coordinate), injected at θ + ω t, trimmed
mixers                      k_h · T(T+1)/2        one per (query t, key u ≤ t, coordinate)
score channels              T(T+1)/2              the k_h mixer currents of (t, u) summed, low-passed, sampled;
                                                  one SAR ADC per ``[array] channels_per_adc`` channels
gate DACs                   2 · k_h · T           the key gate (amplitude) and query gate (tail current) per
                                                  rotated oscillator, ``scores.gate_bits`` each
==========================  ====================  ================================================================

``[scores] units`` = S physical units serve the H heads of each of the L layers: head h of layer l runs on unit
(l · H + h) mod S in score round ⌊h / S⌋ of its layer, so a layer takes ⌈H / S⌉ score rounds (the same rule as
the value tiles, :mod:`mapping.compiler.schedule`). Default S: L · H (every head of every layer its own unit) on a
spatial ``[array]``, H (the heads of one layer, reused by every layer) on a multiplexed one.

Fidelity follows the assignment: when a unit serves more than one head per pass (S < L · H) its rotated
oscillators' mismatch is drawn once, from stream [mismatch_seed, PHYSICAL_STREAM, 3], and every head on the unit
carries that draw; otherwise each layer draws its own from [mismatch_seed, layer, 3], as before score units
existed (:func:`mapping.backends.analog_scores.score_settings`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ScoreArray", "build_score_array", "default_score_units"]


@dataclass(frozen=True, kw_only=True)
class ScoreArray:
    """The score units of an analog-score chip and the heads' assignment to them.

    Attributes
    ----------
    units : int
        Physical score units S.
    n_layers, n_heads, head_dim, T : int
        Layers L, heads H per layer, coordinates k_h per head and tokens T the units are built for.
    channels_per_adc : int
        Score channels converted in turn by one SAR ADC (``[array] channels_per_adc``).
    gate_bits : int or None
        Resolution of the gate DACs (``scores.gate_bits``; None: unquantised, which the area and energy charge as
        :data:`mapping.energy.area.ANALOG_BITS`).
    rounds_per_layer : int
        Score rounds of a layer, ⌈H / S⌉.
    unit_of, round_of : tuple of (H,) int arrays, one per layer
        The unit head h of layer l runs on and its round within the layer.
    """

    units: int
    n_layers: int
    n_heads: int
    head_dim: int
    T: int
    channels_per_adc: int
    gate_bits: int | None
    rounds_per_layer: int
    unit_of: tuple
    round_of: tuple

    @property
    def rotated_oscillators_per_unit(self) -> int:
        """k_h · T."""
        return self.head_dim * self.T

    @property
    def mixers_per_unit(self) -> int:
        """k_h · T(T+1)/2."""
        return self.head_dim * self.T * (self.T + 1) // 2

    @property
    def channels_per_unit(self) -> int:
        """T(T+1)/2 score channels."""
        return self.T * (self.T + 1) // 2

    @property
    def gate_dacs_per_unit(self) -> int:
        """2 · k_h · T."""
        return 2 * self.head_dim * self.T

    @property
    def adcs(self) -> int:
        """Score ADCs of the whole array, ⌈S · T(T+1)/2 / channels_per_adc⌉."""
        return -(-self.units * self.channels_per_unit // self.channels_per_adc)

    @property
    def shared(self) -> bool:
        """A unit serves more than one head per pass (S < L · H): the heads on it share its mismatch."""
        return self.units < self.n_layers * self.n_heads

    def counts(self) -> dict:
        """Cells of the whole array (S units): ``rotated_oscillators``, ``mixers``, ``score_channels``,
        ``gate_dacs``, ``adcs``."""
        S = self.units
        return {"rotated_oscillators": S * self.rotated_oscillators_per_unit, "mixers": S * self.mixers_per_unit,
                "score_channels": S * self.channels_per_unit, "gate_dacs": S * self.gate_dacs_per_unit,
                "adcs": self.adcs}

    def to_json(self) -> dict:
        return {"units": self.units, "rounds_per_layer": self.rounds_per_layer, "shared": self.shared,
                "per_unit": {"rotated_oscillators": self.rotated_oscillators_per_unit,
                             "mixers": self.mixers_per_unit, "score_channels": self.channels_per_unit,
                             "gate_dacs": self.gate_dacs_per_unit},
                "counts": self.counts()}


def default_score_units(array, n_layers: int, n_heads: int) -> int:
    """The default S of an ``[array]``: L · H on a spatial chip, H on a multiplexed one."""
    return int(n_layers) * int(n_heads) if array.schedule == "spatial" else int(n_heads)


def build_score_array(config, *, n_layers: int, n_heads: int, head_dim: int, T: int) -> ScoreArray:
    """The :class:`ScoreArray` of a chip ``config`` (``[scores]``, ``[array]``) for a model of ``n_layers`` layers
    of ``n_heads`` heads of ``head_dim`` coordinates and ``T`` tokens (see the module notes)."""
    L, H = int(n_layers), int(n_heads)
    units = getattr(config.scores, "units", None)
    S = default_score_units(config.array, L, H) if units is None else int(units)
    h = np.arange(H)
    return ScoreArray(units=S, n_layers=L, n_heads=H, head_dim=int(head_dim), T=int(T),
                      channels_per_adc=int(config.array.channels_per_adc),
                      gate_bits=getattr(config.scores, "gate_bits", None),
                      rounds_per_layer=-(-H // S), unit_of=tuple((l * H + h) % S for l in range(L)),
                      round_of=tuple(h // S for _ in range(L)))
