"""The CUDA backend of `simulate`: Philox noise, agreement with the CPU path, errors.

The kernel tests need ``NUMBA_ENABLE_CUDASIM=1`` before Numba is imported, so `test_cuda_kernels_in_the_simulator`
runs this file's ``sim_*`` tests in a child pytest with the variable set (they are skipped in a process
without it). The simulator runs every CUDA thread as Python, about 2 ms per oscillator-step here, so the
kernel runs are tiny; the law of the noise is tested on the host, on the same Philox/Box–Muller lines, with a
million draws, and the kernel's noise is tied to that host formula to rounding (`test_sim_diffusion_is_the_host_formula`).
"""

import os
import subprocess
import sys

import numba
import numpy as np
import pytest

from oscsim.engine import (
    RK4, SRA1, EulerMaruyama, ExternalDrive, Heun, PhaseNetwork, SaveAt, SaveEvery, SaveSummary, SimulationError,
    StochasticHeun, StuartLandauNetwork, SubharmonicInjection, simulate,
)
from oscsim.engine import _cuda as cu
from oscsim.engine.simulate import _group_seeds

SIM = bool(numba.config.ENABLE_CUDASIM)
sim_only = pytest.mark.skipif(not SIM, reason="needs NUMBA_ENABLE_CUDASIM=1 (run by test_cuda_kernels_in_the_simulator)")
M32 = np.uint64(0xFFFFFFFF)


