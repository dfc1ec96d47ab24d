"""``oscsim simulate``: chip inference on held-out text, its fidelity and energy, as text or JSON.

Entry point ``simulate = "mapping.cli.simulate:register"`` (group ``oscsim.commands``). The report is
:class:`mapping.simulation.SimulationReport`; this module prints it.
"""

from __future__ import annotations

import json
import math
import sys

from oscsim.cli import int_range

from .common import (DEFAULT_CHECKPOINT, DEFAULT_TOKENS, add_chip_options, check_source, chip_and_model, chip_config,
                     validation_tokens)

__all__ = ["register", "print_report"]


def _fmt_j(x):
    for unit, s in (("J", 1), ("mJ", 1e-3), ("uJ", 1e-6), ("nJ", 1e-9), ("pJ", 1e-12), ("fJ", 1e-15)):
        if abs(x) >= s:
            return f"{x / s:.3g} {unit}"
    return f"{x:.3g} J"


def print_report(report, file=None) -> None:
    """The text report of ``oscsim simulate`` (a :class:`mapping.simulation.SimulationReport`, or its dict)."""
    rep = report.to_dict() if hasattr(report, "to_dict") else report
    file = sys.stdout if file is None else file  # resolved per call: sys.stdout may be swapped
    p = lambda *a: print(*a, file=file)  # noqa: E731
    window = "" if rep.get("kappa_tau") is None else f", kappa*tau_s = {rep['kappa_tau']:.3g} rad"
    article = "an" if rep["device"][:1] in "aeiou" else "a"
    p(f"oscsim simulate: {rep['model']} ({rep['checkpoint']}) on {article} {rep['device']} chip"
      f"{' (ideal)' if rep['ideal'] else ''}{window}")
    n_win = rep["n_tokens"] // rep["seq_len"]
    p(f"  validation tokens: {rep['n_tokens']} ({n_win} window{'' if n_win == 1 else 's'} of {rep['seq_len']})")
    if rep.get("macromodel_validity"):
        p(f"  {rep['macromodel_validity']['message']}")
    if rep.get("injection_write_error"):
        p(f"  {rep['injection_write_error']['message']}")
    se = rep.get("bpc_difference_se")
    if rep.get("simulated_pass", "prefill") != "prefill" or rep.get("scores", "digital") != "digital":
        p(f"  simulated: {rep['simulated_pass']} pass, {rep['scores']} scores, decode keys {rep['decode_keys']}")
    p(f"  BPC closed form {rep['bpc_closed_form']:.4f} | chip {rep['bpc_chip']:.4f} | "
      f"difference {rep['bpc_difference']:+.4f}" + (f" +- {se:.4f} (standard error)" if se == se else ""))
    from ..simulation.report import resolution_line

    line = resolution_line(rep)
    if line:
        p(f"  {line}")
    p("  fidelity per layer (chip vs closed form, same input):")
    for i, L in enumerate(rep["fidelity"]):
        extra = ""
        if L.get("phase_error_rad"):
            extra += f", phase error {_mean(L['phase_error_rad']):.3g} rad"
        if L.get("locked_agreement"):
            extra += f", locked agreement {_mean(L['locked_agreement']):.3f}"
        p(f"    layer {i}: rel. error {L['layer_rel_error']:.3g}, cosine {L['layer_cosine']:.4f}{extra}")
    from ..energy.gpu import BOUND_NAMES  # here, not at import: `oscsim --help` loads no energy model

    g, ph = rep["gpu_model"], rep["energy_phases"]
    lo, up = rep["gpu_energy_bounds_j"]["lower"], rep["gpu_energy_bounds_j"]["upper"]
    mem = "L2 SRAM" if g["memory"] == "sram" else "HBM"
    p(f"  energy per token (attention only, {rep['energy_phase']}"
      f"{', analog scores' if rep['analog_scores'] else ''}): chip {_fmt_j(rep['energy_per_token_chip_j'])} | "
      f"GPU {_fmt_j(rep['energy_per_token_gpu_j'])} ({g['gpu']} {BOUND_NAMES[rep['gpu_bound']]}, {g['precision']})")
    bl = rep["baselines"]
    for key, what in (("digital_same_node", "same chip without the array"), ("gpu_datapath", "GPU datapath bound"),
                      ("gpu_board", "GPU board figure")):
        v = bl[key]
        meas = f", measured {_fmt_j(v['measured_j'])} (NVML)" if "measured_j" in v else ""
        p(f"    vs {what:27s} {_fmt_j(v['energy_per_token_j']):>9s} ({v['node_nm']:g} nm, {v['supply_v']:g} V, "
          f"{v['precision']}{meas}): chip / it = {v['chip_ratio']:.3g}")
    p(f"    GPU board figures: at peak {_fmt_j(lo)} (FLOPs x TDP/peak + bytes x {mem} energy) | "
      f"roofline {_fmt_j(up)} (TDP over the roofline time)")
    w = rep["whole_model"]
    p(f"    whole model: chip {_fmt_j(w['chip_j'])} | GPU board {_fmt_j(w['gpu_bounds_j']['lower'])} at peak / "
      f"{_fmt_j(w['gpu_bounds_j']['upper'])} roofline; array offloads {w['offloaded_fraction']:.1%} (Amdahl "
      f"{w['amdahl_max_gain']:.3g}x)")
    p(f"    array offloads {rep['offloaded_fraction']:.1%} of the chip's attention operations: Amdahl bound "
      f"{rep['amdahl_max_gain']:.3g}x, this array {rep['array_gain']:.3g}x over the same chip without it")
    for name, v in ph.items():
        if name != rep["energy_phase"] + ("+analog_scores" if rep["analog_scores"] else ""):
            p(f"    {name:23s} chip {_fmt_j(v['chip_j'])} | GPU board {_fmt_j(v['gpu_lower_j'])} at peak / "
              f"{_fmt_j(v['gpu_upper_j'])} roofline (Amdahl {v['amdahl_max_gain']:.3g}x)")
    p(f"    chip terms ({rep['energy_phase']}; sources in --json):")
    for k, v in sorted(rep["energy_breakdown_j"].items(), key=lambda kv: -kv[1]):
        p(f"      {k[:-2].replace('_', ' '):22s} {_fmt_j(v):>10s} {v / rep['energy_per_token_chip_j']:6.1%}")
    pm = rep.get("phase_memory")
    if pm:
        p(f"    decode keys {pm['keys']}: dt {pm['inter_token_s']:.3g} s ({pm['cycles_per_token']:.3g} cycles); per key "
          f"and token held {_fmt_j(pm['held_j_per_key_token'])} vs re-injected "
          f"{_fmt_j(pm['reinjected_j_per_key_token'])} (break-even dt {pm['break_even_inter_token_s']:.3g} s); held "
          f"drift {pm['drift_rms_oldest_rad']:.3g} rad at the oldest key, a fresh write's error "
          f"{pm['write_rms_rad']:.3g} rad reached at age {pm['loss_age_tokens']:.3g}")
    a, sc, nd = rep["area"], rep.get("schedule") or {}, rep.get("node") or {}
    p(f"  chip at {nd.get('node_nm', 65):g} nm: area {rep['area_mm2']:.4g} mm2 (array {a['array_mm2']:.4g}, SRAM "
      f"{a['sram_mm2']:.4g} for {rep['sram_bytes'] / 1e3:.4g} kB, periphery {a['periphery_mm2']:.4g}; first-order "
      f"cell sums, assumed); {sc.get('kind', 'spatial')} array of {sc.get('tiles', 0):,} tiles, "
      f"{sc.get('rounds_per_layer', 1)} round(s) per layer; latency {rep['latency_per_token_s'] * 1e9:.4g} ns per "
      f"token; leakage {_fmt_j(rep['leakage_j'])} per token ({rep['leakage_w'] * 1e3:.3g} mW)")
    m = rep.get("memory") or {}
    off = m.get("offchip_bytes") or {}
    if m.get("weights") == "stationary" or sum(off.values()) > 0:
        p(f"  memory: weights {m['weights']}; off chip ({m['offchip']}, {m['offchip_j_per_bit'] * 1e12:.3g} pJ/bit): "
          f"keys {off.get('keys', 0) / 1e3:.4g} kB, weights {off.get('weights', 0) / 1e3:.4g} kB (die SRAM "
          f"{m['on_die_bytes'] / 1e3:.4g} kB, capacity {m['sram_max_bytes'] / 1e3:.4g} kB)")
    if rep.get("infeasible_reason"):
        p(f"  INFEASIBLE: {rep['infeasible_reason']}")
    if rep.get("gpu_measured"):
        p(f"  GPU measured (NVML): {rep['gpu_measured']}")
    p(f"  simulated {rep['tokens_per_s']:.1f} tokens/s ({rep['backend']} backend)")


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else math.nan


