"""Kuramoto attention and the Kuramoto phase language model (DESIGN §3.1).

Hidden states are k phases per token on the torus. The attention increment is one Kuramoto coupling step
with the causal softmax matrix as coupling kernel; the feed-forward acts on the wrapped angles; the readout
aligns phases with learned prototype phases.

References
----------
"Kuramoto Attention: Synchronizing Self-Attention on the Torus", arXiv 2606.11585.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from oscsim._validate import check_choice, check_positive_ints
from oscsim.nn.config import LMConfig

__all__ = ["KuramotoConfig", "KuramotoAttention", "KuramotoParts", "PhaseSwiGLU", "KuramotoLM", "wrap"]

IMPLS = ("sdpa", "explicit")
BOUNDS = ("norm", "tanh")
VALUES = ("circular", "projection")

# Buffer sizes of the memory-lean inference path (`KuramotoAttention._delta_lean`): heads per chunk so that
# each (B, heads, T, 2 k_h) query/key/value buffer stays near _LEAN_CHUNK_BYTES, tokens per chunk so that
# the (B, tokens, 2k) φ chunk stays near _LEAN_PHI_BYTES. Chosen by measurement at N = 4,096, d = 512,
# 8 heads (BENCHMARKS.md, "Kernels"): 2 MiB / 2 MiB gave 2.80x the fused attention's peak memory,
# 2 MiB / 1 MiB 2.59x, at the same time within the load's noise.
_LEAN_CHUNK_BYTES = 1 << 21
_LEAN_PHI_BYTES = 1 << 20


def wrap(x: torch.Tensor) -> torch.Tensor:
    """Wrap angles to [−π, π) (gradient one everywhere)."""
    return torch.remainder(x + math.pi, 2 * math.pi) - math.pi


@dataclass(frozen=True, kw_only=True)
class KuramotoConfig(LMConfig):
    """Kuramoto LM configuration (with the fields of `LMConfig`: vocab_size, seq_len, n_heads, n_layers).

    Attributes
    ----------
    k : int
        Phases per token (the width); split over ``n_heads`` heads of ``k // n_heads`` coordinates.
    ffn_hidden : int
        Hidden width of the bounded SwiGLU on the angles.
    bound : {"norm", "tanh"}
        Bound B on the gated Kuramoto term: norm matching (project choice) or π tanh(x/π).
    value : {"circular", "projection"}
        ``"circular"``: circular-mean value update (the Kuramoto step). ``"projection"``: ablation, a learned
        value projection of [cos θ, sin θ] averaged by A, bounded by π tanh(x/π).
    ffn : bool
        False is the "no feed-forward" ablation.
    gates : bool
        False is the "no metric gates" ablation (g^q = g^k = 1).
    omega_base : float
        RoPE-like initialisation ω_j = omega_base^(−j/k_h) [rad per token].
    ffn_scale : float
        ρ in Δ_ffn = ρ tanh(SwiGLU(θ)) [rad]; π/2 by default.
    impl : {"sdpa", "explicit"}
        Attention implementation: the fused kernel via the identity, or the explicit reference.
    """

    k: int = 64
    ffn_hidden: int = 128
    bound: str = "norm"
    value: str = "circular"
    ffn: bool = True
    gates: bool = True
    omega_base: float = 10000.0
    ffn_scale: float = math.pi / 2
    impl: str = "sdpa"

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(self, "ffn_hidden")
        self._check_heads_divide("k")
        check_choice("bound", self.bound, BOUNDS)
        check_choice("value", self.value, VALUES)
        check_choice("impl", self.impl, IMPLS)
        if not self.omega_base > 1.0:
            raise ValueError(f"omega_base must be > 1, got {self.omega_base}")
        if not self.ffn_scale > 0.0:
            raise ValueError(f"ffn_scale must be > 0 [rad], got {self.ffn_scale}")


@dataclass
class KuramotoParts:
    """Closed-form intermediate quantities of one Kuramoto attention layer (for the chip compiler).

    Attributes
    ----------
    theta : (B, T, k) input phases [rad].
    A : (B, h, T, T) causal softmax weights, or None when not requested.
    a : (B, T, k) raw Kuramoto term Σ_u A_{t,u} sin(θ_u − θ_t) (None in the ``projection`` ablation).
    v : (B, T, k) signed value gate (value vectors in the ``projection`` ablation).
    G_re, G_im : (B, T, k) real and imaginary part of G_t = Σ_u A_{t,u} e^{iθ_u}.
    R_loc : (B, T) local order parameter mean_j |G_{t,j}|.
    delta : (B, T, k) the bounded increment B(v ⊙ a).
    """

    theta: torch.Tensor
    A: torch.Tensor | None
    a: torch.Tensor | None
    v: torch.Tensor
    G_re: torch.Tensor
    G_im: torch.Tensor
    R_loc: torch.Tensor
    delta: torch.Tensor


class KuramotoAttention(nn.Module):
    """Kuramoto attention: gated cosine scores with rotary drift, causal softmax, Kuramoto value step.

    Parameters
    ----------
    k : int
        Phases per token.
    n_heads : int
        Heads; each owns k_h = k / n_heads coordinates.
    bound, value, gates, omega_base, impl
        As in :class:`KuramotoConfig`.

    Notes
    -----
    With φ(θ) = [cos θ, sin θ], gates g = softplus(φ W + b) / mean_head(·),

    .. math:: s_{t,u} = \\frac{τ}{\\sqrt{k_h}} \\sum_j g^q_{t,j} g^k_{u,j} \\cos(θ_{t,j} − θ_{u,j} + ω_j (t − u)),

    A = causal softmax(s), a_{t,j} = Σ_u A_{t,u} sin(θ_{u,j} − θ_{t,j}), v = φ(θ) W_v + b_v, Δ = B(v ⊙ a).
    With q_t = g^q [cos(θ_t + ω t), sin(θ_t + ω t)] and key_u likewise, s = τ/√k_h q·key, so the fused
    kernel computes G_t = Σ_u A_{t,u} [cos θ_u, sin θ_u] and a = −sin θ Re G + cos θ Im G.
    """

    def __init__(self, k: int, n_heads: int, *, bound: str = "norm", value: str = "circular", gates: bool = True,
                 omega_base: float = 10000.0, impl: str = "sdpa", eps: float = 1e-6):
        super().__init__()
        if k % n_heads:
            raise ValueError(f"k ({k}) must be divisible by n_heads ({n_heads})")
        check_choice("bound", bound, BOUNDS)
        check_choice("value", value, VALUES)
        check_choice("impl", impl, IMPLS)
        self.k, self.n_heads, self.kh = k, n_heads, k // n_heads
        self.bound, self.value_mode, self.use_gates, self.impl, self.eps = bound, value, gates, impl, eps
        self.gate_q = nn.Linear(2 * k, k) if gates else None
        self.gate_k = nn.Linear(2 * k, k) if gates else None
        self.value = nn.Linear(2 * k, k)
        j = torch.arange(self.kh, dtype=torch.float32)
        self.omega = nn.Parameter((omega_base ** (-j / self.kh)).repeat(n_heads))  # (k,) rad per token
        self.log_tau = nn.Parameter(torch.zeros(()))
        if gates:
            for lin in (self.gate_q, self.gate_k):
                nn.init.normal_(lin.weight, std=0.02)
                nn.init.zeros_(lin.bias)

    @property
    def tau(self) -> torch.Tensor:
        return self.log_tau.exp()

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, k) -> (B, h, T, k_h)."""
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, self.kh).transpose(1, 2)

    def _unheads(self, x: torch.Tensor) -> torch.Tensor:
        b, _, t, _ = x.shape
        return x.transpose(1, 2).reshape(b, t, self.k)

    def _gate(self, lin, phi: torch.Tensor) -> torch.Tensor:
        b, t, _ = phi.shape
        if lin is None:
            return phi.new_ones(b, self.n_heads, t, self.kh)
        g = self._heads(F.softplus(lin(phi)))
        return g / g.mean(dim=-1, keepdim=True)

    def _qk(self, theta: torch.Tensor, phi: torch.Tensor | None = None):
        """Rotated, gated queries and keys (B, h, T, 2k_h) with the score scale folded into q.

        ``phi`` = [cos θ, sin θ] (B, T, 2k) when the caller has it (computed once per layer, not twice).
        """
        if phi is None:
            phi = torch.cat([theta.cos(), theta.sin()], dim=-1)
        gq, gk = self._gate(self.gate_q, phi), self._gate(self.gate_k, phi)
        pos = torch.arange(theta.shape[1], device=theta.device, dtype=theta.dtype)
        rot = self._heads(theta) + (self.omega.view(self.n_heads, 1, self.kh) * pos[:, None])
        c, s = rot.cos(), rot.sin()
        scale = self.tau / math.sqrt(self.kh)
        q = torch.cat([gq * c, gq * s], dim=-1) * scale
        key = torch.cat([gk * c, gk * s], dim=-1)
        return phi, q, key, gq, gk

    def explicit_weights(self, theta: torch.Tensor) -> torch.Tensor:
        """Causal softmax weights A (B, h, T, T) from the explicit cosine score (readable reference)."""
        phi = torch.cat([theta.cos(), theta.sin()], dim=-1)
        gq, gk = self._gate(self.gate_q, phi), self._gate(self.gate_k, phi)
        th = self._heads(theta)  # (B, h, T, kh)
        t = torch.arange(theta.shape[1], device=theta.device, dtype=theta.dtype)
        lag = (t[:, None] - t[None, :])  # (T, T): t - u
        om = self.omega.view(self.n_heads, 1, 1, self.kh)
        arg = th[:, :, :, None, :] - th[:, :, None, :, :] + om * lag[None, None, :, :, None]
        s = (gq[:, :, :, None, :] * gk[:, :, None, :, :] * arg.cos()).sum(-1) * (self.tau / math.sqrt(self.kh))
        mask = torch.ones_like(lag, dtype=torch.bool).tril()
        return s.masked_fill(~mask, float("-inf")).softmax(dim=-1)

    def apply_bound(self, va: torch.Tensor, a: torch.Tensor | None) -> torch.Tensor:
        """The bound B applied to the gated term ``va`` = v ⊙ a (B, T, k).

        ``"norm"``: (v ⊙ a) ‖a‖ / max(‖v ⊙ a‖, ε), norms per token and head over the k_h coordinates;
        ``"tanh"`` (and the ``projection`` ablation): π tanh(x / π). A chip replaces ``va`` by its
        simulated version and calls this with the closed-form ``a``.
        """
        if self.bound == "tanh" or self.value_mode == "projection":
            return math.pi * torch.tanh(va / math.pi)
        b, t, width = va.shape
        return self._norm_bound(va.view(b, t, -1, self.kh), a.view(b, t, -1, self.kh)).view(b, t, width)

    def _norm_bound(self, vh: torch.Tensor, ah: torch.Tensor) -> torch.Tensor:
        """Norm matching on head-shaped (…, heads, k_h) tensors ``vh`` = v ⊙ a and ``ah`` = a."""
        # clamping the squared norms keeps the gradient finite at zero (first token: a = 0 exactly)
        n_va = vh.square().sum(-1, keepdim=True).clamp_min(self.eps ** 2).sqrt()
        n_a = ah.square().sum(-1, keepdim=True).clamp_min(self.eps ** 2).sqrt()
        return vh * (n_a / n_va)

    def parts(self, theta: torch.Tensor, *, need_weights: bool = True, impl: str | None = None) -> KuramotoParts:
        """All closed-form quantities of the layer for input phases ``theta`` (B, T, k)."""
        impl = self.impl if impl is None else impl
        check_choice("impl", impl, IMPLS)
        if theta.dim() != 3 or theta.shape[-1] != self.k:
            raise ValueError(f"theta must have shape (B, T, {self.k}), got {tuple(theta.shape)}")
        # cos θ and sin θ once per layer: the value gate, the gates, the queries/keys and the values share them
        cos_t, sin_t = theta.cos(), theta.sin()
        phi = torch.cat([cos_t, sin_t], dim=-1)
        v = self.value(phi)
        cos_h, sin_h = self._heads(cos_t), self._heads(sin_t)
        A = None
        if impl == "explicit":
            A = self.explicit_weights(theta)
            g_re, g_im = A @ cos_h, A @ sin_h
            th = self._heads(theta)
            # a_{t,j} = Σ_u A_{t,u} sin(θ_{u,j} − θ_{t,j}), written out
            a_h = (A[..., None] * torch.sin(th[:, :, None, :, :] - th[:, :, :, None, :])).sum(-2)
            vals = A @ self._heads(v) if self.value_mode == "projection" else None
        else:
            _, q, key, _, _ = self._qk(theta, phi)
            if self.value_mode == "projection":
                vh = torch.cat([cos_h, sin_h, self._heads(v)], dim=-1)
            else:
                vh = torch.cat([cos_h, sin_h], dim=-1)
            out = F.scaled_dot_product_attention(q, key, vh, is_causal=True, scale=1.0)
            g_re, g_im = out[..., : self.kh], out[..., self.kh: 2 * self.kh]
            a_h = -sin_h * g_re + cos_h * g_im
            vals = out[..., 2 * self.kh:] if self.value_mode == "projection" else None
            if need_weights:
                t = theta.shape[1]
                mask = torch.ones(t, t, dtype=torch.bool, device=theta.device).tril()
                A = (q @ key.transpose(-1, -2)).masked_fill(~mask, float("-inf")).softmax(-1)
        G_re, G_im = self._unheads(g_re), self._unheads(g_im)
        R_loc = torch.sqrt(G_re.square() + G_im.square()).mean(-1)
        if self.value_mode == "projection":
            a = None
            delta = self.apply_bound(self._unheads(vals), None)
        else:
            a = self._unheads(a_h)
            delta = self.apply_bound(v * a, a)
        return KuramotoParts(theta=theta, A=A, a=a, v=v, G_re=G_re, G_im=G_im, R_loc=R_loc, delta=delta)

    def forward(self, theta: torch.Tensor) -> torch.Tensor:
        """Attention increment Δ (B, T, k) [rad] for phases ``theta`` (B, T, k).

        Without autograd (inference) and with ``impl="sdpa"`` this is :meth:`_delta_lean`, which needs no
        full-size intermediate; otherwise ``parts(theta).delta``. The two agree to float rounding (tested).
        """
        grad = torch.is_grad_enabled() and (theta.requires_grad or any(p.requires_grad for p in self.parameters()))
        if self.impl == "sdpa" and not grad and theta.dim() == 3 and theta.shape[-1] == self.k:
            return self._delta_lean(theta)
        return self.parts(theta, need_weights=False).delta

    def _delta_lean(self, theta: torch.Tensor) -> torch.Tensor:
        """Δ (B, T, k) of the fused (SDPA) form, a few heads at a time, for inference.

        :meth:`parts` builds about twenty tensors of the size of (B, T, k) or (B, T, 2k) (cos θ, sin θ, φ,
        the value gate, two metric gates, the rotated cos and sin, queries and keys of width 2k_h per head
        and their concatenation temporaries, the values, the kernel's output, G, a, the bound's
        temporaries): 168 MiB at B = 1, T = 4,096, k = 512, against 9 MiB for the fused kernel itself.
        Here the queries, keys and values of a chunk of heads are filled token chunk by token chunk, with
        φ(θ) of the token chunk recomputed for each head chunk (the gates of one coordinate depend on every
        coordinate of the token), the fused kernel runs on the chunk, and the chunk's increment is written
        into the output: beyond the output, a few buffers of about ``_LEAN_CHUNK_BYTES`` and
        ``_LEAN_PHI_BYTES`` are alive. Every element is computed by the same operations as in
        :meth:`parts` (the linear maps on the chunk's rows of their weights), so one chunk (small layers)
        is bit-identical to it and several differ by rounding; the price is recomputing φ once per head
        chunk. The chunk loops run with one intra-op thread (many small operations: on a loaded machine
        each multi-threaded one waits at a barrier for a descheduled thread), the fused kernel with the
        caller's threads.
        """
        B, T, k = theta.shape
        kh, H = self.kh, self.n_heads
        size = theta.element_size()
        hc = max(1, min(H, _LEAN_CHUNK_BYTES // max(1, B * T * 2 * kh * size)))  # heads per chunk
        tc = max(1, min(T, _LEAN_PHI_BYTES // max(1, B * 2 * k * size)))  # tokens per φ chunk
        projection = self.value_mode == "projection"
        width = 3 * kh if projection else 2 * kh
        scale = self.tau / math.sqrt(kh)
        pos = torch.arange(T, device=theta.device, dtype=theta.dtype)
        delta = theta.new_empty(B, T, k)
        threads = torch.get_num_threads()
        try:
            for h0 in range(0, H, hc):
                h1 = min(H, h0 + hc)
                n, c0, c1 = h1 - h0, h0 * kh, h1 * kh
                torch.set_num_threads(1)
                q = theta.new_empty(B, n, T, 2 * kh)
                key = theta.new_empty(B, n, T, 2 * kh)
                vh = theta.new_empty(B, n, T, width)
                v = theta.new_empty(B, T, n, kh)
                omega = self.omega[c0:c1].view(n, 1, kh)
                for t0 in range(0, T, tc):
                    t1 = min(T, t0 + tc)
                    th = theta[:, t0:t1]
                    phi = torch.cat([th.cos(), th.sin()], dim=-1)
                    v[:, t0:t1] = F.linear(phi, self.value.weight[c0:c1], self.value.bias[c0:c1]).view(B, -1, n, kh)
                    gq, gk = (self._gate_rows(lin, phi, c0, c1, n) for lin in (self.gate_q, self.gate_k))
                    th_h = th[..., c0:c1].reshape(B, -1, n, kh).transpose(1, 2)  # (B, n, t, kh)
                    rot = th_h + omega * pos[t0:t1, None]
                    c, s = rot.cos(), rot.sin()
                    q[:, :, t0:t1] = torch.cat([gq * c, gq * s], dim=-1) * scale
                    key[:, :, t0:t1] = torch.cat([gk * c, gk * s], dim=-1)
                    vh[:, :, t0:t1, :kh] = phi[..., c0:c1].reshape(B, -1, n, kh).transpose(1, 2)
                    vh[:, :, t0:t1, kh:2 * kh] = phi[..., k + c0:k + c1].reshape(B, -1, n, kh).transpose(1, 2)
                if projection:
                    vh[..., 2 * kh:] = v.transpose(1, 2)
                torch.set_num_threads(threads)
                out = F.scaled_dot_product_attention(q, key, vh, is_causal=True, scale=1.0)
                torch.set_num_threads(1)
                del q, key
                if projection:  # apply_bound of the projection ablation, (B, T, n, kh)
                    d = (math.pi * torch.tanh(out[..., 2 * kh:] / math.pi)).transpose(1, 2)
                else:
                    cos_h, sin_h = vh[..., :kh], vh[..., kh:2 * kh]
                    a = (-sin_h * out[..., :kh] + cos_h * out[..., kh:2 * kh]).transpose(1, 2)  # (B, T, n, kh)
                    va = v * a
                    d = math.pi * torch.tanh(va / math.pi) if self.bound == "tanh" else self._norm_bound(va, a)
                delta[..., c0:c1] = d.reshape(B, T, n * kh)
                del out, vh, v, d
        finally:
            torch.set_num_threads(threads)
        return delta

    def _gate_rows(self, lin, phi: torch.Tensor, c0: int, c1: int, n: int) -> torch.Tensor:
        """Metric gates of coordinates c0:c1 (n heads) for the token chunk ``phi`` (B, t, 2k): (B, n, t, k_h),
        as :meth:`_gate` computes them (softplus of the linear map, divided by its mean over the head)."""
        b, t, _ = phi.shape
        if lin is None:
            return phi.new_ones(b, n, t, self.kh)
        g = F.softplus(F.linear(phi, lin.weight[c0:c1], lin.bias[c0:c1])).view(b, t, n, self.kh).transpose(1, 2)
        return g / g.mean(dim=-1, keepdim=True)


class PhaseSwiGLU(nn.Module):
    """Bounded SwiGLU on wrapped angles: Δ = ρ tanh(W_2 (silu(W_1 x) ⊙ W_3 x)), x = wrap(θ) ∈ [−π, π)."""

    def __init__(self, k: int, hidden: int, scale: float = math.pi / 2):
        super().__init__()
        self.w1 = nn.Linear(k, hidden, bias=False)
        self.w3 = nn.Linear(k, hidden, bias=False)
        self.w2 = nn.Linear(hidden, k, bias=False)
        self.scale = scale

    def forward(self, theta: torch.Tensor) -> torch.Tensor:
        x = wrap(theta)
        return self.scale * torch.tanh(self.w2(F.silu(self.w1(x)) * self.w3(x)))


class KuramotoBlock(nn.Module):
    def __init__(self, cfg: KuramotoConfig):
        super().__init__()
        self.attn = KuramotoAttention(cfg.k, cfg.n_heads, bound=cfg.bound, value=cfg.value, gates=cfg.gates,
                                      omega_base=cfg.omega_base, impl=cfg.impl)
        self.ffn = PhaseSwiGLU(cfg.k, cfg.ffn_hidden, cfg.ffn_scale) if cfg.ffn else None


class KuramotoLM(nn.Module):
    """Kuramoto phase language model: phase embedding, L × (attention step, feed-forward), phase readout.

    Notes
    -----
    θ ← wrap(θ + Δ_attn); θ ← wrap(θ + Δ_ffn). Readout
    logits_c = β Σ_j w_j cos(θ_j − ψ_{c,j}) + b_c, computed as φ(θ) · β[w cos ψ_c, w sin ψ_c] + b_c.
    """

    #: Parameters whose entries are phases (angles on the torus, period 2π): the training loop gives them their
    #: own learning rate and no weight decay (oscsim.train.TrainConfig.phases).
    phase_parameters = ("embed", "psi")

    def __init__(self, config: KuramotoConfig):
        super().__init__()
        self.config = config
        k = config.k
        self.embed = nn.Parameter(torch.empty(config.vocab_size, k).uniform_(-math.pi, math.pi))
        self.layers = nn.ModuleList(KuramotoBlock(config) for _ in range(config.n_layers))
        self.psi = nn.Parameter(torch.empty(config.vocab_size, k).uniform_(-math.pi, math.pi))
        self.w = nn.Parameter(torch.ones(k))
        self.beta = nn.Parameter(torch.tensor(1.0 / math.sqrt(k)))
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def set_impl(self, impl: str) -> None:
        """Switch every layer between ``"sdpa"`` and ``"explicit"``."""
        check_choice("impl", impl, IMPLS)
        for layer in self.layers:
            layer.attn.impl = impl

    def readout(self, theta: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, V) by phase alignment with the prototype phases ψ."""
        phi = torch.cat([theta.cos(), theta.sin()], dim=-1)
        wt = self.beta * torch.cat([self.w * self.psi.cos(), self.w * self.psi.sin()], dim=-1)  # (V, 2k)
        return phi @ wt.T + self.bias

    def forward(self, tokens: torch.Tensor, *, attn_override=None, return_diagnostics: bool = False):
        """Logits (B, T, V) for byte tokens (B, T) int64.

        Parameters
        ----------
        tokens : (B, T) int64
        attn_override : callable, optional
            ``attn_override(layer_index, theta, parts) -> Δ`` replaces the attention increment of each layer
            (``parts`` is the layer's :class:`KuramotoParts`, weights included); chip inference uses it.
        return_diagnostics : bool
            Also return a dict with per-layer local order parameter R_loc (B, T), global order parameter
            R_glob (B,) and the natural frequencies ω (k,).
        """
        if tokens.dim() != 2:
            raise ValueError(f"tokens must have shape (B, T), got {tuple(tokens.shape)}")
        # F.embedding, not self.embed[tokens]: the backward of advanced indexing (index_put_ with accumulate)
        # is not bit-reproducible with several CPU threads; embedding_dense_backward is (measured, issue 14)
        theta = F.embedding(tokens, self.embed)
        diag = {"R_loc": [], "R_glob": [], "omega": []}
        for i, layer in enumerate(self.layers):
            if attn_override is not None or return_diagnostics:
                parts = layer.attn.parts(theta, need_weights=attn_override is not None)
                delta = parts.delta if attn_override is None else attn_override(i, theta, parts)
                if return_diagnostics:
                    diag["R_loc"].append(parts.R_loc.detach())
                    diag["omega"].append(layer.attn.omega.detach())
            else:
                delta = layer.attn(theta)
            theta = wrap(theta + delta)
            if layer.ffn is not None:
                theta = wrap(theta + layer.ffn(theta))
            if return_diagnostics:
                z = torch.complex(theta.cos(), theta.sin()).mean(dim=1)  # (B, k)
                diag["R_glob"].append(z.abs().mean(-1).detach())
        logits = self.readout(theta)
        return (logits, diag) if return_diagnostics else logits
