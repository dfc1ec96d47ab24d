"""BPC vs (run − calibration) temperature on the 65 nm ring chip (issue 11 item 4).

The trim is set at 300 K (8 bits, the default); the chip runs at 300 K + ΔT with a fixed reference clock, so
the common-mode drift f₀(T)/f₀(300 K) − 1 of the circuit model adds to every oscillator's residual.
Prints JSON and writes docs/realism_pvt.png. Usage: ``python benchmarks/realism_pvt.py [--tokens 512]``.
"""

from __future__ import annotations

import argparse
import json


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--out", default="docs/realism_pvt.png")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    from mapping import ChipConfig, compile, run
    from mapping.cli.common import validation_tokens as _validation_tokens
    from mapping.model_io import load_model

    model, _ = load_model("kuramoto-tiny")
    x, y = _validation_tokens(model.config.to_dict(), args.tokens)
    rows = []
    for dT in (-2.0, -1.0, -0.5, -0.2, 0.0, 0.2, 0.5, 1.0, 2.0):
        cfg = ChipConfig(temperature_k=300.0 + dT, calibration_temperature_k=300.0)
        chip = compile(model, cfg)
        b = run(chip, x, seed=0, progress=False).bpc(y)
        rows.append({"delta_t_k": dT, "drift_rel": chip.timebase["pvt"]["drift_rel"], **b})
        print(json.dumps(rows[-1]), flush=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot([r["delta_t_k"] for r in rows], [r["bpc_chip"] for r in rows], "o-", label="ring chip (65 nm, 8-bit trim at 300 K)")
    ax.axhline(rows[0]["bpc_closed_form"], color="k", ls="--", label="closed form")
    ax.set_xlabel("run - calibration temperature [K]")
    ax.set_ylabel("BPC")
    ax.legend(fontsize=7)
    ax.set_title(f"kuramoto-tiny, {x.numel()} tokens, fixed reference", fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(json.dumps({"rows": rows, "figure": args.out, "tokens": int(x.numel())}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
