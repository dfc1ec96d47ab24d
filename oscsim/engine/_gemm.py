"""The fixed-step loop of phase networks that share one dense coupling matrix, on one matrix product per evaluation.

G networks that share one (N, N) coupling C (a head's 2·k_h networks share its T × T score matrix) need, per
drift evaluation and harmonic m, the products C sin(mθ_g) and C cos(mθ_g) of every group g:

    Σ_j C_ij sin(m(θ_j − θ_i)) = cos(mθ_i) (C sin mθ)_i − sin(mθ_i) (C cos mθ)_i,

which for all groups at once is ONE matrix product Q = X Cᵀ, X = [sin mθ_g; cos mθ_g] (2·M·G rows): a GEMM that
reads C once per evaluation for all groups, where the per-group kernel (`_coupling.fused_two_products`) reads
it once per group (from N ≈ 512 on, C no longer stays in a core's cache across groups, and the per-group loop
runs at the rate C streams from memory).

The product is a compiled register-blocked kernel (`_products`: 4 rows of C × 4 rows of X, 16 vector
accumulators, the 4 rows of C kept in cache while every row of X passes), not BLAS: on this project's
2-core machine under load, OpenBLAS's threads spin against the other processes (a 16 × 1,024 × 1,024 product
took 17-87 ms on 2 BLAS threads against 1.4 ms on one, and the engine's own threads compete with them), and a
BLAS's result for a row depends on the product's shape (OpenBLAS 0.3.30 measured here: gemv for one row,
other kernels for small shapes), which would make a group's numbers depend on the batch. Here every entry
Q[r, i] is computed by the same code whatever G, the row r's position and the thread count (threads split
the rows of C), so the engine's contract holds by construction: same seed, same answer whatever the batch
size and threads. Its rate against numpy's matmul of the same shape is in BENCHMARKS.md ("Engine";
benchmarks/long_t_step.py).

Exactness. The sin/cos values are the kernel's own (`_coupling.sincos`) and the noise is the kernel's own
(each group's xoshiro256** streams seeded by its (seed, stream key), drawn in the same order: `rng`), so only
the order of the N-term sums differs. Each product is within γ_N·Σ_j |C_ij| of the exact sum in either order
(γ_N = N·u/(1 − N·u), u = 2⁻⁵³: the bound on a dot product, Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., §3.1), so a drift evaluation differs from the kernel's by at most about 4·γ_N·Σ_j |C_ij|
per unit of harmonic weight |a_m| + |b_m| (two products per harmonic, 2γ_N between the paths for each), and a
run by that times the integration's error growth (tests/test_engine_gemm.py checks both, against the kernel and the NumPy reference).

Scope: `PackedPhaseNetwork` with one coupling shared by all groups (shape (1, N, N)), no phase lags (harmonics,
injection and drive are kept), the solvers `GEMM_SOLVERS`, any `SaveEvery` / `SaveAt` / `SaveSummary`, CPU.
The time loop runs in Python over steps (a few NumPy operations on (G, N) arrays per evaluation, against
the O(G·N²) product).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._coupling import sincos
from ._loop import run_threads
from ._templates import step_time
from .rng import fill_normals, scratch_size, seed_state

__all__ = ["GEMM_MIN_N", "GEMM_SOLVERS", "gemm_refusal", "run_fixed_gemm"]

# `simulate(coupling_product="auto")` takes the shared product from this N on (the measured crossover:
# BENCHMARKS.md, "Engine"; benchmarks/long_t_step.py)
GEMM_MIN_N = 1024
GEMM_SOLVERS = ("EulerMaruyama", "StochasticHeun", "Heun", "RK4")
_WORK_PER_THREAD = 1 << 22  # multiply-adds of the product per thread, at least (assumed: ~1 ms of one core)


def gemm_refusal(model, solver) -> str | None:
    """Why the shared-product loop cannot run this (model, solver) pair, or None when it can."""
    from .phase_network import PackedPhaseNetwork

    if type(model) is not PackedPhaseNetwork:
        return f"runs PhaseNetwork / PackedPhaseNetwork models, not {type(model).__name__}"
    if model.phase_lag is not None:
        return "has no phase lags (their coupling is one complex matrix per harmonic)"
    if model.coupling.shape[0] != 1:
        return "needs one coupling matrix shared by all groups (shape (N, N)), not one per group"
    if type(solver).__name__ not in GEMM_SOLVERS:
        return f"implements {', '.join(GEMM_SOLVERS)}, not {type(solver).__name__}"
    return None


@nb.njit(cache=True, fastmath=True, boundscheck=False, nogil=True)
def _products(C, X, lo, hi, Q, t_first, t_step):
    """Q[r, i] = Σ_j C[i, j] X[r, j] for the blocks of 4 rows of C b = t_first, t_first + t_step, ... .

    C: (N, N); X, Q: (R, N), R a multiple of 4; ``lo``/``hi``: C's `block_bounds` (the nonzero columns of each
    block of 4 rows). A last block of fewer than 4 rows repeats its last row (not stored), as
    `fused_two_products` does, so every entry is summed by the same code.
    """
    n = C.shape[0]
    R = X.shape[0]
    for b in range(t_first, lo.shape[0], t_step):
        i = b * 4
        c0, c1, c2, c3 = C[i], C[min(i + 1, n - 1)], C[min(i + 2, n - 1)], C[min(i + 3, n - 1)]
        l = nb.uint64(lo[b])
        h = nb.uint64(hi[b])
        for r in range(0, R, 4):
            x0, x1, x2, x3 = X[r], X[r + 1], X[r + 2], X[r + 3]
            a00 = a01 = a02 = a03 = a10 = a11 = a12 = a13 = 0.0
            a20 = a21 = a22 = a23 = a30 = a31 = a32 = a33 = 0.0
            for j in range(l, h):
                u0 = x0[j]
                u1 = x1[j]
                u2 = x2[j]
                u3 = x3[j]
                v = c0[j]
                a00 += v * u0
                a01 += v * u1
                a02 += v * u2
                a03 += v * u3
                v = c1[j]
                a10 += v * u0
                a11 += v * u1
                a12 += v * u2
                a13 += v * u3
                v = c2[j]
                a20 += v * u0
                a21 += v * u1
                a22 += v * u2
                a23 += v * u3
                v = c3[j]
                a30 += v * u0
                a31 += v * u1
                a32 += v * u2
                a33 += v * u3
            Q[r, i], Q[r + 1, i], Q[r + 2, i], Q[r + 3, i] = a00, a01, a02, a03
            if i + 1 < n:
                Q[r, i + 1], Q[r + 1, i + 1], Q[r + 2, i + 1], Q[r + 3, i + 1] = a10, a11, a12, a13
            if i + 2 < n:
                Q[r, i + 2], Q[r + 1, i + 2], Q[r + 2, i + 2], Q[r + 3, i + 2] = a20, a21, a22, a23
            if i + 3 < n:
                Q[r, i + 3], Q[r + 1, i + 3], Q[r + 2, i + 3], Q[r + 3, i + 3] = a30, a31, a32, a33


@nb.njit(cache=True, boundscheck=False)
def _fill_trig(y, X, H):
    """X[2·H·g + 2m] = sin((m+1)θ_g), X[2·H·g + 2m + 1] = cos((m+1)θ_g) for every group g (rows of y)."""
    for g in range(y.shape[0]):
        for m in range(H):
            sincos(y[g], X[2 * H * g + 2 * m], X[2 * H * g + 2 * m + 1], m + 1.0)


class _SharedDrift:
    """The drift of all groups (padded to an even count, so the product has a multiple of 4 rows) for one
    shared coupling."""

    def __init__(self, model, P, G: int):
        import numba

        n = model._n
        if model.kernel == "sine":
            omega, C, lo, hi, injK, injpsi, injm, drvF, drvpsi, drvw = P
            self.C, self.ha, self.hb, self.sine = C[0], np.ones(1), np.zeros(1), True
        else:
            omega, CR, _, ha, hb, lo, hi, injK, injpsi, injm, drvF, drvpsi, drvw = P
            self.C, self.ha, self.hb, self.sine = CR[0, 0], ha, hb, False
        self.lo, self.hi = lo[0], hi[0]
        self.Gp = G + G % 2
        self.omega = _padded(omega, self.Gp, n)
        self.inj = None if injK.shape[1] == 0 else (_padded(injK, self.Gp, n), _padded(injpsi, self.Gp, n), injm)
        self.drv = None if drvF.shape[1] == 0 else (_padded(drvF, self.Gp, n), _padded(drvpsi, self.Gp, n), drvw)
        H = self.ha.shape[0]
        self.X = np.zeros((2 * H * self.Gp, n))
        self.Q = np.zeros_like(self.X)
        # a product of under ~4 M multiply-adds (~1 ms on one core) runs in the caller's thread: handing it to
        # the pool costs more than it saves (the result does not depend on the thread count either way)
        work = self.X.shape[0] * n * n
        self.threads = max(1, min(numba.get_num_threads(), self.lo.shape[0], work // _WORK_PER_THREAD))

    def __call__(self, t: float, y: np.ndarray, out: np.ndarray) -> None:
        """out = f(t, y) for the (Gp, N) states y."""
        H = self.ha.shape[0]
        X, Q = self.X, self.Q
        _fill_trig(y, X, H)
        args = (self.C, X, self.lo, self.hi, Q)
        run_threads(lambda t_, nt: _products(*args, np.int64(t_), np.int64(nt)), self.threads)
        n = y.shape[1]
        X4, Q4 = X.reshape(self.Gp, H, 2, n), Q.reshape(self.Gp, H, 2, n)
        sn, cs, a, b = X4[:, :, 0], X4[:, :, 1], Q4[:, :, 0], Q4[:, :, 1]  # a = C sin, b = C cos
        if self.sine:
            np.add(self.omega, cs[:, 0] * a[:, 0] - sn[:, 0] * b[:, 0], out=out)
        else:
            out[:] = self.omega
            for m in range(H):
                im = cs[:, m] * a[:, m] - sn[:, m] * b[:, m]
                re = cs[:, m] * b[:, m] + sn[:, m] * a[:, m]
                out += self.ha[m] * im + self.hb[m] * re
        if self.inj is not None:
            K, psi, order = self.inj
            out -= K * np.sin(order * y - psi)
        if self.drv is not None:
            F, psi, w = self.drv
            out += F * np.sin(w * t + psi - y)


def _padded(a: np.ndarray, Gp: int, n: int) -> np.ndarray:
    """A (1, N) or (G, N) parameter as (Gp, N): a shared row repeated on every row, per-group rows padded with zeros."""
    out = np.zeros((Gp, n))
    out[: a.shape[0] if a.shape[0] > 1 else Gp] = a
    return out


@nb.njit(cache=True, fastmath=False)
def _increments(states, m_sub, sd, dW, z, scr):
    """Each group's ΔW of one step from its stream-0 state, exactly as `_templates.group_fixed` draws it."""
    D = dW.shape[1]
    for g in range(states.shape[0]):
        for i in range(D):
            dW[g, i] = 0.0
        for k in range(m_sub):
            fill_normals(states[g], z, scr)
            for i in range(D):
                dW[g, i] += sd * z[i]


