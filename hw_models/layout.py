"""Layout figures of the device cells (oscillator, coupler, phase detector), each with its unit and source.

The device classes (:mod:`hw_models.devices`) compute their own cell areas from these figures
(``Oscillator.area_um2``, ``coupler_area_um2``, ``detector_area_um2``); :mod:`mapping.energy.area` sums the
cells over a chip. Every figure holds at :data:`hw_models.technology.REFERENCE_NODE` (65 nm, 1.2 V) and is
carried to another node by :mod:`hw_models.technology` only: logic and mixed-signal cells by the
Stillmaker-Baas area table, latches by the published bitcell areas
(:meth:`~hw_models.technology.TechnologyNode.sram_cell_area`), and the MOS capacitor density by the node's
effective capacitance over its area ratio, so that a self-similarly ported ring keeps its share of area.
Analog cells scale worse than logic in practice: below 65 nm these areas are optimistic (stated).

None of these figures is checked against a measured layout: the cited ring chips [Moy22: 1,968 rings, 65 nm;
Lo23: 48-spin all-to-all, 65 nm] report whole-chip figures whose per-cell breakdown is not reproduced here.
"""

from __future__ import annotations

from hw_models.technology import REFERENCE_NODE, Figure

__all__ = ["DEVICE_AREA", "STNO_COUPLER_W", "ANALOG_BITS", "cell_um2", "latch_um2", "ring_area_um2",
           "dac_area_um2"]

#: an unquantised coupler or DAC is charged as 8 bits (assumed)
ANALOG_BITS = 8

DEVICE_AREA = {
    "inverter_um2": Figure(1.5, "um^2", "assumed: a minimum 65 nm inverter with its wiring (order of a 65 nm "
                           "standard-cell INVX1)"),
    "mos_cap_f_per_um2": Figure(10e-15, "F/um^2", "assumed: thin-oxide MOS capacitor density at 65 nm"),
    "unit_switch_um2": Figure(1.0, "um^2", "assumed: one unit transmission gate of a binary-weighted DAC"),
    "wiring_overhead": Figure(1.5, "1", "assumed: routing overhead on the cell sum of the coupler array"),
    "detector_um2": Figure(15.0, "um^2", "assumed: XOR/mixer, 100 fF hold/low-pass capacitor and its switch"),
    "stno_pillar_um2": Figure(0.11, "um^2", "assumed: 375 nm diameter vortex MTJ pillar (order of [Tor17])"),
    "stno_bias_um2": Figure(20.0, "um^2", "assumed: current source for the mA bias of one STNO (W ~ 12 um at "
                            "65 nm) with its interconnect"),
}
"""Cell figures of the devices at 65 nm [um^2, F/um^2 or 1]; [Tor17] J. Torrejon et al., Nature 547, 428 (2017)."""

STNO_COUPLER_W = Figure(10e-6, "W", "assumed: one 65 nm transconductance amplifier per electrical STNO coupling "
                        "(~8 uA from 1.2 V); hw_models has no STNO coupler dissipation")


def cell_um2(name: str, node=REFERENCE_NODE) -> float:
    """A :data:`DEVICE_AREA` figure at ``node`` (a :class:`~hw_models.technology.TechnologyNode`): the MOS
    capacitor density by capacitance over area (C x s_C on area x s_A), the rest by the area table."""
    if name not in DEVICE_AREA:
        raise ValueError(f"name must be one of {', '.join(DEVICE_AREA)}, got {name!r}")
    if name == "mos_cap_f_per_um2":
        return (DEVICE_AREA[name].value * node.scale_capacitance(1.0, REFERENCE_NODE)
                / node.scale_area(1.0, REFERENCE_NODE))
    return node.scale_area(DEVICE_AREA[name].value, REFERENCE_NODE)


def latch_um2(node=REFERENCE_NODE) -> float:
    """One configuration latch [um^2]: the node's 6T bitcell (:meth:`TechnologyNode.sram_cell_area`)."""
    return node.sram_cell_area().value


def dac_area_um2(bits: int, node=REFERENCE_NODE) -> float:
    """A binary-weighted DAC of ``bits`` bits [um^2]: latches + (2^b - 1) unit gates."""
    return bits * latch_um2(node) + (2**bits - 1) * cell_um2("unit_switch_um2", node)


def ring_area_um2(n_stages: int = 5, c_load_f: float = 20e-15, trim_bits: int | None = 8,
                  node=REFERENCE_NODE, latch_node=None) -> float:
    """One CMOS ring with its trim DAC and injection switch at ``node`` [um^2]: n_stages x (inverter + load
    capacitor C_load / MOS-cap density) + trim DAC (trim_bits latches + binary-weighted unit gates) + one
    injection switch (a unit gate).

    Parameters
    ----------
    n_stages : int
        Odd, >= 3.
    c_load_f : float
        Load capacitance per stage [F].
    trim_bits : int or None
        Frequency-trim DAC bits (None or 0: no trim DAC).
    node : hw_models.technology.TechnologyNode
        The node the cell is drawn at (the device's sizing).
    latch_node : hw_models.technology.TechnologyNode, optional
        The node of the trim DAC's configuration latches (the chip's logic); default ``node``.
    """
    if isinstance(n_stages, bool) or not isinstance(n_stages, int) or n_stages < 3 or n_stages % 2 == 0:
        raise ValueError(f"n_stages must be an odd integer >= 3, got {n_stages}")
    tb = trim_bits or 0
    stage = cell_um2("inverter_um2", node) + c_load_f / cell_um2("mos_cap_f_per_um2", node)
    sw = cell_um2("unit_switch_um2", node)
    ln = node if latch_node is None else latch_node
    return n_stages * stage + tb * latch_um2(ln) + (2**tb - 1) * sw * (tb > 0) + sw
