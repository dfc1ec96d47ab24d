"""Sweep specification: a base chip configuration, axes over any of its fields, seeds, metrics (TOML).

A sweep is the Cartesian product of its grid axes, its random sample (if any), the mismatch seeds and the
noise seeds (innermost). Every point's :class:`~mapping.config.ChipConfig` is built, and so validated, when
the spec is loaded, before any work starts: a field that does not exist, an empty axis or a value the
configuration refuses (a negative noise, 30 coupler bits) is an error naming the field.

Fields are addressed by their dotted name in the nested form of :func:`mapping.config.config_to_dict`
(``coupling.bits``, ``readout.noise_rad``, ``settle_cycles``, ``device``...), so a field added to
``ChipConfig`` later can be swept without a change here.

Layout of a spec file (see ``examples/sweep-small.toml``)::

    name = "small"                      # label of the sweep
    checkpoint = "kuramoto-tiny"        # bundled name or checkpoint folder (relative to the spec file)
    metrics = ["bpc", "fidelity", "energy", "wall_time"]
    chip = "chip.toml"                  # base config: a TOML path, or an inline [chip] table

    [tokens]                            # evaluation tokens: the bundled Shakespeare corpus
    windows = 4                         # non-overlapping windows from the start of the split
    seq_len = 64                        # tokens per window (default: the model's seq_len)
    split = "valid"                     # valid | test

    [axes]                              # grid axes; exactly one of values / linspace / logspace each
    "readout.noise_rad" = { logspace = [1e-3, 1e-1, 3] }   # [start, stop, num]: the values, not exponents
    "coupling.bits" = { values = [4, 6, "none"] }         # "none" -> None (TOML has no null)
    "settle_cycles" = { linspace = [2.0, 8.0, 4] }

    [sample]                            # optional seeded random sample, crossed with the grid
    n = 8
    seed = 0
    [sample.fields]
    "coupling.spread" = { uniform = [0.0, 0.1] }         # also loguniform = [lo, hi], int = [lo, hi]
    "device" = { choice = ["ideal", "ring-macromodel"] } # (inclusive), choice = [...]: mapping.sweep.distributions

    [seeds]
    noise = [0, 1]                      # noise seed of mapping.run (a run parameter, not a config field)
    mismatch = [0, 1]                   # sets the config field mismatch_seed
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..config import ChipConfig, config_from_dict, config_to_dict, load_config, read_toml
from .distributions import Distribution, parse_distribution

__all__ = ["Axis", "Sample", "TokenSpec", "SweepPoint", "SweepSpec", "load_spec", "spec_from_dict",
           "METRIC_GROUPS", "NOISE_SEED", "base_config", "token_spec", "checkpoint_path", "config_with",
           "check_field", "normalise_value", "none_value", "is_int", "canonical", "set_field", "check_spec_table"]

#: Column name of the noise seed (an argument of :func:`mapping.run`, not a config field).
NOISE_SEED = "noise_seed"
#: Metric groups a spec may ask for, and the columns each produces (per-layer and energy-term columns are
#: named after the layers and the terms of :func:`mapping.energy_report`, whatever they are).
METRIC_GROUPS = {
    "bpc": "bpc_chip, bpc_closed_form, bpc_difference [bits per character]",
    "fidelity": "layer<i>_rel_error, layer<i>_cosine, layer<i>_increment_rel_error, layer<i>_phase_error_rad "
                "(means over heads), mean_layer_rel_error",
    "energy": "energy_chip_j_per_token, energy_gpu_j_per_token, energy_<term>_j per breakdown term [J/token]",
    "wall_time": "wall_s (point), chip_wall_s (chip simulation only) [s]; not reproducible by nature",
}
_SPLITS = ("valid", "test")
_GRID_KINDS = ("values", "linspace", "logspace")
_TOP_KEYS = ("name", "checkpoint", "metrics", "chip", "tokens", "axes", "sample", "seeds")
_MAX_POINTS = 100_000


def none_value(v):
    """TOML has no null: the string 'none' (any case) stands for None, as in chip configs."""
    return None if isinstance(v, str) and v.lower() == "none" else v


def is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


# ------------------------------------------------------------------------------------------ field lookup
def _field_type(path: str) -> str:
    """The annotation (a string) of a dotted field of ChipConfig, walking nested dataclasses."""
    cls: Any = ChipConfig
    base = ChipConfig()
    ann = ""
    for part in path.split("."):
        fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
        if part not in fields:
            raise KeyError(part)
        ann = str(fields[part].type)
        base = getattr(base, part)
        cls = type(base)
    return ann


def check_field(path: str, base: dict, where: str) -> None:
    """Refuse a dotted name that is not a leaf field of the chip configuration."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"{where}: field names must be non-empty strings, got {path!r}")
    node: Any = base
    done = []
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            valid = sorted(node) if isinstance(node, dict) else []
            prefix = ".".join(done)
            raise ValueError(f"{where}: unknown chip config field {path!r}"
                             + (f" (no {part!r} in {prefix or 'the top level'}; valid there: {', '.join(valid)})"
                                if valid else f" ({prefix} is not a table)"))
        node = node[part]
        done.append(part)
    if isinstance(node, dict):
        raise ValueError(f"{where}: {path!r} is a section, not a field; sweep one of its fields "
                         f"({', '.join(path + '.' + k for k in sorted(node))})")


