"""Batches, threads, saving policies, custom right-hand sides, generated kernels."""

import numba
import numpy as np
import pytest

from oscsim.analysis import coherence_matrix
from oscsim.engine import (
    RK4, SRA1, CustomODE, Dopri5, EulerMaruyama, PhaseNetwork, SaveAt, SaveEvery, SaveSummary, StochasticHeun,
    StuartLandauNetwork, simulate,
)


def noisy_batch(G=5, N=24):
    rng = np.random.default_rng(5)
    return (
        PhaseNetwork(omega=rng.standard_normal((G, N)), coupling=rng.standard_normal((G, N, N)) / N, sigma=0.3),
        rng.uniform(0, 6, (G, N)),
    )


@pytest.mark.parametrize("solver", [EulerMaruyama(), SRA1()])
def test_bit_identical_with_one_or_two_threads(solver):
    net, y0 = noisy_batch()
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        a = simulate(net, solver, 0, 2, 0.01, y0, seed=9, save=SaveEvery(20))
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        b = simulate(net, solver, 0, 2, 0.01, y0, seed=9, save=SaveEvery(20))
    finally:
        numba.set_num_threads(old)
    assert np.array_equal(a.ys, b.ys)
    c = simulate(net, solver, 0, 2, 0.01, y0, seed=10, save=SaveEvery(20))
    assert not np.array_equal(a.ys, c.ys)


def test_groups_are_independent():
    """Group g of a batch equals the same network run alone (its noise is seeded by (seed, g))."""
    net, y0 = noisy_batch()
    full = simulate(net, EulerMaruyama(), 0, 1, 0.01, y0, seed=3)
    g = 0
    alone = PhaseNetwork(omega=net.omega[g], coupling=net.coupling[g], sigma=0.3)
    one = simulate(alone, EulerMaruyama(), 0, 1, 0.01, y0[g : g + 1], seed=3)
    np.testing.assert_array_equal(full.ys[:, g], one.ys[:, 0])


def test_save_every_and_save_at_times():
    net = PhaseNetwork(omega=[1.0, 2.0], coupling=np.zeros((2, 2)))
    sol = simulate(net, RK4(), 0.0, 1.0, 0.1, np.zeros((1, 2)), save=SaveEvery(3))
    np.testing.assert_allclose(sol.ts, [0.0, 0.3, 0.6, 0.9, 1.0], atol=1e-12)
    np.testing.assert_allclose(sol.ys[:, 0, 1], 2.0 * sol.ts, atol=1e-12)
    ts = [0.05, 0.333, 0.9999]
    sol = simulate(net, RK4(), 0.0, 1.0, 0.1, np.zeros((1, 2)), save=SaveAt(ts))
    np.testing.assert_allclose(sol.ys[:, 0, 0], ts, atol=1e-12)
    np.testing.assert_allclose(sol.y_final[0], [1.0, 2.0], atol=1e-12)
    # a step that does not divide the span: the last step is shortened to end at t1
    sol = simulate(net, RK4(), 0.0, 1.0, 0.3, np.zeros((1, 2)))
    np.testing.assert_allclose(sol.ts, [0.0, 0.3, 0.6, 0.9, 1.0], atol=1e-12)
    np.testing.assert_allclose(sol.y_final[0], [1.0, 2.0], atol=1e-12)


def test_summary_matches_trajectory():
    net, y0 = noisy_batch(G=3, N=10)
    full = simulate(net, StochasticHeun(), 0, 2, 0.01, y0, seed=1, save=SaveEvery(1))
    summ = simulate(net, StochasticHeun(), 0, 2, 0.01, y0, seed=1, save=SaveSummary(t_start=0.5))
    assert summ.ys is None
    np.testing.assert_array_equal(summ.y_final, full.y_final)
    window = full.ys[full.ts >= 0.5 - 1e-12]
    np.testing.assert_allclose(summ.mean_exp, np.mean(np.exp(1j * window), axis=0), atol=1e-12)
    np.testing.assert_allclose(summ.coherence, coherence_matrix(window), atol=1e-12)
    every = simulate(net, StochasticHeun(), 0, 2, 0.01, y0, seed=1, save=SaveSummary(t_start=0.5, every=10, coherence=False))
    np.testing.assert_allclose(every.mean_exp, np.mean(np.exp(1j * window[::10]), axis=0), atol=1e-12)
    assert every.coherence is None


