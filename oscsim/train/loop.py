"""Training loop: AdamW, linear warm-up then cosine learning rate, gradient clipping, periodic validation BPC,
resumable checkpoints.

Randomness: the model is initialised from ``seed``; the training batch of step s is drawn from a generator
seeded with (seed, s), so a resumed run draws exactly the batches the uninterrupted run would have drawn.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from oscsim._killpoint import kill_point
from oscsim._validate import check_positive_ints
from oscsim.data import eval_windows, load_corpus, sample_batch
from oscsim.nn.registry import build_model, count_parameters, model_config
from oscsim.nn.registry import model_name as mcfg_name
from oscsim.train.checkpoint import (CONFIG_FILE, MODEL_FILE, OPTIM_FILE, commit_checkpoint, load_checkpoint,
                                     load_optimizer, read_config, recover_checkpoint, resolve_checkpoint,
                                     save_checkpoint, save_optimizer)

__all__ = ["TrainConfig", "train", "evaluate_bpc", "lr_at", "param_groups", "phase_parameter_names",
           "DEFAULT_PHASE_LR_SCALE", "FINETUNE_LR"]

LN2 = math.log(2.0)

#: Default multiple of the peak learning rate for phase parameters (measured, BENCHMARKS.md "Models", phases on the
#: torus; issue 21 item 1).
DEFAULT_PHASE_LR_SCALE = 100.0

#: Default peak learning rate of a fine-tune (``oscsim train --init``): the rate of the bundled hardware-aware
#: fine-tune kuramoto-tiny-hwa (150 steps); at the from-scratch rate 3e-3 the same fine-tune *raised*
#: closed-form BPC from 3.439 to 3.718 in 20 steps (issue 23 item 7).
FINETUNE_LR = 3e-4

#: Values of TrainConfig fields that checkpoints written before the field existed imply (their behaviour).
LEGACY_TRAIN = {"phase_lr_scale": None}


def _file_sha256(path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """Training settings.

    Attributes
    ----------
    steps : int
        Optimizer steps; the token budget is steps × batch_size × seq_len.
    batch_size : int
        Sequences per step.
    lr : float
        Peak learning rate of AdamW.
    min_lr_ratio : float
        Final learning rate as a fraction of ``lr`` (cosine schedule).
    warmup : int
        Linear warm-up steps.
    weight_decay : float
        AdamW weight decay, on matrices only (never on phases, see ``phase_lr_scale``).
    grad_clip : float
        Global gradient-norm clip.
    eval_every : int
        Steps between validation estimates (and checkpoints).
    eval_windows : int
        Validation windows per periodic estimate.
    final_eval_windows : int or None
        Validation windows of the final figure (None: the whole split).
    seed : int
        Model initialisation and batch sampling.
    phase_lr_scale : float or None
        Parameters that are phases (angles on the torus, declared by the model's ``phase_parameters``: the
        Kuramoto model's token phases and prototype phases) form their own AdamW group with peak learning rate
        ``lr × phase_lr_scale`` (same warm-up and cosine schedule) and no weight decay: AdamW moves every entry
        by about the learning rate per step whatever its scale, which is a tiny step for an angle of scale π,
        and weight decay pulls a phase toward 0 rad, a point that means nothing on a torus. ``None``: the
        behaviour before issue 21 (phases treated like every other tensor: the shared rate, and weight decay on
        the matrices among them); checkpoints trained before the field existed record nothing and mean None.
    """

    steps: int = 2000
    batch_size: int = 32
    lr: float = 3e-3
    min_lr_ratio: float = 0.1
    warmup: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    eval_every: int = 250
    eval_windows: int = 64
    final_eval_windows: int | None = None
    seed: int = 0
    phase_lr_scale: float | None = DEFAULT_PHASE_LR_SCALE

    def __post_init__(self):
        check_positive_ints(self, "steps", "batch_size", "eval_every", "eval_windows")
        if self.final_eval_windows is not None and (not isinstance(self.final_eval_windows, int)
                                                    or self.final_eval_windows < 1):
            raise ValueError(f"final_eval_windows must be a positive integer or None, got {self.final_eval_windows!r}")
        if not isinstance(self.warmup, int) or self.warmup < 0:
            raise ValueError(f"warmup must be a non-negative integer, got {self.warmup!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError(f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
        if not self.weight_decay >= 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if not self.grad_clip > 0:
            raise ValueError(f"grad_clip must be > 0, got {self.grad_clip}")
        if self.phase_lr_scale is not None and (isinstance(self.phase_lr_scale, bool)
                                                or not isinstance(self.phase_lr_scale, (int, float))
                                                or not 0 < self.phase_lr_scale < math.inf):
            raise ValueError(f"phase_lr_scale must be a finite number > 0 or None, got {self.phase_lr_scale!r}")


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate at ``step`` (0-based): linear warm-up, then cosine decay to ``min_lr_ratio · lr``."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    span = max(cfg.steps - cfg.warmup, 1)
    prog = min((step - cfg.warmup) / span, 1.0)
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * prog)))


@torch.no_grad()
def evaluate_bpc(model, data: torch.Tensor, seq_len: int, *, batch_size: int = 32, max_windows: int | None = None,
                 device="cpu", progress: bool | str = False) -> float:
    """Bits per character (byte) of ``model`` on ``data``, over non-overlapping windows of ``seq_len``.

    ``progress``: a progress bar over the windows on stderr (a string: the bar's label).
    """
    was_training = model.training
    model.eval()
    x, y = eval_windows(data, seq_len, max_windows)
    total, count = 0.0, 0
    desc = progress if isinstance(progress, str) else "eval"
    with tqdm(total=len(x), desc=desc, unit="window", disable=not progress, leave=False) as bar:
        for i in range(0, len(x), batch_size):
            xb, yb = x[i:i + batch_size].to(device), y[i:i + batch_size].to(device)
            logits = model(xb)
            total += F.cross_entropy(logits.flatten(0, 1).float(), yb.flatten(), reduction="sum").item()
            count += yb.numel()
            bar.update(len(xb))
    model.train(was_training)
    return total / count / LN2


def phase_parameter_names(model) -> list[str]:
    """Names (as in ``named_parameters``) of the model's phase-valued parameters (its ``phase_parameters``)."""
    declared = set(getattr(model, "phase_parameters", ()))
    return [n for n, _ in model.named_parameters() if n in declared]


def param_groups(model, cfg: TrainConfig) -> list[dict]:
    """AdamW parameter groups: ``decay`` (matrices, weight decay), ``other`` (vectors and scalars, no decay)
    and, unless ``cfg.phase_lr_scale`` is None, ``phases`` (no decay, learning rate × ``phase_lr_scale``).

    Each group carries its ``name`` and ``lr_scale`` (the multiple of the scheduled rate it runs at); only
    trainable parameters are included and empty groups are left out.
    """
    phases = set(phase_parameter_names(model)) if cfg.phase_lr_scale is not None else set()
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [{"name": "decay", "params": [p for n, p in named if n not in phases and p.dim() >= 2],
               "weight_decay": cfg.weight_decay, "lr_scale": 1.0},
              {"name": "other", "params": [p for n, p in named if n not in phases and p.dim() < 2],
               "weight_decay": 0.0, "lr_scale": 1.0},
              {"name": "phases", "params": [p for n, p in named if n in phases],
               "weight_decay": 0.0, "lr_scale": float(cfg.phase_lr_scale or 1.0)}]
    return [g for g in groups if g["params"]]


def _optimizer(model, cfg: TrainConfig):
    return torch.optim.AdamW(param_groups(model, cfg), lr=cfg.lr, betas=(0.9, 0.95))


def _batch_generator(seed: int, step: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed((seed * 1_000_003 + step) % (2 ** 63))
    return g


def _transform_generator(seed: int, step: int) -> torch.Generator:
    """The generator of the increment transform's draws at ``step`` (independent of the batch stream)."""
    g = torch.Generator()
    g.manual_seed((seed * 1_000_003 + step + 0x4857_4100_0000) % (2 ** 63))
    return g


def train(model: str, size: str, out: str | Path, *, train_cfg: TrainConfig = TrainConfig(),
          corpus: str = "shakespeare", data: str | None = None, device: str = "cpu", progress: bool | None = None,
          log=print, log_interval=None, init: str | Path | None = None, transform=None, trainable=None,
          trainable_name: str = "all", compile: bool = False, **model_overrides) -> dict:
    """Train a named model and size; resume if ``out`` holds an unfinished run of the same settings.

    Parameters
    ----------
    log : callable
        ``log(message)`` receives the run's events (resumed, interrupted) and, unless ``log_interval`` is given,
        the line of every validation interval.
    log_interval : callable, optional
        ``log_interval(line)`` receives the line of every validation interval instead: step, tokens, learning
        rate, training BPC (running mean), validation BPC estimate, elapsed time and the estimated time left.
    init : str or Path, optional
        Start from this checkpoint's weights (fine-tuning); its model and configuration must match.
    transform : callable, optional
        ``transform(net)`` returns an object with ``override(gen) -> attn_override`` and ``describe() -> dict``
        (e.g. :class:`mapping.hwa.ChipSurrogate`, loaded by the CLI from the entry point group
        ``oscsim.increment_transforms``); every training step runs the model with
        ``attn_override=override(gen)``, ``gen`` a torch.Generator seeded by (seed, step), so the draws are
        fresh every step and a resumed run draws the same ones. Validation stays closed form.
    trainable : callable, optional
        ``trainable(name) -> bool`` selects the parameters the optimizer updates (others are frozen).
    trainable_name : str
        Name of that selection, recorded with the run.
    compile : bool
        Run the training forward and backward through ``torch.compile`` (Inductor; CPU: 1.4-1.6× faster
        steps for kuramoto-tiny after a compile of several minutes, measured in BENCHMARKS.md). Not used
        with ``transform`` (its per-step closure would recompile). Validation stays eager.

    Returns the final checkpoint's JSON dict (with ``metrics``: ``val_bpc``, ``train_loss``, ``history``).

    Notes
    -----
    Deterministic algorithms are switched on (``torch.use_deterministic_algorithms(True, warn_only=True)``)
    so that a run is bit-reproducible at any fixed thread count (checked with two threads in
    tests/test_train_determinism.py).
    """
    torch.use_deterministic_algorithms(True, warn_only=True)
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' requested but no CUDA device is available; use --device cpu")
    mcfg = model_config(model, size, **model_overrides)
    corp = load_corpus(corpus, data)
    corp.check_length(mcfg.seq_len)
    out = Path(out)
    run_info = {"model_name": model, "size": size, "corpus": corpus, "data": str(data) if data else None,
                "train": asdict(train_cfg)}
    torch.manual_seed(train_cfg.seed)
    net, tf = _build_net(mcfg, model, device, run_info, init, transform, trainable, trainable_name)
    opt = _optimizer(net, train_cfg)
    start, history, finished = _resume(out, net, opt, run_info, mcfg, train_cfg, device, log)
    if finished is not None:
        return finished
    net.train()
    fwd = torch.compile(net) if compile and tf is None else net
    if progress is None:
        progress = sys.stderr.isatty()
    bar = tqdm(total=train_cfg.steps, initial=start, desc=f"train {model}-{size}", disable=not progress)
    _train_steps(out, net, fwd, tf, opt, corp, run_info, train_cfg, mcfg.seq_len, start, history, device, bar, log,
                 log if log_interval is None else log_interval)
    bar.close()
    val = evaluate_bpc(net, corp.valid, mcfg.seq_len, device=device, progress=progress,
                       max_windows=train_cfg.final_eval_windows)
    return _save(out, net, opt, run_info, train_cfg.steps, history, val, train_cfg, mcfg.seq_len)


def _build_net(mcfg, model: str, device: str, run_info: dict, init, transform, trainable, trainable_name: str):
    """The network of `train` (from ``init``'s weights when given, ``trainable`` applied) and its transform
    (None without one); records the choices in ``run_info``."""
    net = build_model(mcfg).to(device)
    if init is not None:
        src, src_meta = load_checkpoint(init, device=device)
        if src_meta.get("model") != mcfg_name(mcfg) or src.config.to_dict() != mcfg.to_dict():
            raise ValueError(f"init checkpoint {str(init)!r} is a {src_meta.get('model')} model with configuration "
                             f"{src.config.to_dict()}, not {model} {run_info['size']} {mcfg.to_dict()}")
        net.load_state_dict(src.state_dict())
        run_info["init"] = str(init)
        # the weights it started from, so a fine-tune whose parent was retrained is recognisably stale
        run_info["init_sha256"] = _file_sha256(resolve_checkpoint(init) / MODEL_FILE)
    tf = None
    if transform is not None:
        tf = transform(net)
        run_info["transform"] = tf.describe()
    if trainable is not None:
        names = [n for n, p in net.named_parameters() if trainable(n)]
        if not names:
            raise ValueError(f"the parameter selection {trainable_name!r} matches no parameter of {model}")
        for n, p in net.named_parameters():
            p.requires_grad_(trainable(n))
        run_info["trainable"] = trainable_name
    return net, tf


def _resume(out: Path, net, opt, run_info: dict, mcfg, train_cfg: TrainConfig, device: str, log):
    """(first step, history, None) to train from, loading an unfinished run of the same settings from ``out``
    into ``net`` and ``opt``; (.., .., its checkpoint dict) when ``out`` holds a finished one. What a kill
    during a save left is repaired first (``recover_checkpoint``: the last committed checkpoint, whole)."""
    recover_checkpoint(out)
    if not (out / CONFIG_FILE).is_file():
        return 0, [], None
    meta = read_config(out)
    prev = {k: meta.get(k) for k in run_info}
    if isinstance(prev.get("train"), dict):
        prev["train"] = {**LEGACY_TRAIN, **prev["train"]}
    if prev != run_info or meta.get("config") != mcfg.to_dict():
        diff = sorted(k for k in run_info["train"] if (prev.get("train") or {}).get(k) != run_info["train"][k])
        hint = (" (a run from before phase groups: resume it with --no-phase-groups)"
                if "phase_lr_scale" in diff and (prev.get("train") or {}).get("phase_lr_scale") is None else "")
        raise ValueError(f"{str(out)!r} holds a checkpoint of different settings ({prev['model_name']} "
                         f"{prev['size']}, {prev['train']}; differing training fields: {diff}){hint}; "
                         f"choose another --out folder")
    if not (out / OPTIM_FILE).is_file() and meta.get("step", 0) < train_cfg.steps:
        raise ValueError(f"{str(out)!r} holds a checkpoint without optimizer state; it cannot be resumed")
    loaded, _ = load_checkpoint(out, device=device)
    net.load_state_dict(loaded.state_dict())
    start, history = int(meta.get("step", 0)), list(meta.get("metrics", {}).get("history", []))
    if start >= train_cfg.steps:
        log(f"{out}: already trained for {start} steps")
        return start, history, meta
    load_optimizer(out, opt, meta["optimizer"])
    log(f"{out}: resuming at step {start} of {train_cfg.steps}")
    return start, history, None


def _train_steps(out: Path, net, fwd, tf, opt, corp, run_info: dict, train_cfg: TrainConfig, seq_len: int,
                 start: int, history: list, device: str, bar, log, log_interval) -> None:
    """Steps ``start`` .. ``train_cfg.steps`` of `train` (``history`` grows by one entry per validation
    interval, a checkpoint is saved at each); on Ctrl-C saves the last finished step and re-raises."""
    prior = history[-1]["seconds"] if history else 0.0
    t0 = time.perf_counter()
    loss_ema = None
    done = start
    try:
        for step in range(start, train_cfg.steps):
            lr = lr_at(step, train_cfg)
            for g in opt.param_groups:
                g["lr"] = lr * g.get("lr_scale", 1.0)
            x, y = sample_batch(corp.train, train_cfg.batch_size, seq_len, _batch_generator(train_cfg.seed, step))
            x, y = x.to(device), y.to(device)
            if tf is None:
                logits = fwd(x)
            else:
                logits = net(x, attn_override=tf.override(_transform_generator(train_cfg.seed, step)))
            loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
            if not torch.isfinite(loss):
                raise FloatingPointError(f"training loss became {loss.item()} at step {step}; lower --lr")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_([p for p in net.parameters() if p.requires_grad], train_cfg.grad_clip)
            opt.step()
            loss_ema = loss.item() if loss_ema is None else 0.98 * loss_ema + 0.02 * loss.item()
            done = step + 1
            bar.update(1)
            if done % train_cfg.eval_every == 0 or done == train_cfg.steps:
                vb = evaluate_bpc(net, corp.valid, seq_len, max_windows=train_cfg.eval_windows, device=device)
                history.append({"step": done, "lr": lr, "train_bpc": loss_ema / LN2, "val_bpc_estimate": vb,
                                "seconds": prior + time.perf_counter() - t0})
                bar.set_postfix(train_bpc=f"{loss_ema / LN2:.3f}", val_bpc=f"{vb:.3f}")
                now = time.perf_counter() - t0
                eta = now / (done - start) * (train_cfg.steps - done)
                log_interval(f"step {done}/{train_cfg.steps} tokens {done * train_cfg.batch_size * seq_len:,} "
                             f"lr {lr:.2e} train_bpc {loss_ema / LN2:.4f} val_bpc~ {vb:.4f} "
                             f"elapsed {_hms(prior + now)} eta {_hms(eta)}")
                if done < train_cfg.steps:
                    _save(out, net, opt, run_info, done, history, None, train_cfg, seq_len)
    except KeyboardInterrupt:
        bar.close()
        _save(out, net, opt, run_info, done, history, None, train_cfg, seq_len)
        log(f"interrupted: saved step {done} to {out}; run the same command to resume")
        raise


def _hms(seconds: float) -> str:
    """``h:mm:ss`` of a duration in seconds."""
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _save(out: Path, net, opt, run_info, step, history, val_bpc, train_cfg, seq_len) -> dict:
    """Commit the run's checkpoint (optimizer state, weights, JSON) to ``out`` whole (``commit_checkpoint``)."""
    info = dict(run_info, step=step, tokens=step * train_cfg.batch_size * seq_len,
                metrics={"history": history, "val_bpc": val_bpc,
                         "train_seconds": history[-1]["seconds"] if history else 0.0})

    def write(folder: Path) -> None:
        info["optimizer"] = save_optimizer(folder, opt)
        kill_point("checkpoint_optimizer")
        save_checkpoint(folder, net, info)

    commit_checkpoint(out, write)
    return read_config(out)


def count(model: str, size: str) -> int:
    """Parameter count of a named model and size."""
    return count_parameters(build_model(model_config(model, size)))