def normalise_value(path: str, value):
    """'none' -> None; an int for a float-only field -> float (so 0 and 0.0 are one point)."""
    value = none_value(value)
    if isinstance(value, np.generic):
        value = value.item()
    try:
        ann = _field_type(path)
    except KeyError:
        return value
    if is_int(value) and "float" in ann and "int" not in ann:
        return float(value)
    if isinstance(value, float) and "int" in ann and "float" not in ann and value.is_integer():
        return int(value)  # linspace over an integer field (e.g. coupling.bits)
    return value


def set_field(tree: dict, path: str, value) -> None:
    parts = path.split(".")
    node = tree
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = value


# --------------------------------------------------------------------------------------------- classes
@dataclass(frozen=True, kw_only=True)
class Axis:
    """A grid axis: one chip config field and its values.

    Attributes
    ----------
    field : str
        Dotted name of a :class:`~mapping.config.ChipConfig` field.
    values : tuple
        Values in sweep order (at least one, no repeats).
    """

    field: str
    values: tuple

    def __post_init__(self):
        if not isinstance(self.values, tuple) or len(self.values) == 0:
            raise ValueError(f"axes.\"{self.field}\" is empty: give at least one value")
        keys = [json.dumps(v, sort_keys=True) for v in self.values]
        if len(set(keys)) != len(keys):
            raise ValueError(f"axes.\"{self.field}\" repeats a value: {list(self.values)}")


@dataclass(frozen=True, kw_only=True)
class Sample:
    """A seeded random sample over several fields at once (drawn when the spec is loaded).

    Attributes
    ----------
    n : int
        Number of draws, ≥ 1.
    seed : int
        Seed of the draw (numpy ``default_rng``), ≥ 0.
    fields : tuple of (str, Distribution)
        (dotted field, its distribution: :mod:`mapping.sweep.distributions`, the grammar a design search's space
        uses too).
    """

    n: int
    seed: int
    fields: tuple

    def __post_init__(self):
        if not is_int(self.n) or not (1 <= self.n <= _MAX_POINTS):
            raise ValueError(f"sample.n must be an integer in [1, {_MAX_POINTS}], got {self.n!r}")
        if not is_int(self.seed) or self.seed < 0:
            raise ValueError(f"sample.seed must be a non-negative integer, got {self.seed!r}")
        if not self.fields:
            raise ValueError("sample.fields is empty: name at least one field and its distribution")
        for name, d in self.fields:
            if not isinstance(d, Distribution):
                raise ValueError(f'sample.fields."{name}": expected a Distribution, got {type(d).__name__}')

    def draw(self) -> list[dict]:
        """The n draws, each a {field: value} dict; the same spec always gives the same draws."""
        rng = np.random.default_rng(self.seed)
        out = [dict() for _ in range(self.n)]
        for name, d in self.fields:  # field by field: adding a field leaves the others' draws alone
            for row, x in zip(out, d.draw(rng, self.n)):
                row[name] = normalise_value(name, x)
        return out


