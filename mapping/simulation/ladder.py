"""The fidelity ladder (``oscsim compare --levels``, DESIGN §5.4): one compiled head at several rungs.

Each rung is a backend of the registry (:data:`RUNGS`: rung -> registered device): the closed form
(``closed-form``), the phase macromodel (``ring-macromodel``), the node-voltage circuit (``ring-circuit``) and
ngspice (``spice``), all fed the same input phases θ, weights A and gates v (the model's own forward pass),
the same quantised couplers and gains, the same coupler spread and residual frequency errors (the chip's
draw) and, at circuit level and in ngspice, the same transistor mismatch and start state. Noise is off at
every rung by default, the detector ideal and the phases placed (not injected), so the differences are those
of the models; the macromodel uses the coupling function of the coupler the circuit has (two-tap
transconductor H from the ring's PPV).
"""

from __future__ import annotations

import math
import time

import numpy as np

from .. import units
from ..fidelity import cosine_similarity, relative_error
from ..periphery.readout import wrap
from ..seeds import LayerSeeds

__all__ = ["RUNGS", "LEVELS", "parse_levels", "compare_levels"]

RUNGS = {"closed-form": "closed-form", "macromodel": "ring-macromodel", "circuit": "ring-circuit",
         "spice": "spice"}
"""Rung of ``--levels`` -> the device its backend is registered under, in ladder order."""
LEVELS = tuple(RUNGS)
"""The rung names in ladder order."""


