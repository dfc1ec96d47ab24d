"""The ``oscsim`` command line.

Subcommands are discovered as entry points (groups ``oscsim.commands`` and ``oscsim.benchmarks``) so that
this package, the mathematics, never imports ``hw_models`` or ``mapping`` (imports go
``mapping -> hw_models -> oscsim``). Each entry point names a function ``register(subparsers)`` that adds
one sub-parser and sets ``func``, a callable ``func(args) -> int`` returning the exit status.

Only the subcommand being run is imported (:func:`build_parser` with ``argv``): the others are listed with the
one-line ``help=`` their register function passes to ``add_parser``, read from its source without importing
it (:func:`_static_summary`), so ``oscsim --help`` imports no plugin and ``oscsim simulate --help`` only the
simulate command's module.
"""

from __future__ import annotations

import argparse
import ast
import math
import re
import sys
from importlib.metadata import entry_points

__all__ = ["build_parser", "main", "int_range", "float_range", "set_threads", "CommandParser", "whole_words"]

COMMANDS_GROUP = "oscsim.commands"
BENCHMARKS_GROUP = "oscsim.benchmarks"


class _WholeWords:
    """Wrap help text only at white space: textwrap's default also breaks after a hyphen, which cuts a bundle
    name such as ``kuramoto-tiny-hwa-x10`` into ``kuramoto-tiny-`` / ``hwa-x10`` (and a test, a reader or a
    ``grep`` of ``--help`` then misses it). A raw formatter keeps its raw parts raw."""

    def _split_lines(self, text, width):
        if isinstance(self, argparse.RawTextHelpFormatter):
            return super()._split_lines(text, width)
        import textwrap

        return textwrap.wrap(self._whitespace_matcher.sub(" ", text).strip(), width, break_on_hyphens=False)

    def _fill_text(self, text, width, indent):
        if isinstance(self, argparse.RawDescriptionHelpFormatter):
            return super()._fill_text(text, width, indent)
        import textwrap

        return textwrap.fill(self._whitespace_matcher.sub(" ", text).strip(), width, initial_indent=indent,
                             subsequent_indent=indent, break_on_hyphens=False)


def whole_words(formatter_class: type = argparse.HelpFormatter) -> type:
    """``formatter_class`` made to wrap help only at white space, never at a hyphen inside a word."""
    if issubclass(formatter_class, _WholeWords):
        return formatter_class
    return type(f"WholeWords{formatter_class.__name__}", (_WholeWords, formatter_class), {})


class CommandParser(argparse.ArgumentParser):
    """The parser of ``oscsim`` and, through ``add_subparsers`` (whose parsers are of the parent's class), of
    every subcommand: its help formatter, the given one or argparse's default, never breaks a word at a hyphen."""

    def __init__(self, *args, formatter_class: type = argparse.HelpFormatter, **kwargs):
        super().__init__(*args, formatter_class=whole_words(formatter_class), **kwargs)


def did_you_mean(name: str, names) -> str:
    """``"; did you mean 'x'?"`` naming the closest of ``names`` to a misspelt ``name`` (difflib), or ""."""
    import difflib

    close = difflib.get_close_matches(str(name), list(names), n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def plain_help(doc: str) -> str:
    """A module docstring (reST, numpydoc) as ``--help`` text: ``literal`` -> literal, :role:`x` -> x, `x` -> x,
    ``.. directive::`` lines dropped. Use with ``argparse.RawDescriptionHelpFormatter`` to keep its layout."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", doc or "")
    text = re.sub(r"``([^`]+)``", r"\1", text)
    text = re.sub(r"`([^`]+)`_?", r"\1", text)
    return "\n".join(ln for ln in text.strip().splitlines() if not ln.lstrip().startswith(".. "))


class CommandError(Exception):
    """An error the user can act on; printed without a traceback, exit status 2."""


def int_range(lo: int | None = None, hi: int | None = None):
    """An argparse ``type`` accepting integers in [lo, hi] (None: unbounded); the error names the range."""
    rng = _describe(lo, hi, "an integer")

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {rng}, got {text!r}") from None
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"must be {rng}, got {v}")
        return v

    parse.__name__ = "int"
    return parse


def float_range(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False):
    """An argparse ``type`` accepting finite floats in [lo, hi] ((lo, hi] with ``lo_open``)."""
    rng = _describe(lo, hi, "a finite number", lo_open=lo_open)

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {rng}, got {text!r}") from None
        bad_lo = lo is not None and (v <= lo if lo_open else v < lo)
        if not math.isfinite(v) or bad_lo or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"must be {rng}, got {text}")
        return v

    parse.__name__ = "float"
    return parse


def set_threads(threads: int | None) -> None:
    """``torch.set_num_threads(threads)`` for the commands' ``--threads`` (None: leave torch's choice)."""
    if threads is None:
        return
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"--threads must be an integer >= 1, got {threads!r}")
    import torch

    torch.set_num_threads(threads)


def _describe(lo, hi, what: str, *, lo_open: bool = False) -> str:
    if lo is not None and hi is not None:
        return f"{what} in {'(' if lo_open else '['}{lo}, {hi}]"
    if lo is not None:
        return f"{what} {'>' if lo_open else '>='} {lo}"
    if hi is not None:
        return f"{what} <= {hi}"
    return what


_STATED_DEFAULT = re.compile(r"\(default[: ]")


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """Append "(default: %(default)s)" to every optional argument's help that does not show its default yet,
    recursively over sub-parsers, so ``--help`` always states the value an option takes when not given.

    A help may state its default in words instead, "(default: the ring preset)", where the value is None or
    False and the words say what that means; it is then not stated a second time."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _show_defaults(sub)
            continue
        if not action.option_strings or action.help in (None, argparse.SUPPRESS) or action.required:
            continue
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        if "%(default)" not in action.help and not _STATED_DEFAULT.search(action.help):
            action.help = f"{action.help} (default: %(default)s)"


