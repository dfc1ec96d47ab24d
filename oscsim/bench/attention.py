"""``oscsim bench attention``: forward time and peak memory of the attention operators on the CPU.

Cases, all forward only, batch ``--batch``, width ``--d-model`` split over ``--heads`` heads, float32:

``sdpa``
    ``torch.nn.functional.scaled_dot_product_attention`` on (B, H, N, d_h) queries, keys and values,
    non-causal (on the CPU a flash-style tiled kernel): the baseline of every ratio.
``kuramoto_sdpa``, ``kuramoto_explicit``
    :class:`oscsim.nn.kuramoto.KuramotoAttention` (k = d_model phases) with ``impl="sdpa"`` (the identity
    of DESIGN §3.1 on the fused kernel, causal, head dimension 2 k_h) and ``impl="explicit"`` (the readable
    (B, H, N, N, k_h) reference), input phases (B, N, k).
``ssa_dense``, ``ssa_tiled``
    :func:`oscsim.nn.ssa_functional.ssa_attention` with ``impl="dense"`` (the reference form) and
    ``impl="tiled"``, from ω, θ, V of shape (B, H, N, d_h) (non-causal, reference boundary).

Time: the minimum over ``--repeats`` rounds after one warm-up call (``time.perf_counter``); within a round
the cases of one length take turns, so that changes of machine load affect them alike.

Peak memory: the increase of the process's resident set (``VmHWM`` − ``VmRSS`` before the call, Linux
``/proc``; the high-water mark is reset through ``/proc/self/clear_refs``) during one call, after one
warm-up call, measured in a fresh subprocess per case with glibc's ``MALLOC_MMAP_THRESHOLD_=65536`` so
that every tensor buffer is its own mapping, returned to the system when freed. Inputs are allocated
before and not counted; the output is. This sees every allocation of every thread: the tiled SSA path runs
its tiles on worker threads, whose allocations the PyTorch profiler's memory timeline does not record,
and ``tracemalloc`` sees no torch allocation at all. The kernel's page accounting is lazy (synced every 64
page faults), so figures are good to a few hundred KiB. The profiler figure (main thread only) is also
reported, as ``peak_bytes_profiler``. Cases whose quadratic tensors would exceed ``--max-dense-gib`` are
skipped and recorded as null with the reason.

The JSON records the processor (``environment.cpu_model``, and ``environment.cpu``: vector ISA, caches, SMT,
from :func:`oscsim.bench.integrator.cpu_info`) and the load average before and after; the table prints them
on its first line. Ctrl-C stops the run: the lengths already finished are printed as usual (JSON or table),
``interrupted`` is true and ``interrupted_at`` names the length under way, and the command exits with 130.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from typing import Callable

import torch
import torch.nn.functional as F

from oscsim.cli import float_range, int_range, set_threads

__all__ = ["register", "run", "run_benchmark", "peak_memory_bytes", "rss_peak_bytes", "CASES"]

CASES = ("sdpa", "kuramoto_sdpa", "kuramoto_explicit", "ssa_dense", "ssa_tiled")
DEFAULT_LENGTHS = (256, 512, 1024, 2048, 4096, 8192)
HEADLINE_N = 4096

# Live bytes per element of the largest quadratic tensors, to skip cases that would not fit: the dense SSA
# form keeps about a dozen (B, H, N, N) tensors alive at its peak (d2, Δω, J, thr, locked, ratio, S, ...);
# the explicit Kuramoto score builds (B, H, N, N, k_h) tensors, a few at a time.
_SSA_DENSE_LIVE = 12
_KURAMOTO_EXPLICIT_LIVE = 3


# Kineto (the profiler's C++ back end) writes "profiler_start"/"profiler_stop" and "Completed Stage" lines
# straight to file descriptor 2 on every profile; KINETO_LOG_LEVEL does not silence them (torch 2.13).
_PROFILER_LOG = re.compile(r"^(USDT|STAGE):\S+ \S+ \d+:\d+ \S+\] ")


@contextlib.contextmanager
def _without_profiler_log():
    """Send file descriptor 2 to a temporary file meanwhile, then pass on every line but Kineto's log."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            kept = [ln for ln in tmp.read().decode(errors="replace").splitlines(keepends=True)
                    if not _PROFILER_LOG.match(ln)]
            if kept:
                sys.stderr.write("".join(kept))


