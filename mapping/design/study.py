"""Run a design search: Optuna's seeded samplers over a persistent study, trials evaluated by the sweep's runner.

The driver (the process running :func:`run_design`) is the only one that talks to the sampler and the study:

1. **Batches.** Trials are asked ``population`` at a time (NSGA-II: one generation), every trial of a batch is
   evaluated, then all are told in trial order.
2. **Sampling is a pure function of the stored trials.** Trial *n* is sampled on a throw-away in-memory copy
   of the trials stored before it, by a sampler seeded with ``SeedSequence([seed, n])``, and written to the
   study in one transaction (``Study.add_trial``) with its parameters and the sampler's attributes. What it
   samples depends only on the spec, the seed and the trials before *n* — never on the RNG's history in this
   process, the worker count or the order in which evaluations finished. The same spec and seed give the same
   trials with 1 or N workers, on a Dask cluster, and across an interruption.
3. **Evaluation** is a sweep point (:func:`mapping.sweep.compute_point`) on the sweep's executors (local
   processes, or a Dask scheduler; a lost worker is replaced and its points recomputed),
   with :func:`mapping.design.evaluate.trial_metrics` turning each trial's ``SimulationReport`` into its
   objectives on the worker.
4. **Resumption.** Trials live in the study's RDB storage (``DIR/study.db``, SQLite, by default). A driver
   stopped any way (Ctrl-C, ``kill -9``, a lost machine) is resumed by the same command: trials already told
   are kept, trials left RUNNING are evaluated with their stored parameters and told — none is lost, none is
   counted twice — and the batch goes on where it stopped (a trial is written whole or not at all).
5. **One driver per study.** The driver holds an exclusive lock on ``DIR/driver.lock`` for its life
   (:class:`mapping.design.driver.DriverLock`): a second driver on the folder is refused in one line, however
   close together the two start. On a shared RDB storage (``storage=``) the driver also records itself (host,
   pid, heartbeat) in the study, and a driver on another folder is refused while that one is alive (same host:
   its pid; another host: a heartbeat newer than :data:`LEASE_S`).
6. **Checks first.** Everything that needs no model is checked before a worker starts or a folder is made: the
   checkpoint, the token window and the split (:func:`mapping.sweep.run.check_inputs`), the output folder
   (:func:`mapping.sweep.run.check_out`); then the static probe of the space (:func:`check_space`).
"""

from __future__ import annotations

import json
import math
import os
import socket
import sys
import time
from pathlib import Path

from ..sweep.run import pid_alive
from ..sweep.spec import config_with
from .driver import DesignDirError, DriverLock, expand_env, kill_point, redact, storage_errors
from .spec import DesignSpec

__all__ = ["run_design", "rewrite_results", "check_space", "DesignDirError", "storage_url", "LEASE_S", "ROW_METRICS"]

META = "design.json"
LEASE_S = 300.0  # a driver on another host is presumed gone after this long without a heartbeat [s]
ROW_METRICS = ["bpc", "fidelity", "energy", "wall_time"]  # the sweep metric groups each trial computes
_MEASURED = ("wall_s", "chip_wall_s")  # measurements, not functions of the trial
_PROBE_MAX = 64  # designs the feasibility probe compiles at most


# ------------------------------------------------------------------------------------------ the model
def _model(checkpoint: str):
    """The model of ``checkpoint``, from the one per-process cache the sweep's points use too."""
    from ..sweep.point import cached_model

    return cached_model(checkpoint)[0]


def _window(spec: DesignSpec, model) -> int:
    return spec.tokens.window(spec.base.context_tokens or int(model.config.seq_len))


# ------------------------------------------------------------------------------------ feasibility probe
def _probe_params(spec: DesignSpec) -> list[dict]:
    """Corner designs: every combination of the ends of each range and every choice when there are at most
    :data:`_PROBE_MAX`; otherwise each field's extremes one at a time plus seeded random corners."""
    import itertools

    import numpy as np

    ext = [d.extremes() for d in spec.space]
    n = math.prod(len(e) for e in ext)
    if n <= _PROBE_MAX:
        return [dict(zip(spec.fields, combo)) for combo in itertools.product(*ext)]
    out = [{}] + [{d.field: v} for d in spec.space for v in d.extremes()]
    rng = np.random.default_rng([spec.seed, 7])
    while len(out) < _PROBE_MAX:
        out.append({d.field: e[int(rng.integers(len(e)))] for d, e in zip(spec.space, ext)})
    return out[:_PROBE_MAX]


