"""SSA-1D: the collective oscillator network vs its closed form (a measured result, not pass/fail).

The closed form S_ij = J sqrt(1 − (Δω/(K r J))²)·locked is the pairwise (Adler) approximation; the
collective network couples every token's oscillator to all others. For each layer and head this prints the
relative error of S and of the attention output, the locked-set agreement and the BPC, for the ideal chip in
both modes (pairwise cells, exact in the limit; collective network), and plots them together with the
pairwise cells' error band near the locking boundary at the configured averaging window.

    .venv/bin/python benchmarks/mapping_ssa1d.py [CKPT] [--windows 1] [--averaging 400 1600]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from _common import save_figure, subplots


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", nargs="?", default="ssa1d-tiny")
    p.add_argument("--windows", type=int, default=1)
    p.add_argument("--averaging", type=float, nargs="*", default=[400.0, 1600.0])
    p.add_argument("--plot", default="docs/benchmarks/mapping_ssa1d.png")
    args = p.parse_args(argv)

    from mapping import ChipConfig, adler_cells, compile, load_model, run, ssa_closed_form
    from mapping.cli.common import validation_tokens as _validation_tokens
    from mapping.config import SSAConfig

    model, _ = load_model(args.checkpoint)
    x, y = _validation_tokens(model.config.to_dict(), args.windows * model.config.seq_len)
    out = {"checkpoint": args.checkpoint, "tokens": int(x.numel()), "runs": []}
    t0 = time.perf_counter()
    for mode in ("pairwise", "collective"):
        for avg in args.averaging:
            cfg = ChipConfig.ideal(ssa=SSAConfig(mode=mode, settle_cycles=100.0, averaging_cycles=avg))
            t1 = time.perf_counter()
            r = run(compile(model, cfg), x, progress=False)
            b = r.bpc(y)
            out["runs"].append({
                "mode": mode, "averaging_cycles": avg, **b, "bpc_difference": b["bpc_chip"] - b["bpc_closed_form"],
                "S_rel_error": [L["S_rel_error"] for L in r.layers],
                "output_rel_error": [L["rel_error"] for L in r.layers],
                "locked_agreement": [L["locked_agreement"] for L in r.layers],
                "order_parameter_chip": [L.get("order_parameter_chip") for L in r.layers],
                "order_parameter_closed_form": [L.get("order_parameter_closed_form") for L in r.layers],
                "wall_s": time.perf_counter() - t1})
    # pairwise error band near the boundary at the default averaging window
    cfg = ChipConfig().idealised()
    lam = cfg.kappa  # K = 1: thr = 1 ↔ κ
    ratio = np.linspace(0.8, 1.2, 81)
    res = adler_cells(ratio, np.ones_like(ratio), lam=lam, settle_cycles=cfg.ssa.settle_cycles,
                      averaging_cycles=cfg.ssa.averaging_cycles, steps_per_cycle=8, k_max=1.0)
    s, _ = ssa_closed_form(ratio, np.ones_like(ratio))
    band = np.abs(res.mean_cos - s)
    out["pairwise_band"] = {"averaging_cycles": cfg.ssa.averaging_cycles, "kappa_rad_per_cycle": lam,
                            "max_error_0.99_1.01": float(band[np.abs(ratio - 1) <= 0.01].max()),
                            "max_error_outside_0.95_1.05": float(band[np.abs(ratio - 1) > 0.05].max())}
    out["wall_s"] = time.perf_counter() - t0
    if args.plot:
        fig, ax = subplots(1, 2, figsize=(11, 4))
        for run_ in out["runs"]:
            e = [float(np.mean([v for v in L if v is not None])) for L in run_["S_rel_error"]]
            ax[0].plot(range(len(e)), e, "o-" if run_["mode"] == "collective" else "s--",
                       label=f"{run_['mode']}, window {run_['averaging_cycles']:.0f} cycles")
        ax[0].set_xlabel("layer")
        ax[0].set_ylabel("S relative error vs closed form (mean over heads)")
        ax[0].set_yscale("log")
        ax[0].legend(fontsize=8)
        ax[1].semilogy(ratio, band + 1e-12)
        ax[1].axvspan(0.99, 1.01, color="0.9")
        ax[1].set_xlabel("Delta omega / (K r J)")
        ax[1].set_ylabel(f"|<cos phi> - closed form|, window {cfg.ssa.averaging_cycles:.0f} cycles")
        ax[1].set_title("pairwise Adler cell error band")
        out["plot"] = save_figure(fig, args.plot)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
