"""Closed-form torch operators and models: Kuramoto attention, SSA and the OSN block, the transformer baseline."""

from oscsim.nn.kuramoto import KuramotoAttention, KuramotoConfig, KuramotoLM, KuramotoParts, wrap
from oscsim.nn.osn import OSNBlock, OSNConfig, OSNModel
from oscsim.nn.registry import MODELS, SIZES, build_model, config_from_dict, count_parameters, model_config
from oscsim.nn.ssa import SSAAttention
from oscsim.nn.transformer import TransformerConfig, TransformerLM

__all__ = ["MODELS", "SIZES", "KuramotoAttention", "KuramotoConfig", "KuramotoLM", "KuramotoParts", "OSNBlock",
           "OSNConfig", "OSNModel", "SSAAttention", "TransformerConfig", "TransformerLM", "build_model",
           "config_from_dict", "count_parameters", "model_config", "wrap"]
