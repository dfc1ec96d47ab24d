"""Energy per token on the same terms: chip (ring, spin-torque) vs GPU lower and upper bounds (BENCHMARKS.md).

    .venv/bin/python benchmarks/energy.py [CKPT] [--devices ring-macromodel spin-torque] [--json]

For each device preset: the default chip compiled from CKPT (default kuramoto-tiny), then the energy report for
digital precisions int16 and int8, prefill and decode, with and without analog scores, against the H100-SXM
lower and upper bounds (GPU at bf16, and at int8 beside the int8 chip). Prints a Markdown table (or JSON).
No chip inference is run: energy does not depend on the simulated phases.
"""

from __future__ import annotations

import argparse
import dataclasses
import json


def rows(ckpt: str, devices: list[str]) -> list[dict]:
    from mapping import ChipConfig, compile
    from mapping.model_io import load_model
    from mapping.sweep.spec import config_with

    model, _ = load_model(ckpt)
    out = []
    for dev in devices:
        for analog in (False, True):
            cfg = config_with(ChipConfig(device=dev), {"scores.mode": "analog"} if analog else {})
            try:
                chip = compile(model, cfg)
            except ValueError:  # a chip kind without an analog-score mode (SSA)
                continue
            base = chip.config
            for prec in ("int16", "int8"):
                for gprec in (("bf16", "int8") if prec == "int8" else ("bf16",)):
                    for phase in ("prefill", "decode"):
                        chip.config = base.replace(energy=dataclasses.replace(
                            base.energy, digital_precision=prec, gpu_precision=gprec, phase=phase))
                        out.append(_row(chip, dev, prec, gprec, phase, analog))
            chip.config = base
    out.sort(key=lambda r: (devices.index(r["device"]), r["digital_precision"] != "int16", r["gpu_precision"],
                            r["phase"] != "prefill", r["analog_scores"]))
    return out


def _row(chip, dev, prec, gprec, phase, analog) -> dict:
    from mapping.energy import energy_report

    r = energy_report(chip)
    b = r["breakdown"]
    top = sorted(b, key=b.get, reverse=True)[:2]
    return {
        "device": dev, "digital_precision": prec, "gpu_precision": gprec, "phase": phase,
        "analog_scores": analog, "chip_j": r["energy_per_token_chip_j"],
        "gpu_lower_j": r["gpu_energy_bounds_j"]["lower"],
        "gpu_upper_j": r["gpu_energy_bounds_j"]["upper"],
        "whole_chip_j": r["whole_model"]["chip_j"],
        "whole_gpu_lower_j": r["whole_model"]["gpu_bounds_j"]["lower"],
        "whole_gpu_upper_j": r["whole_model"]["gpu_bounds_j"]["upper"],
        "offloaded_fraction": r["offloaded_fraction"], "amdahl_max_gain": r["amdahl_max_gain"],
        "array_gain": r["array_gain"],
        "whole_offloaded_fraction": r["whole_model"]["offloaded_fraction"],
        "whole_amdahl_max_gain": r["whole_model"]["amdahl_max_gain"],
        "top_terms": {t: b[t] / r["energy_per_token_chip_j"] for t in top},
        "area_mm2": r["area_mm2"],
        "score_sigma_logit": (r.get("analog_score_noise") or {}).get("score_sigma_logit"),
    }


def _j(x):
    for u, s in (("uJ", 1e-6), ("nJ", 1e-9), ("pJ", 1e-12)):
        if abs(x) >= s:
            return f"{x / s:.3g} {u}"
    return f"{x:.3g} J"


def table(rs: list[dict]) -> str:
    head = ("| device | periphery / GPU | phase | analog scores | chip | GPU lower | GPU upper | chip / GPU lower "
            "| offloaded (Amdahl) | array gain | whole model: chip / GPU lower | largest terms |")
    lines = [head, "|" + "---|" * 12]
    for r in rs:
        terms = ", ".join(f"{k[:-2].replace('_', ' ')} {v:.0%}" for k, v in r["top_terms"].items())
        lines.append(
            f"| {r['device']} | {r['digital_precision']} / {r['gpu_precision']} | {r['phase']} | "
            f"{'yes' if r['analog_scores'] else 'no'} | {_j(r['chip_j'])} | {_j(r['gpu_lower_j'])} | "
            f"{_j(r['gpu_upper_j'])} | {r['chip_j'] / r['gpu_lower_j']:.2f} | "
            f"{r['offloaded_fraction']:.1%} ({r['amdahl_max_gain']:.2f}x) | {r['array_gain']:.2f}x | "
            f"{_j(r['whole_chip_j'])} / {_j(r['whole_gpu_lower_j'])} | {terms} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint", nargs="?", default="kuramoto-tiny")
    ap.add_argument("--devices", nargs="+", default=["ring-macromodel", "spin-torque"])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    rs = rows(a.checkpoint, a.devices)
    print(json.dumps(rs, indent=1) if a.json else table(rs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
