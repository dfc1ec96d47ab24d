"""`--help` wraps only at white space: argparse's formatter (textwrap's default) also breaks after a hyphen, which
cut the bundle list of `oscsim eval --help` into `kuramoto-tiny-` / `hwa-x10` once the list grew."""

from __future__ import annotations

import argparse
import re

import pytest

from oscsim.cli import build_parser, main

NAMES = ["kuramoto-tiny", "kuramoto-tiny-hwa", "kuramoto-tiny-hwa-x10", "ssa1d-tiny", "transformer-tiny",
         "kuramoto-1m", "kuramoto-1m-hwa", "ssa-1m", "transformer-1m"]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[\w-]+", text))


def _broken(text: str) -> list[str]:
    """Lines that end inside a hyphenated word."""
    return re.findall(r"^.*\w-$", text, flags=re.M)


def _help(parser_class, monkeypatch, **kwargs) -> str:
    monkeypatch.setenv("COLUMNS", "40")  # argparse reads the width when it builds a formatter
    p = parser_class(prog="x", description="bundles: " + ", ".join(NAMES), **kwargs)
    p.add_argument("checkpoint", help="checkpoint folder or bundled name (" + ", ".join(NAMES) + ")")
    return p.format_help()


def test_names_stay_whole_at_a_narrow_width(monkeypatch):
    from oscsim.cli import CommandParser

    assert _broken(_help(argparse.ArgumentParser, monkeypatch))  # the failure this guards against
    text = _help(CommandParser, monkeypatch)
    assert not _broken(text) and set(NAMES) <= _words(text), text
    assert max(len(ln) for ln in text.splitlines()) <= 40


def test_a_raw_description_stays_raw_and_arguments_whole(monkeypatch):
    from oscsim.cli import CommandParser, whole_words

    monkeypatch.setenv("COLUMNS", "40")
    p = CommandParser(prog="x", description="line one\n  indented two", formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="(" + ", ".join(NAMES) + ")")
    text = p.format_help()
    assert "line one\n  indented two" in text and not _broken(text) and set(NAMES) <= _words(text)
    assert whole_words(p.formatter_class) is p.formatter_class
    assert issubclass(p.formatter_class, argparse.RawDescriptionHelpFormatter)


def test_eval_help_keeps_every_bundle_name_whole(monkeypatch, capsys):
    """The real subcommand (a sub-parser, built by its plugin's register function) with the 1M names listed."""
    monkeypatch.setattr("oscsim.train.checkpoint.bundled_checkpoints", lambda: sorted(NAMES))
    monkeypatch.setenv("COLUMNS", "50")
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = capsys.readouterr().out
    assert not _broken(text) and set(NAMES) <= _words(text), text


def test_no_subcommand_help_breaks_a_word_at_a_hyphen(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    broken = {}
    for name, p in sub.choices.items():
        parsers = [p] + [q for a in p._actions if isinstance(a, argparse._SubParsersAction) for q in a.choices.values()]
        for q in parsers:
            lines = _broken(q.format_help())
            if lines:
                broken[q.prog] = lines
    assert not broken, broken
