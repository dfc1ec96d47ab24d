"""oscsim: the mathematics of oscillator-based attention.

Closed-form torch operators (``oscsim.nn``), the Numba ODE/SDE engine for batches of oscillator networks
(``oscsim.engine``), analysis (``oscsim.analysis``) and reference backends (``oscsim.reference``).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
