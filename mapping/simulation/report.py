"""The report of one chip simulation (``oscsim simulate``, sweeps, notebooks): :class:`SimulationReport`.

One typed record of a run on held-out text: what ran (chip, device, backend, seed), how well (BPC of the chip
and the closed form, per-layer fidelity), at what cost (the energy report of :mod:`mapping.energy` for the
same tokens, the area), and what the chip's models say about themselves (macromodel validity, injection write
error). :meth:`SimulationReport.to_dict` is the JSON of ``oscsim simulate --json`` (keys in docs/mapping.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["SimulationReport", "simulate_report", "bpc_difference_se", "bpc_resolution", "SE_BLOCK_TOKENS",
           "RESOLVE_BPC"]

SE_BLOCK_TOKENS = 16
"""Tokens per block of the paired BPC-difference standard error (consecutive tokens are correlated: the block
means are treated as independent)."""


RESOLVE_BPC = 0.05
"""The BPC difference a run should be able to tell from zero (the design verdict's loss threshold): the tokens
that make 2 SE smaller than it are reported with every run."""


def bpc_resolution(difference: float, se: float, n_tokens: int, seq_len: int, threshold: float = RESOLVE_BPC) -> dict:
    """Whether a chip's BPC difference is resolved by its run, and the tokens that would resolve it.

    Resolved: |difference| > 2 SE (about 95 % two-sided). Assumption, stated with the figures: the standard
    error falls as 1/√tokens (independent blocks, :func:`bpc_difference_se`), so n tokens with error SE become
    n (2 SE / x)² tokens for 2 SE' = x. Counts are rounded up to whole windows of ``seq_len``.

    Returns
    -------
    dict
        ``resolved`` (bool, None when SE is NaN), ``z`` = \|difference\| / SE, ``tokens_to_resolve_difference``
        (2 SE < \|difference\| for a difference of this size; None when it is 0 or SE is NaN), ``threshold_bpc``,
        ``tokens_to_resolve_threshold`` (2 SE < threshold), ``assumption``.
    """
    def tokens(x: float):
        if not (se == se and x > 0):
            return None
        n = n_tokens * (2.0 * se / x) ** 2
        return int(math.ceil(n / seq_len) * seq_len)

    d = abs(difference)
    return {"resolved": None if se != se else bool(d > 2.0 * se), "z": d / se if se == se and se > 0 else None,
            "tokens_to_resolve_difference": tokens(d), "threshold_bpc": threshold,
            "tokens_to_resolve_threshold": tokens(threshold),
            "assumption": "the standard error falls as 1/sqrt(tokens); resolved means |difference| > 2 SE"}


def resolution_line(rep: dict) -> str | None:
    """The one line of ``oscsim simulate`` saying whether the BPC difference is resolved, from its JSON ``rep``."""
    r = rep.get("bpc_resolution")
    if not r or r["resolved"] is None:
        return None
    d, se, n = abs(rep["bpc_difference"]), rep["bpc_difference_se"], rep["n_tokens"]
    need = r["tokens_to_resolve_threshold"]
    thr = f"{need:,} tokens would resolve {r['threshold_bpc']:g} BPC (2 SE < {r['threshold_bpc']:g})"
    if r["resolved"]:
        return (f"resolved: |difference| {d:.4f} > 2 SE = {2 * se:.4f} on {n:,} tokens; {thr}, "
                "taking SE as falling with 1/sqrt(tokens)")
    more = r["tokens_to_resolve_difference"]
    size = (f"about {more:,} tokens would resolve a difference of this size" if more is not None
            else "a zero difference cannot be resolved")
    return (f"not resolved: |difference| {d:.4f} is inside 2 SE = {2 * se:.4f} on {n:,} tokens; {size}, and "
            f"{thr}, taking SE as falling with 1/sqrt(tokens)")


@dataclass(frozen=True, kw_only=True)
class SimulationReport:
    """One chip simulation on held-out text.

    Attributes
    ----------
    checkpoint, model : str or None
        The checkpoint (bundled name or path) and the model's registry name.
    device, chip_kind : str
        The chip's device and kind.
    ideal : bool
        The chip's config is the idealised one (no noise, mismatch or quantisation).
    seed : int
        Noise seed of the run.
    n_tokens, seq_len : int
        Tokens scored and tokens per window.
    bpc_closed_form, bpc_chip : float
        Bits per character of the closed-form model and of the chip.
    fidelity : list of dict
        Per-layer fidelity (chip vs closed form on the same input), :class:`mapping.fidelity.LayerFidelity`.
    kappa_tau : float or None
        κτ_s of a Kuramoto chip's settle window [rad]; None on SSA chips (their windows are ``config.ssa``'s).
    timebase, resources : dict
        The chip's unit conversions and resource totals.
    tokens_per_s, chip_wall_s : float
        Simulated tokens per second and the chip simulation's wall time [s].
    backend : str
        What integrated the layers.
    bpc_difference_se : float
        Standard error of ``bpc_chip − bpc_closed_form`` (:func:`bpc_difference_se`; NaN with one block).
    energy : dict or None
        :func:`mapping.energy.energy_report` of the chip for ``seq_len`` tokens (None when not asked): area,
        latency per token, SRAM and leakage with it (:attr:`area_mm2`, :attr:`latency_per_token_s`,
        :attr:`sram_bytes`, :attr:`leakage_j`).
    gpu_measured : dict or None
        NVML measurement of the closed-form attention (None without a CUDA GPU).
    macromodel_validity, injection_write_error : dict or None
        What :meth:`mapping.chip.Chip.macromodel_validity` and :meth:`~mapping.chip.Chip.injection_write_error`
        say.
    simulated_pass : {'prefill', 'decode'}
        The pass the fidelity run simulated (:func:`mapping.backends.decode.simulated_pass`): decode on the
        phase macromodel when ``[energy] phase = "decode"``; the prefill network otherwise.
    scores, decode_keys : str
        The chip's ``[scores] mode`` and ``[decode] keys``.
    config : dict or None
        The chip's configuration as the TOML holds it (:func:`mapping.config.config_to_dict`), ``--set`` fields
        included.
    """

    checkpoint: str | None
    model: str | None
    device: str
    chip_kind: str
    ideal: bool
    seed: int
    n_tokens: int
    seq_len: int
    bpc_closed_form: float
    bpc_chip: float
    fidelity: list
    kappa_tau: float | None
    timebase: dict
    resources: dict
    tokens_per_s: float
    chip_wall_s: float
    backend: str
    bpc_difference_se: float = math.nan
    energy: dict | None = None
    gpu_measured: dict | None = None
    macromodel_validity: dict | None = None
    injection_write_error: dict | None = None
    simulated_pass: str = "prefill"
    scores: str = "digital"
    decode_keys: str = "reinjected"
    config: dict | None = None

    @property
    def bpc_difference(self) -> float:
        """Chip BPC minus closed-form BPC."""
        return self.bpc_chip - self.bpc_closed_form

    def _energy(self, key: str) -> float:
        if self.energy is None:
            raise ValueError(f"{key}: this report was made without the energy report (energy=False)")
        return float(self.energy[key])

    @property
    def area_mm2(self) -> float:
        """Die area [mm²] (array, SRAM, periphery; :func:`mapping.energy.chip_area`)."""
        return self._energy("area_mm2")

    @property
    def latency_per_token_s(self) -> float:
        """Latency per token [s] of the schedule's windows (:mod:`mapping.energy.latency`), the config's phase."""
        return self._energy("latency_per_token_s")

    @property
    def sram_bytes(self) -> float:
        """The chip's SRAM [bytes] (:mod:`mapping.energy.sram`)."""
        return self._energy("sram_bytes")

    @property
    def leakage_j(self) -> float:
        """Leakage of the whole die over a token's latency [J] (the ``leakage_j`` term)."""
        return self._energy("leakage_j")

    @property
    def energy_per_token_j(self) -> float:
        """Chip energy per token [J], attention layers, the config's phase."""
        return self._energy("energy_per_token_chip_j")

    def to_dict(self) -> dict:
        """The JSON layout of ``oscsim simulate --json`` (documented in docs/mapping.md)."""
        en = self.energy or {}
        rep = {
            "checkpoint": self.checkpoint, "model": self.model, "device": self.device, "ideal": self.ideal,
            "n_tokens": self.n_tokens, "seq_len": self.seq_len, "bpc_closed_form": self.bpc_closed_form,
            "bpc_chip": self.bpc_chip, "bpc_difference": self.bpc_difference,
            "bpc_difference_se": self.bpc_difference_se,
            "bpc_resolution": bpc_resolution(self.bpc_difference, self.bpc_difference_se, self.n_tokens,
                                             self.seq_len),
        }
        if self.energy is not None:
            rep.update({
                "energy_per_token_chip_j": en["energy_per_token_chip_j"],
                "energy_per_token_gpu_j": en["energy_per_token_gpu_j"],
                "gpu_energy_bounds_j": en["gpu_energy_bounds_j"], "gpu_bound": en["gpu_bound"],
                "energy_headline": en["headline"], "energy_phase": en["phase"], "analog_scores": en["analog_scores"],
                "whole_model": en["whole_model"], "offloaded_fraction": en["offloaded_fraction"],
                "amdahl_max_gain": en["amdahl_max_gain"], "array_gain": en["array_gain"],
                "gain_vs_gpu": en["gain_vs_gpu"], "digital_only_chip_j": en["digital_only_chip_j"],
                "energy_phases": en["phases"], "energy_timeline_s": en["timeline_s"],
                "analog_score_noise": en.get("analog_score_noise"), "area_mm2": en["area_mm2"], "area": en["area"],
                "latency_per_token_s": en["latency_per_token_s"], "sram_bytes": en["sram_bytes"],
                "leakage_j": en["leakage_j"], "leakage_w": en["leakage_w"], "node": en["node"],
                "schedule": en["schedule"], "energy_timeline_sources": en["timeline_sources"],
                "energy_breakdown_j": en["breakdown"], "sram_breakdown_j": en["sram_breakdown_j"],
                "energy_sources": en["sources"], "gpu_model": en["gpu"], "phase_memory": en.get("phase_memory"),
                "memory": en["memory"], "baselines": _with_measured(en["baselines"], self.gpu_measured),
                "infeasible_reason": en["infeasible_reason"],
            })
        rep.update({
            "gpu_measured": self.gpu_measured,
            "energy_scope": en.get("scope"),
            "chip_kind": self.chip_kind,
            # the Kuramoto settle window; None on SSA chips, which have no kappa*tau_s (see "timebase", config.ssa)
            "kappa_tau": self.kappa_tau,
            "timebase": self.timebase, "resources": self.resources, "fidelity": self.fidelity,
            "tokens_per_s": self.tokens_per_s, "chip_wall_s": self.chip_wall_s, "backend": self.backend,
            "seed": self.seed, "macromodel_validity": self.macromodel_validity,
            "injection_write_error": self.injection_write_error, "simulated_pass": self.simulated_pass,
            "scores": self.scores, "decode_keys": self.decode_keys, "config": self.config,
        })
        return rep


def _with_measured(bl: dict, measured: dict | None) -> dict:
    """The energy report's baselines with the NVML measurement (when one was made) on ``gpu_board``."""
    if not measured or "measured_gpu_j_per_token" not in measured:
        return bl
    board = {**bl["gpu_board"], "measured_j": measured["measured_gpu_j_per_token"],
             "measured_basis": f"{measured['source']}, {measured['device']}"}
    return {**bl, "gpu_board": board}


def simulate_report(chip, x, y, *, seed: int = 0, progress=None, gpu: str | None = None, energy: bool = True,
                    measure_gpu: bool = True, batch_size: int | None = None, warn: bool = True) -> SimulationReport:
    """Run chip inference on windows ``x`` (B, T) scored against ``y`` (B, T) and report it.

    ``energy``: add the energy report for T tokens (``gpu``: another GPU than the config's); ``measure_gpu``:
    measure the closed-form attention with NVML where a CUDA GPU is present; ``warn``: warn when the chip is
    outside the macromodel's validity map.
    """
    from ..backends.decode import simulated_pass
    from ..config import config_to_dict
    from ..energy import energy_report, measure_gpu_energy
    from .inference import run

    if chip.config.decode.held:  # a decode rate the chip cannot reach is refused before any simulation
        from ..energy import chip_energy_per_token

        pm = chip_energy_per_token(chip, x.shape[1], phase="decode")["phase_memory"]
        if not pm["feasible"]:
            raise ValueError(f"decode.inter_token_s = {pm['inter_token_s']:.3g} s is shorter than the chip's decode "
                             f"latency per token, {pm['decode_latency_s']:.3g} s: the chip cannot decode that fast")
    res = run(chip, x, seed=seed, progress=progress, batch_size=batch_size)
    b = res.bpc(y)
    se = bpc_difference_se(res.logits, res.logits_closed_form, y)
    return SimulationReport(
        checkpoint=chip.model_info.get("checkpoint"), model=chip.model_info.get("name"), device=chip.device.name,
        chip_kind=chip.kind, ideal=chip.config == chip.config.idealised(kappa_tau=None), seed=seed,
        n_tokens=int(x.numel()), seq_len=int(x.shape[1]), bpc_closed_form=b["bpc_closed_form"],
        bpc_chip=b["bpc_chip"], bpc_difference_se=se, fidelity=res.layers, kappa_tau=chip.settle_window_rad, timebase=chip.timebase,
        resources=chip.resources, tokens_per_s=res.tokens_per_s, chip_wall_s=res.wall_s, backend=res.backend,
        energy=energy_report(chip, x.shape[1], gpu=gpu) if energy else None,
        gpu_measured=measure_gpu_energy(chip.model, x[: min(8, len(x))]) if measure_gpu else None,
        macromodel_validity=chip.macromodel_validity(warn=warn), injection_write_error=chip.injection_write_error(),
        simulated_pass=simulated_pass(chip), scores=chip.config.scores.mode, decode_keys=chip.config.decode.keys,
        config=config_to_dict(chip.config))


def bpc_difference_se(logits_chip, logits_closed_form, targets, block: int = SE_BLOCK_TOKENS) -> float:
    """Standard error [bits/char] of the chip's BPC minus the closed form's on the same tokens.

    The per-token difference of the two cross-entropies is averaged in blocks of ``block`` consecutive tokens of
    a window (a window's tail shorter than a block is dropped from the error estimate only), and the block means
    are taken as independent: SE = std(block means) / √(blocks). NaN with fewer than two blocks.
    """
    import torch

    lc = torch.as_tensor(logits_chip, dtype=torch.float64)
    lf = torch.as_tensor(logits_closed_form, dtype=torch.float64)
    y = torch.as_tensor(targets, dtype=torch.long)
    V = lc.shape[-1]
    d = (torch.nn.functional.cross_entropy(lc.reshape(-1, V), y.reshape(-1), reduction="none")
         - torch.nn.functional.cross_entropy(lf.reshape(-1, V), y.reshape(-1), reduction="none")) / math.log(2)
    B, T = y.shape
    nb = T // block
    if B * nb < 2:
        return math.nan
    means = d.reshape(B, T)[:, : nb * block].reshape(B * nb, block).mean(dim=1)
    return float(means.std(unbiased=True) / math.sqrt(B * nb))
