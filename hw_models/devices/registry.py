"""The device registries: oscillator classes by kind, and the chip devices (a chip's ``device`` name) by name.

Two registrations make a new device (one module, see ``tests/toy_device.py``):

- :func:`register_oscillator` (a class decorator): the :class:`~hw_models.devices.base.Oscillator` subclass
  under its ``kind``, so that :func:`device_for`, :func:`device_from_dict` and saved chips find it;
- :func:`register_device`: the chip device name a configuration selects (``device = "..."``), the nominal
  oscillator it builds, and the registered device whose simulation backends run it (``runs_as``; default
  itself: a new simulation backend registers under the new name, :mod:`mapping.backends.registry`).

Nothing here compares a name: a name is a key.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, fields

__all__ = ["ChipDeviceSpec", "register_oscillator", "register_device", "device_spec", "device_names",
           "oscillator_class", "oscillator_kinds", "device_for", "make_device", "device_from_dict"]

_OSCILLATORS: dict[str, type] = {}
_DEVICES: dict[str, "ChipDeviceSpec"] = {}


@dataclass(frozen=True, kw_only=True)
class ChipDeviceSpec:
    """A chip device: what ``device = name`` in a chip configuration builds and how it is simulated.

    Attributes
    ----------
    name : str
        The configuration's ``device`` value.
    build : callable
        ``build() -> Oscillator``: the nominal device (a preset), before the chip's sizing and f₀.
    runs_as : str
        The registered device name whose simulation backends run this one (itself by default).
    node_noise : bool
        Its simulation carries per-node current noise (the ``flicker`` field acts on it).
    summary : str
        One line for listings and docs.
    """

    name: str
    build: Callable
    runs_as: str
    node_noise: bool = False
    summary: str = ""


def register_oscillator(cls: type) -> type:
    """Class decorator: register an :class:`~hw_models.devices.base.Oscillator` subclass under its ``kind``."""
    from hw_models.devices.base import Oscillator

    if not (isinstance(cls, type) and issubclass(cls, Oscillator)) or not cls.kind or cls.params_type is object:
        raise ValueError(f"register_oscillator needs an Oscillator subclass with kind and params_type, got {cls!r}")
    if _OSCILLATORS.get(cls.kind, cls) is not cls:
        raise ValueError(f"oscillator kind {cls.kind!r} is already registered ({_OSCILLATORS[cls.kind].__name__})")
    _OSCILLATORS[cls.kind] = cls
    device_for.cache_clear()
    return cls


def register_device(name: str, build: Callable, *, runs_as: str | None = None, node_noise: bool = False,
                    summary: str = "") -> ChipDeviceSpec:
    """Register the chip device ``name`` (see :class:`ChipDeviceSpec`); returns its spec.

    Raises
    ------
    ValueError
        ``name`` is empty or already registered, ``build`` is not callable, or ``runs_as`` names no registered
        device.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if name in _DEVICES:
        raise ValueError(f"device {name!r} is already registered")
    if not callable(build):
        raise ValueError(f"build must be a callable returning an Oscillator, got {build!r}")
    if runs_as is not None and runs_as not in _DEVICES:
        raise ValueError(f"runs_as must be a registered device ({', '.join(_DEVICES)}), got {runs_as!r}")
    spec = ChipDeviceSpec(name=name, build=build, runs_as=name if runs_as is None else runs_as,
                          node_noise=bool(node_noise), summary=str(summary))
    _DEVICES[name] = spec
    return spec


def device_spec(name: str) -> ChipDeviceSpec:
    """The :class:`ChipDeviceSpec` registered as ``name`` (ValueError naming the valid ones)."""
    if name not in _DEVICES:
        raise ValueError(f"unknown device {name!r}; valid: {', '.join(_DEVICES)}")
    return _DEVICES[name]


def device_names() -> tuple[str, ...]:
    """Every registered chip device name, in registration order (the built-ins first)."""
    return tuple(_DEVICES)


def oscillator_kinds() -> tuple[str, ...]:
    """Every registered oscillator kind."""
    return tuple(_OSCILLATORS)


def oscillator_class(kind: str) -> type:
    """The Oscillator class registered under ``kind``."""
    if kind not in _OSCILLATORS:
        raise ValueError(f"kind must be one of {sorted(_OSCILLATORS)}, got {kind!r}")
    return _OSCILLATORS[kind]


@functools.lru_cache(maxsize=64)
def device_for(params):
    """The device object for a params dataclass (cached per params, so derived numbers are computed once)."""
    for cls in _OSCILLATORS.values():
        if isinstance(params, cls.params_type):
            return cls(params)
    raise ValueError(f"unknown device params {type(params).__name__}; valid: "
                     f"{', '.join(c.params_type.__name__ for c in _OSCILLATORS.values())}")


def make_device(kind: str, preset: str | None = None, **overrides):
    """A device from :data:`hw_models.presets.PRESETS`: ``make_device("ring", "cmos_65nm", n_stages=7)``."""
    from hw_models.presets import PRESETS

    if kind not in PRESETS:
        raise ValueError(f"kind must be one of {sorted(PRESETS)}, got {kind!r}")
    names = PRESETS[kind]
    preset = next(iter(names)) if preset is None else preset
    if preset not in names:
        raise ValueError(f"preset for kind {kind!r} must be one of {sorted(names)}, got {preset!r}")
    return oscillator_class(kind)(names[preset](**overrides), name=preset)


def device_from_dict(d: dict, where: str = "device"):
    """Inverse of :meth:`Oscillator.to_dict`; every field validated against the params' physical ranges."""
    if not isinstance(d, dict) or not {"kind", "preset", "params"} <= set(d):
        raise ValueError(f"{where} must be an object with keys 'kind', 'preset', 'params'")
    kind = d["kind"]
    if kind not in _OSCILLATORS:
        raise ValueError(f"{where}.kind must be one of {sorted(_OSCILLATORS)}, got {kind!r}")
    cls = _OSCILLATORS[kind]
    names = {f.name for f in fields(cls.params_type)}
    pd = d["params"]
    if not isinstance(pd, dict):
        raise ValueError(f"{where}.params must be an object")
    bad, missing = sorted(set(pd) - names), sorted(f.name for f in fields(cls.params_type)
                                                  if f.name not in pd)
    if bad or missing:
        raise ValueError(f"{where}.params: unknown field(s) {bad}, missing field(s) {missing}")
    pd = dict(pd)
    if "harmonics" in pd:
        pd["harmonics"] = tuple(tuple(r) for r in pd["harmonics"])
    try:
        params = cls.params_type(**pd)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}.params: {exc}") from None
    if hasattr(params, "check_ranges"):
        params.check_ranges(f"{where}.params")
    return cls(params, name=str(d["preset"]))
