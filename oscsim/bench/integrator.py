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

from oscsim.cli import int_range, plain_help

__all__ = ["register", "run", "run_benchmark", "gemm_rate", "cpu_info", "coupling_codegen", "numba_target"]

# x86 vector extensions reported by `cpu_info`, widest first (Linux /proc/cpuinfo flag names)
_ISA_FLAGS = ("avx512f", "avx512vl", "avx512dq", "avx512bw", "avx512_fp16", "avx2", "fma", "avx", "sse4_2")


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def cpu_info() -> dict:
    """The processor the figures were taken on: model, vector ISA, caches, SMT (Linux; fields None elsewhere).

    Returns
    -------
    dict
        ``model`` (the ``model name`` of /proc/cpuinfo), ``vector_isa`` (the widest of AVX-512 / AVX2+FMA /
        AVX / SSE4.2), ``isa_flags`` (which of the x86 vector flags are present), ``caches`` (level, type and
        size of each cache of cpu0, from sysfs), ``threads_per_core`` (2 when the logical CPUs are SMT
        siblings: then the engine's threads share one core's FMA units) and ``logical_cpus``.
    """
    model = flags = None
    text = _read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        key, _, val = line.partition(":")
        if key.strip() == "model name" and model is None:
            model = val.strip()
        elif key.strip() == "flags" and flags is None:
            flags = set(val.split())
    if model is None:
        model = platform.processor() or platform.machine()
    present = [f for f in _ISA_FLAGS if flags is not None and f in flags]
    if "avx512f" in present:
        isa = "AVX-512"
    elif "avx2" in present and "fma" in present:
        isa = "AVX2+FMA"
    elif "avx" in present:
        isa = "AVX"
    elif "sse4_2" in present:
        isa = "SSE4.2"
    else:
        isa = None if flags is None else "other"
    caches = []
    for k in range(8):
        base = f"/sys/devices/system/cpu/cpu0/cache/index{k}"
        size = _read(f"{base}/size")
        if size is None:
            break
        caches.append({"level": _read(f"{base}/level"), "type": _read(f"{base}/type"), "size": size,
                       "shared_with_cpus": _read(f"{base}/shared_cpu_list")})
    sib = _read("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list")
    tpc = None
    if sib:
        tpc = 0
        for part in sib.split(","):
            a, _, b = part.partition("-")
            tpc += int(b) - int(a) + 1 if b else 1
    return {"model": model, "vector_isa": isa, "isa_flags": present, "caches": caches, "threads_per_core": tpc,
            "logical_cpus": os.cpu_count()}


def numba_target() -> dict:
    """The LLVM target Numba compiles for in this process: CPU name, whether AVX-512 is enabled, overrides."""
    import numba
    from numba.core.registry import cpu_target

    cg = cpu_target.target_context.codegen()
    features = cg._get_host_cpu_features()
    feats = set(features.split(","))
    return {"cpu_name": cg._get_host_cpu_name(), "avx512f_enabled": "+avx512f" in feats,
            "avx2_enabled": "+avx2" in feats, "fma_enabled": "+fma" in feats,
            "NUMBA_CPU_NAME": numba.config.CPU_NAME, "NUMBA_CPU_FEATURES": numba.config.CPU_FEATURES,
            "numba": numba.__version__}


