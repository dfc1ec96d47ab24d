"""Clear errors: shapes, NaN/inf, negative noise, bad dt, blow-ups, unknown options."""

import numba
import numpy as np
import pytest

from oscsim.engine import (
    RK4, CustomODE, Dopri5, EulerMaruyama, PhaseNetwork, SaveAt, SaveEvery, SaveSummary, SimulationError,
    StuartLandauNetwork, SubharmonicInjection, simulate,
)


def net(n=3, **kw):
    return PhaseNetwork(omega=np.zeros(n), coupling=np.ones((n, n)), **kw)


def test_mismatched_shapes():
    with pytest.raises(ValueError, match="omega"):
        PhaseNetwork(omega=np.zeros(4), coupling=np.ones((3, 3)))
    with pytest.raises(ValueError, match="coupling"):
        PhaseNetwork(omega=np.zeros(3), coupling=np.ones((3, 4)))
    with pytest.raises(ValueError, match="groups"):
        PhaseNetwork(omega=np.zeros((2, 3)), coupling=np.ones((5, 3, 3)))
    with pytest.raises(ValueError, match="y0"):
        simulate(net(), RK4(), 0, 1, 0.1, np.zeros((2, 4)))
    with pytest.raises(ValueError, match="y0: has 2 groups"):
        simulate(PhaseNetwork(omega=np.zeros((3, 3)), coupling=np.ones((3, 3))), RK4(), 0, 1, 0.1, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="harmonics"):
        net(harmonics=[1.0, 2.0, 3.0])


def test_nan_and_inf_parameters():
    with pytest.raises(ValueError, match="coupling: contains NaN"):
        PhaseNetwork(omega=np.zeros(2), coupling=[[0, np.nan], [1, 0]])
    with pytest.raises(ValueError, match="omega: contains NaN or inf"):
        PhaseNetwork(omega=[0, np.inf], coupling=np.ones((2, 2)))
    with pytest.raises(ValueError, match="y0: contains NaN"):
        simulate(net(), RK4(), 0, 1, 0.1, np.array([[0, np.nan, 0]]))


def test_negative_noise():
    with pytest.raises(ValueError, match="sigma: must be >= 0"):
        net(sigma=-0.1)
    with pytest.raises(ValueError, match="strength: must be >= 0"):
        SubharmonicInjection(-1.0)
    with pytest.raises(ValueError, match="sigma: must be >= 0"):
        StuartLandauNetwork(a=1j, b=-1, coupling=np.zeros((2, 2)), sigma=[0.1, -0.1])


@pytest.mark.parametrize("dt", [0.0, -0.1, np.nan, np.inf])
def test_bad_dt(dt):
    with pytest.raises(ValueError, match="dt"):
        simulate(net(), RK4(), 0, 1, dt, np.zeros((1, 3)))


def test_bad_times_and_saves():
    with pytest.raises(ValueError, match="t1"):
        simulate(net(), RK4(), 1, 1, 0.1, np.zeros((1, 3)))
    with pytest.raises(ValueError, match="SaveAt.ts: times must lie"):
        simulate(net(), RK4(), 0, 1, 0.1, np.zeros((1, 3)), save=SaveAt([0.5, 2.0]))
    with pytest.raises(ValueError, match="strictly increasing"):
        SaveAt([0.5, 0.2])
    with pytest.raises(ValueError, match="SaveEvery.k"):
        SaveEvery(0)
    with pytest.raises(ValueError, match="SaveSummary needs a fixed-step"):
        simulate(net(), Dopri5(), 0, 1, 0.1, np.zeros((1, 3)), save=SaveSummary())


def test_unknown_options_and_wrong_objects():
    with pytest.raises(ValueError, match="unknown option.*'method'.*save, seed, brownian_substeps"):
        simulate(net(), RK4(), 0, 1, 0.1, np.zeros((1, 3)), method="rk4")
    with pytest.raises(ValueError, match="solver"):
        simulate(net(), "rk4", 0, 1, 0.1, np.zeros((1, 3)))
    with pytest.raises(ValueError, match="model"):
        simulate({"omega": 1}, RK4(), 0, 1, 0.1, np.zeros((1, 3)))
    with pytest.raises(TypeError):
        Dopri5(rtol=1e-3, order=5)
    with pytest.raises(ValueError, match="rtol"):
        Dopri5(rtol=-1.0)


def test_noise_needs_stochastic_solver_and_seed():
    with pytest.raises(ValueError, match="RK4 is deterministic"):
        simulate(net(sigma=0.1), RK4(), 0, 1, 0.1, np.zeros((1, 3)), seed=0)
    with pytest.raises(ValueError, match="seed"):
        simulate(net(sigma=0.1), EulerMaruyama(), 0, 1, 0.1, np.zeros((1, 3)))


@numba.njit
def _blowup_rhs(t, y, p, dydt):
    dydt[0] = p[0] * y[0] * y[0]


def test_blowup_reports_time_and_group():
    """dy/dt = p y²: y(t) = y0 / (1 − p y0 t) blows up at t* = 1/(p y0); only group 2 does before t = 1."""
    params = np.array([[0.0], [0.1], [2.0]])
    model = CustomODE(rhs=_blowup_rhs, params=params, dim=1)
    with pytest.raises(SimulationError, match="group 2") as info:
        simulate(model, RK4(), 0.0, 1.0, 0.001, np.ones((3, 1)))
    assert info.value.group == 2 and info.value.groups == [2]
    assert 0.5 <= info.value.time <= 1.0


def test_custom_ode_rejects_plain_python():
    with pytest.raises(ValueError, match="njit"):
        CustomODE(rhs=lambda t, y, p, d: None, params=[1.0], dim=1)


def test_a_solver_whose_module_defines_no_step_is_refused_by_name():
    """Solver._step reads ``step`` from the solver's own module; a module without one is refused, naming the
    class and the module (this test module defines no ``step``)."""
    from dataclasses import dataclass

    from oscsim.engine.solvers.base import Solver

    @dataclass(frozen=True)
    class Stepless(Solver):
        pass

    with pytest.raises(NotImplementedError, match=r"Stepless: its module .*test_engine_errors defines no step"):
        Stepless()._step()
