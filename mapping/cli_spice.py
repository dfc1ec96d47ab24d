"""``oscsim export-spice``: write (and optionally run) the ngspice netlist of one compiled head's network.

Entry point ``export-spice = "mapping.cli_spice:register"`` (group ``oscsim.commands``).
"""

from __future__ import annotations

import json
from pathlib import Path

from oscsim.cli import float_range, int_range

__all__ = ["register", "export_head"]


def export_head(chip, tokens, *, layer: int, head: int, coordinate: int, out=None, run: bool = False,
                steps_per_period: int | None = None) -> dict:
    """Build the circuit network of (layer, head, coordinate) for ``tokens`` (1, T), write its netlist to ``out``
    and, with ``run``, execute ngspice and return the read phases and the periphery's increment estimate.

    The network is the gain bank's: T rings with the chip's quantised couplers and gains, coupler spread,
    residual frequency errors and transistor mismatch, each ring on its own limit cycle at its token phase
    (:func:`mapping.circuit_chip.layer_head`), noise-free (ngspice's transient has no thermal noise).
    """
    import numpy as np
    import torch

    from .circuit_chip import layer_head, periphery
    from .compare import LADDER_STEPS_PER_PERIOD, _capture_kuramoto
    from .spice_export import SPICE_MAX_TOKENS, head_netlist, run_head_spice

    if chip.kind != "kuramoto":
        raise ValueError("export-spice: only Kuramoto heads are built at circuit level (the circuit rung is not built "
                         "for SSA)")
    if not chip.device.name.startswith("ring"):
        raise ValueError(f"export-spice: the netlist is a CMOS ring circuit; this chip's device is {chip.device.name!r}")
    if not 0 <= layer < len(chip.layers):
        raise ValueError(f"--layer must be in [0, {len(chip.layers) - 1}], got {layer}")
    lm = chip.layers[layer]
    if not 0 <= head < lm.n_heads:
        raise ValueError(f"--head must be in [0, {lm.n_heads - 1}], got {head}")
    if not 0 <= coordinate < lm.head_dim:
        raise ValueError(f"--coordinate must be in [0, {lm.head_dim - 1}], got {coordinate}")
    T = int(tokens.shape[1])
    if T > SPICE_MAX_TOKENS:
        raise ValueError(f"--seq-len: the SPICE export allows T <= {SPICE_MAX_TOKENS} tokens, got {T}")
    theta, parts = _capture_kuramoto(chip.model, torch.as_tensor(tokens, dtype=torch.long), layer)
    hd, meta = layer_head(chip, layer, theta.double().numpy(), parts.A.double().numpy(), parts.v.double().numpy(),
                          reference_bank=False, noise=False, heads=[head], coordinates=[coordinate],
                          steps_per_period=steps_per_period or LADDER_STEPS_PER_PERIOD)
    net, nmeta = head_netlist(hd, settle_cycles=chip.config.settle_cycles,
                              title=f"oscsim layer {layer} head {head} coordinate {coordinate}, T = {T}")
    res = {"layer": layer, "head": head, "coordinate": coordinate, "tokens": T, "rings": T,
           "transconductors": int(np.count_nonzero(hd.gm)) * 2, "settle_time_s": nmeta["t_settle_s"],
           "stop_time_s": nmeta["t_stop_s"], "f0_hz": 1.0 / hd.device.period_s}
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(net)
        res["netlist"] = str(out)
    if run:
        sp = run_head_spice(hd, settle_cycles=chip.config.settle_cycles)
        kh = lm.head_dim
        x = periphery(chip, hd, meta, sp["psi"])[0][0, :, head * kh + coordinate]
        res.update(phases_rad=[float(p) for p in sp["psi"][0]], theta0_rad=[float(p) for p in hd.theta0[0]],
                   increment=[float(v) for v in x],
                   closed_form_increment=[float(v) for v in (parts.v * parts.a).double().numpy()[0, :, head * kh + coordinate]],
                   reference_spread_rad=sp["reference_spread_rad"][0])
    return res


def _run(args) -> int:
    from .cli import _chip_and_model, _config, _validation_tokens

    if args.seq_len < 2:
        raise ValueError(f"--seq-len must be >= 2, got {args.seq_len}")
    cfg = _config(args)
    chip, _ = _chip_and_model(args, cfg)
    if args.seq_len > chip.layers[0].max_tokens:
        raise ValueError(f"--seq-len must be <= the chip's {chip.layers[0].max_tokens} tokens, got {args.seq_len}")
    x, _ = _validation_tokens(chip.model_info["config"], chip.layers[0].max_tokens)
    res = export_head(chip, x[:1, :args.seq_len], layer=args.layer, head=args.head, coordinate=args.coordinate,
                      out=args.out, run=args.run)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print(f"wrote {res['netlist']}: {res['rings']} rings, {res['transconductors']} transconductors (two taps), "
              f"couplers off at {res['settle_time_s']:.4g} s, transient to {res['stop_time_s']:.4g} s")
        if args.run:
            print("ngspice phases [rad]:", " ".join(f"{p:.5f}" for p in res["phases_rad"]))
            print("increment (periphery):", " ".join(f"{p:.5f}" for p in res["increment"]))
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("export-spice", help="write one compiled head's ring network as an ngspice netlist",
                              description="Export the circuit network of one (layer, head, coordinate) of a compiled "
                                          "Kuramoto chip on the first validation window: level-1 rings with each "
                                          "transistor's mismatch, two-tap transconductors as VCCS G elements, .ic "
                                          "placement, node-0 probes; --run executes ngspice in batch mode.")
    p.add_argument("checkpoint", metavar="CKPT_OR_CHIP", help="checkpoint name/folder or a chip JSON")
    p.add_argument("--layer", type=int_range(0), default=0, help="layer index (0 .. layers-1)")
    p.add_argument("--head", type=int_range(0), default=0, help="head index (0 .. heads-1)")
    p.add_argument("--coordinate", type=int_range(0), default=0, help="coordinate j of the head (0 .. head_dim-1)")
    p.add_argument("--seq-len", type=int_range(2), default=8,
                   help="tokens T (rings) of the network, in [2, 64] (the export's limit)")
    p.add_argument("--out", required=True, help="netlist path (.cir)")
    p.add_argument("--config", help="chip configuration TOML (default: the ring macromodel preset; the netlist is "
                                    "the same circuit for ring-macromodel and ring-circuit chips)")
    p.add_argument("--ideal", action="store_true", help="ideal devices (refused: the netlist is a ring circuit)")
    p.add_argument("--kappa-tau", type=float_range(0, lo_open=True), default=None,
                   help="override the settle window by kappa*tau_s [rad], > 0 (default: the configuration's)")
    p.add_argument("--run", action="store_true", help="run ngspice on it and print the read phases and increments")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_run)
