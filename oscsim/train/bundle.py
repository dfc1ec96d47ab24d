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

from oscsim.train.checkpoint import CONFIG_FILE, MODEL_FILE, load_checkpoint, read_config


def bundle(run_dir: str | Path, name: str) -> Path:
    run_dir = Path(run_dir)
    load_checkpoint(run_dir)  # validates
    meta = read_config(run_dir)
    if meta.get("step") != meta["train"]["steps"]:
        raise ValueError(f"{run_dir}: the run is unfinished (step {meta.get('step')} of {meta['train']['steps']})")
    meta.pop("optimizer", None)
    t = meta["train"]
    meta["command"] = (f"oscsim train --model {meta['model_name']} --size {meta['size']} --steps {t['steps']} "
                       f"--batch-size {t['batch_size']} --lr {t['lr']} --seed {t['seed']} --threads 1 --out RUN_DIR")
    dst = Path(__file__).resolve().parent.parent / "checkpoints" / name
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run_dir / MODEL_FILE, dst / MODEL_FILE)
    (dst / CONFIG_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    load_checkpoint(dst)
    return dst


if __name__ == "__main__":  # pragma: no cover
    print(bundle(sys.argv[1], sys.argv[2]))
