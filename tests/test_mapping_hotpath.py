"""The chip layer's hot path gives the numbers of the plain NumPy path to the bit (issue 22, item 1).

The coupling written from its factors (:func:`oscsim.engine._coupling.coupling_product`, or group by group
inside the engine's group loop: :func:`oscsim.engine.with_coupling_factors`), the fused readout
chain with its normals drawn inside the compiled code (:func:`mapping.periphery.readout._fused_read`,
:func:`~mapping.periphery.readout._fill_normals`) and the layer's workspace (packed model, buffer and
constants kept across calls) are speed-ups only: each is checked against the NumPy expressions it replaces.
"""

import numpy as np
import pytest

from mapping.periphery.readout import (PhaseReadout, _fill_normals, _fused_read, free_running_samples,
                                      fused_trig_is_numpys, read_free_running)
from mapping.seeds import PURPOSE, sequence_rng
from oscsim.engine import (Dopri5, ExternalDrive, Heun, PhaseNetwork, SaveEvery, SaveSummary, StochasticHeun,
                           SubharmonicInjection, simulate, with_coupling_factors)
from oscsim.engine._coupling import block_bounds, coupling_product


def _factors(seed=0, nbk=2, B=3, h=2, kh=3, T=21):
    rng = np.random.default_rng(seed)
    A = np.tril(rng.random((B, h, T, T)), -1)
    A[A < 0.4] = 0.0
    base = 0.3 * A
    g = rng.standard_normal((nbk, B, h, kh, T))
    g[0][np.abs(g[0]) > 1.2] = 0.0  # rows switched off by their gain
    g[1:] = 1.0
    cg = 1 + 0.05 * rng.standard_normal((nbk, h, kh, T, T))
    bi = np.broadcast_to(np.arange(B * h).reshape(1, B, h, 1), (nbk, B, h, kh)).ravel()
    ei = np.broadcast_to(np.arange(nbk)[:, None, None, None] * h * kh + np.arange(h * kh).reshape(1, 1, h, kh),
                         (nbk, B, h, kh)).ravel()
    dense = ((base[None, :, :, None] * g[..., None]) * cg[:, None]).reshape(-1, T, T)
    return base.reshape(-1, T, T), bi, g.reshape(-1, T), cg.reshape(-1, T, T), ei, dense


@pytest.mark.parametrize("threads", [1, 2])
def test_coupling_product_is_the_numpy_product_with_its_bounds(threads):
    base, bi, row, elem, ei, dense = _factors()
    C, lo, hi, bad = coupling_product(base, bi, row, elem, ei, threads=threads)
    assert np.array_equal(C, dense) and bad == 0
    blo, bhi = block_bounds(dense)
    assert np.array_equal(lo, blo) and np.array_equal(hi, bhi)
    C2, *_ = coupling_product(base, bi, row)  # no entry-wise factor
    T = base.shape[-1]
    assert np.array_equal(C2, (base[bi] * row.reshape(-1, T)[:, :, None]))


def test_coupling_product_counts_non_finite_and_refuses_bad_indices():
    base, bi, row, elem, ei, _ = _factors()
    row = row.copy()
    row[5, 7] = np.inf
    assert coupling_product(base, bi, row, elem, ei)[3] > 0
    with pytest.raises(ValueError, match="base_index"):
        coupling_product(base, bi + base.shape[0], row)
    with pytest.raises(ValueError, match="out"):
        coupling_product(base, bi, row, out=np.empty((2, 2, 2)))


def test_with_coupling_product_runs_what_with_arrays_runs():
    base, bi, row, elem, ei, dense = _factors()
    G, T = row.shape
    rng = np.random.default_rng(3)
    om, y0, sig = 0.01 * rng.standard_normal((G, T)), rng.uniform(-3, 3, (G, T)), np.full((G, T), 0.02)
    harm = np.array([[1.0, 0.0], [0.2, 0.1]])
    packed = PhaseNetwork(np.zeros((1, T)), np.zeros((1, T, T)), harmonics=harm).pack()
    a = packed.with_coupling_product(base, bi, row, elem, ei, out=np.empty((G, T, T)), omega=om, sigma=sig)
    b = packed.with_arrays(omega=om, coupling=dense, sigma=sig)
    seeds = np.arange(G, dtype=np.uint64) + 11
    ya = simulate(a, StochasticHeun(), 0.0, 1.0, 0.1, y0, seed=seeds).y_final
    yb = simulate(b, StochasticHeun(), 0.0, 1.0, 0.1, y0, seed=seeds).y_final
    assert np.array_equal(ya, yb)
    bad = row.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="coupling"):
        packed.with_coupling_product(base, bi, bad)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("structure", ["sine", "harmonics", "terms"])
