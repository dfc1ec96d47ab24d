"""Adapter from :mod:`hw_models` presets to :class:`mapping.devices.DeviceProfile` (filled in as hw_models lands)."""

from __future__ import annotations


def profile(name, fallback):
    """Return a DeviceProfile built from hw_models, or None when the interface is not there."""
    return None
