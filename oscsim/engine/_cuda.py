"""The CUDA backend of `simulate` for phase networks (Numba CUDA; ``NUMBA_ENABLE_CUDASIM=1`` runs it on the CPU).

Selected only by ``simulate(..., backend="cuda")``; never a silent fallback either way (no GPU is an error).

Layout: one thread block per group, the whole time loop of the group inside one kernel launch (as on the CPU:
no launch per step). Threads own oscillators i = tid, tid + T, ...; a drift evaluation computes
sin(mθ_j), cos(mθ_j) into shared memory (2N doubles), synchronises, and each thread sums its rows of the
coupling products over the row's block bounds (`block_bounds`) in column order; without lags, up to
``FUSED_MAX`` harmonics share one pass over the coupling (the chip's three do), so the coupling is read
from memory once per evaluation. The coupling matrices are
transposed on the device once per run (``CT[g, m, j, i] = C[g, m, i, j]``), so the 32 threads of a warp read
32 consecutive doubles of one column: coalesced. A row's sum runs sequentially over j in one thread, so the
numbers do not depend on the block size.

Noise: Philox4x32-10 (Salmon et al., SC 2011), counter-based, so each (group, oscillator, draw) is one call
and no state is kept or shared: key = the group's 64-bit stream key (splitmix64 of the engine's (seed, g)
pair, as the CPU streams are keyed), counter = (draw index low, high 32 bits, oscillator, 0); two 53-bit
uniforms per call, one Box–Muller normal. These are other numbers than the CPU path's xoshiro256** streams:
the same seed gives the same law and the same statistics, not the same path (bit identity across devices is
not promised). Deterministic runs agree with the CPU path to rounding (sequential sums here, vector lanes
there; libdevice sin/cos here, the engine's fdlibm kernel there).
"""

from __future__ import annotations

import math

import numpy as np

try:  # the kernels name `cuda` as a module global: the simulator swaps it for its fake module when it runs them
    from numba import cuda
except Exception as _exc:  # pragma: no cover - numba without its CUDA target
    cuda = None
    _IMPORT_ERROR = f"numba.cuda could not be imported ({_exc})"

__all__ = ["cuda_available", "run_fixed", "SOLVER_CODES", "philox4x32", "uniforms53", "group_keys"]

# the fixed-step methods the kernel implements (the CPU engine's SRA1 and Dopri5 are not ported)
SOLVER_CODES = {"EulerMaruyama": 0, "Heun": 1, "StochasticHeun": 1, "RK4": 2}
_MAX_SHARED_BYTES = 48 * 1024  # default per-block dynamic shared memory of every CUDA GPU since sm_20
# threads per block: None = min(128, N rounded up to a warp); the simulator runs each thread as a Python
# thread, so tests set a small value (the numbers do not depend on it: see the module docstring)
THREADS_PER_BLOCK = None
# up to this many harmonics share one pass over the coupling (sin/cos of all of them in shared memory)
FUSED_MAX = 4

_M32 = 0xFFFFFFFF
_KERNELS: dict = {}


def cuda_available() -> tuple[bool, str]:
    """Whether ``backend="cuda"`` can run here, and what it would run on (or why not)."""
    from numba import config

    if cuda is None:  # pragma: no cover
        return False, _IMPORT_ERROR
    try:
        ok = cuda.is_available()
    except Exception as exc:  # pragma: no cover - broken driver
        return False, f"numba.cuda.is_available() raised {type(exc).__name__}: {exc}"
    if not ok:
        return False, ("numba.cuda.is_available() is False: no CUDA driver or GPU (set NUMBA_ENABLE_CUDASIM=1 "
                       "to run the CUDA code on the CPU simulator)")
    if config.ENABLE_CUDASIM:
        return True, "the Numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1), on the CPU"
    try:
        name = cuda.get_current_device().name
        name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:  # pragma: no cover - device listed but unusable
        return False, f"the CUDA device could not be opened ({exc})"
    return True, f"CUDA device {name}"


# ---- Philox4x32-10 in plain uint64 arithmetic (products of two 32-bit words never overflow 64 bits, so the
# same source runs compiled on the GPU and as Python in the simulator) ------------------------------------
_PM0, _PM1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_PW0, _PW1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_U32 = np.uint64(_M32)
_S32 = np.uint64(32)
_S5, _S6 = np.uint64(5), np.uint64(6)
_TWO26 = 67108864.0
_TWO_M53 = 1.0 / 9007199254740992.0


