"""The decode pass under the blocked schedule (``[array] block = B`` with ``[energy] phase = "decode"``): the new
token's receiver against its keys in key blocks of B, one tile round per block, the blocks' increment estimates
summed by the periphery.

The physical step of decoded token t (0-based position in the window; its keys are u < t): the keys are cut into
the blocks I_j = [jB, min((j+1)B, T)) of :mod:`mapping.backends.blocking`, and each block holding at least one
key of t runs as its own round on a tile: the block's keys written from SRAM (re-injected) and free-running, as
in the unblocked decode pass (:mod:`mapping.backends.decode`: a one-way coupler only drives its receiver), and
the receiver written to θ_t and driven through the couplers of row t restricted to the block,
C_{t,u} = κ Q_c(A_{t,u}) (1 + δ_{t,u}) Q_g(v_t), u ∈ I_j, u < t. The readout reads the receiver over its window
and the periphery forms the block's increment estimate x̂_t^{(j)} (its offset term over the block's couplers
only) and adds it: x̂_t = Σ_j x̂_t^{(j)}. Token t takes ⌈t/B⌉ rounds (one for t = 0, which has no key and runs
its receiver alone, as the unblocked pass does). On the tile the block's keys stand on the first oscillators
and the receiver on the next ones, the layout of the prefill block (i, j)
(:func:`mapping.backends.blocked.block_inputs`): the key block's oscillators carry their draws (trim residual,
noise, coupler mismatch at their tile positions), and the receivers of query block i (the decoded tokens
t ∈ I_i) are simulated together, each in its own round, as the unblocked pass runs a window's receivers
together (its module notes).

**What changes against the unblocked decode.** First order: nothing (the receiver's drive is linear in the
couplings, so the blocks' first-order increments sum to the unblocked one). Beyond it, the receiver moves under
one block's keys at a time instead of all at once: a relative difference of order κτ_s. Noise: the receiver's
injection error, phase diffusion and readout error enter once per round, each divided by κτ_s, so the estimate of
token t carries ⌈t/B⌉ independent errors and its noise grows as √⌈t/B⌉. Each block's round has its own noise,
injection and readout streams (keyed on the layer seed and the block, :func:`mapping.backends.blocked.block_seeds`,
and on the sequence: a sequence's numbers do not depend on the batch).

**Refused:** held keys (``[decode] keys = "held"``): a held key stays in its own running oscillator from its
write to the last token that reads it, T oscillators per unit, which a tile of 2B does not hold.

**How it is computed.** Without key-side write errors (ideal injection) the sources' sum
Z_{m,t}(τ_k) = Σ_u C_{t,u} e^{im φ_u(τ_k)} factors as g_t Σ_u [κ Q_c(A) (1 + δ)]_{t,u} e^{im φ_u(τ_k)}: the
coordinates of a head whose units share a tile's mismatch (or with mismatch off) share the matrix, so their sums
are one matrix product per (block, head, tile) over every step time at once (the keys free-run, so their
phases are known before the receiver moves), the receive gain applied after; the harmonics of the keys' phases and
the receivers' Heun steps are compiled (:func:`mapping.backends.receivers.fill_source_harmonics`,
:func:`mapping.backends.receivers.receivers_heun`). Float64, equal to the per-unit complex product of
:func:`mapping.backends.receivers.integrate_receivers` on the same draws to rounding (tests/test_blocked_decode.py).
With write errors the per-(t, u) key phases make each unit's matrix its own (that product).
"""

from __future__ import annotations

import numpy as np

from ..periphery.programming import program_kuramoto
from ..periphery.readout import read_free_running, wrap
from ..seeds import PURPOSE, LayerSeeds, sequence_rng
from .base import KuramotoInputs, KuramotoOutput
from .blocked import block_seeds
from .blocking import BlockPlan, decode_rounds
from .kuramoto import increment_estimate
from .phase_memory import HeldMemory
from .receivers import fill_source_harmonics, heun_receivers, integrate_receivers, receivers_heun, source_motion

__all__ = ["blocked_decode_step", "block_round", "coupler_elements", "decode_block_positions", "decode_rounds"]


