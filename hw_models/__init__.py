"""hw_models: device physics (CMOS ring oscillators, spin-torque oscillators, ideal phase oscillators).

Public API (SI units throughout; see docs/devices.md for the device interface used by ``mapping``).
"""

from hw_models.couplers import coupler_current
from hw_models.devices import (IdealOscillator, Oscillator, RingOscillator, SpinTorqueOscillator, device_for,
                               device_from_dict, device_names, device_spec, make_device, register_device,
                               register_oscillator)
from hw_models.energy import coupler_power, ring_power_circuit, ring_power_cv2f, stno_power
from hw_models.ideal import ideal_phase_network, ring_phase_network
from hw_models.interface import (DeviceInstances, coupler_programming_energy, coupling_function, draw_mismatch,
                                 energy_per_cycle, free_running_frequency, phase_diffusion, phase_noise_dbc_hz,
                                 power)
from hw_models.mismatch import analytic_frequency_spread, draw_ring_mismatch, frequency_sensitivities
from hw_models.noise import (isf_diffusion, isf_rms, measure_phase_diffusion, node_noise_sigma,
                             thermal_current_psd)
from hw_models.params import (IdealOscillatorParams, ResistiveCoupler, RingOscillatorParams, STNOParams,
                              TransmissionGateCoupler, TransconductanceCoupler)
from hw_models.presets import (PRESET_SOURCES, PRESETS, cmos_65nm_coupler, cmos_65nm_ring, cmos_65nm_transconductor,
                               ideal_oscillator, level1_180nm_ring, vortex_stno)
from hw_models.ring import Coupling, RingMismatch, RingNetwork, pack_ring_params, ring_initial_state, ring_rhs
from hw_models.ring_macro import (CouplingFunction, LimitCycle, limit_cycle, locking_range_two_rings,
                                  macro_locking_boundary, ring_coupling_function)
from hw_models.ring_sim import (circuit_locking_boundary, circuit_locking_range, pairs_network, ring_frequencies,
                                simulate_ring_networks, two_ring_network)
from hw_models.spice import NgspiceError, SpiceResult, ring_network_netlist, run_ngspice
from hw_models.stno import (simulate_stno, stno_coupling_function, stno_diffusion, stno_frequency_hz,
                            stno_locking_half_range, stno_model, stno_noise_sigma, stno_nu, stno_power_p0,
                            stno_relaxation_rate)
from hw_models.technology import Figure, TechnologyExtrapolationWarning, TechnologyNode
from hw_models.waveform import crossing_times, frequency_amplitude

__all__ = [
    # device objects (the protocol mapping uses)
    "Oscillator", "RingOscillator", "SpinTorqueOscillator", "IdealOscillator", "device_for", "make_device",
    "device_from_dict", "register_oscillator", "register_device", "device_spec", "device_names", "coupler_current", "cmos_65nm_transconductor", "level1_180nm_ring", "PRESET_SOURCES",
    # params and presets
    "RingOscillatorParams", "ResistiveCoupler", "TransmissionGateCoupler", "TransconductanceCoupler", "STNOParams", "IdealOscillatorParams",
    "cmos_65nm_ring", "cmos_65nm_coupler", "vortex_stno", "ideal_oscillator", "PRESETS",
    # uniform device interface
    "free_running_frequency", "phase_diffusion", "coupling_function", "power", "energy_per_cycle",
    "coupler_programming_energy", "phase_noise_dbc_hz", "draw_mismatch", "DeviceInstances",
    # ring circuit
    "Coupling", "RingNetwork", "RingMismatch", "pack_ring_params", "ring_rhs", "ring_initial_state",
    "simulate_ring_networks", "ring_frequencies", "two_ring_network", "pairs_network",
    "circuit_locking_range", "circuit_locking_boundary",
    # ring macromodel
    "LimitCycle", "limit_cycle", "CouplingFunction", "ring_coupling_function", "locking_range_two_rings",
    "macro_locking_boundary", "ring_phase_network", "ideal_phase_network",
    # noise, mismatch, energy
    "thermal_current_psd", "node_noise_sigma", "isf_rms", "isf_diffusion", "measure_phase_diffusion",
    "draw_ring_mismatch", "frequency_sensitivities", "analytic_frequency_spread",
    "ring_power_cv2f", "ring_power_circuit", "coupler_power", "stno_power",
    # STNO
    "stno_power_p0", "stno_frequency_hz", "stno_nu", "stno_relaxation_rate", "stno_noise_sigma", "stno_diffusion",
    "stno_locking_half_range", "stno_model", "simulate_stno", "stno_coupling_function",
    # process technology (node scaling, DESIGN 5.7)
    "TechnologyNode", "TechnologyExtrapolationWarning", "Figure",
    # SPICE and waveforms
    "ring_network_netlist", "run_ngspice", "SpiceResult", "NgspiceError", "crossing_times", "frequency_amplitude",
]
