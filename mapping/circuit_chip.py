"""Kuramoto attention on a ``ring-circuit`` chip: every coupling step simulated as node-voltage SDEs.

Per (sequence b, head h, coordinate j, bank) the chip holds T five-stage inverter rings (the
:func:`hw_models.cmos_65nm_ring` preset, square-law MOSFETs as in ngspice level 1) and, for every pair
u < t, a unilateral transconductance coupler (:class:`hw_models.TransconductanceCoupler`) that injects the
current

    i_{t←u}(s) = G_{t,u} [w₁ (V_{u,0}(s) − V_DD/2) + w₂ (V_{u,k}(s) − V_DD/2)]

into node 0 of ring t. G_{t,u} = sign(g_t) g_m,{t,u} is signed: a negative receive gain is the transconductor
with its output pair swapped (the current reverses), not a sign flip of a phase model. The two taps (node 0
and node k of the source ring, weights w₁, w₂) make the first harmonic of the coupler's coupling function a
pure sine, the ``two-tap`` phase correction recomputed for this coupler (:func:`circuit_device`).

Node equation (C_{r,k} the node load, ΔV_T per transistor):

    C_{r,k} dV_{r,k} = [I_P(V_{r,k−1}, V_{r,k}) − I_N(V_{r,k−1}, V_{r,k}) + δ_{k0} Σ_{u<r} i_{r←u}] ds
                       + √(S_i/2) dW_{r,k},

S_i = 4 k_B T γ (g_m,n + g_m,p) the channel thermal noise of the driving inverter
(:func:`hw_models.thermal_current_psd`). The network is integrated by :class:`oscsim.engine.CustomODE` with
the module-level Numba right-hand side :func:`network_rhs` (one group per network), RK4 without noise and
stochastic Heun with it, at ``steps_per_period`` steps per period.

Programming: the macromodel chip's coupling C_{t,u} = κ Q_c(A_{t,u}) Q_g(v_t) (1 + δ_{t,u}) [rad/cycle] is
realised by g_m,{t,u} = f₀ |C_{t,u}| / a₁, with a₁ [rad/s per S] the first sine harmonic of the two-tap
coupling function H(Δ) = (1/2π)∮ v₀(s)/C₀ · i(s + Δ) ds (v₀: the receiver's PPV at node 0), so both rungs
program the same physical coupling strength; the coupler spread δ is the chip's own draw.

Mismatch: each transistor's ΔV_T (Pelgrom, σ = A_VT/√(2WL)) and each node's load spread are drawn from the
chip's mismatch seed (per layer). The ring's frequency trim is a load trim (all C of a ring scaled by one
factor, which scales its time exactly): it is set from the first-order PPV sensitivities
(:func:`hw_models.frequency_sensitivities`) so that the predicted residual frequency error equals the chip's
recorded post-trim residual ``freq_residual_rel``, the same draw the macromodel rung uses. The second-order
remainder of that prediction is a real error of this trim and stays in the circuit.

Phase in / phase out: each ring is placed on its own limit cycle at its token phase (ideal placement), or,
with ``[injection] mode = "injected"``, its phase is written by a simulated injection transient
(:func:`inject_rings`: a reference current I cos(ω_ref t + φ) into node 0 for ``injection.cycles`` cycles, I =
K C/|V₁| from the PPV, the start error ψ₀ the macromodel chip's draw). The settle and readout windows are one
engine run: the right-hand side switches the couplers off at τ_s (half strength at that grid point, so the
trapezoid and RK4 weights of the coupled window are exactly τ_s) and each ring free-runs for the
readout window (``READ_CYCLES``); its phase is read from
the interpolated rising V_DD/2 crossings t_k of node 0 (limit-cycle phase 0), ψ_k = −ω_ref t_k, in the frame of
the reference at ω_ref. The reference frequency and phase are calibrated on a nominal uncoupled ring run through
the same integrator, step and readout (so the integrator's own frequency error and the crossing interpolation
bias cancel); the calibration spread is recorded. The periphery then forms the same estimate as the macromodel
chip (:mod:`mapping.kuramoto_chip`), subtracting the known offset τ_s Σ_u G_{t,u} H(0) of the programmed
couplers (the coupler's loading offset a₀ and its cos terms).

Flicker (``flicker = true``): each node's drain-current noise is the white thermal part plus K_f
Ornstein–Uhlenbeck currents (the :class:`hw_models.FlickerNoise` bank: log-spaced rates, variance S_w f_c ln r
each, sum S_w f_c/f inside the band), extra states of the same SDE (dx = −γ x dt + sqrt(2vγ) dW), started from
their stationary law keyed on the network's stream seed. :func:`ring_phase_noise` measures the resulting
phase-noise spectrum of free-running rings against the macromodel's Γ_dc prediction.

Valid where the level-1 transistor model is (no gate or junction capacitance, GAMMA = 0, TNOM): it is the
rung that ngspice checks (:mod:`mapping.spice_export`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numba
import numpy as np

from hw_models.mosfet import ids_nmos, inverter_current

from .kuramoto_chip import KuramotoChipOutput
from .readout import PhaseReadout, free_running_samples, wrap
from .seeds import PURPOSE, keyed_normals, sequence_rng, stream_seeds

__all__ = ["CircuitDevice", "circuit_device", "network_rhs", "network_rhs_np", "CircuitHead", "build_head",
           "simulate_heads", "circuit_chip_step", "check_circuit_supported", "DEFAULT_STEPS_PER_PERIOD"]

DEFAULT_STEPS_PER_PERIOD = 100
"""Integration steps per ring period (RK4 / stochastic Heun); the measured step study is in BENCHMARKS.md."""

_HDR = 17  # T, n, k_tap, w1, w2, vmid, vdd, lam_n, lam_p, coupled, K_f, flicker-rate offset, t_off [s], ε [s],
# injection amplitude I [A] (0: none), ω_ref [rad/s], offset of the T injection phases
_PER_NODE = 5  # vtn, vtp, beta_n, beta_p, 1/C
READ_CYCLES = 2.5
"""Free-running readout window after τ_s [cycles]: the first 0.25 cycle is skipped (coupler switch-off
transient), leaving two or three rising node-0 crossings per ring, through which a line is fitted and read at
τ_s (so the ring's residual frequency error does not add the window's drift). The detector's own averaging
window (``readout.averaging_cycles``) enters through :class:`mapping.readout.PhaseReadout` as for the
macromodel."""
READ_STEP_FACTOR = 2
"""The uncoupled readout window is integrated at this multiple of the settle step (measured in BENCHMARKS.md,
*Integrator step*); 1: one run for both windows with the couplers switched off inside the right-hand side."""
_READ_SKIP_CYCLES = 0.25  # crossings this soon after the couplers switch off are not used (coupler transient)
_READ_CHUNK_RINGS = 16384  # rings per readout engine call (≈ 160 MB of saved waveforms at T/100)
_MAX_GROUP_FLOATS = 4_000_000  # parameters per engine call (32 MB): chunking bound, not a model number
_MAX_SAVED_FLOATS = 20_000_000  # saved states per engine call (160 MB): chunking bound, not a model number
_T_NEVER = 1e300  # t_off of a head that is not switched: couplers on for the whole run [s]


# ------------------------------------------------------------------------------------------- device data
@dataclass(frozen=True, eq=False)
class CircuitDevice:
    """The ring and coupler figures one circuit chip uses (from :mod:`hw_models`, see :func:`circuit_device`).

    Attributes
    ----------
    ring : RingOscillatorParams
        Nominal ring (loads scaled so that its free-running frequency is the chip's f₀).
    period_s, omega : float
        Free-running period [s] and angular frequency [rad/s] of the nominal ring (limit cycle).
    lc_theta : (M,) rad; lc_x : (M, n) V
        Nominal limit cycle on a uniform phase grid, phase 0 at the rising V_DD/2 crossing of node 0.
    tap_node : int
        Second tap k of the source ring.
    weights : (2,)
        Tap weights (w₁ at node 0, w₂ at node k), w₁ + w₂ = 1.
    a1_rad_s_per_s : float
        First sine harmonic of the two-tap coupling function per siemens [rad/s per S].
    harmonics : (M, 2)
        Two-tap coupling function harmonics normalised to a₁ = 1 (b₁ = 0 by construction).
    offset_norm : float
        H(0)/a₁ of the two-tap coupler including its loading offset a₀ (the periphery subtracts it).
    sens_vtn, sens_vtp : (n,) Hz/V; sens_c : (n,) Hz
        First-order frequency sensitivities to each stage's ΔV_T and relative load change.
    s_i_a2_per_hz : float
        One-sided node current-noise PSD [A²/Hz] at the chip temperature.
    sources : dict
    """

    ring: object
    period_s: float
    omega: float
    lc_theta: np.ndarray
    lc_x: np.ndarray
    tap_node: int
    weights: np.ndarray
    a1_rad_s_per_s: float
    harmonics: np.ndarray
    offset_norm: float
    sens_vtn: np.ndarray
    sens_vtp: np.ndarray
    sens_c: np.ndarray
    s_i_a2_per_hz: float
    sources: dict


def transconductor_coupling_function(lc_x, ppv, c_load_f, vmid, src_node, n_harmonics=8):
    """Coupling function of a unit (1 S) transconductor from node ``src_node`` of a source ring into node 0.

    H(Δ) = (1/2π)∮ v₀(s)/C · (x_src(s + Δ) − V_DD/2) ds [rad/s per S], Δ = θ_source − θ_receiver, both rings
    nominal (cycle average, weak coupling). Returns (a₀, harmonics (n_harmonics, 2) rows (a_m, b_m)).
    """
    M = lc_x.shape[0]
    v0 = ppv[:, 0] / c_load_f
    xs = lc_x[:, src_node] - vmid
    # H(Δ_j) = mean_s v0(s) xs(s + Δ_j): a circular cross-correlation, evaluated by FFT
    H = np.real(np.fft.ifft(np.conj(np.fft.fft(v0)) * np.fft.fft(xs))) / M
    c = np.fft.rfft(H) / M
    m = np.arange(1, n_harmonics + 1)
    return float(c[0].real), np.stack([-2 * c[m].imag, 2 * c[m].real], axis=1)


@lru_cache(maxsize=8)
def circuit_device(f0_hz: float | None, temperature_k: float) -> CircuitDevice:
    """Nominal ring, limit cycle, two-tap transconductor coupling and noise for a chip (cached).

    ``f0_hz`` None keeps the preset's frequency; otherwise every load is scaled by f_preset / f0 (with no other
    capacitance in the model, the node equations then run exactly f0/f_preset times faster).
    """
    import hw_models as hw

    base = hw.cmos_65nm_ring()
    lc0 = hw.limit_cycle(base)
    ring = base.replace(temperature_k=float(temperature_k))
    src = {"ring": "hw_models.cmos_65nm_ring()", "coupler": "hw_models.TransconductanceCoupler (two taps)"}
    if f0_hz is not None and abs(float(f0_hz) * lc0.period_s - 1.0) > 1e-12:
        ring = ring.replace(c_load_f=base.c_load_f * lc0.f0_hz / float(f0_hz))
        src["ring"] += f", loads scaled by {lc0.f0_hz / float(f0_hz):.6g} for f0 = {float(f0_hz):.6g} Hz"
    lc = hw.limit_cycle(ring)
    n = ring.n_stages
    vmid = 0.5 * ring.vdd_v
    taps = [transconductor_coupling_function(lc.x, lc.ppv, ring.c_load_f, vmid, k) for k in range(n)]
    c0 = taps[0][1][0, 0] + 1j * taps[0][1][0, 1]
    best = None
    for k in range(1, n):
        ck = taps[k][1][0, 0] + 1j * taps[k][1][0, 1]
        if abs(ck.imag) < 1e-30:
            continue
        r = -c0.imag / ck.imag  # w2/w1 making the combined first harmonic real
        tot = c0 + r * ck
        if r <= 0 or tot.real <= 0:
            continue
        eff = tot.real / (1.0 + r)  # first harmonic per unit total transconductance
        if best is None or eff > best[0]:
            best = (eff, k, r)
    if best is None:
        raise ValueError("no tap of the ring makes the transconductor's coupling function a pure sine")
    _, k, r = best
    w = np.array([1.0, r]) / (1.0 + r)
    a0 = w[0] * taps[0][0] + w[1] * taps[k][0]
    h = w[0] * taps[0][1] + w[1] * taps[k][1]
    a1 = float(h[0, 0])
    hn = h / a1
    hn[0, 1] = 0.0  # exact by construction (rounding)
    sn, sp, sc = hw.frequency_sensitivities(ring)
    return CircuitDevice(
        ring=ring, period_s=lc.period_s, omega=lc.omega, lc_theta=lc.theta.copy(), lc_x=lc.x.copy(),
        tap_node=int(k), weights=w, a1_rad_s_per_s=a1, harmonics=hn,
        offset_norm=float((a0 + h[:, 1].sum()) / a1), sens_vtn=np.asarray(sn), sens_vtp=np.asarray(sp),
        sens_c=np.asarray(sc), s_i_a2_per_hz=float(hw.thermal_current_psd(ring)), sources=src)


def circuit_flicker():
    """The node flicker bank of a ``flicker = true`` chip: :func:`hw_models.cmos_65nm_flicker` (1 MHz corner,
    assumed from Hansen 2009; band 1 kHz–100 MHz, 2 OU processes per decade, 11 per node)."""
    from hw_models.flicker import cmos_65nm_flicker

    return cmos_65nm_flicker()


def circuit_summary(config) -> str:
    """Lines of :meth:`mapping.Chip.summary` for a ``ring-circuit`` chip's flicker and injection (empty if off)."""
    out = ""
    if config.flicker and config.noise:
        fl = circuit_flicker()
        out += (f"\nflicker: 1/f drain-current noise at every ring node, corner {fl.corner_hz:.3g} Hz (assumed), "
                f"{fl.n_processes} OU currents per node over {fl.f_min_hz:.3g}-{fl.f_max_hz:.3g} Hz")
    if config.injection.mode == "injected":
        inj = config.injection
        out += (f"\nphase write: injection transient at circuit level, {inj.cycles:g} cycles at K = "
                f"{inj.strength:.3g} rad/cycle (reference current into node 0; includes the release error)")
    return out