def decode_block_positions(plan: BlockPlan, i: int, j: int):
    """The receivers and keys of decode block (i, j): (rows, cols, rpos, cpos), slices of the window's tokens
    (receivers t ∈ I_i with a key in I_j; keys I_j) and of the tile's oscillators (see the module notes); rows is
    empty for the diagonal block of a query block's first token (its keys all lie in earlier blocks)."""
    (q0, q1), (k0, k1) = plan.ranges[i], plan.ranges[j]
    if i == j:
        r0 = q0 + (1 if i > 0 else 0)  # token t = iB has no key u < t in its own block (t = 0 runs alone)
        return slice(r0, q1), slice(q0, q1), slice(r0 - q0, q1 - q0), slice(0, q1 - q0)
    nk = k1 - k0
    return slice(q0, q1), slice(k0, k1), slice(nk, nk + q1 - q0), slice(0, nk)


def coupler_elements(s, nb: int, n_heads: int, kh: int):
    """The coupler mismatch as (E, index): E (L, Tt, Tt) and each unit's (bank, head, j) entry of it, or
    (None, None) without a coupler spread."""
    if s.coupler_gain is None:
        return None, None
    cg = np.asarray(s.coupler_gain)
    if s.coupler_tile is None:  # per unit
        return cg[:nb].reshape((nb * n_heads * kh,) + cg.shape[-2:]), np.arange(nb * n_heads * kh).reshape(
            nb, n_heads, kh)
    return cg, np.asarray(s.coupler_tile, dtype=np.int64)[:nb]


def _source_sums(Cb, E, eidx, phi, ms):
    """Z (R, G_u, M', 2, n+1) of one (sequence, bank) block round: Σ_u M_{t,u} (cos, sin)(m φ_u(τ_k)) of every
    coordinate's network for its matrix M = κ Q_c(A) (∘ its tile's mismatch), the receive gain not applied: one
    product per (head, mismatch entry) for all the coordinates that share it.

    Cb : (h, R, S); E, eidx : the block's mismatch (L, R, S) and each coordinate's entry (h, k_h), or None;
    phi : (G_u, S, n+1) the keys' phases at the step times; ms : (M',) the active harmonics."""
    h, R, S = Cb.shape
    G, _, n1 = phi.shape
    kh = G // h
    nm = ms.size
    X = np.empty((S, G, nm, 2, n1))
    fill_source_harmonics(np.ascontiguousarray(phi), ms.astype(np.float64), X)
    Z = np.empty((R, G, nm, 2, n1))
    w = nm * 2 * n1
    for hd in range(h):
        groups = [(None, np.arange(kh))] if E is None else [(e, np.flatnonzero(eidx[hd] == e))
                                                            for e in np.unique(eidx[hd])]
        for e, js in groups:
            M = Cb[hd] if e is None else Cb[hd] * E[e]
            us = hd * kh + js
            Z[:, us] = (M @ X[:, us].reshape(S, us.size * w)).reshape(R, us.size, nm, 2, n1)
    return Z


