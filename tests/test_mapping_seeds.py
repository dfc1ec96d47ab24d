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
def short_windows():
    """Windows of 5 tokens: products of 5·B rows, whose rows MKL (on two threads) rounds differently for B = 1, 3
    and 16 on the project's machines (12-token windows happen to round alike there)."""
    g = torch.Generator().manual_seed(4)
    return torch.randint(0, 256, (16, 5), generator=g)


@pytest.fixture
def two_threads():
    """Torch and Numba on two threads, whatever the machine's default: a product's rows are then split over two
    threads, which is when a row's rounding depends on the rows around it."""
    before = numba.get_num_threads(), torch.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    torch.set_num_threads(2)
    yield
    numba.set_num_threads(before[0])
    torch.set_num_threads(before[1])


@pytest.fixture(scope="module")
def kuramoto_chip():
    from oscsim.nn.kuramoto import KuramotoConfig, KuramotoLM

    torch.manual_seed(0)
    model = KuramotoLM(KuramotoConfig(k=8, n_heads=2, n_layers=2, seq_len=16))
    return compile(model, ChipConfig())  # the default: ring macromodel, noise, mismatch, quantisation


@pytest.fixture(scope="module")
def ssa_chips():
    from oscsim.nn.osn import OSNConfig, OSNModel

    def model(frequency_scale=1.0, **kw):
        torch.manual_seed(0)
        m = OSNModel(OSNConfig(d_model=16, n_heads=2, n_layers=1, seq_len=16, **kw))
        with torch.no_grad():
            m.blocks[0].attn.w_omega.weight.mul_(frequency_scale)
        return m

    fast = dict(settle_cycles=5.0, averaging_cycles=40.0)
    # "-fast": sequences that need more than the configured 4 steps per cycle, each its own number (5 λ × the
    # sequence's fastest rate: 4..6 for the collective chip at x30 frequencies; 6..8 for the pairwise cells at
    # x3 frequencies and coupling 0.1 f0, as a locked cell's rate is below 2 λ K = 4π × coupling fraction)
    return {"collective": compile(model(frequency="scalar"), _cfg("collective", fast)),
            "pairwise": compile(model(), _cfg("pairwise", fast)),
            "collective-fast": compile(model(30.0, frequency="scalar"), _cfg("collective", fast)),
            "pairwise-fast": compile(model(3.0), _cfg("pairwise", fast, fraction=0.1))}


def _cfg(mode, fast, fraction=None):
    from mapping.config import config_from_dict

    extra = {} if fraction is None else {"coupling": {"fraction": fraction}}
    return config_from_dict({"ssa": {"mode": mode, **fast}, **extra})


def _logits(chip, tokens, bs, seed=0):
    return run(chip, tokens, seed=seed, batch_size=bs, closed_form=False).logits


def _assert_batch_sizes_agree(chip, tokens, what):
    ref = _logits(chip, tokens, 16)
    for bs in (1, 3):
        assert torch.equal(_logits(chip, tokens, bs), ref), f"{what}: batch_size={bs} changed the logits"
    return ref


def test_kuramoto_chip_logits_identical_for_batch_sizes_1_3_16(kuramoto_chip, windows, short_windows, two_threads):
    ref = _assert_batch_sizes_agree(kuramoto_chip, windows, "12-token windows")
    _assert_batch_sizes_agree(kuramoto_chip, short_windows, "5-token windows")
    # the noise is real: another seed gives other numbers
    assert not torch.equal(_logits(kuramoto_chip, windows, 16, seed=1), ref)


@pytest.mark.parametrize("mode", ["pairwise", "collective"])
def test_ssa_chip_logits_identical_for_batch_sizes(ssa_chips, windows, short_windows, two_threads, mode):
    """A sequence's logits do not depend on the other sequences of its batch through the model's own matrix
    products (5-token windows on two threads fail on the pre-fix code on the project's 2-core machines)."""
    chip = ssa_chips[mode]
    ref = _assert_batch_sizes_agree(chip, windows, f"{mode}, 12-token windows")
    _assert_batch_sizes_agree(chip, short_windows, f"{mode}, 5-token windows")
    assert not torch.equal(_logits(chip, windows, 16, seed=1), ref)


