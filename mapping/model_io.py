"""The closed-form model a chip runs: load it, name its kind, fingerprint its weights, attach it to a chip.

A leaf of `mapping` (it imports neither `chip` nor `compiler`): `compiler.compile` uses it to record the
model, and `chip_io.load_chip` to re-attach and check it, so neither `chip` nor `compiler` imports the other
in a circle.
"""

from __future__ import annotations

import hashlib
import os

__all__ = ["model_kind", "load_model", "model_fingerprint", "attach_model"]


def model_kind(model) -> str:
    """'kuramoto' for a KuramotoLM, 'ssa' for an OSNModel; anything else is refused with a ValueError."""
    name = type(model).__name__
    if name == "KuramotoLM":
        return "kuramoto"
    if name == "OSNModel":
        return "ssa"
    raise ValueError(f"cannot compile a {name} onto an oscillator chip: chips implement Kuramoto attention "
                     f"(KuramotoLM checkpoints, e.g. 'kuramoto-tiny') or SSA (OSNModel checkpoints, e.g. "
                     f"'ssa1d-tiny'); a transformer has no oscillator layer")


def load_model(name_or_path: str | os.PathLike):
    """Load a checkpoint (bundled name or folder); returns (model, meta). Refuses models a chip cannot run."""
    try:
        from oscsim.train import load_checkpoint
    except ImportError as exc:  # pragma: no cover
        raise ValueError(f"oscsim.train is not available to load checkpoints: {exc}") from None
    model, meta = load_checkpoint(name_or_path)
    model_kind(model)
    return model, meta


def model_fingerprint(model) -> str:
    """SHA-256 over the names, shapes and bytes of the model's state dict (sorted by name)."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        a = t.detach().cpu().contiguous().numpy()
        h.update(name.encode())
        h.update(str(tuple(a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def attach_model(chip, model=None):
    """Attach the closed-form model to a loaded chip (loading its checkpoint when ``model`` is None) and check
    that its weights are the ones the chip was compiled from."""
    if model is None:
        ck = chip.model_info.get("checkpoint")
        if not ck:
            raise ValueError("the chip names no checkpoint; pass the model it was compiled from")
        model, _ = load_model(ck)
    kind = model_kind(model)
    if kind != chip.kind:
        raise ValueError(f"the chip was compiled for a {chip.kind} model, got a {kind} model")
    if model.config.to_dict() != chip.model_info["config"]:
        raise ValueError("the model's configuration differs from the one the chip was compiled for")
    fp = model_fingerprint(model)
    if fp != chip.model_info["fingerprint"]:
        raise ValueError("the model's weights differ from those the chip was compiled for (fingerprint mismatch)")
    names = sorted(model.state_dict())
    if [s["name"] for s in chip.static_digital] != names:
        raise ValueError("static_digital does not list the model's weights")
    for s in chip.static_digital:
        if list(model.state_dict()[s["name"]].shape) != list(s["shape"]):
            raise ValueError(f"static_digital: {s['name']} has shape {s['shape']} in the chip, "
                             f"{list(model.state_dict()[s['name']].shape)} in the model")
    chip.model = model
    return chip
