"""The engine's phase network built in Brian2 (a summed synaptic variable for the coupling).

Used to check the engine against an independent simulator and as the benchmark's competitor. Time is
in Brian2 seconds, one second per engine time unit.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["simulate_brian2", "select_brian2_target"]

_METHODS = {"euler_maruyama": "euler", "stochastic_heun": "heun", "rk4": "rk4", "heun": "heun"}


def select_brian2_target(prefer: str = "cython") -> str:
    """The fastest Brian2 runtime target that works here: ``"cython"`` if it compiles, else ``"numpy"``."""
    import brian2 as b2

    if prefer == "numpy":
        return "numpy"
    try:
        b2.prefs.codegen.target = "cython"
        net = b2.Network()
        g = b2.NeuronGroup(2, "dv/dt = -v/second : 1", method="euler")
        net.add(g)
        net.run(2 * b2.defaultclock.dt)
        return "cython"
    except Exception:  # pragma: no cover - depends on the machine's compiler
        return "numpy"
    finally:
        b2.prefs.codegen.target = "numpy"


def simulate_brian2(net, method: str, dt: float, n_steps: int, y0, *, seed: int | None = None,
                    target: str = "numpy", record: bool = False):
    r"""Run a `PhaseNetwork` (sine coupling, optional lags, additive noise) in Brian2, group by group.

    Parameters
    ----------
    net : oscsim.engine.PhaseNetwork
        Harmonics, injection and drive are not supported here (ValueError).
    method : {"euler_maruyama", "stochastic_heun", "rk4", "heun"}
        Mapped to Brian2's ``euler``, ``heun``, ``rk4``, ``heun``. Note that Brian2 holds a summed synaptic
        variable fixed during a step, so its multi-stage methods are not the textbook ones for coupled
        networks; ``euler_maruyama`` is the one that matches the engine step for step.
    dt : float
        Step [time units = Brian2 seconds].
    n_steps : int
    y0 : array_like, shape (G, N)
        Initial phases [rad].
    seed : int, optional
        Brian2's seed (its noise is not the engine's: compare noisy runs statistically).
    target : {"numpy", "cython"}
        Brian2 runtime code-generation target.
    record : bool
        Keep the trajectory (every step).

    Returns
    -------
    dict
        ``y_final`` (G, N); ``ys`` (n_steps + 1, G, N) if ``record``; ``run_time_s`` (the ``run`` calls only,
        summed over groups), ``build_time_s``, ``target``.

    Notes
    -----
    Per oscillator: ``dtheta/dt = omega + Isyn + sigma*xi``; per synapse j → i:
    ``Isyn_post = w*sin(theta_pre - theta_post + beta) (summed)`` with w = C_ij.
    """
    import brian2 as b2

    if method not in _METHODS:
        raise ValueError(f"method: unknown {method!r}; valid: {', '.join(_METHODS)}")
    if target not in ("numpy", "cython"):
        raise ValueError(f"target: must be 'numpy' or 'cython', got {target!r}")
    if net.harmonics is not None or net.injection is not None or net.drive is not None:
        raise ValueError("net: the Brian2 backend supports sine coupling, phase lags and noise only")
    y0 = np.atleast_2d(np.asarray(y0, dtype=np.float64))
    G, N = y0.shape
    b2.prefs.codegen.target = target
    b2.defaultclock.dt = dt * b2.second
    if seed is not None:
        b2.seed(seed)
    noisy = net.is_stochastic
    eqs = "dtheta/dt = omega + Isyn" + (" + sigma*xi" if noisy else "") + " : 1\n"
    eqs += "omega : Hz (constant)\nIsyn : Hz\n"
    if noisy:
        eqs += "sigma : Hz**0.5 (constant)\n"
    lag = net.phase_lag is not None
    syn_eq = "w : Hz (constant)\n" + ("beta : 1 (constant)\n" if lag else "")
    syn_eq += "Isyn_post = w*sin(theta_pre - theta_post" + (" + beta" if lag else "") + ") : Hz (summed)"
    y_final = np.empty((G, N))
    ys = np.empty((n_steps + 1, G, N)) if record else None
    run_time = build_time = 0.0
    pre, post = np.meshgrid(np.arange(N), np.arange(N))  # post = row i, pre = column j
    pre, post = pre.ravel(), post.ravel()
    for g in range(G):
        tic = time.perf_counter()
        C = net.coupling[g if net.coupling.shape[0] > 1 else 0]
        nz = C[post, pre] != 0
        network = b2.Network()
        grp = b2.NeuronGroup(N, eqs, method=_METHODS[method])
        grp.theta = y0[g]
        grp.omega = net.omega[g if net.omega.shape[0] > 1 else 0] * b2.Hz
        if noisy:
            grp.sigma = net.sigma[g if net.sigma.shape[0] > 1 else 0] * b2.Hz**0.5
        network.add(grp)
        if np.any(nz):  # (no coupling: Isyn stays 0)
            syn = b2.Synapses(grp, grp, syn_eq)
            syn.connect(i=pre[nz], j=post[nz])
            syn.w = C[post[nz], pre[nz]] * b2.Hz
            if lag:
                B = net.phase_lag[g if net.phase_lag.shape[0] > 1 else 0]
                syn.beta = B[post[nz], pre[nz]]
            network.add(syn)
        if record:
            mon = b2.StateMonitor(grp, "theta", record=True)
            network.add(mon)
        build_time += time.perf_counter() - tic
        tic = time.perf_counter()
        network.run(n_steps * dt * b2.second)
        run_time += time.perf_counter() - tic
        y_final[g] = np.asarray(grp.theta[:])
        if record:
            traj = np.asarray(mon.theta[:]).T  # (n_steps, N): the state at the START of each step
            ys[:n_steps, g] = traj
            ys[n_steps, g] = y_final[g]
    b2.prefs.codegen.target = "numpy"
    return {"y_final": y_final, "ys": ys, "run_time_s": run_time, "build_time_s": build_time, "target": target}
