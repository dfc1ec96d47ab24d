"""The measured coupled-ring chip of Moy et al. (Nature Electronics 5, 310 (2022)) against the tool's ring model
(benchmarks/measured_chip.py; the table and its reading are in docs/devices.md)."""

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "measured_chip", Path(__file__).resolve().parent.parent / "benchmarks" / "measured_chip.py")
mc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mc)


@pytest.fixture(scope="module")
def tool():
    return mc.predictions()


def test_settling_within_the_measured_bound(tool):
    """A coupled pair is the fastest case of the 1,968-node graph, so the tool's pair settling must lie under the
    measured < 50 cycles, and above one cycle (a phase model's lock is not instantaneous)."""
    assert 1.0 < tool["settle_cycles"] <= mc.measured()["settle_cycles_max"]


def test_coupling_resolution_is_expressible(tool):
    """The smallest signed coupler DAC of the tool that holds the measured five levels: 3 bits, 7 levels."""
    assert tool["coupling_bits"] == 3 and tool["coupling_levels"] >= mc.measured()["coupling_levels"]


def test_power_per_oscillator_discrepancy_is_the_documented_one(tool):
    """Not an agreement: the tool's card (20 fF stage load, sized for the attention array's fan-in-127 couplers,
    at 1.80 GHz) spends 17x the measured chip's power per node. The measurement includes every coupler and the
    readout, so the tool is above it for any frequency above about 104 MHz (the measured power over the tool's
    205 fJ per cycle); the bound [1, 30] pins that reading (docs/devices.md) so a change of the card is seen."""
    ratio = tool["p_node_w"] / mc.measured()["p_node_w"]
    assert 1.0 < ratio < 30.0
    assert tool["f0_hz"] == pytest.approx(1.80e9, rel=0.02)
