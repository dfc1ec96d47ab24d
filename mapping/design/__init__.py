"""Co-design search: multi-objective search over chip fields for the designs where oscillator attention wins,
or the term that bounds every design (DESIGN §5.7; docs/design.md).

Public API::

    from mapping.design import load_design_spec, run_design, load_trials
    spec = load_design_spec("examples/design-small.toml")   # fields, ranges, objectives, constraints checked
    trials = run_design(spec, "results/design-small", workers=2)   # Optuna study in DIR/study.db, resumable
    # DIR/trials.parquet, DIR/front.parquet, DIR/report.md (the verdict), DIR/plots/, DIR/front.html
"""

from .evaluate import GAIN_CELL_ANCHOR, anchor_j_per_token, trial_metrics
from .results import VERDICT_BPC_LOSS, front_mask, load_trials, pareto_mask, trials_table, verdict, write_results
from .spec import METRICS, SAMPLERS, Constraint, DesignSpec, Dimension, config_of, design_spec_from_dict, load_design_spec
from .study import DesignDirError, check_space, run_design, storage_url

__all__ = [
    "Constraint", "DesignDirError", "DesignSpec", "Dimension", "GAIN_CELL_ANCHOR", "METRICS", "SAMPLERS",
    "VERDICT_BPC_LOSS", "anchor_j_per_token", "check_space", "config_of", "design_spec_from_dict", "front_mask",
    "load_design_spec", "load_trials", "pareto_mask", "run_design", "storage_url", "trial_metrics", "trials_table",
    "verdict", "write_results",
]
