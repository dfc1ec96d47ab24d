"""The score stage of a Kuramoto chip: where the scores s = q·key are computed, one strategy per ``[scores]``
mode, behind one registry (STYLE 16: a mode is an object, never a flag tested at a call site).

=====================  ==========================================================================================
stage (``mode``)       what it is
=====================  ==========================================================================================
DigitalScoreStage      the periphery computes q·key from the stored keys; the couplers take the model's softmax
(``digital``)          weights; no score silicon
AnalogScoreStage       the oscillators measure the scores (rotated oscillators, mixers, score ADCs:
(``analog``)           :mod:`mapping.backends.analog_scores`); the softmax stays digital; its silicon is a
                       :class:`~mapping.backends.score_array.ScoreArray` whose oscillators the compiler draws once
=====================  ==========================================================================================

The compiler asks the chip's stage for its score array (:meth:`ScoreStage.score_array`; the compiler then draws
its oscillators, :func:`mapping.compiler.mismatch.draw_score_oscillators`), the Kuramoto backends for the
softmax weights the couplers are programmed with (:meth:`ScoreStage.attention_weights`, :meth:`ScoreStage.
prepare`), the energy pass whether the scores are measured on the array (:attr:`ScoreStage.on_array`: the score
stage's terms are charged and its operations offloaded) and for the chain's predicted error
(:meth:`ScoreStage.score_noise`). Adding a stage is one class here with ``@register_score_stage`` and its mode
class in :mod:`mapping.config_modes`.
"""

from __future__ import annotations

__all__ = ["ScoreStage", "DigitalScoreStage", "AnalogScoreStage", "SCORE_STAGES", "register_score_stage",
           "score_stage"]

SCORE_STAGES: dict = {}
"""``[scores] mode`` -> the registered :class:`ScoreStage` instance."""


def register_score_stage(cls):
    """Register a :class:`ScoreStage` subclass under its ``mode`` (a mode already taken is refused)."""
    if not (isinstance(cls, type) and issubclass(cls, ScoreStage)) or not cls.mode:
        raise ValueError(f"register_score_stage takes a ScoreStage subclass with a mode, got {cls!r}")
    if cls.mode in SCORE_STAGES:
        raise ValueError(f"score stage {cls.mode!r} is already registered")
    SCORE_STAGES[cls.mode] = cls()
    return cls


def score_stage(config) -> "ScoreStage":
    """The registered stage of a chip config's ``[scores] mode``."""
    mode = config.scores.mode
    if mode not in SCORE_STAGES:
        raise ValueError(f"scores.mode {mode!r} has no registered score stage; registered: "
                         f"{', '.join(SCORE_STAGES)}")
    return SCORE_STAGES[mode]


class ScoreStage:
    """The protocol of a score stage (see the module notes).

    Attributes
    ----------
    mode : str
        The ``[scores] mode`` it serves.
    on_array : bool
        The scores are measured on the chip's array: the energy pass charges the score stage's terms
        (:mod:`mapping.energy.analog_scores`) and counts q·key among the offloaded operations.
    """

    mode: str = ""
    on_array: bool = False

    def score_array(self, config, *, n_layers: int, n_heads: int, head_dim: int, T: int):
        """The stage's silicon for a chip ``config`` and a model of ``n_layers`` × ``n_heads`` heads of ``head_dim``
        coordinates and ``T`` tokens (:class:`~mapping.backends.score_array.ScoreArray`), or None without any."""
        return None

    def prepare(self, chip, layer: int):
        """What the stage reads at run time for ``layer`` (built once per layer and run), or None."""
        return None

    def attention_weights(self, chip, layer: int, theta, parts, seeds, *, settings=None, keys=None):
        """The softmax weights (B, h, T, T) the layer's couplers are programmed with, for input phases ``theta``
        (B, T, k) and the model's own ``parts`` (``settings``: :meth:`prepare`'s; ``keys``: decode's held or
        re-injected keys, :mod:`mapping.backends.phase_memory`)."""
        raise NotImplementedError(f"score stage {type(self).__name__} does not define attention_weights")

    def score_noise(self, chip, write_rms: float):
        """The chain's predicted score error per layer (a dict for the energy report), or None."""
        return None


@register_score_stage
class DigitalScoreStage(ScoreStage):
    """``[scores] mode = "digital"``: the periphery computes the scores; the couplers take the model's weights."""

    mode = "digital"
    on_array = False

    def attention_weights(self, chip, layer, theta, parts, seeds, *, settings=None, keys=None):
        return parts.A


@register_score_stage
class AnalogScoreStage(ScoreStage):
    """``[scores] mode = "analog"``: the oscillators measure the scores (:mod:`mapping.backends.analog_scores`)."""

    mode = "analog"
    on_array = True

    def score_array(self, config, *, n_layers, n_heads, head_dim, T):
        from .score_array import build_score_array

        return build_score_array(config, n_layers=n_layers, n_heads=n_heads, head_dim=head_dim, T=T)

    def prepare(self, chip, layer):
        from .analog_scores import score_settings

        return score_settings(chip, layer)

    def attention_weights(self, chip, layer, theta, parts, seeds, *, settings=None, keys=None):
        """The causal softmax of the chip's own measured scores (float64)."""
        from .analog_scores import chip_attention

        return chip_attention(chip, layer, theta, seeds, settings=settings, keys=keys)

    def score_noise(self, chip, write_rms):
        """:func:`mapping.backends.analog_scores.score_error_model` of every layer on the compiled score
        oscillators (unit gates, uniform phase differences); the injection's write error where the chip injects
        (``write_rms``); None without the model (its τ)."""
        if chip.model is None:
            return None
        from .analog_scores import score_error_model, score_settings

        w = write_rms if chip.config.injection.injected else 0.0
        models = [score_error_model(score_settings(chip, i), tau=float(L.attn.tau.detach()),
                                    kh=chip.layers[i].head_dim, write_rms=w)
                  for i, L in enumerate(chip.model.layers)]
        return {"score_sigma_logit": [m["total"] for m in models], "terms": models,
                "model": models[0]["model"] + "; unit gates, uniform phase differences (sin^2 = 1/2)"}