def peak_memory_bytes(fn: Callable[[], object]) -> int:
    """Peak bytes of CPU tensors allocated by ``fn()`` and alive at the same time (profiler timeline).

    Exact for allocations on the calling thread (and torch's own intra-op threads); blind to Python worker
    threads, which is why the benchmark's headline figure is :func:`rss_peak_bytes`.
    """
    from torch.profiler import ProfilerActivity, profile
    from torch.profiler._memory_profiler import Action

    with _without_profiler_log(), profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                                          record_shapes=True, with_stack=True) as prof:
        out = fn()
        del out
    current = peak = 0
    for _, action, _, size in prof._memory_profile().timeline:
        if action == Action.CREATE:
            current += size
        elif action == Action.DESTROY:
            current -= size
        peak = max(peak, current)
    return int(peak)


_CHILD = "from oscsim.bench.attention import _child_main; _child_main()"


def _status_bytes(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise OSError(f"{key} not in /proc/self/status")


def rss_peak_bytes(fn: Callable[[], object]) -> int:
    """Resident-set increase during ``fn()`` after a warm-up call (Linux; see the module notes)."""
    fn()
    gc.collect()
    base = _status_bytes("VmRSS:")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    out = fn()
    peak = _status_bytes("VmHWM:")
    del out
    return max(0, peak - base)


def _child_main() -> None:
    cfg = json.loads(sys.argv[1])
    args = argparse.Namespace(**cfg["args"])
    set_threads(args.threads)
    x = _inputs(cfg["n"], args)
    fn = _case_fn(cfg["case"], x, _modules(args))
    with torch.no_grad():
        print(json.dumps({"peak_bytes": rss_peak_bytes(fn)}))


def _peak_in_subprocess(case: str, n: int, args) -> int | None:
    """Run :func:`rss_peak_bytes` for one case in a fresh interpreter; None where /proc is unavailable."""
    if not os.path.exists("/proc/self/clear_refs"):
        return None
    keys = ("batch", "d_model", "heads", "threads", "seed")
    cfg = {"case": case, "n": n, "args": {k: getattr(args, k) for k in keys}}
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(cfg)], env=env, capture_output=True,
                          text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"memory measurement of {case} at N={n} failed: {proc.stderr[-2000:]}")
    return int(json.loads(proc.stdout.strip().splitlines()[-1])["peak_bytes"])


def _time_interleaved(fns: dict, repeats: int) -> dict:
    """Minimum time of each function over ``repeats`` rounds, the cases taking turns within each round so
    that a change of machine load affects all of them alike (the 2-core machine is shared)."""
    for fn in fns.values():
        fn()  # warm-up
    best = {case: math.inf for case in fns}
    for _ in range(repeats):
        for case, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[case] = min(best[case], time.perf_counter() - t0)
    return best


def _inputs(n: int, args) -> dict:
    gen = torch.Generator().manual_seed(args.seed * 1_000_003 + n)
    B, H, dh = args.batch, args.heads, args.d_model // args.heads
    shape = (B, H, n, dh)
    # SSA inputs at a useful operating point (DESIGN §3.2 (a)): a fraction of pairs lock. The timings do
    # not depend on the values (every element of every tile is computed), only subnormals would matter.
    return dict(
        q=torch.randn(shape, generator=gen), k=torch.randn(shape, generator=gen),
        v=torch.randn(shape, generator=gen),
        omega=0.1 * torch.randn(shape, generator=gen),
        theta=torch.rand(shape, generator=gen) * 2.0,
        alpha=torch.ones(H), K=torch.tensor(2.0),
        phases=(torch.rand(B, n, args.d_model, generator=gen) * 2 - 1) * math.pi,
    )


def _skip_reason(case: str, n: int, args) -> str | None:
    cap = args.max_dense_gib * 2**30
    B, H, dh = args.batch, args.heads, args.d_model // args.heads
    if case == "ssa_dense":
        need = _SSA_DENSE_LIVE * B * H * n * n * 4
    elif case == "kuramoto_explicit":
        need = _KURAMOTO_EXPLICIT_LIVE * B * H * n * n * dh * 4
    else:
        return None
    if need > cap:
        return f"estimated {need / 2**30:.1f} GiB of quadratic tensors exceeds --max-dense-gib {args.max_dense_gib}"
    return None


def _case_fn(case: str, x: dict, modules: dict) -> Callable[[], object]:
    from oscsim.nn.ssa_functional import ssa_attention

    if case == "sdpa":
        return lambda: F.scaled_dot_product_attention(x["q"], x["k"], x["v"])
    if case == "kuramoto_sdpa":
        return lambda: modules["kuramoto_sdpa"](x["phases"])
    if case == "kuramoto_explicit":
        return lambda: modules["kuramoto_explicit"](x["phases"])
    impl = {"ssa_dense": "dense", "ssa_tiled": "tiled"}[case]
    return lambda: ssa_attention(x["omega"], x["theta"], x["v"], x["alpha"], x["K"], impl=impl)


