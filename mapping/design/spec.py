"""Design spec: the search space over chip fields, the objectives, the constraints, the sampler (TOML).

A design search looks for the chips that trade BPC loss, energy per token, area and latency best, under
constraints (DESIGN §5.7). The space names any :class:`~mapping.config.ChipConfig` field by the dotted names of
``oscsim sweep`` (:mod:`mapping.sweep.spec`), so a field added to the config later can be searched without a
change here. Everything that can be checked without running a trial is checked when the spec is loaded: an
unknown field, a range the config refuses at either end, an unknown objective, a constraint that cannot be met
by any value of its metric (``area_mm2 <= 0``) or that contradicts another. :func:`mapping.design.check_space`
then probes the static metrics (area, latency, energy need no simulation) at the corners of the space before
the study starts.

Layout (see ``examples/design-small.toml``)::

    name = "design-small"
    checkpoint = "kuramoto-tiny"        # bundled name or checkpoint folder (relative to the spec file)
    chip = "chip.toml"                  # base config: a TOML path, or an inline [chip] table
    sampler = "nsga2"                   # nsga2 | tpe
    seed = 0                            # seed of the sampler: the same spec and seed give the same trials
    trials = 24                         # total trials (a rerun with more extends the study)
    population = 8                      # trials asked, evaluated and told together (NSGA-II: its population)
    objectives = ["bpc_loss", "energy_per_token_j", "area_mm2", "latency_per_token_s"]   # all minimised
    constraints = ["bpc_loss <= 0.05", "area_mm2 <= 900"]

    [tokens]                            # evaluation text of every trial (as in a sweep)
    windows = 1
    seq_len = 32

    [space]                             # uniform / loguniform = [lo, hi], int = [lo, hi], choice = [...]
    "coupling.bits" = { int = [3, 8] }
    "readout.noise_rad" = { loguniform = [1e-3, 0.1] }
    "device" = { choice = ["ideal", "ring-macromodel"] }

    [seeds]
    noise = 0                           # noise seed of every trial's chip run

    [finetune]                          # optional: the budget of `oscsim design ... --finetune` (FinetuneSpec)
    designs = 1                         # the verdict's design, then the next-lowest rescored losses
    steps = 150
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import ChipConfig, config_to_dict, read_toml
from ..sweep.distributions import Distribution, parse_distribution
from ..sweep.spec import (TokenSpec, base_config, canonical, check_field, check_spec_table, checkpoint_path,
                          config_with, is_int, normalise_value, token_spec)

__all__ = ["Dimension", "Constraint", "DesignSpec", "FinetuneSpec", "load_design_spec", "design_spec_from_dict", "METRICS",
           "SAMPLERS", "VERDICT_BPC_LOSS", "fmt_value"]

#: Metrics a design is judged on: name -> (unit, lowest physically possible value). All are minimised.
METRICS = {
    "bpc_loss": ("bits/char", -8.0),           # chip BPC − closed-form BPC; ≥ −8 (a byte carries ≤ 8 bits)
    "energy_per_token_j": ("J/token", 0.0),    # attention layers, the config's phase (mapping.energy_report)
    "area_mm2": ("mm^2", 0.0),                 # the die (mapping.energy.chip_area)
    "latency_per_token_s": ("s/token", 0.0),   # the schedule's windows per token (mapping.energy.latency)
}
#: Objectives a spec does not name but a workload's sub-study may use: one head's relative increment error
#: (mapping.simulation.head) stands for bpc_loss where only the head-level error is measured
#: (mapping.design.workloads).
SUB_STUDY_METRICS = {"head_error": ("relative", 0.0)}
SAMPLERS = ("nsga2", "tpe")
_TOP_KEYS = ("name", "checkpoint", "chip", "sampler", "seed", "trials", "population", "objectives", "constraints",
             "tokens", "space", "seeds", "finetune", "workloads")
_OPS = ("<=", ">=")
#: Fields that are not design choices the search may make: they choose what is reported (the GPU compared with,
#: its precision and bound, the phase the headline reports). The periphery's precision is simulated by the chip
#: run (mapping.periphery.precision) and the batch is charged its weight reuse (the fidelity of a sequence does
#: not depend on its batch), so ``energy.digital_precision`` and ``energy.batch`` are searchable; so are
#: ``energy.weights``, ``energy.sram_max_bytes`` and ``energy.offchip`` (where the weights and keys live, charged
#: their area, leakage and access energy; the fidelity run does not depend on them) and the analog-score mode
#: ([scores] mode), simulated.
_NOT_SEARCHABLE = {f"energy.{f}": "it chooses what is reported (the GPU compared with, its precision and bound, "
                                  "the phase of the headline), not the chip; set it in the base chip"
                   for f in ("gpu", "gpu_precision", "gpu_bound", "phase")}
_MAX_TRIALS = 100_000
#: The BPC loss at which the verdict names the best design (issue 20 item 7).
VERDICT_BPC_LOSS = 0.05


@dataclass(frozen=True, kw_only=True)
class Dimension:
    """One searched field.

    Attributes
    ----------
    field : str
        Dotted name of a :class:`~mapping.config.ChipConfig` field.
    kind : {'uniform', 'loguniform', 'int', 'choice'}
    values : tuple
        (lo, hi) for uniform, loguniform (lo > 0) and int (inclusive, integers); the choices for choice.
    """

    field: str
    kind: str
    values: tuple

    def __post_init__(self):
        # the one grammar of sweeps and design searches (mapping.sweep.distributions) validates it
        object.__setattr__(self, "_dist", Distribution(where=f'space."{self.field}"', kind=self.kind,
                                                       values=self.values))

    def distribution(self):
        """The Optuna distribution of this dimension."""
        return self._dist.optuna()

    def extremes(self) -> tuple:
        """The values a probe tries: both ends of a range, every choice."""
        return tuple(self.values)


@dataclass(frozen=True, kw_only=True)
class Constraint:
    """``metric <= bound`` or ``metric >= bound``.

    Attributes
    ----------
    metric : str
        A key of :data:`METRICS`.
    op : {'<=', '>='}
    bound : float
    """

    metric: str
    op: str
    bound: float

    def __post_init__(self):
        if self.metric not in METRICS:
            raise ValueError(f"constraint on unknown metric {self.metric!r}; valid: {', '.join(METRICS)}")
        if self.op not in _OPS:
            raise ValueError(f"constraint operator must be one of {', '.join(_OPS)}, got {self.op!r}")
        if not math.isfinite(self.bound):
            raise ValueError(f"constraint {self}: the bound must be finite")
        lowest = METRICS[self.metric][1]
        if self.op == "<=" and (self.bound < lowest or (lowest == 0.0 and self.bound <= 0)):
            raise ValueError(f"constraint '{self}' is impossible: {self.metric} is "
                             f"{'> 0' if lowest == 0.0 else f'>= {lowest:g}'} for every design")

    def __str__(self):
        return f"{self.metric} {self.op} {self.bound:g}"

    @classmethod
    def parse(cls, text: str) -> "Constraint":
        m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|<|>|==|=)\s*([-+0-9.eE]+)\s*", text or "")
        if not m:
            raise ValueError(f"constraint {text!r} must read 'METRIC <= NUMBER' or 'METRIC >= NUMBER'")
        try:
            bound = float(m.group(3))
        except ValueError:
            raise ValueError(f"constraint {text!r}: {m.group(3)!r} is not a number") from None
        return cls(metric=m.group(1), op=m.group(2), bound=bound)

    def violation(self, value: float) -> float:
        """Optuna's constraint value: ≤ 0 when met; otherwise the violation relative to |bound| (or absolute
        for a zero bound), so that violations of metrics in different units add up comparably."""
        d = (value - self.bound) if self.op == "<=" else (self.bound - value)
        return d / abs(self.bound) if self.bound != 0 else d

    def met(self, value: float) -> bool:
        return math.isfinite(value) and self.violation(value) <= 0


@dataclass(frozen=True, kw_only=True)
class FinetuneSpec:
    """The budget of ``oscsim design ... --finetune`` (``[finetune]``; :mod:`mapping.design.finetune`).

    The defaults are the recipe of the bundled ``kuramoto-tiny-hwa`` and ``kuramoto-1m-hwa`` (150 steps of 16
    windows of the model's length at lr 3e-4, warm-up steps // 10, phases at the rate the checkpoint was trained
    with; docs/models.md).

    Attributes
    ----------
    designs : int
        Designs fine-tuned, in [1, 12] (the rescored front holds at most 12): the verdict's design, then the
        rescored front's next-lowest losses.
    steps : int
        Optimizer steps, in [1, 1000000].
    batch_size : int
        Windows per step, in [1, 4096].
    lr : float
        Peak learning rate of AdamW, in (0, 1].
    seq_len : int or None
        Bytes per training window, >= 2 (None: the model's own ``seq_len``).
    seed : int
        Seed of the batches and of the surrogate's draws, in [0, 2**32 - 1].
    checkpoint_every : int
        Steps between checkpoints, >= 1 (an interrupted fine-tune resumes from the last).
    phase_lr_scale : float or None
        Multiple of ``lr`` for the phase parameters, > 0 (:class:`oscsim.train.loop.TrainConfig`); None: as the
        checkpoint was trained (its ``train.phase_lr_scale``; none recorded, as ``kuramoto-tiny``, which predates
        phase groups: phases trained like every other tensor).
    """

    designs: int = 1
    steps: int = 150
    batch_size: int = 16
    lr: float = 3e-4
    seq_len: int | None = None
    seed: int = 0
    checkpoint_every: int = 50
    phase_lr_scale: float | None = None

    def __post_init__(self):
        for n, lo, hi in (("designs", 1, 12), ("steps", 1, 1_000_000), ("batch_size", 1, 4096),
                          ("seed", 0, 2**32 - 1), ("checkpoint_every", 1, 1_000_000)):
            v = getattr(self, n)
            if not is_int(v) or not lo <= v <= hi:
                raise ValueError(f"finetune.{n} must be an integer in [{lo}, {hi}], got {v!r}")
        if self.seq_len is not None and (not is_int(self.seq_len) or not 2 <= self.seq_len <= 1_000_000):
            raise ValueError(f"finetune.seq_len must be an integer in [2, 1000000] or 'none' (the model's), got "
                             f"{self.seq_len!r}")
        for n, hi in (("lr", 1.0), ("phase_lr_scale", 1e6)):
            v = getattr(self, n)
            if n == "phase_lr_scale" and v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= hi:
                raise ValueError(f"finetune.{n} must be a number in (0, {hi:g}], got {v!r}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def finetune_spec(table) -> FinetuneSpec:
    """The :class:`FinetuneSpec` of a ``[finetune]`` table (unknown keys refused in one line)."""
    if not isinstance(table, dict):
        raise ValueError(f"[finetune] must be a table of budget = value, got {table!r}")
    keys = [f.name for f in dataclasses.fields(FinetuneSpec)]
    unknown = sorted(set(table) - set(keys))
    if unknown:
        raise ValueError(f"[finetune] has unknown key(s) {', '.join(unknown)}; valid: {', '.join(keys)}")
    return FinetuneSpec(**{k: (None if k in ("seq_len", "phase_lr_scale") and v == "none" else v)
                           for k, v in table.items()})


@dataclass(frozen=True, kw_only=True)
class DesignSpec:
    """A validated design search (see the module notes for the TOML layout).

    Attributes
    ----------
    name : str
    checkpoint : str
    tokens : TokenSpec
    base : ChipConfig
        The configuration every trial starts from.
    space : tuple of Dimension
    objectives : tuple of str
        Keys of :data:`METRICS`, all minimised (at least one).
    constraints : tuple of Constraint
    sampler : {'nsga2', 'tpe'}
    seed : int
    trials : int
    population : int
        Trials asked, evaluated and told together; NSGA-II's population size.
    noise_seed : int
    finetune : FinetuneSpec
        The budget of ``--finetune`` (:mod:`mapping.design.finetune`); not part of :attr:`spec_hash` (it does not
        change the trials).
    workloads : WorkloadGrid or None
        A grid of workloads searched one sub-study each (:mod:`mapping.design.workloads`); None: one workload,
        the base chip's.
    """

    name: str
    checkpoint: str
    tokens: TokenSpec
    base: ChipConfig
    space: tuple
    objectives: tuple = tuple(METRICS)
    constraints: tuple = ()
    sampler: str = "nsga2"
    seed: int = 0
    trials: int = 24
    population: int = 8
    noise_seed: int = 0
    finetune: FinetuneSpec = dataclasses.field(default_factory=FinetuneSpec)
    workloads: object = None

    def __post_init__(self):
        if not isinstance(self.finetune, FinetuneSpec):
            raise ValueError(f"finetune must be a FinetuneSpec, got {type(self.finetune).__name__}")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.base, ChipConfig):
            raise ValueError(f"base must be a ChipConfig, got {type(self.base).__name__}")
        if not self.space:
            raise ValueError("[space] is empty: name at least one chip field and its range")
        names = [d.field for d in self.space]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"field(s) {', '.join(dup)} appear twice in [space]")
        if not self.objectives or any(o not in METRICS and o not in SUB_STUDY_METRICS for o in self.objectives):
            raise ValueError(f"objectives must be a non-empty list of {', '.join(METRICS)}; got {list(self.objectives)}")
        if len(set(self.objectives)) != len(self.objectives):
            raise ValueError(f"objectives repeat a metric: {list(self.objectives)}")
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {self.sampler!r}")
        for n, lo, hi in (("seed", 0, 2**32 - 1), ("trials", 1, _MAX_TRIALS), ("population", 2, 10_000),
                          ("noise_seed", 0, 2**32 - 1)):
            v = getattr(self, n)
            if not is_int(v) or not lo <= v <= hi:
                raise ValueError(f"{'seeds.noise' if n == 'noise_seed' else n} must be an integer in [{lo}, {hi}], "
                                 f"got {v!r}")
        for a in self.constraints:  # contradictions: m <= a with m >= b > a
            for b in self.constraints:
                if a.metric == b.metric and a.op == "<=" and b.op == ">=" and b.bound > a.bound:
                    raise ValueError(f"constraints '{a}' and '{b}' contradict each other: no design meets both")
        tree = config_to_dict(self.base)
        for d in self.space:
            check_field(d.field, tree, f'space."{d.field}"')
            for v in d.extremes():
                try:
                    config_with(self.base, {d.field: v})
                except (ValueError, TypeError) as exc:
                    raise ValueError(f'space."{d.field}": the value {v!r} is not a valid chip config: {exc}') from None

    @property
    def fields(self) -> tuple:
        return tuple(d.field for d in self.space)

    def distributions(self) -> dict:
        """{field: Optuna distribution}, in space order."""
        return {d.field: d.distribution() for d in self.space}

    @property
    def spec_hash(self) -> str:
        """SHA-256 (16 hex digits) over everything that decides the trials (not ``name`` nor ``trials``, so a
        rerun with more trials extends the same study)."""
        payload = {"checkpoint": self.checkpoint, "tokens": dataclasses.asdict(self.tokens),
                   "base": config_to_dict(self.base), "space": [dataclasses.asdict(d) for d in self.space],
                   "objectives": list(self.objectives), "constraints": [str(c) for c in self.constraints],
                   "sampler": self.sampler, "seed": self.seed, "population": self.population,
                   "noise_seed": self.noise_seed}
        if self.workloads is not None:  # absent otherwise: the hashes of specs without a grid are unchanged
            payload["workloads"] = self.workloads.to_json()
        return hashlib.sha256(canonical(payload).encode()).hexdigest()[:16]

    @property
    def study_name(self) -> str:
        return f"oscsim-design-{self.spec_hash}"


def fmt_value(v) -> str:
    """A searched value as a reader wants it: 4 significant digits for floats, None as 'none'."""
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "none"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _dimension(name: str, d, base_tree: dict) -> Dimension:
    where = f'space."{name}"'
    check_field(name, base_tree, where)
    if name in _NOT_SEARCHABLE:
        raise ValueError(f"{where} cannot be searched: {_NOT_SEARCHABLE[name]}")
    dist = parse_distribution(where, d, lambda x: normalise_value(name, x))
    return Dimension(field=name, kind=dist.kind, values=dist.values)


def design_spec_from_dict(data: dict, *, root: str | Path = ".") -> DesignSpec:
    """Build a :class:`DesignSpec` from the parsed TOML (``root``: folder relative paths are taken from)."""
    check_spec_table(data, _TOP_KEYS, "design")
    root = Path(root)
    base = base_config(data.get("chip", {}), root)
    tokens = token_spec(data.get("tokens", {}))
    space_d = data.get("space", {})
    if not isinstance(space_d, dict):
        raise ValueError(f"[space] must be a table of field = {{kind = [...]}}, got {space_d!r}")
    tree = config_to_dict(base)
    space = tuple(_dimension(k, v, tree) for k, v in space_d.items())
    seeds = data.get("seeds", {})
    if not isinstance(seeds, dict) or set(seeds) - {"noise"}:
        raise ValueError(f"[seeds] takes noise = N (the noise seed of every trial); got {seeds!r}")
    objectives = data.get("objectives", list(METRICS))
    constraints = data.get("constraints", [])
    if not isinstance(objectives, list) or not isinstance(constraints, list):
        raise ValueError("objectives and constraints must be lists")
    ckpt = checkpoint_path(data.get("checkpoint", "kuramoto-tiny"), root)
    for m in (*objectives, *(c if isinstance(c, str) else "" for c in constraints)):
        if isinstance(m, str) and m.strip().startswith("head_error"):
            raise ValueError("head_error is not an objective or constraint of a spec: a [workloads] study puts it in "
                             "bpc_loss's place where only the head-level error is measured")
    grid = None
    if "workloads" in data:
        from .workloads import parse_workloads

        grid = parse_workloads(data["workloads"], base, [d.field for d in space])
    return DesignSpec(name=data.get("name", "design"), checkpoint=ckpt, tokens=tokens, base=base, space=space,
                      objectives=tuple(objectives), constraints=tuple(Constraint.parse(c) for c in constraints),
                      sampler=data.get("sampler", "nsga2"), seed=data.get("seed", 0), trials=data.get("trials", 24),
                      population=data.get("population", 8), noise_seed=seeds.get("noise", 0),
                      finetune=finetune_spec(data.get("finetune", {})), workloads=grid)


def load_design_spec(path: str | Path) -> DesignSpec:
    """Load and validate a design spec TOML (every field and both ends of every range checked here)."""
    path = Path(path)
    return read_toml(path, "design spec", lambda data: design_spec_from_dict(data, root=path.parent))