def block_round(ds, th_b, Aq_b, g_bank, E, eidx, eps_all, sig_all, r0, rng, pos, *,
                 dense: bool = False):
    """Receivers' final phases (h, k_h, R) of one (sequence, bank) in one block round. ``pos``: the block's
    (rows, cols, rpos, cpos) (:func:`decode_block_positions`); ``dense``: build each unit's matrix (the
    per-unit complex product; the check of the shared product)."""
    s = ds.phase
    rows, cols, rpos, cpos = pos
    h, kh = th_b.shape[:2]
    Cb = s.kappa * Aq_b[:, rows, cols]  # (h, R, S)
    R, S = Cb.shape[1:]
    Eb = None if E is None else E[:, rpos, cpos]
    eps_r, eps_s = eps_all[..., rpos], eps_all[..., cpos]
    sig_r = sig_all if np.ndim(sig_all) == 0 else sig_all[..., rpos]
    sig_s = sig_all if np.ndim(sig_all) == 0 else sig_all[..., cpos]
    gain = g_bank[..., rows]
    kerr = None if ds.write is None else ds.write(rng, np.broadcast_to(eps_s[..., None, :], (h, kh, R, S)))
    y0 = th_b[..., rows] + r0
    G = h * kh
    if dense:
        C = Cb[:, None] * gain[..., None] * (1.0 if Eb is None else Eb[eidx])
        psi = th_b[..., None, cols] + (0.0 if kerr is None else kerr)
        return integrate_receivers(np.broadcast_to(psi, C.shape).reshape(G, R, S), C.reshape(G, R, S),
                                   eps_r.reshape(G, R), np.reshape(sig_r, (G, R)) if np.ndim(sig_r) else sig_r,
                                   y0.reshape(G, R), t1=s.settle_cycles, n_steps=s.n_steps,
                                   harmonics=s.harmonics, rng=rng, src_eps=eps_s.reshape(G, S),
                                   src_sigma=np.reshape(sig_s, (G, S)) if np.ndim(sig_s) else sig_s).reshape(h, kh, R)
    hm = np.asarray(s.harmonics, dtype=np.float64).reshape(-1, 2)
    n, dt = s.n_steps, s.settle_cycles / s.n_steps
    sr = np.broadcast_to(np.asarray(sig_r, dtype=np.float64), (h, kh, R)).reshape(G, R)
    ss = np.broadcast_to(np.asarray(sig_s, dtype=np.float64), (h, kh, S)).reshape(G, S)
    noisy = bool(np.any(sr > 0)) or bool(np.any(ss > 0))
    dW = rng.standard_normal((n, G, R)) * np.sqrt(dt) if noisy else None  # the draws of integrate_receivers
    dW_src = rng.standard_normal((n, G, S)) * np.sqrt(dt) if noisy else None
    move = source_motion(eps_s.reshape(G, S), ss, dt, n, dW_src)
    phi = th_b[..., cols].reshape(G, S, 1) + move
    ms = np.array([m for m in range(1, hm.shape[0] + 1) if np.any(hm[m - 1])], dtype=np.int64)
    if kerr is not None:  # each unit's own matrix (per-(t, u) key phases)
        C = Cb[:, None] * gain[..., None] * (1.0 if Eb is None else Eb[eidx])
        P = [(C * np.exp(1j * m * kerr)).reshape(G, R, S) @ np.exp(1j * m * phi) for m in ms]
        sums = dict(zip(ms.tolist(), P))
        return heun_receivers([sums.get(m) for m in range(1, hm.shape[0] + 1)], hm, eps_r.reshape(G, R), sr,
                              y0.reshape(G, R), dt=dt, n_steps=n, dW=dW).reshape(h, kh, R)
    Z = _source_sums(Cb, Eb, eidx, phi, ms)
    return receivers_heun(Z, np.ascontiguousarray(gain.reshape(G, R)), hm[ms - 1, 0].copy(), hm[ms - 1, 1].copy(),
                          ms, np.ascontiguousarray(eps_r.reshape(G, R)), np.ascontiguousarray(sr),
                          np.ascontiguousarray(y0.reshape(G, R)), dt, int(n),
                          np.zeros((1, 1, 1)) if dW is None else dW, noisy).reshape(h, kh, R)


def programmed_window(ds, inp: KuramotoInputs, seeds: LayerSeeds):
    """What every decode pass (unblocked, :func:`mapping.backends.decode.decode_step`; blocked,
    :func:`blocked_decode_step`) starts from: the inputs' shapes checked, the
    couplings and receive gains programmed once per window.

    Returns
    -------
    tuple
        ``(n_heads, kh, banks, sequences, theta_by_head, A_programmed, gains_per_bank)``: θ as (B, h, kh, T), the
        programmed A (B, h, T, T) and its gains, with the reference bank's unit gains when it has one.
    """
    s = ds.phase
    theta, A, v = inp.theta, inp.A, inp.v
    B, T, k = theta.shape
    nh = s.n_heads
    kh = k // nh
    if A.shape != (B, nh, T, T) or v.shape != theta.shape:
        raise ValueError(f"A must have shape {(B, nh, T, T)} and v {theta.shape}, got {A.shape} and {v.shape}")
    nb = 2 if s.reference_bank else 1
    th = theta.reshape(B, T, nh, kh).transpose(0, 2, 3, 1)  # (B, h, kh, T)
    Aq, g = program_kuramoto(A, v, n_heads=nh, coupling_q=s.coupling_q, gain_q=s.gain_q, row_scaled=s.row_scaled)
    gains = [g] + ([np.ones_like(g)] if s.reference_bank else [])
    return nh, kh, nb, seeds.sequences(B), th, Aq, gains


