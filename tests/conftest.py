"""Shared pytest set-up: numerical problems in NumPy are errors, not silent NaNs.

Every test runs under ``np.errstate(divide="raise", over="raise", invalid="raise")`` (underflow stays
allowed), and RuntimeWarnings are turned into errors. A test that studies non-finite values on purpose
opts out with ``@pytest.mark.allow_fp_errors``.
"""

import os
import warnings

import numpy as np
import pytest
from hypothesis import settings

# Property tests: the default suite replays the same examples every run (one seed, one answer: a CI result does
# not depend on luck, and no example database carries state between runs); HYPOTHESIS_PROFILE=explore searches
# afresh with a database, to hunt for new counterexamples outside CI.
settings.register_profile("default-suite", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default-suite"))


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


@pytest.fixture(scope="session")
def circuit_dev():
    """The ring-circuit chip's device (the 65 nm ring preset at 300 K), shared by the circuit-rung tests."""
    from hw_models.coupled_rings import circuit_device

    return circuit_device(None, 300.0)