def check_space(spec: DesignSpec, model=None) -> dict:
    """Refuse, before any trial, constraints on static metrics (area, latency, energy) that no corner of the
    space meets; returns {metric: best probe value}.

    The probe compiles each corner design with mismatch off (no simulation) and evaluates the static metrics
    with :func:`mapping.design.evaluate.static_metrics`. Area and latency are exact there; energy is charged a
    10 % margin (a trial's own energy uses the per-instance power draw). A probe is a check, not a proof: a
    space whose only feasible designs are interior (no corner meets the constraint) is refused too, with the
    best corner named so the user can see why.
    """
    from .evaluate import static_metrics

    static = [c for c in spec.constraints if c.metric != "bpc_loss"]
    if not static:
        return {}
    model = _model(spec.checkpoint) if model is None else model
    best: dict = {}
    seen = 0
    for params in _probe_params(spec):
        try:
            cfg = config_with(spec.base, params)  # a searched context_tokens: the corner's own windows
            T = spec.tokens.window(cfg.context_tokens or int(model.config.seq_len))
            m = static_metrics(cfg, model, T, checkpoint=spec.checkpoint)
        except (ValueError, TypeError):
            continue  # a corner the compiler refuses (an inert field): not a design
        seen += 1
        ok = True
        for c in static:
            v = m[c.metric]
            if c.metric == "energy_per_token_j":
                v = v * (0.9 if c.op == "<=" else 1.1)
            ok &= c.met(v)
        if ok:
            return {}
        for c in static:
            key = str(c)
            v = m[c.metric]
            if key not in best or c.violation(v) < c.violation(best[key][0]):
                best[key] = (v, params)
    if seen == 0:
        raise ValueError("no corner of [space] compiles on this model: every probe design was refused")
    lines = "; ".join(f"'{k}': the best corner has {v:.4g} ({', '.join(f'{f} = {x!r}' for f, x in p.items()) or 'the base chip'})"
                      for k, (v, p) in best.items())
    raise ValueError(f"the constraints cannot be met together by any of {seen} corner designs of [space]: {lines}")


# ---------------------------------------------------------------------------------------- the storage
def storage_url(out: Path, storage: str | None) -> str:
    """The study's storage as written in ``design.json`` and messages: an RDB URL as given (its ``${VAR}``
    placeholders kept, read from the environment only when the storage is opened), or ``sqlite:///DIR/study.db``."""
    if storage:
        return storage
    return f"sqlite:///{(Path(out) / 'study.db').resolve()}"


_redact = redact


