"""The one resource count of a compiled layer, read by the compiler, the area model and the energy model.

A layer's physical cells are fixed by its kind and shape (the fully spatial mapping: every (bank, head,
coordinate) or every SSA head holds its own array):

==================  ==================  ========================  ===============  ==========  ==============
layer kind          oscillators         couplers (× taps)         phase detectors  gain DACs   DACs per pass
==================  ==================  ========================  ===============  ==========  ==============
kuramoto            banks · k · T       banks · k · T(T−1)/2      one per osc.     k · T       the gain DACs
ssa-pairwise        2 per cell          one per cell              one per cell     0           2 per cell
ssa1d-collective    h · T               h · T(T−1)/2              one per osc.     0           h · T
==================  ==================  ========================  ===============  ==========  ==============

(k = heads × head_dim, cells = h · T(T−1)/2.) Each phase detector is a quadrature pair, so a layer has two
``readout_channels`` (I and Q, each converted by an ADC) per detector. Every oscillator has a frequency-trim
DAC. The DACs reprogrammed on every pass are the Kuramoto receive gains and, on SSA layers, the
per-oscillator frequency DACs that set λω (the trim DACs, at the trim resolution). A two-tap coupling rule
doubles the couplers of every kind.

:func:`pass_events` counts what one token costs the array (prefill: a sequence's T tokens share one
programming; decode: one new token against the stored phases of the earlier ones, averaged over positions),
from the same table. A time-multiplexed schedule (DESIGN §5.7) maps these logical counts onto a physical array.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["LayerResources", "layer_resources", "pass_events", "total_resources", "RESOURCE_KEYS"]


@dataclass(frozen=True, kw_only=True)
class LayerResources:
    """Physical cells of one compiled layer.

    Attributes
    ----------
    oscillators, couplers, coupler_bits : int
        Oscillators; couplers (taps included) and their register bits.
    phase_detectors, readout_channels : int
        Quadrature phase detectors and their channels (two each, one ADC conversion per channel).
    gain_dacs, trim_dacs : int
        Signed receive-gain DACs (Kuramoto value gate) and per-oscillator frequency-trim DACs.
    dacs_per_pass : int
        DACs updated on every pass of the array (not part of the chip file: derived from the kind).
    """

    oscillators: int
    couplers: int
    coupler_bits: int
    phase_detectors: int
    readout_channels: int
    gain_dacs: int
    trim_dacs: int
    dacs_per_pass: int

    def to_dict(self) -> dict:
        """The chip file's ``resources`` entry (``dacs_per_pass`` is derived, not stored)."""
        d = asdict(self)
        d.pop("dacs_per_pass")
        return d


RESOURCE_KEYS = ("oscillators", "couplers", "coupler_bits", "phase_detectors", "readout_channels", "gain_dacs",
                 "trim_dacs")
"""Keys of a layer's ``resources`` in the chip file, summed into the chip's totals."""


def _kuramoto(h, kh, T, banks):
    k = h * kh
    osc = banks * k * T
    return {"oscillators": osc, "couplers": banks * k * T * (T - 1) // 2, "phase_detectors": osc,
            "gain_dacs": k * T, "trim_dacs": osc, "dacs_per_pass": k * T}


def _ssa_pairwise(h, kh, T, banks):
    cells = h * T * (T - 1) // 2
    return {"oscillators": 2 * cells, "couplers": cells, "phase_detectors": cells, "gain_dacs": 0,
            "trim_dacs": 2 * cells, "dacs_per_pass": 2 * cells}


def _ssa1d_collective(h, kh, T, banks):
    return {"oscillators": h * T, "couplers": h * T * (T - 1) // 2, "phase_detectors": h * T, "gain_dacs": 0,
            "trim_dacs": h * T, "dacs_per_pass": h * T}


_STATIC = {"kuramoto": _kuramoto, "ssa-pairwise": _ssa_pairwise, "ssa1d-collective": _ssa1d_collective}


def layer_resources(kind: str, *, n_heads: int, head_dim: int, T: int, banks: int = 1, taps: int = 1,
                    coupler_bits: int | None = None) -> LayerResources:
    """The cells of a layer of ``kind`` with ``n_heads`` × ``head_dim`` coordinates (Kuramoto) or heads (SSA),
    ``T`` tokens, ``banks`` banks and ``taps`` couplers per coupling; ``coupler_bits`` None: analog (no register
    bits counted)."""
    if kind not in _STATIC:
        raise ValueError(f"layer kind must be one of {', '.join(_STATIC)}, got {kind!r}")
    c = _STATIC[kind](n_heads, head_dim, T, banks)
    c["couplers"] *= taps
    return LayerResources(coupler_bits=c["couplers"] * (coupler_bits or 0),
                          readout_channels=2 * c["phase_detectors"], **c)


def total_resources(per_layer) -> dict:
    """The chip's totals: each of :data:`RESOURCE_KEYS` summed over the layers' ``resources`` dicts."""
    return {key: int(sum(r[key] for r in per_layer)) for key in RESOURCE_KEYS}


