"""Temperature drift of a compiled chip: trim at ``calibration_temperature_k``, run at ``temperature_k``.

The per-oscillator frequency trim (``trim_bits``, :func:`mapping.compiler.mismatch.trim`) is set at the calibration
temperature against a fixed reference clock. At the run temperature every oscillator's f₀ has moved by the
device's f₀(T_run)/f₀(T_cal) − 1 (the device's ``frequency_at`` and ``drift_model``: a ring's circuit model
with ngspice's level-1 temperature law, :func:`hw_models.pvt.ring_f0_hz`; devices without a cited coefficient
0), which adds to the
trim residual of each oscillator. Only this common-mode drift is modelled: the spread of df₀/dT across
mismatched devices (second order in the mismatch) is not (stated in ``timebase['pvt']``).
"""

from __future__ import annotations

__all__ = ["temperature_drift"]


def temperature_drift(device, run_k: float, calibration_k: float) -> dict:
    """Common-mode relative frequency drift δ = f₀(T_run)/f₀(T_cal) − 1 of the chip's device, with its model.

    ``device``: the chip's device (:class:`mapping.compiler.device.ChipDevice`; its ``oscillator.frequency_at``)."""
    if run_k == calibration_k:
        return {"drift_rel": 0.0, "model": "trimmed at the run temperature"}
    osc = device.oscillator
    f_run, f_cal = osc.frequency_at(run_k), osc.frequency_at(calibration_k)
    return {"drift_rel": f_run / f_cal - 1.0, "f0_run_hz": f_run, "f0_calibration_hz": f_cal,
            "model": osc.drift_model()}