def check_circuit_supported(kind: str) -> None:
    """Raise for model kinds the circuit rung does not build (SSA)."""
    if kind != "kuramoto":
        raise ValueError(
            "device = 'ring-circuit' simulates Kuramoto attention layers at circuit level; the circuit rung is "
            "not built for SSA (its pairwise cells would need resistive ring pairs at node-voltage level), and a "
            "silent fallback to the macromodel would mislabel the result: use device = 'ring-macromodel' for SSA")


# ------------------------------------------------------------------------------------------ right-hand side
@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _coupler_currents(p, g0, T, n, fac, src, dydt):
    """dydt[r n] = fac Σ_{u<r} G_{r,u} src_u [A] (the lower-triangular coupler product of one network).

    Reassociation lets the compiler vectorise each row's sum (order of a sum of ≤ 127 terms: rounding only,
    ~1e-16 relative); nothing else is relaxed, and the MOSFET currents stay strict."""
    for r in range(T):
        row = g0 + r * T
        acc = 0.0
        for u in range(r):
            acc += p[row + u] * src[u]
        dydt[r * n] = fac * acc


@numba.njit(cache=True)
def network_rhs(t, y, p, dydt):
    """dV/dt [V/s] of T coupled rings (one group of :class:`oscsim.engine.CustomODE`); layout in module docs.

    State: the T·n node voltages [V], then (flicker on) K_f OU currents [A] per node, node-major. The couplers
    act for t < t_off − ε, at half strength for |t − t_off| ≤ ε (the switching instant: the value of a step
    function that keeps the trapezoid and RK4 weights of the coupled window exactly τ_s) and not after."""
    T = int(p[0])
    n = int(p[1])
    kt = int(p[2])
    w1 = p[3]
    w2 = p[4]
    vmid = p[5]
    vdd = p[6]
    lam_n = p[7]
    lam_p = p[8]
    kf = int(p[10])
    D0 = T * n
    fac = 0.0
    if p[9] != 0.0 and T > 1:
        if t < p[12] - p[13]:
            fac = 1.0
        elif t <= p[12] + p[13]:
            fac = 0.5
    if fac != 0.0:
        src = np.empty(T)
        for u in range(T):
            src[u] = w1 * (y[u * n] - vmid) + w2 * (y[u * n + kt] - vmid)
        _coupler_currents(p, _HDR + _PER_NODE * D0, T, n, fac, src, dydt)
    else:
        for r in range(T):
            dydt[r * n] = 0.0
    if p[14] != 0.0:  # injection locking: I cos(ω_ref t + φ_r) into node 0 of every ring
        po = int(p[16])
        for r in range(T):
            dydt[r * n] += p[14] * math.cos(p[15] * t + p[po + r])
    for r in range(T):
        for k in range(n):  # stage k is driven by stage k − 1 of its ring
            i = r * n + k
            o = _HDR + _PER_NODE * i
            cur = inverter_current(y[r * n + (k - 1 + n) % n], y[i], vdd, p[o], p[o + 1], p[o + 2], p[o + 3], lam_n, lam_p)
            if k == 0:
                cur += dydt[i]
            for q in range(kf):  # flicker: the node's OU currents
                cur += y[D0 + i * kf + q]
            dydt[i] = cur * p[o + 4]
    if kf > 0:
        fo = int(p[11])
        for i in range(D0):
            for q in range(kf):
                m = D0 + i * kf + q
                dydt[m] = -p[fo + q] * y[m]


