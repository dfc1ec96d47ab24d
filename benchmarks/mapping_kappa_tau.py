"""Fidelity vs κτ_s: first-order error against noise amplification (DESIGN §5.2), with the optimum.

For each κτ_s (settle window at a fixed coupling fraction) the chip runs the model on validation windows,
ideal (first-order error only) and with the configured noise, mismatch and quantisation, over several seeds.
Prints JSON (mean layer relative error of the attention increment, BPC difference, the optimum κτ_s) and
writes a PNG.

    .venv/bin/python benchmarks/mapping_kappa_tau.py [CKPT] [--config chip.toml] [--windows 2] [--seeds 3]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from _common import save_figure, subplots


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", nargs="?", default="kuramoto-tiny")
    p.add_argument("--config", default=None)
    p.add_argument("--device", default=None, help="override the config's device preset")
    p.add_argument("--windows", type=int, default=2)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--kappa-tau", type=float, nargs="*",
                   default=[0.03, 0.06, 0.125, 0.25, 0.5, 1.0, 2.0])
    p.add_argument("--plot", default="docs/benchmarks/mapping_kappa_tau.png")
    args = p.parse_args(argv)

    from mapping import ChipConfig, compile, load_config, load_model, run
    from mapping.cli.common import validation_tokens as _validation_tokens

    model, _ = load_model(args.checkpoint)
    base = load_config(args.config) if args.config else ChipConfig()
    if args.device:
        base = base.replace(device=args.device)
    x, y = _validation_tokens(model.config.to_dict(), args.windows * model.config.seq_len)
    rows = []
    t0 = time.perf_counter()
    for kt in args.kappa_tau:
        for label, cfg in (("ideal", base.idealised().with_kappa_tau(kt)), ("chip", base.with_kappa_tau(kt))):
            seeds = range(args.seeds) if label == "chip" else range(1)
            errs, dbpc = [], []
            for s in seeds:
                chip = compile(model, cfg.replace(mismatch_seed=s))
                r = run(chip, x, seed=s, progress=False)
                b = r.bpc(y)
                errs.append(float(np.mean([L["layer_rel_error"] for L in r.layers])))
                dbpc.append(b["bpc_chip"] - b["bpc_closed_form"])
            rows.append({"kappa_tau": kt, "mode": label, "rel_error_mean": float(np.mean(errs)),
                         "rel_error_sem": float(np.std(errs, ddof=1) / np.sqrt(len(errs))) if len(errs) > 1 else 0.0,
                         "bpc_diff_mean": float(np.mean(dbpc)), "seeds": len(errs)})
    chip_rows = [r for r in rows if r["mode"] == "chip"]
    best = min(chip_rows, key=lambda r: r["rel_error_mean"])
    best_bpc = min(chip_rows, key=lambda r: abs(r["bpc_diff_mean"]))
    ideal = [r for r in rows if r["mode"] == "ideal"]
    kts = np.array([r["kappa_tau"] for r in ideal])
    slope = float(np.polyfit(np.log(kts[:4]), np.log([r["rel_error_mean"] for r in ideal][:4]), 1)[0])
    out = {"checkpoint": args.checkpoint, "device": base.device, "coupling_fraction": base.coupling.fraction,
           "tokens": int(x.numel()), "rows": rows, "optimum_kappa_tau": best["kappa_tau"],
           "optimum_rel_error": best["rel_error_mean"], "optimum_kappa_tau_by_bpc": best_bpc["kappa_tau"],
           "ideal_first_order_slope": slope, "wall_s": time.perf_counter() - t0}
    if args.plot:
        fig, ax = subplots(1, 2, figsize=(11, 4))
        for mode, st in (("ideal", "o--"), ("chip", "s-")):
            rr = [r for r in rows if r["mode"] == mode]
            ax[0].errorbar([r["kappa_tau"] for r in rr], [r["rel_error_mean"] for r in rr],
                           yerr=[r["rel_error_sem"] for r in rr], fmt=st,
                           label="ideal (first-order error)" if mode == "ideal" else f"{base.device}, noise+mismatch+quant.")
            ax[1].plot([r["kappa_tau"] for r in rr], [abs(r["bpc_diff_mean"]) for r in rr], st, label=mode)
        ax[0].axvline(best["kappa_tau"], color="k", lw=0.8, ls=":")
        for a_ in ax:
            a_.set_xscale("log")
            a_.set_yscale("log")
            a_.set_xlabel("kappa * tau_s [rad]")
            a_.legend(fontsize=8)
        ax[0].set_ylabel("attention increment rel. error (mean over layers)")
        ax[1].set_ylabel("|BPC chip - BPC closed form|")
        fig.suptitle(f"{args.checkpoint}: optimum kappa*tau_s = {best['kappa_tau']:.3g} rad")
        out["plot"] = save_figure(fig, args.plot)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