def parse_levels(text: str) -> list:
    """``"closed-form,circuit"`` -> ordered list of rungs; unknown names raise naming ``--levels``."""
    names = [x.strip() for x in str(text).split(",") if x.strip()]
    bad = [x for x in names if x not in RUNGS]
    if bad or not names:
        raise ValueError(f"--levels: unknown rung(s) {bad or names}; valid: {', '.join(RUNGS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"--levels: a rung is named twice in {names}")
    return [x for x in RUNGS if x in names]


def _stats(x) -> dict:
    x = np.asarray(x, float).ravel()
    return {"n": int(x.size), "mean": float(x.mean()), "std": float(x.std()), "rms": float(np.sqrt(np.mean(x**2))),
            "min": float(x.min()), "max": float(x.max())}


def _crossing_traj(waves, omega, vm):
    """Phase trajectory points of network 0 from its node-0 waveforms: per ring the times t_k of rising
    crossings and wrap(−ω t_k − offset − θ₀) [rad]; returns a list of (t_k, dψ_k) per ring."""
    from hw_models.coupled_rings import crossings

    v0 = np.asarray(waves["v0"])[:, 0]
    theta0, offset = waves["theta0"][0], waves["reference_offset_rad"]
    _, ri, tc = crossings(np.asarray(waves["t"]), v0, vm)
    out = []
    for r in range(v0.shape[1]):
        tk = tc[ri == r]
        out.append((tk, wrap(-omega * tk - offset - theta0[r])))
    return out


def _rung_settings(chip, layer: int, head: int, name: str, *, noise: bool, plots: bool, dev, calibrations) -> dict:
    """The ladder's overrides of a rung backend's settings (ideal detector, placed phases, one bank; the circuit
    and spice rungs share their rings' calibrations)."""
    from ..backends.spice import SPICE_STEPS_PER_PERIOD

    cfg, lm = chip.config, chip.layers[layer]
    if name == LEVELS[1]:  # the phase macromodel with the circuit's own two-tap transconductor H
        fr = units.relative_frequency_to_rad_per_cycle(lm.freq_residual_rel) if cfg.mismatch else None
        return {"harmonics": dev.harmonics, "freq_residual": fr[:1] if fr is not None else None,
                "coupler_gain": lm.coupler_gain()[:1] if lm.coupler_spread_rel > 0 and cfg.mismatch else None,
                "sigma": chip.timebase["sigma_rad_per_sqrt_cycle"] if noise else 0.0, "readout": None,
                "reference_bank": False, "save_every": 1, "injection": None}
    if name == LEVELS[2]:
        return {"reference_bank": False, "noise": noise, "steps_per_period": SPICE_STEPS_PER_PERIOD,
                "heads": [head], "readout": None, "injection": False, "waveforms": plots,
                "calibrations": calibrations}
    if name == LEVELS[3]:
        return {"noise": noise, "heads": [head], "waveforms": plots, "calibrations": calibrations}
    return {}


def _check(chip, layer: int, head: int, levels: list, T: int) -> None:
    """The head exists, the rungs run on this chip (the registry says why not), T fits ngspice."""
    from hw_models.coupled_rings import SPICE_MAX_TOKENS

    from ..backends import backend_for
    from ..backends.kuramoto import KuramotoBackend

    if not 0 <= layer < len(chip.layers):
        raise ValueError(f"--layer must be in [0, {len(chip.layers) - 1}], got {layer}")
    if not 0 <= head < chip.layers[layer].n_heads:
        raise ValueError(f"--head must be in [0, {chip.layers[layer].n_heads - 1}], got {head}")
    if not isinstance(backend_for(chip, layer, device=RUNGS[LEVELS[0]]), KuramotoBackend):
        raise ValueError("--levels: the fidelity ladder is built for Kuramoto heads; the circuit rung is not built "
                         "for SSA")
    for name in levels[1:] if levels[0] == LEVELS[0] else levels:  # every rung past the closed form is a circuit
        try:
            backend_for(chip, layer, device=RUNGS[LEVELS[2]])
            backend_for(chip, layer, device=RUNGS[name])
        except ValueError as exc:
            raise ValueError(f"--levels: the {name} rung does not run on this chip: {exc}") from None
    if LEVELS[3] in levels and T > SPICE_MAX_TOKENS:
        raise ValueError(f"--seq-len: the spice rung allows T <= {SPICE_MAX_TOKENS}, got {T}")


def compare_levels(chip, tokens, *, layer: int = 0, head: int = 0, levels=LEVELS, plot_dir=None,
                   noise: bool = False) -> dict:
    """Run one compiled head at several rungs of the fidelity ladder on the same input and mismatch draw.

    ``noise``: thermal noise in the circuit and phase diffusion in the macromodel, each its own draw (keyed
    on the network, :class:`mapping.seeds.LayerSeeds` with seed 0).

    Returns
    -------
    dict
        ``levels.<name>.increment`` (statistics of the head's (T, k_h) increment estimate x̂ = v ⊙ a),
        ``levels.<name>.wall_s``, ``pairwise.<a>_vs_<b>.rel_error`` = ‖x_a − x_b‖/‖x_b‖ (b the later rung)
        and ``.cosine`` for every pair run, and ``plots``.
    """
    import torch

    from ..backends import backend_for
    from ..backends.circuit import chip_circuit_device
    from ..backends.spice import SPICE_STEPS_PER_PERIOD
    from .figures import ladder_figures

    levels = parse_levels(",".join(levels)) if not isinstance(levels, str) else parse_levels(levels)
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    T = int(tokens.shape[1])
    _check(chip, layer, head, levels, T)
    cfg, lm = chip.config, chip.layers[layer]
    kh = lm.head_dim
    sl = slice(head * kh, (head + 1) * kh)
    dev = chip_circuit_device(chip)
    inp, _ = backend_for(chip, layer, device=RUNGS[LEVELS[0]]).capture(chip.model, tokens, layer)
    x, wall, traj, calibrations = {}, {}, {}, {}
    for name in levels:
        t0 = time.perf_counter()
        b = backend_for(chip, layer, device=RUNGS[name])
        st = b.prepare(chip, layer, **_rung_settings(chip, layer, head, name, noise=noise,
                                                     plots=plot_dir is not None, dev=dev,
                                                     calibrations=calibrations))
        out = b.step(st, inp, LayerSeeds(0))
        x[name] = out.va[0, :, sl]
        wall[name] = time.perf_counter() - t0
        if out.traj is not None:
            traj[name] = (out.ts, out.traj[:, 0, head] - out.traj[:1, 0, head])  # (S,), (S, kh, T)
        if out.waveforms is not None:
            traj[name] = _crossing_traj(out.waveforms, 2 * math.pi / dev.period_s, 0.5 * dev.ring.vdd_v)
    res = {"layer": layer, "head": head, "tokens": T, "kappa_tau": cfg.kappa_tau, "noise": bool(noise),
           "mismatch": bool(cfg.mismatch), "levels": {}, "pairwise": {},
           "models": {"closed-form": "the model's own increment v * a",
                      "macromodel": f"phase network, two-tap transconductor H from the ring PPV (a1 = 1, "
                                    f"{len(dev.harmonics)} harmonics), {cfg.steps_per_cycle} steps/cycle",
                      "circuit": f"node-voltage ODEs, {dev.ring.n_stages}-stage level-1 rings, RK4 at "
                                 f"T/{SPICE_STEPS_PER_PERIOD}" + (", stochastic Heun with thermal noise" if noise
                                                                  else ""),
                      "spice": "ngspice transient of the exported netlist (reltol 1e-6, max step T/800)"}}
    for name in levels:
        res["levels"][name] = {"increment": _stats(x[name]), "wall_s": wall[name]}
    for i, a in enumerate(levels):
        for b in levels[i + 1:]:
            res["pairwise"][f"{a}_vs_{b}"] = {"rel_error": float(relative_error(x[a], x[b])),
                                              "cosine": float(cosine_similarity(x[a], x[b]))}
    if plot_dir is not None:
        res["plots"] = ladder_figures(res, x, traj, levels, layer=layer, head=head, T=T, kh=kh, cfg=cfg, dev=dev,
                                      plot_dir=plot_dir)
    return res
