"""The GPU checks of issue 22, prepared to run ONCE in a session that is lent a GPU (an H200), in under 8 minutes.

    # on the device machine, from the repository root (its python3 has torch, numba, numba-cuda):
    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 benchmarks/gpu_check.py --out $OUT/gpu_check.json
    # here, on the CPU, every code path on tiny sizes (figures meaningless):
    .venv/bin/python benchmarks/gpu_check.py --dry-run

Prints one JSON object (and writes it to ``--out``): ``environment`` and one entry per check, each with its
wall time, or ``error`` (the traceback's last line) if it failed; a failed check does not stop the others.
``--only a,b`` runs some checks. ``--dry-run`` sets ``NUMBA_ENABLE_CUDASIM=1`` before Numba is imported
(the CUDA kernels run in Numba's simulator), runs torch on the CPU and skips what needs a real GPU (the CUDA
graph replay), saying so in the output.

Checks (one function each, registered in ``CHECKS``; to add one, write ``check_<name>(ctx) -> dict`` and add it
there):

``engine_throughput``
    The phase-network engine on three problems (a default ``oscsim simulate`` chip layer; a 1M-parameter
    model's layer, N = 256; a long noisy run where per-step launch costs show): the CPU engine (all cores),
    ``simulate(..., backend="cuda")`` (its whole call, and the kernel alone), and a hand-written batched torch
    loop on the same GPU in float64 (one ``bmm`` over the coupling for all harmonics per evaluation), plain
    and replayed from a CUDA graph. Oscillator-steps/s, pair-updates/s and the ratios.
``agreement``
    CUDA against the CPU path: a deterministic run (max |difference| of the phases; the tests ask 1e-12 on
    small runs) and the statistics of a noisy one with 4,096 groups (per-group displacement mean and
    variance and final order parameter; z-scores of the GPU − CPU difference, |z| < 4 passes).
``nvml_energy``
    Measured GPU energy per token of the closed-form attention layers (:func:`mapping.energy.measure_gpu_energy`,
    NVML's total-energy counter over many repetitions, whole board) of the bundled tiny Kuramoto and SSA-1D models
    and of a freshly initialised 1M Kuramoto model, beside the bounds the energy report uses (H100-SXM figures;
    the board here is an H200). Dry run: a stand-in counter on the CPU (exercises the code path only).
``triton_ssa``
    The fused Triton SSA kernel against the tiled and dense PyTorch forms on the GPU (float32, N = 1,024 and
    4,096, causal): forward and forward + backward times, peak memory, max relative difference to the tiled
    form. Dry run: ``TRITON_INTERPRET=1`` (the interpreter, tiny N).
``train_step_1m``
    Training-step rate of the 1M-parameter Kuramoto, SSA-1D and transformer models on the GPU (batch 32,
    256 tokens, AdamW, float32): tokens/s of the best of 3 rounds of 5 steps after a warm-up.

Budget: the whole script is sized to finish in under 8 minutes on an H200 (``total_wall_s`` in the output);
a check that fails records its error and the others still run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import traceback


class Context:
    """What every check gets: the mode, the torch device and the sizes of the problems."""

    def __init__(self, dry_run: bool):
        self.dry = dry_run
        self.t_start = time.perf_counter()

    def torch_device(self):
        import torch

        return torch.device("cpu" if self.dry else "cuda")

    def sync(self):
        if not self.dry:
            import torch

            torch.cuda.synchronize()

    def size(self, full: dict, dry: dict) -> dict:
        return {**full, **dry} if self.dry else full


def _best(fn, repeats):
    best, out = math.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


# ---- the problems -----------------------------------------------------------------------------------------
# harmonics of the ring macromodel of the default chip (layer 0 of `oscsim simulate`, rounded)
CHIP_HARMONICS = [[1.0, 0.0], [0.0373, -0.0269], [-0.0046, 0.0020]]
PROBLEMS = {
    # name: groups, oscillators, harmonics, solver, steps, dt, sigma, causal (lower-triangular) coupling
    "chip_layer_tiny": dict(G=512, N=128, harmonics=CHIP_HARMONICS, solver="StochasticHeun", steps=16, dt=0.25,
                            sigma=0.05, causal=True),
    "chip_layer_1m": dict(G=2048, N=256, harmonics=CHIP_HARMONICS, solver="StochasticHeun", steps=16, dt=0.25,
                          sigma=0.05, causal=True),
    "long_noisy_run": dict(G=4096, N=64, harmonics=None, solver="EulerMaruyama", steps=2000, dt=0.01, sigma=0.3,
                           causal=False),
}
DRY = dict(G=3, N=6, steps=3)


def _problem(p, seed=0):
    import numpy as np

    from oscsim.engine import PhaseNetwork

    rng = np.random.default_rng(seed)
    G, N = p["G"], p["N"]
    C = rng.uniform(0.0, 2.0 / N, (G, N, N))
    if p["causal"]:
        C = np.tril(C, -1)
    net = PhaseNetwork(rng.normal(0.0, 0.2, (G, N)), C, harmonics=p["harmonics"], sigma=p["sigma"])
    return net, rng.uniform(0, 2 * np.pi, (G, N))


def _solver(name):
    from oscsim import engine

    return getattr(engine, name)()


def torch_loop(net, y0, p, device, graph=False):
    """A hand-written batched float64 torch loop of the same network: returns (seconds, final phases).

    Per evaluation: sin/cos of every harmonic stacked into (G, N, 2M), ONE batched matrix product with the
    coupling, the combination. Noise from torch's generator (another stream than either engine path).
    ``graph``: capture one step in a CUDA graph and replay it (no per-kernel launch cost; CUDA only).
    """
    import torch

    import numpy as np

    f64 = torch.float64
    # (np.array: the model's arrays are read-only, torch wants writable ones)
    C = torch.as_tensor(np.array(net.coupling), dtype=f64, device=device).expand(y0.shape[0], -1, -1).contiguous()
    om = torch.as_tensor(np.array(net.omega), dtype=f64, device=device)
    harm = torch.tensor(p["harmonics"] or [[1.0, 0.0]], dtype=f64, device=device)
    M = harm.shape[0]
    mm = torch.arange(1, M + 1, dtype=f64, device=device)
    sig = float(p["sigma"])
    h = float(p["dt"])
    sq = math.sqrt(h)
    heun = p["solver"] == "StochasticHeun"
    torch.manual_seed(0)

    def f(y):
        ang = y[:, :, None] * mm  # (G, N, M)
        c, s = torch.cos(ang), torch.sin(ang)
        P = torch.bmm(C, torch.cat([c, s], dim=2))  # (G, N, 2M): C cos mθ, C sin mθ
        pc, ps = P[:, :, :M], P[:, :, M:]
        im = c * ps - s * pc
        re = c * pc + s * ps
        return om + im @ harm[:, 0] + re @ harm[:, 1]

    def step(y):
        dW = torch.randn(y.shape, dtype=f64, device=device) * sq
        k1 = f(y)
        if not heun:
            return y + h * k1 + sig * dW
        k2 = f(y + h * k1 + sig * dW)
        return y + 0.5 * h * (k1 + k2) + sig * dW

    y = torch.as_tensor(y0, dtype=f64, device=device).clone()
    if not graph:
        def run():
            yy = y.clone()
            for _ in range(p["steps"]):
                yy = step(yy)
            if device.type == "cuda":
                torch.cuda.synchronize()
            return yy
        run()  # warm-up
        t, out = _best(run, 2)
        return t, out.cpu().numpy()
    static = y.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            static.copy_(step(static))
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static.copy_(step(static))

    def run():
        static.copy_(y)
        for _ in range(p["steps"]):
            g.replay()
        torch.cuda.synchronize()
        return static
    run()
    t, out = _best(run, 2)
    return t, out.cpu().numpy()


# ---- the checks -------------------------------------------------------------------------------------------
def check_environment(ctx) -> dict:
    from importlib import metadata

    import numba
    import numpy as np

    from oscsim.engine._cuda import cuda_available

    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    out = {"python": sys.version.split()[0], "platform": platform.platform(), "numpy": np.__version__,
           "numba": numba.__version__, "numba_cuda": version("numba-cuda"), "torch": version("torch"),
           "cpus": os.cpu_count(), "numba_threads": numba.get_num_threads(), "dry_run": ctx.dry,
           "engine_cuda": cuda_available()[1]}
    try:
        import torch

        out["torch_cuda"] = torch.cuda.is_available()
        if torch.cuda.is_available():
            prop = torch.cuda.get_device_properties(0)
            out["gpu"] = {"name": prop.name, "memory_gib": prop.total_memory / 2**30,
                          "multiprocessors": prop.multi_processor_count, "capability": f"{prop.major}.{prop.minor}"}
    except Exception as exc:  # noqa: BLE001 - recorded, not fatal
        out["torch_error"] = repr(exc)
    return out


def check_engine_throughput(ctx) -> dict:
    import numpy as np

    from oscsim.engine import SaveAt, simulate

    out = {}
    for name, full in PROBLEMS.items():
        p = ctx.size(full, DRY)
        net, y0 = _problem(p)
        packed = net.pack()
        T = p["steps"] * p["dt"]
        run = {b: (lambda b=b: simulate(packed, _solver(p["solver"]), 0.0, T, p["dt"], y0, save=SaveAt([T]), seed=1,
                                        backend=b)) for b in ("cpu", "cuda")}
        res = {"problem": {k: v for k, v in p.items() if k != "harmonics"}, "harmonics": len(p["harmonics"] or [1])}
        tic = time.perf_counter()
        run["cpu"]()
        res["cpu_first_call_s"] = time.perf_counter() - tic  # includes compiling the CPU kernels if not cached
        res["cpu_s"], _ = _best(run["cpu"], 1 if ctx.dry else 2)
        tic = time.perf_counter()
        run["cuda"]()
        res["cuda_first_call_s"] = time.perf_counter() - tic  # includes compiling the CUDA kernel
        res["cuda_s"], sol = _best(run["cuda"], 1 if ctx.dry else 3)
        res["cuda_kernel_s"], res["cuda_transfer_s"] = sol.stats["kernel_s"], sol.stats["transfer_s"]
        dev = ctx.torch_device()
        res["torch_s"], yt = torch_loop(net, y0, p, dev)
        if ctx.dry:
            res["torch_graph_s"] = None
            res["torch_graph"] = "skipped: CUDA graphs need a GPU (dry run)"
        else:
            res["torch_graph_s"], _ = torch_loop(net, y0, p, dev, graph=True)
        osc_steps = p["G"] * p["N"] * p["steps"]
        pairs = p["G"] * p["N"] ** 2 * p["steps"] * (0.5 if p["causal"] else 1.0) * res["harmonics"]
        pairs *= 2 if p["solver"] == "StochasticHeun" else 1  # drift evaluations per step
        for k in ("cpu_s", "cuda_s", "cuda_kernel_s", "torch_s", "torch_graph_s"):
            if res.get(k):
                res[k.replace("_s", "_oscillator_steps_per_s")] = osc_steps / res[k]
                res[k.replace("_s", "_pair_updates_per_s")] = pairs / res[k]
        res["cuda_vs_cpu"] = res["cpu_s"] / res["cuda_s"]
        res["cuda_vs_torch"] = res["torch_s"] / res["cuda_s"]
        if res["torch_graph_s"]:
            res["cuda_vs_torch_graph"] = res["torch_graph_s"] / res["cuda_s"]
        res["torch_final_phase_spread"] = float(np.std(yt))  # a sanity figure: the loop ran and stayed finite
        out[name] = res
        print(f"[gpu_check] {name}: cpu {res['cpu_s']:.3g} s, cuda {res['cuda_s']:.3g} s "
              f"(kernel {res['cuda_kernel_s']:.3g} s), torch {res['torch_s']:.3g} s", file=sys.stderr)
    return out


def check_agreement(ctx) -> dict:
    import numpy as np

    from oscsim.engine import RK4, PhaseNetwork, SaveAt, StochasticHeun, simulate

    rng = np.random.default_rng(5)
    G, N, steps = (3, 5, 4) if ctx.dry else (256, 64, 200)
    net = PhaseNetwork(rng.normal(0, 0.3, (G, N)), np.tril(rng.uniform(0, 2.0 / N, (G, N, N)), -1),
                       harmonics=CHIP_HARMONICS, phase_lag=rng.uniform(0, 0.3, (N, N)))
    y0 = rng.uniform(0, 2 * np.pi, (G, N))
    T = steps * 0.01
    a = simulate(net, RK4(), 0.0, T, 0.01, y0, save=SaveAt([T]), backend="cuda")
    b = simulate(net, RK4(), 0.0, T, 0.01, y0, save=SaveAt([T]))
    out = {"deterministic": {"G": G, "N": N, "steps": steps, "max_abs_difference": float(np.abs(a.ys - b.ys).max())}}
    G, N, steps = (4, 4, 3) if ctx.dry else (4096, 32, 100)
    net = PhaseNetwork(rng.normal(0, 0.3, (G, N)), rng.uniform(0, 2.0 / N, (G, N, N)), sigma=0.6)
    y0 = rng.uniform(0, 2 * np.pi, (G, N))
    T = steps * 0.02
    stats = {}
    for backend in ("cuda", "cpu"):
        sol = simulate(net, StochasticHeun(), 0.0, T, 0.02, y0, save=SaveAt([T]), seed=21, backend=backend)
        d = sol.y_final - y0
        stats[backend] = {"mean": d.mean(1), "var": d.var(1, ddof=1),
                          "r": np.abs(np.exp(1j * sol.y_final).mean(1))}
    z = {}
    for key in ("mean", "var", "r"):
        x, y = stats["cuda"][key], stats["cpu"][key]
        se = math.sqrt(x.var(ddof=1) / G + y.var(ddof=1) / G)
        z[key] = {"cuda": float(x.mean()), "cpu": float(y.mean()), "z": float((x.mean() - y.mean()) / se)}
    out["statistics"] = {"G": G, "N": N, "steps": steps, "sigma": 0.6, "per_statistic": z,
                         "pass": bool(all(abs(v["z"]) < 4 for v in z.values()))}
    return out


class _StandInNVML:
    """pynvml's three calls over a counter that advances 1 mJ per read (dry runs: the code path, no figure)."""

    def __init__(self):
        self.mj = 0

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        self.mj += 1
        return self.mj