def _prepare(spec: DesignSpec, out: Path, url: str, spec_text: str | None) -> dict:
    from oscsim import __version__

    from ..sweep.run import atomic_write_bytes

    p = out / META
    if p.exists():
        try:
            meta = json.loads(p.read_text())
        except (OSError, ValueError) as exc:  # a folder in its place, a cut or garbled file
            raise DesignDirError(f"{p} cannot be read ({exc}); resume from a good copy or use a new --out") from None
        if not isinstance(meta, dict):
            raise DesignDirError(f"{p} is damaged (not a JSON object); resume from a good copy or use a new --out")
        if meta.get("spec_hash") != spec.spec_hash:
            raise DesignDirError(f"{out} holds a design study of another spec (hash {meta.get('spec_hash')}; this spec "
                                 f"has {spec.spec_hash}); resume with the original spec or use a new --out")
        return meta
    meta = {"name": spec.name, "spec_hash": spec.spec_hash, "study_name": spec.study_name, "storage": _redact(url),
            "objectives": list(spec.objectives), "constraints": [str(c) for c in spec.constraints],
            "fields": list(spec.fields), "sampler": spec.sampler, "seed": spec.seed, "population": spec.population,
            "checkpoint": spec.checkpoint, "oscsim_version": __version__,
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if spec_text is not None:
        atomic_write_bytes(out / "spec.toml", spec_text.encode())
    atomic_write_bytes(p, json.dumps(meta, indent=1).encode())
    return meta


def _trial_seed(seed: int, number: int) -> int:
    import numpy as np

    return int(np.random.SeedSequence([seed, number]).generate_state(1)[0])


def _sampler(spec: DesignSpec, seed: int):
    import optuna

    # constraints reach both samplers through Trial.set_constraint (the trial's system attributes)
    if spec.sampler == "nsga2":
        return optuna.samplers.NSGAIISampler(population_size=spec.population, seed=seed)
    return optuna.samplers.TPESampler(n_startup_trials=spec.population, seed=seed)


def _ask(spec: DesignSpec, study, number: int, dists: dict) -> None:
    """Sample trial ``number`` on an in-memory replay of the stored trials and write it in one transaction."""
    import optuna
    from optuna.trial import TrialState, create_trial

    stored = study.get_trials(deepcopy=False)
    if len(stored) != number:
        raise DesignDirError(f"study {spec.study_name} holds {len(stored)} trials where this driver expected {number}: "
                             f"another process is writing to it")
    replay = optuna.create_study(directions=["minimize"] * len(spec.objectives),
                                 sampler=_sampler(spec, _trial_seed(spec.seed, number)))
    replay.add_trials(stored)
    replay.ask(dists)
    new = replay.get_trials(deepcopy=False)[-1]
    study.add_trial(create_trial(state=TrialState.RUNNING, params=new.params, distributions=new.distributions,
                                 system_attrs=new.system_attrs))


def _quiet_optuna():
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def _open_study(spec: DesignSpec, url: str):
    """The study in the storage at ``url`` (created if new), through Optuna's public API: the storage object is
    kept on the study's side (``study.oscsim_storage``, with ``study.oscsim_study_id``) to find a trial's id by
    its number."""
    import optuna

    with storage_errors(redact(url)):
        storage = optuna.storages.RDBStorage(expand_env(url))
        study = optuna.create_study(storage=storage, study_name=spec.study_name, load_if_exists=True,
                                    directions=["minimize"] * len(spec.objectives), sampler=_sampler(spec, spec.seed))
        attrs = study.user_attrs
        if "spec_hash" not in attrs:
            study.set_user_attr("spec_hash", spec.spec_hash)
            study.set_user_attr("objectives", list(spec.objectives))
            study.set_user_attr("fields", list(spec.fields))
        elif attrs["spec_hash"] != spec.spec_hash:
            raise DesignDirError(f"study {spec.study_name} in {redact(url)} belongs to spec {attrs['spec_hash']}")
        study.oscsim_storage = storage
        study.oscsim_study_id = storage.get_study_id_from_name(spec.study_name)
    return study


def _acquire(study) -> None:
    """The driver record of a shared storage (see the module notes, item 5)."""
    d = study.user_attrs.get("driver")
    me = {"host": socket.gethostname(), "pid": os.getpid(), "heartbeat": time.time()}
    if d and not (d["host"] == me["host"] and d["pid"] == me["pid"]):
        alive = (pid_alive(int(d["pid"])) if d["host"] == me["host"]
                 else time.time() - float(d["heartbeat"]) < LEASE_S)
        if alive:
            raise DesignDirError(f"study {study.study_name} is being driven by pid {d['pid']} on {d['host']} (one "
                                 f"driver per study keeps its trials deterministic); wait for it, or stop it and rerun")
    study.set_user_attr("driver", me)


def _release(study) -> None:
    study.set_user_attr("driver", None)


# ------------------------------------------------------------------------------------------- the loop
def _task(spec: DesignSpec, number: int, params: dict, config: dict) -> dict:
    return {"point_id": f"{spec.spec_hash}-t{number:06d}", "point_index": number, "params": {},
            "config": config, "noise_seed": spec.noise_seed, "checkpoint": spec.checkpoint,
            "tokens": {"windows": spec.tokens.windows, "seq_len": spec.tokens.seq_len, "split": spec.tokens.split},
            "metrics": ROW_METRICS, "spec_hash": spec.spec_hash}


#: The user attributes every told trial carries, each written (None where it has none) so that a trial told
#: again after a kill between two of its writes holds nothing of the earlier attempt.
_RESULT_KEYS = ("config_json", "metrics", "constraints", "error", "same_as", "measured", "not_simulated")


def _finish(spec: DesignSpec, study, number: int, result: dict) -> None:
    """Tell one trial: COMPLETE with its objectives, constraints and metrics, or FAIL with its error."""
    import optuna
    from optuna.trial import TrialState

    trial = optuna.trial.Trial(study, study.oscsim_storage.get_trial_id_from_study_id_trial_number(
        study.oscsim_study_id, number))
    result = dict(result)
    m = result.get("metrics")
    values = [m[o] for o in spec.objectives] if m is not None and not result.get("not_simulated") else None
    if values is not None and not all(math.isfinite(v) for v in values):
        result["error"] = f"non-finite objective(s) {dict(zip(spec.objectives, values))}"
        values = None
    for k in _RESULT_KEYS:
        trial.set_user_attr(k, result.get(k))
    kill_point("recording")
    if values is None:
        study.tell(trial, state=TrialState.FAIL)
        return
    for c, v in zip(spec.constraints, result["constraints"]):
        trial.set_constraint(str(c), v)
    study.tell(trial, values)


def run_design(spec: DesignSpec, out: str | Path, *, workers: int = 1, scheduler: str | None = None,
               storage: str | None = None, progress: bool | None = None, spec_text: str | None = None,
               security=None):
    """Run (or resume) a design search into ``out`` and return its trials table.

    Parameters
    ----------
    spec : DesignSpec
        From :func:`mapping.design.load_design_spec`.
    out : path
        Design folder: ``design.json``, ``spec.toml``, ``study.db`` (the default storage), ``driver.lock``,
        ``trials.parquet``, ``front.parquet``, ``report.json``, ``report.md``, ``plots/``. Resumed if it holds
        this spec's study; another spec's is refused (:class:`DesignDirError`), and so is a folder another
        driver holds.
    workers : int
        Local worker processes (spawned); 0 evaluates in this process. Ignored with ``scheduler``. The trials
        do not depend on it.
    scheduler : str, optional
        Address of a running ``dask.distributed`` scheduler (``tcp://`` or ``tls://``); trials are evaluated there.
    storage : str, optional
        An RDB URL (SQLAlchemy: ``sqlite:///path.db``, ``postgresql://user:${PGPASSWORD}@host/db``) instead of
        ``DIR/study.db``, e.g. to keep one study on a shared database. ``${VAR}`` is read from the environment
        when the storage is opened; ``design.json`` and every message show the URL with its password hidden.
    progress : bool, optional
        tqdm bar (trials, with the current front's size) on stderr; default: when stderr is a terminal.
    spec_text : str, optional
        The spec file's text, copied to ``out/spec.toml`` on creation.
    security : distributed.Security, optional
        The TLS settings of a ``tls://`` scheduler (:func:`mapping.sweep.executors.dask_security`); default:
        Dask's configuration (``distributed.comm.tls.*``).

    Returns
    -------
    pandas.DataFrame
        The trials table (:func:`mapping.design.results.trials_table`).
    """
    from ..sweep.executors import LocalWorkers
    from ..sweep.run import check_inputs, check_out

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"workers must be an integer >= 0 (0: in this process), got {workers!r}")
    check_inputs(spec)  # the checkpoint, the window, the split: from their files, before any process starts
    check_out(out)
    if storage:
        expand_env(storage)  # an unset ${VAR} refused now
    _quiet_optuna()
    # one set of local workers for every generation (a new pool per generation paid the workers' start-up each
    # time), started now: they import and load the model while this process does the same and probes the space
    pool = LocalWorkers(workers) if workers and not scheduler else None
    if pool is not None:
        pool.start(spec.checkpoint)
    try:
        return _run_design(spec, Path(out), workers, (scheduler, security), storage, progress, spec_text, pool)
    finally:
        if pool is not None:
            pool.close()


