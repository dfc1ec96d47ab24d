"""Turn a finished training run into a bundled checkpoint (developer tool; the command is
``python benchmarks/bundle_run.py RUN_DIR NAME``).

:func:`bundle` loads and validates the run, refuses an unfinished one, re-saves its weights through
:func:`~oscsim.train.checkpoint.save_checkpoint` (no optimizer state: a bundle is not resumed; ``config.json``
gets the SHA-256 of the weights and of the model configuration, verified at every load) and records

- ``command``: the ``oscsim train`` command that trained it (rebuilt from the run's settings);
- ``source``: the run folder, the SHA-256 of its ``config.json`` and ``model.safetensors`` (the bundled weights
  are those bytes: the save path is deterministic), and the recipe that launched it when given;
- ``metrics.val_bpc`` and ``metrics.test_bpc``: :func:`~oscsim.train.loop.evaluate_bpc` over the *whole*
  validation and test splits (non-overlapping windows of the model's context, the definition of the final
  ``val_bpc`` of :func:`~oscsim.train.loop.train` and of ``oscsim eval``).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from oscsim.nn.registry import model_config
from oscsim.train.checkpoint import (CONFIG_FILE, MODEL_FILE, commit_checkpoint, load_checkpoint, read_config,
                                     save_checkpoint)

__all__ = ["BUNDLE_ROOT", "bundle", "file_sha256", "train_command"]

#: Where bundled checkpoints live (``oscsim.checkpoints``, addressed by folder name).
BUNDLE_ROOT = Path(__file__).resolve().parent.parent / "checkpoints"


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def train_command(meta: dict, *, chip_toml: str | None = None, threads: int = 1,
                  eval_every: int | None = None) -> str:
    """The ``oscsim train`` command that reproduces a run from its checkpoint JSON.

    ``chip_toml``, ``threads``, ``eval_every``: the options of that command not recorded in the run itself (the
    thread count does not change the result at a fixed count; it is recorded for the timing).
    """
    t = meta["train"]
    eval_every = t["eval_every"] if eval_every is None else eval_every
    cmd = (f"oscsim train --model {meta['model_name']} --size {meta['size']} --steps {t['steps']} "
           f"--batch-size {t['batch_size']} --lr {t['lr']} --seed {t['seed']}")
    if t.get("phase_lr_scale") is None:  # absent: a run from before phase groups
        cmd += " --no-phase-groups"
    else:
        cmd += f" --phase-lr-scale {t['phase_lr_scale']:g}"
    if meta.get("corpus", "shakespeare") != "shakespeare":
        cmd += f" --corpus {meta['corpus']} --data {meta.get('data') or 'DATA'}"
    if t.get("final_eval_windows") is not None:
        cmd += f" --final-eval-windows {t['final_eval_windows']}"
    base = model_config(meta["model_name"], meta["size"]).to_dict()
    for key, val in sorted(meta["config"].items()):  # the --set overrides: fields that differ from the size's
        if base.get(key) != val:
            cmd += f" --set {key}={str(val).lower() if isinstance(val, bool) else val}"
    if meta.get("init"):
        cmd += f" --init {meta['init']}"
    if meta.get("transform"):
        cmd += f" --chip {chip_toml or 'CHIP_TOML'}"
        if meta["transform"].get("mode") == "fixed":
            cmd += " --calibrate"
        if meta["transform"].get("readout_noise_scale", 1.0) != 1.0:
            cmd += f" --readout-noise-scale {meta['transform']['readout_noise_scale']}"
    return cmd + f" --threads {threads} --eval-every {eval_every} --out RUN_DIR"


def bundle(run_dir: str | Path, name: str, *, root: str | Path | None = None, chip_toml: str | None = None,
           threads: int = 1, eval_every: int | None = None, recipe: str | None = None, force: bool = False,
           progress: bool = False, log=print) -> Path:
    """Bundle the finished run in ``run_dir`` as ``root/name`` (default root: the package's checkpoints).

    Parameters
    ----------
    run_dir : str or Path
        A run folder written by :func:`~oscsim.train.loop.train` whose ``step`` equals ``train.steps``.
    name : str
        The bundle's name (its folder), e.g. ``"kuramoto-1m"``.
    root : str or Path, optional
        Folder to write ``name`` into (default :data:`BUNDLE_ROOT`, where ``load_checkpoint(name)`` finds it).
    chip_toml, threads, eval_every :
        The options of the training command that the run does not record (see :func:`train_command`).
    recipe : str, optional
        The command that launched the run, when it was a wrapper (``bash benchmarks/train_1m.sh ...``).
    force : bool
        Replace an existing ``root/name`` (otherwise refused).
    progress : bool
        A progress bar over each split's windows on stderr.
    log : callable
        ``log(line)`` receives one line per evaluated split (BPC, windows, seconds).

    Returns
    -------
    Path
        The bundle's folder, holding ``config.json`` and ``model.safetensors``.

    Raises
    ------
    ValueError
        An unfinished run, a name that is not a plain folder name, or an existing bundle without ``force``.
    """
    from oscsim.data import eval_windows, load_corpus
    from oscsim.train.loop import evaluate_bpc

    run_dir = Path(run_dir)
    if not name or Path(name).name != name or name.startswith("."):
        raise ValueError(f"name must be a plain folder name such as 'kuramoto-1m', got {name!r}")
    model, _ = load_checkpoint(run_dir)  # validates JSON, tensor names, shapes and finiteness
    meta = read_config(run_dir)
    step, steps = meta.get("step"), meta["train"]["steps"]
    if step != steps:
        raise ValueError(f"{str(run_dir)!r} is an unfinished run (step {step} of {steps}); finish it first (rerun "
                         f"its training command, which resumes it), then bundle it")
    dst = Path(root if root is not None else BUNDLE_ROOT) / name
    if dst.exists() and not force:
        raise ValueError(f"{str(dst)!r} exists; pass force=True (--force) to replace it")
    meta.pop("optimizer", None)
    meta["command"] = train_command(meta, chip_toml=chip_toml, threads=threads, eval_every=eval_every)
    meta["source"] = {"run": str(run_dir), "config_sha256": file_sha256(run_dir / CONFIG_FILE),
                      "model_sha256": file_sha256(run_dir / MODEL_FILE), "recipe": recipe}
    corp = load_corpus(meta.get("corpus", "shakespeare"), meta.get("data"))
    seq_len = model.config.seq_len
    metrics = dict(meta.get("metrics") or {})
    recorded = metrics.get("val_bpc") if meta["train"].get("final_eval_windows") is None else None
    for key, label, split in (("val_bpc", "validation", corp.valid), ("test_bpc", "test", corp.test)):
        t0 = time.perf_counter()
        metrics[key] = evaluate_bpc(model, split, seq_len, progress=progress and f"{name} {label}")
        n = len(eval_windows(split, seq_len)[0])
        same = f"; the run recorded {recorded:.4f}" if key == "val_bpc" and recorded is not None else ""
        log(f"{name}: {label} BPC {metrics[key]:.4f} over the whole split ({n} windows of {seq_len}, "
            f"{time.perf_counter() - t0:.0f} s{same})")
    meta["metrics"] = metrics
    # model.safetensors and config.json, never OPTIM_FILE; a bundle it replaces stays whole until the swap
    commit_checkpoint(dst, lambda folder: save_checkpoint(folder, model, meta))
    load_checkpoint(dst)
    return dst