# ---- host: the generator and the selection rules -------------------------------------------------------
def test_philox_known_answers():
    """Random123's known-answer vectors for Philox4x32-10 (kat_vectors)."""
    z, f = np.uint64(0), M32
    words = lambda *xs: tuple(np.uint64(x) for x in xs)  # noqa: E731
    assert [int(x) for x in cu.philox4x32(z, z, z, z, z, z)] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert [int(x) for x in cu.philox4x32(f, f, f, f, f, f)] == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    pi = cu.philox4x32(*words(0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0))
    assert [int(x) for x in pi] == [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def _host_normals(keys, draws, n):
    """(draws, G, n) normals the kernel draws, computed on the host with the same Philox and Box–Muller."""
    d = np.arange(draws, dtype=np.uint64)[:, None, None]
    shape = (draws, keys.shape[0], n)
    args = [np.broadcast_to(a, shape) for a in (d & M32, d >> np.uint64(32), np.arange(n, dtype=np.uint64)[None, None],
                                               np.zeros(1, np.uint64), keys[None, :, 0:1], keys[None, :, 1:2])]
    u1, u2 = cu.uniforms53(*cu.philox4x32(*args))
    return np.sqrt(-2.0 * np.log(1.0 - u1)) * np.cos(2.0 * np.pi * u2)


def test_noise_law_on_the_host():
    """A million of the kernel's normals: N(0, 1) within 4 standard errors, uncorrelated across draws,
    oscillators and groups; the (seed, g) key pairs the CPU streams use give distinct keys."""
    keys = cu.group_keys(_group_seeds(7, 64))
    assert len({tuple(k) for k in keys.tolist()}) == 64
    z = _host_normals(keys, 500, 32)  # (500, 64, 32)
    n = z.size
    assert abs(z.mean()) < 4 / np.sqrt(n)
    assert abs(z.var() - 1.0) < 4 * np.sqrt(2.0 / n)
    assert abs(np.mean(z**4) - 3.0) < 4 * np.sqrt(96.0 / n)
    assert abs(np.mean(z[1:] * z[:-1])) < 4 / np.sqrt(z[1:].size)  # successive draws
    assert abs(np.mean(z[:, :, 1:] * z[:, :, :-1])) < 4 / np.sqrt(z[:, :, 1:].size)  # neighbouring oscillators
    assert abs(np.mean(z[:, 1:] * z[:, :-1])) < 4 / np.sqrt(z[:, 1:].size)  # neighbouring groups
    u = np.sort(np.abs(z.ravel()[:200000]))  # Kolmogorov–Smirnov on |z| (half-normal)
    from math import erf, sqrt

    cdf = np.vectorize(lambda x: erf(x / sqrt(2.0)))(u)
    assert np.max(np.abs(cdf - np.arange(1, u.size + 1) / u.size)) < 1.95 / np.sqrt(u.size)


@pytest.mark.skipif(SIM, reason="the simulator counts as a CUDA device")
def test_cuda_backend_without_a_gpu_is_an_error_not_a_fallback():
    ok, why = cu.cuda_available()
    if ok:
        pytest.skip(f"a CUDA device is present ({why})")
    net = PhaseNetwork(np.zeros(4), np.zeros((4, 4)))
    with pytest.raises(RuntimeError, match="backend='cuda'.*NUMBA_ENABLE_CUDASIM"):
        simulate(net, Heun(), 0.0, 1.0, 0.1, np.zeros((1, 4)), backend="cuda")


def test_cuda_backend_refuses_what_it_does_not_implement():
    net = PhaseNetwork(np.zeros(4), np.zeros((4, 4)), sigma=0.1)
    with pytest.raises(ValueError, match="backend: must be one of 'cpu', 'cuda', got 'gpu'"):
        simulate(net, EulerMaruyama(), 0.0, 1.0, 0.1, np.zeros((1, 4)), seed=0, backend="gpu")
    with pytest.raises(ValueError, match="backend='cuda': implements EulerMaruyama, Heun, StochasticHeun, RK4, not SRA1"):
        simulate(net, SRA1(), 0.0, 1.0, 0.1, np.zeros((1, 4)), seed=0, backend="cuda")
    sl = StuartLandauNetwork(a=1.0, b=-1.0, coupling=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="backend='cuda': runs PhaseNetwork / PackedPhaseNetwork models, not StuartLandau"):
        simulate(sl, RK4(), 0.0, 1.0, 0.1, np.ones((1, 2), complex), backend="cuda")


def _child(selection):
    """Run this file's simulator tests matching ``selection`` in a child pytest with NUMBA_ENABLE_CUDASIM=1."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k", selection],
                         env=env, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and "skipped" not in out.stdout.splitlines()[-1], out.stdout[-2000:]


@pytest.mark.skipif(SIM, reason="this is the parent of the simulator run")
def test_cuda_kernels_in_the_simulator():
    _child("sim_ and not statistics")


@pytest.mark.slow
@pytest.mark.skipif(SIM, reason="this is the parent of the simulator run")
def test_cuda_statistics_in_the_simulator():
    _child("sim_statistics")


# ---- the kernels, under NUMBA_ENABLE_CUDASIM=1 -----------------------------------------------------------
@pytest.fixture
def threads(monkeypatch):
    def set_threads(t):
        monkeypatch.setattr(cu, "THREADS_PER_BLOCK", t)

    set_threads(1)  # the simulator runs each CUDA thread as a Python thread: one per block keeps it quick
    return set_threads


def _net(kind, G=2, N=5, seed=0, sigma=0.0):
    rng = np.random.default_rng(seed)
    om, C = rng.standard_normal((G, N)), rng.standard_normal((G, N, N)) / N
    C[0, :, :2] = 0.0  # a zero column range: the bounds of the groups differ
    kw = {"sine": {},
          "harmonics": {"harmonics": [[1.0, 0.0], [0.04, -0.03], [-0.005, 0.002]]},
          "general": {"harmonics": [[1.0, 0.2], [0.3, -0.1]], "phase_lag": rng.uniform(0, 0.5, (N, N)),
                      "injection": SubharmonicInjection(0.3, order=2, phase=0.2), "drive": ExternalDrive(0.4, 1.1, 0.3)}}
    return PhaseNetwork(om, C, sigma=sigma, **kw[kind]), rng.uniform(0, 2 * np.pi, (G, N))


@sim_only
@pytest.mark.parametrize("kind,solver", [("sine", RK4()), ("harmonics", Heun()), ("general", Heun())])
def test_sim_deterministic_runs_agree_with_the_cpu_path(threads, kind, solver):
    """Same numbers to rounding: sequential sums and libdevice sin/cos here, vector lanes and fdlibm there."""
    net, y0 = _net(kind)
    save = SaveEvery(4) if kind != "general" else SaveAt([0.03, 0.1])
    gpu = simulate(net, solver, 0.0, 0.1, 0.01, y0, save=save, backend="cuda")
    cpu = simulate(net, solver, 0.0, 0.1, 0.01, y0, save=save)
    assert gpu.stats["backend"] == "cuda" and "simulator" in gpu.stats["device"]
    np.testing.assert_array_equal(gpu.ts, cpu.ts)
    np.testing.assert_allclose(gpu.ys, cpu.ys, rtol=0, atol=1e-12)
    summ_g = simulate(net, solver, 0.0, 0.1, 0.01, y0, save=SaveSummary(t_start=0.05), backend="cuda")
    summ_c = simulate(net, solver, 0.0, 0.1, 0.01, y0, save=SaveSummary(t_start=0.05))
    np.testing.assert_allclose(summ_g.mean_exp, summ_c.mean_exp, atol=1e-12)
    np.testing.assert_allclose(summ_g.coherence, summ_c.coherence, atol=1e-12)
    assert summ_g.stats["n_samples"] == summ_c.stats["n_samples"]


@sim_only
def test_sim_one_pass_over_the_coupling_for_all_harmonics_gives_the_same_numbers(threads, monkeypatch):
    net, y0 = _net("harmonics", sigma=0.3)
    fused = simulate(net, StochasticHeun(), 0.0, 0.04, 0.01, y0, seed=2, backend="cuda")
    monkeypatch.setattr(cu, "FUSED_MAX", 0)  # a pass per harmonic (the simulator reads the global at run time)
    passes = simulate(net, StochasticHeun(), 0.0, 0.04, 0.01, y0, seed=2, backend="cuda")
    np.testing.assert_array_equal(fused.ys, passes.ys)


@sim_only
def test_sim_diffusion_is_the_host_formula(threads):
    """θ_i(t) = Σ_n σ sqrt(dt/m) Σ_k z(g, n m + k, i): the kernel's noise equals the host Philox formula."""
    G, N, steps, m, dt, sigma = 3, 4, 6, 2, 0.05, 0.7
    net = PhaseNetwork(np.zeros(N), np.zeros((N, N)), sigma=sigma)
    seeds = np.array([11, 3, 2**63 + 5], dtype=np.uint64)  # per-group seeds, as chip inference uses
    sol = simulate(net, EulerMaruyama(), 0.0, steps * dt, dt, np.zeros((G, N)), save=SaveAt([steps * dt]),
                   seed=seeds, brownian_substeps=m, backend="cuda")
    z = _host_normals(cu.group_keys(_group_seeds(seeds, G)), steps * m, N).reshape(steps, m, G, N)
    ref = np.zeros((G, N))
    for n in range(steps):  # the kernel's order of operations
        w = np.zeros((G, N))
        for k in range(m):
            w = w + np.sqrt(dt / m) * z[n, k]
        ref = ref + dt * 0.0 + sigma * w
    np.testing.assert_allclose(sol.y_final, ref, rtol=0, atol=1e-13)


@sim_only
def test_sim_numbers_do_not_depend_on_the_block_size_nor_on_the_batch(threads):
    net, y0 = _net("general", sigma=0.4)
    a = simulate(net, StochasticHeun(), 0.0, 0.05, 0.01, y0, seed=5, backend="cuda")
    threads(3)
    b = simulate(net, StochasticHeun(), 0.0, 0.05, 0.01, y0, seed=5, backend="cuda")
    np.testing.assert_array_equal(a.ys, b.ys)
    threads(1)
    one = PhaseNetwork(net.omega[1], net.coupling[1], harmonics=net.harmonics, phase_lag=net.phase_lag, sigma=0.4,
                       injection=net.injection, drive=net.drive)
    c = simulate(one, StochasticHeun(), 0.0, 0.05, 0.01, y0[1:], seed=np.array([5], np.uint64), backend="cuda")
    d = simulate(net, StochasticHeun(), 0.0, 0.05, 0.01, y0, seed=np.array([9, 5], np.uint64), backend="cuda")
    np.testing.assert_array_equal(c.ys[:, 0], d.ys[:, 1])


@sim_only
def test_sim_blow_up_names_the_group(threads):
    import warnings

    net = PhaseNetwork(np.array([[0.0, 0.0], [1e308, 1e308]]), np.zeros((2, 2)))
    with pytest.raises(SimulationError, match="group 1 became NaN/inf") as e, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the simulator computes in NumPy scalars, which warn on inf
        simulate(net, RK4(), 0.0, 1.0, 0.5, np.zeros((2, 2)), backend="cuda")
    assert e.value.groups == [1]


@sim_only
@pytest.mark.slow
def test_sim_statistics_match_the_cpu_path(threads):
    """Same seed, same law: a coupled noisy network on both backends (their noise streams differ). Per group
    g: the mean and the variance over oscillators of the phase displacement θ(t1) − θ(0), and the order
    parameter r(t1); the GPU and CPU means over groups agree within 4 standard errors of their difference.
    (On a GPU, benchmarks/gpu_check.py repeats this with 4,096 groups.)"""
    G, N = 40, 8
    rng = np.random.default_rng(3)
    net = PhaseNetwork(rng.normal(0.0, 0.3, (G, N)), rng.uniform(0.0, 2.0 / N, (G, N, N)), sigma=0.6)
    y0 = rng.uniform(0, 2 * np.pi, (G, N))
    runs = {b: simulate(net, StochasticHeun(), 0.0, 1.5, 0.05, y0, save=SaveAt([1.5]), seed=21, backend=b)
            for b in ("cuda", "cpu")}
    stats = {}
    for b, sol in runs.items():
        d = sol.y_final - y0
        r = np.abs(np.mean(np.exp(1j * sol.y_final), axis=1))
        stats[b] = {"mean": d.mean(axis=1), "var": d.var(axis=1, ddof=1), "r": r}
    for key in ("mean", "var", "r"):
        a, c = stats["cuda"][key], stats["cpu"][key]
        se = np.sqrt(a.var(ddof=1) / G + c.var(ddof=1) / G)
        assert abs(a.mean() - c.mean()) < 4 * se, (key, a.mean(), c.mean(), se)
    # and both diffuse: the displacement variance is of the order of σ² t (coupling and drift aside)
    assert 0.3 < stats["cuda"]["var"].mean() / (0.6**2 * 1.5) < 3.0


@pytest.mark.skipif(SIM, reason="the script sets NUMBA_ENABLE_CUDASIM itself")
def test_gpu_check_script_dry_run(tmp_path):
    """benchmarks/gpu_check.py runs once in a session with a GPU: its --dry-run runs every check on tiny sizes here."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = tmp_path / "gpu_check.json"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    run = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "gpu_check.py"), "--dry-run", "--out", str(out)],
                         env=env, capture_output=True, text=True, timeout=900, cwd=root)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    import json

    res = json.loads(out.read_text())
    assert res["environment"]["dry_run"] and "simulator" in res["environment"]["engine_cuda"]
    for name, r in res["engine_throughput"].items():
        if name == "wall_s":
            continue
        assert r["cpu_s"] > 0 and r["cuda_s"] > 0 and r["torch_s"] > 0 and r["torch_final_phase_spread"] > 0
        assert r["torch_graph"].startswith("skipped")
    assert res["agreement"]["deterministic"]["max_abs_difference"] < 1e-12
    assert set(res["agreement"]["statistics"]["per_statistic"]) == {"mean", "var", "r"}  # 4 groups: no verdict
    # the checks added for the GPU session (issue 22): every registered check ran without an error
    assert set(res) >= {"nvml_energy", "triton_ssa", "train_step_1m"}
    assert not [n for n, r in res.items() if isinstance(r, dict) and "error" in r]
    for name in ("kuramoto-tiny", "ssa1d-tiny", "kuramoto-1m (fresh init)"):
        assert res["nvml_energy"][name]["measured_gpu_j_per_token"] > 0
    tri = res["triton_ssa"]["N20"]
    assert tri["triton"]["max_rel_difference_to_tiled"] < 1e-4 and tri["tiled"]["forward_backward_s"] > 0
    for name in ("kuramoto", "ssa1d", "transformer"):
        assert res["train_step_1m"][name]["tokens_per_s"] > 0


@pytest.mark.slow
@pytest.mark.skipif(SIM, reason="compiles for the real CUDA target")
def test_cuda_kernel_compiles_for_sm90(monkeypatch):
    """The simulator runs the kernel as Python and never types it: compile it to PTX for the H100/H200
    (sm_90) with NVVM, without a GPU, so a typing error shows here and not in a lent GPU session. Skipped
    where no NVVM library is installed (this machine has /usr/local/cuda-13.0)."""
    from numba import cuda
    from numba import types as T
    from numba.cuda import dispatcher

    try:
        from numba.cuda.cudadrv.nvvm import NVVM

        NVVM()
    except Exception as exc:  # noqa: BLE001 - any missing piece of the toolkit
        pytest.skip(f"no NVVM here ({type(exc).__name__})")
    # device functions ask the current device for its compute capability: answer for an H200
    monkeypatch.setattr(dispatcher, "get_current_device", lambda: type("H200", (), {"compute_capability": (9, 0)})())
    k = cu._build()
    f64, i64 = T.float64, T.int64
    A = lambda nd, dt=f64: T.Array(dt, nd, "C")  # noqa: E731
    params = (A(2), A(4), A(4), A(1), A(1), A(2, i64), A(2, i64), A(2), A(2), f64, A(2), A(2), f64)
    sig = (A(3), A(3), A(2), A(3), A(2), A(2), A(2), A(3), A(1, i64), A(1, i64), A(1), *params, A(2),
           A(2, T.uint64), i64, f64, f64, i64, f64, A(1), i64, A(1, i64), T.boolean, i64, i64, T.boolean,
           T.boolean, T.boolean)
    ptx, _ = cuda.compile_ptx(k["phase"].py_func, sig, cc=(9, 0))
    assert ".target sm_90" in ptx and "fma.rn.f64" in ptx
    ptx, _ = cuda.compile_ptx(k["transpose"].py_func, (A(3), A(3)), cc=(9, 0))
    assert ".target sm_90" in ptx
