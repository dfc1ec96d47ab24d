"""Hand-written :class:`mapping.energy.ChipEnergySpec` for the energy tests: one keyword per figure, each routed to
the group that holds it (:mod:`mapping.energy.spec`), so a test states the figures it sets and nothing else."""

from __future__ import annotations

import dataclasses

from hw_models.technology import chip_node
from mapping.energy import spec as es

GROUPS = {"shape": es.AttentionShape, "array": es.ArrayFigures, "schedule": es.ScheduleFigures,
          "periphery": es.PeripheryFigures, "scores": es.ScoreStageFigures, "decode": es.DecodeFigures,
          "workload": es.Workload}
# the score stage's fields named as the tests (and the report) name them; the rest by their own field name
RENAMED = {"score_array_mm2": ("scores", "array_mm2"), "score_rounds_per_layer": ("scores", "rounds_per_layer"),
           "score_adc_bits": ("scores", "adc_bits"), "score_gate_bits": ("scores", "gate_bits"),
           "array_area_mm2": ("array", "area_mm2"), "array_oscillators": ("array", "oscillators")}


def _owner() -> dict:
    owner = {}
    for group, cls in GROUPS.items():
        for f in dataclasses.fields(cls):
            if (group, f.name) in RENAMED.values():
                continue
            assert f.name not in owner, f"{f.name} is in two groups: name it in RENAMED"
            owner[f.name] = (group, f.name)
    return {**owner, **RENAMED}


def make_spec(*, node_nm: float = 65.0, node_flavor: str = "LP", sources: dict | None = None, **figures):
    """A ChipEnergySpec at ``node_nm`` from figures named as in :data:`RENAMED` or by their group's field name."""
    owner = _owner()
    parts: dict = {g: {} for g in GROUPS}
    for name, value in figures.items():
        if name not in owner:
            raise TypeError(f"make_spec: no group holds {name!r}")
        group, field = owner[name]
        parts[group][field] = value
    return es.ChipEnergySpec(node=chip_node(node_nm, node_flavor), sources=sources or {},
                             **{g: GROUPS[g](**kw) for g, kw in parts.items()})
