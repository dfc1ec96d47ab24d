"""The backend registry: (layer kind, device) -> the backend classes that run it.

Backends register themselves (:func:`register`, a class decorator) when their module is imported;
:mod:`mapping.backends` imports every backend module, so asking the package is asking the registry. Nothing
outside this package compares a device or layer-kind name: the compiler asks :func:`require_backend` and
:func:`compile_records`, a run asks :func:`backend_for`.
"""

from __future__ import annotations

__all__ = ["register", "backend_for", "backend_classes", "require_backend", "compile_records", "registered",
           "describe_chip", "runs_as"]

_REGISTRY: dict[tuple[str, str], list[type]] = {}


def register(cls: type) -> type:
    """Class decorator: register ``cls`` under each of its (layer kind, device) pairs."""
    if not cls.layer_kinds or not cls.devices or not cls.name:
        raise ValueError(f"backend {cls.__name__} must set name, layer_kinds and devices")
    for kind in cls.layer_kinds:
        for dev in cls.devices:
            lst = _REGISTRY.setdefault((kind, dev), [])
            if cls not in lst:
                lst.append(cls)
                lst.sort(key=lambda c: -c.priority)
    return cls


def registered() -> dict[tuple[str, str], list[str]]:
    """(layer kind, device) -> the names of the backends registered there, highest priority first."""
    return {key: [c.name for c in classes] for key, classes in sorted(_REGISTRY.items())}


def runs_as(device: str) -> str:
    """The device name whose backends run ``device``: a chip device registered in :mod:`hw_models.devices` with
    ``runs_as`` (a plug-in device simulated like a built-in one), else ``device`` itself (a ladder rung such as
    'closed-form' or 'spice')."""
    from hw_models.devices import device_names, device_spec

    return device_spec(device).runs_as if device in device_names() else device


def backend_classes(layer_kind: str, device: str) -> list[type]:
    """The backend classes registered for (layer kind, device), highest priority first ([] if none)."""
    return list(_REGISTRY.get((layer_kind, runs_as(device)), ()))


def backend_for(chip, layer: int = 0, *, device: str | None = None):
    """The backend that runs layer ``layer`` of ``chip`` (an instance).

    ``device``: another registered device name to run the layer on (a ladder rung: 'closed-form',
    'ring-macromodel', 'ring-circuit', 'spice'); default the chip's own.

    Raises
    ------
    ValueError
        No backend is registered for the layer's kind on that device, or none accepts this chip (the message
        gives each one's reason).
    """
    if not 0 <= layer < len(chip.layers):
        raise ValueError(f"layer must be in [0, {len(chip.layers) - 1}], got {layer}")
    kind = chip.layers[layer].kind
    dev = chip.config.device if device is None else device
    classes = backend_classes(kind, dev)
    if not classes:
        known = sorted({d for (k, d) in _REGISTRY if k == kind})
        raise ValueError(f"no backend runs {kind!r} layers on {dev!r} (registered for this layer kind: "
                         f"{', '.join(known)})")
    reasons = []
    for cls in classes:
        why = cls.refuse(chip)
        if why is None:
            return cls()
        reasons.append(f"{cls.name}: {why}")
    raise ValueError("; ".join(reasons))


def require_backend(chip_kind: str, device: str) -> None:
    """Raise ValueError when no backend runs layers of a ``chip_kind`` model on ``device`` (the compiler's check,
    before any work), with the reason a backend of that device gives."""
    on_device = _on_device(device)
    if any(c.chip_kind == chip_kind for c in on_device):
        return
    for c in on_device:
        if chip_kind in c.refusals:
            raise ValueError(c.refusals[chip_kind])
    raise ValueError(f"no backend runs {chip_kind} layers on device {device!r}")


def _on_device(device: str) -> list[type]:
    """The backend classes registered on ``device`` (any layer kind), in registration-key order, once each."""
    out, device = [], runs_as(device)
    for (_, d), classes in sorted(_REGISTRY.items()):
        if d == device:
            out += [c for c in classes if c not in out]
    return out


def compile_records(config, device, chip_kind: str) -> dict:
    """Timebase entries the backends of ``device`` record at compile time (e.g. which spin-torque model runs)."""
    out = {}
    for c in _on_device(device.name):
        out.update(c.compile_record(config, device, chip_kind))
    return out


def describe_chip(chip):
    """The :class:`~mapping.backends.base.Description` of the backend of a chip's layers, with the device note of
    the backends of its device (e.g. the spin-torque regime line, whichever model runs)."""
    import dataclasses

    d = backend_for(chip, 0).describe(chip)
    if d.regime is None:
        for c in _on_device(chip.config.device):
            note = c.device_note(chip)
            if note is not None:
                return dataclasses.replace(d, regime=note)
    return d