def _run_simulate(args) -> int:
    check_source(args, tokens=args.tokens, split=args.split)  # before anything heavy loads
    from ..simulation.report import simulate_report

    cfg = chip_config(args)
    from ..config import AnalogScores

    if getattr(args, "analog_scores", False) and cfg.scores.mode != AnalogScores.mode:  # compiled with it

        if args.checkpoint.endswith(".json"):
            raise ValueError("--analog-scores cannot change a compiled chip file; pass the checkpoint instead")
        cfg = cfg.replace(scores=AnalogScores())
    chip, _ = chip_and_model(args, cfg)
    # windows of the chip's context (context_tokens, or the model's seq_len)
    x, y = validation_tokens(chip.model_info["config"], args.tokens, args.split, T=chip.max_tokens)
    rep = simulate_report(chip, x, y, seed=args.seed, progress=False if args.json else None)
    if args.json:
        print(json.dumps(rep.to_dict(), indent=1, default=str))
    else:
        print_report(rep)
    return 0


def register(subparsers) -> None:
    from ..preflight import chip_checkpoints

    p = subparsers.add_parser("simulate", help="chip inference on held-out text: fidelity and energy",
                              description="Compile (or load) a chip, run it on the bundled validation text and print "
                                          "BPC (chip vs closed form), per-layer fidelity and energy per token.")
    p.add_argument("checkpoint", metavar="CKPT", nargs="?", default=DEFAULT_CHECKPOINT,
                   help=f"bundled checkpoint ({', '.join(chip_checkpoints())}), checkpoint folder or a chip JSON "
                        f"(default: {DEFAULT_CHECKPOINT})")
    add_chip_options(p)
    p.add_argument("--tokens", type=int_range(1), default=DEFAULT_TOKENS,
                   help="validation tokens to score: whole windows of the chip's context (context_tokens, or the "
                        "model's seq_len), at least one, at most what --split holds (a count between whole windows "
                        "scores the windows below it, and says so)")
    p.add_argument("--split", default="valid", choices=("valid", "test"), help="held-out split to score")
    p.add_argument("--seed", type=int_range(0), default=0, help="noise seed of the run (>= 0)")
    p.add_argument("--analog-scores", action="store_true",
                   help="the analog-score mode ([scores] mode = 'analog'): the scores measured by the oscillators, "
                        "mixers and ADCs, simulated (default: the configuration's scores)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_run_simulate)
