"""The coupling rule of a chip: which coupler realises its matrix, and the coupling function it programs.

The ``two-tap`` phase correction of ring devices senses each source ring at a second node chosen by
:func:`hw_models.two_tap.best_second_tap` (the same search the circuit-level networks use).
"""

from __future__ import annotations

import numpy as np

from hw_models.two_tap import best_second_tap, tap_weights

from .device import normalised_harmonics
from .layers import model_kind_spec

__all__ = ["coupling_rule"]


def coupling_rule(config, device, kind: str = "kuramoto") -> dict:
    """The coupler the chip uses for its matrix and the effective coupling function it programs.

    ``kind``: the chip kind; its matrix is one-way (Kuramoto attention: causal, signed C, the device's
    one-way coupler, e.g. a ring's transconductor, a negative receive gain being its output-swapped circuit)
    or symmetric (SSA pairs: the bidirectional coupler, e.g. a resistor), :data:`mapping.compiler.layers.MODEL_KINDS`. H of one coupler comes from the device object (ring: receiver PPV × the
    coupler's current waveform); harmonics are normalised to a₁ = 1 (κ sets the scale) and the loading offset
    is reported per coupler in units of a₁ (a constant frequency shift, cancelled by the trim bias).

    ``two-tap`` (ring devices): each coupling senses the source ring at node 0 (weight w₁) and at node k
    (w₂ ≥ 0), H_eff = w₁ H_0 + w₂ H_k with H_k computed for that tap from the circuit; the node k and w₂/w₁
    are chosen so that the first harmonic of H_eff is a pure sine (its cos term cancelled) with the largest
    a₁ per unit of coupler weight. Doubles the couplers.

    Raises
    ------
    ValueError
        The device's coupler cannot realise the matrix (one-way or negative), or a negative coupling whose
        circuit does not give −H (the chip's phase network takes one H shape per matrix).
    """
    spec = model_kind_spec(kind)
    matrix, one_way = spec.matrix, spec.one_way_couplers
    cp = device.coupler(one_way)
    cf = device.coupling_function(one_way)
    h_raw = np.asarray(cf.harmonics, dtype=float)
    a1 = float(h_raw[0, 0])
    if not a1 > 0:
        raise ValueError(f"device {device.name!r}: the {matrix} coupler's H has no positive first sine harmonic")
    mode = config.coupling.phase_correction
    if mode == "auto":
        mode = "two-tap" if device.oscillator.tap_nodes() > 1 else "none"
    rule = {"matrix": matrix, "coupler": _describe_coupler(cp), "phase_correction": mode, "taps": 1,
            "tap_node": 0, "tap_phase_rad": 0.0, "weights": [1.0],
            "a1_rad_s_per_coupler": a1, "offset_per_coupler": float(cf.offset_rad_s) / a1,
            "harmonics": [list(map(float, r)) for r in normalised_harmonics(h_raw)]}
    if one_way:  # signed: a negative gain is the output-swapped coupler
        cn = device.coupling_function(one_way, sign=-1)
        hn = np.asarray(cn.harmonics, dtype=float)
        if not np.allclose(hn, -h_raw, rtol=1e-6, atol=1e-9 * abs(a1)):
            raise ValueError(f"device {device.name!r}: the negative-gain coupler's H is not -H of the positive one; "
                             f"the chip's phase network takes one H shape per matrix")
        rule["negative_gain"] = "swapped coupler circuit; its H computed from the circuit equals -H in every harmonic"
        rule["offset_negative_per_coupler"] = float(cn.offset_rad_s) / a1
    if mode == "none":
        return rule
    n = device.oscillator.tap_nodes()
    if n < 2:
        raise ValueError(f"coupling.phase_correction = 'two-tap' needs a device with phase taps (a ring device's "
                         f"nodes); the device is {device.name!r}")
    c0 = h_raw[:, 0] + 1j * h_raw[:, 1]
    if abs(c0[0].imag) < 1e-12 * abs(c0[0]):
        return rule
    tap = {}
    for k in range(1, n):
        hk = np.asarray(device.coupling_function(one_way, source_node=k).harmonics, dtype=float)
        tap[k] = hk[:, 0] + 1j * hk[:, 1]
    best = best_second_tap(c0[0], ((k, ck[0]) for k, ck in tap.items()))
    if best is None:
        raise ValueError("no ring tap can cancel the cos term of the coupling function's first harmonic")
    k, r = best
    ck = tap[k]
    w = tap_weights(r)
    ce = w[0] * c0 + w[1] * ck
    he = np.stack([ce.real, ce.imag], axis=1)
    a1e = float(he[0, 0])
    he = he / a1e
    he[0, 1] = 0.0  # exact by construction (rounding)
    off_k = float(device.coupling_function(one_way, source_node=k).offset_rad_s)
    rule.update(taps=2, tap_node=int(k), tap_phase_rad=float(np.angle(ck[0] / c0[0])),
                weights=[float(x) for x in w], a1_rad_s_per_coupler=a1e,
                offset_per_coupler=(w[0] * float(cf.offset_rad_s) + w[1] * off_k) / a1e,
                harmonics=[list(map(float, r_)) for r_ in normalised_harmonics(he)])
    if one_way:
        off_nk = float(device.coupling_function(one_way, sign=-1, source_node=k).offset_rad_s)
        rule["offset_negative_per_coupler"] = (w[0] * float(cn.offset_rad_s) + w[1] * off_nk) / a1e
    return rule


def _describe_coupler(cp) -> dict:
    if isinstance(cp, float):
        return {"kind": "abstract", "strength": cp}
    from hw_models.couplers import coupler_to_dict

    return coupler_to_dict(cp)
