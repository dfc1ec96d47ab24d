"""docs/architecture.md stays true: every dotted name it writes in backticks imports, and every row of its
"Who imports whom" table is an import that exists (read from the code with the import-graph test's reader)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from test_imports_graph import import_graph

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
_NAME = re.compile(r"`((?:oscsim|hw_models|mapping)(?:\.\w+)*)")


def _resolve(dotted: str):
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError:
            continue
        for attr in parts[k:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_every_name_on_the_page_imports():
    names = sorted(set(_NAME.findall(DOC.read_text())))
    assert len(names) > 40, names
    missing = []
    for n in names:
        try:
            _resolve(n)
        except (ImportError, AttributeError) as exc:
            missing.append(f"{n}: {exc}")
    assert missing == [], "names in docs/architecture.md that do not import:\n" + "\n".join(missing)


def test_every_import_edge_in_the_table_exists():
    text = DOC.read_text().split("## Who imports whom", 1)[1]
    g = import_graph()
    rows = [ln for ln in text.splitlines() if ln.startswith("| `")]
    assert len(rows) >= 10
    wrong = []
    for row in rows:
        importer, imported = (c.strip() for c in row.strip("|").split("|"))
        src = importer.strip("`")
        for dst in re.findall(r"`([\w.]+)`", imported):
            # an edge to a package counts when the importer imports the package or one of its modules
            if not any(t == dst or t.startswith(dst + ".") for t in g.get(src, ())):
                wrong.append(f"{src} -> {dst}")
    assert wrong == [], "edges in docs/architecture.md not in the code:\n" + "\n".join(wrong)
