"""Device power figures of the energy model, asked of the chip's :mod:`hw_models` objects: one coupler's static
dissipation at full scale (the device caches it on disk, :mod:`hw_models.derived_cache`: a ring's limit cycle
takes seconds) and the mean oscillator power of the chip's instance draw.
"""

from __future__ import annotations

from ..compiler.layers import model_kind_spec

__all__ = ["coupler_static_power", "oscillator_power"]

_COUPLER_CACHE: dict = {}


def coupler_static_power(device, kind: str = "kuramoto", node=None) -> tuple[float, str]:
    """Static dissipation of one coupler at full scale [W] and its source, asked of the chip's device
    (:meth:`hw_models.devices.Oscillator.coupler_static_power`).

    Parameters
    ----------
    device : mapping.compiler.device.ChipDevice
        The chip's device (``chip.device``).
    kind : {'kuramoto', 'ssa'}
        The chip kind, whose coupling matrix the coupler realises (one-way signed, or symmetric).
    node : hw_models.technology.TechnologyNode, optional
        The node the device is drawn at (default 65 nm): a device without a coupler circuit of its own is
        charged as the ring's coupler at this node (assumed, stated in the source).

    Notes
    -----
    The device's own coupler for the matrix where it has one (a ring's transconductor or resistor, bidirectional
    ones at Δ = π/2; a spin-torque oscillator's assumed amplifier). Every coupler is charged at full scale (an
    upper estimate).
    """
    from hw_models.technology import REFERENCE_NODE

    node = REFERENCE_NODE if node is None else node
    one_way = model_kind_spec(kind).one_way_couplers
    device.coupler(one_way)  # the matrix is realisable (a ValueError naming one_way/sign otherwise)
    ck = (device.name, kind, repr(device.oscillator), node.node_nm, node.flavor, node.vdd)
    if ck not in _COUPLER_CACHE:
        _COUPLER_CACHE[ck] = device.oscillator.coupler_static_power(one_way, node)
    return _COUPLER_CACHE[ck]


def oscillator_power(chip) -> float:
    """Mean oscillator power [W]: over the chip's per-instance draw where it carries one, else the nominal."""
    import numpy as np

    draws = [np.asarray(lm.power_w, float) for lm in chip.layers if getattr(lm, "power_w", None) is not None]
    if draws and all(np.any(d) for d in draws):
        return float(np.mean([d.mean() for d in draws]))
    return float(chip.device.power_w)


