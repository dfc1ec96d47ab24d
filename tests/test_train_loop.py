"""Training: loss goes down for every model, resume continues the same run, checkpoints refuse bad files,
the train/eval/info CLI."""

import json

import pytest
import torch
from safetensors.torch import load_file

from oscsim.cli import main
from oscsim.data import eval_windows, load_shakespeare
from oscsim.nn import build_model, model_config
from oscsim.train import TrainConfig, evaluate_bpc, load_checkpoint, lr_at, train

SMALL = {"kuramoto": dict(k=16, n_heads=2, n_layers=1, ffn_hidden=16, seq_len=32),
         "transformer": dict(d_model=16, n_heads=2, n_layers=1, ffn_hidden=24, seq_len=32),
         "ssa": dict(d_model=16, n_heads=2, n_layers=1, seq_len=32),
         "ssa1d": dict(d_model=16, n_heads=2, n_layers=1, seq_len=32)}
CFG = TrainConfig(steps=40, batch_size=8, lr=1e-2, warmup=4, eval_every=20, eval_windows=4, final_eval_windows=4,
                  seed=1)


@pytest.fixture(scope="module")
def valid():
    return load_shakespeare().valid[:4000]


@pytest.mark.parametrize("model", ["kuramoto", "ssa", "ssa1d", "transformer"])
def test_short_training_lowers_loss(tmp_path, valid, model):
    torch.manual_seed(CFG.seed)
    fresh = build_model(model_config(model, "tiny", **SMALL[model]))
    before = evaluate_bpc(fresh, valid, 32)
    meta = train(model, "tiny", tmp_path / model, train_cfg=CFG, log=lambda m: None, progress=False,
                 **SMALL[model])
    net, _ = load_checkpoint(tmp_path / model)
    after = evaluate_bpc(net, valid, 32)
    assert after < before - 1.0, (before, after)
    assert meta["step"] == 40 and meta["tokens"] == 40 * 8 * 32
    assert meta["metrics"]["val_bpc"] is not None