def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of the counter (c0..c3) under the key (k0, k1); all uint64 holding 32-bit words."""
    for r in range(10):
        if r > 0:
            k0 = (k0 + _PW0) & _U32
            k1 = (k1 + _PW1) & _U32
        p0 = _PM0 * c0
        p1 = _PM1 * c2
        c0, c1, c2, c3 = (p1 >> _S32) ^ c1 ^ k0, p1 & _U32, (p0 >> _S32) ^ c3 ^ k1, p0 & _U32
    return c0, c1, c2, c3


def uniforms53(x0, x1, x2, x3):
    """Two uniforms in [0, 1) of 53 bits each from four 32-bit words (scalars, or uint64 arrays on the host)."""
    return ((x0 >> _S5) * _TWO26 + (x1 >> _S6)) * _TWO_M53, ((x2 >> _S5) * _TWO26 + (x3 >> _S6)) * _TWO_M53


def group_keys(seed_u: np.ndarray) -> np.ndarray:
    """(G, 2) uint64 Philox keys (two 32-bit words) from the engine's (seed, stream key) pairs (G, 2)."""
    def splitmix(z):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))

    s = np.asarray(seed_u, dtype=np.uint64)
    with np.errstate(over="ignore"):  # 64-bit wrap-around is the arithmetic of splitmix64
        z = splitmix(splitmix(s[:, 0]) ^ (s[:, 1] * np.uint64(0xD1B54A32D192ED03)))
    return np.ascontiguousarray(np.stack([z & np.uint64(_M32), z >> np.uint64(32)], axis=1))


def _build():
    """Compile (or, under the simulator, wrap) the device functions and kernels once per process."""
    if _KERNELS:
        return _KERNELS
    from ._templates import step_time

    phase_kernel = _phase_kernel(cuda.jit(device=True)(step_time.py_func), _normal_fn(), _drift_fn(), _summarise_fn())
    _KERNELS.update(phase=phase_kernel, transpose=_transpose_kernel(), cuda=cuda)
    return _KERNELS


def _normal_fn():
    """The device function ``normal(k0, k1, draw, i)``: one standard normal of Philox stream (k0, k1)."""
    philox = cuda.jit(device=True)(philox4x32)
    u53 = cuda.jit(device=True)(uniforms53)

    @cuda.jit(device=True)
    def bm(x0, x1, x2, x3):
        """Box–Muller: r cos(2π u2), r = sqrt(−2 ln(1 − u1)) (the tests restate it on the host with NumPy)."""
        u1, u2 = u53(x0, x1, x2, x3)
        return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)

    @cuda.jit(device=True)
    def normal(k0, k1, draw, i):
        d = np.uint64(draw)
        x0, x1, x2, x3 = philox(d & _U32, d >> _S32, np.uint64(i), np.uint64(0), k0, k1)
        return bm(x0, x1, x2, x3)

    return normal