def test_stuart_landau_limit_cycle_and_noise_scale():
    """dc = (a + b|c|²) c dt: |c| → sqrt(−Re a / Re b); with noise E|σ dZ|² = σ² dt."""
    a, b = 1.0 - 2.0j, -1.0 + 0.5j
    net = StuartLandauNetwork(a=a, b=b, coupling=np.zeros((3, 3)))
    sol = simulate(net, RK4(), 0, 20, 0.01, np.full((1, 3), 0.1 + 0j))
    np.testing.assert_allclose(np.abs(sol.y_final), 1.0, atol=1e-8)
    n, sigma, T = 3000, 0.5, 1.0
    free = StuartLandauNetwork(a=0.0, b=0.0, coupling=np.zeros((n, n)), sigma=sigma)
    z = simulate(free, EulerMaruyama(), 0, T, 0.01, np.zeros((1, n), complex), seed=2).y_final[0]
    m2 = np.mean(np.abs(z) ** 2)  # |z|² ~ (σ² T/2) χ²_2: mean σ² T, sd σ² T / sqrt(n)
    assert abs(m2 - sigma**2 * T) < 4 * sigma**2 * T / np.sqrt(n)


@numba.njit
def _harmonic(t, y, p, dydt):
    dydt[0] = y[1]
    dydt[1] = -p[0] * p[0] * y[0]


def test_custom_ode_harmonic_oscillator():
    w = np.array([[1.0], [2.0], [3.0]])
    model = CustomODE(rhs=_harmonic, params=w, dim=2)
    y0 = np.tile([1.0, 0.0], (3, 1))
    sol = simulate(model, Dopri5(rtol=1e-9, atol=1e-12), 0, 2.0, 0.1, y0, save=SaveAt([1.0, 2.0]))
    np.testing.assert_allclose(sol.ys[:, :, 0], np.cos(np.outer([1.0, 2.0], w[:, 0])), atol=1e-7)
    assert np.all(sol.stats["n_accepted"] > 0)
    sol = simulate(model, RK4(), 0, 2.0, 0.01, y0)
    np.testing.assert_allclose(sol.y_final[:, 0], np.cos(2.0 * w[:, 0]), atol=1e-6)
    # a module-level rhs gets a disk-cached loop (no compilation in the next process)
    from oscsim.engine._custom_cache import cached_custom_loop

    assert cached_custom_loop(_harmonic, RK4(), adaptive=False) is not None


def test_solver_class_data():
    from oscsim.engine import Heun, StochasticHeun

    assert EulerMaruyama.strong_order == 1.0 and EulerMaruyama.calculus == "Ito"
    assert StochasticHeun.calculus == "Stratonovich" and StochasticHeun.deterministic_order == 2.0
    assert SRA1.strong_order == 1.5 and SRA1.noise == "additive"
    assert RK4.deterministic_order == 4.0 and RK4.noise is None and Heun.strong_order is None
    assert Dopri5(rtol=1e-3).adaptive


