"""Noise-tolerance sweeps: a TOML spec over any chip config field × seeds, run on local processes or a Dask
cluster into one resumable parquet table, and plots of it (DESIGN §5.3; docs/sweeps.md).

Public API::

    from mapping.sweep import load_spec, run_sweep, sweep_status, load_results, plot_sweep
    spec = load_spec("examples/sweep-small.toml")      # every point's ChipConfig built and validated here
    table = run_sweep(spec, "results/sweep-small", workers=2)
    plot_sweep("results/sweep-small")                  # PNG + SVG in results/sweep-small/plots
"""

from .plot import pareto_front, plot_sweep
from .run import SweepDirError, compute_point, export_csv, load_results, run_sweep, sweep_status
from .spec import METRIC_GROUPS, NOISE_SEED, Axis, Sample, SweepPoint, SweepSpec, TokenSpec, load_spec, spec_from_dict

__all__ = [
    "Axis", "METRIC_GROUPS", "NOISE_SEED", "Sample", "SweepDirError", "SweepPoint", "SweepSpec", "TokenSpec",
    "compute_point", "export_csv", "load_results", "load_spec", "pareto_front", "plot_sweep", "run_sweep",
    "spec_from_dict", "sweep_status",
]