def check_nvml_energy(ctx) -> dict:
    import torch

    from mapping.energy.gpu import measure_gpu_energy
    from mapping.model_io import load_model
    from oscsim.data import eval_windows, load_shakespeare
    from oscsim.nn.registry import build_model, model_config

    torch.manual_seed(0)
    models = {"kuramoto-tiny": load_model("kuramoto-tiny")[0], "ssa1d-tiny": load_model("ssa1d-tiny")[0],
              "kuramoto-1m (fresh init)": build_model(model_config("kuramoto", "1m"))}
    data = load_shakespeare().split("valid")
    out = {}
    for name, m in models.items():
        m.eval()
        T = 16 if ctx.dry else int(m.config.seq_len)
        x, _ = eval_windows(data, T, max_windows=1 if ctx.dry else 8)
        kw = dict(device="cpu", nvml=_StandInNVML()) if ctx.dry else {}
        res = measure_gpu_energy(m, x, repeats=2 if ctx.dry else 200, **kw)
        out[name] = {"tokens_per_repeat": int(x.numel()), **(res or {"error": "no CUDA GPU / pynvml"})}
        print(f"[gpu_check] nvml_energy {name}: {out[name]}", file=sys.stderr)
    if ctx.dry:
        out["note"] = "dry run: a stand-in NVML counter on the CPU; the J/token figures are meaningless"
    return out


