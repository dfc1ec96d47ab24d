"""One seed, one answer: chip outputs do not depend on batch size or thread count; no silent backend paths."""

import numba
import numpy as np
import pytest
import torch

from mapping import ChipConfig, compile, run
from mapping.backends.integrate import integrate_phase
from mapping.seeds import stream_seeds
from oscsim import engine as E


@pytest.fixture(scope="module")
def windows():
    g = torch.Generator().manual_seed(3)
    return torch.randint(0, 256, (16, 12), generator=g)


@pytest.fixture(scope="module")
def kuramoto_chip():
    from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM

    torch.manual_seed(0)
    model = KuramotoLM(KuramotoConfig(k=8, n_heads=2, n_layers=2, seq_len=16))
    return compile(model, ChipConfig())  # the default: ring macromodel, noise, mismatch, quantisation


@pytest.fixture(scope="module")
def ssa_chips():
    from oscsim.nn.osn import OSNConfig, OSNModel

    torch.manual_seed(0)
    m1 = OSNModel(OSNConfig(d_model=16, n_heads=2, n_layers=1, seq_len=16, frequency="scalar"))
    torch.manual_seed(0)
    m2 = OSNModel(OSNConfig(d_model=16, n_heads=2, n_layers=1, seq_len=16))
    fast = dict(settle_cycles=5.0, averaging_cycles=40.0)
    return {"collective": compile(m1, _cfg("collective", fast)), "pairwise": compile(m2, _cfg("pairwise", fast))}


def _cfg(mode, fast):
    from mapping.config import config_from_dict

    return config_from_dict({"ssa": {"mode": mode, **fast}})


def _logits(chip, tokens, bs, seed=0):
    return run(chip, tokens, seed=seed, batch_size=bs, closed_form=False).logits


def test_kuramoto_chip_logits_identical_for_batch_sizes_1_3_16(kuramoto_chip, windows):
    ref = _logits(kuramoto_chip, windows, 16)
    for bs in (1, 3):
        assert torch.equal(_logits(kuramoto_chip, windows, bs), ref), f"batch_size={bs} changed the logits"
    # the noise is real: another seed gives other numbers
    assert not torch.equal(_logits(kuramoto_chip, windows, 16, seed=1), ref)


@pytest.mark.parametrize("mode", ["pairwise", "collective"])
def test_ssa_chip_logits_identical_for_batch_sizes(ssa_chips, windows, mode):
    chip = ssa_chips[mode]
    ref = _logits(chip, windows, 16)
    for bs in (1, 3):
        assert torch.equal(_logits(chip, windows, bs), ref), f"{mode}: batch_size={bs} changed the logits"
    assert not torch.equal(_logits(chip, windows, 16, seed=1), ref)


def test_chip_logits_identical_for_1_and_2_threads(kuramoto_chip, ssa_chips, windows):
    before = numba.get_num_threads(), torch.get_num_threads()
    try:
        out = {}
        for n in (1, 2):
            numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
            torch.set_num_threads(n)
            out[n] = [_logits(kuramoto_chip, windows, 5), _logits(ssa_chips["pairwise"], windows, 5)]
    finally:
        numba.set_num_threads(before[0])
        torch.set_num_threads(before[1])
    for a, b in zip(out[1], out[2]):
        assert torch.equal(a, b)


def test_engine_per_group_seeds_make_a_group_independent_of_its_batch():
    rng = np.random.default_rng(0)
    G, N = 5, 4
    omega = rng.normal(size=(G, N))
    C = rng.uniform(0, 0.5, (G, N, N))
    y0 = rng.uniform(0, 6, (G, N))
    seeds = stream_seeds(7, np.arange(G))
    full = E.simulate(E.PhaseNetwork(omega, C, sigma=0.3), E.EulerMaruyama(), 0.0, 1.0, 0.01, y0,
                      save=E.SaveSummary(), seed=seeds)
    for g in (0, 3):
        one = E.simulate(E.PhaseNetwork(omega[g:g + 1], C[g:g + 1], sigma=0.3), E.EulerMaruyama(), 0.0, 1.0, 0.01,
                         y0[g:g + 1], save=E.SaveSummary(), seed=seeds[g:g + 1])
        assert np.array_equal(one.y_final[0], full.y_final[g])
    # an int seed keys streams on the group index: moving a group changes its noise
    a = E.simulate(E.PhaseNetwork(omega, C, sigma=0.3), E.EulerMaruyama(), 0.0, 1.0, 0.01, y0, save=E.SaveSummary(),
                   seed=7)
    b = E.simulate(E.PhaseNetwork(omega[1:], C[1:], sigma=0.3), E.EulerMaruyama(), 0.0, 1.0, 0.01, y0[1:],
                   save=E.SaveSummary(), seed=7)
    assert not np.array_equal(a.y_final[1], b.y_final[0])


