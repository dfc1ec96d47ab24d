"""Temperature drift of a compiled chip: trim at ``calibration_temperature_k``, run at ``temperature_k``.

The per-oscillator frequency trim (``trim_bits``, :func:`mapping.compiler._trim`) is set at the calibration
temperature against a fixed reference clock. At the run temperature every oscillator's f₀ has moved by the
device's f₀(T_run)/f₀(T_cal) − 1 (ring devices: the circuit model with ngspice's level-1 temperature law,
:func:`hw_models.pvt.ring_f0_hz`; spin-torque and ideal devices: no cited coefficient, 0), which adds to the
trim residual of each oscillator. Only this common-mode drift is modelled: the spread of df₀/dT across
mismatched devices (second order in the mismatch) is not (stated in ``timebase['pvt']``).
"""

from __future__ import annotations

__all__ = ["temperature_drift"]


def temperature_drift(device_name: str, run_k: float, calibration_k: float) -> dict:
    """Common-mode relative frequency drift δ = f₀(T_run)/f₀(T_cal) − 1 of a device preset, with its model."""
    if run_k == calibration_k:
        return {"drift_rel": 0.0, "model": "trimmed at the run temperature"}
    if device_name.startswith("ring"):
        import hw_models as hw
        from hw_models.pvt import ring_f0_hz

        ring = hw.cmos_65nm_ring()
        f_run, f_cal = ring_f0_hz(ring, run_k), ring_f0_hz(ring, calibration_k)
        return {"drift_rel": f_run / f_cal - 1.0, "f0_run_hz": f_run, "f0_calibration_hz": f_cal,
                "model": "hw_models.pvt.ring_f0_hz (circuit limit cycle, ngspice level-1 temperature law); "
                         "common mode only, differential drift of mismatched devices not modelled"}
    return {"drift_rel": 0.0, "model": f"{device_name}: no cited temperature coefficient of f0 (0 assumed)"}