@dataclass(frozen=True, kw_only=True)
class TokenSpec:
    """Evaluation tokens: ``windows`` non-overlapping windows of ``seq_len`` bytes from the start of a split
    of the bundled Shakespeare corpus (:func:`oscsim.data.eval_windows`).

    Attributes
    ----------
    windows : int
        Number of windows, ≥ 1.
    seq_len : int or None
        Tokens per window, ≥ 2; None: the model's ``seq_len``.
    split : {'valid', 'test'}
    """

    windows: int = 4
    seq_len: int | None = None
    split: str = "valid"

    def __post_init__(self):
        if not is_int(self.windows) or not (1 <= self.windows <= 100_000):
            raise ValueError(f"tokens.windows must be an integer in [1, 100000], got {self.windows!r}")
        if self.seq_len is not None and (not is_int(self.seq_len) or not (2 <= self.seq_len <= 1_000_000)):
            raise ValueError(f"tokens.seq_len must be an integer >= 2 or 'none' (the model's), got {self.seq_len!r}")
        if self.split not in _SPLITS:
            raise ValueError(f"tokens.split must be one of {', '.join(_SPLITS)}, got {self.split!r}")

    def window(self, context: int) -> int:
        """The tokens per window on a chip built for ``context`` tokens (its ``context_tokens``, or the model's
        ``seq_len`` when that is None): ``seq_len``, or the context when None; a longer window is refused (the one
        place this is checked)."""
        T = self.seq_len or int(context)
        if T > int(context):
            raise ValueError(f"tokens.seq_len = {T} is longer than the chip's context ({context}: context_tokens, "
                             f"or the model's seq_len); at most {context}")
        return T


@dataclass(frozen=True, kw_only=True)
class SweepPoint:
    """One point of a sweep.

    Attributes
    ----------
    index : int
        Position in the sweep order.
    point_id : str
        16 hex digits of SHA-256 over the checkpoint, the tokens, the full config and the noise seed.
    params : dict
        The swept values: {dotted field: value} plus ``noise_seed``.
    config : ChipConfig
    noise_seed : int
    """

    index: int
    point_id: str
    params: dict
    config: ChipConfig
    noise_seed: int


def canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True, kw_only=True)
class SweepSpec:
    """A validated sweep (see the module notes for the TOML layout).

    Attributes
    ----------
    name : str
    checkpoint : str
        Bundled checkpoint name or folder.
    tokens : TokenSpec
    base : ChipConfig
        The configuration every point starts from.
    axes : tuple of Axis
        Grid axes (may be empty when a sample is given).
    sample : Sample or None
    noise_seeds : tuple of int
        Noise seeds of :func:`mapping.run` (at least one).
    mismatch_seeds : tuple of int or None
        Values of ``mismatch_seed``; None keeps the base config's (or an axis's).
    metrics : tuple of str
        Metric groups (keys of :data:`METRIC_GROUPS`).
    """

    name: str
    checkpoint: str
    tokens: TokenSpec
    base: ChipConfig
    axes: tuple = ()
    sample: Sample | None = None
    noise_seeds: tuple = (0,)
    mismatch_seeds: tuple | None = None
    metrics: tuple = tuple(METRIC_GROUPS)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.checkpoint, str) or not self.checkpoint:
            raise ValueError(f"checkpoint must be a bundled name or a folder, got {self.checkpoint!r}")
        if not isinstance(self.base, ChipConfig):
            raise ValueError(f"base must be a ChipConfig, got {type(self.base).__name__}")
        for what, seeds in (("seeds.noise", self.noise_seeds), ("seeds.mismatch", self.mismatch_seeds)):
            if seeds is None:
                continue
            if not isinstance(seeds, tuple) or len(seeds) == 0:
                raise ValueError(f"{what} is empty: give at least one seed")
            if not all(is_int(s) and s >= 0 for s in seeds):
                raise ValueError(f"{what} must be non-negative integers, got {list(seeds)}")
            if len(set(seeds)) != len(seeds):
                raise ValueError(f"{what} repeats a seed: {list(seeds)}")
        bad = [m for m in self.metrics if m not in METRIC_GROUPS]
        if bad or not self.metrics:
            raise ValueError(f"metrics must be a non-empty list of {', '.join(METRIC_GROUPS)}; got {list(self.metrics)}")
        if (not self.axes and self.sample is None and len(self.noise_seeds) == 1
                and (self.mismatch_seeds is None or len(self.mismatch_seeds) == 1)):
            raise ValueError("the sweep has no axis: give [axes], a [sample] or several seeds")
        base = config_to_dict(self.base)
        names = [a.field for a in self.axes] + ([f for f, _ in self.sample.fields] if self.sample else [])
        if self.mismatch_seeds is not None:
            names.append("mismatch_seed")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"field(s) {', '.join(dup)} swept twice (axes, sample fields and seeds.mismatch "
                             f"must name different fields)")
        for a in self.axes:
            check_field(a.field, base, f'axes.\"{a.field}\"')
        if self.sample:
            for f, _ in self.sample.fields:
                check_field(f, base, f'sample.fields.\"{f}\"')
        n = self.n_points
        if n > _MAX_POINTS:
            raise ValueError(f"the sweep has {n} points, more than {_MAX_POINTS}; split it")
        object.__setattr__(self, "_points", self._build_points())

    @property
    def swept_fields(self) -> tuple:
        """Config fields that vary, in column order (grid axes, sample fields, mismatch_seed)."""
        out = [a.field for a in self.axes]
        if self.sample:
            out += [f for f, _ in self.sample.fields]
        if self.mismatch_seeds is not None:
            out.append("mismatch_seed")
        return tuple(out)

    @property
    def n_points(self) -> int:
        n = math.prod(len(a.values) for a in self.axes) * (self.sample.n if self.sample else 1)
        return n * len(self.mismatch_seeds or (None,)) * len(self.noise_seeds)

    def _build_points(self) -> tuple:
        base = config_to_dict(self.base)
        draws = self.sample.draw() if self.sample else [{}]
        grid = itertools.product(*[[(a.field, v) for v in a.values] for a in self.axes])
        mis = [{"mismatch_seed": s} for s in self.mismatch_seeds] if self.mismatch_seeds is not None else [{}]
        tok = dataclasses.asdict(self.tokens)
        points, seen = [], {}
        for combo, draw, m, seed in itertools.product(list(grid), draws, mis, self.noise_seeds):
            params = {**dict(combo), **draw, **m}
            tree = json.loads(json.dumps(base))  # deep copy of plain data
            for f, v in params.items():
                set_field(tree, f, v)
            try:
                cfg = config_from_dict(tree)
            except (ValueError, TypeError) as exc:
                shown = ", ".join(f"{k} = {v!r}" for k, v in params.items())
                raise ValueError(f"point {len(points)} ({shown}) is not a valid chip config: {exc}") from None
            full = config_to_dict(cfg)
            pid = hashlib.sha256(canonical({"checkpoint": self.checkpoint, "tokens": tok, "config": full,
                                             NOISE_SEED: seed}).encode()).hexdigest()[:16]
            if pid in seen:
                raise ValueError(f"points {seen[pid]} and {len(points)} are the same chip and seed "
                                 f"({params}); remove the duplicate axis value")
            seen[pid] = len(points)
            points.append(SweepPoint(index=len(points), point_id=pid, params={**params, NOISE_SEED: seed},
                                     config=cfg, noise_seed=seed))
        return tuple(points)

    @property
    def points(self) -> tuple:
        """Every point, built and validated when the spec was made."""
        return self._points

    @property
    def spec_hash(self) -> str:
        """SHA-256 (16 hex digits) over the ordered point ids and the metrics: two specs with the same hash
        compute the same table (comments and formatting of the file do not matter)."""
        return hashlib.sha256(canonical({"points": [p.point_id for p in self.points],
                                          "metrics": list(self.metrics)}).encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------ parse
def check_spec_table(data, valid_keys, what: str) -> None:
    """Refuse a spec that is not a table or has keys outside ``valid_keys`` (``what``: "sweep", "design")."""
    if not isinstance(data, dict):
        raise ValueError(f"a {what} spec must be a table, got {type(data).__name__}")
    unknown = sorted(set(data) - set(valid_keys))
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)} in the {what} spec; valid: {', '.join(valid_keys)}")


