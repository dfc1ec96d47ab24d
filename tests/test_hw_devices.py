"""Device objects: one protocol, serialisation with physical ranges, physical rescaling, coupler abilities."""

import math

import numpy as np
import pytest

import hw_models as hm
from hw_models import (IdealOscillator, RingOscillator, SpinTorqueOscillator, TransconductanceCoupler,
                       cmos_65nm_coupler, cmos_65nm_transconductor)

PROTOCOL = ("frequency", "coupling_function", "diffusion", "power", "energy_per_cycle", "draw_instances",
            "coupler", "with_frequency", "to_dict", "sources")


@pytest.fixture(scope="module")
def ring():
    return hm.make_device("ring", "cmos_65nm")


def test_every_device_implements_the_protocol(ring):
    for dev in (ring, hm.make_device("stno"), hm.make_device("ideal")):
        for m in PROTOCOL:
            assert hasattr(dev, m), (type(dev).__name__, m)
        f = dev.frequency()
        assert f > 0 and math.isclose(dev.energy_per_cycle(), dev.power() / f)
        inst = dev.draw_instances(64, 3)
        assert inst.f0_hz.shape == inst.diffusion_rad2_per_s.shape == inst.power_w.shape == (64,)
        np.testing.assert_array_equal(inst.f0_hz, dev.draw_instances(64, 3).f0_hz)  # same seed, same chip
        # every field of the params and every derived number the mapping reads has a source
        src = dev.sources
        assert {"frequency", "diffusion", "power", "coupling_function"} <= set(src)
        assert all(k in src for k in dev.to_dict()["params"])
    with pytest.raises(NotImplementedError, match="SpinTorqueOscillator"):
        hm.make_device("stno").ppv()


def test_free_functions_delegate_to_the_objects(ring):
    p = ring.params
    assert hm.free_running_frequency(p) == ring.frequency()
    assert hm.phase_diffusion(p) == ring.diffusion()
    np.testing.assert_array_equal(hm.coupling_function(p, cmos_65nm_coupler()).harmonics[:8],
                                  ring.coupling_function(cmos_65nm_coupler(), n_harmonics=8).harmonics)


def test_json_round_trip_and_physical_ranges(ring):
    for dev in (ring, hm.make_device("stno"), hm.make_device("ideal")):
        back = hm.device_from_dict(dev.to_dict())
        assert back == dev and back.frequency() == dev.frequency()
    d = hm.make_device("ideal").to_dict()
    d["params"]["harmonics"] = [[1e6, 0.0]]
    with pytest.raises(ValueError, match=r"device\.params\.harmonics .* outside the physical range"):
        hm.device_from_dict(d)
    d = ring.to_dict()
    d["params"]["c_load_f"] = 1.0
    with pytest.raises(ValueError, match="c_load_f"):
        hm.device_from_dict(d)
    d = ring.to_dict()
    d["params"]["colour"] = 3
    with pytest.raises(ValueError, match="unknown field.*colour"):
        hm.device_from_dict(d)


def test_ring_rescaled_in_frequency_recomputes_everything(ring):
    f0 = ring.frequency()
    r2 = ring.with_frequency(0.5 * f0)
    assert math.isclose(r2.frequency(), 0.5 * f0, rel_tol=1e-6)  # f0 ∝ 1/C exactly (time scaling)
    assert math.isclose(r2.diffusion(), 0.25 * ring.diffusion(), rel_tol=1e-3)  # D ∝ f0²
    assert math.isclose(r2.power(), ring.power(), rel_tol=1e-3)  # same currents, same power
    h1, h2 = (d.coupling_function(cmos_65nm_transconductor()).harmonics[0, 0] for d in (ring, r2))
    assert math.isclose(h2, 0.5 * h1, rel_tol=1e-3)  # H [rad/s] ∝ f0 at a given g_m
    with pytest.raises(ValueError, match="f0_hz .* outside the physical range"):
        ring.with_frequency(1e18)


def test_couplers_know_what_they_can_realise(ring):
    r, ota = cmos_65nm_coupler(), cmos_65nm_transconductor()
    assert r.bidirectional and not r.unilateral and r.can_realise(1, False)
    assert not r.can_realise(-1, False) and not r.can_realise(1, True)
    with pytest.raises(ValueError, match="coupler_x: a ResistiveCoupler cannot realise a one-way"):
        r.require(sign=1, one_way=True, argument="coupler_x")
    with pytest.raises(ValueError, match="negative coupling"):
        r.require(sign=-1)
    assert ota.unilateral and ota.can_realise(-1, True) and ota.swapped().sign == -1
    assert isinstance(ring.coupler(one_way=True, sign=-1), TransconductanceCoupler)
    assert ota.power(ring) > 0 and r.power(ring) > 0
    # the swapped OTA's H from the circuit: harmonics flip, the output-conductance loading does not
    lossy = TransconductanceCoupler(gm_s=50e-6, g_out_s=5e-6)
    hp, hn = ring.coupling_function(lossy), ring.coupling_function(lossy.swapped())
    np.testing.assert_allclose(hn.harmonics, -hp.harmonics, rtol=1e-9, atol=1e-6)
    assert abs(hn.offset_rad_s + hp.offset_rad_s) > 1e-3 * abs(hp.harmonics[0, 0])


def test_per_instance_draw_keeps_d_and_power(ring):
    inst = ring.draw_instances(2000, 0)
    rel = inst.f0_hz / ring.frequency() - 1
    assert abs(np.std(rel) / ring.frequency_spread_rel() - 1) < 0.1
    np.testing.assert_allclose(inst.diffusion_rad2_per_s / ring.diffusion(), (1 + rel) ** 2)
    assert np.std(inst.power_w) > 0
