"""The workload as a grid of a design study: a sub-study per (context length, phase, batch).

A chip team asks at which context length T, phase and batch an idea starts to win, so a design spec may name a
grid of workloads (``[workloads]``); the study then searches the chip's own fields (``[space]``) at EACH
workload, with ``trials`` trials each (:mod:`mapping.design.grid`), and maps the winner per workload
(:mod:`mapping.design.crossover`). Layout::

    [workloads]
    context_tokens = [128, 512, 1024, 4096]  # T, the context every window of the workload holds
    phase = ["prefill", "decode"]             # energy.phase: the pass simulated and charged
    batch = [1, 64]                           # energy.batch: charged its weight reuse, never simulated
    trials = 8                                # trials per workload (the spec's `trials` is ignored)
    whole_model_max_tokens = 1024             # whole-model BPC at T <= this; above: the head-level error; or
                                              # per phase: { prefill = 2048, decode = 128 }
    head = [0, 0]                             # (layer, head) of the head-level error
    min_tokens = 1024                         # tokens per point at least: windows = max(windows, ceil(this / T))

Each workload is a sub-study of its own (its base chip is the spec's with ``context_tokens``, ``energy.phase``
and ``energy.batch`` set, so its own spec hash and study name) in the same storage, resumable like any study,
and sampled with the spec's seed: the same spec and seed give the same trials.

**Fidelity shared where only energy differs.** The chip run of a design does not read the fields in
:data:`ENERGY_ONLY_FIELDS` (the batch, the GPU compared with, where weights and keys live, the die limit, the
periphery's MAC count: each is read only by :mod:`mapping.energy`; ``tests/test_design_workloads.py`` checks
the BPC bit for bit), and a block size B >= T is the unblocked chip (tests/test_blocking.py). Designs whose
configurations agree but for those (:func:`fidelity_key`) share one measured fidelity: the later trial is charged
its own energy, area and latency and names the trial it took its loss from (``fidelity_shared_with``).

**Which fidelity, per point.** At T <= ``whole_model_max_tokens`` the whole model runs on the chip (BPC loss and
its SE, as every design study) and the head-level error is measured beside it; above, only the head-level
error (:func:`mapping.simulation.head.head_error`: one head's increment estimate against the closed form's on
the layer's own input, with a jackknife SE). No conversion from head error to BPC is assumed: a point with only
a head-level error cannot meet the BPC threshold, and the crossover map says so (its fidelity unproven).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from dataclasses import dataclass

from ..config import ChipConfig, config_to_dict
from ..sweep.spec import config_with, is_int

__all__ = ["Workload", "WorkloadGrid", "parse_workloads", "workload_spec", "fidelity_key", "ENERGY_ONLY_FIELDS",
           "WORKLOAD_FIELDS", "PHASES", "HEAD_METRIC"]

#: The chip fields a workload sets (refused in ``[space]`` of a workload study).
WORKLOAD_FIELDS = ("context_tokens", "energy.phase", "energy.batch")
PHASES = ("prefill", "decode")
#: Fields the chip run never reads (only :mod:`mapping.energy` does): designs differing only in these share one
#: measured fidelity.
ENERGY_ONLY_FIELDS = ("energy.batch", "energy.gpu", "energy.gpu_precision", "energy.gpu_bound", "energy.weights",
                      "energy.sram_max_bytes", "energy.offchip", "array.die_limit_mm2", "array.macs")
#: The objective that stands for ``bpc_loss`` where only the head-level error is measured.
HEAD_METRIC = "head_error"
_KEYS = ("context_tokens", "phase", "batch", "trials", "whole_model_max_tokens", "head", "min_tokens")


@dataclass(frozen=True, kw_only=True)
class Workload:
    """One workload of the grid.

    Attributes
    ----------
    index : int
        Its place in the grid (T outermost, then phase, then batch).
    T : int
        Context tokens.
    phase : {'prefill', 'decode'}
    batch : int
    """

    index: int
    T: int
    phase: str
    batch: int

    @property
    def id(self) -> str:
        return f"T{self.T}-{self.phase}-b{self.batch}"

    @property
    def params(self) -> dict:
        """The chip fields this workload sets."""
        return {"context_tokens": self.T, "energy.phase": self.phase, "energy.batch": self.batch}


@dataclass(frozen=True, kw_only=True)
class WorkloadGrid:
    """The ``[workloads]`` table (see the module notes).

    Attributes
    ----------
    context_tokens : tuple of int
        Context lengths T, each >= 2, distinct.
    phase : tuple of {'prefill', 'decode'}
    batch : tuple of int
        Sequences per pass, each >= 1.
    trials : int
        Trials per workload, >= 1.
    whole_model_max_tokens : int or tuple of (phase, int)
        Whole-model BPC at T <= this; only the head-level error above; per phase as ((phase, tokens), ...)
        (the decode pass's chip run costs far more per token than prefill's: measured on kuramoto-1m at
        T = 512, 232 s against 6 s for 1,024 tokens).
    head : tuple of int
        (layer, head) of the head-level error.
    min_tokens : int
        Tokens per point at least (0: the spec's ``[tokens] windows``).
    """

    context_tokens: tuple
    phase: tuple = ("prefill",)
    batch: tuple = (1,)
    trials: int = 8
    whole_model_max_tokens: object = 1024
    head: tuple = (0, 0)
    min_tokens: int = 0

    def __post_init__(self):
        for name, lo in (("context_tokens", 2), ("batch", 1)):
            v = getattr(self, name)
            if not isinstance(v, tuple) or not v or not all(is_int(x) and x >= lo for x in v):
                raise ValueError(f"workloads.{name} must be a non-empty list of integers >= {lo}, got {list(v)!r}")
            if len(set(v)) != len(v):
                raise ValueError(f"workloads.{name} repeats a value: {list(v)}")
        if not isinstance(self.phase, tuple) or not self.phase or any(p not in PHASES for p in self.phase):
            raise ValueError(f"workloads.phase must be a non-empty list of {', '.join(PHASES)}, got {self.phase!r}")
        if len(set(self.phase)) != len(self.phase):
            raise ValueError(f"workloads.phase repeats a value: {list(self.phase)}")
        for name, lo, hi in (("trials", 1, 10_000), ("min_tokens", 0, 10**7)):
            v = getattr(self, name)
            if not is_int(v) or not lo <= v <= hi:
                raise ValueError(f"workloads.{name} must be an integer in [{lo}, {hi}], got {v!r}")
        wm = self.whole_model_max_tokens
        per = wm if isinstance(wm, tuple) else tuple((p, wm) for p in self.phase)
        if (not all(isinstance(x, tuple) and len(x) == 2 for x in per) or {p for p, _ in per} != set(self.phase)
                or not all(is_int(n) and n >= 2 for _, n in per)):
            raise ValueError(f"workloads.whole_model_max_tokens must be an integer >= 2 or a table of one such "
                             f"integer per phase ({', '.join(self.phase)}), got {wm!r}")
        if (not isinstance(self.head, tuple) or len(self.head) != 2
                or not all(is_int(x) and x >= 0 for x in self.head)):
            raise ValueError(f"workloads.head must be [layer, head], two integers >= 0, got {self.head!r}")

    def workloads(self) -> tuple:
        """The grid's workloads, T outermost, then phase, then batch."""
        return tuple(Workload(index=i, T=T, phase=p, batch=b) for i, (T, p, b)
                     in enumerate(itertools.product(self.context_tokens, self.phase, self.batch)))

    def whole_model_tokens(self, phase: str) -> int:
        """The longest T at which the whole model runs in ``phase``."""
        wm = self.whole_model_max_tokens
        return int(dict(wm)[phase]) if isinstance(wm, tuple) else int(wm)

    def measure(self, T: int, phase: str) -> str:
        """'model' (whole-model BPC and the head-level error) or 'head' (the head-level error only) at T."""
        return "model" if T <= self.whole_model_tokens(phase) else "head"

    def windows(self, T: int, windows: int) -> int:
        """Windows of T tokens per point: the spec's, or enough for ``min_tokens``."""
        return max(int(windows), math.ceil(self.min_tokens / T)) if self.min_tokens else int(windows)

    def to_json(self) -> dict:
        out = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}
        if isinstance(self.whole_model_max_tokens, tuple):
            out["whole_model_max_tokens"] = dict(self.whole_model_max_tokens)
        return out