def _kuramoto_events(h, kh, T, banks, taps, prefill):
    k = h * kh
    if prefill:
        n = {"osc": banks * k * T, "coup": taps * banks * k * T * (T - 1) / 2, "read": banks * k * T,
             "gain": k * T, "a_values": h * T * (T + 1) / 2, "theta_in": k * T, "per": T}
        n["rot_osc"], n["mixers"], n["score_conv"] = k * T, k * T * (T + 1) / 2, h * T * (T + 1) / 2
    else:  # one new token at t, sources u < t re-injected from their stored phases; mean over t = 1..T
        m = (T + 1) / 2
        n = {"osc": banks * k * m, "coup": taps * banks * k * (T - 1) / 2, "read": banks * k, "gain": k,
             "a_values": h * m, "theta_in": k * m, "per": 1}
        n["rot_osc"], n["mixers"], n["score_conv"] = k * m, k * m, h * m
    n["inject"] = True
    return n


def _ssa_pairwise_events(h, kh, T, banks, taps, prefill):
    cells = h * T * (T - 1) / 2 if prefill else h * (T - 1) / 2
    return {"osc": 2 * cells, "coup": taps * cells, "read": cells, "gain": 2 * cells, "a_values": cells,
            "theta_in": 0.0, "per": T if prefill else 1, "inject": False}


def _ssa1d_collective_events(h, kh, T, banks, taps, prefill):
    if prefill:
        n = {"osc": h * T, "coup": taps * h * T * (T - 1) / 2, "read": h * T, "gain": h * T,
             "a_values": h * T * (T - 1) / 2, "theta_in": 0.0, "per": T}
    else:  # the collective network has no per-token update: the whole prefix is rerun (stated)
        m = (T + 1) / 2
        n = {"osc": h * m, "coup": taps * h * m * (m - 1) / 2, "read": h * m, "gain": h * m,
             "a_values": h * m * (m - 1) / 2, "theta_in": 0.0, "per": 1}
    n["inject"] = False
    return n


_EVENTS = {"kuramoto": _kuramoto_events, "ssa-pairwise": _ssa_pairwise_events,
           "ssa1d-collective": _ssa1d_collective_events}


def _blocked(n: dict, kh: int, h: int, banks: int, block: int | None, T: int, prefill: bool) -> dict:
    """A Kuramoto pass under the blocked schedule (:mod:`mapping.backends.blocking`). Prefill: every block's
    oscillators run and are injected from SRAM (2B off the diagonal), its query phases are read and its receive
    gains set. Decode (:mod:`mapping.backends.blocked_decode`): the token at position t takes r(t) = ⌈t/B⌉ rounds
    (at least 1; r̄ their mean over t), each injecting the receiver and reading it and setting its gain, the keys
    injected once each (in their block's round). Both: the couplers and coupler values are the unblocked ones
    (every causal pair written once); the periphery adds ``accumulated`` block increments."""
    from ..backends.blocking import block_plan

    plan = block_plan(T, block)
    if not plan.blocked:
        return {**n, "accumulated": 0.0}
    k = h * kh
    if not prefill:  # the unblocked decode's (T + 1)/2 = keys + 1 receiver, here keys + r̄ receivers
        r = plan.mean_decode_rounds
        inj = (T + 1) / 2 - 1 + r
        return {**n, "osc": banks * k * inj, "theta_in": k * inj, "read": banks * k * r, "gain": k * r,
                "accumulated": banks * k * (r - 1)}
    z = plan.sizes()
    return {**n, "osc": banks * k * z["injected"], "theta_in": k * z["injected"], "read": banks * k * z["read"],
            "gain": k * z["read"], "accumulated": banks * k * z["accumulated"]}


_BLOCKED_EVENTS = {"kuramoto": _blocked}
"""Layer kinds whose passes the blocked schedule changes -> the change."""


def pass_events(kind: str, *, n_heads: int, head_dim: int, T: int, banks: int, taps: int, prefill: bool,
                block: int | None = None) -> dict:
    """Cells and events of one layer per pass of the array (see the module notes); ``block``: the Kuramoto
    prefill or decode pass under the blocked schedule (``[array] block``; None: unblocked).

    Returns
    -------
    dict with ``osc`` (oscillators running), ``coup`` (couplers), ``read`` (phases read), ``gain`` (DACs
    updated), ``a_values`` (coupler values written), ``theta_in`` (phases written from SRAM), ``per`` (tokens
    sharing the pass), ``inject`` (phases are written by injection) and, Kuramoto, the analog-score cells
    ``rot_osc``, ``mixers``, ``score_conv``; with ``block`` given, ``accumulated`` (block increments the
    periphery adds; 0 when the pass is not blocked).
    """
    if kind not in _EVENTS:
        raise ValueError(f"layer kind must be one of {', '.join(_EVENTS)}, got {kind!r}")
    n = _EVENTS[kind](n_heads, head_dim, T, banks, taps, prefill)
    if block is None:  # the unblocked counts, as before blocking existed
        return n
    if kind not in _BLOCKED_EVENTS:
        return {**n, "accumulated": 0.0}
    return _BLOCKED_EVENTS[kind](n, head_dim, n_heads, banks, block, T, prefill)
