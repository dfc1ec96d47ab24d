"""The ``oscsim`` command line.

Subcommands are discovered as entry points (groups ``oscsim.commands`` and ``oscsim.benchmarks``) so that
this package, the mathematics, never imports ``hw_models`` or ``mapping`` (imports go
``mapping -> hw_models -> oscsim``). Each entry point names a function ``register(subparsers)`` that adds
one sub-parser and sets ``func``, a callable ``func(args) -> int`` returning the exit status.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from importlib.metadata import entry_points

__all__ = ["build_parser", "main", "int_range", "float_range", "set_threads"]

COMMANDS_GROUP = "oscsim.commands"
BENCHMARKS_GROUP = "oscsim.benchmarks"


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


def _register_all(subparsers: argparse._SubParsersAction, group: str) -> None:
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        try:
            register = ep.load()
            register(subparsers)
        except Exception as exc:  # a broken plugin must not take the whole CLI down
            p = subparsers.add_parser(ep.name, help=f"(unavailable: {type(exc).__name__})")
            p.set_defaults(func=_broken(ep.name, exc))


def _bench(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("bench", help="benchmarks that run the competitors in the same process")
    sub = p.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    _register_all(sub, BENCHMARKS_GROUP)


def build_parser() -> argparse.ArgumentParser:
    from oscsim import __version__

    parser = argparse.ArgumentParser(
        prog="oscsim",
        description="Simulate oscillator-based attention (Kuramoto attention, SSA) on oscillator hardware.",
    )
    parser.add_argument("--version", action="version", version=f"oscsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _bench(sub)
    _register_all(sub, COMMANDS_GROUP)
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
    parser = build_parser()
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
