"""The Numba ODE/SDE engine for batches of oscillator networks.

One verb, small objects as arguments::

    sol = simulate(model, solver, t0, t1, dt, y0, save=SaveEvery(1), seed=0)

See ``docs/engine.md`` for the guide.
"""

from .custom_ode import CustomODE
from .drives import ExternalDrive, SubharmonicInjection
from .phase_factored import FactoredPhaseNetwork, with_coupling_factors
from .phase_network import PackedPhaseNetwork, PhaseNetwork
from .rng import brownian_increments, standard_normals
from .saving import SaveAt, SaveEvery, SaveSummary
from .simulate import simulate
from .solution import SimulationError, Solution
from .solvers import RK4, SRA1, Dopri5, EulerMaruyama, Heun, Solver, StochasticHeun
from .stuart_landau import StuartLandauNetwork



def cuda_available() -> tuple[bool, str]:
    """Whether ``simulate(..., backend="cuda")`` can run here, and on what (or why not).

    Imports Numba's CUDA target only when called, so the CPU engine never loads it.
    """
    from ._cuda import cuda_available as _available

    return _available()


__all__ = [
    "simulate",
    "cuda_available",
    "PhaseNetwork",
    "PackedPhaseNetwork",
    "FactoredPhaseNetwork",
    "with_coupling_factors",
    "StuartLandauNetwork",
    "CustomODE",
    "SubharmonicInjection",
    "ExternalDrive",
    "Solver",
    "EulerMaruyama",
    "StochasticHeun",
    "SRA1",
    "RK4",
    "Heun",
    "Dopri5",
    "SaveEvery",
    "SaveAt",
    "SaveSummary",
    "Solution",
    "SimulationError",
    "brownian_increments",
    "standard_normals",
]
