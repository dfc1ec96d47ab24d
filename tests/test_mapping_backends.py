"""mapping.backends: the registry picks one backend per (layer kind, device), refusals say why, a new backend
is one registered class, and the protocol's settings are built once per layer."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from mapping.backends import backend_for, registered, require_backend
from mapping.backends.base import LayerBackend
from mapping.backends.registry import _REGISTRY, register
from hw_models.devices import BUILTIN_DEVICES


def _chip(kind="kuramoto", device="ring-macromodel", ring=True, stno=None):
    return NS(layers=[NS(kind=kind)], config=NS(device=device),
              device=NS(oscillator=NS(has_circuit=ring), name=device), timebase={} if stno is None else {"stno": {"model": stno}})


@pytest.mark.parametrize("kind", ["kuramoto", "ssa-pairwise", "ssa1d-collective"])
@pytest.mark.parametrize("device", BUILTIN_DEVICES)
def test_every_layer_kind_on_every_device_has_one_backend_or_a_reason(kind, device):
    chip = _chip(kind, device, ring=device.startswith("ring"), stno="phase" if device == "spin-torque" else None)
    if kind != "kuramoto" and device == "ring-circuit":
        with pytest.raises(ValueError, match="no backend runs"):
            backend_for(chip, 0)
        with pytest.raises(ValueError, match="not built for SSA"):
            require_backend("ssa", device)
        return
    b = backend_for(chip, 0)
    assert kind in b.layer_kinds and device in b.devices


def test_the_spin_torque_regime_picks_the_amplitude_network():
    assert backend_for(_chip(device="spin-torque", ring=False, stno="amplitude"), 0).name == \
        "spin-torque complex amplitude"
    assert backend_for(_chip(device="spin-torque", ring=False, stno="phase"), 0).name == "phase macromodel"
    # SSA layers on the same device run their cells whatever the regime
    assert backend_for(_chip("ssa-pairwise", "spin-torque", False, "amplitude"), 0).name == "SSA pairwise cells"


def test_ladder_devices_and_their_refusals():
    ring = _chip()
    assert backend_for(ring, 0, device="closed-form").name == "closed form"
    assert backend_for(ring, 0, device="ring-circuit").name == "ring circuit"
    assert backend_for(ring, 0, device="spice").name == "ngspice"
    with pytest.raises(ValueError, match="CMOS ring circuit; this chip's device is 'ideal'"):
        backend_for(_chip(device="ideal", ring=False), 0, device="spice")
    with pytest.raises(ValueError, match="layer must be in"):
        backend_for(ring, 3)


def test_a_new_backend_is_one_registered_class():
    class Echo(LayerBackend):
        name, layer_kinds, devices, chip_kind = "echo", ("kuramoto",), ("test-device",), "kuramoto"

        def prepare(self, chip, layer, *, integrator="auto", **overrides):
            return {"layer": layer, **overrides}

        def step(self, prepared, inputs, seeds):
            return inputs

        def describe(self, chip):
            return None

    try:
        register(Echo)
        assert registered()[("kuramoto", "test-device")] == ["echo"]
        b = backend_for(_chip(device="test-device"), 0)
        assert isinstance(b, Echo) and b.step(b.prepare(None, 0, x=1), "in", None) == "in"
        require_backend("kuramoto", "test-device")
    finally:
        _REGISTRY.pop(("kuramoto", "test-device"), None)
    with pytest.raises(ValueError, match="no backend runs kuramoto layers"):
        require_backend("kuramoto", "test-device")


def test_a_backend_must_name_what_it_runs():
    class Nameless(LayerBackend):
        def prepare(self, chip, layer, **kw): ...
        def step(self, prepared, inputs, seeds): ...
        def describe(self, chip): ...

    with pytest.raises(ValueError, match="must set name"):
        register(Nameless)
