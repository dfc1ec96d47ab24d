"""Energy figures of the chip periphery that are not device physics (moved here from mapping/devices.py).

The oscillator's own power and energy come from the device object (:mod:`hw_models.devices`); these are the
periphery's, each with its unit and source. Values kept as they were; the energy model may refine them.
"""

COUPLER_WRITE_J_PER_BIT = 10e-15
"""Energy to program one coupler bit [J]."""

ADC_FOM_J_PER_STEP = 5e-15
"""Readout ADC Walden figure of merit [J per conversion step]; one conversion costs FoM · 2**bits."""

DIGITAL_J_PER_FLOP = 2.3e-12
"""Energy per digital operation of the periphery [J]."""

SOURCES = {
    "coupler_write_j_per_bit": "assumed: 10 fJ per SRAM-cell write, order of 65 nm 6T SRAM write energy",
    "adc_fom_j_per_step": "assumed: 5 fJ/conversion-step, a representative SAR ADC Walden FoM "
                          "(B. Murmann, ADC Performance Survey 1997-2024)",
    "digital_j_per_flop": "M. Horowitz, 'Computing's energy problem', ISSCC 2014: 45 nm fp32 multiply 3.7 pJ + "
                          "add 0.9 pJ, i.e. 2.3 pJ per FLOP of a fused multiply-add",
}
"""Field -> citation or "assumed"."""