def _drift_fn():
    """The device function ``drift(t, yv, out, g, sn, cs, fuse, P)``: the phase network's drift of group g, the
    block's threads sharing the rows (sin/cos of the phases in the shared arrays sn, cs)."""

    @cuda.jit(device=True)
    def row_sums(CT, g, m, i, l, h, cs, sn):
        """Σ_j C_ij cs_j and Σ_j C_ij sn_j over columns l..h−1 in order, C_ij = CT[g, m, j, i]."""
        p1 = 0.0
        p2 = 0.0
        for j in range(l, h):
            c = CT[g, m, j, i]
            p1 += c * cs[j]
            p2 += c * sn[j]
        return p1, p2

    @cuda.jit(device=True)
    def drift(t, yv, out, g, sn, cs, fuse, P):
        omega, CRT, CIT, ha, hb, lo, hi, injK, injpsi, injm, drvF, drvpsi, drvw = P
        n = yv.shape[0]
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        go = g if omega.shape[0] > 1 else 0
        gr = g if CRT.shape[0] > 1 else 0
        gi = g if CIT.shape[0] > 1 else 0
        gb = g if lo.shape[0] > 1 else 0
        one_m = CRT.shape[1] == 1
        has_ci = CIT.shape[2] > 0
        M = ha.shape[0]
        for i in range(tid, n, nt):
            out[i] = omega[go, i]
        if fuse:
            # one pass over C for every harmonic (the same C serves all): 2M sums per row, each in the same
            # order as a pass per harmonic, so the numbers are those of the loop below
            for j in range(tid, n, nt):
                for m in range(M):
                    x = (m + 1.0) * yv[j]
                    sn[m * n + j] = math.sin(x)
                    cs[m * n + j] = math.cos(x)
            cuda.syncthreads()
            for i in range(tid, n, nt):
                b = i // 4
                a0 = 0.0
                b0 = 0.0
                a1 = 0.0
                b1 = 0.0
                a2 = 0.0
                b2 = 0.0
                a3 = 0.0
                b3 = 0.0
                for j in range(lo[gb, b], hi[gb, b]):
                    c = CRT[gr, 0, j, i]
                    a0 += c * cs[j]
                    b0 += c * sn[j]
                    if M > 1:
                        a1 += c * cs[n + j]
                        b1 += c * sn[n + j]
                    if M > 2:
                        a2 += c * cs[2 * n + j]
                        b2 += c * sn[2 * n + j]
                    if M > 3:
                        a3 += c * cs[3 * n + j]
                        b3 += c * sn[3 * n + j]
                for m in range(M):
                    p1 = a0 if m == 0 else (a1 if m == 1 else (a2 if m == 2 else a3))
                    p2 = b0 if m == 0 else (b1 if m == 1 else (b2 if m == 2 else b3))
                    ci = cs[m * n + i]
                    si = sn[m * n + i]
                    out[i] += ha[m] * (ci * p2 - si * p1) + hb[m] * (ci * p1 + si * p2)
            cuda.syncthreads()
        else:
            for m in range(M):
                mm = m + 1.0
                for j in range(tid, n, nt):
                    x = mm * yv[j]
                    sn[j] = math.sin(x)
                    cs[j] = math.cos(x)
                cuda.syncthreads()
                mr = 0 if one_m else m
                for i in range(tid, n, nt):
                    b = i // 4
                    p1, p2 = row_sums(CRT, gr, mr, i, lo[gb, b], hi[gb, b], cs, sn)
                    if has_ci:
                        p3, p4 = row_sums(CIT, gi, m, i, lo[gb, b], hi[gb, b], cs, sn)
                        x = p1 - p4
                        yy = p2 + p3
                        im = cs[i] * yy - sn[i] * x
                        re = cs[i] * x + sn[i] * yy
                    else:
                        im = cs[i] * p2 - sn[i] * p1
                        re = cs[i] * p1 + sn[i] * p2
                    out[i] += ha[m] * im + hb[m] * re
                cuda.syncthreads()  # sn, cs are overwritten by the next harmonic
        if injK.shape[1] > 0:
            gk = g if injK.shape[0] > 1 else 0
            gp = g if injpsi.shape[0] > 1 else 0
            for i in range(tid, n, nt):
                out[i] -= injK[gk, i] * math.sin(injm * yv[i] - injpsi[gp, i])
        if drvF.shape[1] > 0:
            gf = g if drvF.shape[0] > 1 else 0
            gp = g if drvpsi.shape[0] > 1 else 0
            wt = drvw * t
            for i in range(tid, n, nt):
                out[i] += drvF[gf, i] * math.sin(wt + drvpsi[gp, i] - yv[i])

    return drift


def _summarise_fn():
    """The device function adding group g's e^{iθ} (and coherence) to the `SaveSummary` sums."""

    @cuda.jit(device=True)
    def summarise(g, yv, sn, cs, mean_re, mean_im, coh, do_coh, n_summ):
        n = yv.shape[0]
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        for j in range(tid, n, nt):
            sn[j] = math.sin(yv[j])
            cs[j] = math.cos(yv[j])
        cuda.syncthreads()
        for i in range(tid, n, nt):
            mean_re[g, i] += cs[i]
            mean_im[g, i] += sn[i]
            if do_coh:
                ci = cs[i]
                si = sn[i]
                for j in range(i, n):
                    coh[g, i, j] += ci * cs[j] + si * sn[j]
        if tid == 0:
            n_summ[g] += 1
        cuda.syncthreads()

    return summarise