def network_rhs_np(y, p, t=0.0):
    """NumPy twin of :func:`network_rhs` for a batch: y (G, D), p (G, P) -> dy/dt (G, D) at time t [s]."""
    from hw_models.mosfet import ids_nmos_np

    y = np.atleast_2d(y)
    p = np.atleast_2d(p)
    T, n, kt = (int(x) for x in p[0, :3])
    kf = int(p[0, 10])
    w1, w2, vmid, vdd, lam_n, lam_p = (p[:, i:i + 1] for i in range(3, 9))
    D = T * n
    node = p[:, _HDR:_HDR + _PER_NODE * D].reshape(len(p), D, _PER_NODE)
    idx = np.arange(D)
    prev = (idx // n) * n + (idx % n - 1) % n
    v = y[:, :D]
    vin, vout = v[:, prev], v
    ip = ids_nmos_np(-vin, -vout, -vdd, -node[..., 1], node[..., 3], lam_p)
    i_n = ids_nmos_np(vin, vout, 0.0, node[..., 0], node[..., 2], lam_n)
    cur = ip - i_n
    out = np.zeros_like(y)
    if kf:
        ou = y[:, D:].reshape(len(p), D, kf)
        cur = cur + ou.sum(-1)
        fo = int(p[0, 11])
        out[:, D:] = (-p[:, None, fo:fo + kf] * ou).reshape(len(p), D * kf)
    if p[0, 9] != 0.0 and T > 1:
        t_off, eps = p[:, 12:13], p[:, 13:14]
        fac = np.where(t < t_off - eps, 1.0, np.where(t <= t_off + eps, 0.5, 0.0))
        G = p[:, _HDR + _PER_NODE * D:_HDR + _PER_NODE * D + T * T].reshape(len(p), T, T)
        G = np.tril(G, -1)
        src = w1 * (v[:, 0::n] - vmid) + w2 * (v[:, kt::n] - vmid)
        cur[:, 0::n] += fac * np.einsum("gtu,gu->gt", G, src)
    if p[0, 14] != 0.0:
        po = int(p[0, 16])
        cur[:, 0::n] += p[:, 14:15] * np.cos(p[:, 15:16] * t + p[:, po:po + T])
    out[:, :D] = cur * node[..., 4]
    return out


# ----------------------------------------------------------------------------------------------- one head
@dataclass
class CircuitHead:
    """G independent networks of T rings, ready to integrate (built by :func:`build_head`).

    Attributes
    ----------
    params : (G, P) packed parameters of :func:`network_rhs` (couplers on).
    y0 : (G, T·n) initial node voltages [V] (each ring on its own limit cycle at its token phase).
    sigma : (G, T·n) node noise intensities [V/√s] (zeros without noise).
    theta0 : (G, T) placement phases [rad].
    gm : (G, T, T) signed transconductances G_{t,u} [S] including the coupler spread (lower triangle).
    c_load : (G, T, n) node loads [F] after mismatch and trim; trim : (G, T) load-trim factors.
    dvt_n, dvt_p : (G, T, n) threshold shifts [V].
    steps_per_period : int; stochastic : bool
        Integrator the head was calibrated for (RK4 or stochastic Heun at T/steps).
    device : CircuitDevice
    calibration : RingCalibration or None
    calibration_index : (G·T,) or None
        Calibration row of every ring (None: row i for ring i).
    flicker : hw_models.FlickerNoise or None
        The 1/f node-current noise bank integrated with the head (None: white thermal noise only).
    flicker_std_a, flicker_sigma : (K_f,)
        Stationary std [A] of each OU current (its start draw) and its engine noise amplitude sqrt(2vγ) [A/√s].
    """

    params: np.ndarray
    y0: np.ndarray
    sigma: np.ndarray
    theta0: np.ndarray
    gm: np.ndarray
    c_load: np.ndarray
    dvt_n: np.ndarray
    dvt_p: np.ndarray
    trim: np.ndarray
    steps_per_period: int
    stochastic: bool
    device: CircuitDevice
    calibration: object = None
    flicker: object = None
    flicker_std_a: np.ndarray = None
    flicker_sigma: np.ndarray = None
    calibration_index: np.ndarray = None


def place_on_limit_cycle(dev: CircuitDevice, theta, cycle=None) -> np.ndarray:
    """Node voltages (..., n) [V] of the nominal limit cycle at phases ``theta`` (...) [rad] (periodic linear
    interpolation on the limit-cycle grid). ``cycle``: a (M, n) grid to use instead of ``dev.lc_x``."""
    lc_x = dev.lc_x if cycle is None else cycle
    th = np.mod(np.asarray(theta, float), 2 * math.pi)
    M = len(lc_x)
    pos = th / (2 * math.pi) * M
    i0 = np.floor(pos).astype(np.int64) % M
    fr = (pos - np.floor(pos))[..., None]
    return (1 - fr) * lc_x[i0] + fr * lc_x[(i0 + 1) % M]


@lru_cache(maxsize=16)
def _numerical_cycle(dev: CircuitDevice, dt: float, stochastic: bool, n_points: int = 1024):
    """The nominal ring's limit cycle as the integrator at step ``dt`` sees it: (M, n) grid [V], phase 0 at the
    rising V_DD/2 crossing of node 0, and its period [s].

    Placing rings on the exact limit cycle would let each relax onto the discrete one with a phase offset that
    depends on where it was placed (measured: 1.8e-3 rad rms for stochastic Heun at T/100, about 1 % of a
    typical increment); on the discrete cycle the offset is common to all rings and calibrated away.
    """
    from scipy.interpolate import CubicSpline

    n = dev.ring.n_stages
    z = np.zeros((1, n))
    rows = _ring_rows(dev, z, z, np.full((1, n), dev.ring.c_load_f))
    n_per = 24
    ts, ys = _integrate(rows, dev.lc_x[:1].copy(), z, n_per * dev.period_s, dt, 0, stochastic, save_every=1)
    v = ys[:, 0, :]
    x = v[:, 0] - 0.5 * dev.ring.vdd_v
    idx = np.nonzero((x[:-1] < 0) & (x[1:] >= 0))[0]
    sp = CubicSpline(ts, v, axis=0)
    tc = []
    for i in idx[-4:]:
        a, b = ts[i], ts[i + 1]
        for _ in range(60):  # bisection on the spline: the crossing time to machine precision
            m = 0.5 * (a + b)
            if sp(m)[0] - 0.5 * dev.ring.vdd_v < 0:
                a = m
            else:
                b = m
        tc.append(0.5 * (a + b))
    period = float(np.mean(np.diff(tc)))
    grid = sp(tc[-2] + period * np.arange(n_points) / n_points)
    return grid, period


def draw_circuit_mismatch(dev: CircuitDevice, shape: tuple, seed) -> tuple:
    """ΔV_T of every NMOS and PMOS and relative load spread of every node, each ``shape + (n,)``.

    ``seed``: a sequence of ints for :func:`numpy.random.default_rng` (the chip's seed, layer).
    """
    ring = dev.ring
    rng = np.random.default_rng(seed)
    n = ring.n_stages
    dvn = rng.normal(0.0, ring.sigma_vt_n_v, shape + (n,))
    dvp = rng.normal(0.0, ring.sigma_vt_p_v, shape + (n,))
    crel = np.clip(rng.normal(0.0, ring.sigma_c_rel, shape + (n,)), -0.9, None)  # no negative capacitor
    return dvn, dvp, crel


def _ring_rows(dev: CircuitDevice, dvn, dvp, c_load) -> np.ndarray:
    """Single-ring parameter rows (N, P1) of :func:`network_rhs` (couplers off) for (N, n) arrays."""
    ring = dev.ring
    N, n = c_load.shape
    hdr = np.zeros((N, _HDR))
    hdr[:] = (1, n, dev.tap_node, dev.weights[0], dev.weights[1], 0.5 * ring.vdd_v, ring.vdd_v,
              ring.lambda_n_per_v, ring.lambda_p_per_v, 0.0, 0, 0, _T_NEVER, 0.0, 0.0, 0.0, 0)
    node = np.stack([ring.vto_n_v + dvn, ring.vto_p_v + dvp, np.full((N, n), ring.beta_n_a_per_v2),
                     np.full((N, n), ring.beta_p_a_per_v2), 1.0 / c_load], axis=-1)
    return np.concatenate([hdr, node.reshape(N, -1)], axis=1)


@dataclass(eq=False)
class RingCalibration:
    """Each ring's own limit cycle and period as integrated (untrimmed loads), see :func:`calibrate_rings`.

    Attributes
    ----------
    period_s : (N,) own period [s]; tau0_s : (N,) time of ``samples[:, 0]`` after a rising node-0 crossing [s];
    samples : (N, S, n) float32 states [V] every ``dt_s`` over one period; rows : (N, P1) ring parameters;
    dt_s : float.
    """

    period_s: np.ndarray
    tau0_s: np.ndarray
    samples: np.ndarray
    rows: np.ndarray
    dt_s: float


def _crossings(ts, v, level):
    """Rising crossings of ``level`` in v (S, N) with a cubic through the four samples around each bracket
    (linear interpolation of a ring edge leaves ~1e-4 cycle of bias at T/100): (sample index, ring, time)."""
    x = v - level
    rise = (x[:-1] < 0) & (x[1:] >= 0)
    rise[:1] = False  # the cubic needs one sample before and one after the bracket
    rise[-1:] = False
    si, ri = np.nonzero(rise)
    y = np.stack([x[si + d, ri] for d in (-1, 0, 1, 2)])  # (4, K)
    s = y[1] / (y[1] - y[2])
    for _ in range(4):  # Newton on the Lagrange cubic through nodes -1, 0, 1, 2 (bracket [0, 1])
        lg = np.stack([-s * (s - 1) * (s - 2) / 6, (s + 1) * (s - 1) * (s - 2) / 2,
                       -(s + 1) * s * (s - 2) / 2, (s + 1) * s * (s - 1) / 6])
        dl = np.stack([-(3 * s * s - 6 * s + 2) / 6, (3 * s * s - 4 * s - 1) / 2,
                       -(3 * s * s - 2 * s - 2) / 2, (3 * s * s - 1) / 6])
        f, df = (lg * y).sum(0), (dl * y).sum(0)
        s = np.clip(s - f / np.where(df > 0, df, 1.0), 0.0, 1.0)
    return si, ri, ts[si] + s * (ts[si + 1] - ts[si])


_CAL_RELAX, _CAL_MEASURE = 1.0, 3.0  # cycles: relaxation onto the ring's own cycle, then measurement


def calibrate_rings(dev: CircuitDevice, dvn, dvp, c_load, dt: float, stochastic: bool) -> RingCalibration:
    """Run every (mismatched, untrimmed) ring alone, noise-free, with the chip's integrator: its own period and
    one period of its own limit cycle (the chip's trim and phase-writing calibration).

    dvn, dvp, c_load : (N, n). Returns :class:`RingCalibration`.
    """
    n = dev.ring.n_stages
    N = c_load.shape[0]
    rows = _ring_rows(dev, dvn, dvp, c_load)
    cycle, per_nom = _numerical_cycle(dev, dt, stochastic)
    t1 = (_CAL_RELAX + _CAL_MEASURE + 1.5) * per_nom
    S = int(math.ceil(1.1 * per_nom / dt)) + 2  # one period (+10 % for the slowest ring) and the RK4 point
    per = np.empty(N)
    tau0 = np.empty(N)
    samples = np.empty((N, S, n), np.float32)
    chunk = 2048
    for c0 in range(0, N, chunk):
        sl = slice(c0, min(N, c0 + chunk))
        m = sl.stop - sl.start
        y0 = np.broadcast_to(cycle[0], (m, n)).copy()
        ts, ys = _integrate(rows[sl], y0, np.zeros((m, n)), t1, dt, 0, stochastic, save_every=1)
        si, ri, tc = _crossings(ts, ys[:, :, 0], 0.5 * dev.ring.vdd_v)
        keep = tc >= 0.9 * _CAL_RELAX * per_nom
        si, ri, tc = si[keep], ri[keep], tc[keep]
        order = np.lexsort((tc, ri))
        si, ri, tc = si[order], ri[order], tc[order]
        cnt = np.bincount(ri, minlength=m)
        if np.any(cnt < 3):
            bad = int(np.argmax(cnt < 3)) + c0
            raise ValueError(f"ring {bad} of the layer does not oscillate with its drawn mismatch (fewer than 3 "
                             f"crossings in {_CAL_MEASURE + 1.5:.1f} cycles)")
        first = np.concatenate([[0], np.cumsum(cnt)[:-1]])
        k = np.arange(len(tc)) - np.repeat(first, cnt)  # crossing number within each ring
        kk = k < 3  # the first three crossings: least-squares slope over k = 0, 1, 2 is (t2 − t0)/2
        t3 = tc[kk].reshape(m, 3)
        per[sl] = 0.5 * (t3[:, 2] - t3[:, 0])
        j0 = np.searchsorted(ts, t3[:, 0])
        if np.any(j0 + S > len(ts)):
            raise ValueError("calibration window too short for a ring's period")
        tau0[sl] = ts[j0] - t3[:, 0]
        samples[sl] = ys[j0[:, None] + np.arange(S)[None, :], np.arange(m)[:, None]]
    return RingCalibration(period_s=per, tau0_s=tau0, samples=samples, rows=rows, dt_s=float(dt))


def place_on_own_cycle(cal: RingCalibration, theta, index=None) -> np.ndarray:
    """States (N, n) [V] of calibrated rings ``index`` (N,) (default: all) on their own limit cycles at phases
    ``theta`` (N,) [rad] (phase 0 at the rising node-0 crossing): the stored sample before the phase, advanced
    by one RK4 step of the ring's own (untrimmed) equations. A trimmed ring (all loads scaled by one factor)
    passes through the same states."""
    th = np.mod(np.asarray(theta, float), 2 * math.pi)
    idx = np.arange(len(th)) if index is None else np.asarray(index)
    per, tau0, rows = cal.period_s[idx], cal.tau0_s[idx], cal.rows[idx]
    q = th / (2 * math.pi) * per - tau0
    q = np.where(q < 0, q + per, q)
    j = np.minimum((q // cal.dt_s).astype(np.int64), cal.samples.shape[1] - 2)
    h = (q - j * cal.dt_s)[:, None]
    y = cal.samples[idx, j].astype(np.float64)
    k1 = network_rhs_np(y, rows)
    k2 = network_rhs_np(y + 0.5 * h * k1, rows)
    k3 = network_rhs_np(y + 0.5 * h * k2, rows)
    k4 = network_rhs_np(y + h * k3, rows)
    return y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def build_head(dev: CircuitDevice, theta0, coupling_rad_per_cycle, *, steps_per_period: int, stochastic: bool,
               freq_residual_rel=None, mismatch=None, noise: bool = False, calibration=None,
               calibration_index=None, flicker=None) -> CircuitHead:
    """Pack G networks of T rings, trimmed and placed on their own limit cycles.

    Parameters
    ----------
    dev : CircuitDevice
    theta0 : (G, T) token phases [rad].
    coupling_rad_per_cycle : (G, T, T)
        Signed macromodel couplings C_{t,u} [rad/cycle] (lower triangle used) including the coupler spread.
    steps_per_period : int; stochastic : bool
        The integrator the head will run with (its own limit cycle and period are calibrated with it).
    freq_residual_rel : (G, T) or None
        Post-trim relative frequency error each ring is trimmed to (the chip's recorded residual).
    mismatch : (dvt_n, dvt_p, c_rel) each (G, T, n), or None
    noise : bool
        Thermal node noise.
    calibration : RingCalibration, optional
        Reuse a calibration (same mismatch, step and solver); ``calibration_index`` (G·T,) maps every ring of
        the head to its calibration row (rings shared by several sequences are calibrated once).
    flicker : hw_models.FlickerNoise, optional
        1/f drain-current noise at every node (with ``noise`` only): its OU bank (rates, per-process variance
        S_w f_c ln r, S_w the node's white PSD) becomes K_f extra states per node (see the module notes).
    """
    ring = dev.ring
    theta0 = np.asarray(theta0, float)
    G, T = theta0.shape
    n = ring.n_stages
    C = np.asarray(coupling_rad_per_cycle, float)
    if C.shape != (G, T, T):
        raise ValueError(f"coupling_rad_per_cycle must have shape {(G, T, T)}, got {C.shape}")
    dt = dev.period_s / int(steps_per_period)
    _, per_ref = _numerical_cycle(dev, dt, stochastic)
    gm = np.tril(C, -1) * (1.0 / (per_ref * dev.a1_rad_s_per_s))  # [S], signed
    if mismatch is None:
        dvn = np.zeros((G, T, n))
        dvp = np.zeros((G, T, n))
        crel = np.zeros((G, T, n))
    else:
        dvn, dvp, crel = (np.asarray(a, float).reshape(G, T, n) for a in mismatch)
    c0 = ring.c_load_f * (1.0 + crel)
    resid = np.zeros((G, T)) if freq_residual_rel is None else np.asarray(freq_residual_rel, float).reshape(G, T)
    if mismatch is None:
        cycle, _ = _numerical_cycle(dev, dt, stochastic)
        y0 = place_on_limit_cycle(dev, theta0, cycle)
        per = np.full((G, T), per_ref)
    else:
        if calibration is None:
            calibration = calibrate_rings(dev, dvn.reshape(-1, n), dvp.reshape(-1, n), c0.reshape(-1, n), dt,
                                          stochastic)
            calibration_index = None
        y0 = place_on_own_cycle(calibration, theta0.reshape(-1), calibration_index).reshape(G, T, n)
        idx = np.arange(G * T) if calibration_index is None else np.asarray(calibration_index)
        per = calibration.period_s[idx].reshape(G, T)
    # load trim: all loads of a ring scaled by one factor (its time scales exactly) to f_ref (1 + residual)
    trim = per_ref / per / (1.0 + resid)
    c_load = c0 * trim[..., None]
    use_flicker = flicker is not None and bool(noise)
    kf = flicker.n_processes if use_flicker else 0
    P = _HDR + _PER_NODE * T * n + T * T + kf
    p = np.zeros((G, P))
    p[:, :_HDR] = (T, n, dev.tap_node, dev.weights[0], dev.weights[1], 0.5 * ring.vdd_v, ring.vdd_v,
                   ring.lambda_n_per_v, ring.lambda_p_per_v, 1.0, kf, _HDR + _PER_NODE * T * n + T * T,
                   _T_NEVER, 0.0, 0.0, 0.0, 0)
    node = np.stack([ring.vto_n_v + dvn, ring.vto_p_v + dvp,
                     np.full((G, T, n), ring.beta_n_a_per_v2), np.full((G, T, n), ring.beta_p_a_per_v2),
                     1.0 / c_load], axis=-1)
    p[:, _HDR:_HDR + _PER_NODE * T * n] = node.reshape(G, -1)
    p[:, _HDR + _PER_NODE * T * n:_HDR + _PER_NODE * T * n + T * T] = gm.reshape(G, -1)
    sig = np.zeros((G, T * n))
    if noise:
        sig = np.sqrt(dev.s_i_a2_per_hz / 2.0) / c_load.reshape(G, T * n)
    fl_std = fl_sig = np.zeros(0)
    if use_flicker:
        rates = flicker.rates()
        p[:, _HDR + _PER_NODE * T * n + T * T:] = rates
        # each OU current: variance v = S_w f_c ln r (hw_models.flicker), dx = −γx dt + sqrt(2vγ) dW
        v = flicker.variance(dev.s_i_a2_per_hz)
        fl_std = np.full(kf, math.sqrt(v))
        fl_sig = np.sqrt(2.0 * v * rates)
    return CircuitHead(params=p, y0=y0.reshape(G, T * n), sigma=sig, theta0=theta0, gm=gm, c_load=c_load,
                       dvt_n=dvn, dvt_p=dvp, trim=trim, steps_per_period=int(steps_per_period),
                       stochastic=bool(stochastic), device=dev, calibration=calibration,
                       flicker=flicker if use_flicker else None, flicker_std_a=fl_std, flicker_sigma=fl_sig,
                       calibration_index=None if calibration is None or calibration_index is None
                       else np.asarray(calibration_index))


def _integrate(params, y0, sigma, t1, dt, seed, stochastic, save_every=None, save_from=None, keep=None):
    """Engine call over chunks of groups: returns the final states (G, D), or (ts, ys (S, G, D')) when saving.

    ``stochastic``: stochastic Heun (also when ``sigma`` is zero, for the reference calibration), else RK4.
    ``seed``: an int, or one stream seed per group (G,) (noise independent of the batch composition).
    ``save_every``: save every k-th step; ``save_from``: save every step from this step index on (the readout
    window only); ``keep``: state columns kept of what is saved (D' of them; default all).
    """
    from oscsim.engine import RK4, CustomODE, SaveAt, SaveEvery, StochasticHeun, simulate

    G, D = y0.shape
    n_steps = max(int(round(t1 / dt)), 1)
    dt = t1 / n_steps
    noisy = bool(stochastic)
    saving = bool(save_every) or save_from is not None
    chunk = max(1, _MAX_GROUP_FLOATS // params.shape[1])
    if saving:
        n_saved = (n_steps // max(int(save_every or 1), 1) + 2) if save_from is None else n_steps - int(save_from) + 1
        chunk = min(chunk, max(1, _MAX_SAVED_FLOATS // (n_saved * D)))
    finals, series, ts = [], [], None
    per_group = np.ndim(seed) > 0
    for c, g0 in enumerate(range(0, G, chunk)):
        sl = slice(g0, g0 + chunk)
        model = CustomODE(network_rhs, params[sl], D, sigma=sigma[sl] if noisy else 0.0)
        solver = StochasticHeun() if noisy else RK4()
        if save_from is not None:
            save = SaveAt(dt * np.arange(int(save_from), n_steps + 1))
        else:
            save = SaveEvery(save_every if save_every else n_steps)
        s_c = np.asarray(seed, dtype=np.uint64)[sl] if per_group else int(seed) + 104729 * c
        sol = simulate(model, solver, 0.0, n_steps * dt, dt, y0[sl], save=save, seed=s_c if noisy else None)
        ys = np.asarray(sol.ys)
        if saving:
            series.append(ys if keep is None else ys[:, :, keep])
            ts = np.asarray(sol.ts)
        else:
            finals.append(ys[-1])
    if saving:
        return ts, np.concatenate(series, axis=1)
    return np.concatenate(finals, axis=0)


def _read_phases(omega, vm, ts, v0, t_skip, t_read=None, return_slope=False):
    """Phase ψ̂ [rad] of each ring at time ``t_read`` (default ``t_skip``) from node-0 waveforms v0 (S, N).

    The rising crossings t_k of ``vm`` [V] after ``t_skip`` [s] give ψ_k = −ω t_k against the reference ω
    [rad/s]; the free-running ring's ψ is linear in time (its residual frequency error), so a least-squares
    line through the window's crossings, evaluated at ``t_read`` (τ_s), removes the drift the window itself
    would add (≥ 2 crossings per ring needed). ``return_slope``: also the fitted dψ/dt [rad/s] (N,)."""
    t_read = t_skip if t_read is None else t_read
    si, ri, tc = _crossings(ts, v0, vm)
    keep = tc >= t_skip
    ri, tc = ri[keep], tc[keep]
    N = v0.shape[1]
    cnt = np.bincount(ri, minlength=N)
    if np.any(cnt < 2):
        raise ValueError(f"{int(np.sum(cnt < 2))} ring(s) made fewer than two rising crossings in the readout "
                         f"window: the ring stopped oscillating (coupling too strong or mismatch too large)")
    psi = -omega * tc
    z = np.bincount(ri, weights=np.cos(psi), minlength=N) + 1j * np.bincount(ri, weights=np.sin(psi), minlength=N)
    centre = np.angle(z)
    d = wrap(psi - centre[ri])  # unwrapped around each ring's mean
    u = tc - t_read
    su = np.bincount(ri, weights=u, minlength=N)
    suu = np.bincount(ri, weights=u * u, minlength=N)
    sd = np.bincount(ri, weights=d, minlength=N)
    sud = np.bincount(ri, weights=u * d, minlength=N)
    det = cnt * suu - su * su
    intercept = (sd * suu - su * sud) / det
    if return_slope:
        return wrap(centre + intercept), (cnt * sud - su * sd) / det
    return wrap(centre + intercept)


@lru_cache(maxsize=16)
def _reference_offset(dev: CircuitDevice, settle_cycles: float, steps_per_period: int, stochastic: bool):
    """Readout phase of nominal uncoupled rings placed at 16 phases, minus the placement: (mean, std) [rad].

    The mean is the reference's phase calibration (integrator and crossing-interpolation bias common to all
    rings); the std is what that calibration cannot remove (reported)."""
    th = 2 * math.pi * np.arange(16) / 16
    head = build_head(dev, th[None], np.zeros((1, 16, 16)), steps_per_period=steps_per_period,
                      stochastic=stochastic)
    head.params[:, 9] = 0.0
    psi = _run_readout(head, settle_cycles, 0, 0.0)
    d = wrap(psi[0] - th)
    return float(np.angle(np.mean(np.exp(1j * d)))), float(np.std(d))


@lru_cache(maxsize=16)
def _reference_offset_injected(dev: CircuitDevice, settle_cycles: float, steps_per_period: int, stochastic: bool,
                               cycles: float, strength: float):
    """The reference calibration of a chip that writes its phases by injection: nominal uncoupled rings at 16
    phases written by :func:`inject_rings` (from ψ₀ = 0) and read; (mean, std) [rad] of read − intended. The
    mean holds the circuit's common lock offset (and the readout's bias), which a chip calibrates on replica
    rings through the same write and read path; the std (the θ-dependent release error) stays in the chip."""
    th = 2 * math.pi * np.arange(16) / 16
    head = build_head(dev, th[None], np.zeros((1, 16, 16)), steps_per_period=steps_per_period,
                      stochastic=stochastic)
    head.params[:, 9] = 0.0
    y = inject_rings(head, cycles=cycles, strength_rad_per_cycle=strength, psi0=np.zeros((1, 16)))["y"]
    psi = _run_readout(head, settle_cycles, 0, 0.0, y_start=y)
    d = wrap(psi[0] - th)
    return float(np.angle(np.mean(np.exp(1j * d)))), float(np.std(d))


def _flicker_start(head: CircuitHead, seed) -> np.ndarray:
    """Stationary start of the OU currents (G, T·n·K_f) [A], keyed on each network's stream seed (or ``seed``)."""
    G, T = head.theta0.shape
    m = T * head.device.ring.n_stages * head.flicker.n_processes
    if np.ndim(seed):
        z = keyed_normals(stream_seeds(0, np.asarray(seed, dtype=np.uint64)[:, None], np.arange(m)[None, :]))
    else:
        z = np.random.default_rng([int(seed), 0xF1]).standard_normal((G, m))
    return z * np.tile(head.flicker_std_a, m // head.flicker.n_processes)[None, :]


def _start_state(head: CircuitHead, seed, y_start=None):
    """Start state (G, D) and noise amplitudes (G, D) of the head's engine runs (OU currents appended)."""
    G, T = head.theta0.shape
    n = head.device.ring.n_stages
    sig = head.sigma
    if head.flicker is not None:
        sig = np.concatenate([sig, np.tile(head.flicker_sigma, T * n)[None, :].repeat(G, 0)], axis=1)
    if y_start is not None:
        y0 = np.asarray(y_start, float)
        if y0.shape != sig.shape:
            raise ValueError(f"y_start must have shape {sig.shape}, got {y0.shape}")
        return y0, sig
    y0 = head.y0
    if head.flicker is not None:
        y0 = np.concatenate([y0, _flicker_start(head, seed)], axis=1)
    return y0, sig


def _run_readout(head: CircuitHead, settle_cycles: float, seed, offset: float, waves: dict | None = None,
                 y_start=None):
    """One engine run per chunk of networks: couplers on for τ_s, then off (switched inside
    :func:`network_rhs`) while every ring free-runs through the readout window, whose node-0 samples give the
    phases (:func:`_read_phases`)."""
    dev = head.device
    G, T = head.theta0.shape
    n = dev.ring.n_stages
    dt0 = dev.period_s / head.steps_per_period
    _, per_ref = _numerical_cycle(dev, dt0, head.stochastic)
    settle_s = float(settle_cycles) * per_ref
    n_set = max(int(round(settle_s / dt0)), 1)
    dt = settle_s / n_set  # the switch-off lies on the step grid
    n_read = int(math.ceil(READ_CYCLES * per_ref / dt))
    p = head.params.copy()
    y0, sig = _start_state(head, seed, y_start)
    plots = waves is not None and "v0" in waves
    keep = np.arange(0, T * n, n)
    per_r = per_ref  # the readout window's reference period: its integrator's own nominal period
    if READ_STEP_FACTOR == 1:
        p[:, 12] = settle_s
        p[:, 13] = 0.25 * dt  # the switching instant: grid point τ_s only (RK4's mid-points lie dt/2 away)
        ts, v0 = _integrate(p, y0, sig, (n_set + n_read) * dt, dt, seed, head.stochastic,
                            save_every=1 if plots else None, save_from=None if plots else n_set, keep=keep)
    else:  # the uncoupled readout window at READ_STEP_FACTOR times the settle step: a second run
        if plots:
            ts_s, v_s = _integrate(p, y0, sig, n_set * dt, dt, seed, head.stochastic, save_every=1,
                                   keep=np.arange(y0.shape[1]))
            y1 = v_s[-1]
            v_s = v_s[:, :, keep]
        else:
            y1 = _integrate(p, y0, sig, n_set * dt, dt, seed, head.stochastic)
        p[:, 9] = 0.0
        dtr = dt * READ_STEP_FACTOR
        _, per_r = _numerical_cycle(dev, dt0 * READ_STEP_FACTOR, head.stochastic)
        n_r = int(math.ceil(READ_CYCLES * per_r / dtr))
        rs = stream_seeds(0, np.asarray(seed, dtype=np.uint64), 2) if np.ndim(seed) else int(seed) + 7
        ts, v0 = _integrate(p, y1, sig, n_r * dtr, dtr, rs, head.stochastic, save_every=1, keep=keep)
        ts = ts + settle_s
        if plots:
            ts, v0 = np.concatenate([ts_s, ts[1:]]), np.concatenate([v_s, v0[1:]])
    if plots:  # keep node 0 of every ring through the settle and readout windows
        waves["t"], waves["v0"] = ts, v0
        waves["omega"] = 2 * math.pi / per_ref
        waves["offset"] = offset
    r = ts >= settle_s * (1 - 1e-12)
    # ψ_k = −ω_ref τ_s − ω_r (t_k − τ_s): the settle window in the chip's reference frame, the readout window in
    # that of its own integrator (the same ring integrated at a coarser step runs at a slightly different
    # frequency; its nominal period per_r is what the reference calibration sees)
    psi, slope = _read_phases(2 * math.pi / per_r, 0.5 * dev.ring.vdd_v, ts[r] - settle_s,
                              v0[r].reshape(int(r.sum()), G * T), _READ_SKIP_CYCLES * per_r, 0.0, return_slope=True)
    psi = psi - 2 * math.pi * float(settle_cycles)
    if waves is not None:
        waves["slope_rad_per_cycle"] = (slope * per_ref).reshape(G, T)
    return wrap(psi - offset).reshape(G, T)


def simulate_heads(head: CircuitHead, *, settle_cycles: float, seed=0, return_waveforms: bool = False,
                   y_start=None, reference=None) -> dict:
    """Integrate the networks for τ_s (couplers on), then read every ring's phase (couplers off).

    ``seed``: an int, or one stream seed per network (G,) (uint64, :func:`mapping.seeds.stream_seeds`).

    Returns a dict: ``psi`` (G, T) read phase in the reference frame [rad], ``dtheta`` (G, T) =
    wrap(ψ̂ − θ₀) [rad], ``reference_offset_rad`` and ``reference_spread_rad`` (the phase calibration of the
    reference and its residual spread over placement phases); with ``return_waveforms`` also ``t`` (S,) [s] and
    ``v0`` (S, G, T) node-0 voltages [V] over the settle and readout windows. ``y_start`` (G, D): the start state
    (e.g. what :func:`inject_rings` wrote) instead of ``head.y0`` (and a fresh draw of the OU currents).
    ``reference``: (offset, spread) [rad] of the reference calibration when the phases were written another way
    (:func:`_reference_offset_injected`); default: nominal rings placed on their cycle."""
    if reference is None:
        off, spread = _reference_offset(head.device, float(settle_cycles), head.steps_per_period, head.stochastic)
    else:
        off, spread = (float(x) for x in reference)
    waves = {"v0": None} if return_waveforms else {}
    psi = _run_readout(head, settle_cycles, seed, off, waves, y_start=y_start)
    out = {"psi": psi, "dtheta": wrap(psi - head.theta0), "reference_offset_rad": off,
           "reference_spread_rad": spread, "slope_rad_per_cycle": waves["slope_rad_per_cycle"]}
    if return_waveforms:
        out.update(t=waves["t"], v0=waves["v0"])
    return out


# --------------------------------------------------------------------------------------------- injection
def injection_drive(dev: CircuitDevice, strength_rad_per_cycle: float, steps_per_period: int, stochastic: bool):
    """Current amplitude I [A], PPV phase α [rad] and reference ω_ref [rad/s] that lock the nominal ring with
    Adler strength K = ``strength_rad_per_cycle`` through node 0 (:func:`hw_models.injection.ring_injection_current`,
    K = I |V₁| / C), in the frame of the chip's numerical reference (the readout's ω_ref)."""
    from hw_models.injection import ring_injection_current

    _, per_ref = _numerical_cycle(dev, dev.period_s / int(steps_per_period), bool(stochastic))
    cur = ring_injection_current(dev.ring, float(strength_rad_per_cycle) / per_ref)
    return cur["amplitude_a"], cur["ppv_phase_rad"], 2 * math.pi / per_ref


def inject_rings(head: CircuitHead, *, cycles: float, strength_rad_per_cycle: float, psi0, seed=0,
                 save_from_cycle: float | None = None) -> dict:
    """Write the head's token phases θ₀ by injection locking at circuit level (couplers off).

    Every ring starts on its own limit cycle at θ₀ + ψ₀ (the phase it was left in) and receives
    i_r(t) = I cos(ω_ref t + φ_r) into node 0 for ``cycles`` reference cycles; with φ_r = θ₀,r + α − π/2 −
    ω_ref t_inj the cycle-averaged phase equation is Adler's, dψ/dt = Δω − K sin ψ, ψ = θ − θ_ref, locking
    each ring at its token phase when the window ends (α the PPV phase, K = I|V₁|/C: the ring's own strength,
    which varies with its load mismatch and trim). Thermal node noise (and flicker) act as in the settle
    window; the noise is keyed on ``seed`` (per network) like the settle run's.

    Parameters
    ----------
    head : CircuitHead
    cycles : float
        Injection time [reference cycles].
    strength_rad_per_cycle : float
        K of the nominal ring [rad/cycle] (``injection.strength``).
    psi0 : (G, T) start errors [rad].
    seed : int or (G,) uint64 stream seeds.
    save_from_cycle : float, optional
        Also return node-0 waveforms from this time on (``t`` (S,) [s], ``v0`` (S, G, T) [V]).

    Returns
    -------
    dict with ``y`` (G, D) the state when the injection ends (the settle window's start), ``amplitude_a`` (I),
    ``strength_rad_s`` (nominal K), ``t_inj_s``; with ``save_from_cycle`` also ``t`` and ``v0``.
    """
    dev = head.device
    G, T = head.theta0.shape
    n = dev.ring.n_stages
    if not (isinstance(cycles, (int, float)) and math.isfinite(cycles) and cycles > 0):
        raise ValueError(f"cycles must be a number > 0, got {cycles!r}")
    psi0 = np.broadcast_to(np.asarray(psi0, float), (G, T))
    amp, alpha, w_ref = injection_drive(dev, strength_rad_per_cycle, head.steps_per_period, head.stochastic)
    dt0 = dev.period_s / head.steps_per_period
    per_ref = 2 * math.pi / w_ref
    n_inj = max(int(round(float(cycles) * per_ref / dt0)), 1)
    t_inj = float(cycles) * per_ref
    dt = t_inj / n_inj
    if head.calibration is None:
        cycle, _ = _numerical_cycle(dev, dt0, head.stochastic)
        y_place = place_on_limit_cycle(dev, head.theta0 + psi0, cycle).reshape(G, T * n)
    else:  # own-cycle placement: the head's calibration rows in the order of its rings
        idx = head.calibration_index
        y_place = place_on_own_cycle(head.calibration, (head.theta0 + psi0).reshape(-1), idx).reshape(G, T * n)
    y0, sig = _start_state(head, seed)
    y0 = y0.copy()
    y0[:, :T * n] = y_place
    p = head.params.copy()
    p[:, 9] = 0.0  # couplers off while the phases are written
    p[:, 14] = amp
    p[:, 15] = w_ref
    p[:, 16] = p.shape[1]
    phi = head.theta0 + alpha - 0.5 * math.pi - w_ref * t_inj
    p = np.concatenate([p, phi], axis=1)
    s_inj = stream_seeds(0, np.asarray(seed, dtype=np.uint64), 11) if np.ndim(seed) else int(seed) + 15485863
    out = {"amplitude_a": amp, "strength_rad_s": float(strength_rad_per_cycle) / per_ref, "t_inj_s": t_inj}
    if save_from_cycle is None:
        out["y"] = _integrate(p, y0, sig, t_inj, dt, s_inj, head.stochastic)
    else:
        k0 = min(max(int(round(float(save_from_cycle) * per_ref / dt)), 0), n_inj)
        ts, ys = _integrate(p, y0, sig, t_inj, dt, s_inj, head.stochastic, save_from=k0)
        out["y"] = ys[-1]
        out["t"], out["v0"] = ts, ys[:, :, 0:T * n:n]
    return out


def injection_residuals(head: CircuitHead, t, v0, omega_ref: float, t_inj: float):
    """ψ = θ − θ_ref [rad] at every rising node-0 crossing during the injection: (list of G·T arrays of times
    [s] relative to the window's end, list of ψ) — the reference of ring r has phase ω_ref (t − t_inj) + θ₀,r."""
    G, T = head.theta0.shape
    vm = 0.5 * head.device.ring.vdd_v
    _, ri, tc = _crossings(np.asarray(t), np.asarray(v0).reshape(len(t), G * T), vm)
    th0 = head.theta0.reshape(-1)
    times, psis = [], []
    for r in range(G * T):
        tk = np.sort(tc[ri == r])
        times.append(tk - t_inj)
        psis.append(wrap(-omega_ref * (tk - t_inj) - th0[r]))
    return times, psis


# ------------------------------------------------------------------------------------------- phase noise
def ring_phase_noise(dev: CircuitDevice, flicker=None, *, n_cycles: int = 16384, n_rings: int = 8,
                     steps_per_period: int = 50, piece_cycles: int = 256, nperseg: int = 8192,
                     seed: int = 0) -> dict:
    """Phase-noise spectrum of free-running nominal rings simulated at circuit level, and the macromodel's.

    ``n_rings`` independent rings (white thermal node noise and, with ``flicker``, the OU bank of 1/f current
    noise at every node, :func:`build_head`) run for ``n_cycles`` cycles with stochastic Heun at
    T/``steps_per_period`` (in pieces of ``piece_cycles``, each piece its own keyed noise). The phase is sampled
    once per cycle at the rising V_DD/2 crossings of node 0, φ_k = 2π (t_k/T̄ − k); Welch's method (segments
    of ``nperseg`` cycles, linear detrend, averaged over the rings) gives S_φ(f) and L(f) = S_φ/2.

    The macromodel's prediction (Demir's PPV phase diffusion and Hajimiri–Lee's Γ_dc conversion of slow
    current noise; :mod:`hw_models.flicker`) with the same bank:

        L(f) = D/(4π² f²) + S_δω(f)/(8π² f²),  D = Σ_k ⟨v_k²⟩ S_w/(2C²),  S_δω(f) = Σ_k (v̄_k/C)² S_bank(f),

    S_bank the bank's own (band-limited) PSD, which is S_w f_c/f inside its band.

    Returns
    -------
    dict with ``f_hz`` (F,), ``L_dbc_hz`` (F,) simulated, ``L_macromodel_dbc_hz`` (F,), ``L_white_dbc_hz``
    (F,) (the white part of the prediction), ``diffusion_rad2_per_s`` (D), ``n_segments`` (segments averaged),
    ``period_s`` (mean simulated period), ``wall_s``.
    """
    import time

    from scipy.signal import welch

    t_start = time.perf_counter()
    ring = dev.ring
    n = ring.n_stages
    G = int(n_rings)
    head = build_head(dev, np.zeros((G, 1)), np.zeros((G, 1, 1)), steps_per_period=steps_per_period,
                      stochastic=True, noise=True, flicker=flicker)
    dt = dev.period_s / int(steps_per_period)
    y = head.y0
    sig = head.sigma
    if head.flicker is not None:
        y = np.concatenate([y, _flicker_start(head, stream_seeds(seed, 0, np.arange(G)))], axis=1)
        sig = np.concatenate([sig, np.tile(head.flicker_sigma, n)[None, :].repeat(G, 0)], axis=1)
    n_pieces = int(math.ceil(n_cycles / piece_cycles))
    t1 = piece_cycles * dev.period_s
    wav = []
    for k in range(n_pieces):
        ts, v = _integrate(head.params, y, sig, t1, dt, stream_seeds(seed, 1 + k, np.arange(G)), True,
                           save_every=1, keep=np.arange(y.shape[1]))
        y = v[-1]
        wav.append(v[(1 if k else 0):, :, 0])
    v0 = np.concatenate(wav)
    tt = np.arange(v0.shape[0]) * (t1 / (ts.size - 1))
    _, ri, tc = _crossings(tt, v0, 0.5 * ring.vdd_v)
    fs, Ss, per = [], [], []
    n_seg = 0
    for g in range(G):
        tk = np.sort(tc[ri == g])[4:]  # the first cycles: the start state relaxes onto the noisy cycle
        T_bar = (tk[-1] - tk[0]) / (len(tk) - 1)
        phi = 2 * math.pi * (tk / T_bar - np.arange(len(tk)))
        f, S = welch(phi, fs=1.0 / T_bar, nperseg=int(nperseg), detrend="linear")
        fs.append(f)
        Ss.append(S)
        per.append(T_bar)
        n_seg += max(1, 2 * (len(phi) - int(nperseg)) // int(nperseg) + 1)
    m = min(len(S) for S in Ss)
    f = np.mean([x[:m] for x in fs], axis=0)[1:]
    S = np.mean([x[:m] for x in Ss], axis=0)[1:]
    from hw_models.ring_macro import limit_cycle

    lc = limit_cycle(ring)
    sw = dev.s_i_a2_per_hz
    D = float(np.sum((lc.ppv**2).mean(axis=0)) * sw / (2 * ring.c_load_f**2))
    white = D / (4 * math.pi**2 * f**2)
    fl_part = np.zeros_like(f)
    if head.flicker is not None:
        vbar = lc.ppv.mean(axis=0)
        fl_part = float(np.sum(vbar**2)) / ring.c_load_f**2 * head.flicker.psd(f, sw) / (8 * math.pi**2 * f**2)
    return {"f_hz": f, "L_dbc_hz": 10 * np.log10(S / 2), "L_macromodel_dbc_hz": 10 * np.log10(white + fl_part),
            "L_white_dbc_hz": 10 * np.log10(white), "diffusion_rad2_per_s": D, "n_segments": n_seg,
            "period_s": float(np.mean(per)), "wall_s": time.perf_counter() - t_start}


# ------------------------------------------------------------------------------------------ the chip step
def _check_rule(chip, dev: CircuitDevice) -> None:
    """The compiled coupling rule (mapping.compiler, from hw_models' coupler objects) and the circuit's own
    two-tap transconductor must be the same circuit; refuse a chip whose rule this circuit does not build."""
    rule = chip.coupling_rule or {}
    cp = rule.get("coupler") or {}
    if cp and cp.get("kind") not in (None, "transconductance"):
        raise ValueError(f"the circuit rung builds unilateral transconductance couplers; this chip's coupling rule "
                         f"uses {cp.get('kind')!r}")
    if float((cp.get("params") or {}).get("g_out_s", 0.0) or 0.0) != 0.0:
        raise ValueError("the circuit rung models an ideal transconductor output (g_out_s = 0); this chip's "
                         f"coupler has g_out_s = {cp['params']['g_out_s']} S")
    if rule.get("taps") == 2:
        if int(rule["tap_node"]) != dev.tap_node or not np.allclose(rule["weights"], dev.weights, rtol=1e-6):
            raise ValueError(f"the chip's two-tap rule (node {rule['tap_node']}, weights {rule['weights']}) differs "
                             f"from the circuit's (node {dev.tap_node}, weights {list(dev.weights)})")
    elif rule.get("phase_correction") == "none":
        raise ValueError("the circuit rung is built with the two-tap correction; compile with "
                         "coupling.phase_correction = 'auto' or 'two-tap'")


def layer_head(chip, layer: int, theta, A, v, *, reference_bank: bool = True, noise: bool | None = None,
               steps_per_period: int = DEFAULT_STEPS_PER_PERIOD, coordinates=None, heads=None,
               theta_offset=None) -> tuple:
    """The circuit networks of one Kuramoto layer (or of some heads / coordinates of it) for inputs θ, A, v.

    One network per (bank, sequence, head, coordinate), in that order; the chip's coupler quantisation,
    receive-gain quantisation, coupler spread, residual frequency errors and the circuit mismatch of layer
    ``layer`` (seed ``[mismatch_seed, layer, 3]``); rings shared by the B sequences are calibrated once per chip.

    Returns (head, meta); meta holds what the periphery needs (``gains`` per bank (B, hs, cs, T), ``Aq``
    (B, h, T, T), ``heads``, ``coords``, ``shape`` (nb, B, hs, cs, T)).
    """
    cfg = chip.config
    lm = chip.layers[layer]
    theta = np.asarray(theta, dtype=np.float64)
    A = np.asarray(A, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    B, T, k = theta.shape
    h, kh = lm.n_heads, lm.head_dim
    if T > lm.max_tokens:
        raise ValueError(f"sequence of {T} tokens is longer than the chip's arrays ({lm.max_tokens})")
    if A.shape != (B, h, T, T) or v.shape != theta.shape or k != h * kh:
        raise ValueError(f"shapes: theta {theta.shape}, A {A.shape}, v {v.shape} do not fit the layer "
                         f"({h} heads x {kh} coordinates)")
    if reference_bank and lm.banks < 2:
        raise ValueError("reference_bank: this chip has no unit-gain bank (norm_reference = 'closed-form')")
    dev = circuit_device(chip.config.f0_hz, float(cfg.temperature_k))
    _check_rule(chip, dev)
    noise = cfg.noise if noise is None else bool(noise)
    nb = 2 if reference_bank else 1
    heads = list(range(h)) if heads is None else [int(x) for x in heads]
    coords = list(range(kh)) if coordinates is None else [int(x) for x in coordinates]
    for name, vals, hi in (("heads", heads, h), ("coordinates", coords, kh)):
        if not vals or min(vals) < 0 or max(vals) >= hi:
            raise ValueError(f"{name} must be non-empty indices in [0, {hi - 1}], got {vals}")
    th = theta.reshape(B, T, h, kh).transpose(0, 2, 3, 1)  # (B, h, kh, T)
    g = lm.gain_quantiser(v.reshape(B, T, h, kh).transpose(0, 2, 3, 1))
    if cfg.coupling.row_scaled:
        m = A.max(axis=-1, keepdims=True)
        m = np.where(m > 0, m, 1.0)
        Aq = m * lm.coupling_quantiser(A / m)
    else:
        Aq = lm.coupling_quantiser(A)
    Aq = Aq * (1.0 - np.eye(T))
    cg = lm.coupler_gain() if lm.coupler_spread_rel > 0 else None
    resid = lm.freq_residual_rel if cfg.mismatch else None
    hs, cs = len(heads), len(coords)
    sel = np.ix_(range(B), heads, coords)
    blocks, theta0s, gains = [], [], []
    for bank in range(nb):
        gb = g if bank == 0 else np.ones_like(g)
        Cb = cfg.kappa * Aq[:, :, None] * gb[..., None]  # (B, h, kh, T, T)
        if cg is not None:
            Cb = Cb * cg[bank][None, :, :, :T, :T]
        blocks.append(Cb[sel].reshape(-1, T, T))
        theta0s.append(th[sel].reshape(-1, T))
        gains.append(gb[sel])
    Cs = np.concatenate(blocks)
    th0 = np.concatenate(theta0s)
    if theta_offset is not None:  # placement phases differ from the token phases (injection error)
        th0 = th0 + np.asarray(theta_offset, float).reshape(th0.shape)
    stochastic = bool(noise)
    res_g = mm_g = cal = cal_idx = None
    if cfg.mismatch:
        # the physical rings (bank, head, coordinate, token) are shared by the B sequences
        phys = lambda a: a[:nb][:, heads][:, :, coords][:, :, :, :T]  # noqa: E731
        res_g = np.broadcast_to(phys(resid)[:, None], (nb, B, hs, cs, T)).reshape(-1, T)
        mm = draw_circuit_mismatch(dev, tuple(lm.oscillator_shape), [cfg.mismatch_seed, layer, 3])
        mm_g = tuple(np.broadcast_to(phys(a)[:, None], (nb, B, hs, cs, T, a.shape[-1])).reshape(-1, T, a.shape[-1])
                     for a in mm)
        key = (layer, nb, tuple(heads), tuple(coords), T, int(steps_per_period), stochastic)
        store = chip.__dict__.setdefault("_circuit_calibration", {})
        if key not in store:
            n = dev.ring.n_stages
            c0 = dev.ring.c_load_f * (1.0 + phys(mm[2]))
            store[key] = calibrate_rings(dev, phys(mm[0]).reshape(-1, n), phys(mm[1]).reshape(-1, n),
                                         c0.reshape(-1, n), dev.period_s / int(steps_per_period), stochastic)
        cal = store[key]
        cal_idx = np.broadcast_to(np.arange(nb * hs * cs * T).reshape(nb, 1, hs, cs, T), (nb, B, hs, cs, T)).reshape(-1)
    flicker = circuit_flicker() if cfg.flicker and noise else None
    head = build_head(dev, th0, Cs, steps_per_period=steps_per_period, stochastic=stochastic,
                      freq_residual_rel=res_g, mismatch=mm_g, noise=noise, calibration=cal,
                      calibration_index=cal_idx, flicker=flicker)
    meta = {"gains": gains, "Aq": Aq, "heads": heads, "coords": coords, "shape": (nb, B, hs, cs, T), "k": k,
            "n_heads": h, "head_dim": kh}
    return head, meta


def periphery(chip, head: CircuitHead, meta: dict, psi) -> list:
    """The periphery's increment estimate per bank, (B, T, k) each (NaN where not simulated), from read phases
    ψ̂ (G, T): x̂ = wrap(ψ̂ − θ₀)/(κτ_s) − (H(0)/a₁) g_t Σ_u Q(A_{t,u}) (known offset of the programmed couplers)."""
    dev = head.device
    nb, B, hs, cs, T = meta["shape"]
    h, kh, k = meta["n_heads"], meta["head_dim"], meta["k"]
    dth = wrap(np.asarray(psi) - head.theta0).reshape(nb, B, hs, cs, T)
    kt = chip.config.kappa_tau
    Aq_sel = meta["Aq"][:, meta["heads"]]  # (B, hs, T, T)
    est = []
    for bank in range(nb):
        x = dth[bank] / kt - dev.offset_norm * meta["gains"][bank] * Aq_sel.sum(-1)[:, :, None, :]
        full = np.full((B, h, kh, T), np.nan)
        full[np.ix_(range(B), meta["heads"], meta["coords"])] = x
        est.append(full.transpose(0, 3, 1, 2).reshape(B, T, k))
    return est


def injection_start_errors(chip, layer: int, seed: int, sequence_ids, meta: dict) -> np.ndarray:
    """ψ₀ (G, T) [rad] of every ring of a circuit head before injection: the same uniform draw per
    (sequence, bank) as the macromodel chip's (:func:`mapping.injection.layer_initial_errors`, stream
    ``[key, 0x1A7]``), so both rungs start the write from the same phases."""
    from .injection import INJECTION_STREAM

    nb, B, hs, cs, T = meta["shape"]
    lm = chip.layers[layer]
    h, kh = lm.n_heads, lm.head_dim
    out = np.empty((nb, B, hs, cs, T))
    hi, ci = np.asarray(meta["heads"]), np.asarray(meta["coords"])
    for bank in range(nb):
        for b, sid in enumerate(np.asarray(sequence_ids)):
            key = int(stream_seeds(int(seed), INJECTION_STREAM, int(sid), bank)) % 2**63
            full = np.random.default_rng([key, 0x1A7]).uniform(-np.pi, np.pi, (h * kh, T)).reshape(h, kh, T)
            out[bank, b] = full[np.ix_(hi, ci, range(T))]
    return out.reshape(-1, T)


def circuit_chip_step(chip, layer: int, theta, A, v, *, readout: PhaseReadout | None = None, seed: int = 0,
                      reference_bank: bool = True, noise: bool | None = None,
                      steps_per_period: int = DEFAULT_STEPS_PER_PERIOD, coordinates=None,
                      heads=None, initial_phase_error=None, sequence_ids=None,
                      injection: bool | None = None) -> KuramotoChipOutput:
    """One Kuramoto layer's coupling step on a ``ring-circuit`` chip (same inputs and outputs as
    :func:`mapping.kuramoto_chip.kuramoto_chip_step`).

    Parameters
    ----------
    chip : Chip
    layer : int
    theta : (B, T, k) input phases [rad]; A : (B, h, T, T) causal softmax weights; v : (B, T, k) value gate.
    readout : PhaseReadout or None
        Detector noise and ADC applied to the circuit-read phase (None: ideal detector).
    seed : int
        Noise seed.
    reference_bank : bool
        Also run the unit-gain bank (â).
    noise : bool, optional
        Thermal node noise (default: the chip config's ``noise``).
    steps_per_period : int
    coordinates, heads : sequences of int, optional
        Run only these coordinates / heads (others are returned as NaN); for comparisons.
    initial_phase_error : (banks, B, h, k_h, T), optional
        Phase error left by an injection modelled elsewhere (e.g. the closed form of :mod:`mapping.injection`):
        rings start at θ + error. Not combined with ``injection``.
    injection : bool, optional
        Write the token phases by a circuit-level injection transient (:func:`inject_rings`: ``[injection]``
        cycles and strength of the chip, start errors ψ₀ the same uniform draw per (sequence, bank) as the
        macromodel chip's, thermal noise keyed per network). Default: the chip's ``injection.mode == 'injected'``.
    sequence_ids : (B,) int, optional
        Index of each sequence in the whole run: the thermal noise of network (sequence, bank, head,
        coordinate) and the detector noise of (sequence, bank) are keyed on it (as the macromodel's), so a
        sequence gets the same numbers whatever batch it is simulated in.

    Returns
    -------
    KuramotoChipOutput
        ``va`` (B, T, k), ``a`` (B, T, k) or None; ``traj`` None.
    """
    head, meta = layer_head(chip, layer, theta, A, v, reference_bank=reference_bank, noise=noise,
                            steps_per_period=steps_per_period, coordinates=coordinates, heads=heads)
    if initial_phase_error is not None:
        # injection leaves each ring at θ + error; the periphery still subtracts the intended θ
        err = np.asarray(initial_phase_error, float)[:meta["shape"][0]][:, :, meta["heads"]][:, :, :, meta["coords"]]
        intended = head.theta0
        head, meta = layer_head(chip, layer, theta, A, v, reference_bank=reference_bank, noise=noise,
                                steps_per_period=steps_per_period, coordinates=coordinates, heads=heads,
                                theta_offset=err.reshape(intended.shape))
        head.theta0 = intended
    nb, B, hs, cs, T = meta["shape"]
    seq = np.arange(B) if sequence_ids is None else np.asarray(sequence_ids)
    if seq.shape != (B,) or not np.issubdtype(seq.dtype, np.integer) or (B and seq.min() < 0):
        raise ValueError(f"sequence_ids must be {B} non-negative integers, got {sequence_ids!r}")
    # one noise stream per network keyed on (sequence, bank, head, coordinate), as the macromodel's
    gseed = stream_seeds(seed, PURPOSE["kuramoto"], seq[None, :, None, None], np.arange(nb)[:, None, None, None],
                         np.asarray(meta["heads"])[None, None, :, None],
                         np.asarray(meta["coords"])[None, None, None, :]).reshape(-1)
    inj = chip.config.injection
    if injection is None:
        injection = inj.mode == "injected" and initial_phase_error is None
    y_start = ref = None
    if injection:
        if initial_phase_error is not None:
            raise ValueError("circuit chip step: initial_phase_error and a circuit injection transient are two models "
                             "of the same write; pass one")
        psi0 = injection_start_errors(chip, layer, seed, seq, meta)
        y_start = inject_rings(head, cycles=float(inj.cycles), strength_rad_per_cycle=inj.strength, psi0=psi0,
                               seed=gseed)["y"]
        ref = _reference_offset_injected(head.device, float(chip.config.settle_cycles), head.steps_per_period,
                                         head.stochastic, float(inj.cycles), float(inj.strength))
    out = simulate_heads(head, settle_cycles=chip.config.settle_cycles, seed=gseed, y_start=y_start, reference=ref)
    psi = out["psi"]
    if readout is not None:
        # the detector averages the ring's own free-running phase over its window: the line measured after τ_s
        # (start phase and residual frequency), with the chip's phase diffusion added between samples
        sig = chip.timebase["sigma_rad_per_sqrt_cycle"] if head.stochastic else 0.0
        times = readout.sample_times()
        pb = psi.reshape(nb, B, -1)
        ob = out["slope_rad_per_cycle"].reshape(nb, B, -1)
        meas = np.empty_like(pb)
        for bank in range(nb):
            for b in range(B):
                rng = sequence_rng(seed, PURPOSE["readout"], int(seq[b]), bank)
                smp = free_running_samples(pb[bank, b], ob[bank, b], sig, times, rng)
                meas[bank, b] = readout.measure_samples(smp, rng if readout.noise_rad > 0 else None)
        psi = meas.reshape(psi.shape)
    est = periphery(chip, head, meta, psi)
    fl = head.flicker
    fl_txt = "" if fl is None else (f", flicker {fl.corner_hz:.3g} Hz corner (assumed), OU band "
                                    f"{fl.f_min_hz:.3g}-{fl.f_max_hz:.3g} Hz x {fl.n_processes} per node")
    return KuramotoChipOutput(va=est[0], a=est[1] if reference_bank else None, ts=None, traj=None,
                              backend=f"circuit ({head.device.ring.n_stages}-stage rings, oscsim.engine CustomODE, "
                                      f"T/{steps_per_period}{fl_txt})")


_PHASE_MODEL_ONLY = frozenset({"n_steps", "harmonics", "freq_residual", "coupler_gain", "sigma", "backend"})
"""Arguments of the phase-model step the circuit replaces by its own (coupling function, residuals and spread
from the chip, thermal node noise, its own step)."""


def circuit_step_for(chip, layer: int):
    """A drop-in for :func:`mapping.kuramoto_chip.kuramoto_chip_step` that runs layer ``layer`` of a
    ``ring-circuit`` chip at circuit level (the hook of :mod:`mapping.inference`).

    The phase-model arguments (``harmonics``, ``sigma``, ``freq_residual``, ``coupler_gain``, ``n_steps``,
    ``backend``) are not used: the circuit takes its coupling function, thermal noise, mismatch (the same
    residual and coupler draw) and step from the chip itself. The arguments both models share must agree with
    the chip, else ValueError.
    """
    cfg = chip.config
    lm = chip.layers[layer]

    def step(theta, A, v, *, n_heads, kappa, settle_cycles, coupling_q, gain_q, readout=None, seed=0,
             reference_bank=True, row_scaled=False, save_every=None, amplitude=None, initial_phase_error=None,
             sequence_ids=None, **_phase_model_only):
        for name, got, want in (("n_heads", n_heads, lm.n_heads), ("kappa", kappa, cfg.kappa),
                                ("settle_cycles", settle_cycles, cfg.settle_cycles),
                                ("row_scaled", row_scaled, cfg.coupling.row_scaled),
                                ("coupling_q", coupling_q, lm.coupling_quantiser), ("gain_q", gain_q, lm.gain_quantiser)):
            if got != want:
                raise ValueError(f"circuit chip step: {name} = {got!r} differs from the chip's {want!r}")
        if save_every is not None:
            raise ValueError("circuit chip step: trajectories (save_every) are not kept for whole layers; use "
                             "mapping.compare (oscsim compare --levels circuit) for one head")
        unknown = sorted(set(_phase_model_only) - _PHASE_MODEL_ONLY)
        if unknown:
            raise ValueError(f"circuit chip step: argument(s) {unknown} are not modelled at circuit level")
        if amplitude is not None:
            raise ValueError("circuit chip step: a complex-amplitude (spin-torque) model cannot run on ring circuits")
        if cfg.injection.mode == "injected":
            # the circuit simulates the write itself (inject_rings); the closed-form residual the phase-model
            # chip receives (mapping.injection.layer_initial_errors) is the other rung's model of it
            initial_phase_error = None
        return circuit_chip_step(chip, layer, theta, A, v, readout=readout, seed=seed, reference_bank=reference_bank,
                                 initial_phase_error=initial_phase_error, sequence_ids=sequence_ids)

    return step
