"""One-step methods of the engine, one per file; orders are class data."""

from .base import Solver
from .dopri5 import Dopri5
from .euler_maruyama import EulerMaruyama
from .heun import Heun
from .rk4 import RK4
from .sra1 import SRA1
from .stochastic_heun import StochasticHeun

__all__ = ["Solver", "EulerMaruyama", "StochasticHeun", "SRA1", "RK4", "Heun", "Dopri5"]