@nb.njit(cache=True)
def _seed_states(seed_u):
    states = np.empty((seed_u.shape[0], 4), dtype=np.uint64)
    for g in range(seed_u.shape[0]):
        seed_state(seed_u[g, 0], seed_u[g, 1], 0, states[g])
    return states


def _step(name, drift, t, h, y, noise, K, ynew):
    """One step of the named solver on all groups (the formulas of `solvers/*.py`, in the same order)."""
    if name == "EulerMaruyama":
        drift(t, y, K[0])
        np.add(y + h * K[0], noise, out=ynew)
    elif name in ("StochasticHeun", "Heun"):
        drift(t, y, K[0])
        np.add(y + h * K[0], noise, out=K[2])
        drift(t + h, K[2], K[1])
        np.add(y + 0.5 * h * (K[0] + K[1]), noise, out=ynew)
    else:  # RK4
        drift(t, y, K[0])
        drift(t + 0.5 * h, y + 0.5 * h * K[0], K[1])
        drift(t + 0.5 * h, y + 0.5 * h * K[1], K[2])
        drift(t + h, y + h * K[2], K[3])
        np.add(y, h / 6.0 * (K[0] + 2.0 * K[1] + 2.0 * K[2] + K[3]), out=ynew)


def _summarise(y, active, out, scr) -> None:
    """Add the active groups' e^{iθ} (and coherence) to the `SaveSummary` sums, as `_templates._accumulate`."""
    sn, cs = scr
    sincos(y.reshape(-1), sn.reshape(-1), cs.reshape(-1))
    for g in np.flatnonzero(active):
        out.mean_re[g] += cs[g]
        out.mean_im[g] += sn[g]
        if out.coh.shape[1] > 0:
            v = np.stack([cs[g], sn[g]])
            out.coh[g] += v.T @ v
        out.n_summ[g] += 1