def _run_design(spec: DesignSpec, out: Path, workers: int, dask, storage, progress, spec_text, pool):
    from .results import write_results

    model = _model(spec.checkpoint)
    if spec.workloads is not None:  # a sub-study per workload (mapping.design.grid)
        return _run_grid(spec, out, workers, dask, storage, progress, spec_text, pool, model)
    T = _window(spec, model)
    check_space(spec, model)  # before any trial, and before the folder is made
    url = storage_url(out, storage)
    out.mkdir(parents=True, exist_ok=True)
    with DriverLock(out):
        _prepare(spec, out, url, spec_text)
        study = _open_study(spec, url)
        with storage_errors(redact(url)):
            if storage:
                _acquire(study)
            kill_point("claimed")
            try:
                _loop(spec, study, workers, dask, bool(storage), progress, pool)
            except KeyboardInterrupt:
                n = sum(t.state.is_finished() for t in study.get_trials(deepcopy=False))
                print(f"oscsim design: {n} of {spec.trials} trials are saved in {out} (rerun the same command to "
                      f"resume)", file=sys.stderr)
                raise
            if storage:
                _release(study)
            return write_results(study, spec, out, T=T)


def _ops():
    """This module's steps, handed to a workload study (:class:`mapping.design.grid.StudyOps`)."""
    from .grid import StudyOps

    return StudyOps(open_study=_open_study, ask=_ask, finish=_finish, acquire=_acquire,
                    row_metrics=tuple(ROW_METRICS), measured=_MEASURED)


