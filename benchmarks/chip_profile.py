"""Where the default chip's layer hook spends its time: python benchmarks/chip_profile.py [--tokens N] [--model
tiny|1m] [--json].

Runs the default chip (``ChipConfig()``: the ring macromodel, time-multiplexed tiles) of the bundled
``kuramoto-tiny`` (``--model 1m``: the 1M Kuramoto model as ``oscsim bench chip`` gets it: the trained bundle when
installed, else a fresh initialisation of the bundled configuration, torch seed 0) on the first N validation
tokens, in this process, ``--repeats`` times (default 2: the first
run is cold, it includes the first calls' compilation or Numba cache loading; the later ones are warm), and
prints per run the wall time inside ``KuramotoBackend.run_hook`` split into

- ``integration``: the engine's group loop (``oscsim.engine.simulate.run_groups``, what ``oscsim bench chip``
  counts as the engine);
- ``coupling``: building the engine's model from the coupling's factors: writing, bounding and checking the
  (G, N, N) coupling (``PackedPhaseNetwork.with_coupling_product``), or, where the engine's group loop writes
  each group's matrix itself (``with_coupling_factors``), only the factors' check (the writing is then inside
  ``integration``);
- ``readout``: the readout's Monte Carlo (``read_free_running``: free run, detector, low-pass, sampler noise,
  average, ADC), of which ``draws`` (thread-seconds inside the NumPy generators' ``standard_normal`` while the
  draws are made in Python; reported as not separable once they are drawn inside the compiled chain);
- ``programming``, ``injection``, ``fidelity`` (the fidelity record), ``other`` (the rest of the hook: the
  model's bound per sequence, the per-bank constants, the increment estimate, glue),

the integration's share of the hook (``engine_fraction_of_chip_time`` as ``oscsim bench chip`` defines it), the
run's wall time and the chip BPC to full precision (``repr``; ``oscsim simulate --json``'s ``bpc_chip`` for the
same tokens and seed). The timers wrap module attributes for the run and restore them after; they add a few
microseconds per call.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from collections import defaultdict

SECTIONS = ("integration", "coupling", "readout", "programming", "injection", "fidelity")


@contextlib.contextmanager
def _patched(acc):
    """Wrap the hook's parts with wall-time accumulators (and the readout's generators with thread timers)."""
    import oscsim.engine.simulate  # noqa: F401
    from oscsim.engine.phase_network import PackedPhaseNetwork

    import mapping.backends.phase as phase
    import mapping.periphery.readout as readout
    from mapping.backends.kuramoto import KuramotoBackend
    from mapping.fidelity import LayerFidelity

    sim = sys.modules["oscsim.engine.simulate"]
    lock = threading.Lock()

    def timed(label, fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                dt = time.perf_counter() - t0
                with lock:
                    acc[label] += dt
        return wrapper

    class TimedGenerator:
        """A generator whose ``standard_normal`` calls are timed (thread-seconds, summed over the threads)."""

        def __init__(self, rng):
            self._rng = rng

        def standard_normal(self, *a, **k):
            t0 = time.perf_counter()
            out = self._rng.standard_normal(*a, **k)
            dt = time.perf_counter() - t0
            with lock:
                acc["draws_thread_s"] += dt
            return out

        def __getattr__(self, name):
            return getattr(self._rng, name)

    saved = [(sim, "run_groups"), (KuramotoBackend, "run_hook"), (PackedPhaseNetwork, "with_coupling_product"),
             (phase, "read_free_running"), (phase, "program_kuramoto"), (LayerFidelity, "add_kuramoto")]
    old = {(id(o), n): getattr(o, n) for o, n in saved}
    sim.run_groups = timed("integration", sim.run_groups)
    KuramotoBackend.run_hook = timed("hook", KuramotoBackend.run_hook)
    PackedPhaseNetwork.with_coupling_product = timed("coupling", PackedPhaseNetwork.with_coupling_product)
    if hasattr(PackedPhaseNetwork, "with_coupling_factors"):  # (it may call with_coupling_product: not both)
        saved.append((PackedPhaseNetwork, "with_coupling_factors"))
        old[(id(PackedPhaseNetwork), "with_coupling_factors")] = PackedPhaseNetwork.with_coupling_factors
        PackedPhaseNetwork.with_coupling_factors = timed("coupling_factors", PackedPhaseNetwork.with_coupling_factors)
    phase.read_free_running = timed("readout", phase.read_free_running)
    phase.program_kuramoto = timed("programming", phase.program_kuramoto)
    LayerFidelity.add_kuramoto = timed("fidelity", LayerFidelity.add_kuramoto)
    draws_in_python = not hasattr(readout, "_fill_normals")  # NumPy draws, called from Python
    if draws_in_python:
        old[(id(readout), "sequence_rng")] = readout.sequence_rng
        saved.append((readout, "sequence_rng"))
        rng0 = readout.sequence_rng
        readout.sequence_rng = lambda *a: TimedGenerator(rng0(*a))
    acc["draws_separable"] = draws_in_python
    try:
        yield
    finally:
        for o, n in saved:
            setattr(o, n, old[(id(o), n)])


def _model(name: str):
    """(model, checkpoint name, how it was obtained)."""
    from mapping.model_io import load_model

    if name == "tiny":
        return load_model("kuramoto-tiny")[0], "kuramoto-tiny", "the bundled kuramoto-tiny"
    try:
        return load_model("kuramoto-1m")[0], "kuramoto-1m", "the trained bundle kuramoto-1m"
    except (FileNotFoundError, ValueError, KeyError, OSError):
        import torch

        from oscsim.nn.registry import build_model, model_config

        torch.manual_seed(0)
        m = build_model(model_config("kuramoto", "1m"))
        m.eval()
        return m, None, "freshly initialised 1M Kuramoto model (model_config('kuramoto', '1m'), torch seed 0)"


def profile(tokens: int, repeats: int, seed: int = 0, model_name: str = "tiny") -> dict:
    import numba

    from mapping.cli.common import validation_tokens
    from mapping.compiler.build import compile as compile_chip
    from mapping.config import ChipConfig
    from mapping.simulation.inference import run

    t0 = time.perf_counter()
    model, ckpt, how = _model(model_name)
    chip = compile_chip(model, ChipConfig(), **({"checkpoint": ckpt} if ckpt else {}))
    x, y = validation_tokens(chip.model_info["config"], tokens, "valid")
    setup = time.perf_counter() - t0
    runs = []
    for r in range(repeats):
        acc = defaultdict(float)
        # injection: bound into the layer's settings when the chip is prepared, so timed through the settings
        with _patched(acc):
            import mapping.backends.phase as phase

            real_settings = phase.phase_settings

            def settings(*a, **k):
                s = real_settings(*a, **k)
                if s.injection is not None:
                    fn = s.injection

                    def inj(*a2, **k2):
                        t1 = time.perf_counter()
                        try:
                            return fn(*a2, **k2)
                        finally:
                            acc["injection"] += time.perf_counter() - t1
                    object.__setattr__(s, "injection", inj)
                return s

            phase.phase_settings = settings
            try:
                load0 = os.getloadavg()[0]
                t1 = time.perf_counter()
                res = run(chip, x, seed=seed, progress=False, closed_form=False)
                wall = time.perf_counter() - t1
            finally:
                phase.phase_settings = real_settings
        hook = acc["hook"]
        parts = {k: acc[k] for k in SECTIONS}
        parts["coupling"] = max(acc["coupling"], acc["coupling_factors"])  # one contains the other when both run
        parts["other"] = hook - sum(parts.values())
        runs.append({"run": "cold" if r == 0 else "warm", "wall_s": wall, "hook_s": hook,
                     **{f"{k}_s": v for k, v in parts.items()},
                     "draws_thread_s": acc["draws_thread_s"] if acc["draws_separable"] else None,
                     "integration_share": acc["integration"] / hook, "bpc_chip": res.bpc(y)["bpc_chip"],
                     "load_average_1min": [load0, os.getloadavg()[0]]})
    return {"model": how, "tokens": int(x.numel()), "windows": int(x.shape[0]), "seed": seed, "setup_s": setup,
            "numba_threads": numba.get_num_threads(), "runs": runs}


def _print(rep):
    print(f"default chip, {rep['model']}, {rep['tokens']} tokens ({rep['windows']} windows), seed {rep['seed']}, "
          f"{rep['numba_threads']} threads; setup (load + compile) {rep['setup_s']:.2f} s")
    cols = ["wall_s", "hook_s", *(f"{k}_s" for k in SECTIONS), "other_s", "draws_thread_s", "integration_share"]
    names = {"draws_thread_s": "draws[thr-s]", "integration_share": "integ/hook"}
    print(f"{'':6s}" + "".join(f"{names.get(c, c[:-2]):>13s}" for c in cols))
    for r in rep["runs"]:
        cells = "".join(f"{'-' if r[c] is None else format(r[c], '.3f'):>13s}" for c in cols)
        print(f"{r['run']:6s}{cells}   load {r['load_average_1min'][0]:.2f}->{r['load_average_1min'][1]:.2f}")
    for r in rep["runs"]:
        print(f"bpc_chip ({r['run']}): {r['bpc_chip']!r}")
    print("(draws: thread-seconds inside standard_normal, summed over the readout's threads; '-': drawn inside "
          "the compiled chain, not separable)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(prog="chip_profile", description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=2048, help="validation tokens (default 2048, the default simulate's)")
    p.add_argument("--repeats", type=int, default=2, help="runs in this process; the first is cold (default 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", choices=("tiny", "1m"), default="tiny")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    rep = profile(a.tokens, a.repeats, a.seed, a.model)
    print(json.dumps(rep, indent=1)) if a.json else _print(rep)
