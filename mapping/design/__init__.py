"""Co-design search: multi-objective search over chip fields for the designs where oscillator attention wins,
or the term that bounds every design (DESIGN §5.7; docs/design.md).

Public API::

    from mapping.design import load_design_spec, run_design, load_trials
    spec = load_design_spec("examples/design-small.toml")   # fields, ranges, objectives, constraints checked
    trials = run_design(spec, "results/design-small", workers=2)   # Optuna study in DIR/study.db, resumable
    # DIR/trials.parquet, DIR/front.parquet, DIR/report.md (the verdict), DIR/plots/, DIR/front.html
    # `oscsim design SPEC --out DIR --finetune`: finetune_front (mapping.design.finetune), DIR/finetune/<trial>/

The names below are loaded from their module on first use (PEP 562), so that registering ``oscsim design``
imports nothing heavy.
"""

import importlib

_EXPORTS = {
    "GAIN_CELL_ANCHOR": "evaluate", "anchor_j_per_token": "evaluate", "trial_metrics": "evaluate",
    "static_metrics": "evaluate",
    "MEASURED_COLUMNS": "results", "front_mask": "results", "load_trials": "results", "pareto_mask": "results",
    "trials_table": "results", "verdict": "results", "write_results": "results",
    "METRICS": "spec", "SAMPLERS": "spec", "VERDICT_BPC_LOSS": "spec", "Constraint": "spec", "DesignSpec": "spec",
    "Dimension": "spec", "design_spec_from_dict": "spec", "load_design_spec": "spec",
    "DesignDirError": "study", "check_space": "study", "run_design": "study", "storage_url": "study",
    "plot_design": "plots", "recheck_front": "recheck", "load_recheck": "results", "rewrite_results": "study",
    "FinetuneSpec": "spec", "finetune_front": "finetune", "load_finetune": "results",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return __all__
