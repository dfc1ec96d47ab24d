"""Chip simulation throughput, the engine's share of it and its rate against the machine's GEMM (`oscsim bench chip`).

One process measures, in turn: the GEMM rate (float64 ``numpy.matmul``, the integrator's limit); the closed
form's tokens/s; the simulated tokens/s of the macromodel, circuit and STNO chips of the tiny and the 1M
Kuramoto model (:func:`mapping.simulation.inference.run`, the default chip of each device); during the
macromodel runs, the time inside the engine's integration (``oscsim.engine``'s group loop) against the time
inside the chip's layer hook, and the engine's work (oscillator-steps, coupling flops over the columns it
actually runs); the circuit rung against ngspice on the same compiled head (:func:`compare_levels`, one
netlist, one process); and `oscsim bench integrator`'s ``engine_vs_brian2`` and ``gemm_fraction``.

The macromodel runs, which the engine figures come from, are measured warm: each is preceded by a warm-up run of
one window of the same length on the same chip (untimed in the figures; its own timers are kept as
``engine_cold``), so the first calls' compilation and Numba cache loading (about a second of coupling build and
readout here, as much as the whole warm run of the tiny model) are not counted as chip time. The circuit and
STNO runs are not warmed up (one window each, minutes for the circuit): their tokens/s include first calls.

When no trained ``kuramoto-1m`` bundle is installed, the 1M model is a freshly initialised one of the bundled
1M configuration (``oscsim.nn.model_config("kuramoto", "1m")``, torch seed 0): the figures are speeds, not
fidelities, and the result says so (``models.1m``).
"""

from __future__ import annotations

import contextlib
import sys
import time

import numpy as np

__all__ = ["chip_throughput", "engine_timers", "WORKLOADS"]

CHIPS = {"macromodel": "ring-macromodel", "circuit": "ring-circuit", "stno": "spin-torque"}
# (windows, tokens per window) per chip kind and model size; the circuit integrates every ring node (slow)
WORKLOADS = {"full": {("macromodel", "tiny"): (4, 128), ("macromodel", "1m"): (2, 256),
                      ("circuit", "tiny"): (1, 16), ("circuit", "1m"): (1, 16),
                      ("stno", "tiny"): (1, 64), ("stno", "1m"): (1, 64)},
             "quick": {(c, m): (1, 16) for c in CHIPS for m in ("tiny", "1m")}}
# drift evaluations per step of the fixed-step solvers, by the stages they store (EM 1, Heun/SRA1 3, RK4 5)
_EVALS = {1: 1, 3: 2, 5: 4}


def _coupling_flops_per_eval(P) -> float:
    """Flops of one drift evaluation's coupling products over all groups: 2 products × 2 flops per entry of
    the columns the kernel runs (per block of 4 rows, [lo, hi)), per harmonic. 0 for a non-phase model.

    A model whose coupling the group loop writes from its factors (``FactoredPhaseNetwork``) carries no bounds:
    they are those of the product, found here by writing it in chunks of groups (after the run, outside the
    timers)."""
    try:
        if P[1].ndim == 4:  # general kernel: (omega, cr, ci, a_m, b_m, lo, hi, ...)
            m, lo, hi = P[3].shape[0] * (2 if P[2].shape[2] else 1), P[5], P[6]
        elif P[1].ndim == 3 and P[2].ndim == 2:  # sine kernel: (omega, C, lo, hi, ...)
            m, lo, hi = 1, P[2], P[3]
        elif P[1].ndim == 3 and P[2].ndim == 1:  # factors: (omega, base, bi, row_gain, elem, ei, [a_m, b_m,] ...)
            m = P[6].shape[0] if P[6].ndim == 1 else 1
            return 16.0 * m * _factored_columns(*P[1:6])
        else:
            return 0.0
        return 16.0 * m * float(np.sum(hi - lo))
    except (AttributeError, IndexError, TypeError):
        return 0.0


