"""Model sizes: 1m and 5m within 5 % of 1M and 5M parameters; the transformer within 5 % of its Kuramoto
counterpart; the transformer baseline is causal."""

import pytest
import torch

from oscsim.nn import MODELS, build_model, count_parameters, model_config
from oscsim.nn.transformer import TransformerConfig, TransformerLM


def _n(model, size):
    return count_parameters(build_model(model_config(model, size)))


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("size,target", [("1m", 1_000_000), ("5m", 5_000_000)])
def test_named_sizes(model, size, target):
    assert abs(_n(model, size) / target - 1) < 0.05


@pytest.mark.parametrize("size", ["tiny", "1m", "5m"])
def test_transformer_matches_kuramoto(size):
    assert abs(_n("transformer", size) / _n("kuramoto", size) - 1) < 0.05
    k, t = model_config("kuramoto", size), model_config("transformer", size)
    assert (k.k, k.n_heads, k.n_layers, k.seq_len) == (t.d_model, t.n_heads, t.n_layers, t.seq_len)


@pytest.mark.parametrize("model", MODELS)
def test_tiny_is_about_02m(model):
    assert 150_000 < _n(model, "tiny") < 260_000


def test_unknown_model_or_size():
    with pytest.raises(ValueError, match="unknown model 'gpt'.*kuramoto"):
        model_config("gpt", "tiny")
    with pytest.raises(ValueError, match="unknown size '2m'.*tiny"):
        model_config("kuramoto", "2m")


def test_transformer_causal():
    torch.manual_seed(0)
    m = TransformerLM(TransformerConfig(vocab_size=11, d_model=16, n_heads=2, n_layers=2, ffn_hidden=20)).double()
    tok = torch.randint(0, 11, (2, 9))
    tok2 = tok.clone()
    tok2[:, 5] = (tok2[:, 5] + 1) % 11
    torch.testing.assert_close(m(tok)[:, :5], m(tok2)[:, :5], atol=1e-12, rtol=0)
