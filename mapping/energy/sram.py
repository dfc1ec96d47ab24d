"""The SRAM a chip needs: its buffers in bytes, from the same operation counts and pass events as the energy model.

The chip keeps the whole model resident (no DRAM is modelled: a model whose weights do not fit on a die of the
chosen area is not a design this tool can judge) and one layer's working buffers at a time (layers run one after
another):

- ``weights``: every parameter of the model (attention layers and the rest) at ``energy.digital_precision``;
- ``keys``: the stored keys of one window for every layer and every sequence of the batch (what decode reads for
  each earlier token; :func:`mapping.energy.ops.attention_cost` ``kv_elements``): a batch of b sequences in flight
  keeps b windows of keys, as the GPU baselines' working set does (:mod:`mapping.energy.gpu`), so a large batch
  pushes keys off chip on both sides alike;
- ``coupling``: one layer's coupling values (Kuramoto A, all heads; SSA K r J) at the coupler resolution, written
  by the periphery and read by the array loader for every round that programs a tile;
- ``phases_in``: one layer's input phases at the readout resolution, read for every round that uses them;
- ``phases_out``: one layer's converted channels (two per phase read) at the readout resolution;
- ``activations``: the residual stream of a window in and out of a layer.

Under the blocked schedule (``[array] block = B``, :mod:`mapping.backends.blocking`) the working buffers are
what the schedule holds at once. Its rounds run query block by query block (the blocks (i, 0), …, (i, i) of
every unit, then query block i + 1), so ``coupling`` holds the softmax rows of one query block, all heads:
h · max_i Σ_{t ∈ I_i} (t + 1) values (h · T(T+1)/2 unblocked; a row's softmax needs its every key, so a query
block's rows are the least the periphery can compute at once); ``phases_out`` one block round's converted
channels (2 · banks · k · B) plus the layer's increment sums, banks · k · T at the digital precision (the
periphery adds each block's estimates into them); ``phases_in`` stays the layer's k · T input phases (every
block re-reads its keys' and queries' phases from it). The decode pass holds less (one row of couplings), so the
prefill pass sizes the buffers.

The die holds at most ``[energy] sram_max_bytes`` of SRAM (:func:`sram_plan`): buffers beyond it go to off-chip
memory (``[energy] offchip``: HBM at [OCo17]'s 3.9 pJ/bit, the GPU's figure, or DDR at [Hor14]'s 20.3 pJ/bit),
the stored keys first (they grow with the context), then the weights; the working buffers (coupling, phases,
activations) stay on the die, past the capacity if need be (reported). Off-chip bits are charged per access at
that figure, with no background or refresh power and no interface latency (an optimistic memory). With
``[energy] weights = "stationary"`` the on-die weights live in local stores beside the MACs, one CACTI 7 macro of
1/``macs`` of them per MAC, read at that small macro's energy per bit and charged its area and standby leakage,
instead of the global SRAM's weight buffer.

A time-multiplexed schedule needs no more than this: a layer's inputs are all buffered before its first round
(its rounds re-read them; :mod:`mapping.compiler.schedule` counts the reads, :mod:`mapping.energy.chip_terms`
charges them).

What a buffer costs comes from CACTI 7 (:func:`hw_models.cacti.sram_macro`, the binary of the ``zigzag-dse``
wheel): the energy per bit of a read of one 64-bit word from a macro of the buffer's size
(:func:`sram_read_j_per_bit`), the area and standby leakage of the macros holding the chip's buffers
(:func:`sram_area_mm2`, :func:`sram_leakage_w`), at the chip's node, flavour and supply. Writes are charged as
reads (CACTI's write/read energy ratio is 0.73-0.96 over the buffers of the bundled chips: BENCHMARKS.md, Energy).
The former figures ([Hor14]'s 45 nm reads scaled by the Stillmaker-Baas energy ratio,
:meth:`hw_models.technology.TechnologyNode.sram_j_per_bit`; bitcell area over an assumed macro efficiency) are
kept as the cross-check of ``benchmarks/sram_cacti.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hw_models.cacti import SramMacro, sram_macro
from hw_models.technology import Figure, TechnologyNode

from ..backends.blocking import block_plan
from ..compiler.resources import pass_events
from .constants import BYTES, OFFCHIP_MEMORY, SRAM_SOURCE
from .ops import attention_cost, model_cost

__all__ = ["sram_buffers", "sram_figures", "sram_read_j_per_bit", "sram_area_mm2", "sram_leakage_w", "SRAM_SOURCE",
           "SRAM_WORD_BITS", "SramPlan", "sram_plan"]

SRAM_WORD_BITS = Figure(64, "bit", "assumed: one 64-bit word per access (the width of [Hor14]'s SRAM reads)")


def sram_figures(size_bytes: float, node: TechnologyNode) -> SramMacro:
    """CACTI 7's macro of ``size_bytes`` (at least one byte) with :data:`SRAM_WORD_BITS` words at ``node``."""
    return sram_macro(max(float(size_bytes), 1.0), node, word_bits=int(SRAM_WORD_BITS.value))


