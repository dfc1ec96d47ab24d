"""Shared pytest set-up: numerical problems in NumPy are errors, not silent NaNs.

Every test runs under ``np.errstate(divide="raise", over="raise", invalid="raise")`` (underflow stays
allowed), and RuntimeWarnings are turned into errors. A test that studies non-finite values on purpose
opts out with ``@pytest.mark.allow_fp_errors``.
"""

import warnings

import numpy as np
import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "allow_fp_errors: let NumPy produce inf/NaN without raising")


@pytest.fixture(autouse=True)
def _numpy_fp_errors_are_errors(request):
    if request.node.get_closest_marker("allow_fp_errors"):
        yield
        return
    with np.errstate(divide="raise", over="raise", invalid="raise"), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield
