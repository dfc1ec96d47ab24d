"""Whether a compiled design can be built: what does not fit is reported with its reason, never a silent number."""

from __future__ import annotations

import math

from ..backends.blocking import block_plan

__all__ = ["infeasible_reason"]


def infeasible_reason(chip, area: dict | None = None) -> str | None:
    """Why the compiled ``chip`` cannot be built as configured, or None: its die larger than ``[array]
    die_limit_mm2`` (naming the array's and the SRAM's shares and, when a tile holds the whole context, the
    couplers per tile and the block size that would shrink them). ``area``: :func:`mapping.energy.chip_area`'s
    result when the caller has it."""
    from ..backends import backend_for
    from .area import chip_area

    if area is None:
        area = chip_area(chip)
    limit = float(chip.config.array.die_limit_mm2)
    die = float(area["area_mm2"])
    if math.isfinite(die) and die <= limit:
        return None
    lm = chip.layers[0]
    plan = block_plan(lm.max_tokens, chip.config.array.block)
    Tt = plan.tile_tokens
    parts = ", ".join(f"{k.removesuffix('_mm2').replace('_', ' ')} {float(area[k]):.4g} mm^2"
                      for k in ("array_mm2", "score_array_mm2", "sram_mm2", "periphery_mm2")
                      if float(area.get(k, 0.0)) > 0.05 * die)
    msg = (f"die of {die:.4g} mm^2 exceeds array.die_limit_mm2 = {limit:g} mm^2 ({parts}; a tile holds {Tt} "
           f"oscillators and {Tt * (Tt - 1) // 2} couplers at T = {lm.max_tokens})")
    if not plan.blocked and getattr(backend_for(chip, 0), "blockable", False):
        msg += f"; [array] block = B < {lm.max_tokens // 2} runs the context on tiles of 2B oscillators"
    return msg