@pytest.mark.parametrize("with_elem", [True, False])
def test_coupling_written_in_the_group_loop_runs_what_the_dense_coupling_runs(monkeypatch, structure, with_elem,
                                                                               threads):
    """The engine writing each group's matrix into its scratch (FactoredPhaseNetwork) gives, on 1 and 2 threads,
    the trajectory of the same network with the (G, N, N) coupling written first (with_coupling_product) and of a
    fresh PhaseNetwork of the NumPy product (N = 21: a last block of one row, bounds not at N)."""
    import numba

    monkeypatch.setattr(numba, "get_num_threads", lambda: threads)
    base, bi, row, elem, ei, dense = _factors()
    if not with_elem:
        elem = ei = None
        dense = base[bi] * row[:, :, None]
    G, T = row.shape
    rng = np.random.default_rng(3)
    om, y0, sig = 0.01 * rng.standard_normal((G, T)), rng.uniform(-3, 3, (G, T)), rng.uniform(0, 0.03, (G, T))
    kw = {"sine": {}, "harmonics": {"harmonics": np.array([[1.0, 0.0], [0.2, 0.1], [0.0, -0.05]])},
          "terms": {"injection": SubharmonicInjection(0.4, order=2, phase=0.1), "drive": ExternalDrive(0.2, 1.3)}}
    packed = PhaseNetwork(np.zeros((1, T)), np.zeros((1, T, T)), **kw[structure]).pack()
    fac = with_coupling_factors(packed, base, bi, row, elem, ei, omega=om, sigma=sig)
    assert type(fac).__name__ == "FactoredPhaseNetwork" and fac.kernel == packed.kernel
    prod = packed.with_coupling_product(base, bi, row, elem, ei, omega=om, sigma=sig)
    fresh = PhaseNetwork(om, dense, sigma=sig, **kw[structure])
    seeds = np.arange(G, dtype=np.uint64) + 11
    runs = [simulate(m, StochasticHeun(), 0.0, 1.0, 0.1, y0, save=SaveEvery(3), seed=seeds).ys
            for m in (fac, prod, fresh)]
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])
    det = [simulate(m.with_arrays(sigma=0.0) if m is prod else m, Heun(), 0.0, 1.0, 0.1, y0).y_final
           for m in (with_coupling_factors(packed, base, bi, row, elem, ei, omega=om, sigma=0.0), prod)]
    assert np.array_equal(det[0], det[1])


def test_coupling_written_in_the_group_loop_under_the_adaptive_loop_and_a_summary():
    """The other loop template (Dopri5) and a running summary (coherence) run the prepared coupling too."""
    base, bi, row, elem, ei, _ = _factors(seed=2)
    G, T = row.shape
    rng = np.random.default_rng(4)
    om, y0 = 0.01 * rng.standard_normal((G, T)), rng.uniform(-3, 3, (G, T))
    packed = PhaseNetwork(np.zeros((1, T)), np.zeros((1, T, T)), harmonics=[[1.0, 0.0], [0.1, 0.2]]).pack()
    fac = with_coupling_factors(packed, base, bi, row, elem, ei, omega=om, sigma=0.0)
    prod = packed.with_coupling_product(base, bi, row, elem, ei, omega=om, sigma=0.0)
    a, b = (simulate(m, Dopri5(), 0.0, 2.0, 0.1, y0, save=SaveEvery(5)) for m in (fac, prod))
    assert np.array_equal(a.ys, b.ys) and np.array_equal(a.stats["n_accepted"], b.stats["n_accepted"])
    a, b = (simulate(m, Heun(), 0.0, 1.0, 0.1, y0, save=SaveSummary(t_start=0.5)) for m in (fac, prod))
    assert np.array_equal(a.coherence, b.coherence)


