"""``oscsim compile``, ``oscsim simulate``, ``oscsim compare`` (entry points of the ``oscsim`` CLI)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from oscsim.cli import float_range, int_range

__all__ = ["register_compile", "register_simulate", "register_compare", "DEFAULT_CHECKPOINT", "DEFAULT_TOKENS"]

DEFAULT_CHECKPOINT = "kuramoto-tiny"
DEFAULT_TOKENS = 2048  # validation tokens of the default `oscsim simulate` (16 windows of 128)


def _config(args):
    from .config import ChipConfig, load_config

    cfg = load_config(args.config) if getattr(args, "config", None) else ChipConfig()
    if getattr(args, "ideal", False):
        cfg = cfg.idealised()
    if getattr(args, "kappa_tau", None) is not None:
        cfg = cfg.with_kappa_tau(args.kappa_tau)
    return cfg


def _add_chip_options(p) -> None:
    """The chip-configuration options that `_config` reads: --config, --ideal, --kappa-tau."""
    p.add_argument("--config", metavar="TOML", help="chip configuration TOML, see examples/chip.toml (default: the 65 nm "
                                                    "ring macromodel preset)")
    p.add_argument("--ideal", action="store_true",
                   help="ideal devices, no noise, no mismatch, unquantised couplings and readout")
    p.add_argument("--kappa-tau", type=float_range(0, lo_open=True), default=None,
                   help="override the settle window by kappa*tau_s [rad], > 0 (default: the configuration's)")


def _chip_and_model(args, cfg):
    """(chip, meta) from a checkpoint name/path or a chip JSON file."""
    from .chip_io import load_chip
    from .compiler import compile as compile_chip, load_model

    src = args.checkpoint
    if src.endswith(".json") and not Path(src).is_file():
        raise FileNotFoundError(f"CKPT: chip file {src!r} not found")
    if src.endswith(".json"):
        chip = load_chip(src)
        if getattr(args, "ideal", False) or getattr(args, "config", None):
            raise ValueError("--ideal/--config cannot change a compiled chip file; pass the checkpoint instead")
        return chip, {}
    try:
        model, meta = load_model(src)
    except FileNotFoundError as exc:
        if src == DEFAULT_CHECKPOINT:
            raise FileNotFoundError(f"{exc}. The bundled checkpoint {DEFAULT_CHECKPOINT!r} is not installed yet; "
                                    f"pass a checkpoint folder (train one with `oscsim train`)") from None
        raise
    return compile_chip(model, cfg, checkpoint=src), meta


def _validation_tokens(model_cfg: dict, n_tokens: int, split: str = "valid"):
    from oscsim.data import eval_windows, load_shakespeare

    T = int(model_cfg["seq_len"])
    if n_tokens < T:
        raise ValueError(f"--tokens must be >= {T} (one window of the model's seq_len), got {n_tokens}")
    data = load_shakespeare().split(split)
    n_win = max(1, n_tokens // T)
    x, y = eval_windows(data, T, max_windows=n_win)
    return x, y


# ------------------------------------------------------------------------------------------------ compile
def _run_compile(args) -> int:
    cfg = _config(args)
    chip, _ = _chip_and_model(args, cfg)
    out = chip.save(args.out)
    print(chip.summary())
    print(f"wrote {out}")
    return 0


def register_compile(subparsers) -> None:
    p = subparsers.add_parser("compile", help="compile a trained model onto an oscillator chip (chip JSON)",
                              description="Compile a Kuramoto/SSA checkpoint for a chip configuration and write the "
                                          "versioned chip JSON (arrays, programming rules, mismatch draw, resources).")
    p.add_argument("checkpoint", metavar="CKPT", help="bundled name (kuramoto-tiny, ssa1d-tiny) or checkpoint folder")
    _add_chip_options(p)
    p.add_argument("--out", required=True, help="output chip JSON path")
    p.set_defaults(func=_run_compile)


# ----------------------------------------------------------------------------------------------- simulate
def simulate_report(chip, x, y, *, seed=0, progress=None, gpu=None) -> dict:
    """Run chip inference on (x, y) and return the report dict of ``oscsim simulate --json``."""
    from .energy import energy_report, measure_gpu_energy
    from .inference import run

    res = run(chip, x, seed=seed, progress=progress)
    b = res.bpc(y)
    en = energy_report(chip, x.shape[1], gpu=gpu)
    measured = measure_gpu_energy(chip.model, x[: min(8, len(x))])
    rep = {
        "checkpoint": chip.model_info.get("checkpoint"),
        "model": chip.model_info.get("name"),
        "device": chip.device.name,
        "ideal": chip.config == chip.config.idealised(kappa_tau=None),
        "n_tokens": int(x.numel()),
        "seq_len": int(x.shape[1]),
        "bpc_closed_form": b["bpc_closed_form"],
        "bpc_chip": b["bpc_chip"],
        "bpc_difference": b["bpc_chip"] - b["bpc_closed_form"],
        "energy_per_token_chip_j": en["energy_per_token_chip_j"],
        "energy_per_token_gpu_j": en["energy_per_token_gpu_j"],
        "gpu_energy_bounds_j": en["gpu_energy_bounds_j"],
        "gpu_bound": en["gpu_bound"],
        "energy_headline": en["headline"],
        "energy_phase": en["phase"],
        "analog_scores": en["analog_scores"],
        "whole_model": en["whole_model"],
        "offloaded_fraction": en["offloaded_fraction"],
        "amdahl_max_gain": en["amdahl_max_gain"],
        "array_gain": en["array_gain"],
        "gain_vs_gpu": en["gain_vs_gpu"],
        "digital_only_chip_j": en["digital_only_chip_j"],
        "energy_phases": en["phases"],
        "energy_timeline_s": en["timeline_s"],
        "analog_score_noise": en.get("analog_score_noise"),
        "area_mm2": en["area_mm2"],
        "area": en["area"],
        "energy_breakdown_j": en["breakdown"],
        "sram_breakdown_j": en["sram_breakdown_j"],
        "energy_sources": en["sources"],
        "gpu_model": en["gpu"],
        "gpu_measured": measured,
        "energy_scope": en["scope"],
        "chip_kind": chip.kind,
        # the Kuramoto settle window; None on SSA chips, which have no kappa*tau_s (see "timebase", config.ssa)
        "kappa_tau": chip.timebase["kappa_tau"] if chip.kind == "kuramoto" else None,
        "timebase": chip.timebase,
        "resources": chip.resources,
        "fidelity": res.layers,
        "tokens_per_s": res.tokens_per_s,
        "chip_wall_s": res.wall_s,
        "backend": res.backend,
        "seed": seed,
        "macromodel_validity": chip.macromodel_validity(warn=True),
        "injection_write_error": chip.injection_write_error(),
    }
    return rep


def _fmt_j(x):
    for unit, s in (("J", 1), ("mJ", 1e-3), ("uJ", 1e-6), ("nJ", 1e-9), ("pJ", 1e-12), ("fJ", 1e-15)):
        if abs(x) >= s:
            return f"{x / s:.3g} {unit}"
    return f"{x:.3g} J"


def print_report(rep: dict, file=None) -> None:
    file = sys.stdout if file is None else file  # resolved per call: sys.stdout may be swapped
    p = lambda *a: print(*a, file=file)  # noqa: E731
    window = "" if rep.get("kappa_tau") is None else f", kappa*tau_s = {rep['kappa_tau']:.3g} rad"
    p(f"oscsim simulate: {rep['model']} ({rep['checkpoint']}) on a {rep['device']} chip"
      f"{' (ideal)' if rep['ideal'] else ''}{window}")
    p(f"  validation tokens: {rep['n_tokens']} ({rep['n_tokens'] // rep['seq_len']} windows of {rep['seq_len']})")
    if rep.get("macromodel_validity"):
        p(f"  {rep['macromodel_validity']['message']}")
    if rep.get("injection_write_error"):
        p(f"  {rep['injection_write_error']['message']}")
    p(f"  BPC closed form {rep['bpc_closed_form']:.4f} | chip {rep['bpc_chip']:.4f} | "
      f"difference {rep['bpc_difference']:+.4f}")
    p("  fidelity per layer (chip vs closed form, same input):")
    for i, L in enumerate(rep["fidelity"]):
        extra = ""
        if L.get("phase_error_rad"):
            extra += f", phase error {_mean(L['phase_error_rad']):.3g} rad"
        if L.get("locked_agreement"):
            extra += f", locked agreement {_mean(L['locked_agreement']):.3f}"
        p(f"    layer {i}: rel. error {L['layer_rel_error']:.3g}, cosine {L['layer_cosine']:.4f}{extra}")
    g, ph = rep["gpu_model"], rep["energy_phases"]
    lo, up = rep["gpu_energy_bounds_j"]["lower"], rep["gpu_energy_bounds_j"]["upper"]
    mem = "L2 SRAM" if g["memory"] == "sram" else "HBM"
    p(f"  energy per token (attention only, {rep['energy_phase']}"
      f"{', analog scores' if rep['analog_scores'] else ''}): chip {_fmt_j(rep['energy_per_token_chip_j'])} | "
      f"GPU {_fmt_j(rep['energy_per_token_gpu_j'])} ({g['gpu']} {rep['gpu_bound']} bound, {g['precision']})")
    p(f"    GPU bounds: lower {_fmt_j(lo)} (FLOPs x TDP/peak + bytes x {mem} energy) | "
      f"upper {_fmt_j(up)} (roofline at TDP)")
    w = rep["whole_model"]
    p(f"    whole model: chip {_fmt_j(w['chip_j'])} | GPU {_fmt_j(w['gpu_bounds_j']['lower'])} lower / "
      f"{_fmt_j(w['gpu_bounds_j']['upper'])} upper; array offloads {w['offloaded_fraction']:.1%} (Amdahl "
      f"{w['amdahl_max_gain']:.3g}x)")
    p(f"    array offloads {rep['offloaded_fraction']:.1%} of the chip's attention operations: Amdahl bound "
      f"{rep['amdahl_max_gain']:.3g}x, this array {rep['array_gain']:.3g}x over the same chip without it")
    for name, v in ph.items():
        if name != rep["energy_phase"] + ("+analog_scores" if rep["analog_scores"] else ""):
            p(f"    {name:23s} chip {_fmt_j(v['chip_j'])} | GPU {_fmt_j(v['gpu_lower_j'])} lower / "
              f"{_fmt_j(v['gpu_upper_j'])} upper (Amdahl {v['amdahl_max_gain']:.3g}x)")
    p(f"    chip terms ({rep['energy_phase']}; sources in --json):")
    for k, v in sorted(rep["energy_breakdown_j"].items(), key=lambda kv: -kv[1]):
        p(f"      {k[:-2].replace('_', ' '):22s} {_fmt_j(v):>10s} {v / rep['energy_per_token_chip_j']:6.1%}")
    p(f"    area: {rep['area_mm2']:.4g} mm2 ({', '.join(f'{a:.4g}' for a in rep['area']['per_layer_mm2'])} per "
      f"layer; first-order 65 nm cell sums, assumed)")
    if rep.get("gpu_measured"):
        p(f"  GPU measured (NVML): {rep['gpu_measured']}")
    p(f"  simulated {rep['tokens_per_s']:.1f} tokens/s ({rep['backend']} backend)")


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else math.nan


def _run_simulate(args) -> int:
    cfg = _config(args)
    chip, _ = _chip_and_model(args, cfg)
    if getattr(args, "analog_scores", False):  # energy only: the fidelity run is unchanged
        import dataclasses

        chip.config = chip.config.replace(energy=dataclasses.replace(chip.config.energy, analog_scores=True))
    x, y = _validation_tokens(chip.model_info["config"], args.tokens, args.split)
    rep = simulate_report(chip, x, y, seed=args.seed, progress=False if args.json else None)
    if args.json:
        print(json.dumps(rep, indent=1, default=str))
    else:
        print_report(rep)
    return 0


def register_simulate(subparsers) -> None:
    p = subparsers.add_parser("simulate", help="chip inference on held-out text: fidelity and energy",
                              description="Compile (or load) a chip, run it on the bundled validation text and print "
                                          "BPC (chip vs closed form), per-layer fidelity and energy per token.")
    p.add_argument("checkpoint", metavar="CKPT", nargs="?", default=DEFAULT_CHECKPOINT,
                   help=f"checkpoint name/folder or a chip JSON (default: {DEFAULT_CHECKPOINT})")
    _add_chip_options(p)
    p.add_argument("--tokens", type=int_range(1), default=DEFAULT_TOKENS,
                   help="validation tokens to score (whole windows, at least one window of the model's seq_len)")
    p.add_argument("--split", default="valid", choices=("valid", "test"), help="held-out split to score")
    p.add_argument("--seed", type=int_range(0), default=0, help="noise seed of the run (>= 0)")
    p.add_argument("--analog-scores", action="store_true",
                   help="energy only: first-order analog-score mode, scores measured by the oscillators "
                        "(default: off, scores digital)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_run_simulate)


# ------------------------------------------------------------------------------------------------ compare
def _run_compare(args) -> int:
    from .compare import compare_layer

    cfg = _config(args)
    chip, _ = _chip_and_model(args, cfg)
    x, _ = _validation_tokens(chip.model_info["config"], chip.layers[0].max_tokens)
    T = args.seq_len or x.shape[1]
    if not 2 <= T <= x.shape[1]:
        raise ValueError(f"--seq-len must be in [2, {x.shape[1]}] (the chip's max_tokens), got {T}")
    if args.layer >= len(chip.layers):
        raise ValueError(f"--layer must be in [0, {len(chip.layers) - 1}], got {args.layer}")
    if args.head >= chip.layers[args.layer].n_heads:
        raise ValueError(f"--head must be in [0, {chip.layers[args.layer].n_heads - 1}], got {args.head}")
    if args.levels:  # the fidelity ladder (mapping.compare.compare_levels)
        from .compare import compare_levels, parse_levels

        out = compare_levels(chip, x[:1, :T], layer=args.layer, head=args.head, levels=parse_levels(args.levels),
                             plot_dir=args.plot, noise=args.noise)
    else:
        out = compare_layer(chip, x[:1, :T], layer=args.layer, head=args.head, plot_dir=args.plot, seed=args.seed)
    if args.json:
        print(json.dumps(out, indent=1, default=str))
    else:
        for k, v in out.items():
            print(f"{k}: {v}")
    return 0


def register_compare(subparsers) -> None:
    p = subparsers.add_parser("compare", help="closed form vs simulated network for one layer and head, with plots")
    p.add_argument("checkpoint", metavar="CKPT", help="checkpoint name/folder or chip JSON")
    p.add_argument("--layer", type=int_range(0), default=0, help="layer index (0 .. layers-1)")
    p.add_argument("--head", type=int_range(0), default=0, help="head index (0 .. heads-1)")
    p.add_argument("--plot", required=True, metavar="DIR", help="folder for the PNG figures")
    _add_chip_options(p)
    p.add_argument("--seq-len", type=int_range(2), default=None,
                   help="tokens of the validation window, in [2, the model's seq_len] (None: the model's)")
    p.add_argument("--seed", type=int_range(0), default=0, help="noise seed of the run (>= 0)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--levels", default=None, metavar="RUNGS",
                   help="fidelity ladder: comma-separated rungs of closed-form,macromodel,circuit,spice run on the same "
                        "head, input and mismatch draw (Kuramoto chips)")
    p.add_argument("--noise", action="store_true", help="with --levels: thermal noise at the circuit and macromodel "
                                                         "rungs (default: off, the rungs differ only by their models)")
    p.set_defaults(func=_run_compare)
