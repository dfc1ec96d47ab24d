"""The house rules of issue 19, checked on the code with `ast` (docs/architecture.md, STYLE principles 16-17).

- No comparison with a chip device name or a layer/chip kind string literal outside `mapping/backends/` (the
  registry decides which backend runs a layer; everything else asks it or reads a table keyed by the name).
- No module in `oscsim/`, `hw_models/` or `mapping/` over 700 lines and no function over 120 lines: no
  allow-list (a long function is split by concept when it grows, docs/architecture.md).
- `oscsim --help` imports no subcommand module and `oscsim simulate --help` only the simulate command's (the
  parsers are light; the time itself is a benchmark figure in BENCHMARKS.md, not a test).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 120

def _vocabulary() -> tuple[set[str], set[str]]:
    """(names nothing outside the backends compares with, the subset hw_models must not compare with either)."""
    from mapping.chip import KINDS, LAYER_KINDS
    from hw_models.devices import BUILTIN_DEVICES
    from mapping.config import SSA_MODES

    chip_names = set(BUILTIN_DEVICES) | set(LAYER_KINDS) | set(KINDS)
    return chip_names | set(SSA_MODES) | {"ring", "stno"}, chip_names


def _literals(node) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def name_comparisons(source: str, vocabulary: set[str]) -> list[tuple[int, str]]:
    """(line, literal) of every comparison (==, !=, in, not in, match, startswith/endswith) with a literal of
    ``vocabulary`` (or a prefix of one, for startswith/endswith) in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                out += [(node.lineno, s) for s in _literals(side) if s in vocabulary]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("startswith", "endswith"):
            for arg in node.args:
                out += [(node.lineno, s) for s in _literals(arg)
                        if any(v.startswith(s) or v.endswith(s) for v in vocabulary)]
        elif isinstance(node, ast.MatchValue):
            out += [(node.lineno, s) for s in _literals(node.value) if s in vocabulary]
    return out


def _sources(pkg: str):
    for path in sorted((ROOT / pkg).rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path.read_text()


def test_no_device_or_kind_name_is_compared_outside_the_backends():
    everything, chip_names = _vocabulary()
    bad = []
    for rel, src in _sources("mapping"):
        if not rel.startswith("mapping/backends/"):
            bad += [f"{rel}:{line}: {lit!r}" for line, lit in name_comparisons(src, everything)]
    for rel, src in _sources("hw_models"):  # hw_models knows its own device kinds ('ring', 'stno'), not the chip's
        bad += [f"{rel}:{line}: {lit!r}" for line, lit in name_comparisons(src, chip_names)]
    assert bad == [], "compare a device or kind name only inside mapping/backends/ (ask the registry):\n" + \
        "\n".join(bad)


def test_the_name_check_can_fail():
    voc = {"ring-circuit", "kuramoto", "ring"}
    src = ('if cfg.device == "ring-circuit": pass\n'
           'x = 1 if kind in ("kuramoto", "ssa") else 2\n'
           'ok = name.startswith("ring")\n'
           'match kind:\n    case "kuramoto": pass\n'
           'table = {"kuramoto": 1}\n'                       # a table keyed by the name is fine
           'msg = "the ring-circuit chip"\n')                # so is a message
    assert sorted(line for line, _ in name_comparisons(src, voc)) == [1, 2, 3, 5]


def sizes(source: str) -> tuple[int, list[tuple[str, int, int]]]:
    """(lines of ``source``, [(function name, first line, lines)] of every function and method in it, nested
    ones included)."""
    return len(source.splitlines()), [
        (n.name, n.lineno, n.end_lineno - n.lineno + 1) for n in ast.walk(ast.parse(source))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


@pytest.mark.parametrize("pkg", ["oscsim", "hw_models", "mapping"])
def test_modules_and_functions_are_short(pkg):
    big, long = [], []
    for rel, src in _sources(pkg):
        n_lines, functions = sizes(src)
        if n_lines > MAX_MODULE_LINES:
            big.append(f"{rel}: {n_lines} lines")
        long += [f"{rel}:{line}: {name}() {n} lines" for name, line, n in functions if n > MAX_FUNCTION_LINES]
    assert big == [] and long == [], "split by concept (docs/architecture.md):\n" + "\n".join(big + long)


def test_the_size_check_can_fail():
    def body(indent):
        return "".join(f"{indent}x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))

    src = f"def ok():\n{body('    ')}\nclass A:\n    def long(self):\n{body(' ' * 8)}        pass\n"
    n_lines, functions = sizes(src)
    assert n_lines == 2 * MAX_FUNCTION_LINES + 3
    assert [(name, n > MAX_FUNCTION_LINES) for name, _, n in functions] == [("ok", False), ("long", True)]


@pytest.mark.parametrize("argv, allowed", [
    (["--help"], set()),
    (["simulate", "--help"], {"mapping", "mapping.cli", "mapping.cli.common", "mapping.cli.simulate",
                              "mapping.preflight"}),  # JSON only: the bundled chip checkpoints for the help
])
def test_help_imports_no_chip_code(argv, allowed):
    """The parser of `oscsim --help` loads no plugin and `simulate --help` only its own light module: no torch,
    numpy, numba, hw_models or the chip code (what keeps them well under a second)."""
    code = ("import sys, contextlib, io\nfrom oscsim.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    try: main({argv!r})\n    except SystemExit: pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('mapping', 'hw_models', 'torch', 'numpy', 'numba', 'scipy', 'pandas', 'matplotlib')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert set(eval(out)) <= allowed, out  # noqa: S307  (our own printout of a list of module names)


def test_every_subcommand_has_a_summary_without_importing_it():
    from importlib.metadata import entry_points

    from oscsim.cli import BENCHMARKS_GROUP, COMMANDS_GROUP, _static_summary

    missing = [ep.name for g in (COMMANDS_GROUP, BENCHMARKS_GROUP) for ep in entry_points(group=g)
               if not _static_summary(ep)]
    assert missing == [], f"register functions without a literal add_parser(help=...): {missing}"
