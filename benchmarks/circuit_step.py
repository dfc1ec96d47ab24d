"""Integrator step of the ring-circuit chip: increment error of the circuit networks against RK4 at T/400.

    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/circuit_step.py

4 networks of T = 32 mismatched rings (the chip's Pelgrom V_T and load draw, residual ε ~ 1e-4), couplings
C = 2κ g A with g uniform in ±4 and A row-normalised random causal weights (harsher than a chip layer), noise
off; error = ‖Δθ − Δθ_ref‖ / ‖Δθ_ref − 2π ε τ_s‖ over all rings. Prints one line per (solver, step, readout
step). Figures: BENCHMARKS.md, *Devices*.
"""

import math

import numpy as np

import hw_models.coupled_rings as cc
import hw_models.coupled_rings.head as cc_head
import hw_models.coupled_rings.network as cc_net
import hw_models.coupled_rings.readout as cc_readout


def main():
    import oscsim.engine as engine

    dev = cc.circuit_device(None, 300.0)
    rng = np.random.default_rng(0)
    G, T = 4, 32
    th = rng.uniform(0, 2 * math.pi, (G, T))
    kappa = 2 * math.pi * 0.01
    A = np.tril(rng.random((G, T, T)), -1)
    A = A / np.maximum(A.sum(-1, keepdims=True), 1e-9)
    C = 2 * kappa * rng.uniform(-4, 4, (G, T, 1)) * A
    mm = cc.draw_circuit_mismatch(dev, (G, T), [0, 0, 3])
    eps = 1e-4 * rng.standard_normal((G, T))

    def run(spp, stochastic):
        cc_net.reference_offset.cache_clear()
        head = cc.build_head(dev, th, C, steps_per_period=spp, stochastic=stochastic, mismatch=mm,
                             freq_residual_rel=eps)
        return cc.simulate_heads(head, settle_cycles=4)["dtheta"]

    factor = cc_readout.READ_STEP_FACTOR
    cc_readout.READ_STEP_FACTOR = 1
    ref = run(400, False)
    drift = 2 * math.pi * eps * 4
    for fac in (1, factor):
        cc_readout.READ_STEP_FACTOR = fac
        for name, stoch, spp in (("RK4", False, 100), ("RK4", False, 50), ("stochastic Heun", True, 100),
                                 ("stochastic Heun", True, 50)):
            d = run(spp, stoch)
            err = np.linalg.norm(d - ref) / np.linalg.norm(ref - drift)
            print(f"{name} T/{spp}, readout T/{spp // fac}: {100 * err:.3f} %")
    heun = engine.StochasticHeun
    try:  # SRA1 in place of stochastic Heun (the engine's strong-order-1.5 additive-noise method)
        engine.StochasticHeun = engine.SRA1
        cc_head.numerical_cycle.cache_clear()
        for spp in (100, 50):
            d = run(spp, True)
            print(f"SRA1 T/{spp}, readout T/{spp // factor}: "
                  f"{100 * np.linalg.norm(d - ref) / np.linalg.norm(ref - drift):.3f} %")
    finally:
        engine.StochasticHeun = heun
        cc_head.numerical_cycle.cache_clear()
        cc_readout.READ_STEP_FACTOR = factor


if __name__ == "__main__":
    main()
