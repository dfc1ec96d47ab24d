"""Counter-free, per-group random streams for the engine (xoshiro256**, seeded by splitmix64).

Each group ``g`` of a run owns two streams seeded from ``(seed, g, stream)``: stream 0 gives the Brownian
increments, stream 1 the extra Gaussians of the area integrals that SRA-type schemes need. The numbers a
group sees therefore depend only on the seed and the group index, never on the thread that integrates it,
and the Brownian path is the same for every solver.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._coupling import sincos

__all__ = ["brownian_increments", "standard_normals"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TWO_PI = 2.0 * np.pi
_INV_2_53 = 1.0 / 9007199254740992.0


@nb.njit(nb.uint64(nb.uint64), cache=True, inline="always")
def _splitmix64(z):
    z = z + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@nb.njit(cache=True, inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@nb.njit(cache=True)
def seed_state(seed, group, stream, state):
    """Fill ``state`` (4,) uint64 with a xoshiro256** state for (seed, group, stream)."""
    z = _splitmix64(np.uint64(seed))
    z = _splitmix64(z ^ np.uint64(group) * np.uint64(0xD1B54A32D192ED03))
    z = _splitmix64(z ^ np.uint64(stream) * np.uint64(0x8CB92BA72F3D8DD7))
    for i in range(4):
        z = _splitmix64(z + np.uint64(i))
        state[i] = z
    if state[0] == 0 and state[1] == 0 and state[2] == 0 and state[3] == 0:  # pragma: no cover
        state[0] = np.uint64(1)


@nb.njit(cache=True, inline="always")
def _next(s):
    result = _rotl(s[1] * np.uint64(5), 7) * np.uint64(9)
    t = s[1] << np.uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


def scratch_size(n: int) -> int:
    """Length of the scratch array `fill_normals` needs for ``n`` numbers."""
    return 4 * ((n + 1) // 2) + 1


@nb.njit(cache=True, fastmath=False)
def fill_normals(s, out, scratch):
    """Fill ``out`` with standard normal numbers (Box–Muller on pairs; an odd tail discards one).

    The uniforms are drawn first (the sequential part), then transformed in vectorisable loops
    (``scratch``: length `scratch_size(len(out))`). out[2i] = r_i cos a_i, out[2i+1] = r_i sin a_i.
    """
    n = out.shape[0]
    m = (n + 1) // 2
    r = scratch[:m]
    a = scratch[m : 2 * m]
    sa = scratch[2 * m : 3 * m]
    ca = scratch[3 * m : 4 * m]
    for i in range(m):
        r[i] = (float(_next(s) >> np.uint64(11)) + 1.0) * _INV_2_53  # (0, 1]
        a[i] = float(_next(s) >> np.uint64(11)) * _INV_2_53  # [0, 1)
    for i in range(m):
        r[i] = np.sqrt(-2.0 * np.log(r[i]))
    sincos(a, sa, ca, _TWO_PI)
    for i in range(n // 2):
        out[2 * i] = r[i] * ca[i]
        out[2 * i + 1] = r[i] * sa[i]
    if n % 2 == 1:
        out[n - 1] = r[m - 1] * ca[m - 1]


@nb.njit(cache=True)
def _normals_kernel(seed, groups, stream, n_draws, dim):
    out = np.empty((n_draws, groups.shape[0], dim))
    st = np.empty(4, dtype=np.uint64)
    buf = np.empty(dim)
    scr = np.empty(4 * ((dim + 1) // 2) + 1)
    for gi in range(groups.shape[0]):
        seed_state(seed, groups[gi], stream, st)
        for k in range(n_draws):
            fill_normals(st, buf, scr)
            out[k, gi, :] = buf
    return out


def standard_normals(seed: int, n_groups: int, dim: int, n_draws: int, stream: int = 0) -> np.ndarray:
    """The engine's standard normal numbers, exactly as a run with this seed draws them.

    Parameters
    ----------
    seed : int
        Run seed, >= 0.
    n_groups, dim : int
        Number of groups G and state components D per draw.
    n_draws : int
        Number of draws (one per Brownian sub-step).
    stream : {0, 1}
        0: Brownian increments; 1: the extra Gaussians of the area (Lévy/``I_(1,0)``) integrals.

    Returns
    -------
    ndarray, shape (n_draws, G, D)
    """
    groups = np.arange(n_groups, dtype=np.int64)
    return _normals_kernel(np.uint64(seed), groups, np.uint64(stream), int(n_draws), int(dim))


def brownian_increments(seed: int, n_groups: int, dim: int, n_steps: int, dt: float, substeps: int = 1):
    """Brownian increments ΔW (variance ``dt`` per step) and areas I_(1,0)/dt, as a run draws them.

    The path is generated on the fine grid ``dt/substeps`` and summed, exactly as
    ``simulate(..., brownian_substeps=substeps)`` does, so two runs with ``(dt, m)`` and ``(dt/m, 1)``
    see the same Brownian path. Only valid for a uniform grid (no shortened last step).

    Returns
    -------
    dW : ndarray, shape (n_steps, G, D)
        ΔW_n = W(t_{n+1}) − W(t_n).
    area : ndarray, shape (n_steps, G, D)
        I_(1,0)/dt = (1/dt) ∫_{t_n}^{t_{n+1}} (W(s) − W(t_n)) ds.
    """
    m = int(substeps)
    d = dt / m
    z1 = standard_normals(seed, n_groups, dim, n_steps * m, 0).reshape(n_steps, m, n_groups, dim)
    z2 = standard_normals(seed, n_groups, dim, n_steps * m, 1).reshape(n_steps, m, n_groups, dim)
    dw_f = np.sqrt(d) * z1
    i10_f = 0.5 * d * (dw_f + np.sqrt(d) * z2 / np.sqrt(3.0))
    before = np.cumsum(dw_f, axis=1) - dw_f  # W(s_k) - W(t_n) at the start of each sub-step
    dW = dw_f.sum(axis=1)
    area = (before * d + i10_f).sum(axis=1) / dt
    return dW, area
