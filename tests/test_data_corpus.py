"""Corpora: the bundled Shakespeare split, enwik8 split sizes, bad data files."""

import gzip

import pytest
import torch

from oscsim.data import eval_windows, load_corpus, load_enwik8, load_shakespeare, load_text, sample_batch


def test_shakespeare_bundled_split():
    c = load_shakespeare()
    n = len(c.train) + len(c.valid) + len(c.test)
    assert n == 5_057_281
    assert 0.04 < len(c.valid) / n < 0.05 and 0.04 < len(c.test) / n < 0.05
    assert bytes(c.valid[:13].tolist()) == b"JULIUS CAESAR"
    assert bytes(c.test[:11].tolist()) == b"THE TEMPEST"
    assert int(c.train.max()) < 128  # ASCII


def test_package_data_small():
    from importlib import resources

    path = str(resources.files("oscsim.data").joinpath("shakespeare.txt.gz"))
    import os

    assert os.path.getsize(path) < 2_500_000


def test_text_file_split(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("héllo wörld " * 1000, encoding="utf-8")
    c = load_text(p)
    assert len(c.train) + len(c.valid) + len(c.test) == len("héllo wörld ".encode()) * 1000
    c.check_length(64)


def test_enwik8_needs_standard_size(tmp_path):
    p = tmp_path / "enwik8"
    p.write_bytes(b"x" * 1000)
    with pytest.raises(ValueError, match="90M/5M/5M"):
        load_enwik8(p)


def test_enwik8_split(tmp_path):
    p = tmp_path / "enwik8"
    with open(p, "wb") as fh:  # sparse-ish: 100 MB of one repeated block
        block = bytes(range(256)) * 4096
        for _ in range(100_000_000 // len(block) + 1):
            fh.write(block)
    c = load_enwik8(p)
    assert (len(c.train), len(c.valid), len(c.test)) == (90_000_000, 5_000_000, 5_000_000)
    assert int(c.valid[0]) == 90_000_000 % 256


def test_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_corpus("text", tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        load_corpus("text", empty)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"abc\xff\xfedef")
    with pytest.raises(ValueError, match="not UTF-8.*offset 3"):
        load_corpus("text", bad)
    small = tmp_path / "small.txt"
    small.write_text("tiny text " * 10)
    with pytest.raises(ValueError, match="shorter --seq-len|seq_len"):
        load_corpus("text", small).check_length(128)
    with pytest.raises(ValueError, match="needs a data file"):
        load_corpus("enwik8")
    with pytest.raises(ValueError, match="unknown corpus"):
        load_corpus("wiki103")


def test_batches_deterministic():
    data = torch.arange(1000) % 256
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    x1, y1 = sample_batch(data.to(torch.uint8), 4, 16, g1)
    x2, _ = sample_batch(data.to(torch.uint8), 4, 16, g2)
    assert torch.equal(x1, x2) and torch.equal(x1[:, 1:], y1[:, :-1])
    x, y = eval_windows(data.to(torch.uint8), 100)
    assert x.shape == (9, 100) and torch.equal(x.flatten()[1:], y.flatten()[:-1])


def test_encode_gives_tokens_and_next_byte_targets():
    from oscsim.data import decode, encode

    x, y = encode("To be, or not to be")
    assert x.dtype == y.dtype == torch.int64 and x.shape == y.shape == (1, 18)
    assert decode(x) == "To be, or not to b" and decode(y) == "o be, or not to be"
    # UTF-8: a non-ASCII character is several tokens; bytes are taken as they are
    x, y = encode("né")
    assert x.tolist() == [[ord("n"), 0xC3]] and y.tolist() == [[0xC3, 0xA9]]
    assert encode(b"\x00\xff\x10")[0].tolist() == [[0, 255]]
    # windows as eval_windows cuts a split
    x, y = encode("abcdefghij", seq_len=4)
    assert x.shape == (2, 4) and decode(x[1]) == "efgh" and decode(y[1]) == "fghi"
    # what a model takes
    from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM

    torch.manual_seed(0)
    assert KuramotoLM(KuramotoConfig(k=8, n_heads=2, n_layers=1, seq_len=8))(x).shape == (2, 4, 256)


@pytest.mark.parametrize("bad, err, match", [
    ([72, 105], TypeError, "str .* or bytes, got list"), (torch.tensor([1, 2]), TypeError, "got Tensor"),
    ("\ud800x", ValueError, "no UTF-8 form at character 0"), ("a", ValueError, "at least 2"),
    (b"", ValueError, "has 0 byte"), ("abc", ValueError, "seq_len must be"), ("abc", ValueError, "fewer than")])
def test_encode_refuses_what_is_not_text(bad, err, match):
    from oscsim.data import encode

    seq_len = {"seq_len must be": 0, "fewer than": 5}.get(match)
    with pytest.raises(err, match=match):
        encode(bad, seq_len=seq_len)


def test_decode_refuses_non_byte_tokens():
    from oscsim.data import decode

    with pytest.raises(ValueError, match=r"\[0, 255\], got values in \[-1, 300\]"):
        decode(torch.tensor([-1, 300]))
