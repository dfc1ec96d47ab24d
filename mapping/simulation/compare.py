"""Closed form vs the simulated network for one layer and head, with plots (``oscsim compare``).

The head runs on the backend of the chip's layer (:func:`mapping.backends.backend_for`), prepared as a run
prepares it except that the gain bank's trajectories are kept for the plots and the phase noise is the
nominal σ of the timebase (the per-oscillator diffusion of the instance draw is not applied here, as this
command has always done; ``oscsim simulate`` applies it). A backend that keeps no trajectories (the ring
circuit) is shown by the phase macromodel of the same rings (``trajectories_from``); the circuit itself is a
rung of the fidelity ladder (:mod:`mapping.simulation.ladder`). The spin-torque complex-amplitude network
keeps no phase trajectories: its comparison has the matrices figure only.
"""

from __future__ import annotations

import numpy as np

from ..fidelity import cosine_similarity, phase_error, relative_error
from ..seeds import LayerSeeds
from .figures import kuramoto_figures, save_figures, ssa_figures

__all__ = ["compare_layer"]


def _compare_kuramoto(chip, backend, tokens, layer, head, plot_dir, seed):
    import torch

    cfg, lm = chip.config, chip.layers[layer]
    inp, (theta, parts) = backend.capture(chip.model, tokens, layer)
    prepared = backend.prepare(chip, layer, save_every=1, sigma=chip.timebase["sigma_rad_per_sqrt_cycle"])
    out = backend.step(prepared, inp, LayerSeeds.for_layer(seed, layer))
    attn = chip.model.layers[layer].attn
    delta_chip = attn.apply_bound(torch.from_numpy(out.va).to(theta.dtype),
                                  torch.from_numpy(out.a).to(theta.dtype) if out.a is not None
                                  else parts.a).double().numpy()
    kh, T = lm.head_dim, theta.shape[1]
    sl = slice(head * kh, (head + 1) * kh)
    va_cf = inp.va_closed_form[0, :, sl]
    va_chip = out.va[0, :, sl]
    d_cf, d_chip = parts.delta.double().numpy()[0, :, sl], delta_chip[0, :, sl]
    res = {
        "layer": layer, "head": head, "tokens": T, "kappa_tau": cfg.kappa_tau,
        "increment_rel_error": float(relative_error(va_chip, va_cf)),
        "increment_cosine": float(cosine_similarity(va_chip, va_cf)),
        "output_rel_error": float(relative_error(d_chip, d_cf)),
        "output_cosine": float(cosine_similarity(d_chip, d_cf)),
        "phase_error_rad": float(phase_error(d_chip, d_cf)),
    }
    if plot_dir is not None:
        res["plots"] = save_figures(kuramoto_figures(out, inp.A[0, head], va_cf, va_chip, layer, head, res, cfg),
                                    plot_dir)
    return res


def _compare_ssa(chip, backend, tokens, layer, head, plot_dir, seed):
    lm = chip.layers[layer]
    inp, comp = backend.capture(chip.model, tokens, layer)
    out = backend.step(backend.prepare(chip, layer), inp, LayerSeeds.for_layer(seed, layer))
    Sc = inp.S_closed_form[0, head]
    Sh = out.S[0, head]
    lc = inp.locked_closed_form[0, head]
    N = Sh.shape[0]
    allowed = ~np.eye(N, dtype=bool)
    if inp.causal:
        allowed &= np.tril(np.ones((N, N), dtype=bool))
    res = {"layer": layer, "head": head, "tokens": N, "mode": lm.kind,
           "S_rel_error": float(relative_error(Sh[allowed], Sc[allowed])),
           "S_cosine": float(cosine_similarity(Sh[allowed], Sc[allowed])),
           "locked_agreement": float(((out.locked[0, head] == lc) & allowed).sum() / allowed.sum())}
    if plot_dir is not None:
        res["plots"] = save_figures(ssa_figures(chip, lm, comp, Sc, Sh, allowed, layer, head, res, seed), plot_dir)
    return res


_COMPARISONS = {"kuramoto": _compare_kuramoto, "ssa": _compare_ssa}
"""Chip kind of the backend's layers -> what a comparison measures and plots."""


def compare_layer(chip, tokens, *, layer: int = 0, head: int = 0, plot_dir=None, seed: int = 0) -> dict:
    """Compare one layer and head of the chip with the closed form on ``tokens`` (1, T); optional plots.

    Returns a dict of metrics (and ``plots``, the written PNG paths).
    """
    import torch

    from ..backends import backend_for

    if not 0 <= layer < len(chip.layers):
        raise ValueError(f"--layer must be in [0, {len(chip.layers) - 1}], got {layer}")
    if not 0 <= head < chip.layers[layer].n_heads:
        raise ValueError(f"--head must be in [0, {chip.layers[layer].n_heads - 1}], got {head}")
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    backend = backend_for(chip, layer)
    stand_in = getattr(backend, "trajectories_from", None)
    if stand_in is not None:  # this backend keeps no trajectories: the phase model of the same device shows them
        backend = backend_for(chip, layer, device=stand_in)
    return _COMPARISONS[backend.chip_kind](chip, backend, tokens, layer, head, plot_dir, seed)
