"""The shared-coupling product (`simulate(coupling_product="gemm")`, oscsim/engine/_gemm.py).

Its sums run in another order than the per-group kernel's, so the two agree to the float error of an N-term dot
product, not to the bit: the tolerances below are that error (γ_N = N·u/(1 − N·u), u = 2⁻⁵³, Higham §3.1)
propagated through the steps, computed per test from the problem, not guessed. Its randomness contract is
exact: the same bits whatever the batch size and thread count.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

import oscsim.engine as E
from oscsim.engine._gemm import GEMM_MIN_N
from oscsim.engine.rng import brownian_increments
from oscsim.reference import simulate_numpy

U = 2.0 ** -53


def _gamma(n: int) -> float:
    return n * U / (1 - n * U)


def _problem(N, G, seed=0, **kw):
    rng = np.random.default_rng(seed)
    C = rng.uniform(-1.0, 3.0, (N, N)) / N
    return (E.PhaseNetwork(rng.standard_normal((G, N)), C, **kw), rng.uniform(0, 2 * np.pi, (G, N)), C)


def _drift_error_bound(C, harmonics, y_scale, f_scale):
    """Largest |Δf| between two summation orders of one drift evaluation: per harmonic, the two products
    (C sin, C cos) each within γ_N Σ_j |C_ij| of the exact sums in either path (so 2γ_N between paths), weighted
    by |a_m| + |b_m| through the combination; plus a few roundings of the combination itself."""
    h = np.asarray(harmonics)
    per = 2 * 2 * _gamma(C.shape[0]) * np.abs(C).sum(axis=1).max()
    return float(np.sum(np.abs(h)) * per + 8 * U * (f_scale + y_scale))


@pytest.mark.parametrize("harmonics", [None, [[1.0, 0.3], [0.4, -0.2], [0.1, 0.05]]])
def test_one_step_agrees_with_the_kernel_within_the_dot_product_bound(harmonics):
    N, G, h = 300, 5, 0.01
    net, y0, C = _problem(N, G, harmonics=harmonics)
    runs = {p: E.simulate(net, E.EulerMaruyama(), 0.0, h, h, y0, save=E.SaveAt([h]), coupling_product=p)
            for p in ("kernel", "gemm")}
    assert runs["gemm"].stats["coupling_product"] == "gemm" and runs["kernel"].stats["coupling_product"] == "kernel"
    f = (runs["kernel"].y_final - y0) / h
    bound = h * _drift_error_bound(C, harmonics or [[1.0, 0.0]], np.abs(y0).max() / h, np.abs(f).max()) \
        + 4 * U * np.abs(y0).max()
    diff = np.abs(runs["gemm"].y_final - runs["kernel"].y_final).max()
    assert diff <= bound, (diff, bound)
    assert bound < 1e-13  # the bound itself is rounding-sized: a wrong product could not hide under it


def _run_bound(C, harmonics, n_evals, h, t1, f_scale, y_scale):
    """Per-evaluation bound summed over the run's evaluations, grown by e^{L t1}, L = the drift's Lipschitz
    constant in the max norm, Σ_m m (|a_m| + |b_m|) · 2 max_i Σ_j |C_ij|."""
    hm = np.abs(np.asarray(harmonics))
    L = float(sum((m + 1) * (hm[m].sum()) for m in range(len(hm))) * 2 * np.abs(C).sum(axis=1).max())
    return (n_evals * h * _drift_error_bound(C, harmonics, y_scale, f_scale) + n_evals * 4 * U * y_scale) * \
        np.exp(L * t1)


def test_a_noisy_run_agrees_with_the_kernel_and_the_numpy_reference():
    N, G, h, steps, seed = 260, 3, 0.02, 25, 7
    net, y0, C = _problem(N, G, seed=1, sigma=0.3, injection=E.SubharmonicInjection(strength=0.2, phase=0.4, order=2))
    t1 = h * steps
    kern = E.simulate(net, E.StochasticHeun(), 0.0, t1, h, y0, save=E.SaveEvery(5), seed=seed,
                      coupling_product="kernel")
    gemm = E.simulate(net, E.StochasticHeun(), 0.0, t1, h, y0, save=E.SaveEvery(5), seed=seed, coupling_product="gemm")
    dW = brownian_increments(seed, G, N, steps, h)[0]
    ref = simulate_numpy(net, "stochastic_heun", 0.0, h, steps, y0, dW=dW)[-1]
    y_scale = max(np.abs(kern.ys).max(), np.abs(ref).max())
    bound = _run_bound(C, [[1.0, 0.0]], 2 * steps, h, t1, 10.0, y_scale)
    assert np.abs(gemm.ys - kern.ys).max() <= bound
    # the reference sums N² sines in yet another order (and its sin/cos are libm's): twice the bound
    assert np.abs(gemm.y_final - ref).max() <= 2 * bound + 1e-13
    assert bound < 1e-9


@pytest.mark.parametrize("save", [E.SaveSummary(t_start=0.1), E.SaveAt([0.05, 0.2])])
def test_saves_and_summaries_match_the_kernel(save):
    N, G = 130, 4
    net, y0, C = _problem(N, G, harmonics=[[1.0, 0.0], [0.5, 0.25]], sigma=0.1)
    a = E.simulate(net, E.EulerMaruyama(), 0.0, 0.2, 0.01, y0, save=save, seed=3, coupling_product="kernel")
    b = E.simulate(net, E.EulerMaruyama(), 0.0, 0.2, 0.01, y0, save=save, seed=3, coupling_product="gemm")
    np.testing.assert_array_equal(a.ts, b.ts)
    for f in ("ys", "y_final", "mean_exp", "coherence"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None) == (y is None), f
        if x is not None:
            np.testing.assert_allclose(y, x, rtol=0, atol=1e-12, err_msg=f)
    if a.mean_exp is not None:
        assert a.stats["n_samples"] == b.stats["n_samples"]


def test_same_seed_same_bits_whatever_the_batch_and_the_threads():
    N, G = 200, 7
    net, y0, C = _problem(N, G, sigma=0.2, harmonics=[[1.0, 0.2], [0.3, 0.0]])
    kw = dict(save=E.SaveAt([0.1]), seed=11, coupling_product="gemm")
    full = E.simulate(net, E.StochasticHeun(), 0.0, 0.1, 0.01, y0, **kw).y_final
    for k in (1, 2, 4):  # the first k groups alone: an int seed streams group g from (seed, g)
        sub = E.PhaseNetwork(net.omega[:k], C, sigma=0.2, harmonics=net.harmonics)
        np.testing.assert_array_equal(E.simulate(sub, E.StochasticHeun(), 0.0, 0.1, 0.01, y0[:k], **kw).y_final,
                                      full[:k])
    seeds = np.arange(100, 100 + G)  # per-group seeds: any subset, in any position
    per = E.simulate(net, E.StochasticHeun(), 0.0, 0.1, 0.01, y0, **{**kw, "seed": seeds}).y_final
    pick = [5, 2]
    sub = E.PhaseNetwork(net.omega[pick], C, sigma=0.2, harmonics=net.harmonics)
    np.testing.assert_array_equal(
        E.simulate(sub, E.StochasticHeun(), 0.0, 0.1, 0.01, y0[pick], **{**kw, "seed": seeds[pick]}).y_final, per[pick])
    prev = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = E.simulate(net, E.StochasticHeun(), 0.0, 0.1, 0.01, y0, **kw).y_final
    finally:
        numba.set_num_threads(prev)
    np.testing.assert_array_equal(one, full)


def test_auto_takes_the_shared_product_from_the_threshold_on_and_never_for_per_group_coupling():
    def product(N, G, coupling_per_group=False, **kw):
        rng = np.random.default_rng(0)
        C = rng.uniform(0, 1.0 / N, (G, N, N) if coupling_per_group else (N, N))
        net = E.PhaseNetwork(np.zeros((G, N)), C, **kw)
        return E.simulate(net, E.Heun(), 0.0, 0.01, 0.01, np.zeros((G, N)), save=E.SaveAt([0.01])
                          ).stats["coupling_product"]

    assert product(GEMM_MIN_N - 1, 2) == "kernel"
    assert product(GEMM_MIN_N, 1) == "gemm"  # G never decides: one group takes the same path as many
    assert product(GEMM_MIN_N, 2, coupling_per_group=True) == "kernel"
    assert product(GEMM_MIN_N, 2, phase_lag=np.full((GEMM_MIN_N, GEMM_MIN_N), 0.1)) == "kernel"


def test_bad_choices_are_refused_with_the_reason():
    net, y0, C = _problem(8, 2)
    with pytest.raises(ValueError, match="coupling_product: must be one of"):
        E.simulate(net, E.Heun(), 0.0, 0.1, 0.01, y0, coupling_product="blas")
    per_group = E.PhaseNetwork(np.zeros((2, 8)), np.stack([C, C]))
    with pytest.raises(ValueError, match="coupling_product='gemm': needs one coupling matrix shared"):
        E.simulate(per_group, E.Heun(), 0.0, 0.1, 0.01, y0, coupling_product="gemm")
    with pytest.raises(ValueError, match="coupling_product='gemm': implements .* not SRA1"):
        E.simulate(E.PhaseNetwork(np.zeros(8), C, sigma=0.1), E.SRA1(), 0.0, 0.1, 0.01, y0, seed=1,
                   coupling_product="gemm")


def test_a_blow_up_is_reported_as_the_kernel_reports_it():
    N, G = 40, 3
    rng = np.random.default_rng(2)
    C = rng.uniform(0, 1.0, (N, N))
    omega = np.zeros((G, N))
    omega[1] = 1e308  # group 1 overflows on its first step (RK4 sums k1 + 2 k2 + ...)
    net = E.PhaseNetwork(omega, C)
    errs = {}
    for p in ("kernel", "gemm"):
        with pytest.raises(E.SimulationError) as info:
            E.simulate(net, E.RK4(), 0.0, 0.1, 0.01, rng.uniform(0, 6, (G, N)), coupling_product=p)
        errs[p] = (info.value.group, info.value.time, sorted(info.value.groups))
    assert errs["gemm"] == errs["kernel"] == (1, 0.01, [1])