def run_fixed_gemm(model, solver, P, ystate, t0, dt, n_steps, h_last, tgrid, sig, noisy, seed_u, m_sub, save_steps,
                   out) -> dict:
    """Integrate all groups in lock step, the coupling products as GEMMs; fills ``out`` (`simulate._Outputs`).

    Arguments are those `simulate` prepares for the compiled loop (same meaning, same shapes). Returns the
    statistics to add (``coupling_product``: "gemm").
    """
    G, n = ystate.shape
    drift = _SharedDrift(model, P, G)
    Gp = drift.Gp
    y = np.zeros((Gp, n))
    y[:G] = ystate
    ynew = np.empty_like(y)
    K = np.empty((4, Gp, n))
    noise = np.zeros((Gp, n))
    dW = np.zeros((G, n))
    sigp = _padded(sig, Gp, n) if noisy else None
    states = _seed_states(seed_u) if noisy else None
    z, scr = np.empty(n), np.empty(scratch_size(n))
    summ_scr = (np.empty((Gp, n)), np.empty((Gp, n)))
    active = np.ones(G, dtype=bool)
    name = type(solver).__name__
    S, si = save_steps.shape[0], 0
    if S > 0 and save_steps[0] == 0:
        out.ys[0] = y[:G]
        si = 1
    if out.summ_on and out.summ_start == 0:
        _summarise(y[:G], active, out, summ_scr)
    for step in range(n_steps):
        t, h = step_time(tgrid, step, t0, dt, n_steps, h_last)
        if noisy:
            _increments(states, np.int64(m_sub), np.sqrt(h / m_sub), dW, z, scr)
            np.multiply(sigp[:G], dW, out=noise[:G])
        with np.errstate(over="ignore", invalid="ignore"):  # as in the compiled loop: the check below reports it
            _step(name, drift, t, h, y, noise, K, ynew)
        bad = active & ~np.isfinite(ynew[:G]).all(axis=1)
        if bad.any():  # as the compiled loop: the group stops at its last finite state
            out.fail_step[bad] = step + 1
            out.fail_t[bad] = t + h
            active &= ~bad
        ynew[:G][~active] = y[:G][~active]
        y, ynew = ynew, y
        if si < S and save_steps[si] == step + 1:
            out.ys[si][active] = y[:G][active]
            si += 1
        if out.summ_on and step + 1 >= out.summ_start and (step + 1 - out.summ_start) % out.summ_every == 0:
            _summarise(y[:G], active, out, summ_scr)
    out.yfin[:] = y[:G]
    return {"coupling_product": "gemm", "product_threads": drift.threads}