def sram_read_j_per_bit(size_bytes: float, node: TechnologyNode) -> float:
    """Read energy per bit [J/bit] of a buffer of ``size_bytes`` at ``node`` (CACTI 7; writes charged alike)."""
    return sram_figures(size_bytes, node).read_j_per_bit


def sram_area_mm2(sram_bytes: float, node: TechnologyNode) -> float:
    """Area [mm²] of the macros holding ``sram_bytes`` at ``node`` (CACTI 7: the macro's area per bit, its
    decoders, sense amplifiers and wiring included, times the bits)."""
    return sram_figures(sram_bytes, node).area_mm2.value if sram_bytes > 0 else 0.0


def sram_leakage_w(sram_bytes: float, node: TechnologyNode) -> float:
    """Standby leakage [W] of the macros holding ``sram_bytes`` at ``node`` (CACTI 7 at 300 K)."""
    return sram_figures(sram_bytes, node).leakage_w.value if sram_bytes > 0 else 0.0


def sram_buffers(kind: str, layer_kind: str, model_config: dict, *, T: int, n_layers: int, n_heads: int,
                 head_dim: int, banks: int, taps: int, coupler_bits: int, readout_bits: int,
                 precision: str, block: int | None = None, sequences: int = 1) -> dict:
    """Bytes of each SRAM buffer of a chip (see the module notes) and ``total``.

    Parameters
    ----------
    kind, layer_kind : str
        Model kind ('kuramoto', 'ssa') and layer kind (:data:`mapping.compiler.resources.RESOURCE_KEYS`' kinds).
    model_config : dict
    T, n_layers, n_heads, head_dim, banks, taps : int
        The compiled layers' shape.
    coupler_bits, readout_bits : int
        Resolutions (an analog coupler or readout is charged at 8 bits by the caller).
    precision : str
        The digital periphery's precision (a key of :data:`mapping.energy.constants.BYTES`).
    block : int or None
        ``[array] block`` of a Kuramoto chip: the working buffers of the blocked schedule (see the module notes);
        None (or ≥ T): unblocked.
    sequences : int
        Sequences in flight (``[energy] batch``): each keeps its window of keys.

    Returns
    -------
    dict of float [bytes]
    """
    if isinstance(sequences, bool) or not isinstance(sequences, int) or sequences < 1:
        raise ValueError(f"sequences must be a positive integer (the batch), got {sequences!r}")
    wb = BYTES[precision]
    att = attention_cost(kind, model_config, T)
    rest = model_cost(kind, model_config)
    n = pass_events(layer_kind, n_heads=n_heads, head_dim=head_dim, T=T, banks=banks, taps=taps, prefill=True)
    out = {
        "weights": (att["weights"] * n_layers + rest["weights"]) * wb,
        "keys": att["kv_elements"] * T * n_layers * wb * sequences,
        "coupling": n["a_values"] * coupler_bits / 8,
        "phases_in": n["theta_in"] * readout_bits / 8,
        "phases_out": 2 * n["read"] * readout_bits / 8,
        "activations": 2 * att["io_elements"] * T * wb,
    }
    plan = block_plan(T, block)
    # a layer kind the blocked schedule changes (mapping.compiler.resources: its blocks' increments are summed)
    if plan.blocked and pass_events(layer_kind, n_heads=n_heads, head_dim=head_dim, T=T, banks=banks, taps=taps,
                                    prefill=True, block=block)["accumulated"] > 0:
        rows = max((q1 - q0) * (q0 + q1 + 1) // 2 for q0, q1 in plan.ranges)  # Σ_{t ∈ I_i} (t + 1)
        out["coupling"] = n_heads * rows * coupler_bits / 8
        k = n_heads * head_dim
        out["phases_out"] = 2 * banks * k * plan.block * readout_bits / 8 + banks * k * T * wb
    out["total"] = sum(out.values())
    return out


@dataclass(frozen=True, kw_only=True)
class SramPlan:
    """Where a chip's buffers live (see the module notes): on the die (global SRAM and, stationary weights, the
    MACs' local stores) or off chip.

    Attributes
    ----------
    total_bytes, on_die_bytes : float
        The buffers' total and what the die holds [B] (above ``capacity_bytes`` only when the working buffers
        alone exceed it).
    capacity_bytes : float
        The on-die SRAM capacity [B].
    offchip_bytes : dict
        Bytes off chip by buffer: ``keys``, ``weights``.
    weights_bytes : float
        The weights' buffer [B], wherever it lives.
    global_bytes, local_bytes, local_macro_bytes : float
        The global SRAM, the MACs' local stores together and one MAC's store [B] (0 with streamed weights).
    macs : int
    area_mm2, leakage_w : float
        The on-die macros' area [mm²] and standby leakage [W] (CACTI 7).
    e_local_bit, e_offchip_bit : float
        Read energy per bit [J] of one local store (0 with streamed weights) and of the off-chip memory.
    weights, offchip : str
        ``[energy] weights`` and ``[energy] offchip``.
    source : str
    """

    total_bytes: float
    on_die_bytes: float
    capacity_bytes: float
    offchip_bytes: dict
    weights_bytes: float
    global_bytes: float
    local_bytes: float
    local_macro_bytes: float
    macs: int
    area_mm2: float
    leakage_w: float
    e_local_bit: float
    e_offchip_bit: float
    weights: str
    offchip: str
    source: str


def sram_plan(buffers: dict, node: TechnologyNode, *, capacity_bytes: float, weights: str = "streamed",
              macs: int = 1, offchip: str = "hbm", total_bytes: float | None = None) -> SramPlan:
    """The :class:`SramPlan` of ``buffers`` (:func:`sram_buffers`) on a die of ``capacity_bytes`` of SRAM.

    Parameters
    ----------
    buffers : dict of float [B]
        The chip's buffers (``weights`` and ``keys`` at least) and their ``total``.
    node : TechnologyNode
    capacity_bytes : float
        On-die SRAM capacity [B], > 0.
    weights : {'streamed', 'stationary'}
    macs : int
        MACs of the periphery (one local store each, stationary weights).
    offchip : {'hbm', 'ddr'}
    total_bytes : float, optional
        The buffers' total when given apart (a spec's ``sram_bytes``); default ``buffers["total"]``.
    """
    if weights not in ("streamed", "stationary"):
        raise ValueError(f"weights must be 'streamed' or 'stationary', got {weights!r}")
    if offchip not in OFFCHIP_MEMORY:
        raise ValueError(f"offchip must be one of {', '.join(OFFCHIP_MEMORY)}, got {offchip!r}")
    if not capacity_bytes > 0:
        raise ValueError(f"capacity_bytes must be > 0 [B], got {capacity_bytes!r}")
    total = float(buffers["total"] if total_bytes is None else total_bytes)
    excess = max(0.0, total - capacity_bytes)
    keys_off = min(excess, float(buffers["keys"]))
    weights_off = min(excess - keys_off, float(buffers["weights"]))
    on_die = total - keys_off - weights_off
    local = max(0.0, float(buffers["weights"]) - weights_off) if weights == "stationary" else 0.0
    local_each = local / macs if local > 0 else 0.0
    glob = max(0.0, on_die - local)
    area = sram_area_mm2(glob, node) + (macs * sram_area_mm2(local_each, node) if local > 0 else 0.0)
    leak = sram_leakage_w(glob, node) + (macs * sram_leakage_w(local_each, node) if local > 0 else 0.0)
    mem = OFFCHIP_MEMORY[offchip]
    src = (f"{on_die:.4g} of {total:.4g} B on the die (capacity {capacity_bytes:.4g} B, [energy] sram_max_bytes)"
           + (f"; off chip ({offchip}, {mem.value:.3g} J/bit: {mem.source}): keys {keys_off:.4g} B, weights "
              f"{weights_off:.4g} B" if keys_off + weights_off > 0 else "")
           + (f"; stationary weights: {local:.4g} B in {macs} local stores of {local_each:.4g} B" if local > 0 else ""))
    return SramPlan(total_bytes=total, on_die_bytes=on_die, capacity_bytes=float(capacity_bytes),
                    offchip_bytes={"keys": keys_off, "weights": weights_off},
                    weights_bytes=float(buffers["weights"]), global_bytes=glob, local_bytes=local,
                    local_macro_bytes=local_each, macs=int(macs), area_mm2=area, leakage_w=leak,
                    e_local_bit=sram_read_j_per_bit(local_each, node) if local > 0 else 0.0,
                    e_offchip_bit=mem.value, weights=weights, offchip=offchip, source=src)
