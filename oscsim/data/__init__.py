"""Byte-level corpora: the bundled Shakespeare texts, an enwik8 loader, any UTF-8 text file; `encode` turns
your own text into tokens and targets (`decode` back)."""

from oscsim.data.corpus import (CORPORA, VOCAB_SIZE, Corpus, decode, encode, eval_windows, load_corpus,
                                load_enwik8, load_shakespeare, load_text, sample_batch)

__all__ = ["CORPORA", "VOCAB_SIZE", "Corpus", "decode", "encode", "eval_windows", "load_corpus", "load_enwik8",
           "load_shakespeare", "load_text", "sample_batch"]