def _modules(args) -> dict:
    from oscsim.nn.kuramoto import KuramotoAttention

    torch.manual_seed(args.seed)
    return {f"kuramoto_{impl}": KuramotoAttention(args.d_model, args.heads, impl=impl).eval()
            for impl in ("sdpa", "explicit")}


def _measure_length(n: int, args, modules: dict, pairs: list, bar, done: int) -> dict:
    """Memory (one subprocess per case) and interleaved time of every case at length ``n``: the result row."""
    x = _inputs(n, args)
    row: dict = {}
    fns = {}
    for case in args.cases:
        reason = _skip_reason(case, n, args)
        if reason is not None:
            row[case] = {"time_s": None, "peak_bytes": None, "reason": reason}
        else:
            fns[case] = _case_fn(case, x, modules)
            row[case] = {"peak_bytes": _peak_in_subprocess(case, n, args),
                         "peak_bytes_profiler": peak_memory_bytes(fns[case])}
        done += 1
        if bar is not None:
            bar.update()
        else:
            print(f"bench attention: [{done}/{len(pairs)}] N={n} {case}"
                  f"{' skipped' if reason is not None else ''}", file=sys.stderr, flush=True)
    for case, t in _time_interleaved(fns, args.repeats).items():
        row[case] = {"time_s": t, **row[case]}
    base = row.get("sdpa")
    for case, r in row.items():
        ok = base is not None and base["time_s"] and r["time_s"] is not None
        r["time_vs_sdpa"] = r["time_s"] / base["time_s"] if ok else None
        r["mem_vs_sdpa"] = r["peak_bytes"] / base["peak_bytes"] if ok and base["peak_bytes"] else None
    if "ssa_dense" in row and "ssa_tiled" in row and row["ssa_dense"]["time_s"] is not None:
        o_dense = _case_fn("ssa_dense", x, modules)()
        o_tiled = _case_fn("ssa_tiled", x, modules)()
        row["ssa_tiled"]["max_abs_diff_vs_dense"] = float((o_dense - o_tiled).abs().max())
    return row


def run_benchmark(args) -> dict:
    """Run every (length, case) pair; returns the JSON-ready result (the finished lengths after Ctrl-C)."""
    from oscsim.bench.integrator import cpu_info

    set_threads(args.threads)
    modules = _modules(args)
    load_before = os.getloadavg()
    results: dict = {}
    pairs = [(n, c) for n in args.lengths for c in args.cases]
    # progress goes to stderr in every mode (stdout holds only the table or the JSON): a bar on a terminal,
    # one line per measured case otherwise (logs, CI)
    bar = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(pairs), desc="bench attention", file=sys.stderr)
    done = 0
    interrupted = None
    try:
        with torch.no_grad():
            for n in args.lengths:
                interrupted = n
                results[str(n)] = _measure_length(n, args, modules, pairs, bar, done)
                done += len(args.cases)
        interrupted = None
    except KeyboardInterrupt:
        # Ctrl-C: the lengths measured so far are kept and printed (the caller returns 130); the length under
        # way is named, its partial figures dropped (its timing round had not been taken)
        pass
    if bar is not None:
        bar.close()
    lengths = [n for n in args.lengths if str(n) in results]
    cpu = cpu_info()
    out = {
        "benchmark": "attention",
        "command": "oscsim bench attention " + " ".join(sys.argv[3:]) if sys.argv[1:3] == ["bench", "attention"]
        else "oscsim bench attention",
        "config": {"batch": args.batch, "d_model": args.d_model, "heads": args.heads,
                   "head_dim": args.d_model // args.heads, "dtype": "float32", "direction": "forward",
                   "repeats": args.repeats, "threads": torch.get_num_threads(), "lengths": list(args.lengths),
                   "ssa_inputs": "omega ~ 0.1 N(0,1), theta ~ U(0, 2), alpha = 1, K = 2, non-causal"},
        "environment": {"torch": torch.__version__, "python": platform.python_version(),
                        "cpu": cpu, "cpu_model": cpu["model"],
                        "cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpus": os.cpu_count(),
                        "loadavg_before": load_before, "loadavg_after": os.getloadavg()},
        "time_method": f"min over {args.repeats} rounds after one warm-up, cases interleaved within a round, "
                       "time.perf_counter",
        "memory_method": "peak_bytes: resident-set increase during one call after a warm-up, fresh subprocess "
                         "per case, MALLOC_MMAP_THRESHOLD_=65536, VmHWM reset via /proc/self/clear_refs (all "
                         "threads); peak_bytes_profiler: torch profiler memory timeline, main thread only; "
                         "inputs excluded, output included",
        "results": results,
        # Ctrl-C: the lengths finished before it are above, `interrupted_at` names the one under way
        "interrupted": interrupted is not None,
        "interrupted_at": interrupted,
    }
    for n in lengths:
        for case in ("ssa_tiled", "ssa_dense", "kuramoto_sdpa", "kuramoto_explicit"):
            r = results[str(n)].get(case)
            out[f"{case}_vs_sdpa_time_{n}"] = None if r is None else r["time_vs_sdpa"]
            out[f"{case}_vs_sdpa_mem_{n}"] = None if r is None else r["mem_vs_sdpa"]
    for case in ("ssa_tiled", "ssa_dense"):
        for what in ("time", "mem"):
            out.setdefault(f"{case}_vs_sdpa_{what}_{HEADLINE_N}", None)
    return out