def blocked_decode_step(ds, inp: KuramotoInputs, seeds: LayerSeeds, plan: BlockPlan, *,
                        dense: bool = False) -> KuramotoOutput:
    """One Kuramoto layer's decode pass over a window under the blocked schedule (see the module notes).

    Parameters
    ----------
    ds : mapping.backends.decode.DecodeSettings
    inp : KuramotoInputs
        θ (B, T, k), A (B, h, T, T), v (B, T, k).
    seeds : LayerSeeds
    plan : BlockPlan
        For T = ``inp.theta.shape[1]``, blocked (B < T; unblocked, the pass is
        :func:`mapping.backends.decode.decode_step`).
    dense : bool
        Build each unit's coupling matrix instead of the shared product (the check; same draws).

    Returns
    -------
    KuramotoOutput
        ``va`` and ``a`` (B, T, k): each token's increment estimates summed over its key blocks.
    """
    theta = inp.theta
    B, T, k = theta.shape
    if plan.T != T:
        raise ValueError(f"the block plan is for T = {plan.T} tokens, the inputs have {T}")
    if not plan.blocked:
        raise ValueError(f"the block plan is unblocked (block {plan.block} >= T = {T}): run the unblocked decode "
                         f"pass (mapping.backends.decode.decode_step)")
    if isinstance(ds.keys, HeldMemory):
        raise ValueError(f"decode.keys = 'held' keeps every key in its own running oscillator (T = {T} per unit); "
                         f"a blocked tile holds 2B = {plan.tile_tokens}: use decode.keys = 'reinjected' or "
                         f"block = 'none'")
    s = ds.phase
    nh, kh, nb, seq, th, Aq, gains = programmed_window(ds, inp, seeds)
    E, eidx = coupler_elements(s, nb, nh, kh)
    h0 = float(np.sum(np.asarray(s.harmonics, dtype=float)[:, 1]))
    kt = s.kappa * s.settle_cycles
    out = [np.zeros((B, T, k)) for _ in range(nb)]
    for i, j in plan.pairs:
        pos = decode_block_positions(plan, i, j)
        rows, _, rpos, _ = pos
        R = rows.stop - rows.start
        if R == 0:
            continue
        blk = block_seeds(seeds, i, j)
        n_tile = max(rpos.stop, pos[3].stop)
        r_all = None if s.injection is None else np.asarray(s.injection(seq, n_tile, blk.seed))[..., rpos]
        y1 = np.empty((nb, B, nh, kh, R))
        omg = np.empty_like(y1)
        sig_rows = None if np.ndim(s.sigma) == 0 else np.empty_like(y1)
        for bank in range(nb):
            eps_all = np.zeros((nh, kh, n_tile)) if s.freq_residual is None else s.freq_residual[bank][..., :n_tile]
            sig_all = s.sigma if np.ndim(s.sigma) == 0 else np.asarray(s.sigma)[bank][..., :n_tile]
            for b in range(B):
                rng = sequence_rng(blk.seed, PURPOSE["decode"], int(seq[b]), bank)
                r0 = 0.0 if r_all is None else r_all[bank, b]
                y1[bank, b] = block_round(ds, th[b], Aq[b], gains[bank][b], E, None if eidx is None else eidx[bank],
                                           eps_all, sig_all, r0, rng, pos, dense=dense)
                omg[bank, b] = eps_all[..., rpos]
                if sig_rows is not None:
                    sig_rows[bank, b] = sig_all[..., rpos]
        G = nb * B * nh * kh
        sigma = s.sigma if sig_rows is None else sig_rows.reshape(G, R)
        y0 = np.broadcast_to(th[None, ..., rows], (nb, B, nh, kh, R)).reshape(G, R)
        meas = y1.reshape(G, R) if s.readout is None else read_free_running(
            s.readout, y1.reshape(G, R), omg.reshape(G, R), sigma, seed=blk.seed, sequences=seq, banks=nb)
        dtheta = wrap(meas - y0).reshape(nb, B, nh, kh, R)
        Ab = Aq[:, :, rows, pos[1]]
        for bank in range(nb):
            est = increment_estimate(dtheta[bank], kt, h0, gains[bank][..., rows], Ab)
            out[bank][:, rows] += est.transpose(0, 3, 1, 2).reshape(B, R, k)
    return KuramotoOutput(va=out[0], a=out[1] if s.reference_bank else None,
                          backend=f"decode (receivers), blocked (B = {plan.block}, {plan.n_query_blocks} key blocks)")
