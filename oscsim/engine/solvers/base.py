"""What every solver declares: its orders, the calculus it converges to, and the noise it accepts."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import ClassVar

__all__ = ["Solver"]


@dataclass(frozen=True)
class Solver:
    """Base class of the engine's one-step methods.

    Class data (read them, do not set them):

    ``strong_order``
        Strong (pathwise) order for the noise the engine supports (additive), or None for a deterministic
        method.
    ``deterministic_order``
        Order of the method on an ODE (σ = 0).
    ``calculus``
        ``"Ito"``, ``"Stratonovich"``, ``"either"`` (additive noise: the two readings coincide) or None.
    ``noise``
        ``"additive"`` (the only noise structure the engine's models have) or None (deterministic only).
    ``n_stages``
        Scratch vectors the step needs (rows of its workspace ``K``).
    ``adaptive``
        True for an embedded pair that chooses its own step.

    A solver only does one step; the time loop, the noise, saving and blow-up checks live in
    ``oscsim.engine._loop``. ``dt`` belongs to ``simulate``, not to the solver.
    """

    strong_order: ClassVar[float | None] = None
    deterministic_order: ClassVar[float] = 1.0
    calculus: ClassVar[str | None] = None
    noise: ClassVar[str | None] = None
    n_stages: ClassVar[int] = 1
    needs_area: ClassVar[bool] = False
    adaptive: ClassVar[bool] = False

    @property
    def is_stochastic(self) -> bool:
        """Whether the method accepts noise."""
        return self.noise is not None

    def _kernel_key(self):
        return type(self).__name__

    def _step(self):
        """The compiled one-step function: ``step(drift, t, h, y, sig, dW, area, g, P, ws, K, ynew)`` for a
        fixed-step method, ``step(drift, t, h, y, g, P, ws, K, ynew, rtol, atol) -> error norm`` for an
        adaptive pair.

        It is the function named ``step`` in the module that defines the solver class (`_codegen` reads the
        source of the same function to write the cached kernels), so a solver module holds its step and its
        class data and nothing else.
        """
        step = getattr(sys.modules[type(self).__module__], "step", None)
        if step is None:
            raise NotImplementedError(f"{type(self).__name__}: its module {type(self).__module__} defines no step")
        return step
