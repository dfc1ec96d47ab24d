"""Kuramoto attention on an oscillator chip: the coupling step simulated per (sequence, head, coordinate).

Notes
-----
Per (sequence b, head h, coordinate j) the chip holds T oscillators, started at the token phases θ_{·,j}
(phase injection) and coupled by C_{t,u} = κ Q_c(A_{t,u}) (1 + δ_{t,u}) for u < t (no self-coupler) with receive gain Q_g(v_{t,j}) (a
negative gain is an inverting coupler). In the frame rotating at the nominal 2π f₀, with residual frequency
errors ε_t (mismatch left after trimming), time in cycles,

    dθ_t = [2π ε_t + Q_g(v_t) Σ_{u≤t} C_{t,u} H(θ_u − θ_t)] dt + σ dW_t,     0 ≤ t ≤ τ_s,

H(x) = Σ_m a_m sin(m x) + b_m cos(m x) (a_1 = 1). The readout measures θ̂(τ_s); the periphery forms

    x̂_t = [wrap(θ̂_t(τ_s) − θ_t(0)) − τ_s Q_g(v_t) κ Σ_u Q_c(A_{t,u}) H(0)] / (κ τ_s)
        = v_t a_t + O(κ τ_s) + noise / (κ τ_s),

subtracting the known offset of a coupling function with cos terms. A second bank with unit gain measures
â_t (needed by the norm-matching bound B, whose scale is ‖a‖) unless ``reference_bank=False`` (then the bound
uses the closed-form a). The bound B is applied digitally.

Deterministic error: θ(τ) − θ(0) = τ f(θ₀) + τ²/2 (∂f f)(θ₀) + …, so the relative error of x̂ is linear in
κ τ_s; noise adds σ sqrt(τ_s) / (κ τ_s) (phase diffusion) and the readout error / (κ τ_s).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._backend import integrate_phase
from .quantise import Quantiser
from .readout import PhaseReadout, free_running_samples, wrap
from .seeds import PURPOSE, sequence_rng, stream_seeds

__all__ = ["KuramotoChipOutput", "kuramoto_chip_step", "closed_form_increment"]


@dataclass
class KuramotoChipOutput:
    """Chip estimates for one layer.

    Attributes
    ----------
    va : (B, T, k) chip estimate of v ⊙ a.
    a : (B, T, k) chip estimate of a from the unit-gain bank, or None.
    ts : (S,) trajectory times [cycles] or None.
    traj : (S, B, h, k_h, T) gain-bank trajectories (unwrapped phases) or None.
    backend : str
    """

    va: np.ndarray
    a: np.ndarray | None
    ts: np.ndarray | None = None
    traj: np.ndarray | None = None
    backend: str = ""


def closed_form_increment(theta, A, n_heads):
    """a_{t,j} = Σ_u A_{t,u} sin(θ_{u,j} − θ_{t,j}) for θ (B, T, k), A (B, h, T, T); returns (B, T, k)."""
    theta = np.asarray(theta, dtype=np.float64)
    B, T, k = theta.shape
    kh = k // n_heads
    th = theta.reshape(B, T, n_heads, kh).transpose(0, 2, 1, 3)  # (B, h, T, kh)
    c, s = np.cos(th), np.sin(th)
    gr, gi = A @ c, A @ s
    a = -s * gr + c * gi
    return a.transpose(0, 2, 1, 3).reshape(B, T, k)


def kuramoto_chip_step(theta, A, v, *, n_heads: int, kappa: float, settle_cycles: float, n_steps: int,
                       coupling_q: Quantiser, gain_q: Quantiser, harmonics=((1.0, 0.0),),
                       freq_residual=None, coupler_gain=None, sigma: float = 0.0,
                       readout: PhaseReadout | None = None, seed: int = 0, reference_bank: bool = True,
                       save_every: int | None = None, backend: str = "auto",
                       row_scaled: bool = False, amplitude=None,
                       initial_phase_error=None, sequence_ids=None) -> KuramotoChipOutput:
    """Simulate one Kuramoto attention layer's coupling step on the chip (one batched engine call).

    Parameters
    ----------
    theta : (B, T, k) input phases [rad].
    A : (B, h, T, T) causal softmax weights (lower triangular, rows sum to one).
    v : (B, T, k) signed value gate.
    n_heads : int
    kappa : float
        κ [rad per cycle].
    settle_cycles : float
        τ_s [cycles].
    n_steps : int
        Integration steps over τ_s.
    coupling_q, gain_q : Quantiser
        Coupler (A, unsigned) and receive-gain (v, signed) quantisers.
    harmonics : (M, 2)
        Coupling function harmonics (a_1 = 1).
    freq_residual : (banks, h, k_h, T_max) or None
        Residual angular frequency of each oscillator after trimming [rad/cycle]; bank 0 is the gain bank,
        bank 1 the unit-gain reference bank.
    coupler_gain : (banks, h, k_h, T_max, T_max) or None
        Multiplicative coupler strengths 1 + δ (mismatch).
    sigma : float or (banks, h, k_h, T_max) array
        Phase-noise intensity [rad / sqrt(cycle)], per oscillator when an array (the device's instance draw).
    readout : PhaseReadout or None
        None: ideal readout.
    seed : int
        Noise seed of this run and layer (:func:`mapping.seeds.layer_seed`).
    reference_bank : bool
        Also simulate a unit-gain bank giving â.
    save_every : int, optional
        Keep gain-bank trajectories every k steps (for plots).
    row_scaled : bool
        Quantise each row of A relative to its maximum m_t (m_t applied as an analog receive gain).
    amplitude : object, optional
        A complex-amplitude integrator (:class:`mapping.stno_chip.STNOAmplitudeModel`) used instead of the
        phase macromodel: ``amplitude.integrate(omega, coupling, y0, t1=, seed=, sample_times=)`` returns the
        final phases and the readout samples.
    initial_phase_error : (banks, B, h, k_h, T) or None
        Phase left by the injection (:mod:`mapping.injection`) [rad]: the network starts at θ + error while the
        periphery subtracts the intended θ.
    sequence_ids : (B,) int, optional
        Index of each sequence in the whole run (default 0..B−1). The noise of network (sequence, bank, head,
        coordinate) and the readout noise of (sequence, bank) are keyed on it, so a sequence gets the same
        numbers whatever batch it is simulated in.

    Notes
    -----
    The couplers open at τ_s; the readout (``readout``) then averages samples of the free-running trajectory
    over its window (the exact solution of the uncoupled phase SDE, :func:`mapping.readout.free_running_samples`;
    the amplitude model integrates that window too).

    Returns
    -------
    KuramotoChipOutput
    """
    theta = np.asarray(theta, dtype=np.float64)
    A = np.asarray(A, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    B, T, k = theta.shape
    if k % n_heads:
        raise ValueError(f"k ({k}) must be divisible by n_heads ({n_heads})")
    kh = k // n_heads
    if A.shape != (B, n_heads, T, T):
        raise ValueError(f"A must have shape {(B, n_heads, T, T)}, got {A.shape}")
    if v.shape != theta.shape:
        raise ValueError(f"v must have the shape of theta {theta.shape}, got {v.shape}")
    nb = 2 if reference_bank else 1
    seq = np.arange(B) if sequence_ids is None else np.asarray(sequence_ids)
    if seq.shape != (B,) or not np.issubdtype(seq.dtype, np.integer) or (B and seq.min() < 0):
        raise ValueError(f"sequence_ids must be {B} non-negative integers, got {sequence_ids!r}")
    th = theta.reshape(B, T, n_heads, kh).transpose(0, 2, 3, 1)  # (B, h, kh, T)
    g = gain_q(v.reshape(B, T, n_heads, kh).transpose(0, 2, 3, 1))  # (B, h, kh, T)
    if row_scaled:
        m = A.max(axis=-1, keepdims=True)
        m = np.where(m > 0, m, 1.0)
        Aq = m * coupling_q(A / m)  # (B, h, T, T)
    else:
        Aq = coupling_q(A)
    # no self-couplers: the diagonal contributes H(0) only (sin 0 = 0), a known offset with no coupler
    Aq = Aq * (1.0 - np.eye(T))
    C = kappa * np.broadcast_to(Aq[:, :, None, :, :], (B, n_heads, kh, T, T))  # (B, h, kh, T, T)
    banks_gain = [g] + ([np.ones_like(g)] if reference_bank else [])
    coup, omg = [], []
    for bank in range(nb):
        Cb = C * banks_gain[bank][..., None]
        if coupler_gain is not None:
            Cb = Cb * coupler_gain[bank][None, :, :, :T, :T]
        coup.append(Cb)
        if freq_residual is not None:
            omg.append(np.broadcast_to(freq_residual[bank][None, :, :, :T], (B, n_heads, kh, T)))
        else:
            omg.append(np.zeros((B, n_heads, kh, T)))
    G = nb * B * n_heads * kh
    coupling = np.stack(coup).reshape(G, T, T)
    omega = np.stack(omg).reshape(G, T)
    sig = np.asarray(sigma, dtype=float)
    if sig.ndim:  # per-oscillator noise of the mismatch draw, laid out like freq_residual
        sigma = np.stack([np.broadcast_to(sig[bank][None, :, :, :T], (B, n_heads, kh, T))
                          for bank in range(nb)]).reshape(G, T)
    y0 = np.broadcast_to(th[None], (nb, B, n_heads, kh, T)).reshape(G, T)
    # one stream per network, keyed on (sequence, bank, head, coordinate): groups are ordered (bank, B, h, kh)
    gseed = stream_seeds(seed, PURPOSE["kuramoto"], seq[None, :, None, None], np.arange(nb)[:, None, None, None],
                         np.arange(n_heads)[None, None, :, None], np.arange(kh)[None, None, None, :]).reshape(G)
    y_start = y0 if initial_phase_error is None else y0 + np.asarray(initial_phase_error).reshape(G, T)
    samples = None
    if amplitude is not None:
        y1, samples = amplitude.integrate(omega, coupling, y_start, t1=settle_cycles, seed=gseed,
                                          sample_times=None if readout is None else readout.sample_times())
        res = type("R", (), {"ys": None, "ts": None, "backend": "engine (complex amplitude)"})()
    else:
        res = integrate_phase(omega, coupling, y_start, t1=settle_cycles, n_steps=n_steps, harmonics=harmonics,
                              sigma=sigma, seed=gseed, save_every=save_every, backend=backend)
        y1 = res.y_final
    if readout is not None:
        # the readout of each (sequence, bank) draws from its own stream (free-running window and detectors)
        times = readout.sample_times()
        yb, ob = y1.reshape(nb, B, -1), np.broadcast_to(omega, (G, T)).reshape(nb, B, -1)
        sb = None if samples is None else samples.reshape(samples.shape[0], nb, B, -1)
        meas = np.empty_like(yb)
        for bank in range(nb):
            for b in range(B):
                rng = sequence_rng(seed, PURPOSE["readout"], int(seq[b]), bank)
                sg = sigma if np.ndim(sigma) == 0 else np.reshape(sigma, (nb, B, -1))[bank, b]
                smp = free_running_samples(yb[bank, b], ob[bank, b], sg, times, rng) if sb is None else sb[:, bank, b]
                meas[bank, b] = readout.measure_samples(smp, rng if readout.noise_rad > 0 else None)
        meas = meas.reshape(G, T)
    else:
        meas = y1
    dtheta = wrap(meas - y0).reshape(nb, B, n_heads, kh, T)
    h0 = float(np.sum(np.asarray(harmonics, dtype=float)[:, 1]))
    kt = kappa * settle_cycles
    est = []
    for bank in range(nb):
        x = dtheta[bank] / kt
        if h0:
            x = x - h0 * banks_gain[bank] * Aq.sum(-1)[:, :, None, :]
        est.append(x.transpose(0, 3, 1, 2).reshape(B, T, k))
    traj = None
    if res.ys is not None:
        traj = res.ys.reshape(-1, nb, B, n_heads, kh, T)[:, 0]
    return KuramotoChipOutput(va=est[0], a=est[1] if reference_bank else None, ts=res.ts, traj=traj,
                              backend=res.backend)
