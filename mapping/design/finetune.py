"""Training for the design: the front's best designs fine-tuned through their own chip's surrogate, rescored.

``oscsim design SPEC --out DIR --finetune`` runs :func:`finetune_front` after the study and its rescoring. A
design is a chip configuration; its model is the spec's checkpoint. For each of the ``[finetune] designs``
designs (:func:`finetune_candidates`: the verdict's named design, then the rescored front's next-lowest losses)
the checkpoint is fine-tuned with the hardware-aware recipe of the bundled ``kuramoto-tiny-hwa`` and
``kuramoto-1m-hwa`` (DESIGN §5.6, :class:`mapping.hwa.ChipSurrogate` in ``fresh`` mode: every training step runs
through the differentiable surrogate of *this design's* chip, its mismatch and noise drawn afresh; AdamW with
the warm-up and cosine schedule of :func:`oscsim.train.loop.lr_at`, its parameter groups, gradient clip 1), on
the budget of the spec's ``[finetune]`` table (:class:`~mapping.design.spec.FinetuneSpec`). Then the design's
chip is compiled again for the fine-tuned weights (the compiler maps the new weights) and both models run on it
over the rescoring's test windows (:mod:`mapping.design.recheck`: the same split, windows and noise seed):

- ``bpc_loss_before``: chip BPC − closed-form BPC of the checkpoint (the rescoring's figure, recomputed here for
  the per-token pairing);
- ``bpc_loss_after``: chip BPC of the fine-tuned model − the same closed-form BPC of the *checkpoint* (what the
  design loses against the model it was asked to run);
- ``bpc_change``: after − before = the two chip runs' BPC difference on the same tokens;
- ``bpc_loss_after_own``: against the fine-tuned model's own closed form; ``closed_form_change``: what the
  fine-tune did to the closed form.

Every figure has the paired standard error of :func:`mapping.simulation.report.bpc_difference_se` (blocks of 16
tokens). The results go to ``DIR/finetune/<trial>/result.json`` and ``DIR/finetune.json`` (their summary and its
sentence, which :func:`mapping.design.results.write_results` appends to the verdict).

**Saved with its design.** ``DIR/finetune/<trial>/`` holds ``chip.json`` (the design's chip configuration, the
form of ``config_json`` in ``trials.parquet``) and ``checkpoint/`` (the project's checkpoint format: safetensors
and JSON, :func:`oscsim.train.checkpoint.save_checkpoint`); ``result.json`` records the SHA-256 of both files and
the checkpoint's ``config.json`` that of the chip file (``mapping.compile(checkpoint, config_from_dict(chip))``
rebuilds the pair).

**Resumable.** A checkpoint (weights, optimizer state, progress) is committed every ``checkpoint_every`` steps
to ``step-NNNNNN/`` by :func:`oscsim.train.checkpoint.commit_checkpoint`, the mechanism of ``oscsim train``'s
checkpoints too (written into ``step-NNNNNN.tmp/``, renamed in one ``os.rename``): a kill at any instant leaves
the last committed step whole. The batch of step s and the
surrogate's draws at step s come from generators seeded by (seed, s), so a resumed fine-tune ends with the weights
of an uninterrupted one bit for bit (torch on one thread, deterministic algorithms;
tests/test_design_finetune.py). A folder holding a fine-tune of other settings (budget, design, checkpoint
weights) is refused in one line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import shutil
import time
from pathlib import Path

from .driver import DesignDirError, DriverLock, kill_point
from .spec import VERDICT_BPC_LOSS, DesignSpec, FinetuneSpec

__all__ = ["finetune_front", "finetune_candidates", "finetune_design", "score_pair", "check_finetune", "FINETUNE_DIR",
           "summary_text"]

FINETUNE_DIR = "finetune"
_CKPT = "checkpoint"


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def finetune_candidates(df, spec: DesignSpec, recheck=None) -> list[int]:
    """Trials to fine-tune: the verdict's named design (best, or closest to the threshold), then the judged pool's
    next-lowest losses (the rescored front when there is one), ``spec.finetune.designs`` in all."""
    from .results import _judged, _with_recheck, verdict

    v = verdict(df, spec, recheck)
    named = v.get("best_trial") if v.get("best_trial") is not None else v.get("closest_trial")
    if named is None:
        return []
    ok = _with_recheck(df, recheck)
    pool, loss, _, _, _ = _judged(ok[ok["state"] == "COMPLETE"], spec)
    order = [int(t) for t in pool.assign(_l=loss).sort_values(["_l", "trial"])["trial"]]
    return ([int(named)] + [t for t in order if t != named])[: spec.finetune.designs]


def _key(spec: DesignSpec, trial: int, config_json: str, init_sha: str, seq_len: int) -> str:
    """SHA-256 of what decides a fine-tune's weights (a folder holding another is refused)."""
    payload = {"finetune": spec.finetune.to_dict(), "seq_len": seq_len, "trial": trial, "init_sha256": init_sha,
               "config": json.loads(config_json)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _gen(seed: int, step: int, stream: int):
    import torch

    g = torch.Generator()
    g.manual_seed((seed * 1_000_003 + step * 2 + stream) % (2 ** 63))
    return g


def _commit(folder: Path, name: str, net, opt, info: dict) -> Path:
    """Commit a checkpoint to ``folder/name`` whole (:func:`oscsim.train.checkpoint.commit_checkpoint`: written
    into ``name.tmp/``, then renamed)."""
    from oscsim.train.checkpoint import commit_checkpoint, save_checkpoint, save_optimizer

    def write(tmp: Path) -> None:
        state = info if opt is None else dict(info, optimizer=save_optimizer(tmp, opt))
        save_checkpoint(tmp, net, state)
        kill_point("finetune_saving")

    return commit_checkpoint(folder / name, write)


def _last_state(folder: Path, key: str):
    """(step, folder) of the last committed step checkpoint of this fine-tune, (0, None) when there is none and
    (None, the final checkpoint) when it is finished; leftovers of a kill (``*.tmp``, superseded steps) removed;
    another fine-tune's folder refused."""
    from oscsim.train.checkpoint import ASIDE, STAGING, read_config, recover_checkpoint

    for left in [*folder.glob(f"*{STAGING}"), *folder.glob(f"*{ASIDE}")]:
        if left.is_dir():
            recover_checkpoint(left.with_suffix(""))
    done = [p for p in [folder / _CKPT, *sorted(folder.glob("step-*"))] if p.is_dir()]
    for p in done:
        got = read_config(p).get("finetune", {}).get("key")
        if got != key:
            raise DesignDirError(f"{p} holds a fine-tune of other settings ([finetune] budget, design or checkpoint"
                                 f" weights); delete {folder} to fine-tune this design again")
    if (folder / _CKPT).is_dir():
        for p in folder.glob("step-*"):
            shutil.rmtree(p, ignore_errors=True)
        return None, folder / _CKPT
    steps = sorted(done, key=lambda p: int(p.name.split("-")[1]))
    for p in steps[:-1]:
        shutil.rmtree(p, ignore_errors=True)
    return (int(steps[-1].name.split("-")[1]), steps[-1]) if steps else (0, None)


def finetune_design(spec: DesignSpec, folder: str | Path, trial: int, config_json: str, *, progress: bool = False,
                    log=print) -> Path:
    """Fine-tune the spec's checkpoint for one design through its chip's surrogate; returns the checkpoint folder.

    Parameters
    ----------
    spec : DesignSpec
        Its ``checkpoint`` (a Kuramoto model) and ``finetune`` budget.
    folder : path
        ``DIR/finetune/<trial>`` (created; an unfinished fine-tune there is resumed).
    trial : int
    config_json : str
        The design's chip configuration (``trials.parquet``'s ``config_json``).
    progress : bool
        A tqdm bar over the steps.
    log : callable
        Receives "resuming at step ..." lines.
    """
    import torch

    from oscsim.train.checkpoint import MODEL_FILE, load_checkpoint, load_optimizer, read_config, resolve_checkpoint

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    net, meta = load_checkpoint(spec.checkpoint)
    ft = spec.finetune
    seq_len = int(ft.seq_len or net.config.seq_len)
    init_sha = _sha256(resolve_checkpoint(spec.checkpoint) / MODEL_FILE)
    key = _key(spec, trial, config_json, init_sha, seq_len)
    from ..sweep.run import atomic_write_bytes

    chip_bytes = (json.dumps(json.loads(config_json), indent=1, sort_keys=True) + "\n").encode()
    atomic_write_bytes(folder / "chip.json", chip_bytes)
    start, state = _last_state(folder, key)
    if start is None:
        return state
    threads, determ = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        net.train()
        trained = (meta.get("train") or {}).get("phase_lr_scale")
        sur, opt, tcfg = _surrogate_and_optimizer(net, config_json, ft, trained)
        history, ema = [], None
        if state is not None:
            loaded, smeta = load_checkpoint(state)
            net.load_state_dict(loaded.state_dict())
            load_optimizer(state, opt, smeta["optimizer"])
            history, ema = list(smeta["finetune"]["history"]), smeta["finetune"]["loss_ema"]
            log(f"{folder}: resuming the fine-tune of trial {trial} at step {start} of {ft.steps}")
        info = {k: meta.get(k) for k in ("model_name", "size", "corpus", "data")}
        info.update(init=spec.checkpoint, init_sha256=init_sha, transform=sur.describe(),
                    train={**dataclasses.asdict(tcfg), "seq_len": seq_len, "threads": 1})
        fin = {"key": key, "trial": trial, "spec": ft.to_dict(), "seq_len": seq_len, "design_spec": spec.spec_hash,
               "chip_sha256": hashlib.sha256(chip_bytes).hexdigest()}
        _steps(net, opt, sur, tcfg, folder, info, fin, meta, start, history, ema, seq_len, progress)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(determ, warn_only=True)
    _last_state(folder, key)  # the superseded step checkpoints
    return folder / _CKPT


def _surrogate(net, cfg):
    """The ``fresh`` surrogate of ``net`` compiled on ``cfg`` (bound to ``net``); a one-line refusal where no
    surrogate exists (:meth:`mapping.hwa.SurrogateSpec.from_chip`: a chip other than a Kuramoto one)."""
    from ..compiler.build import compile as compile_chip
    from ..hwa import ChipSurrogate

    try:
        return ChipSurrogate(compile_chip(net, cfg), mode="fresh").bind(net)
    except ValueError as exc:
        raise ValueError(f"--finetune trains through the chip's surrogate: {exc}") from None


def check_finetune(spec: DesignSpec) -> None:
    """Refuse, before a study, a spec whose checkpoint has no chip surrogate on its base chip."""
    from ..model_io import load_model

    model, _ = load_model(spec.checkpoint)
    _surrogate(model, spec.base.replace(mismatch=False))


def _surrogate_and_optimizer(net, config_json: str, ft: FinetuneSpec, trained_phase_scale):
    """The design's chip surrogate (compiled from the weights the fine-tune starts from), AdamW in the training
    loop's parameter groups (phases at ``ft.phase_lr_scale``, or the checkpoint's ``trained_phase_scale``), and the
    schedule's TrainConfig."""
    import torch

    from oscsim.train.loop import TrainConfig, param_groups

    from ..config import config_from_dict

    sur = _surrogate(net, config_from_dict(json.loads(config_json)))
    # the warm-up of `oscsim train --init`: a tenth of the steps, at most 100
    tcfg = TrainConfig(steps=ft.steps, batch_size=ft.batch_size, lr=ft.lr, seed=ft.seed,
                       warmup=min(TrainConfig().warmup, max(ft.steps // 10, 1)), eval_every=ft.checkpoint_every,
                       phase_lr_scale=ft.phase_lr_scale if ft.phase_lr_scale is not None else trained_phase_scale)
    opt = torch.optim.AdamW(param_groups(net, tcfg), lr=tcfg.lr, betas=(0.9, 0.95))
    return sur, opt, tcfg


def _steps(net, opt, sur, tcfg, folder: Path, info: dict, fin: dict, meta: dict, start: int, history: list,
           ema, seq_len: int, progress: bool) -> None:
    """Steps ``start`` .. ``tcfg.steps``, a checkpoint committed every ``tcfg.eval_every`` and at the end."""
    import torch
    import torch.nn.functional as F
    from tqdm import tqdm

    from oscsim.data import load_corpus, sample_batch
    from oscsim.train.loop import lr_at

    corp = load_corpus(meta.get("corpus") or "shakespeare", meta.get("data"))
    corp.check_length(seq_len)
    t0 = time.perf_counter()
    bar = tqdm(total=tcfg.steps, initial=start, desc=f"fine-tune trial {fin['trial']}", unit="step",
               disable=not progress)
    try:
        for step in range(start, tcfg.steps):
            lr = lr_at(step, tcfg)
            for g in opt.param_groups:
                g["lr"] = lr * g.get("lr_scale", 1.0)
            x, y = sample_batch(corp.train, tcfg.batch_size, seq_len, _gen(tcfg.seed, step, 0))
            logits = net(x, attn_override=sur.override(_gen(tcfg.seed, step, 1)))
            loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
            if not torch.isfinite(loss):
                raise FloatingPointError(f"the fine-tune's loss became {loss.item()} at step {step}; lower "
                                         f"[finetune] lr ({tcfg.lr:g})")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(net.parameters()), tcfg.grad_clip)
            opt.step()
            ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
            done = step + 1
            bar.update(1)
            bar.set_postfix(train_bpc=f"{ema / math.log(2):.3f}")
            kill_point("finetune_step")
            if done % tcfg.eval_every == 0 or done == tcfg.steps:
                history.append({"step": done, "lr": lr, "train_bpc": ema / math.log(2),
                                "seconds": (history[-1]["seconds"] if history else 0.0) + time.perf_counter() - t0})
                t0 = time.perf_counter()
                state = dict(info, step=done, tokens=done * tcfg.batch_size * seq_len,
                             finetune=dict(fin, history=history, loss_ema=ema))
                last = done == tcfg.steps
                _commit(folder, _CKPT if last else f"step-{done:06d}", net, None if last else opt, state)
                kill_point("finetune_saved")
    finally:
        bar.close()


def score_pair(spec: DesignSpec, config_json: str, checkpoint: str | Path, windows: int) -> dict:
    """The design's chip run with the spec's checkpoint and with ``checkpoint`` (each compiled for its own
    weights) on ``windows`` test windows of the rescoring, same noise seed; the figures of the module notes."""
    import torch

    from oscsim.data import eval_windows, load_shakespeare

    from ..compiler.build import compile as compile_chip
    from ..config import config_from_dict
    from ..model_io import load_model
    from ..simulation.inference import run
    from ..simulation.report import bpc_difference_se
    from ..sweep.spec import TokenSpec
    from .recheck import RECHECK_SPLIT

    cfg = config_from_dict(json.loads(config_json))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as every trial and the rescoring (mapping.sweep.point.compute_point)
    try:
        runs = []
        for ck in (spec.checkpoint, str(checkpoint)):
            model, _ = load_model(ck)
            T = TokenSpec(windows=windows, seq_len=spec.tokens.seq_len, split=RECHECK_SPLIT).window(
                cfg.context_tokens or model.config.seq_len)
            x, y = eval_windows(load_shakespeare().split(RECHECK_SPLIT), T, max_windows=windows)
            res = run(compile_chip(model, cfg, checkpoint=ck), x, seed=spec.noise_seed, progress=False)
            runs.append((res, res.bpc(y)))
    finally:
        torch.set_num_threads(threads)
    (rb, bb), (rf, bf) = runs

    def pair(a, b):
        return float(bpc_difference_se(a, b, y))

    return {"n_tokens": int(y.numel()), "windows": windows, "split": RECHECK_SPLIT, "noise_seed": spec.noise_seed,
            "bpc_closed_form_before": bb["bpc_closed_form"], "bpc_chip_before": bb["bpc_chip"],
            "bpc_closed_form_after": bf["bpc_closed_form"], "bpc_chip_after": bf["bpc_chip"],
            "bpc_loss_before": bb["bpc_chip"] - bb["bpc_closed_form"],
            "bpc_loss_before_se": pair(rb.logits, rb.logits_closed_form),
            "bpc_loss_after": bf["bpc_chip"] - bb["bpc_closed_form"],
            "bpc_loss_after_se": pair(rf.logits, rb.logits_closed_form),
            "bpc_change": bf["bpc_chip"] - bb["bpc_chip"], "bpc_change_se": pair(rf.logits, rb.logits),
            "bpc_loss_after_own": bf["bpc_chip"] - bf["bpc_closed_form"],
            "bpc_loss_after_own_se": pair(rf.logits, rf.logits_closed_form),
            "closed_form_change": bf["bpc_closed_form"] - bb["bpc_closed_form"],
            "closed_form_change_se": pair(rf.logits_closed_form, rb.logits_closed_form)}


def _pm(x: float, se: float) -> str:
    return f"{x:+.3f} +- {se:.2g}" if math.isfinite(se) else f"{x:+.3f} (no standard error)"


def summary_text(rows: list[dict], ft: FinetuneSpec) -> str:
    """The verdict's sentences on the fine-tuned designs (before, after, the paired change, its resolution)."""
    if not rows:
        return ""
    r0 = rows[0]
    text = (f"Fine-tuned through each design's own chip surrogate ({ft.steps} steps x {ft.batch_size} windows of "
            f"{r0['seq_len']} bytes, lr {ft.lr:g}, seed {ft.seed}) and rescored on the same {r0['n_tokens']:,} test "
            f"tokens, same noise seed: ")
    parts = []
    for r in rows:
        d, se = r["bpc_change"], r["bpc_change_se"]
        if d < 0 and math.isfinite(se) and -d > 2 * se:
            how = "lowered"
        elif d < 0:
            how = "lowered within 2 SE (not resolved)"
        else:
            how = "not lowered"
        at = " (at the threshold)" if r["bpc_loss_after"] <= VERDICT_BPC_LOSS else ""
        parts.append(f"trial {r['trial']}'s BPC loss {_pm(r['bpc_loss_before'], r['bpc_loss_before_se'])} -> "
                     f"{_pm(r['bpc_loss_after'], r['bpc_loss_after_se'])}{at}, {how}: paired change "
                     f"{_pm(d, se)}; the fine-tune moved the closed form by {r['closed_form_change']:+.3f}")
    return text + "; ".join(parts) + "."


def finetune_front(spec: DesignSpec, out: str | Path, df, *, windows: int, progress: bool = False,
                   log=print) -> list[dict]:
    """Fine-tune and rescore the :func:`finetune_candidates` of the trials table ``df``; writes the results
    (module notes) and returns their rows (one dict per trial, in the order fine-tuned).

    Parameters
    ----------
    spec : DesignSpec
    out : path
        The design folder (the study and, unless ``--recheck-windows 0``, its rescoring done).
    df : pandas.DataFrame
        The trials table.
    windows : int
        Test windows of the rescoring (``DIR/recheck.parquet``'s), >= 1.
    progress : bool
        A bar over each fine-tune's steps.
    """
    from ..sweep.run import atomic_write_bytes
    from .results import FINETUNE, load_recheck

    if isinstance(windows, bool) or not isinstance(windows, int) or windows < 1:
        raise ValueError(f"fine-tune rescoring windows must be a positive integer, got {windows!r}")
    out = Path(out)
    trials = finetune_candidates(df, spec, load_recheck(out))
    if not trials:
        raise ValueError("--finetune: no design completed, nothing to fine-tune")
    rows = []
    with DriverLock(out):
        for t in trials:
            row = df[df["trial"] == t].iloc[0]
            folder = out / FINETUNE_DIR / str(t)
            ckpt = finetune_design(spec, folder, t, row["config_json"], progress=progress, log=log)
            res_path = folder / "result.json"
            sha = {"checkpoint_model_sha256": _sha256(ckpt / "model.safetensors"),
                   "chip_sha256": _sha256(folder / "chip.json")}
            old = json.loads(res_path.read_text()) if res_path.is_file() else {}
            if {k: old.get(k) for k in (*sha, "windows")} == {**sha, "windows": windows}:
                rows.append(old)  # scored before, for these weights and windows
                continue
            from oscsim.train.checkpoint import read_config

            r = {"trial": int(t), "checkpoint": str(ckpt.relative_to(out)), "chip": str((folder / "chip.json")
                 .relative_to(out)), **sha, "seq_len": read_config(ckpt)["finetune"]["seq_len"],
                 "finetune": spec.finetune.to_dict(), **score_pair(spec, row["config_json"], ckpt, windows)}
            atomic_write_bytes(res_path, json.dumps(r, indent=1).encode())
            rows.append(r)
        summary = {"designs": rows, "text": summary_text(rows, spec.finetune), "spec_hash": spec.spec_hash}
        atomic_write_bytes(out / FINETUNE, json.dumps(summary, indent=1).encode())
    return rows
