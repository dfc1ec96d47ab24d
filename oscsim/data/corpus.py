"""Byte-level corpora: the bundled Shakespeare texts, enwik8 from a user file, any UTF-8 text file.

Every corpus is a sequence of bytes (vocabulary of 256); bits per character (BPC) is the mean cross-entropy
in bits per byte, which equals bits per character for the ASCII Shakespeare texts.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import torch

__all__ = ["Corpus", "CORPORA", "VOCAB_SIZE", "load_corpus", "load_shakespeare", "load_enwik8", "load_text",
           "sample_batch", "eval_windows", "encode", "decode"]

VOCAB_SIZE = 256
CORPORA = ("shakespeare", "enwik8", "text")
ENWIK8_SPLIT = (90_000_000, 5_000_000, 5_000_000)


@dataclass(frozen=True)
class Corpus:
    """Three byte splits of one corpus.

    Attributes
    ----------
    name : str
        ``"shakespeare"``, ``"enwik8"`` or ``"text"``.
    train, valid, test : torch.Tensor
        (n,) uint8 byte sequences.
    """

    name: str
    train: torch.Tensor
    valid: torch.Tensor
    test: torch.Tensor

    def split(self, name: str) -> torch.Tensor:
        if name not in ("train", "valid", "test"):
            raise ValueError(f"split must be one of 'train', 'valid', 'test', got {name!r}")
        return getattr(self, name)

    def check_length(self, seq_len: int) -> None:
        """Refuse splits too short for one window of ``seq_len`` inputs plus one target."""
        for s in ("train", "valid", "test"):
            n = len(self.split(s))
            if n < seq_len + 1:
                raise ValueError(f"corpus {self.name!r}: the {s} split has {n} bytes, fewer than seq_len + 1 = "
                                 f"{seq_len + 1}; use a larger data file or a model size with a shorter seq_len")


def _as_tensor(b: bytes) -> torch.Tensor:
    return torch.from_numpy(np.frombuffer(b, dtype=np.uint8).copy())


def load_shakespeare() -> Corpus:
    """The bundled Shakespeare corpus (42 works, 5.06 MB), split by whole works.

    Validation: *Julius Caesar* and *Macbeth*; test: *The Tempest* and *Twelfth Night*; training: the other
    38 works (see ``oscsim/data/shakespeare.json``). Works are joined in sorted file-name order with one blank
    line between them; the SHA-256 of the whole is checked on load.
    """
    root = resources.files("oscsim.data")
    index = json.loads(root.joinpath("shakespeare.json").read_text())
    with root.joinpath("shakespeare.txt.gz").open("rb") as fh:
        blob = gzip.decompress(fh.read())
    if hashlib.sha256(blob).hexdigest() != index["sha256"]:
        raise ValueError("the bundled Shakespeare corpus is damaged (SHA-256 mismatch); reinstall oscsim")
    parts: dict[str, list[bytes]] = {"train": [], "valid": [], "test": []}
    for w in index["works"]:
        parts[w["split"]].append(blob[w["start"]:w["stop"]])
    return Corpus("shakespeare", *(_as_tensor(b"".join(parts[s])) for s in ("train", "valid", "test")))


def _read(path: str | Path) -> bytes:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file {str(path)!r} does not exist (give it with --data PATH)")
    data = path.read_bytes()
    if not data:
        raise ValueError(f"data file {str(path)!r} is empty")
    return data


def load_enwik8(path: str | Path) -> Corpus:
    """enwik8 from a user-supplied file with the standard split.

    The first 90,000,000 bytes train, the next 5,000,000 validate, the next 5,000,000 test. The file must
    hold at least 100,000,000 bytes (the real enwik8 holds exactly that); bytes are used as they are.
    """
    data = _read(path)
    need = sum(ENWIK8_SPLIT)
    if len(data) < need:
        raise ValueError(f"enwik8 file {str(path)!r} has {len(data)} bytes; the standard 90M/5M/5M split needs "
                         f"{need}. For another text file use --corpus text")
    a, b, _ = ENWIK8_SPLIT
    return Corpus("enwik8", _as_tensor(data[:a]), _as_tensor(data[a:a + b]), _as_tensor(data[a + b:need]))


def load_text(path: str | Path) -> Corpus:
    """Any UTF-8 text file, split 90 % / 5 % / 5 % by bytes (first / middle / last)."""
    data = _read(path)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"data file {str(path)!r} is not UTF-8 text: invalid byte at offset {exc.start}") from None
    if not data.strip():
        raise ValueError(f"data file {str(path)!r} holds only white space")
    n = len(data)
    a, b = int(0.9 * n), int(0.95 * n)
    return Corpus("text", _as_tensor(data[:a]), _as_tensor(data[a:b]), _as_tensor(data[b:]))


def load_corpus(name: str, path: str | Path | None = None) -> Corpus:
    """Load a corpus by name: ``"shakespeare"`` (bundled), ``"enwik8"`` or ``"text"`` (need ``path``)."""
    if name == "shakespeare":
        if path is not None:
            raise ValueError(f"--data {str(path)!r} is only read with --corpus enwik8 or --corpus text; the "
                             f"shakespeare corpus is bundled (drop --data or choose the corpus)")
        return load_shakespeare()
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}; valid: {', '.join(CORPORA)}")
    if path is None:
        raise ValueError(f"corpus {name!r} needs a data file: give --data PATH")
    return load_enwik8(path) if name == "enwik8" else load_text(path)


def sample_batch(data: torch.Tensor, batch_size: int, seq_len: int, generator: torch.Generator):
    """Random windows: inputs (B, T) int64 and next-byte targets (B, T) int64."""
    if len(data) < seq_len + 1:
        raise ValueError(f"split of {len(data)} bytes is shorter than seq_len + 1 = {seq_len + 1}")
    starts = torch.randint(0, len(data) - seq_len, (batch_size,), generator=generator)
    idx = starts[:, None] + torch.arange(seq_len + 1)[None, :]
    chunk = data[idx].long()
    return chunk[:, :-1], chunk[:, 1:]


def eval_windows(data: torch.Tensor, seq_len: int, max_windows: int | None = None):
    """Non-overlapping windows covering the split: inputs (W, T) and targets (W, T), int64.

    The last partial window is dropped, so at most ``seq_len`` bytes of a split go unscored.
    """
    if len(data) < seq_len + 1:
        raise ValueError(f"split of {len(data)} bytes is shorter than seq_len + 1 = {seq_len + 1}")
    w = (len(data) - 1) // seq_len
    if max_windows is not None:
        w = min(w, max_windows)
    x = data[: w * seq_len].long().view(w, seq_len)
    y = data[1: w * seq_len + 1].long().view(w, seq_len)
    return x, y


def encode(text, seq_len: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens and next-byte targets of a text, as the models and :func:`mapping.run` take them.

    The vocabulary is the 256 byte values: a ``str`` is encoded as UTF-8 (a non-ASCII character becomes two
    to four tokens), ``bytes``/``bytearray`` are taken as they are.

    Parameters
    ----------
    text : str, bytes or bytearray
        At least two bytes (one input and its target).
    seq_len : int, optional
        Cut into non-overlapping windows of ``seq_len`` tokens, as :func:`eval_windows` (the last partial window
        is dropped); default: one window of all bytes but the last.

    Returns
    -------
    tokens, targets : torch.Tensor
        (W, T) int64 each; ``targets[w, t]`` is the byte after ``tokens[w, t]``.

    Examples
    --------
    >>> x, y = encode("To be, or not to be")
    >>> x.shape, bytes(y[0, :4].tolist())
    (torch.Size([1, 18]), b'o be')
    """
    if isinstance(text, str):
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as exc:  # lone surrogates: no byte form
            raise ValueError(f"encode: the text has no UTF-8 form at character {exc.start} "
                             f"({text[exc.start:exc.end]!r}: {exc.reason})") from None
    elif isinstance(text, (bytes, bytearray, memoryview)):
        data = bytes(text)
    else:
        raise TypeError(f"encode: text must be a str (encoded as UTF-8) or bytes, got {type(text).__name__}; "
                        "token ids are already the models' input")
    if len(data) < 2:
        raise ValueError(f"encode: the text has {len(data)} byte(s); at least 2 are needed (an input and its target)")
    b = _as_tensor(data)
    if seq_len is None:
        return b[:-1].long()[None, :], b[1:].long()[None, :]
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 1:
        raise ValueError(f"encode: seq_len must be an integer >= 1 or None, got {seq_len!r}")
    if len(data) < seq_len + 1:
        raise ValueError(f"encode: the text has {len(data)} bytes, fewer than seq_len + 1 = {seq_len + 1}")
    return eval_windows(b, seq_len)


def decode(tokens) -> str:
    """The text of byte tokens (any shape; read in order), UTF-8 with undecodable bytes shown as U+FFFD."""
    t = torch.as_tensor(tokens).reshape(-1)
    if t.numel() and (int(t.min()) < 0 or int(t.max()) > VOCAB_SIZE - 1):
        raise ValueError(f"decode: tokens must be byte values in [0, {VOCAB_SIZE - 1}], got values in "
                         f"[{int(t.min())}, {int(t.max())}]")
    return bytes(t.tolist()).decode("utf-8", errors="replace")