@pytest.mark.parametrize("mode", ["pairwise", "collective"])
def test_ssa_chip_sequences_integrate_with_their_own_steps(ssa_chips, windows, mode):
    """Nor through the integration step: on the "-fast" chips the batch's fastest sequence used to set the step
    of all (fails with the step taken over the batch, whatever the torch side)."""
    _assert_batch_sizes_agree(ssa_chips[f"{mode}-fast"], windows, f"{mode}, own integration steps")


def test_chip_logits_identical_for_1_and_2_threads(kuramoto_chip, ssa_chips, windows, short_windows):
    before = numba.get_num_threads(), torch.get_num_threads()
    try:
        out = {}
        for n in (1, 2):
            numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
            torch.set_num_threads(n)
            out[n] = [_logits(chip, w, 5) for chip in (kuramoto_chip, ssa_chips["pairwise"])
                      for w in (windows, short_windows)]
    finally:
        numba.set_num_threads(before[0])
        torch.set_num_threads(before[1])
    for a, b in zip(out[1], out[2]):
        assert torch.equal(a, b)
    assert torch.get_num_threads() == before[1]  # chip inference restores the caller's torch threads


def test_a_failing_chip_simulation_raises_and_leaves_no_sequence_thread(kuramoto_chip, short_windows, monkeypatch):
    """Chip inference runs each sequence's forward pass in its own (parked) thread: an engine failure in the
    middle of a batch is raised to the caller and every parked sequence unwinds."""
    import threading

    def broken(*a, **k):
        raise RuntimeError("engine broken on purpose")

    monkeypatch.setattr(E, "simulate", broken)
    with pytest.raises(RuntimeError, match="broken on purpose"):
        _logits(kuramoto_chip, short_windows, 16)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("chip-sequence-")]


def test_stno_amplitude_network_steps_are_its_own():
    """With per-network seeds each spin-torque network integrates with the step of its own fastest rate: a
    strongly coupled neighbour in the same call changes nothing."""
    from mapping.backends.stno import STNOAmplitudeModel

    am = STNOAmplitudeModel.from_preset(noise=True, temperature_k=300.0, steps_per_cycle=4)
    rng = np.random.default_rng(1)
    N = 6
    C = rng.uniform(0, 0.05, (2, N, N))
    C[1] *= 40 * am.saturation / C[1].sum(-1).max()  # row sums far above the free-running rates
    om, y0 = rng.normal(0, 0.01, (2, N)), rng.uniform(0, 6, (2, N))
    seeds = stream_seeds(5, np.arange(2))
    ts = np.array([0.5, 1.0])
    y_full, s_full = am.integrate(om, C, y0, t1=2.0, seed=seeds, sample_times=ts)
    y_one, s_one = am.integrate(om[:1], C[:1], y0[:1], t1=2.0, seed=seeds[:1], sample_times=ts)
    assert np.array_equal(y_full[:1], y_one) and np.array_equal(s_full[:, :1], s_one)


def test_per_group_step_counts_equal_each_group_alone():
    """integrate_phase with per-group step counts (the SSA chips' own steps per sequence): each group's numbers
    are those of the group run alone with its count; an int seed is refused (streams keyed on position)."""
    rng = np.random.default_rng(2)
    om, C, y0 = rng.normal(size=(3, 4)), rng.uniform(0, 0.5, (3, 4, 4)), rng.uniform(0, 6, (3, 4))
    seeds = stream_seeds(9, np.arange(3))
    n = np.array([40, 55, 40])
    full = integrate_phase(om, C, y0, t1=2.0, n_steps=n, sigma=0.2, seed=seeds, t_start=1.0)
    for g in range(3):
        one = integrate_phase(om[g:g + 1], C[g:g + 1], y0[g:g + 1], t1=2.0, n_steps=int(n[g]), sigma=0.2,
                              seed=seeds[g:g + 1], t_start=1.0)
        assert np.array_equal(full.y_final[g], one.y_final[0]) and np.array_equal(full.coherence[g], one.coherence[0])
    with pytest.raises(ValueError, match="per-group seeds"):
        integrate_phase(om, C, y0, t1=2.0, n_steps=n, seed=1, t_start=1.0)
    with pytest.raises(ValueError, match="trajectory"):
        integrate_phase(om, C, y0, t1=2.0, n_steps=n, seed=seeds, save_every=2)


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
