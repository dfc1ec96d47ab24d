"""``oscsim train``, ``oscsim eval`` and ``oscsim info``."""

from __future__ import annotations

import argparse
import json
import sys

from oscsim.cli import float_range, int_range, set_threads

__all__ = ["register_train", "register_eval", "register_info"]


def register_train(subparsers) -> None:
    from oscsim.data import CORPORA
    from oscsim.nn.registry import MODELS, SIZES
    from oscsim.train.loop import FINETUNE_LR, TrainConfig

    d = TrainConfig()
    p = subparsers.add_parser("train", help="train a character-level language model (resumable)",
                              description="Train a character-level language model. Resumable: an unfinished run "
                              "in --out continues with the same command. On a terminal it prints one line per "
                              "--eval-every interval (step, tokens, training and validation BPC, elapsed time, "
                              "time left); with --json or when stderr is not a terminal it stays quiet until "
                              "the final result (--progress forces the lines, e.g. into a log file).")
    p.add_argument("--model", required=True, help=f"one of {', '.join(MODELS)}")
    p.add_argument("--size", default="tiny", help=f"one of {', '.join(SIZES)}")
    p.add_argument("--corpus", default="shakespeare", help=f"one of {', '.join(CORPORA)}; shakespeare: the bundled "
                   "Shakespeare texts")
    p.add_argument("--data", default=None, help="data file for --corpus enwik8 or text (refused otherwise)")
    p.add_argument("--steps", type=int_range(1), default=d.steps, help="optimizer steps (>= 1)")
    p.add_argument("--batch-size", type=int_range(1), default=d.batch_size, help="sequences per step (>= 1)")
    p.add_argument("--lr", type=float_range(0, lo_open=True), default=None,
                   help=f"peak learning rate (> 0) (default: {d.lr:g} from scratch; {FINETUNE_LR:g}, a fine-tuning "
                   f"rate, with --init: the training rate would first undo what the checkpoint learned)")
    p.add_argument("--phase-lr-scale", type=float_range(0, lo_open=True), default=d.phase_lr_scale, metavar="S",
                   help="phase-valued parameters (the Kuramoto model's token and prototype phases) train in their "
                   "own group at S x the learning rate, without weight decay (default: %(default)s)")
    p.add_argument("--no-phase-groups", action="store_true", help="optimise phases like every other tensor (the "
                   "behaviour before phase groups; resumes runs started before they existed)")
    p.add_argument("--eval-every", type=int_range(1), default=d.eval_every,
                   help="steps between validation and checkpoints (>= 1)")
    p.add_argument("--seed", type=int_range(0), default=d.seed, help="seed of the initialisation and data order")
    p.add_argument("--final-eval-windows", type=int_range(1), default=None, metavar="N",
                   help="score the final validation BPC on the first N windows (default: the whole split)")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--threads", type=int_range(1), default=None, help="torch CPU threads (default: torch's choice, all "
                   "cores; results are bit-reproducible at any fixed thread count)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="override a model configuration field (repeatable), e.g. --set ffn=false --set "
                   "value=projection --set gates=false (the Kuramoto ablations) or --set ffn_scale=1.0")
    p.add_argument("--compile", action="store_true", help="torch.compile the training step (faster steps after "
                   "a compile of minutes; worth it for runs of more than ~15 minutes)")
    p.add_argument("--init", default=None, metavar="CKPT", help="start from this checkpoint's weights (fine-tune)")
    p.add_argument("--chip", default=None, metavar="TOML", help="hardware-aware training: run every training step "
                   "through the differentiable surrogate of this chip configuration ('default': the ring preset); "
                   "needs the mapping package (entry point group oscsim.increment_transforms) (default: none, digital training)")
    p.add_argument("--calibrate", action="store_true", help="with --chip: chip-in-the-loop calibration, i.e. the "
                   "compiled chip's own mismatch draw (fixed) and only the digital periphery trained (gates, value "
                   "gain, score temperature, readout)")
    p.add_argument("--readout-noise-scale", type=float_range(0), default=1.0,
                   help="with --chip: multiply the chip's readout noise")
    p.add_argument("--out", required=True, help="checkpoint folder (an unfinished run there is resumed)")
    p.add_argument("--progress", action="store_true", help="print the line of every interval even when stderr is "
                   "not a terminal (logs of background runs)")
    p.add_argument("--json", action="store_true", help="print the final metrics as JSON, no progress output")
    p.set_defaults(func=_run_train)


