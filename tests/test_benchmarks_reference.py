"""BENCHMARKS.md is a reference, not a diary (issue 34 item 7): one section per topic, at most 700 lines, no
heading that names an issue or a phase, and each section's dated figures carry a CPU label the header defines."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
TOPICS = ["Engine", "Kernels", "Devices", "Chip inference", "Energy", "Sweeps and design", "Models",
          "Reproducibility"]


def _headings(text: str) -> list[str]:
    body = re.sub(r"```.*?```", "", text, flags=re.S)  # shell comments inside code blocks are not headings
    return [ln for ln in body.splitlines() if ln.startswith("#")]


def test_benchmarks_is_a_short_reference_by_topic():
    text = PAGE.read_text()
    assert len(text.splitlines()) <= 700, f"BENCHMARKS.md has {len(text.splitlines())} lines (at most 700)"
    sections = [h[3:].strip() for h in _headings(text) if h.startswith("## ")]
    assert sections == TOPICS, sections


def test_no_heading_names_an_issue_or_a_phase():
    bad = [h for h in _headings(PAGE.read_text()) if re.search(r"\b(issue|phase|stop|branch)\b\s*\d*", h, re.I)]
    assert not bad, f"headings name an issue, a phase or a branch: {bad}"


def test_the_headings_check_fails_on_the_diary():
    diary = "# Benchmarks\n\n## Engine speed (issue 22, engine part)\n\n### Chip simulation speed, phase 5\n"
    assert [h for h in _headings(diary) if re.search(r"\b(issue|phase)\b", h, re.I)]


def test_every_cpu_label_used_is_defined():
    text = PAGE.read_text()
    defined = set(re.findall(r"^\| \*\*(Z\d)\*\* \|", text, flags=re.M))
    used = set(re.findall(r"\bZ\d\b", text))
    assert defined and used <= defined, used - defined
