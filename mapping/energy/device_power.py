"""Device power figures of the energy model, asked of the chip's :mod:`hw_models` objects: one coupler's static
dissipation at full scale (cached on disk by :mod:`hw_models.derived_cache`: a ring's limit cycle takes seconds)
and the mean oscillator power of the chip's instance draw.
"""

from __future__ import annotations

from hw_models.derived_cache import cached_scalar

from ..compiler.layers import model_kind_spec
from . import constants as ec

__all__ = ["coupler_static_power", "oscillator_power"]

_COUPLER_CACHE: dict = {}


def coupler_static_power(device, kind: str = "kuramoto", node=None) -> tuple[float, str]:
    """Static dissipation of one coupler at full scale [W] and its source.

    Parameters
    ----------
    device : mapping.compiler.device.ChipDevice
        The chip's device (``chip.device``).
    kind : {'kuramoto', 'ssa'}
        The chip kind, whose coupling matrix the coupler realises (one-way signed, or symmetric).
    node : hw_models.technology.TechnologyNode, optional
        The chip's node (default 65 nm): an ideal device is charged as the ring at this node.

    Notes
    -----
    With hw_models device objects (``device.coupler(matrix).power(oscillator)``) the chip's own coupler is asked;
    otherwise ring levels use ``hw_models.coupler_power`` of the 65 nm ring preset with its resistive coupler.
    Bidirectional couplers are charged at Δ = π/2 (the mean over uniformly spread phase differences for
    near-sinusoidal node waveforms). Spin-torque electrical coupling without a coupler power: assumed
    (:data:`mapping.energy.constants.STNO_COUPLER_W`). Every coupler is charged at full scale (an upper estimate).
    """
    from hw_models.technology import REFERENCE_NODE

    node = REFERENCE_NODE if node is None else node
    one_way = model_kind_spec(kind).one_way_couplers
    name = device.name
    ck = (name, kind, repr(device.oscillator), node.node_nm, node.flavor, node.vdd)
    if ck in _COUPLER_CACHE:
        return _COUPLER_CACHE[ck]
    full = " at full scale (an upper estimate: a coupler programmed to w dissipates about w times this)"
    osc = device.oscillator
    if device.is_stno:
        out = (ec.STNO_COUPLER_W.value, ec.STNO_COUPLER_W.source)
    elif device.is_ring:  # the chip's own coupler for its matrix, asked directly
        c = device.coupler(one_way)
        p = cached_scalar(f"{name}:{kind}:{c!r}:{osc.params!r}", lambda: c.power(osc))
        out = (p, f"hw_models {type(c).__name__}.power(device) of the chip's {kind} coupler" + full)
    else:  # ideal devices: the ring's coupler of the same kind at the chip's node, assumed
        ring = node.ring()
        c = ring.coupler(one_way=one_way)
        p = cached_scalar(f"ring:{kind}:{c!r}:{ring.params!r}", lambda: c.power(ring))
        out = (p, f"{name} device charged as the {node.node_nm:g} nm ring's {type(c).__name__} (assumed): "
                  f"hw_models {type(c).__name__}.power(device)" + full)
    _COUPLER_CACHE[ck] = out
    return out


def oscillator_power(chip) -> float:
    """Mean oscillator power [W]: over the chip's per-instance draw where it carries one, else the nominal."""
    import numpy as np

    draws = [np.asarray(lm.power_w, float) for lm in chip.layers if getattr(lm, "power_w", None) is not None]
    if draws and all(np.any(d) for d in draws):
        return float(np.mean([d.mean() for d in draws]))
    return float(chip.device.power_w)