def coupling_codegen(cpu_name: str | None = None, features: str | None = None) -> dict:
    """What LLVM makes of the engine's coupling product (`fused_two_products`) for a target.

    Compiles a fresh copy with the engine's signature and reads its IR and assembly: the vector widths of
    the packed multiply–adds, the columns each iteration of the vectorised column loops covers, and the
    vector registers used. Without arguments, for this process's target (no extra process). With
    ``cpu_name`` (an LLVM CPU name such as ``skylake-avx512``, ``icelake-server``, ``znver4``), in a
    subprocess with ``NUMBA_CPU_NAME`` set and ``NUMBA_CPU_FEATURES`` = ``features`` (default ``""``: that
    CPU's own features): compile only, so any x86 target can be inspected on any x86 machine.

    Returns
    -------
    dict
        ``cpu_name``, ``fma_vector_bits`` (widest packed FMA), ``fma_count_by_bits``, ``ir_vector_types``,
        ``loop_columns_per_iteration`` (the induction steps of the vector loops, main 4-row loop first),
        ``vector_registers`` (distinct ymm/zmm registers named) and ``hot_loop`` (the assembly block with
        the most packed FMAs: its instructions, FMAs, separate vector loads and stack accesses, i.e. spills).
    """
    if cpu_name is not None:
        import subprocess

        env = dict(os.environ, NUMBA_CPU_NAME=cpu_name, NUMBA_CPU_FEATURES="" if features is None else features)
        code = "import json; from oscsim.bench.integrator import coupling_codegen; print(json.dumps(coupling_codegen()))"
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])
    import re

    import numba as nb
    from numba import types as T

    from oscsim.engine._coupling import fused_two_products

    f = nb.njit(fastmath=True, boundscheck=False)(fused_two_products.py_func)
    a2 = T.Array(T.float64, 2, "C", readonly=True)
    a1 = T.Array(T.float64, 1, "C")
    i1 = T.Array(T.int64, 1, "C", readonly=True)
    f.compile((a2, a1, a1, i1, i1, a1, a1))
    sig = f.signatures[0]
    asm, ir = f.inspect_asm(sig), f.inspect_llvm(sig)
    bits = {"xmm": 128, "ymm": 256, "zmm": 512}
    counts: dict = {}
    for reg in re.findall(r"vfmadd\d+pd\s+[^\n]*?%([xyz]mm)\d+\s*$", asm, re.M):
        counts[bits[reg]] = counts.get(bits[reg], 0) + 1
    steps = [int(k) for k in re.findall(r"%index\.next\d* = add nuw i64 %index\d*, (\d+)", ir)]
    # the hot loop: of the innermost loops (a label, no other label, the jump back), the one with most packed FMAs
    lines = asm.splitlines()
    blocks = []
    for k, line in enumerate(lines):
        m = re.match(r"^(\.?LBB\w+):", line)
        if m:
            for e in range(k + 1, len(lines)):
                if re.match(r"^\.?LBB\w+:", lines[e]):
                    break  # not an innermost loop
                if re.match(rf"^\s+j\w+\s+{re.escape(m.group(1))}\s*$", lines[e]):
                    blocks.append(lines[k + 1 : e + 1])
                    break
    hot = max(blocks, key=lambda b: sum(bool(re.search(r"vfmadd\d+pd", x)) for x in b)) if blocks else []
    instr = [x.split()[0] for x in hot if x.strip() and not x.strip().startswith((".", "#")) and not x.endswith(":")]
    return {
        "cpu_name": numba_target()["cpu_name"],
        "fma_vector_bits": max(counts) if counts else None,
        "fma_count_by_bits": {str(k): v for k, v in sorted(counts.items())},
        "ir_vector_types": sorted(set(re.findall(r"<\d+ x double>", ir))),
        "loop_columns_per_iteration": steps,
        "vector_registers": {r: len(set(re.findall(rf"%{r}\d+", asm))) for r in ("ymm", "zmm")},
        "hot_loop": {"instructions": len(instr), "packed_fmas": sum(i.startswith("vfmadd") for i in instr),
                     "vector_loads": sum(i in ("vmovupd", "vmovapd") for i in instr),
                     "stack_accesses": sum("(%rsp)" in x for x in hot)},
    }


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
        "cpu": cpu_info(),
        "numba_target": numba_target(),
        "coupling_kernel": coupling_codegen(),
        "coupling_bytes_per_group": {"single": 8 * 256 * 256, "batched": 8 * 512 * 512},
        "quick": quick,
    }


def run(args: argparse.Namespace) -> int:
    if args.codegen_targets:
        targets = [t for t in args.codegen_targets.split(",") if t]
        res = {"host": coupling_codegen(), **{t: coupling_codegen(t) for t in targets}}
        print(json.dumps(res, indent=2))
        return 0
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
        cpu, kern = res["cpu"], res["coupling_kernel"]
        print(f"cpu: {cpu['model']} ({cpu['vector_isa']}); Numba target {kern['cpu_name']}, coupling loop "
              f"{kern['fma_vector_bits']}-bit FMAs, {kern['loop_columns_per_iteration'][:1]} columns per iteration")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("integrator", help="engine vs NumPy, Brian2, solve_ivp on dense Kuramoto networks",
                              description=plain_help(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--steps", type=int_range(1), default=2000,
                   help="Euler-Maruyama steps of the single-network problem (>= 1)")
    p.add_argument("--batched-steps", type=int_range(1), default=300,
                   help="steps of the batched problem (G=32, N=512) (>= 1)")
    p.add_argument("--repeats", type=int_range(1), default=3, help="timed repeats, best kept (>= 1)")
    p.add_argument("--quick", action="store_true", help="tiny run (smoke test; figures not meaningful)")
    p.add_argument("--codegen-targets", default="", metavar="CPU[,CPU...]",
                   help="only print, as JSON, the coupling kernel's code generation for this machine and for these "
                        "LLVM CPU names (compile only, e.g. skylake-avx512,icelake-server,znver4); no timing")
    p.set_defaults(func=run)