def _run_grid(spec: DesignSpec, out: Path, workers: int, dask, storage, progress, spec_text, pool, model):
    """:func:`_run_design` of a spec with ``[workloads]``: each workload's space probed, its sub-study opened in
    the same storage, the rounds of :func:`mapping.design.grid.grid_loop`, the crossover map written."""
    from .grid import grid_loop, workload_spec, workload_studies, write_grid_results

    for w in spec.workloads.workloads():
        try:
            check_space(workload_spec(spec, w), model)
        except ValueError as exc:
            raise ValueError(f"workload {w.id}: {exc}") from None
    url = storage_url(out, storage)
    out.mkdir(parents=True, exist_ok=True)
    with DriverLock(out):
        _prepare(spec, out, url, spec_text)
        study = _open_study(spec, url)  # the parent: its spec hash guards the folder, its driver record the storage
        with storage_errors(redact(url)):
            subs = workload_studies(spec, url, _ops())
            if storage:
                _acquire(study)
            kill_point("claimed")
            try:
                grid_loop(spec, subs, workers, dask, study if storage else None, progress, pool, model, _ops())
            except KeyboardInterrupt:
                n = sum(t.state.is_finished() for _, _, s in subs for t in s.get_trials(deepcopy=False))
                print(f"oscsim design: {n} of {len(subs) * spec.workloads.trials} trials are saved in {out} (rerun "
                      f"the same command to resume)", file=sys.stderr)
                raise
            if storage:
                _release(study)
            return write_grid_results(spec, subs, out)


def _loop(spec: DesignSpec, study, workers: int, dask, shared: bool, progress, pool) -> None:
    """Ask, evaluate and tell batches until the study holds ``spec.trials`` finished trials."""
    from tqdm import tqdm  # the plain bar: tqdm.auto warns in notebooks without ipywidgets

    from optuna.trial import TrialState

    from .results import front_mask, trials_table

    dists = spec.distributions()
    P, N = spec.population, spec.trials
    if progress is None:
        progress = sys.stderr.isatty()
    done0 = sum(t.state.is_finished() for t in study.get_trials(deepcopy=False))
    bar = tqdm(total=max(N, done0), initial=done0, disable=not progress, desc=f"design {spec.name}", unit="trial",
               file=sys.stderr, dynamic_ncols=True)
    try:
        while True:
            trials = study.get_trials(deepcopy=False)
            running = [t for t in trials if t.state == TrialState.RUNNING]
            n = len(trials)
            if not running and n >= N:
                break
            b = (min(t.number for t in running) if running else n) // P
            for m in range(n, min((b + 1) * P, N)):  # ask the rest of the batch, each from its own seed
                _ask(spec, study, m, dists)
            kill_point("asked")
            results, batch = _evaluate_batch(spec, study, workers, dask, bar, pool)
            kill_point("evaluated")
            for k in sorted(results):  # told in trial order, whatever order they finished in
                _finish(spec, study, k, results[k])
                kill_point("told")
            if shared:
                _acquire(study)  # heartbeat
            if progress:
                df = trials_table(study, spec)
                bar.set_postfix_str(f"front {int(front_mask(df, spec).sum()) if len(df) else 0}")
            if len(results) < len(batch):
                raise RuntimeError(f"{len(batch) - len(results)} trial(s) of the batch came back without a result")
    finally:
        bar.close()


