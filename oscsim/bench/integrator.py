"""``oscsim bench integrator``: the engine against NumPy, Brian2 and SciPy on dense Kuramoto networks.

Problems (all tools in one process, same networks, same dt):

``single``
    One network, N = 256, dense random coupling, additive noise, ``--steps`` (2,000) Euler–Maruyama steps.
``batched``
    G = 32 independent networks of N = 512, each with its own coupling matrix (G, N, N), Euler–Maruyama.

Figures: pair-updates per second = N² × (coupling evaluations) × G / seconds (one evaluation per EM step;
``nfev`` for ``solve_ivp``). Flop rate = 4 flops per pair-update (two multiply–adds for C sin θ and C cos θ),
compared with a float64 matrix product (``numpy.matmul``, 2n³ flops, all threads) timed in the same run.
Times are the best of ``--repeats`` after a warm-up (compilation, Brian2 code generation and cache load
excluded). Competitors too slow for the full problem run fewer steps or groups (recorded in the JSON); the
rates are per step, so they stay comparable.

- engine: ``oscsim.engine.simulate`` with ``EulerMaruyama``, final state only.
- numpy_reference: ``oscsim.reference.simulate_numpy`` (N² sines per step, the test reference).
- numpy_matmul: NumPy with the same matrix-product identity as the engine (the fair NumPy baseline).
- brian2: ``oscsim.reference.simulate_brian2`` on the fastest target that works (``cython``, else
  ``numpy``; reported), ``euler`` with noise, summed synaptic variable; the ``run`` call is timed.
- scipy: ``scipy.integrate.solve_ivp`` (RK45, rtol 1e-6, atol 1e-9) of the deterministic network(s) with
  the matrix-product right-hand side (the G networks as one system of G·N phases).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

from oscsim.cli import int_range

__all__ = ["register", "run", "run_benchmark", "gemm_rate"]


def gemm_rate(n: int = 1024, repeats: int = 3) -> float:
    """float64 matrix-product rate [flop/s] of ``numpy.matmul`` on n×n operands (best of ``repeats``)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    a @ b
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2.0 * n**3 / best


def _best(fn, repeats):
    fn()  # warm-up
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _problem(G, N, K, sigma, seed):
    from oscsim.engine import PhaseNetwork

    rng = np.random.default_rng(seed)
    omega = rng.standard_normal((G, N))
    C = rng.uniform(0.0, 2.0 * K / N, (G, N, N)) if G > 1 else rng.uniform(0.0, 2.0 * K / N, (N, N))
    y0 = rng.uniform(0, 2 * np.pi, (G, N))
    return PhaseNetwork(omega=omega, coupling=C, sigma=sigma), y0


def _numpy_matmul(net, dt, steps, y0, seed):
    rng = np.random.default_rng(seed)
    C = net.coupling
    th = y0.copy()
    sq = np.sqrt(dt)
    for _ in range(steps):
        s, c = np.sin(th), np.cos(th)
        cs = np.einsum("gij,gj->gi", C, s) if C.shape[0] > 1 else s @ C[0].T
        cc = np.einsum("gij,gj->gi", C, c) if C.shape[0] > 1 else c @ C[0].T
        th = th + dt * (net.omega + c * cs - s * cc) + net.sigma * sq * rng.standard_normal(th.shape)
    return th


def _scipy(net, t1, y0):
    """solve_ivp on all G networks as one system of G·N phases (batched matrix products)."""
    from scipy.integrate import solve_ivp

    C = net.coupling
    G, N = y0.shape
    om = np.broadcast_to(net.omega, (G, N))

    def f(t, th):
        th = th.reshape(G, N)
        s, c = np.sin(th), np.cos(th)
        cs = np.einsum("gij,gj->gi", C, s) if C.shape[0] > 1 else s @ C[0].T
        cc = np.einsum("gij,gj->gi", C, c) if C.shape[0] > 1 else c @ C[0].T
        return (om + c * cs - s * cc).ravel()

    sol = solve_ivp(f, (0.0, t1), y0.ravel(), method="RK45", rtol=1e-6, atol=1e-9)
    return sol.nfev