def _phase_kernel(step_t, normal, drift, summarise):
    """The kernel integrating one group per block over the whole run (see the module docstring)."""
    from numba import float64, int32

    @cuda.jit
    def phase_kernel(Y, K, DW, ys, yfin, mean_re, mean_im, coh, n_summ, fail_step, fail_t,
                     omega, CRT, CIT, ha, hb, lo, hi, injK, injpsi, injm, drvF, drvpsi, drvw,
                     sig, keys, solver, t0, dt, n_steps, h_last, tgrid, m_sub, save_steps,
                     summ_on, summ_start, summ_every, do_coh, noisy, fuse):
        g = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        n = Y.shape[2]
        P = (omega, CRT, CIT, ha, hb, lo, hi, injK, injpsi, injm, drvF, drvpsi, drvw)
        shm = cuda.shared.array(0, dtype=float64)
        rows = ha.shape[0] if fuse else 1
        sn = shm[: rows * n]
        cs = shm[rows * n : 2 * rows * n]
        flag = cuda.shared.array(1, dtype=int32)
        sg = g if sig.shape[0] > 1 else 0
        k0 = keys[g, 0]
        k1 = keys[g, 1]
        S = save_steps.shape[0]
        si = 0
        p = 0
        yc = Y[g, 0]
        if S > 0 and save_steps[0] == 0:
            for i in range(tid, n, nt):
                ys[0, g, i] = yc[i]
            si = 1
        if summ_on and summ_start == 0:
            summarise(g, yc, sn, cs, mean_re, mean_im, coh, do_coh, n_summ)
        dw = DW[g]
        k_1 = K[g, 0]
        k_2 = K[g, 1]
        k_3 = K[g, 2]
        k_4 = K[g, 3]
        yt = K[g, 4]
        for step in range(n_steps):
            t, h = step_t(tgrid, step, t0, dt, n_steps, h_last)
            yc = Y[g, p]
            yn = Y[g, 1 - p]
            if noisy:
                d = h / m_sub
                sd = math.sqrt(d)
                for i in range(tid, n, nt):
                    w = 0.0
                    for k in range(m_sub):
                        w += sd * normal(k0, k1, step * m_sub + k, i)
                    dw[i] = w
            if solver == 0:  # Euler–Maruyama
                drift(t, yc, k_1, g, sn, cs, fuse, P)
                for i in range(tid, n, nt):
                    noise = sig[sg, i] * dw[i] if noisy else 0.0
                    yn[i] = yc[i] + h * k_1[i] + noise
            elif solver == 1:  # (stochastic) Heun
                drift(t, yc, k_1, g, sn, cs, fuse, P)
                for i in range(tid, n, nt):
                    noise = sig[sg, i] * dw[i] if noisy else 0.0
                    yt[i] = yc[i] + h * k_1[i] + noise
                drift(t + h, yt, k_2, g, sn, cs, fuse, P)
                for i in range(tid, n, nt):
                    noise = sig[sg, i] * dw[i] if noisy else 0.0
                    yn[i] = yc[i] + 0.5 * h * (k_1[i] + k_2[i]) + noise
            else:  # RK4 (deterministic)
                drift(t, yc, k_1, g, sn, cs, fuse, P)
                for i in range(tid, n, nt):
                    yt[i] = yc[i] + 0.5 * h * k_1[i]
                drift(t + 0.5 * h, yt, k_2, g, sn, cs, fuse, P)
                for i in range(tid, n, nt):
                    yt[i] = yc[i] + 0.5 * h * k_2[i]
                drift(t + 0.5 * h, yt, k_3, g, sn, cs, fuse, P)
                for i in range(tid, n, nt):
                    yt[i] = yc[i] + h * k_3[i]
                drift(t + h, yt, k_4, g, sn, cs, fuse, P)
                for i in range(tid, n, nt):
                    yn[i] = yc[i] + h / 6.0 * (k_1[i] + 2.0 * k_2[i] + 2.0 * k_3[i] + k_4[i])
            if tid == 0:
                flag[0] = 0
            cuda.syncthreads()
            for i in range(tid, n, nt):
                if not math.isfinite(yn[i]):
                    flag[0] = 1
            cuda.syncthreads()
            if flag[0] != 0:
                if tid == 0:
                    fail_step[g] = step + 1
                    fail_t[g] = t + h
                break  # the final state is the last finite one, as on the CPU
            p = 1 - p
            if si < S and save_steps[si] == step + 1:
                for i in range(tid, n, nt):
                    ys[si, g, i] = yn[i]
                si += 1
            if summ_on and step + 1 >= summ_start and (step + 1 - summ_start) % summ_every == 0:
                summarise(g, yn, sn, cs, mean_re, mean_im, coh, do_coh, n_summ)
        yc = Y[g, p]
        for i in range(tid, n, nt):
            yfin[g, i] = yc[i]

    return phase_kernel


def _transpose_kernel():
    @cuda.jit
    def transpose(src, dst):
        """dst[b, j, i] = src[b, i, j] for (B, N, N) arrays; grid (ceil(N/bx), ceil(N/by), min(B, 65535))."""
        j = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        i = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
        n = src.shape[1]
        if i < n and j < n:
            for b in range(cuda.blockIdx.z, src.shape[0], cuda.gridDim.z):
                dst[b, j, i] = src[b, i, j]

    return transpose


