"""The backend protocol: how one layer of a compiled chip runs.

A backend is a small stateless object (one class per module) registered under the layer kinds and chip
devices it runs (:mod:`mapping.backends.registry`):

- ``prepare(chip, layer, **overrides) -> settings``: everything the layer's step reads from the chip,
  computed once per layer and run (quantisers, residual frequency errors, coupler spread, noise intensity,
  readout chain, coupling function, integrator); ``overrides`` replace named fields (a comparison that wants
  the trajectories, an ideal detector, another coupling function);
- ``step(settings, inputs, seeds) -> output``: one batch of sequences through the layer, its noise keyed on
  ``seeds`` (:class:`mapping.seeds.LayerSeeds`) so a sequence gets the same numbers in any batch;
- ``describe(chip) -> Description``: what the summary, the report and the validity check say about it.

Two families share their inputs, outputs and the model's hook: Kuramoto layers (:class:`KuramotoInputs` ->
:class:`KuramotoOutput`, :mod:`mapping.backends.kuramoto`) and SSA layers (:class:`SSAInputs` ->
:class:`SSAOutput`, :mod:`mapping.backends.ssa`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

__all__ = ["LayerBackend", "Description", "KuramotoInputs", "KuramotoOutput", "SSAInputs", "SSAOutput"]


@dataclass(frozen=True)
class KuramotoInputs:
    """One Kuramoto layer's inputs from the model (float64).

    Attributes
    ----------
    theta : (B, T, k) input phases [rad].
    A : (B, h, T, T) causal softmax weights (lower triangular, rows sum to one).
    v : (B, T, k) signed value gate.
    va_closed_form, a_closed_form : (B, T, k) or None
        The model's own v ⊙ a and a, when the inputs were captured from its forward pass.
    """

    theta: np.ndarray
    A: np.ndarray
    v: np.ndarray
    va_closed_form: np.ndarray | None = None
    a_closed_form: np.ndarray | None = None

    @classmethod
    def of(cls, theta, A, v, parts=None) -> "KuramotoInputs":
        """From arrays or torch tensors (converted to float64 NumPy arrays); ``parts``: the model's layer parts
        (its own increment is kept for the closed-form rung)."""
        conv = (lambda x: x.detach().double().numpy()) if hasattr(theta, "detach") else (
            lambda x: np.asarray(x, dtype=np.float64))
        if parts is None:
            return cls(conv(theta), conv(A), conv(v))
        return cls(conv(theta), conv(A), conv(v), va_closed_form=conv(parts.v * parts.a), a_closed_form=conv(parts.a))


@dataclass
class KuramotoOutput:
    """Chip estimates for one Kuramoto layer.

    Attributes
    ----------
    va : (B, T, k) chip estimate of v ⊙ a.
    a : (B, T, k) chip estimate of a from the unit-gain bank, or None.
    ts : (S,) trajectory times [cycles] or None.
    traj : (S, B, h, k_h, T) gain-bank trajectories (unwrapped phases) or None.
    backend : str
    waveforms : dict or None
        Circuit-level rungs asked for waveforms: ``t`` (S,) [s], ``v0`` (S, G, T) node-0 voltages [V],
        ``theta0`` (G, T) placement phases, ``reference_offset_rad``, ``device`` (the circuit device).
    """

    va: np.ndarray
    a: np.ndarray | None
    ts: np.ndarray | None = None
    traj: np.ndarray | None = None
    backend: str = ""
    waveforms: dict | None = None


@dataclass(frozen=True)
class SSAInputs:
    """One SSA layer's inputs from the model (float64; B sequences, H heads, N tokens).

    Attributes
    ----------
    J : (B, H, N, N) similarity weights; delta_omega, threshold : (B, H, N, N) detuning and K r J;
    omega : (B, H, N, F) frequencies; K : float; causal : bool.
    S_closed_form, locked_closed_form : (B, H, N, N) or None
        The model's own S and locked set (when captured from its forward pass).
    """

    J: np.ndarray
    delta_omega: np.ndarray
    threshold: np.ndarray
    omega: np.ndarray
    K: float
    causal: bool
    S_closed_form: np.ndarray | None = None
    locked_closed_form: np.ndarray | None = None

    @classmethod
    def of(cls, comp: dict) -> "SSAInputs":
        """From the model's hook dict (torch tensors)."""
        f = lambda x: x.detach().double().numpy()  # noqa: E731
        return cls(J=f(comp["J"]), delta_omega=f(comp["delta_omega"]), threshold=f(comp["threshold"]),
                   omega=f(comp["omega"]), K=float(comp["K"]), causal=bool(comp["causal"]),
                   S_closed_form=f(comp["S"]), locked_closed_form=comp["locked"].detach().numpy())