def _factored_columns(base, bi, row_gain, elem, ei, chunk: int = 64) -> float:
    """Σ (hi − lo) of the block bounds of C[g] = (base[bi[g]] · row_gain[g]) · elem[ei[g]] over the groups."""
    from oscsim.engine._coupling import coupling_product

    G, n = row_gain.shape
    has_elem = elem.shape[0] > 0
    buf = np.empty((min(chunk, G), n, n))
    total = 0.0
    for a in range(0, G, chunk):
        s = slice(a, min(a + chunk, G))
        _, lo, hi, _ = coupling_product(base, bi[s], row_gain[s], elem if has_elem else None,
                                        ei[s] if has_elem else None, out=buf[:s.stop - a])
        total += float(np.sum(hi - lo))
    return total


@contextlib.contextmanager
def engine_timers():
    """Accumulate, while active: ``integration_s`` (inside the engine's group loop), ``readout_s`` (the phase
    macromodel's readout Monte Carlo, :func:`mapping.periphery.readout.read_free_running`), ``chip_s`` (inside the
    Kuramoto backends' layer hook), ``oscillator_steps`` and ``coupling_flops`` of the integrations.

    Wraps ``oscsim.engine.simulate.run_groups``, the phase backend's ``read_free_running`` and
    ``KuramotoBackend.run_hook`` (restored on exit): for benchmarks, not thread-safe against other users of the
    engine in this process."""
    import oscsim.engine.simulate  # noqa: F401 - the module (the package exports a function of that name)

    from ..backends import phase as phase_backend
    from ..backends.kuramoto import KuramotoBackend

    sim = sys.modules["oscsim.engine.simulate"]
    acc = {"integration_s": 0.0, "readout_s": 0.0, "chip_s": 0.0, "oscillator_steps": 0.0, "coupling_flops": 0.0}
    run_groups, hook, read = sim.run_groups, KuramotoBackend.run_hook, phase_backend.read_free_running

    runs = []  # (drift evaluations, P) of each integration: their flops are counted after the run

    def timed_groups(loop, n_groups, args):
        t0 = time.perf_counter()
        run_groups(loop, n_groups, args)
        acc["integration_s"] += time.perf_counter() - t0
        y0, n_steps, P, n_stage = args[0], int(args[3]), args[6], int(args[13])
        acc["oscillator_steps"] += float(y0.shape[0] * y0.shape[1] * n_steps)
        runs.append((n_steps * _EVALS.get(n_stage, 1), P))

    sim.run_groups, KuramotoBackend.run_hook, phase_backend.read_free_running = (
        timed_groups, _timed(hook, acc, "chip_s"), _timed(read, acc, "readout_s"))
    try:
        yield acc
    finally:
        sim.run_groups, KuramotoBackend.run_hook, phase_backend.read_free_running = run_groups, hook, read
        acc["coupling_flops"] += sum(e * _coupling_flops_per_eval(P) for e, P in runs)