def run_case(name, G, N, steps, dt, repeats, brian2_target, *, numpy_steps, brian2_groups, brian2_steps,
             scipy_on, progress):
    from oscsim.engine import EulerMaruyama, SaveAt, simulate
    from oscsim.reference import simulate_brian2, simulate_numpy

    net, y0 = _problem(G, N, K=2.0, sigma=0.1, seed=1)
    pairs = G * N * N
    out = {"G": G, "N": N, "dt": dt, "method": "Euler-Maruyama, additive noise sigma=0.1", "coupling": "per group" if G > 1 else "shared"}
    T = steps * dt
    progress(f"{name}: engine")
    t = _best(lambda: simulate(net, EulerMaruyama(), 0.0, T, dt, y0, save=SaveAt([T]), seed=0), repeats)
    out["engine"] = {"steps": steps, "seconds": t, "pair_updates_per_s": pairs * steps / t}
    progress(f"{name}: numpy matmul")
    ns = min(steps, numpy_steps)
    t = _best(lambda: _numpy_matmul(net, dt, ns, y0, 0), max(1, repeats // 2))
    out["numpy_matmul"] = {"steps": ns, "seconds": t, "pair_updates_per_s": pairs * ns / t}
    progress(f"{name}: numpy reference")
    nr = max(2, ns // 10)
    t = _best(lambda: simulate_numpy(net, "euler_maruyama", 0.0, dt, nr, y0,
                                     dW=np.sqrt(dt) * np.random.default_rng(0).standard_normal((nr,) + y0.shape)), 1)
    out["numpy_reference"] = {"steps": nr, "seconds": t, "pair_updates_per_s": pairs * nr / t}
    progress(f"{name}: brian2 ({brian2_target})")
    gb = min(G, brian2_groups)
    from oscsim.engine import PhaseNetwork

    sub = PhaseNetwork(omega=net.omega[:gb], coupling=net.coupling[:gb] if G > 1 else net.coupling, sigma=0.1)
    bsteps = min(steps, brian2_steps)
    simulate_brian2(sub, "euler_maruyama", dt, 2, y0[:gb], seed=0, target=brian2_target)  # code generation
    best = np.inf
    for _ in range(max(1, repeats // 2)):
        r = simulate_brian2(sub, "euler_maruyama", dt, bsteps, y0[:gb], seed=0, target=brian2_target)
        best = min(best, r["run_time_s"])
    out["brian2"] = {"target": brian2_target, "groups": gb, "steps": bsteps, "seconds": best,
                     "pair_updates_per_s": gb * N * N * bsteps / best}
    if scipy_on:
        progress(f"{name}: scipy")
        from oscsim.engine import PhaseNetwork as PN

        det = PN(omega=net.omega, coupling=net.coupling)
        tic = time.perf_counter()
        nfev = _scipy(det, T, y0)
        t = time.perf_counter() - tic
        out["scipy_solve_ivp"] = {"method": "RK45 rtol=1e-6 atol=1e-9, deterministic, all groups as one system",
                                  "nfev": int(nfev), "seconds": t, "pair_updates_per_s": pairs * nfev / t}
    return out


def run_benchmark(*, steps=2000, batched_steps=300, repeats=3, quick=False, progress=lambda s: None) -> dict:
    """Run both problems and return the JSON-ready result (see the module docstring)."""
    import numba

    from oscsim.reference.brian2_backend import select_brian2_target

    if quick:
        steps, batched_steps, repeats = 200, 30, 1
    progress("gemm")
    gemms = [gemm_rate(repeats=5)]
    progress("brian2 target")
    target = select_brian2_target("cython")
    single = run_case("single", 1, 256, steps, 0.01, repeats, target, numpy_steps=steps, brian2_groups=1,
                      brian2_steps=steps if not quick else 50, scipy_on=True, progress=progress)
    gemms.append(gemm_rate(repeats=5))
    batched = run_case("batched", 32, 512, batched_steps, 0.01, repeats, target, numpy_steps=max(batched_steps // 5, 2),
                       brian2_groups=2, brian2_steps=max(batched_steps // 3, 2), scipy_on=True, progress=progress)
    gemms.append(gemm_rate(repeats=5))
    gemm_best = max(gemms)
    eng_single = single["engine"]["pair_updates_per_s"]
    eng_batched = batched["engine"]["pair_updates_per_s"]
    return {
        "engine_vs_brian2": eng_single / single["brian2"]["pair_updates_per_s"],
        "gemm_fraction": 4.0 * eng_batched / gemm_best,
        "engine_vs_numpy": eng_single / single["numpy_reference"]["pair_updates_per_s"],
        "engine_vs_numpy_matmul": eng_single / single["numpy_matmul"]["pair_updates_per_s"],
        "engine_vs_scipy": eng_single / single["scipy_solve_ivp"]["pair_updates_per_s"],
        "batched_engine_vs_brian2": eng_batched / batched["brian2"]["pair_updates_per_s"],
        "batched_engine_vs_numpy_matmul": eng_batched / batched["numpy_matmul"]["pair_updates_per_s"],
        "batched_engine_vs_scipy": eng_batched / batched["scipy_solve_ivp"]["pair_updates_per_s"],
        "single_gemm_fraction": 4.0 * eng_single / gemm_best,
        "engine_flops_per_s": {"single": 4.0 * eng_single, "batched": 4.0 * eng_batched},
        "gemm_flops_per_s": gemm_best,
        "gemm": "numpy.matmul float64 1024x1024, all threads, best of 5, measured before, between and after the "
                "cases; the maximum is used",
        "gemm_flops_per_s_samples": gemms,
        "brian2_target": target,
        "single": single,
        "batched": batched,
        "machine": {"cpus": os.cpu_count(), "numba_threads": numba.get_num_threads(), "python": sys.version.split()[0],
                    "platform": platform.platform(), "numpy": np.__version__, "numba": numba.__version__},
        "quick": quick,
    }


def run(args: argparse.Namespace) -> int:
    show = (not args.json) and sys.stderr.isatty()
    res = run_benchmark(steps=args.steps, batched_steps=args.batched_steps, repeats=args.repeats, quick=args.quick,
                        progress=(lambda s: print(f"[bench] {s}", file=sys.stderr)) if show else (lambda s: None))
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(f"engine/Brian2 (single N=256): {res['engine_vs_brian2']:.1f}x  (Brian2 target {res['brian2_target']})")
        print(f"engine/NumPy reference: {res['engine_vs_numpy']:.1f}x; engine/NumPy matmul: {res['engine_vs_numpy_matmul']:.1f}x")
        print(f"engine/solve_ivp: {res['engine_vs_scipy']:.1f}x")
        print(f"batched gemm fraction: {res['gemm_fraction']:.2f} (engine {res['engine_flops_per_s']['batched']/1e9:.1f} "
              f"GF/s, matmul {res['gemm_flops_per_s']/1e9:.1f} GF/s)")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("integrator", help="engine vs NumPy, Brian2, solve_ivp on dense Kuramoto networks",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--steps", type=int_range(1), default=2000,
                   help="Euler-Maruyama steps of the single-network problem (>= 1)")
    p.add_argument("--batched-steps", type=int_range(1), default=300,
                   help="steps of the batched problem (G=32, N=512) (>= 1)")
    p.add_argument("--repeats", type=int_range(1), default=3, help="timed repeats, best kept (>= 1)")
    p.add_argument("--quick", action="store_true", help="tiny run (smoke test; figures not meaningful)")
    p.set_defaults(func=run)
