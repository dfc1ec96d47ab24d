"""Compile a trained closed-form model onto an oscillator chip (:func:`compile`).

The compiler never modifies the model: it reads its configuration and weights, draws the chip's mismatch
once (seeded by ``config.mismatch_seed``), derives the programming rules and counts resources.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from . import units
from .chip import Chip, LayerMap, _sha, coupler_spread_draw
from .config import ChipConfig
from .devices import chip_device, coupling_rule  # noqa: F401  (coupling_rule re-exported)
from .model_io import attach_model, load_model, model_fingerprint, model_kind
from .inert import check_fields_act
from .quantise import Quantiser

__all__ = ["compile", "load_model", "model_kind", "model_fingerprint", "attach_model"]

_TRIM_RANGE_SIGMA = 4.0  # the trim DAC spans ±4 σ of the frequency spread (assumed)


def _model_name(model) -> str:
    try:
        from oscsim.nn.registry import model_name

        return model_name(model.config)
    except Exception:
        return type(model).__name__


def _trim(eps: np.ndarray, sigma: float, bits: int | None):
    """Trim codes and residual relative errors: code = clip(round(ε/step)), step = 4σ / (2**(b−1) − 1)."""
    if sigma == 0 or bits is None:
        return np.zeros(eps.shape, dtype=np.int64), eps
    L = max(2 ** (bits - 1) - 1, 1)
    step = _TRIM_RANGE_SIGMA * sigma / L
    code = np.clip(np.round(eps / step), -L, L).astype(np.int64)
    return code, eps - code * step


def _draw(device, n_shape, rng, mismatch: bool):
    """Per-oscillator relative frequency error, D / D_nominal and power [W] from the device's instance draw."""
    n = int(np.prod(n_shape))
    osc = device.oscillator
    if not mismatch:
        return np.zeros(n_shape), np.ones(n_shape), np.full(n_shape, device.power_w)
    inst = osc.draw_instances(n, rng)
    eps = (np.asarray(inst.f0_hz) / device.f0_hz - 1.0).reshape(n_shape)
    d0 = float(osc.diffusion())
    drel = (np.asarray(inst.diffusion_rad2_per_s) / d0).reshape(n_shape) if d0 > 0 else np.ones(n_shape)
    return eps, drel, np.asarray(inst.power_w, dtype=float).reshape(n_shape)


def _kuramoto_layers(model, config: ChipConfig, freq_sigma: float, coup_sigma: float, device) -> list[LayerMap]:
    mc = model.config
    T, k, h = mc.seq_len, mc.k, mc.n_heads
    kh = k // h
    banks = 2 if (mc.bound == "norm" and mc.value == "circular" and config.norm_reference == "chip") else 1
    if mc.value != "circular":
        raise ValueError("the 'projection' value ablation has no Kuramoto step to put on a chip; compile a "
                         "model with value='circular'")
    cq = Quantiser(bits=config.coupling.bits, range=config.coupling.range, signed=False)
    gq = Quantiser(bits=config.coupling.gain_bits, range=config.coupling.gain_range, signed=True)
    layers = []
    for i in range(mc.n_layers):
        shape = (banks, h, kh, T)
        rng = np.random.default_rng([config.mismatch_seed, i, 1])
        eps, drel, pw = _draw(device, shape, rng, config.mismatch)
        code, resid = _trim(eps, freq_sigma, config.trim_bits)
        cshape = (banks, h, kh, T, T)
        cseed = [config.mismatch_seed, i, 2]
        sha = _sha(coupler_spread_draw(cseed, cshape, coup_sigma)) if coup_sigma > 0 else ""
        n_osc = banks * k * T
        n_coup = banks * k * T * (T - 1) // 2
        res = {"oscillators": n_osc, "couplers": n_coup, "coupler_bits": n_coup * (config.coupling.bits or 0),
               "readout_channels": n_osc, "gain_dacs": k * T, "trim_dacs": n_osc}
        layers.append(LayerMap(index=i, kind="kuramoto", n_heads=h, head_dim=kh, max_tokens=T, banks=banks,
                               oscillator_shape=shape, lam=0.0, coupling_quantiser=cq, gain_quantiser=gq,
                               freq_trim_code=code, freq_residual_rel=resid, coupler_shape=cshape,
                               coupler_spread_rel=coup_sigma, coupler_seed=cseed, coupler_sha256=sha,
                               resources=res, diffusion_rel=drel, power_w=pw))
    return layers