def _parse_overrides(model: str, size: str, items: list[str]) -> dict:
    """``["ffn=false", "ffn_scale=1.0"]`` -> typed overrides of the model configuration's fields."""
    import dataclasses

    from oscsim.nn.registry import model_config

    fields = {f.name: f for f in dataclasses.fields(model_config(model, size))}
    base = model_config(model, size).to_dict()
    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or key not in fields:
            raise ValueError(f"--set expects KEY=VALUE with KEY one of {', '.join(sorted(fields))}; got {item!r}")
        cur = base[key]
        if isinstance(cur, bool):
            if raw.lower() not in ("true", "false"):
                raise ValueError(f"--set {key} must be true or false, got {raw!r}")
            out[key] = raw.lower() == "true"
        elif isinstance(cur, int):
            try:
                out[key] = int(raw)
            except ValueError:
                raise ValueError(f"--set {key} must be an integer, got {raw!r}") from None
        elif isinstance(cur, float):
            try:
                out[key] = float(raw)
            except ValueError:
                raise ValueError(f"--set {key} must be a number, got {raw!r}") from None
        else:
            out[key] = raw
    return out


def _run_train(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from oscsim.train.loop import FINETUNE_LR, TrainConfig, train

    set_threads(args.threads)
    if args.lr is None:
        args.lr = FINETUNE_LR if args.init is not None else TrainConfig().lr
    cfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr,
                      eval_every=min(args.eval_every, args.steps), seed=args.seed,
                      warmup=min(TrainConfig().warmup, max(args.steps // 10, 1)),
                      final_eval_windows=args.final_eval_windows,
                      phase_lr_scale=None if args.no_phase_groups else args.phase_lr_scale)
    terminal = sys.stderr.isatty()
    log = (lambda *a: None) if args.json else (lambda m: tqdm.write(m, file=sys.stderr))
    log_interval = log if (terminal or args.progress) and not args.json else (lambda *a: None)
    extra = {}
    if args.calibrate and args.chip is None:
        raise ValueError("--calibrate needs --chip TOML")
    if args.chip is not None:
        if args.model != "kuramoto":
            raise ValueError(f"--chip trains through a Kuramoto chip surrogate; --model must be kuramoto, "
                             f"got {args.model!r}")
        factory = _increment_transform("chip")
        extra["transform"] = lambda net: factory(net, args.chip, calibrate=args.calibrate,
                                                 readout_noise_scale=args.readout_noise_scale)
        if args.calibrate:
            periphery = _increment_transform("periphery")
            extra.update(trainable=periphery, trainable_name="periphery")
    overrides = _parse_overrides(args.model, args.size, args.overrides)
    meta = train(args.model, args.size, args.out, train_cfg=cfg, corpus=args.corpus, data=args.data,
                 device=args.device, progress=terminal and not args.json, log=log, log_interval=log_interval,
                 init=args.init, compile=args.compile, **extra, **overrides)
    m = meta["metrics"]
    res = {"out": args.out, "model": meta["model"], "size": meta["size"], "overrides": overrides,
           "lr": args.lr, "phase_lr_scale": cfg.phase_lr_scale, "steps": meta["step"],
           "tokens": meta["tokens"], "n_parameters": meta["n_parameters"], "val_bpc": m["val_bpc"],
           "train_seconds": m.get("train_seconds")}
    print(json.dumps(res) if args.json else "\n".join(f"{k}: {v}" for k, v in res.items()))
    return 0


INCREMENT_TRANSFORMS_GROUP = "oscsim.increment_transforms"


def _increment_transform(name: str):
    """Load a registered increment transform (``oscsim`` never imports ``mapping`` statically)."""
    from importlib.metadata import entry_points

    eps = {ep.name: ep for ep in entry_points(group=INCREMENT_TRANSFORMS_GROUP)}
    if name not in eps:
        raise ValueError(f"no increment transform {name!r} is registered in the entry point group "
                         f"{INCREMENT_TRANSFORMS_GROUP!r} (found: {', '.join(sorted(eps)) or 'none'}); install the "
                         f"mapping package (tools/setup_env.sh)")
    return eps[name].load()


def register_eval(subparsers) -> None:
    from oscsim.train.checkpoint import bundled_checkpoints

    p = subparsers.add_parser("eval", help="validation and test bits per character of a checkpoint",
                              description="Validation and test bits per character of a checkpoint; a progress bar "
                              "over the windows on a terminal, quiet with --json or when stderr is not a terminal.")
    p.add_argument("checkpoint", help=f"checkpoint folder or bundled name ({', '.join(bundled_checkpoints())})")
    p.add_argument("--data", default=None, help="data file, for checkpoints trained on enwik8 or a text file")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--split", default="both", choices=("valid", "test", "both"), help="which split(s) to score")
    p.add_argument("--max-windows", type=int_range(1), default=None,
                   help="score only the first N context windows of each split (None: the whole split)")
    p.add_argument("--json", action="store_true", help="print JSON (keys val_bpc, test_bpc)")
    p.set_defaults(func=_run_eval)


def _run_eval(args: argparse.Namespace) -> int:
    from oscsim.data import load_corpus
    from oscsim.train.checkpoint import load_checkpoint
    from oscsim.train.loop import evaluate_bpc

    model, meta = load_checkpoint(args.checkpoint, device=args.device)
    corpus = meta.get("corpus", "shakespeare")
    if args.data is not None and corpus == "shakespeare":
        raise ValueError(f"--data is only read for checkpoints trained on --corpus enwik8 or text; "
                         f"{args.checkpoint!r} was trained on the bundled shakespeare corpus")
    corp = load_corpus(corpus, args.data if args.data is not None else meta.get("data"))
    seq_len = model.config.seq_len
    corp.check_length(seq_len)
    if args.max_windows is not None and args.max_windows < 1:
        raise ValueError(f"--max-windows must be >= 1, got {args.max_windows}")
    progress = not args.json and sys.stderr.isatty()
    res = {"checkpoint": str(args.checkpoint), "model": meta["model"], "corpus": corpus,
           "windows": args.max_windows,
           "n_parameters": meta.get("n_parameters"), "step": meta.get("step"), "tokens": meta.get("tokens")}
    if args.split in ("valid", "both"):
        res["val_bpc"] = evaluate_bpc(model, corp.valid, seq_len, device=args.device,
                                      progress=progress and "validation", max_windows=args.max_windows)
    if args.split in ("test", "both"):
        res["test_bpc"] = evaluate_bpc(model, corp.test, seq_len, device=args.device,
                                       progress=progress and "test", max_windows=args.max_windows)
    print(json.dumps(res) if args.json else "\n".join(f"{k}: {v}" for k, v in res.items()))
    return 0


def register_info(subparsers) -> None:
    from oscsim.nn.registry import MODELS, SIZES

    p = subparsers.add_parser("info", help="configuration and parameter count of a model size",
                              description="The configuration and parameter count of a model family at a size "
                                          "(what `oscsim train --model M --size S` builds).")
    p.add_argument("--model", required=True, metavar="MODEL", help=f"model family, one of {', '.join(MODELS)}")
    p.add_argument("--size", default="tiny", metavar="SIZE", help=f"model size, one of {', '.join(SIZES)}")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run_info)


def _run_info(args: argparse.Namespace) -> int:
    from oscsim.nn.registry import build_model, count_parameters, model_config

    cfg = model_config(args.model, args.size)
    n = count_parameters(build_model(cfg))
    res = {"model": args.model, "size": args.size, "n_parameters": n, "config": cfg.to_dict()}
    if args.json:
        print(json.dumps(res))
    else:
        print(f"{args.model} {args.size}: {n:,} parameters")
        print("config: " + ", ".join(f"{k}={v}" for k, v in cfg.to_dict().items()))
    return 0