def _plan_batch(spec: DesignSpec, stored: list) -> tuple[dict, list, dict, dict]:
    """(results known without evaluation, tasks, {trial: config}, {config key: [trials]}) of the RUNNING trials.

    A design already evaluated (NSGA-II offspring can equal a parent) is not evaluated again: the same config and
    noise seed give the same row, so its result is copied (deterministic either way), naming the lowest-numbered
    finished trial of that design (the one that was evaluated, whichever of its copies were told before a kill);
    equal designs within the batch are evaluated once, by the first."""
    from optuna.trial import TrialState

    from ..config import config_to_dict

    batch = [t for t in stored if t.state == TrialState.RUNNING]
    known: dict = {}
    for t in sorted(stored, key=lambda t: t.number):
        if t.state.is_finished() and t.user_attrs.get("config_json") and t.user_attrs.get("metrics") is not None:
            known.setdefault(t.user_attrs["config_json"], t)
    results, tasks, configs, same = {}, [], {}, {}
    for t in sorted(batch, key=lambda t: t.number):
        if set(t.params) != set(spec.fields):
            results[t.number] = {"error": f"incomplete parameters {sorted(t.params)}; not evaluated"}
            continue
        try:
            cfg = config_with(spec.base, t.params)
        except (ValueError, TypeError) as exc:
            results[t.number] = {"error": f"not a valid chip config: {exc}"}
            continue
        tree = config_to_dict(cfg)
        key = json.dumps(tree, sort_keys=True)
        if key in known:
            src = known[key].user_attrs
            results[t.number] = {k: src[k] for k in ("config_json", "metrics", "constraints", "measured") if k in src}
            results[t.number]["same_as"] = known[key].number
            continue
        if key in same:  # an earlier trial of this batch: copied once it is evaluated
            same[key].append(t.number)
            continue
        same[key] = [t.number]
        configs[t.number] = cfg
        tasks.append(_task(spec, t.number, t.params, tree))
    return results, tasks, configs, same


def _evaluate_batch(spec: DesignSpec, study, workers: int, dask, bar, pool=None) -> tuple[dict, list]:
    """Evaluate the RUNNING trials of the current batch (on the sweep's executors); ({trial: result}, batch).

    ``dask``: (scheduler address or None, its ``distributed.Security`` or None)."""
    import functools

    from optuna.trial import TrialState

    from ..sweep.executors import run_tasks
    from ..sweep.point import compute_point
    from .evaluate import METRICS_KEY, trial_metrics

    stored = study.get_trials(deepcopy=False)
    batch = [t for t in stored if t.state == TrialState.RUNNING]
    results, tasks, configs, same = _plan_batch(spec, stored)

    def sink(row: dict) -> None:
        k = int(row["point_index"])
        res = {"config_json": row["config_json"], "measured": {c: row.get(c) for c in _MEASURED}}
        if row["status"] != "ok":
            res["error"] = str(row["error"])
        else:
            m = row[METRICS_KEY]
            res["metrics"] = m
            res["constraints"] = [c.violation(m[c.metric]) for c in spec.constraints]
        results[k] = res
        for j in same[row["config_json"]][1:]:  # a copy: the evaluated trial's result and measurements
            results[j] = {**res, "same_as": k}
        bar.update(len(same[row["config_json"]]))

    scheduler, security = dask if isinstance(dask, tuple) else (dask, None)
    run_tasks(tasks, workers, scheduler, sink, compute=functools.partial(compute_point, metrics_of=trial_metrics),
              pool=pool, security=security)
    return results, batch


def rewrite_results(spec: DesignSpec, out: str | Path, *, storage: str | None = None):
    """Write the tables, report and plots of a stored study again (e.g. after :func:`recheck_front`)."""
    from .results import write_results

    _quiet_optuna()
    url = storage_url(Path(out), storage)
    study = _open_study(spec, url)
    with storage_errors(redact(url)):
        if spec.workloads is not None:
            from .grid import workload_studies, write_grid_results

            return write_grid_results(spec, workload_studies(spec, url, _ops()), out)
        return write_results(study, spec, out)
