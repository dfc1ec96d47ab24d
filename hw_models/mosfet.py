"""Square-law MOSFET (SPICE LEVEL=1, Shichman-Hodges) drain current, Numba kernel and NumPy twin.

Notes
-----
With β = KP W/L (LD = 0), V_ov = V_GS − V_TO (GAMMA = 0, so no body effect),
I_D = β (V_ov − V_DS/2) V_DS (1 + λ V_DS) for 0 ≤ V_DS < V_ov, I_D = (β/2) V_ov² (1 + λ V_DS) for V_DS ≥ V_ov,
I_D = 0 for V_ov ≤ 0; for V_DS < 0 drain and source swap (the device is symmetric), exactly as ngspice's
``mos1load.c``. A PMOS is the NMOS equation with every voltage negated and V_TO → −V_TO.

References
----------
H. Shichman, D. A. Hodges, IEEE JSSC 3, 285 (1968). ngspice manual, ch. "MOSFETs", level 1.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["ids_nmos", "ids_nmos_np", "inverter_current"]


@numba.njit(cache=True, fastmath=False)
def ids_nmos(vg: float, vd: float, vs: float, vt: float, beta: float, lam: float) -> float:
    """Current into the drain of an NMOS [A] (negative when it flows out of the drain)."""
    sign = 1.0
    if vd < vs:
        vd, vs = vs, vd
        sign = -1.0
    vds = vd - vs
    vov = vg - vs - vt
    if vov <= 0.0:
        return 0.0
    if vds < vov:
        return sign * beta * (vov - 0.5 * vds) * vds * (1.0 + lam * vds)
    return sign * 0.5 * beta * vov * vov * (1.0 + lam * vds)


@numba.njit(cache=True, fastmath=False)
def inverter_current(vin: float, vout: float, vdd: float, vt_n: float, vt_p: float, beta_n: float, beta_p: float,
                     lam_n: float, lam_p: float) -> float:
    """Net current [A] an inverter drives into its output node: the PMOS (source at V_DD, V_T ``vt_p`` < 0)
    pulls up, the NMOS (source at 0) pulls down. The PMOS is the NMOS expression with every voltage negated."""
    return (ids_nmos(-vin, -vout, -vdd, -vt_p, beta_p, lam_p)
            - ids_nmos(vin, vout, 0.0, vt_n, beta_n, lam_n))


def ids_nmos_np(vg, vd, vs, vt, beta, lam):
    """NumPy twin of :func:`ids_nmos` (broadcasting)."""
    vg, vd, vs = np.broadcast_arrays(*(np.asarray(x, float) for x in (vg, vd, vs)))
    sign = np.where(vd < vs, -1.0, 1.0)
    hi = np.maximum(vd, vs)
    lo = np.minimum(vd, vs)
    vds = hi - lo
    vov = vg - lo - vt
    lin = beta * (vov - 0.5 * vds) * vds * (1.0 + lam * vds)
    sat = 0.5 * beta * vov * vov * (1.0 + lam * vds)
    i = np.where(vds < vov, lin, sat)
    return sign * np.where(vov <= 0.0, 0.0, i)
