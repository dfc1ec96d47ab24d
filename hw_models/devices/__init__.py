"""Devices as objects: one class per oscillator technology, one module each, one protocol, two registries.

================  ==========================================================================================
module            content
================  ==========================================================================================
``base``          :class:`Oscillator`, the protocol (its table lists every member), :class:`DeviceInstances`
``ring``          :class:`RingOscillator`: CMOS inverter ring (circuit limit cycle, PPV, porting to a node)
``stno``          :class:`SpinTorqueOscillator`: the universal auto-oscillator model
``ideal``         :class:`IdealOscillator`: every number a parameter
``registry``      oscillator classes by kind; chip devices by the name a chip configuration selects
================  ==========================================================================================

The chip devices registered here (a chip's ``device``):

==================  =====================================  ===================================================
name                nominal device                         simulated by
==================  =====================================  ===================================================
``ideal``           IdealOscillator (``ideal_oscillator``)  the phase macromodel
``ring-macromodel`` RingOscillator ``cmos_65nm``            the phase macromodel with the ring's PPV-derived H
``ring-circuit``    RingOscillator ``cmos_65nm``            node-voltage SDEs of every ring and coupler
``spin-torque``     SpinTorqueOscillator ``vortex``         phase model, or the complex amplitudes
==================  =====================================  ===================================================
"""

from hw_models.devices.base import CouplingFunction, DeviceInstances, Oscillator
from hw_models.devices.ideal import IdealOscillator
from hw_models.devices.registry import (ChipDeviceSpec, device_for, device_from_dict, device_names, device_spec,
                                        make_device, oscillator_class, oscillator_kinds, register_device,
                                        register_oscillator)
from hw_models.devices.ring import RingOscillator
from hw_models.devices.stno import SpinTorqueOscillator

__all__ = ["Oscillator", "RingOscillator", "SpinTorqueOscillator", "IdealOscillator", "DeviceInstances",
           "CouplingFunction", "device_for", "make_device", "device_from_dict", "ChipDeviceSpec",
           "register_oscillator", "register_device", "device_spec", "device_names", "oscillator_class",
           "oscillator_kinds", "BUILTIN_DEVICES"]

for _cls in (RingOscillator, SpinTorqueOscillator, IdealOscillator):
    register_oscillator(_cls)

register_device("ideal", lambda: make_device("ideal", "default"),
                summary="pure Kuramoto phase oscillator; every number a parameter")
register_device("ring-macromodel", lambda: make_device("ring", "cmos_65nm"),
                summary="65 nm CMOS ring (cmos_65nm_ring) as its phase macromodel (PPV-derived H)")
register_device("ring-circuit", lambda: make_device("ring", "cmos_65nm"), node_noise=True,
                summary="the same rings as node-voltage SDEs of every ring and coupler")
register_device("spin-torque", lambda: make_device("stno", "vortex"),
                summary="vortex spin-torque nano-oscillator (universal model; phase or complex amplitude)")

#: the chip devices this package registers (a plugin's are added after these)
BUILTIN_DEVICES = device_names()