def test_resume_continues_the_same_run(tmp_path):
    kw = SMALL["transformer"]
    train("transformer", "tiny", tmp_path / "a", train_cfg=CFG, log=lambda m: None, progress=False, **kw)

    def stop(msg):
        if msg.startswith("step 20/"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train("transformer", "tiny", tmp_path / "b", train_cfg=CFG, log=stop, progress=False, **kw)
    assert json.loads((tmp_path / "b" / "config.json").read_text())["step"] == 20
    msgs = []
    train("transformer", "tiny", tmp_path / "b", train_cfg=CFG, log=msgs.append, progress=False, **kw)
    assert any("resuming at step 20" in m for m in msgs)
    a, b = load_file(str(tmp_path / "a" / "model.safetensors")), load_file(str(tmp_path / "b" / "model.safetensors"))
    for k in a:
        torch.testing.assert_close(a[k], b[k], atol=0, rtol=0)
    with pytest.raises(ValueError, match="different settings"):
        train("transformer", "tiny", tmp_path / "b", train_cfg=TrainConfig(steps=50, batch_size=8), progress=False,
              log=lambda m: None, **kw)


def test_lr_schedule():
    cfg = TrainConfig(steps=100, lr=1.0, warmup=10, min_lr_ratio=0.1)
    assert lr_at(0, cfg) == pytest.approx(0.1)
    assert lr_at(10, cfg) == pytest.approx(1.0)
    assert lr_at(55, cfg) == pytest.approx(0.55)
    assert lr_at(100, cfg) == pytest.approx(0.1)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    out = tmp_path_factory.mktemp("ck") / "k"
    train("kuramoto", "tiny", out, train_cfg=TrainConfig(steps=2, batch_size=2, warmup=1, eval_every=2,
                                                          eval_windows=1, final_eval_windows=1), log=lambda m: None, progress=False,
          **SMALL["kuramoto"])
    return out


def _copy(src, dst):
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def test_checkpoint_is_safetensors_and_json(ckpt):
    assert sorted(p.name for p in ckpt.iterdir()) == ["config.json", "model.safetensors", "optimizer.safetensors"]
    meta = json.loads((ckpt / "config.json").read_text())
    assert meta["model"] == "kuramoto" and meta["config"]["k"] == 16
    model, meta2 = load_checkpoint(ckpt / "model.safetensors")
    assert meta2 == meta and not model.training


def test_corrupt_checkpoints(ckpt, tmp_path):
    bad = _copy(ckpt, tmp_path / "trunc")
    data = (bad / "model.safetensors").read_bytes()
    (bad / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="corrupt"):
        load_checkpoint(bad)
    bad = _copy(ckpt, tmp_path / "json")
    (bad / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_checkpoint(bad)
    bad = _copy(ckpt, tmp_path / "shape")
    meta = json.loads((bad / "config.json").read_text())
    meta["config"]["k"] = 32
    (bad / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="shape"):
        load_checkpoint(bad)
    meta["config"] = dict(meta["config"], k=16, flux=3)
    (bad / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="unknown fields"):
        load_checkpoint(bad)
    meta["config"].pop("flux")
    meta["model"] = "transformer"
    (bad / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="unknown fields"):
        load_checkpoint(bad)
    meta["format"] = "something-else"
    (bad / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="not an oscsim checkpoint"):
        load_checkpoint(bad)
    with pytest.raises(FileNotFoundError, match="neither a bundled name"):
        load_checkpoint("gpt-tiny")


def test_cli_info_and_errors(capsys):
    assert main(["info", "--model", "kuramoto", "--size", "1m", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # from the architecture: token and phase embeddings (V x k each), readout w (k), beta, output bias (V);
    # per layer: ω (k), log τ, three Linear(2k -> k) with bias (gates q, k and the value), SwiGLU FFN 3 k f
    c = out["config"]
    V, k, L, f = c["vocab_size"], c["k"], c["n_layers"], c["ffn_hidden"]
    assert (V, k, L, f) == (256, 128, 4, 368)
    assert out["n_parameters"] == 2 * V * k + k + 1 + V + L * (k + 1 + 3 * (2 * k * k + k) + 3 * k * f)
    assert main(["info", "--model", "gpt"]) == 2
    assert "unknown model 'gpt'" in capsys.readouterr().err
    assert main(["train", "--model", "kuramoto", "--size", "huge", "--out", "x"]) == 2
    assert "unknown size 'huge'" in capsys.readouterr().err


def test_cli_eval_and_bad_data(ckpt, tmp_path, capsys):
    assert main(["eval", str(ckpt), "--json", "--max-windows", "50"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert set(res) >= {"val_bpc", "test_bpc"}
    model, _ = load_checkpoint(ckpt)
    assert res["val_bpc"] == pytest.approx(_bpc_by_hand(model, load_shakespeare().valid, 50), abs=1e-5)
    small = tmp_path / "small.txt"
    small.write_text("to be or not to be " * 3)
    assert main(["train", "--model", "kuramoto", "--corpus", "text", "--data", str(small), "--steps", "1",
                 "--out", str(tmp_path / "o")]) == 2
    assert "seq_len" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff" * 10000)
    assert main(["train", "--model", "kuramoto", "--corpus", "text", "--data", str(bad), "--steps", "1",
                 "--out", str(tmp_path / "o")]) == 2
    assert "not UTF-8" in capsys.readouterr().err
    assert main(["eval", str(tmp_path / "nowhere"), "--json"]) == 2


def _bpc_by_hand(model, data, max_windows):
    """Mean −log₂ p(next byte) over the first non-overlapping windows, written out independently of
    oscsim.train.evaluate_bpc."""
    T = model.config.seq_len
    n = min(max_windows, (len(data) - 1) // T)
    x = data[: n * T].long().view(n, T)
    y = data[1: n * T + 1].long().view(n, T)
    with torch.no_grad():
        logp = torch.log_softmax(model(x).double(), dim=-1)
    return float(-logp.gather(-1, y[..., None]).mean() / torch.log(torch.tensor(2.0, dtype=torch.float64)))


def test_trained_model_beats_the_unigram_entropy(capsys):
    """The bundled model must predict better than byte frequencies alone: its validation BPC below the
    cross-entropy of the training split's unigram distribution on the validation split (computed here)."""
    corp = load_shakespeare()
    counts = torch.bincount(corp.train.long(), minlength=256).double() + 1.0  # add-one: no zero probability
    logp = torch.log2(counts / counts.sum())
    unigram = float(-logp[corp.valid.long()].mean())
    assert 4.0 < unigram < 5.5  # English text: about 4.5 bits per character
    assert main(["eval", "kuramoto-tiny", "--json", "--split", "valid", "--max-windows", "20"]) == 0
    res = json.loads(capsys.readouterr().out)
    model, _ = load_checkpoint("kuramoto-tiny")
    assert res["val_bpc"] == pytest.approx(_bpc_by_hand(model, corp.valid, 20), abs=1e-5)
    assert res["val_bpc"] < unigram - 1.0, (res["val_bpc"], unigram)
