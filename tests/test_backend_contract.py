"""One contract over every registered backend (as Optuna runs one contract over every sampler,
``parametrize_sampler``): each backend registered in :mod:`mapping.backends` compiles a tiny chip, runs one
window, gives the same outputs for a sequence whatever batch it is stepped in (same seed), and the chip's energy
report has every term, finite.

A new backend fails :func:`test_every_registered_backend_has_a_contract_case` until it gets a
:data:`CASES` entry (a tiny model and chip config that reach it). The contract itself is
:func:`check_backend_contract` (a chip and the device name the backend is asked on): a parametrisation over the
registered devices (``parametrize_device``, once devices are registered objects) calls the same function with a
tiny chip on each device.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

from mapping import ChipConfig, SSAConfig, compile, run
from mapping.backends import backend_classes, backend_for, registered
from mapping.energy import energy_report
from mapping.seeds import LayerSeeds


def _kuramoto(seq_len=6):
    from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM

    torch.manual_seed(0)
    return KuramotoLM(KuramotoConfig(k=4, n_heads=2, n_layers=1, seq_len=seq_len))


def _ssa1d(seq_len=6):
    from oscsim.nn.osn import OSNConfig, OSNModel

    torch.manual_seed(0)
    return OSNModel(OSNConfig(d_model=8, n_heads=2, n_layers=1, seq_len=seq_len, frequency="scalar"))


@dataclass(frozen=True)
class Case:
    """A tiny chip that reaches one backend: its model (a factory), its config, the device the backend is asked
    on (None: the chip's own, the backend a run picks; a ladder rung's name otherwise), the ``prepare`` overrides
    of its step (the circuit and SPICE rungs: one head and one coordinate, the others NaN) and whether a whole
    ``run`` of the chip is part of its contract (not for the circuit rung: a run integrates every ring of every
    coordinate at node-voltage level, minutes; its step is the same code on one coordinate), and how far a
    sequence's outputs may move with its batch (0: bit for bit; the SPICE rung puts several networks in one
    netlist, whose adaptive time step they share: 2.4e-13 measured on outputs of 0.14)."""

    model: object
    config: ChipConfig
    device: str | None = None
    step_overrides: dict = field(default_factory=dict)
    run_window: bool = True
    batch_atol: float = 0.0


def _cases() -> dict:
    from mapping.config import EnergyConfig, SpatialArray

    quiet = ChipConfig(settle_cycles=2.0, steps_per_cycle=4)
    return {
        "PhaseMacromodel": Case(_kuramoto, quiet),
        "PhaseDecode": Case(_kuramoto, quiet.replace(energy=EnergyConfig(phase="decode"),
                                                                   array=SpatialArray())),
        "STNOAmplitude": Case(_kuramoto, quiet.replace(device="spin-torque")),
        "RingCircuit": Case(lambda: _kuramoto(4), quiet.replace(device="ring-circuit"),
                            step_overrides={"heads": [0], "coordinates": [0]}, run_window=False),
        # the ladder's rungs: asked by device name on a ring chip (one head, one coordinate of SPICE)
        "SpiceRung": Case(lambda: _kuramoto(4), quiet, device="spice",
                          step_overrides={"heads": [0], "coordinates": [0]}, batch_atol=1e-10),
        "ClosedFormKuramoto": Case(_kuramoto, quiet, device="closed-form"),
        "ClosedFormSSA": Case(_ssa1d, ChipConfig(ssa=SSAConfig(settle_cycles=10.0, averaging_cycles=20.0)),
                              device="closed-form"),
        "SSAPairwise": Case(_ssa1d, ChipConfig(ssa=SSAConfig(settle_cycles=10.0, averaging_cycles=20.0))),
        "SSACollective": Case(_ssa1d, ChipConfig(ssa=SSAConfig(mode="collective", settle_cycles=10.0,
                                                               averaging_cycles=20.0))),
    }


CASES = _cases()
"""Backend class name -> :class:`Case`."""


def _registered_backends() -> list[tuple[str, type]]:
    """(class name, class) of every registered backend class, once each, by name."""
    classes = {cls for (kind, dev) in registered() for cls in backend_classes(kind, dev)}
    return sorted(((cls.__name__, cls) for cls in classes), key=lambda kc: kc[0])


parametrize_backend = pytest.mark.parametrize("key, cls", _registered_backends(),
                                              ids=[k for k, _ in _registered_backends()])


def _slice(inputs, b: int):
    """Sequence ``b`` of a batch of backend inputs (every array field sliced on its batch axis)."""
    B = inputs.theta.shape[0] if hasattr(inputs, "theta") else inputs.J.shape[0]
    return dataclasses.replace(inputs, **{f.name: getattr(inputs, f.name)[b:b + 1]
                                          for f in dataclasses.fields(inputs)
                                          if isinstance(getattr(inputs, f.name), np.ndarray)
                                          and getattr(inputs, f.name).shape[:1] == (B,)})


def _outputs(out) -> dict:
    """The array fields of a backend output (what must not depend on the batch)."""
    return {f.name: np.asarray(getattr(out, f.name)) for f in dataclasses.fields(out)
            if isinstance(getattr(out, f.name), np.ndarray)}


def check_backend_contract(chip, device: str | None, cls: type | None = None, step_overrides: dict | None = None,
                           run_window: bool = True, batch_atol: float = 0.0, B: int = 2):
    """The contract of a backend on ``chip`` (asked on ``device``; ``cls``: the class it must be).

    - the registry picks it for layer 0, and its ``describe`` names it;
    - one window of B sequences through ``prepare`` and ``step``: finite outputs (NaN only where
      ``step_overrides`` leave heads or coordinates out), never infinite;
    - the same seed gives a sequence the same outputs stepped alone as in the batch (bit for bit, or within
      ``batch_atol`` where the backend's solver couples the batch's networks);
    - where it is the chip's own backend (and ``run_window``), ``run`` scores the window (finite logits) and
      does not depend on the batch size either;
    - the chip's energy report: every registered term present for the chip's pass, each finite and >= 0, and
      their sum the headline.
    """
    from mapping.energy import TERMS

    backend = backend_for(chip, 0, device=device)
    if cls is not None:
        assert type(backend) is cls
    assert backend.describe(chip).name
    T = chip.max_tokens
    tokens = torch.randint(0, 256, (B, T), generator=torch.Generator().manual_seed(1))
    inputs, _ = backend.capture(chip.model, tokens, 0)
    settings = backend.prepare(chip, 0, **(step_overrides or {}))
    seeds = LayerSeeds.for_layer(7, 0)
    whole = _outputs(backend.step(settings, inputs, dataclasses.replace(seeds, sequence_ids=np.arange(B))))
    assert whole and not any(np.isinf(a).any() for a in whole.values())
    if step_overrides:
        assert all(np.isfinite(a).any() for a in whole.values())
    else:
        assert all(np.isfinite(a).all() for a in whole.values())
    for b in (B - 1,):  # the last sequence, stepped alone (sequence id B - 1, first in its own batch)
        alone = _outputs(backend.step(settings, _slice(inputs, b), dataclasses.replace(seeds,
                                                                                        sequence_ids=np.array([b]))))
        for name, a in alone.items():
            same = (np.array_equal(a[0], whole[name][b], equal_nan=True) if batch_atol == 0 else
                    np.allclose(a[0], whole[name][b], rtol=0, atol=batch_atol, equal_nan=True))
            assert same, f"{name} of sequence {b} depends on the batch"
    if device is None and run_window:
        r1 = run(chip, tokens, seed=3, progress=False, batch_size=1)
        rB = run(chip, tokens, seed=3, progress=False, batch_size=B)
        assert torch.equal(r1.logits, rB.logits)
        assert math.isfinite(float(r1.logits.float().mean()))
    e = energy_report(chip)
    charged = set(e["breakdown"])
    assert {n for n, t in TERMS.items() if t.when is None} <= charged
    assert all(math.isfinite(v) and v >= 0 for v in e["breakdown"].values())
    assert e["energy_per_token_chip_j"] == pytest.approx(sum(e["breakdown"].values()), rel=1e-12)


def test_every_registered_backend_has_a_contract_case():
    keys = {k for k, _ in _registered_backends()}
    assert keys == set(CASES), f"backends without a contract case: {sorted(keys - set(CASES))}; " \
                               f"cases without a backend: {sorted(set(CASES) - keys)}"


@parametrize_backend
def test_backend_contract(key, cls):
    case = CASES[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # regime and validity warnings of deliberately tiny chips
        chip = compile(case.model(), case.config)
        check_backend_contract(chip, case.device, cls, case.step_overrides, case.run_window, case.batch_atol)
