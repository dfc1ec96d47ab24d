"""The SPICE rung: one compiled Kuramoto head's ring networks run by ngspice (and exported as a netlist).

The networks are the circuit backend's (:func:`mapping.backends.circuit.layer_head`: the chip's quantised
couplers and gains, coupler spread, residual frequencies and transistor mismatch, each ring on its own limit
cycle at its token phase) written as an ngspice netlist (:func:`hw_models.coupled_rings.head_netlist`) and
read with the circuit model's readout; ngspice's transient is noise-free. The fourth rung of the fidelity
ladder (:mod:`mapping.simulation.ladder`) and ``oscsim export-spice`` (:func:`export_head`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hw_models.coupled_rings import SPICE_MAX_TOKENS, head_netlist, run_head_spice

from ..seeds import LayerSeeds
from .base import KuramotoInputs, KuramotoOutput
from .circuit import layer_head, periphery
from .kuramoto import KuramotoBackend, ring_only
from .registry import register

__all__ = ["SpiceRung", "SpiceSettings", "export_head", "SPICE_STEPS_PER_PERIOD"]

SPICE_STEPS_PER_PERIOD = 200
"""Circuit step of the ladder's heads (RK4 at T/200: its phase calibration spread is 2e-5 rad, 10x below
T/100); the placement calibration of a head exported to SPICE uses the same integrator."""


@dataclass(frozen=True, kw_only=True)
class SpiceSettings:
    """One head (or some heads and coordinates) of one layer, run by ngspice.

    Attributes
    ----------
    chip, layer : the compiled chip and layer index.
    heads, coordinates : lists of int or None (None: all).
    noise : bool
        The head is built (calibrated, placed) as for a noisy circuit run; ngspice itself is noise-free.
    steps_per_period : int
    waveforms : bool
        Keep node-0 waveforms (``KuramotoOutput.waveforms``).
    calibrations : dict
        Ring calibrations shared with other steps of the same layer (e.g. the circuit rung's).
    """

    chip: object
    layer: int
    heads: object = None
    coordinates: object = None
    noise: bool = False
    steps_per_period: int = SPICE_STEPS_PER_PERIOD
    waveforms: bool = False
    calibrations: dict = field(default_factory=dict, compare=False, repr=False)


@register
class SpiceRung(KuramotoBackend):
    """A head's gain bank in ngspice (see the module notes)."""

    name = "ngspice"
    blockable = False  # exports one compiled head (no blocked schedule)
    devices = ("spice",)

    refuse = classmethod(ring_only("the netlist is a CMOS ring circuit"))

    def prepare(self, chip, layer: int, *, integrator: str = "auto", **overrides) -> SpiceSettings:
        """The head's settings (``integrator`` is not used: ngspice integrates)."""
        return dataclasses.replace(SpiceSettings(chip=chip, layer=layer), **overrides)

    def step(self, prepared: SpiceSettings, inputs: KuramotoInputs, seeds: LayerSeeds) -> KuramotoOutput:
        st = prepared
        if inputs.theta.shape[1] > SPICE_MAX_TOKENS:
            raise ValueError(f"--seq-len: the spice rung allows T <= {SPICE_MAX_TOKENS}, got {inputs.theta.shape[1]}")
        head, meta = layer_head(st.chip, st.layer, inputs.theta, inputs.A, inputs.v, reference_bank=False,
                                noise=st.noise, steps_per_period=st.steps_per_period, heads=st.heads,
                                coordinates=st.coordinates, calibrations=st.calibrations)
        sp = run_head_spice(head, settle_cycles=st.chip.config.settle_cycles, return_waveforms=st.waveforms)
        est = periphery(st.chip, head, meta, sp["psi"])
        waves = None if not st.waveforms else {"t": sp["t"], "v0": sp["v0"], "theta0": head.theta0,
                                                "reference_offset_rad": sp["reference_offset_rad"][0],
                                                "device": head.device}
        return KuramotoOutput(va=est[0], a=None, backend="ngspice", waveforms=waves)


def export_head(chip, tokens, *, layer: int, head: int, coordinate: int, out=None, run: bool = False,
                steps_per_period: int | None = None) -> dict:
    """Build the circuit network of (layer, head, coordinate) for ``tokens`` (1, T), write its netlist to ``out``
    and, with ``run``, execute ngspice and return the read phases and the periphery's increment estimate.

    The network is the gain bank's: T rings with the chip's quantised couplers and gains, coupler spread,
    residual frequency errors and transistor mismatch, each ring on its own limit cycle at its token phase
    (:func:`mapping.backends.circuit.layer_head`), noise-free (ngspice's transient has no thermal noise).
    """
    import torch

    from .registry import backend_for

    if not 0 <= layer < len(chip.layers):
        raise ValueError(f"--layer must be in [0, {len(chip.layers) - 1}], got {layer}")
    backend_for(chip, layer, device="spice")  # refuses SSA layers and non-ring devices, saying why
    lm = chip.layers[layer]
    if not 0 <= head < lm.n_heads:
        raise ValueError(f"--head must be in [0, {lm.n_heads - 1}], got {head}")
    if not 0 <= coordinate < lm.head_dim:
        raise ValueError(f"--coordinate must be in [0, {lm.head_dim - 1}], got {coordinate}")
    T = int(tokens.shape[1])
    if T > SPICE_MAX_TOKENS:
        raise ValueError(f"--seq-len: the SPICE export allows T <= {SPICE_MAX_TOKENS} tokens, got {T}")
    inp, (theta, parts) = SpiceRung().capture(chip.model, torch.as_tensor(tokens, dtype=torch.long), layer)
    hd, meta = layer_head(chip, layer, inp.theta, inp.A, inp.v, reference_bank=False, noise=False, heads=[head],
                          coordinates=[coordinate], steps_per_period=steps_per_period or SPICE_STEPS_PER_PERIOD)
    net, nmeta = head_netlist(hd, settle_cycles=chip.config.settle_cycles,
                              title=f"oscsim layer {layer} head {head} coordinate {coordinate}, T = {T}")
    res = {"layer": layer, "head": head, "coordinate": coordinate, "tokens": T, "rings": T,
           "transconductors": int(np.count_nonzero(hd.gm)) * 2, "settle_time_s": nmeta["t_settle_s"],
           "stop_time_s": nmeta["t_stop_s"], "f0_hz": 1.0 / hd.device.period_s}
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(net)
        res["netlist"] = str(out)
    if run:
        sp = run_head_spice(hd, settle_cycles=chip.config.settle_cycles)
        kh = lm.head_dim
        x = periphery(chip, hd, meta, sp["psi"])[0][0, :, head * kh + coordinate]
        res.update(phases_rad=[float(p) for p in sp["psi"][0]], theta0_rad=[float(p) for p in hd.theta0[0]],
                   increment=[float(v) for v in x],
                   closed_form_increment=[float(v) for v in inp.va_closed_form[0, :, head * kh + coordinate]],
                   reference_spread_rad=sp["reference_spread_rad"][0])
    return res