def _ssa_layers(model, config: ChipConfig, freq_sigma: float, coup_sigma: float, device) -> list[LayerMap]:
    mc = model.config
    T, h = mc.seq_len, mc.n_heads
    collective = config.ssa.mode == "collective"
    if collective and mc.frequency != "scalar":
        raise ValueError("ssa.mode = 'collective' needs an SSA-1D model (frequency='scalar': one oscillator per "
                         "token and head); this model has vector frequencies, use ssa.mode = 'pairwise'")
    if mc.top_k is not None:
        raise ValueError("the sparse top-k SSA variant is not supported on the chip (top-k selection is not a "
                         "physical operation); compile a model with top_k=None")
    F = 1 if mc.frequency == "scalar" else mc.d_model // h
    cq = Quantiser(bits=config.coupling.bits, range=1.0, signed=False)
    kappa = units.coupling_rad_per_cycle(config.coupling.fraction)
    layers = []
    for i, blk in enumerate(model.blocks):
        K = float(blk.attn.K.detach())
        lam = kappa / K
        shape = (h, T) if collective else (h, T, T, 2)
        rng = np.random.default_rng([config.mismatch_seed, i, 1])
        eps, drel, pw = _draw(device, shape, rng, config.mismatch)
        code, resid = _trim(eps, freq_sigma, config.trim_bits)
        cshape = (h, T, T)
        cseed = [config.mismatch_seed, i, 2]
        sha = _sha(coupler_spread_draw(cseed, cshape, coup_sigma)) if coup_sigma > 0 else ""
        pairs = h * T * (T - 1) // 2
        if collective:
            res = {"oscillators": h * T, "couplers": pairs, "coupler_bits": pairs * (config.coupling.bits or 0),
                   "readout_channels": h * T, "gain_dacs": 0, "trim_dacs": h * T}
        else:
            res = {"oscillators": 2 * pairs, "couplers": pairs, "coupler_bits": pairs * (config.coupling.bits or 0),
                   "readout_channels": pairs, "gain_dacs": 0, "trim_dacs": 2 * pairs}
        layers.append(LayerMap(index=i, kind="ssa1d-collective" if collective else "ssa-pairwise", n_heads=h,
                               head_dim=F, max_tokens=T, banks=1, oscillator_shape=shape, lam=lam,
                               coupling_quantiser=cq, gain_quantiser=None, freq_trim_code=code,
                               freq_residual_rel=resid, coupler_shape=cshape, coupler_spread_rel=coup_sigma,
                               coupler_seed=cseed, coupler_sha256=sha, resources=res, diffusion_rel=drel,
                               power_w=pw))
    return layers


def compile(model: Any, config: ChipConfig | None = None, *, checkpoint: str | None = None) -> Chip:
    """Compile a trained model onto an oscillator chip.

    Parameters
    ----------
    model : KuramotoLM, OSNModel, or str
        The closed-form model, or a checkpoint name/path (loaded with :func:`oscsim.train.load_checkpoint`).
        It is not modified.
    config : ChipConfig, optional
        Chip configuration (default: ``ChipConfig()``, the 65 nm ring macromodel).
    checkpoint : str, optional
        Where the model came from, recorded in the chip (set automatically when ``model`` is a name/path).

    Returns
    -------
    Chip

    Raises
    ------
    ValueError
        A model a chip cannot run (a transformer, the projection ablation, top-k SSA), or a bad config.
    """
    if config is None:
        config = ChipConfig()
    if not isinstance(config, ChipConfig):
        raise ValueError(f"config must be a ChipConfig, got {type(config).__name__}")
    if isinstance(model, (str, os.PathLike)):
        checkpoint = str(model)
        model, _ = load_model(model)
    kind = model_kind(model)
    if config.device == "ring-circuit":
        from .circuit_chip import check_circuit_supported

        check_circuit_supported(kind)
    dev = chip_device(config.device, f0_hz=config.f0_hz)
    check_fields_act(config, kind, model.config, dev)  # every field acts or is refused (mapping.inert)
    freq_sigma = dev.freq_spread_rel if config.mismatch else 0.0
    coup_sigma = (config.coupling.spread if config.coupling.spread is not None else dev.coupler_spread_rel(kind))
    coup_sigma = coup_sigma if config.mismatch else 0.0
    rule = coupling_rule(config, dev, kind)
    layers = (_kuramoto_layers if kind == "kuramoto" else _ssa_layers)(model, config, freq_sigma, coup_sigma, dev)
    if rule["taps"] > 1:
        for lm in layers:
            lm.resources["couplers"] *= rule["taps"]
            lm.resources["coupler_bits"] *= rule["taps"]
    D = dev.diffusion_at(config.temperature_k) if config.noise else 0.0
    timebase = {
        "time_unit": "cycle (1/f0)",
        "f0_hz": dev.f0_hz,
        "kappa_rad_per_cycle": config.kappa,
        "kappa_rad_per_s": units.coupling_rad_per_s(config.coupling.fraction, dev.f0_hz),
        "settle_cycles": config.settle_cycles,
        "settle_time_s": units.settle_time_s(config.settle_cycles, dev.f0_hz),
        "kappa_tau": config.kappa_tau,
        "phase_diffusion_rad2_per_s": D,
        "sigma_rad_per_sqrt_cycle": units.noise_sigma_per_cycle(D, dev.f0_hz),
        "freq_spread_rel": freq_sigma,
        "coupler_spread_rel": coup_sigma,
    }
    if config.calibration_temperature_k is not None:  # trimmed at T_cal, run at T: the drift adds (mapping.drift)
        from .drift import temperature_drift

        pvt = temperature_drift(dev, config.temperature_k, config.calibration_temperature_k)
        pvt["calibration_temperature_k"] = config.calibration_temperature_k
        for lm in layers:
            lm.freq_residual_rel = lm.freq_residual_rel + pvt["drift_rel"]
        timebase["pvt"] = pvt
    if dev.name == "spin-torque":  # which STNO model runs and why (mapping.stno_chip), stated and warned
        from .stno_chip import stno_regime, warn_regime

        timebase["stno"] = stno_regime(config, dev, kind)
        warn_regime(timebase["stno"])
    totals = {key: int(sum(lm.resources[key] for lm in layers))
              for key in ("oscillators", "couplers", "coupler_bits", "readout_channels", "gain_dacs", "trim_dacs")}
    static = [{"name": n, "shape": list(t.shape)} for n, t in sorted(model.state_dict().items())]
    info = {"name": _model_name(model), "checkpoint": checkpoint, "config": model.config.to_dict(),
            "fingerprint": model_fingerprint(model)}
    chip = Chip(kind=kind, config=config, device=dev, model_info=info, timebase=timebase, layers=layers,
                static_digital=static, resources=totals, coupling_rule=rule)
    chip.model = model
    return chip