def test_coupling_factors_are_checked():
    base, bi, row, elem, ei, _ = _factors()
    T = row.shape[1]
    packed = PhaseNetwork(np.zeros((1, T)), np.zeros((1, T, T))).pack()
    bad = row.copy()
    bad[2, 3] = np.inf
    with pytest.raises(ValueError, match="row_gain"):
        with_coupling_factors(packed, base, bi, bad, elem, ei)
    with pytest.raises(ValueError, match="elem_index"):
        with_coupling_factors(packed, base, bi, row, elem, ei + elem.shape[0])
    huge = row.copy()
    huge[:, 0] = 1e305  # max|b| max|r| max|e| > 1e300: products that could overflow (here they do not: row 0 of
    # every base is 0), so C is written and checked entry by entry instead, the same numbers
    a = with_coupling_factors(packed, base, bi, huge, elem, ei)
    assert type(a).__name__ == "PackedPhaseNetwork"
    assert np.array_equal(a.coupling, coupling_product(base, bi, huge, elem, ei)[0])
    lagged = PhaseNetwork(np.zeros((1, T)), np.zeros((1, T, T)), phase_lag=np.full((T, T), 0.1)).pack()
    with pytest.raises(ValueError, match="phase lags"):
        with_coupling_factors(lagged, base, bi, row)


@pytest.mark.parametrize("noise,bits,bw,sigma", [(0.02, 8, 0.1, 0.03), (0.0, None, None, 0.0), (0.01, None, None, "array")])
def test_fused_readout_is_the_sampled_chain(noise, bits, bw, sigma):
    if not fused_trig_is_numpys():
        pytest.skip("NumPy's cos/sin are not libm's on this CPU: read_free_running keeps the NumPy chain here")
    r = PhaseReadout(response="cosine", noise_rad=noise, bits=bits, averaging_cycles=3.0, samples_per_cycle=4,
                     bandwidth_fraction=bw)
    rng = np.random.default_rng(5)
    n = 37
    th, om = rng.uniform(-4, 4, n), 0.02 * rng.standard_normal(n)
    sg = 0.05 * rng.random(n) if sigma == "array" else sigma
    t = r.sample_times()
    sq = np.sqrt(np.diff(np.concatenate([[0.0], t])))
    alpha = 0.0 if bw is None else 1.0 - np.exp(-2 * np.pi * bw * r.averaging_cycles / r.n_samples)
    got = _fused_read(r, th, om, sg, t, sq, alpha, np.random.default_rng(9))
    g2 = np.random.default_rng(9)
    want = r.measure_samples(free_running_samples(th, om, sg, t, g2), g2 if noise > 0 else None)
    assert np.array_equal(got, want)


def test_read_free_running_independent_of_threads(monkeypatch):
    import numba

    r = PhaseReadout(response="cosine", noise_rad=0.02, bits=8, averaging_cycles=2.0, samples_per_cycle=4)
    rng = np.random.default_rng(1)
    ph, om = rng.uniform(-3, 3, (2 * 3 * 4, 9)), 0.01 * rng.standard_normal((2 * 3 * 4, 9))
    args = dict(seed=4, sequences=np.array([5, 2, 7]), banks=2)
    many = read_free_running(r, ph, om, 0.02, **args)
    monkeypatch.setattr(numba, "get_num_threads", lambda: 1)
    assert np.array_equal(many, read_free_running(r, ph, om, 0.02, **args))
    tri = PhaseReadout(response="triangular", noise_rad=0.02, bits=8, averaging_cycles=2.0, samples_per_cycle=4)
    assert np.all(np.isfinite(read_free_running(tri, ph, om, 0.02, **args)))  # the unfused path


@pytest.mark.parametrize("shape", [(16, 8192), (3, 5), (1, 1)])
def test_compiled_draws_are_numpys_normals_and_advance_the_generator(shape):
    """Numba's ``Generator.standard_normal`` inside @njit: NumPy's numbers and the same generator state after (the
    ziggurat's rare exponential-tail and wedge branches included: 131,072 draws per stream, 8 streams)."""
    for s in range(8 if shape[0] > 1 else 1):
        ours, ref = np.random.default_rng([s, 4]), np.random.default_rng([s, 4])
        z = np.empty(shape)
        _fill_normals(ours, z)
        assert np.array_equal(z, ref.standard_normal(shape))
        assert ours.bit_generator.state == ref.bit_generator.state
        assert ours.standard_normal() == ref.standard_normal()