def base_config(chip, root: str | Path = ".") -> ChipConfig:
    """The base chip of a spec (sweeps and design searches): ``chip`` is a TOML path (relative to ``root``) or an
    inline ``[chip]`` table; a refused field names the table."""
    if isinstance(chip, str):
        p = Path(chip) if Path(chip).is_absolute() else Path(root) / chip
        return load_config(p)
    if isinstance(chip, dict):
        try:
            return config_from_dict(chip)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"[chip]: {exc}") from None
    raise ValueError(f"chip must be a TOML path or an inline [chip] table, got {chip!r}")


def token_spec(tok) -> TokenSpec:
    """The ``[tokens]`` table of a spec as a :class:`TokenSpec` (unknown keys refused)."""
    if not isinstance(tok, dict):
        raise ValueError(f"[tokens] must be a table, got {tok!r}")
    bad = sorted(set(tok) - {f.name for f in dataclasses.fields(TokenSpec)})
    if bad:
        raise ValueError(f"unknown key(s) {', '.join(bad)} in [tokens]; valid: windows, seq_len, split")
    return TokenSpec(**{k: none_value(v) for k, v in tok.items()})


def checkpoint_path(ckpt, root: str | Path = ".") -> str:
    """A spec's ``checkpoint``: a bundled name, or a folder (relative to ``root``) made absolute."""
    if not isinstance(ckpt, str) or not ckpt:
        raise ValueError(f"checkpoint must be a bundled name or a folder, got {ckpt!r}")
    if not Path(ckpt).is_absolute() and (Path(root) / ckpt).is_dir():
        return str((Path(root) / ckpt).resolve())
    return ckpt


def config_with(base: ChipConfig, params: dict) -> ChipConfig:
    """``base`` with the dotted ``params`` set ({"coupling.bits": 4, ...}), built and so validated by the config."""
    tree = config_to_dict(base)
    for f, v in params.items():
        set_field(tree, f, normalise_value(f, v))
    return config_from_dict(tree)


