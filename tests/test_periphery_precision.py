"""The digital periphery's precision, simulated (mapping.periphery.precision): the quantiser against its stated
error bound, its rounding and scales, and the chip run at int8 / int16 / fp32."""

import math

import numpy as np
import pytest
import torch

from mapping import ChipConfig, compile, run
from mapping.config import EnergyConfig
from mapping.periphery.precision import (INT_BITS, fake_quant, periphery_parts, quant_step, quantise_weight,
                                         quantised_model)


@pytest.mark.parametrize("precision", ["int8", "int16"])
def test_integer_quantiser_error_is_within_half_a_step_and_its_rms_is_step_over_sqrt12(precision):
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(200_000, generator=g, dtype=torch.float64) * 2 - 1) * 3.7
    s = float(quant_step(x, precision))
    assert s == pytest.approx(float(x.abs().max()) / (2 ** (INT_BITS[precision] - 1) - 1))
    err = x - fake_quant(x, precision)
    assert float(err.abs().max()) <= s / 2 * (1 + 1e-12)  # elementwise bound: half a step
    rms = float(err.square().mean().sqrt())
    # uniform rounding error: RMS = s / sqrt(12); 200,000 samples pin it to well within 2 %
    assert rms == pytest.approx(s / math.sqrt(12), rel=0.02)


def test_rounding_is_half_to_even_and_codes_clip_at_full_scale():
    s = 0.25
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5]) * s
    assert torch.equal(fake_quant(x, "int8", step=s), torch.tensor([0.0, 2.0, 2.0, -0.0, -2.0]) * s)
    big = torch.tensor([1000.0, -1000.0])
    assert torch.equal(fake_quant(big, "int8", step=1.0), torch.tensor([127.0, -127.0]))
    assert torch.equal(fake_quant(big, "int8", step=1.0, unsigned=True), torch.tensor([255.0, 0.0]))


def test_fp16_rounds_to_half_and_fp32_is_the_identity():
    x = torch.tensor([1.0 + 2.0**-12, 1.0 + 3 * 2.0**-12, 1e-3], dtype=torch.float32)
    q = fake_quant(x, "fp16")
    assert torch.equal(q, x.half().float())
    assert float(((q - x) / x).abs().max()) <= 2.0**-11  # half a unit in the last place of half
    assert fake_quant(x, "fp32") is x
    with pytest.raises(ValueError, match="precision must be one of"):
        fake_quant(x, "int4")


def test_weights_are_quantised_per_output_channel():
    w = torch.tensor([[0.1, -0.05, 0.02], [10.0, 3.0, -7.0]])
    wq, step = quantise_weight(w, "int8")
    assert torch.allclose(step.view(-1), torch.tensor([0.1, 10.0]) / 127)
    assert torch.allclose(wq[:, 0].abs(), torch.tensor([0.1, 10.0]))  # each row's largest weight is exact
    assert float((w - wq).abs().div(step).max()) <= 0.5 + 1e-6


def _model():
    from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM

    torch.manual_seed(0)
    return KuramotoLM(KuramotoConfig(k=8, n_heads=2, n_layers=2, seq_len=16))


def test_quantised_model_leaves_the_closed_form_alone_and_its_periphery_holds_codes():
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    q = quantised_model(model, "int8")
    assert quantised_model(model, "fp32") is model
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    w = q.layers[0].attn.value.weight
    step = w.abs().amax(1, keepdim=True) / 127
    assert torch.allclose(w / step, (w / step).round(), atol=1e-4)  # per-channel integer codes
    theta = torch.rand(1, 10, 8, generator=torch.Generator().manual_seed(1)) * 6 - 3
    with torch.no_grad():
        parts = q.layers[0].attn.parts(theta)
        ref = model.layers[0].attn.parts(theta, need_weights=False).delta
        pp = periphery_parts(q.layers[0].attn, theta, parts, "int8", delta=ref)
    codes = pp.A * 255
    assert torch.allclose(codes, codes.round(), atol=1e-3)  # softmax on unsigned 8-bit codes
    assert pp.delta is ref
    assert not torch.equal(pp.A, parts.A)
    # the quantised softmax stays close to the float one: within a few codes
    assert float((pp.A - parts.A).abs().max()) < 8 / 255


def test_the_chip_run_computes_at_its_periphery_precision():
    model = _model()
    x = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(2))
    logits = {}
    for p in ("fp32", "int16", "int8"):
        chip = compile(model, ChipConfig().replace(energy=EnergyConfig(digital_precision=p)))
        r = run(chip, x, seed=0)
        logits[p] = r.logits
        cf = r.logits_closed_form
    assert not torch.equal(logits["int8"], logits["fp32"])
    # narrower periphery, larger departure from the float32 chip (int16 steps are 256x finer than int8's)
    d16 = float((logits["int16"] - logits["fp32"]).abs().max())
    d8 = float((logits["int8"] - logits["fp32"]).abs().max())
    assert d16 < d8
    assert np.isfinite(cf.numpy()).all()