def check_triton_ssa(ctx) -> dict:
    import torch

    from oscsim.nn.ssa_functional import ssa_attention

    dev = ctx.torch_device()
    g = torch.Generator().manual_seed(0)
    out = {}
    for N in ((20,) if ctx.dry else (1024, 4096)):
        B, H, F, d = (1, 2, 4, 4) if ctx.dry else (1, 4, 16, 32)
        om = (0.1 * torch.randn(B, H, N, F, generator=g)).to(dev)
        th = (2.0 * torch.rand(B, H, N, d, generator=g)).to(dev)
        v = torch.randn(B, H, N, d, generator=g).to(dev)
        a, K = torch.ones(H, device=dev), torch.tensor(2.0, device=dev)
        res = {"B": B, "H": H, "N": N, "F": F, "d": d, "dtype": "float32", "causal": True}
        ref = None
        for impl in (("tiled", "triton") if ctx.dry else ("dense", "tiled", "triton")):
            if impl == "dense" and N > 1024:
                continue  # (N, N) float32 per head: the dense form is the reference at the smaller N only
            args = [t.clone().requires_grad_() for t in (om, th, v)]

            def fwd(impl=impl, args=args):
                with torch.no_grad():
                    y = ssa_attention(*args, a, K, causal=True, impl=impl)
                ctx.sync()
                return y

            def fwd_bwd(impl=impl, args=args):
                y = ssa_attention(*args, a, K, causal=True, impl=impl)
                y.sum().backward()
                ctx.sync()
                return y

            try:
                fwd()
                if not ctx.dry:
                    torch.cuda.reset_peak_memory_stats()
                t_f, y = _best(fwd, 1 if ctx.dry else 5)
                t_fb, _ = _best(fwd_bwd, 1 if ctx.dry else 3)
                r = {"forward_s": t_f, "forward_backward_s": t_fb}
                if not ctx.dry:
                    r["peak_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30
                if impl == "tiled":
                    ref = y.detach()
                elif ref is not None:
                    r["max_rel_difference_to_tiled"] = float((y.detach() - ref).abs().max() / ref.abs().max())
                res[impl] = r
            except Exception as exc:  # noqa: BLE001 - one implementation failing keeps the others
                res[impl] = {"error": f"{type(exc).__name__}: {exc}"}
        if "forward_s" in res.get("triton", {}) and "forward_s" in res.get("tiled", {}):
            res["triton_vs_tiled_forward"] = res["tiled"]["forward_s"] / res["triton"]["forward_s"]
        out[f"N{N}"] = res
        print(f"[gpu_check] triton_ssa N={N}: {res}", file=sys.stderr)
    return out


def check_train_step_1m(ctx) -> dict:
    import torch
    import torch.nn.functional as F

    from oscsim.nn.registry import build_model, count_parameters, model_config
    from oscsim.train.loop import TrainConfig, _optimizer

    dev = ctx.torch_device()
    cfg = TrainConfig()
    batch, size, steps, rounds = (1, "tiny", 1, 1) if ctx.dry else (32, "1m", 5, 3)
    g = torch.Generator().manual_seed(0)
    out = {"batch": batch, "size": size, "steps_per_round": steps, "rounds": rounds}
    for name in ("kuramoto", "ssa1d", "transformer"):
        try:
            torch.manual_seed(0)
            mc = model_config(name, size)
            T = 16 if ctx.dry else int(mc.seq_len)
            net = build_model(mc).to(dev)
            net.train()
            opt = _optimizer(net, cfg)
            x = torch.randint(0, 256, (batch, T), generator=g).to(dev)
            y = torch.randint(0, 256, (batch, T), generator=g).to(dev)

            def step():
                loss = F.cross_entropy(net(x).flatten(0, 1), y.flatten())
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.grad_clip)
                opt.step()
                return loss

            step()  # warm-up (allocator, kernels)
            ctx.sync()

            def round_():
                for _ in range(steps):
                    step()
                ctx.sync()

            t, _ = _best(round_, rounds)
            out[name] = {"tokens_per_s": batch * T * steps / t, "seconds_per_step": t / steps,
                         "n_parameters": count_parameters(net), "seq_len": T}
        except Exception as exc:  # noqa: BLE001 - recorded per model
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"[gpu_check] train_step {name}: {out[name]}", file=sys.stderr)
    return out


