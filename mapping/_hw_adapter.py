"""Adapter from :mod:`hw_models` presets (docs/devices.md interface) to :class:`mapping.devices.DeviceProfile`.

Per-oscillator figures come from the device models: f₀ (:func:`hw_models.free_running_frequency`),
D (:func:`hw_models.phase_diffusion`), the coupling function's harmonics (:func:`hw_models.coupling_function`,
normalised to a_1 = 1; the coupler's loading offset is a known frequency shift compensated by the bias),
power (:func:`hw_models.power`), coupler programming energy, and the relative frequency spread estimated from
:func:`hw_models.draw_mismatch` (512 instances, seed 0; the chip's own draw is Gaussian with this σ).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np
import math

_N_SPREAD = 512
_BITS_REF = 8


@lru_cache(maxsize=8)
def _profile(name: str):
    import hw_models as hw

    if name in ("ring-macromodel", "ring-circuit"):
        params, coupler = hw.cmos_65nm_ring(), hw.cmos_65nm_coupler()
        src = "hw_models.cmos_65nm_ring() with cmos_65nm_coupler()"
    elif name == "spin-torque":
        params, coupler = hw.vortex_stno(), None
        src = "hw_models.vortex_stno()"
    elif name == "ideal":
        params = hw.ideal_oscillator()
        h = np.asarray(params.harmonics, dtype=float)
        d = dict(f0_hz=float(hw.free_running_frequency(params)), phase_diffusion_rad2_per_s=float(hw.phase_diffusion(params)),
                 freq_spread_rel=float(params.sigma_f_rel), harmonics=tuple(tuple(r) for r in h / h[0, 0]),
                 src="hw_models.ideal_oscillator()")
        if params.power_w > 0:
            d["power_w"] = float(params.power_w)
        return d
    else:
        return None
    f0 = float(hw.free_running_frequency(params))
    D = float(hw.phase_diffusion(params))
    # STNO: the coupler argument is the coupling rate Ω [1/s]; only the shape of H is used here
    cf = hw.coupling_function(params, coupler if coupler is not None else 1.0)
    beta = 0.0
    if coupler is None:
        # STNO electrical coupling has a programmable phase β: the compiler picks the β that makes the first
        # harmonic a pure sine (H₁ = R sin(Δ + ψ) → β = ψ in hw_models' sign convention), as the chip's coupling rule
        h1 = np.asarray(cf.harmonics, dtype=float)[0]
        beta = math.atan2(h1[1], h1[0])  # hw_models convention: H(Δ) uses Δ − β in the rotation
        cf = hw.coupling_function(params, 1.0, beta_rad=beta)
    h = np.asarray(cf.harmonics, dtype=float)
    if h.ndim != 2 or h.shape[1] != 2 or h[0, 0] <= 0:
        raise ValueError("unusable coupling harmonics")
    h = h / h[0, 0]
    h = h[np.any(np.abs(h) > 1e-3, axis=1) | (np.arange(len(h)) == 0)]  # drop negligible harmonics
    inst = hw.draw_mismatch(params, _N_SPREAD, 0)
    spread = float(np.std(inst.f0_hz) / np.mean(inst.f0_hz))
    p = float(hw.power(params))
    e_prog = float(hw.coupler_programming_energy(bits=_BITS_REF)) / _BITS_REF  # (bits) in hw_models
    t_ref = float(getattr(params, "temperature_k", 300.0))
    c_spread = float(getattr(coupler, "sigma_rel", 0.0)) if coupler is not None else None
    d = dict(f0_hz=f0, phase_diffusion_rad2_per_s=D, t_ref_k=t_ref, freq_spread_rel=spread,
                coupler_spread_rel=c_spread, harmonics=tuple(tuple(r) for r in h), power_w=p,
                coupler_write_j_per_bit=e_prog, src=src + (f", coupling phase beta = {beta:.4f} rad" if beta else ""))
    if c_spread is None:
        del d["coupler_spread_rel"]
    return d


def _source_key() -> str:
    import hashlib
    from pathlib import Path

    import hw_models

    h = hashlib.sha256()
    for f in sorted(Path(hw_models.__file__).parent.glob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:20]


def _cached_profile(name: str):
    """:func:`_profile`, cached on disk per hw_models source version (building the ring's PPV takes ~30 s)."""
    import json
    import os
    from pathlib import Path

    path = Path(os.environ.get("OSCSIM_CACHE", Path.home() / ".cache" / "oscsim")) / "mapping-device-profiles.json"
    key = f"{name}:{_source_key()}"
    try:
        cache = json.loads(path.read_text())
    except (OSError, ValueError):
        cache = {}
    if key in cache:
        d = cache[key]
        d["harmonics"] = tuple(tuple(r) for r in d["harmonics"])
        return d
    d = _profile(name)
    if d is None:
        return None
    d = {k: (tuple(tuple(float(x) for x in r) for r in v) if k == "harmonics" else v) for k, v in d.items()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        cache[key] = {k: ([list(r) for r in v] if k == "harmonics" else v) for k, v in d.items()}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(cache))
        os.replace(tmp, path)
    except OSError:
        pass
    return d


def profile(name, fallback):
    """A DeviceProfile built from hw_models presets (falls back field by field only through the caller)."""
    d = _cached_profile(name)
    if d is None:
        return None
    d = dict(d)
    src = d.pop("src")
    sources = dict(fallback.sources)
    sources.update({k: f"{src}: {k} from hw_models" for k in d if k != "src"})
    if name == "ideal":
        return replace(fallback, **d, sources=sources)
    sources.update({
        "f0_hz": f"{src}: hw_models.free_running_frequency",
        "phase_diffusion_rad2_per_s": f"{src}: hw_models.phase_diffusion (Var = D t)",
        "freq_spread_rel": f"{src}: std of hw_models.draw_mismatch over {_N_SPREAD} instances",
        **({"coupler_spread_rel": f"{src}: coupler sigma_rel"} if "coupler_spread_rel" in d else {}),
        "harmonics": f"{src}: hw_models.coupling_function, normalised to a_1 = 1"
                     + (" (circuit PPV; the layer is simulated with this macromodel)" if name == "ring-circuit" else ""),
        "power_w": f"{src}: hw_models.power",
        "coupler_write_j_per_bit": f"{src}: hw_models.coupler_programming_energy / {_BITS_REF} bits (assumed model)",
    })
    return replace(fallback, **d, sources=sources)
