"""Packed phase networks: packing once, swapping per-group arrays, the same numbers as a fresh model."""

import numpy as np
import pytest

from oscsim.engine import (
    ExternalDrive, Heun, PackedPhaseNetwork, PhaseNetwork, SaveEvery, StochasticHeun, SubharmonicInjection, simulate,
)

G, N = 3, 10


def _arrays(seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((G, N)), rng.standard_normal((G, N, N)) / N, rng.uniform(0.1, 0.3, (G, N)),
            rng.uniform(0, 2 * np.pi, (G, N)))


# every structure the kernels distinguish: pure sine, harmonics, lags (with harmonics), injection and drive
STRUCTURES = {
    "sine": {},
    "harmonics": {"harmonics": [[1.0, 0.0], [0.2, -0.1], [0.0, 0.05]]},
    "lags": {"harmonics": [[1.0, 0.1], [0.3, 0.0]], "phase_lag": 0.3 * np.ones((N, N))},
    "terms": {"injection": SubharmonicInjection(0.4, order=2, phase=0.1), "drive": ExternalDrive(0.2, 1.3)},
}


def _run(model, y0, seed=4):
    return simulate(model, StochasticHeun(), 0.0, 0.5, 0.01, y0, save=SaveEvery(10), seed=seed)


@pytest.mark.parametrize("structure", sorted(STRUCTURES))
def test_packed_with_new_arrays_equals_a_fresh_network_bit_for_bit(structure):
    """What a chip layer does per window: pack once, run with new omega / coupling / sigma."""
    kw = STRUCTURES[structure]
    om, C, sig, y0 = _arrays(1)
    packed = PhaseNetwork(om, C, sigma=sig, **kw).pack()
    assert isinstance(packed, PackedPhaseNetwork)
    assert packed.kernel == ("sine" if structure in ("sine", "terms") else "general")
    np.testing.assert_array_equal(_run(packed, y0).ys, _run(PhaseNetwork(om, C, sigma=sig, **kw), y0).ys)
    om2, C2, sig2, y02 = _arrays(2)
    fresh = _run(PhaseNetwork(om2, C2, sigma=sig2, **kw), y02)
    swapped = _run(packed.with_arrays(omega=om2, coupling=C2, sigma=sig2), y02)
    np.testing.assert_array_equal(swapped.ys, fresh.ys)
    assert swapped.stats["model"] == "PackedPhaseNetwork" and fresh.stats["model"] == "PhaseNetwork"
    # one array at a time (omega alone keeps the packed coupling; coupling alone re-packs it)
    only_om = _run(packed.with_arrays(omega=om2), y0)
    np.testing.assert_array_equal(only_om.ys, _run(PhaseNetwork(om2, C, sigma=sig, **kw), y0).ys)
    only_c = _run(packed.with_arrays(coupling=C2), y0)
    np.testing.assert_array_equal(only_c.ys, _run(PhaseNetwork(om, C2, sigma=sig, **kw), y0).ys)


def test_pack_is_kept_and_arrays_are_referenced_not_copied():
    om, C, sig, y0 = _arrays(3)
    net = PhaseNetwork(om, C, sigma=sig)
    assert net.pack() is net.pack()
    C2 = np.ascontiguousarray(C[::-1])
    p2 = net.pack().with_arrays(coupling=C2)
    assert np.shares_memory(p2.coupling, C2) and not p2.coupling.flags.writeable
    assert C2.flags.writeable  # the caller's array is untouched
    p3 = net.pack().with_arrays(coupling=C2.astype(np.float32))  # another dtype: converted (a copy)
    assert p3.coupling.dtype == np.float64 and not np.shares_memory(p3.coupling, C2)
    # shared (N, N) coupling with per-group omega: G follows the per-group arrays
    p4 = net.pack().with_arrays(coupling=C[0])
    assert p4.n_groups == G and p4.coupling.shape == (1, N, N)
    with pytest.raises(AttributeError, match="immutable"):
        p4.omega = om


def test_with_arrays_checks_what_is_new():
    om, C, sig, _ = _arrays(5)
    packed = PhaseNetwork(om, C, sigma=sig).pack()
    with pytest.raises(ValueError, match="coupling: shape .* does not match N"):
        packed.with_arrays(coupling=np.zeros((G, N + 1, N + 1)))
    with pytest.raises(ValueError, match="coupling: has 2 groups but omega has 3"):
        packed.with_arrays(coupling=np.zeros((2, N, N)))
    bad = C.copy()
    bad[1, 2, 3] = np.nan
    with pytest.raises(ValueError, match=r"coupling: contains NaN or inf \(first at index \(1, 2, 3\)\)"):
        packed.with_arrays(coupling=bad)
    with pytest.raises(ValueError, match="sigma: must be >= 0"):
        packed.with_arrays(sigma=-0.1)
    with pytest.raises(ValueError, match="omega: must have shape"):
        packed.with_arrays(omega=1.0)
    # a per-group term fixes G: new arrays must agree with it
    inj = SubharmonicInjection(np.ones((G, N)))
    p = PhaseNetwork(om, C, injection=inj).pack()
    with pytest.raises(ValueError, match="has 3 groups"):
        p.with_arrays(omega=np.zeros((2, N)), coupling=np.zeros((2, N, N)))
    # a deterministic packed model refuses nothing it did before, and a noisy one still needs a seed
    det = PhaseNetwork(om, C).pack()
    assert not det.is_stochastic and det.with_arrays(sigma=0.2).is_stochastic
    with pytest.raises(ValueError, match="seed"):
        simulate(det.with_arrays(sigma=0.2), StochasticHeun(), 0.0, 0.1, 0.01, np.zeros((G, N)))
    simulate(det, Heun(), 0.0, 0.1, 0.01, np.zeros((G, N)))