def _broken(name: str, exc: BaseException):
    def run(args: argparse.Namespace) -> int:
        print(f"oscsim {name}: this subcommand could not be loaded: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 3

    return run


def _static_summary(ep) -> str | None:
    """The literal ``help=`` of the ``add_parser`` call in an entry point's register function, read from the
    module's source without importing it (None when it is not a string literal or the source is not found)."""
    import importlib.util

    module, _, attr = ep.value.partition(":")
    top, *rest = module.split(".")
    try:  # find_spec of a top-level package does not import it; its submodules are located on its path
        spec = importlib.util.find_spec(top)
        if spec is None or spec.origin is None:
            return None
        from pathlib import Path

        base = Path(spec.origin).parent
        path = base.joinpath(*rest).with_suffix(".py") if rest else Path(spec.origin)
        if not path.is_file():
            path = base.joinpath(*rest, "__init__.py")
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError, ImportError):
        return None
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name == attr.strip():
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_parser":
                    for kw in node.keywords:
                        if kw.arg == "help" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                            return kw.value.value
    return None


def _chosen(argv, names) -> str | None:
    """The subcommand named in ``argv`` (the first token that is not an option), if it is one of ``names``."""
    for tok in argv:
        if not tok.startswith("-"):
            return tok if tok in names else None
    return None


def _register_all(subparsers: argparse._SubParsersAction, group: str, argv=None) -> None:
    """Register the entry points of ``group``: all of them (``argv`` None), or only the one ``argv`` runs, the
    others as stubs that carry their summary (so ``--help`` lists them and a typo is still refused)."""
    eps = sorted(entry_points(group=group), key=lambda e: e.name)
    chosen = None if argv is None else _chosen(argv, {ep.name for ep in eps})
    for ep in eps:
        if argv is not None and ep.name != chosen:
            subparsers.add_parser(ep.name, help=_static_summary(ep) or f"run `oscsim {ep.name} --help`",
                                  add_help=False)
            continue
        try:
            register = ep.load()
            register(subparsers)
        except Exception as exc:  # a broken plugin must not take the whole CLI down
            p = subparsers.add_parser(ep.name, help=f"(unavailable: {type(exc).__name__})")
            p.set_defaults(func=_broken(ep.name, exc))


def _bench(subparsers: argparse._SubParsersAction, argv=None) -> None:
    p = subparsers.add_parser("bench", help="benchmarks that run the competitors in the same process")
    sub = p.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    if argv is not None and _chosen(argv, {"bench"}) != "bench":
        return  # only `oscsim bench ...` needs the benchmarks' parsers
    _register_all(sub, BENCHMARKS_GROUP, None if argv is None else _after(argv, "bench"))


def _after(argv, name: str) -> list:
    """The tokens of ``argv`` after the first occurrence of the subcommand ``name``."""
    return list(argv[argv.index(name) + 1:]) if name in argv else []


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The ``oscsim`` parser. With ``argv``, only the subcommand it names is loaded (see the module notes);
    without, every subcommand is (for tests and documentation tools)."""
    from oscsim import __version__

    parser = CommandParser(
        prog="oscsim",
        description="Simulate oscillator-based attention (Kuramoto attention, SSA) on oscillator hardware.",
    )
    parser.add_argument("--version", action="version", version=f"oscsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _bench(sub, argv)
    _register_all(sub, COMMANDS_GROUP, argv)
    _show_defaults(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one ``oscsim`` command; returns the exit status.

    Output piped into a reader that stops early (``oscsim ... | head``) ends the command quietly with status
    141 (128 + SIGPIPE, as a Unix tool killed by the signal), instead of a BrokenPipeError traceback.
    """
    try:
        try:
            return _run(argv)
        finally:  # also after argparse's exit (--help): flush here, not at interpreter exit, to catch a closed pipe
            sys.stdout.flush()
    except BrokenPipeError:
        _stdout_to_devnull()
        return 141


def _run(argv):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CommandError as exc:
        print(f"oscsim {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError, TypeError) as exc:
        # Validation errors raised by configs and loaders are written for users: show them plainly.
        print(f"oscsim {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # main() ends these quietly (status 141)
        raise
    except OSError as exc:  # a read-only or full disk, a folder where a file belongs: the file and the cause
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"oscsim {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"oscsim {args.command}: interrupted", file=sys.stderr)
        return 130


def _stdout_to_devnull() -> None:
    """Point file descriptor 1 at /dev/null: Python flushes stdout again at exit, which would raise once more
    on the closed pipe (the recipe of the ``signal`` module's documentation, "Note on SIGPIPE")."""
    import os

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a replaced stdout (tests, notebooks): nothing to redirect
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