def _lengths(text: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--lengths must be comma-separated integers, got {text!r}") from None
    if not vals or any(v < 1 for v in vals):
        raise argparse.ArgumentTypeError(f"--lengths must be positive integers, got {text!r}")
    return vals


def _cases(text: str) -> tuple[str, ...]:
    vals = tuple(v.strip() for v in text.split(",") if v.strip())
    bad = [v for v in vals if v not in CASES]
    if bad or not vals:
        raise argparse.ArgumentTypeError(f"unknown case(s) {bad}; valid: {', '.join(CASES)}")
    if "sdpa" not in vals:
        vals = ("sdpa",) + vals  # the baseline of every ratio
    return vals


def _print_table(res: dict) -> None:
    env = res["environment"]
    print(f"cpu: {env['cpu_model']} ({env['cpu']['vector_isa']}), {env['cpus']} logical CPUs, torch threads "
          f"{res['config']['threads']}, load {env['loadavg_before'][0]:.2f} -> {env['loadavg_after'][0]:.2f}")
    print(f"{'N':>6} {'case':<18} {'time [s]':>10} {'x SDPA':>7} {'peak [MiB]':>11} {'x SDPA':>7}")
    for n, row in res["results"].items():
        for case, r in row.items():
            if r["time_s"] is None:
                print(f"{n:>6} {case:<18} {'skipped':>10}  ({r['reason']})")
                continue
            print(f"{n:>6} {case:<18} {r['time_s']:>10.4f} {r['time_vs_sdpa'] or math.nan:>7.2f} "
                  f"{(r['peak_bytes'] or math.nan) / 2**20:>11.2f} {r['mem_vs_sdpa'] or math.nan:>7.2f}")


def run(args) -> int:
    if args.d_model % args.heads:
        raise ValueError(f"--d-model ({args.d_model}) must be divisible by --heads ({args.heads})")
    for name in ("batch", "repeats", "heads", "d_model"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.max_dense_gib <= 0:
        raise ValueError(f"--max-dense-gib must be > 0, got {args.max_dense_gib}")
    res = run_benchmark(args)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        _print_table(res)
    if res["interrupted"]:
        done = ", ".join(res["results"]) or "none"
        print(f"oscsim bench attention: interrupted at N={res['interrupted_at']}; printed the finished lengths "
              f"({done})", file=sys.stderr)
        return 130
    return 0


def register(subparsers) -> None:
    """Add the ``attention`` benchmark sub-parser."""
    p = subparsers.add_parser("attention", help="attention forward time and peak memory (SDPA, Kuramoto, SSA)",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--lengths", type=_lengths, default=DEFAULT_LENGTHS,
                   help="comma-separated sequence lengths")
    p.add_argument("--cases", type=_cases, default=CASES, help=f"comma-separated subset of {','.join(CASES)}")
    p.add_argument("--d-model", type=int_range(1), default=512, help="width d (>= 1)")
    p.add_argument("--heads", type=int_range(1), default=8, help="heads (>= 1, dividing --d-model)")
    p.add_argument("--batch", type=int_range(1), default=1, help="batch size (>= 1)")
    p.add_argument("--repeats", type=int_range(1), default=3, help="timed calls per case (>= 1)")
    p.add_argument("--threads", type=int_range(1), default=None, help="torch threads (None: torch's choice)")
    p.add_argument("--max-dense-gib", type=float_range(0, lo_open=True), default=8.0,
                   help="skip quadratic-memory cases above this estimate [GiB]")
    p.add_argument("--seed", type=int_range(0), default=0, help="seed of the random inputs")
    p.set_defaults(func=run)