def _grid_axis(name: str, d, base: dict) -> Axis:
    where = f'axes.\"{name}\"'
    check_field(name, base, where)
    if isinstance(d, list):  # shorthand: "coupling.bits" = [4, 6, 8]
        d = {"values": d}
    if not isinstance(d, dict):
        raise ValueError(f"{where} must be a table with one of {', '.join(_GRID_KINDS)}, got {d!r}")
    kinds = [k for k in d if k in _GRID_KINDS]
    unknown = sorted(set(d) - set(_GRID_KINDS))
    if unknown or len(kinds) != 1:
        raise ValueError(f"{where} must have exactly one of {', '.join(_GRID_KINDS)}; got keys {sorted(d)}")
    kind = kinds[0]
    arg = d[kind]
    if kind == "values":
        if not isinstance(arg, list):
            raise ValueError(f"{where}: values must be a list, got {arg!r}")
        vals = arg
    else:
        if (not isinstance(arg, list) or len(arg) != 3 or not is_int(arg[2])
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in arg[:2])):
            raise ValueError(f"{where}: {kind} takes [start, stop, num] with an integer num, got {arg!r}")
        start, stop, num = float(arg[0]), float(arg[1]), arg[2]
        if num < 1:
            raise ValueError(f"{where} is empty: {kind} num must be >= 1, got {num}")
        if not (math.isfinite(start) and math.isfinite(stop)):
            raise ValueError(f"{where}: {kind} start and stop must be finite, got {arg!r}")
        if kind == "linspace":
            vals = np.linspace(start, stop, num).tolist()
        else:
            if start <= 0 or stop <= 0:
                raise ValueError(f"{where}: logspace start and stop are the values (not exponents) and must be "
                                 f"> 0, got {arg!r}")
            vals = np.geomspace(start, stop, num).tolist()
    if len(vals) == 0:
        raise ValueError(f"{where} is empty: give at least one value")
    return Axis(field=name, values=tuple(normalise_value(name, v) for v in vals))


def _ints(what: str, v) -> tuple:
    if not isinstance(v, list):
        raise ValueError(f"{what} must be a list of non-negative integers, got {v!r}")
    return tuple(v)


def spec_from_dict(data: dict, *, root: str | Path = ".") -> SweepSpec:
    """Build a :class:`SweepSpec` from the parsed TOML (``root``: folder relative paths are taken from)."""
    check_spec_table(data, _TOP_KEYS, "sweep")
    root = Path(root)
    base = base_config(data.get("chip", {}), root)
    base_tree = config_to_dict(base)
    tokens = token_spec(data.get("tokens", {}))
    axes_d = data.get("axes", {})
    if not isinstance(axes_d, dict):
        raise ValueError(f"[axes] must be a table of field = {{values|linspace|logspace = ...}}, got {axes_d!r}")
    axes = tuple(_grid_axis(k, v, base_tree) for k, v in axes_d.items())
    sample = None
    if "sample" in data:
        s = data["sample"]
        if not isinstance(s, dict) or set(s) - {"n", "seed", "fields"}:
            raise ValueError(f"[sample] takes n, seed and a [sample.fields] table; got {s!r}")
        fields = []
        for name, d in (s.get("fields") or {}).items():
            where = f'sample.fields."{name}"'
            check_field(name, base_tree, where)
            fields.append((name, parse_distribution(where, d, lambda x, name=name: normalise_value(name, x))))
        sample = Sample(n=s.get("n", 0), seed=s.get("seed", 0), fields=tuple(fields))
    seeds = data.get("seeds", {})
    if not isinstance(seeds, dict) or set(seeds) - {"noise", "mismatch"}:
        raise ValueError(f"[seeds] takes noise = [...] and mismatch = [...]; got {seeds!r}")
    noise = _ints("seeds.noise", seeds.get("noise", [0]))
    mismatch = _ints("seeds.mismatch", seeds["mismatch"]) if "mismatch" in seeds else None
    metrics = data.get("metrics", list(METRIC_GROUPS))
    if not isinstance(metrics, list):
        raise ValueError(f"metrics must be a list of {', '.join(METRIC_GROUPS)}, got {metrics!r}")
    ckpt = checkpoint_path(data.get("checkpoint", "kuramoto-tiny"), root)
    return SweepSpec(name=data.get("name", "sweep"), checkpoint=ckpt, tokens=tokens, base=base, axes=axes,
                     sample=sample, noise_seeds=noise, mismatch_seeds=mismatch, metrics=tuple(metrics))


def load_spec(path: str | Path) -> SweepSpec:
    """Load and validate a sweep spec TOML: every point's chip config is built before this returns."""
    path = Path(path)
    return read_toml(path, "sweep spec", lambda data: spec_from_dict(data, root=path.parent))
