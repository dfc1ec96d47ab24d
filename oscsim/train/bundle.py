"""Copy a finished training run into the package as a bundled checkpoint (developer tool).

``python -m oscsim.train.bundle RUN_DIR NAME`` copies ``model.safetensors`` and ``config.json`` (without the
optimizer state, which a bundled checkpoint does not need) to ``oscsim/checkpoints/NAME/`` after loading and
validating the run, and records the command that trained it.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from oscsim.nn.registry import model_config
from oscsim.train.checkpoint import CONFIG_FILE, MODEL_FILE, load_checkpoint, read_config


def bundle(run_dir: str | Path, name: str, *, chip_toml: str | None = None, threads: int = 1,
           eval_every: int | None = None) -> Path:
    """Copy a finished run to ``oscsim/checkpoints/NAME`` with the command that trained it.

    ``chip_toml``, ``threads``, ``eval_every``: the options of that command not recorded in the run itself.
    """
    run_dir = Path(run_dir)
    load_checkpoint(run_dir)  # validates
    meta = read_config(run_dir)
    if meta.get("step") != meta["train"]["steps"]:
        raise ValueError(f"{run_dir}: the run is unfinished (step {meta.get('step')} of {meta['train']['steps']})")
    meta.pop("optimizer", None)
    t = meta["train"]
    eval_every = t["eval_every"] if eval_every is None else eval_every
    cmd = (f"oscsim train --model {meta['model_name']} --size {meta['size']} --steps {t['steps']} "
           f"--batch-size {t['batch_size']} --lr {t['lr']} --seed {t['seed']}")
    if t.get("phase_lr_scale") is None:  # absent: a run from before phase groups
        cmd += " --no-phase-groups"
    else:
        cmd += f" --phase-lr-scale {t['phase_lr_scale']:g}"
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
    # the thread count does not change the result (deterministic algorithms); it is recorded for the timing
    meta["command"] = cmd + f" --threads {threads} --eval-every {eval_every} --out RUN_DIR"
    dst = Path(__file__).resolve().parent.parent / "checkpoints" / name
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run_dir / MODEL_FILE, dst / MODEL_FILE)
    (dst / CONFIG_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    load_checkpoint(dst)
    return dst


if __name__ == "__main__":  # pragma: no cover
    import argparse

    ap = argparse.ArgumentParser(description="bundle a finished training run as a named checkpoint")
    ap.add_argument("run_dir")
    ap.add_argument("name")
    ap.add_argument("--chip", default=None, help="the --chip TOML the run was trained with")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    print(bundle(a.run_dir, a.name, chip_toml=a.chip, threads=a.threads))
