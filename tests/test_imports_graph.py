"""The import graph of `oscsim`, `hw_models` and `mapping`, read with `ast`: no circles, no upward imports, and
inside `mapping` its rooms (sub-packages and top-level modules) in one order (:data:`MAPPING_ORDER`).

Every ``import`` and ``from ... import`` in every module counts, at module level or inside a function, in
``if TYPE_CHECKING`` blocks too (a circle there is still a circle a reader has to untangle). ``from pkg
import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``. A package's own
``__init__`` re-exporting its submodules is not a circle with them unless a submodule imports the package
back (that is reported). `test_the_checks_can_fail` shows the detectors find what they are meant to.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("oscsim", "hw_models", "mapping")
# layer order: a package may import only packages to its right
LAYERS = {"mapping": 2, "hw_models": 1, "oscsim": 0}
MAPPING_ORDER = ("units", "seeds", "periphery", "config_checks", "config_modes", "config", "model_io", "fidelity",
                 "backends", "chip", "compiler", "chip_io", "energy", "hwa", "simulation", "preflight", "sweep",
                 "design", "cli", "")
"""The rooms of `mapping` (its sub-packages and top-level modules; "" the package's own `__init__`, the public
facade) in import order: a room imports only rooms before it, function-level imports included
(docs/architecture.md, "The order of the rooms"). The backends run a compiled chip and never build one, the
chip asks its backends for its description, the compiler builds chips and asks the backend registry, the energy
pass reads compiled chips."""


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


def _resolve(module: str, is_pkg: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def module_imports(mod: str, source: str, is_pkg: bool, mods) -> set[str]:
    """The in-project modules ``mod`` (whose text is ``source``) imports, anywhere in its body."""
    out = set()
    for node in ast.walk(ast.parse(source, mod)):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(mod, is_pkg, node.level, node.module)
            for a in node.names:
                sub = f"{base}.{a.name}"
                targets.append(sub if sub in mods else base)
        for t in targets:
            # `import a.b.c` imports a, a.b and a.b.c; the deepest in-project one is the edge that matters
            while t and t not in mods:
                t = t.rpartition(".")[0]
            if t and t != mod and t.split(".")[0] in PACKAGES:
                out.add(t)
    return out


@functools.lru_cache(maxsize=1)
def import_graph() -> dict[str, frozenset[str]]:
    """Module -> the set of in-project modules it imports (anywhere in its body)."""
    mods = _modules()
    return {mod: frozenset(module_imports(mod, path.read_text(), path.name == "__init__.py", mods))
            for mod, path in mods.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as a sorted list."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_graph_reads_every_module_and_sees_function_level_imports():
    g = import_graph()
    assert {"oscsim.engine.simulate", "hw_models.ring", "mapping.cli.simulate"} <= set(g)
    assert "oscsim.engine._loop" in g["oscsim.engine.simulate"]
    # a function-level import (mapping's CLI imports its workers lazily) is in the graph
    assert any(t.startswith("mapping.s") for t in g["mapping.cli.simulate"])


def test_no_import_circles():
    g = import_graph()
    # a submodule importing its own package (`from oscsim.engine import X` inside oscsim.engine) closes a
    # loop with the package's re-export of it: that is reported too.
    cycles = _cycles(g)
    assert cycles == [], "import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def _upward(graph, pkg: str) -> list[str]:
    """The imports from modules of ``pkg`` into a package above it in `LAYERS`."""
    return sorted(
        f"{m} imports {t}"
        for m, ts in graph.items()
        if m.split(".")[0] == pkg
        for t in ts
        if LAYERS[t.split(".")[0]] > LAYERS[pkg]
    )


@pytest.mark.parametrize("pkg", PACKAGES)
def test_imports_go_down_the_layers_only(pkg):
    bad = _upward(import_graph(), pkg)
    assert bad == [], "upward imports (mapping -> hw_models -> oscsim only):\n" + "\n".join(bad)


def test_the_checks_can_fail():
    # a synthetic circle and a synthetic upward import are found
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    g = {"oscsim.x": {"hw_models.y"}, "hw_models.y": {"mapping.z", "oscsim.x"}, "mapping.z": {"oscsim.x"}}
    assert _upward(g, "oscsim") == ["oscsim.x imports hw_models.y"]
    assert _upward(g, "hw_models") == ["hw_models.y imports mapping.z"]
    assert _upward(g, "mapping") == []
    assert _resolve("oscsim.nn.ssa_tiled", False, 1, "ssa_functional") == "oscsim.nn.ssa_functional"
    assert _resolve("oscsim.engine", True, 1, "_loop") == "oscsim.engine._loop"
    assert _resolve("oscsim.engine.solvers.rk4", False, 2, "_templates") == "oscsim.engine._templates"


def _room(module: str) -> str:
    """The room of a `mapping` module: ``mapping.<sub-package or module>``, or ``mapping`` for the facade."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _backward(graph) -> list[str]:
    """The imports between rooms of `mapping` that go against :data:`MAPPING_ORDER` (a room unknown to it is
    reported too: a new room takes its place in the order)."""
    rank = {"mapping" + (f".{r}" if r else ""): i for i, r in enumerate(MAPPING_ORDER)}
    bad = []
    for m, ts in graph.items():
        if m.split(".")[0] != "mapping":
            continue
        if _room(m) not in rank:
            bad.append(f"{_room(m)} is not in MAPPING_ORDER")
            continue
        for t in ts:
            later = rank.get(_room(t), len(rank)) > rank[_room(m)]
            if t.split(".")[0] == "mapping" and _room(t) != _room(m) and later:
                bad.append(f"{m} imports {t} ({_room(t)} comes after {_room(m)})")
    return sorted(set(bad))


def test_mapping_rooms_import_in_one_order():
    bad = _backward(import_graph())
    assert bad == [], "imports against the order of mapping's rooms (MAPPING_ORDER):\n" + "\n".join(bad)


def test_the_room_order_check_fails_on_a_planted_back_import():
    """Re-read one backend module with one import of the compiler added (the back-import the order forbids):
    the check names it; and a new room outside the order is reported."""
    mods = _modules()
    mod = "mapping.backends.analog_scores"
    source = mods[mod].read_text() + "\n\ndef _planted():\n    from ..compiler import mismatch  # noqa\n"
    g = dict(import_graph())
    assert _backward(g) == []
    g[mod] = frozenset(module_imports(mod, source, False, mods))
    assert "mapping.compiler.mismatch" in g[mod]
    assert _backward(g) == ["mapping.backends.analog_scores imports mapping.compiler.mismatch (mapping.compiler "
                            "comes after mapping.backends)"]
    assert _backward({"mapping.newroom.x": frozenset()}) == ["mapping.newroom is not in MAPPING_ORDER"]
