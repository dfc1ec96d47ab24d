"""One contract over every registered device (``parametrize_device``, as Optuna's ``parametrize_sampler``): a tiny
Kuramoto chip on each device registered in :mod:`hw_models.devices` (the built-ins and the toy plug-in of
``tests/toy_device.py``) compiles, runs one window on the backend its device runs on (with that backend's own
contract settings, :data:`test_backend_contract.CASES`), gives each sequence the same outputs whatever its batch,
and is costed with every energy term; and the device answers every question ``mapping`` asks of it (cell areas,
coupler power, drift, which fields act), each with a source."""

from __future__ import annotations

import math
import warnings

import pytest

import toy_device  # noqa: F401  (a plug-in device registers itself on import)
from hw_models.devices import device_names, device_spec
from hw_models.technology import chip_node
from mapping import ChipConfig, compile
from mapping.backends import backend_for
from test_backend_contract import CASES, check_backend_contract

from _chips import seeded_kuramoto

parametrize_device = pytest.mark.parametrize("device", device_names())


@parametrize_device
def test_device_contract(device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # regime and validity warnings of deliberately tiny chips
        chip = compile(seeded_kuramoto(k=4, n_heads=2, n_layers=1, seq_len=4),
                       ChipConfig(device=device, settle_cycles=2.0, steps_per_cycle=4))
        case = CASES[type(backend_for(chip, 0)).__name__]  # the backend's own contract settings
        check_backend_contract(chip, None, None, case.step_overrides, case.run_window, case.batch_atol)
    osc, node = chip.device.oscillator, chip_node(65)
    assert type(osc) is type(device_spec(device).build())
    for what, (value, source) in {"area": osc.area_um2(node, 8), "coupler area": osc.coupler_area_um2(6, node),
                                  "detector area": osc.detector_area_um2(node),
                                  "coupler power": osc.coupler_static_power(True, node)}.items():
        assert math.isfinite(value) and value >= 0 and source, what
    assert osc.drift_model() and isinstance(osc.inert_fields(device), dict)
    assert osc.tap_nodes() >= 1 and math.isfinite(chip.device.diffusion_at(300.0))