@dataclass
class SSAOutput:
    """Chip S (B, H, N, N), the chip's locked set (bool, same shape), the collective coherence or None."""

    S: np.ndarray
    locked: np.ndarray
    coherence: np.ndarray | None = None
    backend: str = ""


@dataclass(frozen=True)
class Description:
    """What a backend says about a chip.

    Attributes
    ----------
    name : str
        The backend's name (e.g. 'phase macromodel').
    window : str
        The settle/averaging window, for the summary's first line.
    settle_window_rad : float or None
        κτ_s of a Kuramoto layer [rad]; None for SSA layers (set by their settle and averaging windows).
    regime : str or None
        The device model's regime line (spin-torque: phase or amplitude model, and why).
    realism : str
        Circuit-level realism switches (flicker, injection transient), "" when none.
    """

    name: str
    window: str
    settle_window_rad: float | None
    regime: str | None = None
    realism: str = ""
    extra: dict = field(default_factory=dict)


class LayerBackend(ABC):
    """One way a chip layer can run (see the module notes).

    Class attributes
    ----------------
    name : str
    layer_kinds : tuple of str
        Layer kinds it runs ('kuramoto', 'ssa-pairwise', 'ssa1d-collective').
    devices : tuple of str
        Chip devices it runs on; ladder rungs add 'closed-form' and 'spice'.
    chip_kind : str
        The model kind of its layers ('kuramoto' or 'ssa').
    priority : int
        Among several backends of one (layer kind, device), the highest that :meth:`accepts` the chip runs.
    refusals : dict
        Chip kind -> why no backend of this device runs it (the compiler's message).
    """

    name: ClassVar[str] = ""
    layer_kinds: ClassVar[tuple] = ()
    devices: ClassVar[tuple] = ()
    chip_kind: ClassVar[str] = ""
    priority: ClassVar[int] = 0
    refusals: ClassVar[dict] = {}

    @classmethod
    def accepts(cls, chip) -> bool:
        """Whether this backend runs ``chip`` (among the backends of its layer kind and device)."""
        return cls.refuse(chip) is None

    @classmethod
    def refuse(cls, chip) -> str | None:
        """Why this backend cannot run ``chip`` (None: it can)."""
        return None

    @classmethod
    def compile_record(cls, config, device, chip_kind: str) -> dict:
        """Timebase entries the compiler records for a chip on this backend's device (default none)."""
        return {}

    @classmethod
    def device_note(cls, chip) -> str | None:
        """A line about the device model every chip on this backend's device gets in its summary (default none)."""
        return None

    @abstractmethod
    def prepare(self, chip, layer: int, *, integrator: str = "auto", **overrides):
        """The layer's step settings (see the module notes); ``integrator`` names the phase integrator
        ('auto', 'engine', 'numpy'), ignored by backends that integrate something else."""

    @abstractmethod
    def step(self, prepared, inputs, seeds):
        """One batch of sequences through the layer."""

    @abstractmethod
    def describe(self, chip) -> Description:
        """What the summary and the report say about this backend on ``chip``."""

    def macromodel_validity(self, chip, *, warn: bool = True, stacklevel: int = 2) -> dict | None:
        """Is the chip inside the measured validity map of the ring phase macromodel? None: not a question for
        this backend or device."""
        return None
