"""Measured diagnostics of a Kuramoto checkpoint: why it trails the transformer (issue 14 item 2).

    python benchmarks/kuramoto_diagnostics.py kuramoto-tiny [transformer-tiny] [--windows 32]

Per layer, on the first ``--windows`` validation windows: RMS of the attention increment Δ_attn and of the
feed-forward increment Δ_ffn [rad], the fraction of feed-forward outputs in tanh saturation (|tanh| > 0.9),
the learned score temperature τ, the spread of the causal scores per row (max − min), the mean largest
attention weight and the mean attention entropy [nats] against a uniform row's; for the readout, the largest
possible logit spread 2 β Σ_j |w_j| and the mean predicted probability of the correct byte (also for a
comparison checkpoint, e.g. the transformer).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import torch
import torch.nn.functional as F


def diagnose(name: str, windows: int = 32) -> dict:
    from oscsim.data import eval_windows, load_shakespeare
    from oscsim.nn.kuramoto import wrap
    from oscsim.train import load_checkpoint

    model, meta = load_checkpoint(name)
    x, y = eval_windows(load_shakespeare().valid, model.config.seq_len, windows)
    out = {"checkpoint": name, "model": meta["model"], "windows": windows}
    with torch.no_grad():
        logits = model(x)
        p = logits.softmax(-1).gather(-1, y[..., None])[..., 0]
        out["mean_p_correct"] = float(p.mean())
        out["bpc"] = float(F.cross_entropy(logits.flatten(0, 1), y.flatten()) / math.log(2))
        if meta["model"] != "kuramoto":
            return out
        layers = []
        theta = F.embedding(x, model.embed)
        T = x.shape[1]
        for blk in model.layers:
            parts = blk.attn.parts(theta, need_weights=True)
            A = parts.A
            phi = torch.cat([theta.cos(), theta.sin()], -1)
            _, q, key, _, _ = blk.attn._qk(theta, phi)
            s = q @ key.transpose(-1, -2)
            mask = torch.ones(T, T, dtype=torch.bool).tril()
            smax = s.masked_fill(~mask, -math.inf).amax(-1)
            smin = s.masked_fill(~mask, math.inf).amin(-1)
            ent = -(A.clamp_min(1e-30).log() * A).sum(-1)  # (B, h, T)
            uni = torch.log(torch.arange(1, T + 1, dtype=ent.dtype))
            d_attn = parts.delta
            theta = wrap(theta + d_attn)
            L = {"tau": float(blk.attn.tau), "rms_delta_attn_rad": float(d_attn.square().mean().sqrt()),
                 "score_spread": float((smax - smin)[..., 1:].mean()), "mean_max_weight": float(A.amax(-1).mean()),
                 "entropy_nats": float(ent[..., 1:].mean()), "uniform_entropy_nats": float(uni[1:].mean()),
                 "mean_abs_v": float(parts.v.abs().mean())}
            if blk.ffn is not None:
                xw = wrap(theta)
                pre = blk.ffn.w2(F.silu(blk.ffn.w1(xw)) * blk.ffn.w3(xw))
                th = torch.tanh(pre)
                d_ffn = blk.ffn.scale * th
                L.update(rms_delta_ffn_rad=float(d_ffn.square().mean().sqrt()),
                         ffn_saturated_fraction=float((th.abs() > 0.9).double().mean()))
                theta = wrap(theta + d_ffn)
            layers.append(L)
        out["layers"] = layers
        out["readout_beta"] = float(model.beta)
        out["readout_max_logit_spread"] = float(2 * model.beta.abs() * model.w.abs().sum())
        out["readout_bias_spread"] = float(model.bias.max() - model.bias.min())
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoints", nargs="+")
    ap.add_argument("--windows", type=int, default=32)
    a = ap.parse_args(argv)
    print(json.dumps([diagnose(c, a.windows) for c in a.checkpoints], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