def _as_tuple(where: str, v):
    if isinstance(v, (list, tuple)):
        return tuple(v)
    raise ValueError(f"{where} must be a list, got {v!r}")


def parse_workloads(d, base: ChipConfig, space_fields) -> WorkloadGrid:
    """The validated ``[workloads]`` table: every workload built as a chip config on ``base`` (one line naming
    the workload and the config's complaint), no workload field searched in ``[space]``."""
    if not isinstance(d, dict):
        raise ValueError(f"[workloads] must be a table ({', '.join(_KEYS)}), got {d!r}")
    unknown = sorted(set(d) - set(_KEYS))
    if unknown:
        raise ValueError(f"[workloads] has unknown key(s) {', '.join(unknown)}; valid: {', '.join(_KEYS)}")
    if "context_tokens" not in d:
        raise ValueError("[workloads] needs context_tokens = [T, ...] (the context lengths of the grid)")
    kw = {k: _as_tuple(f"workloads.{k}", d[k]) if k in ("context_tokens", "phase", "batch", "head") else d[k]
          for k in d}
    wm = kw.get("whole_model_max_tokens")
    if isinstance(wm, dict):
        kw["whole_model_max_tokens"] = tuple(sorted(wm.items()))
    grid = WorkloadGrid(**kw)
    searched = sorted(set(space_fields) & set(WORKLOAD_FIELDS))
    if searched:
        raise ValueError(f"space.{searched[0]} is set by [workloads] (each workload fixes "
                         f"{', '.join(WORKLOAD_FIELDS)}); remove it from [space]")
    for w in grid.workloads():
        try:
            config_with(base, w.params)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"workload {w.id} is not a valid chip config: {exc}") from None
    return grid