@pytest.mark.parametrize("seed, match", [(np.arange(3), r"shape \(5,\)"), (-1, r"\[0, 2\*\*64\)"),
                                         (np.array([1.5] * 5), "integer")])
def test_engine_rejects_bad_seeds(seed, match):
    net = E.PhaseNetwork(np.zeros((5, 2)), np.zeros((2, 2)), sigma=0.1)
    with pytest.raises(ValueError, match=match):
        E.simulate(net, E.EulerMaruyama(), 0.0, 1.0, 0.1, np.zeros((5, 2)), seed=seed)


def test_stream_seeds_are_distinct_and_validated():
    s = stream_seeds(0, np.arange(1000)[:, None], np.arange(4)[None, :])
    assert s.dtype == np.uint64 and len(np.unique(s)) == 4000
    assert stream_seeds(0, 1, 2) != stream_seeds(0, 2, 1)
    with pytest.raises(ValueError, match="seed"):
        stream_seeds(-1, 0)
    with pytest.raises(ValueError, match=">= 0"):
        stream_seeds(0, np.array([-1]))


def test_auto_backend_raises_when_the_engine_fails(monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("engine broken on purpose")

    monkeypatch.setattr(E, "simulate", broken)
    args = (np.zeros((2, 3)), np.zeros((2, 3, 3)), np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match="broken on purpose"):
        integrate_phase(*args, t1=1.0, n_steps=4, backend="auto")
    # the NumPy reference still runs when asked for by name
    assert integrate_phase(*args, t1=1.0, n_steps=4, backend="numpy").backend == "numpy"


def test_numpy_reference_per_group_seeds_independent_of_batch():
    rng = np.random.default_rng(1)
    om, C, y0 = rng.normal(size=(4, 3)), rng.uniform(0, 1, (4, 3, 3)), rng.uniform(0, 6, (4, 3))
    seeds = stream_seeds(3, np.arange(4))
    full = integrate_phase(om, C, y0, t1=1.0, n_steps=20, sigma=0.2, seed=seeds, backend="numpy")
    part = integrate_phase(om[2:], C[2:], y0[2:], t1=1.0, n_steps=20, sigma=0.2, seed=seeds[2:], backend="numpy")
    assert np.array_equal(full.y_final[2:], part.y_final)


def test_ssa_stream_families_stay_apart(monkeypatch):
    """An Adler cell and a collective network with the same indices never share a noise stream: each family's
    seeds carry its own purpose key (a mutant that drops the key reuses the other family's noise)."""
    import mapping.backends.ssa_collective as sco
    import mapping.backends.ssa_pairwise as spa
    from mapping.seeds import PURPOSE

    seen = {}
    real = spa.integrate_phase

    def spy(*a, seed=0, **k):
        seen["seed"] = np.asarray(seed)
        return real(*a, seed=seed, **k)

    monkeypatch.setattr(spa, "integrate_phase", spy)
    monkeypatch.setattr(sco, "integrate_phase", spy)
    keys = np.array([[0, 1], [2, 3], [4, 5]])
    common = dict(lam=0.1, settle_cycles=2.0, averaging_cycles=1.0, steps_per_cycle=4, k_max=2.0, sigma=0.01,
                  seed=7)
    sco.ssa1d_collective(np.zeros((3, 2)), np.full((3, 2, 2), 0.5), causal=True, group_keys=keys, **common)
    collective = seen.pop("seed")
    spa.adler_cells(np.zeros(3), np.full(3, 0.5), cell_keys=keys, backend="numpy", **common)
    adler = seen.pop("seed")
    for got, fam in ((collective, "collective"), (adler, "adler")):
        np.testing.assert_array_equal(got, stream_seeds(7, PURPOSE[fam], keys[:, 0], keys[:, 1]))
    assert not set(collective.tolist()) & set(adler.tolist())
    unkeyed = set(stream_seeds(7, keys[:, 0], keys[:, 1]).tolist())
    assert not unkeyed & set(collective.tolist()) and not unkeyed & set(adler.tolist())