@pytest.mark.parametrize("threads", [1, 2])
def test_read_free_running_is_the_numpy_chain_per_block(monkeypatch, threads):
    """Every (bank, sequence) block of the fused readout equals the NumPy chain on that block's own stream (the
    default chip's readout: cosine detector, 8 bits, low-pass, sampler noise, per-oscillator noise), on 1 and 2
    threads."""
    import numba

    if not fused_trig_is_numpys():
        pytest.skip("NumPy's cos/sin are not libm's on this CPU: read_free_running keeps the NumPy chain here")
    monkeypatch.setattr(numba, "get_num_threads", lambda: threads)
    r = PhaseReadout(response="cosine", noise_rad=0.02, bits=8, averaging_cycles=4.0, samples_per_cycle=4,
                     bandwidth_fraction=0.25)
    banks, seqs, n = 2, np.array([3, 0, 11]), 40
    G = banks * len(seqs)
    rng = np.random.default_rng(2)
    ph, om, sg = rng.uniform(-30, 30, (G, n)), 0.01 * rng.standard_normal((G, n)), 0.03 * rng.random((G, n))
    got = read_free_running(r, ph, om, sg, seed=7, sequences=seqs, banks=banks)
    t = r.sample_times()
    for bank in range(banks):
        for b, q in enumerate(seqs):
            g = bank * len(seqs) + b
            gen = sequence_rng(7, PURPOSE["readout"], int(q), bank)
            want = r.measure_samples(free_running_samples(ph[g], om[g], sg[g], t, gen), gen)
            assert np.array_equal(got[g], want), (bank, b)


def test_integrate_phase_product_checks_a_kept_mismatch_once_and_leaves_the_callers_entries():
    """A layer's read-only coupler mismatch is checked once per workspace (128 MB for the 1M model's layer), the
    caller's own entries survive, and every call integrates what the dense coupling integrates."""
    from mapping.backends.integrate import CouplingFactors, integrate_phase, integrate_phase_product

    base, bi, row, elem, ei, dense = _factors()
    elem.setflags(write=False)
    G, T = row.shape
    rng = np.random.default_rng(8)
    om, y0 = 0.01 * rng.standard_normal((G, T)), rng.uniform(-3, 3, (G, T))
    f = CouplingFactors(base=base, base_index=bi, row_gain=row, elem=elem, elem_index=ei)
    mine = object()
    ws = {"per_bank": mine}
    kw = dict(t1=1.0, n_steps=8, harmonics=((1.0, 0.0), (0.2, 0.1)), sigma=0.02, seed=np.arange(G) + 5)
    want = integrate_phase(om, dense, y0, **kw).y_final
    for _ in range(2):
        assert np.array_equal(integrate_phase_product(om, f, y0, workspace=ws, **kw).y_final, want)
        assert ws["per_bank"] is mine and ws["elem_max_abs"][0] is elem
    bad = elem.copy()
    bad[1, 2, 0] = np.nan
    bad.setflags(write=False)
    with pytest.raises(ValueError, match="elem"):
        integrate_phase_product(om, CouplingFactors(base=base, base_index=bi, row_gain=row, elem=bad, elem_index=ei),
                                y0, workspace=ws, **kw)


@pytest.mark.parametrize("case", ["normal", "negative", "zeros", "signed zeros", "subnormal", "huge", "nan", "inf",
                                  "-inf", "empty", "strided"])
def test_factor_check_max_abs_is_numpys_max_of_abs_and_finds_every_non_finite(case):
    """The factors' check reads the float64 bits as unsigned integers (sign cleared): its max |x| must be NumPy's
    exactly, and any inf or NaN must be found, wherever it sits."""
    from oscsim.engine.phase_factored import max_abs

    rng = np.random.default_rng(7)
    x = {"normal": rng.normal(size=1001), "negative": -np.abs(rng.normal(size=9)), "zeros": np.zeros(5),
         "signed zeros": np.array([-0.0, 0.0, -0.0]), "subnormal": np.array([1e-310, -2e-310, 5e-324]),
         "huge": np.array([1.7e308, -1.79e308, 3.0]), "nan": np.r_[rng.normal(size=100), np.nan, 1.0],
         "inf": np.r_[np.inf, rng.normal(size=50)], "-inf": np.r_[rng.normal(size=50), -np.inf],
         "empty": np.zeros(0), "strided": rng.normal(size=(40, 40))[:, ::3]}[case]
    peak, finite = max_abs(x)
    assert finite == bool(np.all(np.isfinite(x)))
    if finite:
        assert peak == (float(np.max(np.abs(x))) if x.size else 0.0)
