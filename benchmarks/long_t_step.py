"""The long-T step: the per-group coupling kernel against the shared-coupling GEMM, in one process.

Through the public engine API: `PhaseNetwork` with one dense (N, N) coupling shared by G networks (a head's
2·k_h networks share its T × T score matrix), 16 stochastic Heun steps (two drift evaluations each), noise
σ = 0.1, ``simulate(..., coupling_product="kernel")`` against ``coupling_product="gemm"``. The two are
alternated, best of ``--repeats`` kept, so a loaded machine slows both alike; the JSON says how loaded it was.

A coupling term is one C_ij H(θ_j − θ_i) of one network in one drift evaluation: G · N² · 2 · steps per run.
For reference the script also times numpy's matmul (the BLAS numpy links, its default threads) of one
evaluation's product alone, [sin θ; cos θ] (2G × N) times Cᵀ: the "GEMM rate" without trigonometry or steps.
The script also prints the largest |Δθ| between the two paths' final phases (same seed: the same noise, the
sums in another order; see oscsim/engine/_gemm.py).

    .venv/bin/python benchmarks/long_t_step.py                       # N = 1,024 (8 networks), 4,096 (2 and 8)
    .venv/bin/python benchmarks/long_t_step.py --cases 512:8,8192:2 --json
    .venv/bin/python benchmarks/long_t_step.py --window 4096       # one head of kuramoto-1m at T = 4,096
    .venv/bin/python benchmarks/long_t_step.py --cases 512:4,512:64 --pattern offdiag   # blocked chip, B = 256

Coupling terms count the nonzero entries (``--pattern``: a block of the blocked schedule).

``--window T`` times one head of the bundled kuramoto-1m's chip integration at context T: its 2·k_h networks
sharing one causal (lower-triangular) T × T coupling, 16 stochastic Heun steps (the default chip's
settle_cycles × steps_per_cycle = 4 × 4): the shared product on all 2·k_h networks, the per-group kernel on 8 of
them (its time is linear in the networks: each runs alone), and the window's time as n_layers · n_heads heads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np


def _problem(N: int, G: int, seed: int = 1, pattern: str = "dense"):
    from oscsim.engine import PhaseNetwork

    rng = np.random.default_rng(seed)
    C = rng.uniform(0.0, 4.0 / N, (N, N))  # K = 2 on average: partly synchronised, as a score matrix is
    if pattern == "causal":  # a diagonal block of the blocked schedule: causal, no self-coupler
        C = np.tril(C, -1)
    elif pattern == "offdiag":  # an off-diagonal block: N/2 uncoupled keys drive N/2 queries
        C[: N // 2] = 0.0
        C[:, N // 2:] = 0.0
    return PhaseNetwork(omega=rng.standard_normal((G, N)), coupling=C, sigma=0.1), rng.uniform(0, 2 * np.pi, (G, N))


def run_case(N: int, G: int, steps: int, repeats: int, pattern: str = "dense") -> dict:
    from oscsim.engine import SaveAt, StochasticHeun, simulate

    net, y0 = _problem(N, G, pattern=pattern)
    dt = 0.05
    t1 = steps * dt

    def run(product):
        tic = time.perf_counter()
        sol = simulate(net, StochasticHeun(), 0.0, t1, dt, y0, save=SaveAt([t1]), seed=0, coupling_product=product)
        return time.perf_counter() - tic, sol

    run("kernel"), run("gemm")  # compile / load the kernels, fault in the buffers
    best = {"kernel": np.inf, "gemm": np.inf}
    finals = {}
    for _ in range(repeats):
        for product in ("kernel", "gemm"):
            t, sol = run(product)
            best[product] = min(best[product], t)
            finals[product] = sol.y_final
    terms = G * int(np.count_nonzero(net.coupling[0])) * 2 * steps  # N² dense
    out = {"N": N, "G": G, "pattern": pattern, "steps": steps, "coupling_terms": terms}
    for product, t in best.items():
        out[product] = {"seconds": t, "G_terms_per_s": terms / t / 1e9}
    # the GEMM rate: numpy's matmul (the BLAS numpy links) of one evaluation's product, [sin θ; cos θ] (2G, N)
    # times Cᵀ, alone (no trigonometry, no step), best of the same repeats
    X, CT = np.concatenate([np.sin(y0), np.cos(y0)]), net.coupling[0].T
    blas = np.inf
    for _ in range(repeats + 1):
        tic = time.perf_counter()
        np.matmul(X, CT)
        blas = min(blas, time.perf_counter() - tic)
    out["blas_product_only"] = {"seconds_per_evaluation": blas, "G_terms_per_s": G * N * N / blas / 1e9}
    out["gemm_over_kernel"] = best["kernel"] / best["gemm"]
    out["max_abs_dtheta"] = float(np.abs(finals["kernel"] - finals["gemm"]).max())
    return out


def run_window(T: int, steps: int) -> dict:
    """One head of kuramoto-1m at context T (see the module docstring); times in seconds."""
    from oscsim.engine import PhaseNetwork, SaveAt, StochasticHeun, simulate
    from oscsim.nn.registry import model_config

    cfg = model_config("kuramoto", "1m")
    G, heads = 2 * (cfg.k // cfg.n_heads), cfg.n_layers * cfg.n_heads
    rng = np.random.default_rng(2)
    C = np.tril(rng.uniform(0.0, 4.0 / T, (T, T)))  # causal: token t hears tokens u <= t
    net = PhaseNetwork(omega=rng.standard_normal((G, T)), coupling=C, sigma=0.1)
    y0 = rng.uniform(0, 2 * np.pi, (G, T))
    dt = 0.05
    out = {"T": T, "networks_per_head": G, "heads_per_window": heads, "steps": steps,
           "nonzero_terms_per_window": heads * G * (T * (T + 1) // 2) * 2 * steps}
    for product, g in (("gemm", G), ("kernel", 8)):
        sub = net if g == G else PhaseNetwork(omega=net.omega[:g], coupling=C, sigma=0.1)
        simulate(sub, StochasticHeun(), 0.0, dt, dt, y0[:g], save=SaveAt([dt]), seed=0, coupling_product=product)
        tic = time.perf_counter()
        simulate(sub, StochasticHeun(), 0.0, steps * dt, dt, y0[:g], save=SaveAt([steps * dt]), seed=0,
                 coupling_product=product)
        t = time.perf_counter() - tic
        head = t * G / g
        out[product] = {"networks_timed": g, "seconds_timed": t, "seconds_per_head": head,
                        "seconds_per_window": head * heads,
                        "G_nonzero_terms_per_s": out["nonzero_terms_per_window"] / (head * heads) / 1e9}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="1024:8,4096:2,4096:8", help="N:G pairs, comma-separated")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--window", type=int, default=0, metavar="T", help="time one head of kuramoto-1m at context T")
    ap.add_argument("--pattern", choices=("dense", "causal", "offdiag"), default="dense",
                    help="the shared coupling's nonzeros: dense; causal (a diagonal block of the blocked schedule); "
                         "offdiag (an off-diagonal block: the first N/2 uncoupled, driving the last N/2)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    import numba

    from oscsim.bench.integrator import cpu_info

    cases = [tuple(int(x) for x in c.split(":")) for c in args.cases.split(",")]
    load0 = os.getloadavg()
    if args.window:
        cases = []
    results = [run_case(N, G, args.steps, args.repeats, args.pattern) for N, G in cases]
    window = run_window(args.window, args.steps) if args.window else None
    report = {"cases": results, "window": window, "load_average_before_after": [load0[0], os.getloadavg()[0]],
              "cpu": cpu_info(), "cpus": os.cpu_count(), "numba_threads": numba.get_num_threads(),
              "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"), "numpy": np.__version__,
              "platform": platform.platform(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    if results:
        print(f"{'N':>6} {'G':>3} {'kernel G terms/s':>17} {'gemm G terms/s':>15} {'ratio':>6} {'BLAS product':>13} "
              f"{'max |dθ|':>9}")
    for r in results:
        print(f"{r['N']:>6} {r['G']:>3} {r['kernel']['G_terms_per_s']:>17.2f} {r['gemm']['G_terms_per_s']:>15.2f} "
              f"{r['gemm_over_kernel']:>6.2f} {r['blas_product_only']['G_terms_per_s']:>13.2f} "
              f"{r['max_abs_dtheta']:>9.1e}")
    if window:
        w = window
        print(f"kuramoto-1m, T = {w['T']}: {w['heads_per_window']} heads x {w['networks_per_head']} networks, "
              f"{w['steps']} stochastic Heun steps, causal coupling ({w['nonzero_terms_per_window']:.3g} nonzero "
              "coupling terms per window)")
        for product in ("kernel", "gemm"):
            r = w[product]
            print(f"  {product:>6}: {r['seconds_timed']:.2f} s for {r['networks_timed']} networks -> "
                  f"{r['seconds_per_head']:.1f} s per head -> {r['seconds_per_window']:.0f} s per window "
                  f"({r['G_nonzero_terms_per_s']:.2f} G nonzero terms/s)")
    print(f"load average {report['load_average_before_after'][0]:.1f} -> {report['load_average_before_after'][1]:.1f} "
          f"on {report['cpus']} CPUs; {report['date']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