def workload_spec(spec, w: Workload):
    """The sub-study of workload ``w``: the spec with its base chip at the workload, ``trials`` per workload,
    its windows (``min_tokens``), and, where only the head-level error is measured, ``head_error`` for
    ``bpc_loss`` among the objectives and no BPC constraint (see the module notes)."""
    grid = spec.workloads
    head = grid.measure(w.T, w.phase) == "head"
    objectives = tuple(HEAD_METRIC if (head and o == "bpc_loss") else o for o in spec.objectives)
    constraints = tuple(c for c in spec.constraints if not (head and c.metric == "bpc_loss"))
    tokens = dataclasses.replace(spec.tokens, windows=grid.windows(w.T, spec.tokens.windows))
    return dataclasses.replace(spec, base=config_with(spec.base, w.params), trials=grid.trials, workloads=None,
                               objectives=objectives, constraints=constraints, tokens=tokens)


def _drop(tree: dict, dotted: str) -> None:
    *path, leaf = dotted.split(".")
    node = tree
    for p in path:
        node = node.get(p)
        if not isinstance(node, dict):
            return
    node.pop(leaf, None)


def fidelity_key(cfg: ChipConfig) -> str:
    """What decides a design's measured fidelity, as a string: the configuration without
    :data:`ENERGY_ONLY_FIELDS`, a block B >= T written as unblocked."""
    tree = config_to_dict(cfg)
    for f in ENERGY_ONLY_FIELDS:
        _drop(tree, f)
    arr = tree.get("array")
    T = cfg.context_tokens
    if isinstance(arr, dict) and arr.get("block") is not None and T is not None and arr["block"] >= T:
        arr["block"] = None
    return json.dumps(tree, sort_keys=True)
