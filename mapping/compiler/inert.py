"""Every config field acts or is refused (issue 10 item 3).

A :class:`~mapping.config.ChipConfig` is one type for every chip kind, so some of its fields have no effect on
some chips (an SSA chip has no receive gain; a Kuramoto chip has no Adler cells). :func:`check_fields_act`
runs at compile time, where the model kind is known, and refuses a field that would be silently ignored when
it is set to anything but a *neutral* value: its default, or the value :meth:`ChipConfig.idealised` writes
(the analog, unclipped limit), so that ``ChipConfig()`` and ``ChipConfig().idealised()`` compile for every model.
"""

from __future__ import annotations

import dataclasses

from ..config import ChipConfig, CouplingConfig, SSAConfig
from .layers import model_kind_spec

__all__ = ["check_fields_act", "inert_fields"]

_SSA_WHY = {
    "coupling.range": "SSA couplers are programmed as K r J / K in [0, 1] (full scale fixed at the model's K)",
    "coupling.gain_bits": "SSA cells have no receive gain (there is no value gate on the chip)",
    "coupling.gain_range": "SSA cells have no receive gain (there is no value gate on the chip)",
    "coupling.row_scaled": "row scaling applies to the Kuramoto softmax matrix A",
    "norm_reference": "the norm-matching bound belongs to Kuramoto attention",
    "settle_cycles": "SSA chips settle and average over [ssa] settle_cycles and averaging_cycles",
    "steps_per_cycle": "SSA chips integrate with [ssa] steps_per_cycle",
    "scores.mode": "SSA cells already measure the scores S; the analog-score mode is for Kuramoto chips",
    "decode.keys": "SSA cells start free-running and hold no token phases (a decoded token reruns its cells)",
}
_KURAMOTO_WHY = {f"ssa.{f.name}": "a Kuramoto chip has no SSA cells; [ssa] configures SSA chips only"
                 for f in dataclasses.fields(SSAConfig)}
_INJECTION = ("injection.mode", "injection.cycles", "injection.strength_fraction")
_SSA_REALISM_WHY = {
    **{n: "SSA cells start free-running (the locked state and the drift average do not depend on the initial "
          "phases): [injection] acts on Kuramoto chips" for n in _INJECTION},
    "readout.bandwidth_fraction": ("SSA chips read the window's average of cos(phi) (a DC output): the detector "
                                   "low-pass acts on Kuramoto readout windows"),
}
_WHY = {"kuramoto": (_KURAMOTO_WHY, {}, True), "ssa": (_SSA_WHY, _SSA_REALISM_WHY, False)}
"""Model kind -> (fields that never act on its chips, realism fields that never act, whether [injection] writes
its phases), each field with the reason."""


def _get(config: ChipConfig, dotted: str):
    obj = config
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _neutral(config: ChipConfig, dotted: str) -> list:
    base = ChipConfig(coupling=CouplingConfig(fraction=config.coupling.fraction))
    return [_get(base, dotted), _get(base.idealised(), dotted)]


def inert_fields(config: ChipConfig, kind: str, model_config=None, device=None) -> dict[str, str]:
    """Fields of ``config`` with no effect on a chip of ``kind`` ('kuramoto' or 'ssa'), each with the reason.

    Parameters
    ----------
    config : ChipConfig
    kind : {'kuramoto', 'ssa'}
    model_config : model config, optional
        The model's configuration (its ``bound`` decides whether ``norm_reference`` acts on a Kuramoto chip).
    device : mapping.compiler.device.ChipDevice, optional
        The chip's device (``temperature_k`` has no effect on a device without thermal phase diffusion).
    """
    if kind not in _WHY:
        raise ValueError(f"kind must be one of {', '.join(repr(k) for k in _WHY)}, got {kind!r}")
    why = dict(_WHY[kind][0])
    if "norm_reference" not in why and model_config is not None and getattr(model_config, "bound", "norm") != "norm":
        why["norm_reference"] = (f"the model's bound is {model_config.bound!r}; only the norm-matching bound "
                                 f"reads the norm of a")
    why.update(_realism_why(config, kind, device))
    why.update(_decode_why(config, kind, device))
    if device is not None and config.noise and device.diffusion_at(config.temperature_k) == 0:
        why["temperature_k"] = f"the {device.name!r} device has no thermal phase diffusion"
    return {name: reason for name, reason in why.items() if _get(config, name) not in _neutral(config, name)}


def _realism_why(config: ChipConfig, kind: str, device) -> dict:
    """Device-realism fields (issue 11) that do not act on this chip, with the reason."""
    _, realism, injects = _WHY[kind]
    why = dict(realism)
    if injects and not config.injection.injected:
        why.update({n: "injection.mode is 'ideal' (phases written exactly)" for n in _INJECTION[1:]})
    if not config.noise:
        why["flicker"] = "noise = false: flicker is a noise source of the circuit (it acts with noise = true)"
    if device is not None:
        why.update(device.oscillator.inert_fields(device.name))
    return why


def _decode_why(config: ChipConfig, kind: str, device) -> dict:
    """Held decode keys act only where the decode pass is reported and simulated."""
    if not config.decode.held or "decode.keys" in _WHY[kind][0]:  # SSA: refused whatever the phase
        return {}
    if config.energy.phase != "decode":
        return {"decode.keys": "held keys act in decode only; this chip reports and simulates the prefill pass "
                               "([energy] phase = 'prefill')"}
    from ..backends.decode import runs_decode_pass

    if device is not None and not runs_decode_pass(kind, device.name):
        return {"decode.keys": f"no backend of the {device.name!r} device simulates the decode pass (the phase "
                               f"macromodel's does), so held phases would not be simulated"}
    return {}


def check_fields_act(config: ChipConfig, kind: str, model_config=None, device=None) -> None:
    """Raise ValueError naming every field of ``config`` that would have no effect on this chip, and why."""
    bad = inert_fields(config, kind, model_config, device)
    if bad:
        chip = model_kind_spec(kind).article
        lines = "; ".join(f"{name} = {_get(config, name)!r} ({reason})" for name, reason in bad.items())
        raise ValueError(f"config field(s) with no effect on {chip} chip, refused rather than ignored: {lines}. "
                         f"Leave them at their defaults.")