@pytest.mark.parametrize("n", [24, 13])
def test_group_arithmetic_does_not_depend_on_the_other_groups_coupling(n):
    """A group's numbers are the same alone and beside a group whose nonzero columns start further left.

    The coupling product skips zero column ranges. Its vectorised reduction sums the columns of a row in
    lanes and then the columns left over after the last full vector one by one, so bounds taken over the
    union of the batch's groups changed which columns were left over (and the rounding) of a group
    (found on main 1e8ca01: this test failed there for both sizes).
    """
    rng = np.random.default_rng(11)
    sparse = rng.standard_normal((n, n)) / n
    sparse[:, :5] = 0.0  # zero columns on the left
    dense = rng.standard_normal((n, n)) / n
    sparse[:, n - 3:] = dense[:, n - 3:] = 0.0  # and on the right, for both
    omega = rng.standard_normal((2, n))
    y0 = rng.uniform(0, 2 * np.pi, (2, n))
    for harmonics in (None, [[1.0, 0.0], [0.3, 0.2]]):
        pair = PhaseNetwork(omega, np.stack([sparse, dense]), harmonics=harmonics)
        alone = PhaseNetwork(omega[:1], sparse[None], harmonics=harmonics)
        a = simulate(pair, RK4(), 0.0, 2.0, 0.01, y0, save=SaveEvery(50))
        b = simulate(alone, RK4(), 0.0, 2.0, 0.01, y0[:1], save=SaveEvery(50))
        np.testing.assert_array_equal(a.ys[:, 0], b.ys[:, 0])


@pytest.mark.parametrize("n", [5, 13, 16, 37, 64])
def test_coupling_sum_is_the_same_for_any_aligned_bounds(n):
    """`fused_two_products` gives, bit for bit, the full-row sum for any aligned bounds covering the nonzeros."""
    from oscsim.engine._coupling import ALIGN, block_bounds, fused_two_products

    rng = np.random.default_rng(n)
    for trial in range(12):
        C = rng.standard_normal((n, n))
        a, b = sorted(rng.integers(0, n + 1, 2))
        C[:, :a] = 0.0
        C[:, b:] = 0.0
        if trial % 3 == 0:
            C = np.tril(C, -1)
        u, v = rng.standard_normal(n), rng.standard_normal(n)
        lo, hi = block_bounds(C)
        nblk = lo.shape[1]
        assert np.all(lo % ALIGN == 0) and np.all((hi % ALIGN == 0) | (hi == n))

        def run(lo_, hi_):
            x, y = np.zeros(n), np.zeros(n)
            fused_two_products(C, u, v, np.ascontiguousarray(lo_), np.ascontiguousarray(hi_), x, y)
            return x, y

        full = run(np.zeros(nblk, np.int64), np.full(nblk, n, np.int64))
        np.testing.assert_allclose(full[0], C @ u, atol=1e-12)
        np.testing.assert_allclose(full[1], C @ v, atol=1e-12)
        wider_lo = np.minimum(lo[0], rng.integers(0, n + 1, nblk) // ALIGN * ALIGN)
        wider_hi = np.maximum(hi[0], np.minimum(-(-rng.integers(0, n + 1, nblk) // ALIGN) * ALIGN, n))
        for got in (run(lo[0], hi[0]), run(wider_lo, wider_hi)):
            np.testing.assert_array_equal(got[0], full[0])
            np.testing.assert_array_equal(got[1], full[1])


def test_run_threads_keeps_its_pool_reraises_and_survives_a_fork():
    """The thread pool the group loop (and the chip readout) run on is kept across calls, an error in a thread
    reaches the caller, and a forked child gets a pool of its own (a fork copies the pool, not its threads)."""
    import os

    from oscsim.engine import _loop

    seen = []
    _loop.run_threads(lambda t, n: seen.append((t, n)), 2)
    ex = _loop._POOL["executor"]
    _loop.run_threads(lambda t, n: None, 2)
    assert _loop._POOL["executor"] is ex and sorted(seen) == [(0, 2), (1, 2)]
    with pytest.raises(ZeroDivisionError):
        _loop.run_threads(lambda t, n: 1 / (t - 1), 2)
    if not hasattr(os, "fork"):
        return
    pid = os.fork()
    if pid == 0:  # the child: a run on two threads must finish (a copied pool without threads would hang)
        got = []
        _loop.run_threads(lambda t, n: got.append(t), 2)
        os._exit(0 if sorted(got) == [0, 1] and _loop._POOL["executor"] is not ex else 3)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
