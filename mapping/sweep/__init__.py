"""Noise-tolerance sweeps: a TOML spec over any chip config field × seeds, run on local processes or a Dask
cluster into one resumable parquet table, and plots of it (DESIGN §5.3; docs/sweeps.md).

Public API::

    from mapping.sweep import load_spec, run_sweep, sweep_status, load_results, plot_sweep
    spec = load_spec("examples/sweep-small.toml")      # every point's ChipConfig built and validated here
    table = run_sweep(spec, "results/sweep-small", workers=2)
    plot_sweep("results/sweep-small")                  # PNG + SVG in results/sweep-small/plots
"""

from __future__ import annotations

import importlib

_EXPORTS = {"pareto_front": "plot", "plot_sweep": "plot", "SweepDirError": "run", "check_inputs": "run", "compute_point": "point",
            "export_csv": "run", "load_results": "run", "run_sweep": "run", "sweep_status": "run", "LocalWorkers": "executors",
            "METRIC_GROUPS": "spec", "NOISE_SEED": "spec", "Axis": "spec", "Sample": "spec", "SweepPoint": "spec",
            "SweepSpec": "spec", "TokenSpec": "spec", "load_spec": "spec", "spec_from_dict": "spec"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):  # names load on first access, so that `oscsim sweep --help` imports no numpy
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