CHECKS = {
    "environment": check_environment,
    "engine_throughput": check_engine_throughput,
    "agreement": check_agreement,
    "nvml_energy": check_nvml_energy,
    "triton_ssa": check_triton_ssa,
    "train_step_1m": check_train_step_1m,
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dry-run", action="store_true", help="tiny sizes on the CPU (CUDA simulator, torch on CPU)")
    ap.add_argument("--only", default="", help=f"comma-separated checks among {', '.join(CHECKS)}")
    ap.add_argument("--out", default="", help="also write the JSON here")
    args = ap.parse_args(argv)
    if args.dry_run:
        if "numba" in sys.modules:
            raise SystemExit("--dry-run must set NUMBA_ENABLE_CUDASIM before numba is imported")
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        if "triton" in sys.modules:
            raise SystemExit("--dry-run must set TRITON_INTERPRET before triton is imported")
        os.environ["TRITON_INTERPRET"] = "1"  # the Triton SSA kernel on CPU tensors (the interpreter)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if args.dry_run:
        from oscsim.engine import _cuda

        _cuda.THREADS_PER_BLOCK = 1  # the simulator runs each CUDA thread as a Python thread
    names = [n for n in args.only.split(",") if n] or list(CHECKS)
    unknown = sorted(set(names) - set(CHECKS))
    if unknown:
        ap.error(f"unknown check(s) {unknown}; the checks are {', '.join(CHECKS)}")
    ctx = Context(args.dry_run)
    result = {"script": "benchmarks/gpu_check.py", "note": "dry run: figures meaningless" if args.dry_run else ""}
    for name in names:
        tic = time.perf_counter()
        try:
            result[name] = CHECKS[name](ctx)
        except Exception as exc:  # noqa: BLE001 - one failing check must not lose the others' figures
            result[name] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-3000:]}
        result.setdefault(name, {})
        if isinstance(result[name], dict):
            result[name]["wall_s"] = time.perf_counter() - tic
        print(f"[gpu_check] {name} done in {time.perf_counter() - tic:.1f} s", file=sys.stderr)
    result["total_wall_s"] = time.perf_counter() - ctx.t_start
    text = json.dumps(result, indent=1, default=float)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    failed = [n for n in names if isinstance(result.get(n), dict) and "error" in result[n]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
