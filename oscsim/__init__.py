"""oscsim: the mathematics of oscillator-based attention.

Subpackages (each one's public API is its ``__init__``):

- ``oscsim.engine``: the Numba ODE/SDE engine for batches of oscillator networks (``simulate``, models,
  solvers, saving policies);
- ``oscsim.analysis``: order parameter, coherence, mean frequency, phase extraction from waveforms;
- ``oscsim.reference``: the pure-NumPy phase network and the Brian2 backend used to check the engine;
- ``oscsim.nn``: closed-form torch operators and models (Kuramoto attention, SSA/OSN, transformer baseline);
- ``oscsim.data``: the bundled Shakespeare corpus and the enwik8 loader;
- ``oscsim.train``: training, evaluation, checkpoints (safetensors + JSON).

Subpackages load on first access (``oscsim.engine`` imports Numba, ``oscsim.nn`` imports torch), so that
``import oscsim`` and the command line stay fast. Device physics lives in ``hw_models`` and the chip compiler
in ``mapping``; this package never imports them.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_SUBPACKAGES = ("analysis", "data", "engine", "nn", "reference", "train")

__all__ = ["__version__", *_SUBPACKAGES]


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"oscsim.{name}")
    raise AttributeError(f"module 'oscsim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
