"""Independent references for the engine: a pure-NumPy phase network and a Brian2 backend."""

from .brian2_backend import simulate_brian2
from .numpy_phase import phase_drift, simulate_numpy

__all__ = ["phase_drift", "simulate_numpy", "simulate_brian2"]
