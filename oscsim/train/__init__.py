"""Training, evaluation and checkpoints (safetensors + JSON) of the closed-form models."""

from oscsim.train.checkpoint import bundled_checkpoints, load_checkpoint, resolve_checkpoint, save_checkpoint
from oscsim.train.loop import TrainConfig, evaluate_bpc, lr_at, train

__all__ = ["TrainConfig", "bundled_checkpoints", "evaluate_bpc", "load_checkpoint", "lr_at", "resolve_checkpoint",
           "save_checkpoint", "train"]