def _timed(fn, acc: dict, key: str):
    """``fn`` with its wall time added to ``acc[key]`` on every call (a method too: ``self`` is in ``*a``)."""
    def timed(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            acc[key] += time.perf_counter() - t0

    return timed


def _models():
    """{'tiny': model, '1m': model} and how each was obtained."""
    import torch

    from oscsim.nn.registry import build_model, model_config

    from ..model_io import load_model

    tiny, _ = load_model("kuramoto-tiny")
    try:
        big, _ = load_model("kuramoto-1m")
        how = "the trained bundle kuramoto-1m"
    except (FileNotFoundError, ValueError, KeyError, OSError):
        torch.manual_seed(0)
        big = build_model(model_config("kuramoto", "1m"))
        how = ("freshly initialised (no trained kuramoto-1m bundle is installed): model_config('kuramoto', '1m'), "
               "torch seed 0; speeds only")
    for m in (tiny, big):
        m.eval()
    n = {k: int(sum(p.numel() for p in m.parameters())) for k, m in (("tiny", tiny), ("1m", big))}
    return {"tiny": tiny, "1m": big}, {"tiny": f"the bundled kuramoto-tiny ({n['tiny']} parameters)",
                                       "1m": f"{how} ({n['1m']} parameters)"}


def _windows(T: int, n: int):
    from oscsim.data import eval_windows, load_shakespeare

    x, _ = eval_windows(load_shakespeare().split("valid"), T, max_windows=n)
    return x[:n]


def _closed_form_rate(model, x, repeats: int) -> float:
    import torch

    with torch.no_grad():
        model(x[:1])  # warm-up
        best = np.inf
        for _ in range(repeats):
            t0 = time.perf_counter()
            model(x)
            best = min(best, time.perf_counter() - t0)
    return x.numel() / best


def _chip_rate(model, device: str, x, timed: bool):
    """(figures, engine timers or None, warm-up timers or None) of one chip run; a timed run is preceded by an
    untimed warm-up of one window (see the module notes)."""
    from ..compiler.build import compile as compile_chip
    from ..config import ChipConfig
    from .inference import run

    import warnings

    # the default chip's own statements of every category, kept in the result; unlike a per-report figure this runs
    # once per benchmark, so catch_warnings resetting the once-per-location registry repeats nothing in a loop
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chip = compile_chip(model, ChipConfig(device=device))
        cold = None
        if timed:  # first calls (compilation, cache loading) outside the figures
            with engine_timers() as cold:
                t0 = time.perf_counter()
                run(chip, x[:1], seed=0, progress=False, closed_form=False)
                cold["wall_s"] = time.perf_counter() - t0
        with engine_timers() if timed else contextlib.nullcontext() as acc:
            r = run(chip, x, seed=0, progress=False, closed_form=False)
    out = {"tokens_per_s": r.n_tokens / r.wall_s, "tokens": r.n_tokens, "windows": int(x.shape[0]),
           "tokens_per_window": int(x.shape[1]), "wall_s": r.wall_s, "backend": r.backend,
           "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught})}
    return out, acc, None if cold is None else dict(cold)


def _ngspice(T: int) -> dict:
    """The circuit rung and ngspice on the same compiled head (layer 0, head 0, T tokens), one process.

    The circuit rung is timed warm, as the macromodel runs are: an untimed circuit-only run of the same head
    first, so that its kernels' first-call cache loading (about half of a cold T = 8 run here) is not charged
    to it; ngspice starts a fresh simulation either way. The full benchmark uses T = 16, the head of the
    figure issue 22 quotes (0.14 s vs 17.9 s)."""
    from hw_models.spice import ngspice_available

    if not ngspice_available():
        return {"ratio": None, "why": "ngspice is not installed"}
    from ..compiler.build import compile as compile_chip
    from ..config import ChipConfig
    from .ladder import compare_levels

    chip = compile_chip("kuramoto-tiny", ChipConfig(device="ring-circuit"))
    x = _windows(128, 1)[:, :T]
    compare_levels(chip, x, layer=0, head=0, levels=("circuit",))  # warm-up, untimed
    res = compare_levels(chip, x, layer=0, head=0, levels=("circuit", "spice"))
    w = {k: res["levels"][k]["wall_s"] for k in ("circuit", "spice")}
    return {"ratio": w["spice"] / w["circuit"], "circuit_s": w["circuit"], "ngspice_s": w["spice"], "T": T,
            "rel_error": res["pairwise"]["circuit_vs_spice"]["rel_error"]}


def chip_throughput(*, quick: bool = False, competitors: bool = True, progress=lambda s: None) -> dict:
    """Run the measurements of the module notes; returns the JSON-ready result.

    ``quick``: one window of 16 tokens per chip, the integrator benchmark's quick mode and a T = 4 ngspice head
    (a smoke test of the keys; the figures are not meaningful). ``competitors=False``: no ngspice and no
    integrator benchmark (Brian2 compiles its code on first use, minutes): ``circuit_vs_ngspice``,
    ``engine_vs_brian2`` and ``gemm_fraction`` are then None, ``skipped`` says so."""
    import os
    import platform

    import numba

    from oscsim.bench.integrator import cpu_info, gemm_rate, run_benchmark

    phases = {}
    tic = time.perf_counter()

    def phase(name):
        nonlocal tic
        phases[name] = time.perf_counter() - tic
        tic = time.perf_counter()

    progress("gemm")
    gemms = [gemm_rate(repeats=5)]
    models, how = _models()
    work = WORKLOADS["quick" if quick else "full"]
    rates: dict = {c: {} for c in CHIPS}
    closed: dict = {}
    engine: dict = {}
    engine_cold: dict = {}
    for size, model in models.items():
        n, T = work[("macromodel", size)]
        closed[size] = _closed_form_rate(model, _windows(T, n), 1 if quick else 3)
        for kind, device in CHIPS.items():
            n, T = work[(kind, size)]
            progress(f"{kind} chip, {size} model, {n} x {T} tokens")
            rates[kind][size], acc, cold = _chip_rate(model, device, _windows(T, n), timed=kind == "macromodel")
            if acc is not None:
                engine[size], engine_cold[size] = dict(acc), cold
            phase(f"{kind}_{size}")
    gemms.append(gemm_rate(repeats=5))
    gemm = max(gemms)
    eng = engine["tiny"]
    skipped = "competitors=False: no ngspice, no integrator benchmark"
    spice, integ = {"ratio": None, "why": skipped}, {"engine_vs_brian2": None, "gemm_fraction": None}
    if competitors:
        progress("circuit vs ngspice")
        spice = _ngspice(4 if quick else 16)
        phase("ngspice")
        progress("integrator benchmark (engine vs Brian2, gemm fraction)")
        integ = run_benchmark(quick=quick)
        phase("integrator")
    return {
        "chip_tokens_per_s": {k: {s: v["tokens_per_s"] for s, v in r.items()} for k, r in rates.items()},
        "closed_form_tokens_per_s": closed,
        "engine_fraction_of_chip_time": eng["integration_s"] / eng["chip_s"],
        "engine_fraction_of_chip_time_1m": engine["1m"]["integration_s"] / engine["1m"]["chip_s"],
        # the share the integration would have with nothing in the hook but it and the readout's Monte Carlo
        # (whose libm cos/sin and keyed normals every figure's bits depend on): the bound of the share above
        "engine_fraction_ceiling": {k: e["integration_s"] / (e["integration_s"] + e["readout_s"])
                                    for k, e in engine.items()},
        "chip_time_breakdown_s": {k: {"integration": e["integration_s"], "readout": e["readout_s"],
                                      "other": e["chip_s"] - e["integration_s"] - e["readout_s"]}
                                  for k, e in engine.items()},
        "engine_oscillator_steps_per_s": eng["oscillator_steps"] / eng["integration_s"],
        "engine_coupling_flops_per_s": eng["coupling_flops"] / eng["integration_s"],
        "engine_vs_gemm": eng["coupling_flops"] / eng["integration_s"] / gemm,
        "engine_vs_gemm_1m": engine["1m"]["coupling_flops"] / engine["1m"]["integration_s"] / gemm,
        "gemm_flops_per_s": gemm,
        "circuit_vs_ngspice": spice["ratio"],
        "circuit_vs_ngspice_detail": spice,
        "engine_vs_brian2": integ["engine_vs_brian2"],
        "gemm_fraction": integ["gemm_fraction"],
        "chips": rates,
        "engine": engine,
        "engine_cold": engine_cold,
        "models": how,
        "notes": ("chip tokens/s: mapping.run wall time (the model's forward with the chip hook, closed form off), "
                  "default ChipConfig of each device; engine fraction: time in the engine's group loop / time in "
                  "the Kuramoto layer hook (macromodel chip), measured warm (after an untimed one-window warm-up run, whose "
                  "timers are engine_cold); engine_fraction_ceiling: integration / (integration + readout Monte Carlo), "
                  "the share with no other work in the hook; coupling flops: 2 products x 2 flops per entry of "
                  "the columns the kernel runs (causal bounds), per harmonic, 2 drift evaluations per Heun step; "
                  "engine_vs_gemm: that rate / the float64 numpy.matmul rate measured in this process"),
        "skipped": None if competitors else skipped,
        "phase_wall_s": phases,
        "machine": {"cpus": os.cpu_count(), "numba_threads": numba.get_num_threads(),
                    "platform": platform.platform(), "load_average": list(os.getloadavg())},
        "cpu": cpu_info(),
        "quick": quick,
    }
