"""Coupled CMOS rings at node-voltage level: the circuit rung of the fidelity ladder.

G independent networks of T five-stage inverter rings (the chip's own :class:`hw_models.RingOscillator`,
square-law MOSFETs as in ngspice level 1) and, for every pair u < t, a unilateral transconductance coupler
(:class:`hw_models.TransconductanceCoupler`) injecting

    i_{t←u}(s) = G_{t,u} [w₁ (V_{u,0}(s) − V_DD/2) + w₂ (V_{u,k}(s) − V_DD/2)]

into node 0 of ring t. G_{t,u} is signed: a negative gain is the transconductor with its output pair swapped.
The two taps (node 0 and node k, weights w₁, w₂; :mod:`hw_models.two_tap`) make the first harmonic of the
coupler's coupling function a pure sine.

Node equation (C_{r,k} the node load, ΔV_T per transistor):

    C_{r,k} dV_{r,k} = [I_P − I_N + δ_{k0} Σ_{u<r} i_{r←u}] ds + √(S_i/2) dW_{r,k},

S_i = 4 k_B T γ (g_m,n + g_m,p) the channel thermal noise (:func:`hw_models.thermal_current_psd`), plus, with
flicker, K_f Ornstein–Uhlenbeck currents per node (:class:`hw_models.flicker.FlickerNoise`). Integrated by
:class:`oscsim.engine.CustomODE` with the Numba right-hand side :func:`network_rhs`, RK4 without noise and
stochastic Heun with it, at ``steps_per_period`` steps per period.

Mismatch: each transistor's ΔV_T (Pelgrom) and each node's load spread; the frequency trim scales all loads of
a ring by one factor (its time scales exactly), set from the ring's own calibrated period so that its residual
frequency error is the target. Phase in: placement on the ring's own limit cycle, or an injection transient
(:func:`inject_rings`). Phase out: the couplers switch off at τ_s inside the right-hand side, each ring
free-runs for ``READ_CYCLES`` and its phase is read from the interpolated rising V_DD/2 crossings of node 0
against a reference calibrated on nominal rings through the same integrator (:func:`simulate_heads`).

Valid where the level-1 transistor model is (no gate or junction capacitance, GAMMA = 0, TNOM): it is the rung
that ngspice checks (:func:`head_netlist`, :func:`run_head_spice`). The chip's use of these networks
(programming, periphery, noise keys) is :mod:`mapping.backends.circuit`.

Modules: :mod:`~hw_models.coupled_rings.device` (ring, limit cycle, coupler), :mod:`~.rhs` (the ODEs),
:mod:`~.integrate` (engine runs, crossings), :mod:`~.head` (mismatch, calibration, trim, packing),
:mod:`~.readout`, :mod:`~.injection`, :mod:`~.network` (simulate and read), :mod:`~.phase_noise`,
:mod:`~.spice` (the same networks as an ngspice netlist, and its runner).
"""

from hw_models.coupled_rings.device import CircuitDevice, circuit_device, transconductor_coupling_function
from hw_models.coupled_rings.head import (DEFAULT_STEPS_PER_PERIOD, CircuitHead, RingCalibration, build_head,
                                          calibrate_rings, draw_circuit_mismatch, numerical_cycle,
                                          place_on_limit_cycle, place_on_own_cycle)
from hw_models.coupled_rings.injection import inject_rings, injection_drive, injection_residuals
from hw_models.coupled_rings.integrate import crossings, integrate_networks, read_phases
from hw_models.coupled_rings.network import reference_offset, reference_offset_injected, simulate_heads
from hw_models.coupled_rings.phase_noise import ring_phase_noise
from hw_models.coupled_rings.readout import READ_CYCLES, READ_SKIP_CYCLES, READ_STEP_FACTOR
from hw_models.coupled_rings.rhs import HEADER, PER_NODE, network_rhs, network_rhs_np
from hw_models.coupled_rings.spice import SPICE_MAX_RINGS, SPICE_MAX_TOKENS, head_netlist, run_head_spice

__all__ = [
    "CircuitDevice", "circuit_device", "transconductor_coupling_function", "DEFAULT_STEPS_PER_PERIOD",
    "CircuitHead", "RingCalibration", "build_head", "calibrate_rings", "draw_circuit_mismatch", "numerical_cycle",
    "place_on_limit_cycle", "place_on_own_cycle", "inject_rings", "injection_drive", "injection_residuals",
    "crossings", "integrate_networks", "read_phases", "reference_offset", "reference_offset_injected",
    "simulate_heads", "ring_phase_noise", "READ_CYCLES", "READ_SKIP_CYCLES", "READ_STEP_FACTOR", "HEADER",
    "PER_NODE", "network_rhs", "network_rhs_np", "SPICE_MAX_RINGS", "SPICE_MAX_TOKENS", "head_netlist",
    "run_head_spice",
]
