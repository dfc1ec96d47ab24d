"""The SRAM a chip needs: its buffers in bytes, from the same operation counts and pass events as the energy model.

The chip keeps the whole model resident (no DRAM is modelled: a model whose weights do not fit on a die of the
chosen area is not a design this tool can judge) and one layer's working buffers at a time (layers run one after
another):

- ``weights``: every parameter of the model (attention layers and the rest) at ``energy.digital_precision``;
- ``keys``: the stored keys of one window for every layer (what decode reads for each earlier token;
  :func:`mapping.energy.ops.attention_cost` ``kv_elements``);
- ``coupling``: one layer's coupling values (Kuramoto A, all heads; SSA K r J) at the coupler resolution, written
  by the periphery and read by the array loader for every round that programs a tile;
- ``phases_in``: one layer's input phases at the readout resolution, read for every round that uses them;
- ``phases_out``: one layer's converted channels (two per phase read) at the readout resolution;
- ``activations``: the residual stream of a window in and out of a layer.

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

from hw_models.cacti import SramMacro, sram_macro
from hw_models.technology import Figure, TechnologyNode

from ..compiler.resources import pass_events
from .constants import BYTES, SRAM_SOURCE
from .ops import attention_cost, model_cost

__all__ = ["sram_buffers", "sram_figures", "sram_read_j_per_bit", "sram_area_mm2", "sram_leakage_w", "SRAM_SOURCE",
           "SRAM_WORD_BITS"]

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
                 precision: str) -> dict:
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

    Returns
    -------
    dict of float [bytes]
    """
    wb = BYTES[precision]
    att = attention_cost(kind, model_config, T)
    rest = model_cost(kind, model_config)
    n = pass_events(layer_kind, n_heads=n_heads, head_dim=head_dim, T=T, banks=banks, taps=taps, prefill=True)
    out = {
        "weights": (att["weights"] * n_layers + rest["weights"]) * wb,
        "keys": att["kv_elements"] * T * n_layers * wb,
        "coupling": n["a_values"] * coupler_bits / 8,
        "phases_in": n["theta_in"] * readout_bits / 8,
        "phases_out": 2 * n["read"] * readout_bits / 8,
        "activations": 2 * att["io_elements"] * T * wb,
    }
    out["total"] = sum(out.values())
    return out