def _device_transposed(kern, arr4):
    """The (A, M, N, N) host array with its last two axes transposed, on the device."""
    cuda = kern["cuda"]
    A, M, n, _ = arr4.shape
    if n == 0:
        return cuda.to_device(np.ascontiguousarray(arr4))
    src = cuda.to_device(np.ascontiguousarray(arr4).reshape(A * M, n, n))
    dst = cuda.device_array_like(src)
    from numba import config

    bs = 8 if config.ENABLE_CUDASIM else 16
    grid = ((n + bs - 1) // bs, (n + bs - 1) // bs, min(A * M, 65535))  # gridDim.z <= 65535
    kern["transpose"][grid, (bs, bs)](src, dst)
    return dst.reshape(A, M, n, n)


def run_fixed(model, solver, P, ystate, t0, dt, n_steps, h_last, tgrid, sig, noisy, seed_u, m_sub, save_steps, ys,
              summ_on, summ_start, summ_every, mean_re, mean_im, coh, n_summ, yfin, fail_step, fail_t) -> dict:
    """Run the fixed-step loop of a packed phase network on the GPU; fills the host output arrays in place.

    Arguments are those `simulate` prepares for the CPU loop (same meaning, same shapes). Returns ``device``
    (what it ran on), ``kernel_s`` (the time loop's launch, synchronised) and ``transfer_s`` (copies to and
    from the device and the coupling transposes) [s].
    """
    import time

    ok, where = cuda_available()
    if not ok:
        raise RuntimeError(f"backend='cuda': {where}")
    kern = _build()
    cuda = kern["cuda"]
    G, n = ystate.shape
    if model.kernel == "sine":
        omega, C, lo, hi, injK, injpsi, injm, drvF, drvpsi, drvw = P
        CR, CI, ha, hb = C[:, None], np.zeros((1, 1, 0, 0)), np.ones(1), np.zeros(1)
    else:
        omega, CR, CI, ha, hb, lo, hi, injK, injpsi, injm, drvF, drvpsi, drvw = P
    threads = THREADS_PER_BLOCK or min(128, 32 * ((n + 31) // 32))
    # one pass for all harmonics: without lags, at most FUSED_MAX of them, if their sin/cos fit in shared memory
    fused = np.shape(CR)[1] == 1 and np.shape(CI)[2] == 0 and len(ha) <= FUSED_MAX
    fused = fused and 2 * len(ha) * n * 8 <= _MAX_SHARED_BYTES
    shared = 2 * (len(ha) if fused else 1) * n * 8
    if shared > _MAX_SHARED_BYTES:
        raise ValueError(f"backend='cuda': N = {n} oscillators need {shared} bytes of shared memory per block "
                         f"(sin and cos of {shared // (16 * n)} harmonic(s)), more than {_MAX_SHARED_BYTES}")
    tic = time.perf_counter()
    d = cuda.to_device
    Y = np.empty((G, 2, n))
    Y[:, 0] = ystate
    dY = d(Y)
    dK = cuda.device_array((G, 5, n))
    dDW = cuda.device_array((G, n))
    outs = [d(a) for a in (ys, yfin, mean_re, mean_im, coh, n_summ, fail_step, fail_t)]
    CRT = _device_transposed(kern, np.asarray(CR))
    CIT = _device_transposed(kern, np.asarray(CI))
    args = [d(np.ascontiguousarray(a)) for a in (omega, )] + [CRT, CIT] + [
        d(np.ascontiguousarray(a)) for a in (ha, hb, lo, hi, injK, injpsi)] + [float(injm)] + [
        d(np.ascontiguousarray(a)) for a in (drvF, drvpsi)] + [float(drvw)]
    cuda.synchronize()
    tk = time.perf_counter()
    kern["phase"][G, threads, 0, shared](
        dY, dK, dDW, *outs, *args, d(np.ascontiguousarray(sig)), d(group_keys(seed_u)),
        np.int64(SOLVER_CODES[type(solver).__name__]), float(t0), float(dt), np.int64(n_steps), float(h_last),
        d(np.ascontiguousarray(tgrid, dtype=np.float64)), np.int64(m_sub), d(np.ascontiguousarray(save_steps)),
        bool(summ_on), np.int64(summ_start), np.int64(summ_every), bool(coh.shape[1] > 0), bool(noisy), bool(fused))
    cuda.synchronize()
    tk = time.perf_counter() - tk
    for host, dev in zip((ys, yfin, mean_re, mean_im, coh, n_summ, fail_step, fail_t), outs):
        dev.copy_to_host(host)
    return {"device": where, "kernel_s": tk, "transfer_s": time.perf_counter() - tic - tk}
