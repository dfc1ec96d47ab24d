"""pytest plugin: run every collected test REPEAT times in one process (as pytest-repeat's --count does), e.g.
``PYTHONPATH=benchmarks REPEAT=20 .venv/bin/python -m pytest -p repeat_plugin tests/test_mapping_seeds.py -k ...``
(BENCHMARKS.md, "Reproducibility")."""

import os

import pytest


def pytest_generate_tests(metafunc):
    n = int(os.environ.get("REPEAT", "1"))
    if n > 1:
        metafunc.fixturenames.append("_repeat_index")
        metafunc.parametrize("_repeat_index", range(n))


@pytest.fixture
def _repeat_index(request):
    return request.param
