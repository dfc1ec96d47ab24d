"""The compiled chip: per-layer oscillator arrays, programming rules, mismatch draw, resources; versioned JSON.

JSON layout (``format: "oscsim-chip/5"``)::

    {"format", "kind", "config", "device", "model": {name, checkpoint, config, fingerprint},
     "timebase": {...}, "static_digital": [{"name", "shape"}], "resources": {...}, "coupling_rule": {...},
     "schedule": {...},
     "layers": [{"index", "kind", "n_heads", "head_dim", "max_tokens", "banks", "oscillator_shape",
                 "lambda", "coupling_quantiser", "gain_quantiser",
                 "freq_trim_code": {"shape", "data"}, "freq_residual_rel": {"shape", "data"},
                 "coupler_spread": {"shape", "rel_std", "seed", "sha256"}, "resources": {...},
                 "tiles": null | {"count", "tile_of": {"shape", "data"}},
                 "score_freq_residual_rel": null | {"shape", "data"}, "score_diffusion_rel": null | {...}}]}

Small draws (per-oscillator trim codes and residual frequency errors) are stored inline; the per-coupler
spread (T² per coordinate) is stored as its seed and the SHA-256 of the regenerated array, checked on load. On
a time-multiplexed chip (``schedule``, :mod:`mapping.compiler.schedule`) a layer's ``tiles`` says which
physical tile each unit runs on: the per-coupler spread is drawn once per tile and gathered. On an analog-score
chip every layer also stores the draw of its rotated score oscillators (:func:`mapping.compiler.mismatch.
draw_score_oscillators`, made once at compile time like the banks'), inline.
Loading (`mapping.chip_io.load_chip`) validates everything and refuses inconsistent files with a message
naming the field.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .config import ChipConfig, config_to_dict
from .periphery.quantise import Quantiser
from .seeds import PHYSICAL_STREAM  # re-exported: the chip's public name of the physical-tile stream key

__all__ = ["FORMAT", "Chip", "LayerMap", "TileMap", "save_chip", "coupler_spread_draw", "PHYSICAL_STREAM"]

FORMAT = "oscsim-chip/5"
"""Version 2: ``device`` is the hw_models device (level, kind, preset, params), per-oscillator ``diffusion_rel``
and ``power_w`` from the mismatch draw, and the coupler in ``coupling_rule``. Version 3: ``resources`` is the one
resource count of :mod:`mapping.compiler.resources` (``phase_detectors`` added; ``readout_channels`` two per
detector, as the area and energy models count them). Version 4: ``config`` has ``array``, ``node_nm`` and
``node_flavor``; the chip records its ``schedule`` and every layer its ``tiles``. Version 5: every layer its
rotated score oscillators' draw (``score_freq_residual_rel``, ``score_diffusion_rel``; null with digital scores)."""
KINDS = ("kuramoto", "ssa")
LAYER_KINDS = ("kuramoto", "ssa-pairwise", "ssa1d-collective")
CHIP_LAYER_KINDS = {"kuramoto": ("kuramoto",), "ssa": ("ssa-pairwise", "ssa1d-collective")}
"""Chip kind -> the layer kinds a chip of that kind holds."""
UNIT_AXES = {"kuramoto": 3, "ssa-pairwise": 1, "ssa1d-collective": 1}
"""Layer kind -> leading axes of its per-oscillator arrays that index units (Kuramoto: bank, head, coordinate;
SSA: head); :mod:`mapping.compiler.schedule` lays the units onto tiles by them."""


def coupler_spread_draw(seed: list[int], shape: tuple, rel_std: float) -> np.ndarray:
    """Multiplicative coupler strengths 1 + δ, δ ~ N(0, rel_std²) clipped at −0.9 (PCG64, reproducible)."""
    if rel_std == 0:
        return np.ones(shape)
    rng = np.random.default_rng([int(s) for s in seed])
    return np.maximum(1.0 + rel_std * rng.standard_normal(shape), 0.1)


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype="<f8").tobytes()).hexdigest()


def _arr_to_json(a: np.ndarray, integer: bool = False) -> dict:
    a = np.asarray(a)
    data = a.astype(np.int64).tolist() if integer else np.round(a.astype(np.float64), 12).tolist()
    return {"shape": list(a.shape), "data": data}


def _arr_from_json(d: Any, where: str, shape: tuple, integer: bool = False) -> np.ndarray:
    if not isinstance(d, dict) or "shape" not in d or "data" not in d:
        raise ValueError(f"{where} must be an object with 'shape' and 'data'")
    if list(d["shape"]) != list(shape):
        raise ValueError(f"{where}: declared shape {d['shape']} does not match the layer's oscillator shape {list(shape)}")
    try:
        a = np.array(d["data"], dtype=np.float64)
    except (ValueError, TypeError):
        raise ValueError(f"{where}: data is not a rectangular numeric array") from None
    if a.shape != tuple(shape):
        raise ValueError(f"{where}: data has shape {list(a.shape)}, expected {list(shape)}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{where}: data holds NaN or infinite values")
    if integer:
        if not np.all(a == np.round(a)):
            raise ValueError(f"{where}: data must be integers")
        return a.astype(np.int64)
    return a


@dataclass(frozen=True, eq=False)
class TileMap:
    """Which physical tile each unit of a layer runs on (a multiplexed chip; :mod:`mapping.compiler.schedule`).

    Attributes
    ----------
    count : int
        Tiles of the chip.
    tile_of : (unit shape) int array
        The tile of each unit (Kuramoto units (banks, heads, coordinates); SSA (heads,)).
    """

    count: int
    tile_of: np.ndarray

    def physical_shape(self, shape: tuple) -> tuple:
        """The per-tile array behind a layer array of ``shape`` (units first): (count, *the unit's own axes)."""
        return (self.count, *tuple(shape)[self.tile_of.ndim:])

    def gather(self, per_tile: np.ndarray) -> np.ndarray:
        """A per-tile array (count, ...) laid out per unit (unit shape, ...)."""
        return np.asarray(per_tile)[self.tile_of]

    def to_json(self) -> dict:
        return {"count": self.count, "tile_of": _arr_to_json(self.tile_of, integer=True)}

    @classmethod
    def from_json(cls, d: Any, where: str, unit_shape: tuple) -> "TileMap | None":
        if d is None:
            return None
        if not isinstance(d, dict) or set(d) != {"count", "tile_of"}:
            raise ValueError(f"{where} must be null or an object with keys count and tile_of")
        n = d["count"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{where}.count must be a positive integer, got {n!r}")
        t = _arr_from_json(d["tile_of"], f"{where}.tile_of", unit_shape, integer=True)
        if t.size and (t.min() < 0 or t.max() >= n):
            raise ValueError(f"{where}.tile_of must hold tile indices in [0, {n - 1}]")
        return cls(count=n, tile_of=t)


def _quantiser(d: Any, where: str) -> Quantiser:
    with _named(where):
        if isinstance(d, dict) and not (isinstance(d.get("range"), (int, float)) and not isinstance(d.get("range"), bool)):
            raise ValueError(f"range must be a number, got {d.get('range')!r}")
        return Quantiser.from_dict(d)


@dataclass
class LayerMap:
    """One attention layer on the chip.

    Attributes
    ----------
    index : int
    kind : {'kuramoto', 'ssa-pairwise', 'ssa1d-collective'}
    n_heads, head_dim : int
        Heads and coordinates per head (Kuramoto k_h; SSA frequency width F).
    max_tokens : int
        Context the arrays are built for (T).
    banks : int
        Kuramoto: 2 (gain bank + unit-gain reference bank) or 1; SSA: 1.
    oscillator_shape : tuple
        Shape of the per-oscillator arrays: Kuramoto (banks, h, k_h, T); SSA pairwise (h, T, T, 2) (cell (i, j)
        with j < i, two oscillators); SSA-1D collective (h, T).
    lam : float
        SSA model-rate → chip scale λ [rad/cycle per model unit] (0 for Kuramoto).
    coupling_quantiser, gain_quantiser : Quantiser
    freq_trim_code : int array, oscillator_shape
        Per-oscillator frequency-trim DAC code (the bias programmed to cancel the drawn mismatch).
    freq_residual_rel : float array, oscillator_shape
        Residual relative frequency error δf/f₀ after trimming.
    coupler_shape : tuple
    coupler_spread_rel : float
    coupler_seed : list of int
    coupler_sha256 : str or None
        SHA-256 of the coupler draw ("" without a spread) as a saved chip records it; None on a freshly compiled
        chip until it is asked for (:meth:`coupler_digest`): only a saved chip needs it, and hashing each layer's
        draw cost a 64-point sweep's compile 35 ms of its 0.3 s per point.
    resources : dict
    diffusion_rel : float array, oscillator_shape
        Per-oscillator phase diffusion D_i / D_nominal from the device's instance draw.
    power_w : float array, oscillator_shape
        Per-oscillator power [W] from the device's instance draw.
    tiles : TileMap or None
        The physical tile of each unit on a multiplexed chip (its draws are the tile's); None: spatial.
    score_freq_residual_rel, score_diffusion_rel : float arrays (n_heads, head_dim, max_tokens) or None
        Analog scores: the rotated score oscillators' residual relative frequency error δf/f₀ after trimming (the
        chip's temperature drift included) and their D / D_nominal, drawn once at compile time
        (:func:`mapping.compiler.mismatch.draw_score_oscillators`); None with digital scores.
    """

    index: int
    kind: str
    n_heads: int
    head_dim: int
    max_tokens: int
    banks: int
    oscillator_shape: tuple
    lam: float
    coupling_quantiser: Quantiser
    gain_quantiser: Quantiser | None
    freq_trim_code: np.ndarray
    freq_residual_rel: np.ndarray
    coupler_shape: tuple
    coupler_spread_rel: float
    coupler_seed: list
    coupler_sha256: str | None
    resources: dict = field(default_factory=dict)
    diffusion_rel: np.ndarray | None = None
    power_w: np.ndarray | None = None
    tiles: TileMap | None = None
    score_freq_residual_rel: np.ndarray | None = None
    score_diffusion_rel: np.ndarray | None = None
    _coupler_cache: np.ndarray | None = field(default=None, repr=False, compare=False)
    # a multiplexed chip's per-tile coupler draw, shared by its layers (the compiler draws it once; every layer has
    # the same seed); None: drawn from the seed when first needed
    _coupler_physical: np.ndarray | None = field(default=None, repr=False, compare=False)

    def coupler_gain(self) -> np.ndarray:
        """The multiplicative coupler strengths, ``coupler_shape`` (regenerated from the seed, cached; on a
        multiplexed chip drawn once per tile and gathered, so the units of one tile share it)."""
        if self._coupler_cache is None:
            if self.tiles is None:
                self._coupler_cache = coupler_spread_draw(self.coupler_seed, self.coupler_shape,
                                                          self.coupler_spread_rel)
            else:
                self._coupler_cache = self.tiles.gather(self.coupler_gain_per_tile())
        return self._coupler_cache

    def coupler_gain_per_tile(self) -> np.ndarray:
        """A multiplexed chip's coupler strengths per physical tile, ``tiles.physical_shape(coupler_shape)``;
        unit u's are ``[tiles.tile_of[u]]`` (what :meth:`coupler_gain` gathers). Raises ValueError on a spatial
        chip (no tiles)."""
        if self.tiles is None:
            raise ValueError(f"layer {self.index} is on a spatial chip (no tiles): use coupler_gain()")
        if self._coupler_physical is None:
            phys = coupler_spread_draw(self.coupler_seed, self.tiles.physical_shape(self.coupler_shape),
                                       self.coupler_spread_rel)
            phys.setflags(write=False)  # shared by the layers of the same draw
            self._coupler_physical = phys
        return self._coupler_physical

    def coupler_digest(self, memo: dict | None = None) -> str:
        """SHA-256 of the coupler draw :meth:`coupler_gain` ("" without a spread), computed when first asked
        (``memo``: shared by the layers of one chip, :meth:`regenerated_digest`)."""
        if self.coupler_sha256 is None:
            self.coupler_sha256 = self.regenerated_digest(memo) if self.coupler_spread_rel > 0 else ""
        return self.coupler_sha256

    def coupler_key(self) -> tuple:
        """What the coupler draw is a function of: seed, shape, spread and, on a multiplexed chip, the tiles."""
        tiles = None if self.tiles is None else (self.tiles.count, self.tiles.tile_of.shape, self.tiles.tile_of.tobytes())
        return (tuple(int(x) for x in self.coupler_seed), tuple(self.coupler_shape), float(self.coupler_spread_rel),
                tiles)

    def regenerated_digest(self, memo: dict | None = None) -> str:
        """SHA-256 of the coupler draw regenerated from the seed (the digest a saved chip records).

        Layers of equal :meth:`coupler_key` (every layer of a multiplexed chip) share one computation through
        ``memo``, and their per-tile draw; a multiplexed layer's per-unit array is gathered for the hash and not
        kept (134 MB per layer of the 1M model; the run reads the tiles)."""
        key = self.coupler_key()
        if memo is not None and key in memo:
            phys, digest = memo[key]
            if phys is not None and self._coupler_physical is None:
                self._coupler_physical = phys
            return digest
        if self.tiles is None:
            phys, digest = None, _sha(self.coupler_gain())
        else:
            phys = self.coupler_gain_per_tile()
            digest = _sha(self._coupler_cache if self._coupler_cache is not None else self.tiles.gather(phys))
        if memo is not None:
            memo[key] = (phys, digest)
        return digest

    def to_json(self, digests: dict | None = None) -> dict:
        """The layer's JSON (``digests``: a memo of coupler digests shared by the chip's layers)."""
        return {
            "index": self.index, "kind": self.kind, "n_heads": self.n_heads, "head_dim": self.head_dim,
            "max_tokens": self.max_tokens, "banks": self.banks, "oscillator_shape": list(self.oscillator_shape),
            "lambda": self.lam, "coupling_quantiser": self.coupling_quantiser.to_dict(),
            "gain_quantiser": None if self.gain_quantiser is None else self.gain_quantiser.to_dict(),
            "freq_trim_code": _arr_to_json(self.freq_trim_code, integer=True),
            "freq_residual_rel": _arr_to_json(self.freq_residual_rel),
            "coupler_spread": {"shape": list(self.coupler_shape), "rel_std": self.coupler_spread_rel,
                               "seed": list(self.coupler_seed), "sha256": self.coupler_digest(digests)},
            "resources": self.resources,
            "diffusion_rel": _arr_to_json(self.diffusion_rel),
            "power_w": _arr_to_json(self.power_w),
            "tiles": None if self.tiles is None else self.tiles.to_json(),
            "score_freq_residual_rel": None if self.score_freq_residual_rel is None
            else _arr_to_json(self.score_freq_residual_rel),
            "score_diffusion_rel": None if self.score_diffusion_rel is None else _arr_to_json(self.score_diffusion_rel),
        }

    @property
    def score_shape(self) -> tuple:
        """(n_heads, head_dim, max_tokens): the rotated score oscillators of the layer."""
        return (self.n_heads, self.head_dim, self.max_tokens)

    def __post_init__(self):
        shape = tuple(self.oscillator_shape)
        if self.diffusion_rel is None:
            self.diffusion_rel = np.ones(shape)
        if self.power_w is None:
            self.power_w = np.zeros(shape)
        for name in ("diffusion_rel", "power_w"):
            a = np.asarray(getattr(self, name), dtype=float)
            if a.shape != shape or not np.all(np.isfinite(a)) or np.any(a < 0):
                raise ValueError(f"layers[{self.index}].{name} must be a finite array >= 0 of shape {list(shape)}")
        if (self.score_freq_residual_rel is None) != (self.score_diffusion_rel is None):
            raise ValueError(f"layers[{self.index}]: score_freq_residual_rel and score_diffusion_rel are both set "
                             f"(analog scores) or both null")
        if self.score_diffusion_rel is not None:
            for name in ("score_freq_residual_rel", "score_diffusion_rel"):
                a = np.asarray(getattr(self, name), dtype=float)
                if a.shape != self.score_shape or not np.all(np.isfinite(a)):
                    raise ValueError(f"layers[{self.index}].{name} must be a finite array of shape "
                                     f"{list(self.score_shape)}")
            if np.any(np.asarray(self.score_diffusion_rel) < 0):
                raise ValueError(f"layers[{self.index}].score_diffusion_rel must be >= 0")

    @classmethod
    def from_json(cls, d: dict, i: int, digests: dict | None = None) -> "LayerMap":
        """Layer ``i`` of a chip file, validated; its coupler digest is checked against the draw regenerated from
        its seed (``digests``: a memo shared by the file's layers, :meth:`regenerated_digest`)."""
        w = f"layers[{i}]"
        need = {"index", "kind", "n_heads", "head_dim", "max_tokens", "banks", "oscillator_shape", "lambda",
                "coupling_quantiser", "gain_quantiser", "freq_trim_code", "freq_residual_rel", "coupler_spread",
                "resources", "diffusion_rel", "power_w", "tiles", "score_freq_residual_rel", "score_diffusion_rel"}
        if not isinstance(d, dict):
            raise ValueError(f"{w} must be an object")
        missing, unknown = sorted(need - set(d)), sorted(set(d) - need)
        if missing or unknown:
            raise ValueError(f"{w}: missing keys {missing}, unknown keys {unknown}")
        if d["kind"] not in LAYER_KINDS:
            raise ValueError(f"{w}.kind must be one of {LAYER_KINDS}, got {d['kind']!r}")
        for key in ("index", "n_heads", "head_dim", "max_tokens", "banks"):
            if isinstance(d[key], bool) or not isinstance(d[key], int) or d[key] < (0 if key == "index" else 1):
                raise ValueError(f"{w}.{key} must be a positive integer, got {d[key]!r}")
        h, F, T, nb = d["n_heads"], d["head_dim"], d["max_tokens"], d["banks"]
        for key in ("oscillator_shape",):
            if not isinstance(d[key], list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in d[key]):
                raise ValueError(f"{w}.{key} must be a list of integers, got {d[key]!r}")
        expected = {"kuramoto": (nb, h, F, T), "ssa-pairwise": (h, T, T, 2), "ssa1d-collective": (h, T)}[d["kind"]]
        if tuple(d["oscillator_shape"]) != expected:
            raise ValueError(f"{w}.oscillator_shape {d['oscillator_shape']} is inconsistent with kind {d['kind']!r}, "
                             f"n_heads={h}, head_dim={F}, max_tokens={T}, banks={nb}: expected {list(expected)}")
        lam = d["lambda"]
        if not isinstance(lam, (int, float)) or not math.isfinite(lam) or lam < 0:
            raise ValueError(f"{w}.lambda must be finite and >= 0, got {lam!r}")
        cs = d["coupler_spread"]
        if not isinstance(cs, dict) or set(cs) != {"shape", "rel_std", "seed", "sha256"}:
            raise ValueError(f"{w}.coupler_spread must have keys shape, rel_std, seed, sha256")
        for key in ("shape", "seed"):
            if not isinstance(cs[key], list) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                                        for x in cs[key]):
                raise ValueError(f"{w}.coupler_spread.{key} must be a list of non-negative integers, got {cs[key]!r}")
        if not isinstance(cs["sha256"], str):
            raise ValueError(f"{w}.coupler_spread.sha256 must be a string, got {cs['sha256']!r}")
        if not isinstance(d["resources"], dict):
            raise ValueError(f"{w}.resources must be an object, got {d['resources']!r}")
        exp_c = {"kuramoto": (nb, h, F, T, T), "ssa-pairwise": (h, T, T), "ssa1d-collective": (h, T, T)}[d["kind"]]
        Tt = cs["shape"][-1] if len(exp_c) == 5 == len(cs["shape"]) else T
        if 1 <= Tt <= T:  # a blocked Kuramoto chip's tiles hold Tt ≤ T oscillators (mapping.backends.blocking)
            exp_c = exp_c[:-2] + (Tt, Tt)
        if tuple(cs["shape"]) != exp_c:
            raise ValueError(f"{w}.coupler_spread.shape {cs['shape']} does not match the layer: expected {list(exp_c)}")
        if not isinstance(cs["rel_std"], (int, float)) or not math.isfinite(cs["rel_std"]) or not 0 <= cs["rel_std"] < 1:
            raise ValueError(f"{w}.coupler_spread.rel_std must be in [0, 1), got {cs['rel_std']!r}")
        lm = cls(
            index=d["index"], kind=d["kind"], n_heads=h, head_dim=F, max_tokens=T, banks=nb,
            oscillator_shape=expected, lam=float(lam),
            coupling_quantiser=_quantiser(d["coupling_quantiser"], f"{w}.coupling_quantiser"),
            gain_quantiser=None if d["gain_quantiser"] is None else _quantiser(d["gain_quantiser"],
                                                                               f"{w}.gain_quantiser"),
            freq_trim_code=_arr_from_json(d["freq_trim_code"], f"{w}.freq_trim_code", expected, integer=True),
            freq_residual_rel=_arr_from_json(d["freq_residual_rel"], f"{w}.freq_residual_rel", expected),
            coupler_shape=exp_c, coupler_spread_rel=float(cs["rel_std"]), coupler_seed=list(cs["seed"]),
            coupler_sha256=str(cs["sha256"]), resources=dict(d["resources"]),
            diffusion_rel=_arr_from_json(d["diffusion_rel"], f"{w}.diffusion_rel", expected),
            power_w=_arr_from_json(d["power_w"], f"{w}.power_w", expected),
            tiles=TileMap.from_json(d["tiles"], f"{w}.tiles", tuple(expected[:UNIT_AXES[d["kind"]]])),
            **{k: None if d[k] is None else _arr_from_json(d[k], f"{w}.{k}", (h, F, T))
               for k in ("score_freq_residual_rel", "score_diffusion_rel")},
        )
        if lm.coupler_spread_rel > 0 and lm.regenerated_digest(digests) != lm.coupler_sha256:
            raise ValueError(f"{w}.coupler_spread: the regenerated coupler draw does not match its sha256 "
                             f"(seed or rel_std edited, or a different random generator)")
        return lm


@dataclass
class Chip:
    """A compiled chip (see :func:`mapping.compile`).

    Attributes
    ----------
    kind : {'kuramoto', 'ssa'}
    config : ChipConfig
    device : mapping.compiler.device.ChipDevice
        The hw_models device object (level, oscillator, couplers); every device number is read through it.
    model_info : dict
        ``name`` (registry name), ``checkpoint`` (bundled name or path, or None), ``config`` (model config
        dict), ``fingerprint`` (SHA-256 of the weights).
    timebase : dict
        Unit conversions used (f₀, κ, τ_s, κτ_s, noise intensity), see :mod:`mapping.units`.
    layers : list of LayerMap
    static_digital : list of dict
        Weights that stay digital (name and shape).
    resources : dict
        Totals: oscillators, couplers, coupler_bits, readout_channels, gain_dacs.
    coupling_rule : dict
        ``phase_correction``, ``taps``, ``tap_phase_rad``, ``weights`` and the effective ``harmonics`` of H.
    schedule : mapping.compiler.schedule.Schedule or None
        Which tile runs which unit when (the config's ``array``); ``resources`` are the silicon's.
    score_array : mapping.backends.score_array.ScoreArray or None
        The analog-score chip's score units and the heads' assignment to them (None: digital scores).
    node : hw_models.technology.TechnologyNode
        The chip's logic node (periphery, SRAM, converters, wires, leakage), built once from ``config.node_nm``
        and ``config.node_flavor``; the area and energy models read it.
    device_node : hw_models.technology.TechnologyNode
        The node its oscillators and couplers are sized at (``config.sizing_node_nm``: ``device_node_nm``, else
        the logic node), built once: the same object as ``node`` when the two coincide.
    model : torch.nn.Module or None
        The closed-form model the static weights come from (not serialised; resolved from ``model_info`` on
        load).
    """

    kind: str
    config: ChipConfig
    device: Any
    model_info: dict
    timebase: dict
    layers: list
    static_digital: list
    resources: dict
    coupling_rule: dict = field(default_factory=dict)
    schedule: Any = None
    score_array: Any = None
    node: Any = None
    device_node: Any = None
    model: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        from hw_models.technology import chip_node

        if self.node is None:
            self.node = chip_node(self.config.node_nm, self.config.node_flavor)
        if self.device_node is None:
            sized = self.config.sizing_node_nm
            self.device_node = self.node if sized == self.config.node_nm else chip_node(sized, self.config.node_flavor)

    @property
    def max_tokens(self) -> int:
        """Longest sequence the chip's arrays hold [tokens]: the smallest ``max_tokens`` of its layers (every
        layer is compiled for the model's ``seq_len``)."""
        return min(lm.max_tokens for lm in self.layers)

    @property
    def harmonics(self) -> np.ndarray:
        """(M, 2) effective coupling-function harmonics programmed on the chip (a₁ = 1)."""
        if self.coupling_rule:
            return np.asarray(self.coupling_rule["harmonics"], dtype=float)
        return self.device.harmonics()

    def to_json(self) -> dict:
        digests: dict = {}  # one coupler digest per draw, shared by the layers that have it
        return {
            "format": FORMAT, "kind": self.kind, "config": config_to_dict(self.config),
            "device": self.device.to_dict(), "model": self.model_info, "timebase": self.timebase,
            "static_digital": self.static_digital, "resources": self.resources,
            "coupling_rule": self.coupling_rule,
            "schedule": None if self.schedule is None else self.schedule.to_json(),
            "layers": [lm.to_json(digests) for lm in self.layers],
        }

    def save(self, path: str | Path) -> Path:
        """Write the chip as JSON (see the module docs)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), allow_nan=False) + "\n")
        return path

    def summary(self) -> str:
        """A few lines: kind, device, window, resources, and what the backend and the realism settings say."""
        from .backends import describe_chip

        r = self.resources
        d = describe_chip(self)
        s = (f"{self.kind} chip on {self.device.name} (f0 = {self.device.f0_hz / 1e9:.3g} GHz, "
             f"{d.window}): {len(self.layers)} layers, "
             f"{r['oscillators']:,} oscillators, {r['couplers']:,} couplers ({r['coupler_bits']:,} bits), "
             f"{r['readout_channels']:,} readout channels")
        sc = self.schedule
        if sc is not None and sc.kind != "spatial":
            s += (f"\ntime-multiplexed: {sc.tiles:,} tiles serve {sc.n_layers * sc.units_per_layer:,} units "
                  f"({sc.rounds_per_layer} round(s) per layer, each tile used up to {sc.uses_per_tile}x per pass)")
        if d.regime:  # the device model's regime (e.g. spin-torque phase or amplitude model)
            s += "\n" + d.regime
        pvt = self.timebase.get("pvt")
        if isinstance(pvt, dict) and pvt.get("drift_rel"):  # trimmed at T_cal, run at T (mapping.periphery.drift)
            kap = self.timebase["kappa_rad_per_cycle"] / (2 * math.pi)
            s += (f"\ntrimmed at {pvt['calibration_temperature_k']:g} K, run at {self.config.temperature_k:g} K: "
                  f"common-mode drift {pvt['drift_rel']:+.3g} of f0 = {pvt['drift_rel'] / kap:+.3g} x the coupling "
                  f"kappa (fixed reference clock)")
        s += d.realism  # circuit-level realism switches
        inj = self.injection_write_error()
        if inj is not None:
            s += "\n" + inj["message"]
        v = self.macromodel_validity(warn=True, stacklevel=3)
        if v is not None:
            s += "\n" + v["message"]
        return s

    @property
    def settle_window_rad(self) -> float | None:
        """κτ_s [rad] of a Kuramoto chip's settle window; None for SSA chips (set by their settle and averaging
        windows, ``config.ssa``)."""
        from .backends import backend_for

        return backend_for(self, 0).describe(self).settle_window_rad

    def injection_write_error(self) -> dict | None:
        """Predicted phase-write error of ``[injection] mode = "injected"`` (None in ``ideal`` mode).

        Adler's transient for the chips' uniform start phases, the locked offset of the RMS trim residual over
        all layers and the phase-noise floor, against the settle window's own diffusion and trim drift
        (:func:`mapping.periphery.injection.write_error_report`).
        """
        if not self.config.injection.injected:
            return None
        from . import units
        from .periphery.injection import write_error_report

        fr = np.concatenate([np.ravel(units.relative_frequency_to_rad_per_cycle(lm.freq_residual_rel))
                             for lm in self.layers])
        return write_error_report(self.config.injection, detuning_rms=float(np.sqrt(np.mean(fr**2))) if fr.size
                                  else 0.0, sigma=float(self.timebase["sigma_rad_per_sqrt_cycle"]),
                                  settle_cycles=float(self.timebase["settle_cycles"]),
                                  kappa_tau=self.settle_window_rad)

    def macromodel_validity(self, *, warn: bool = True, stacklevel: int = 2) -> dict | None:
        """Is this ring chip's operating point inside the measured validity map of the phase macromodel?

        The backend of the chip's layers answers (:meth:`mapping.backends.LayerBackend.macromodel_validity`):
        Kuramoto chips are checked against the increment map (κ/f₀ = coupling.fraction × the largest |receive
        gain|, fan-in T − 1), SSA chips against the two-ring locking map (κ/f₀ = coupling.fraction, fan-in 1).
        Warns :class:`hw_models.validity.MacromodelValidityWarning` when outside. None for non-ring devices; a
        ``ring-circuit`` chip integrates node voltages and reports that the map does not apply.
        """
        from .backends import backend_for

        return backend_for(self, 0).macromodel_validity(self, warn=warn, stacklevel=stacklevel + 1)


class _named:
    """Re-raise a TypeError/ValueError/KeyError/... inside the block as a ValueError naming the field."""

    def __init__(self, where: str):
        self.where = where

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if exc is None or not isinstance(exc, (TypeError, ValueError, KeyError, AttributeError, IndexError,
                                                OverflowError)):
            return False
        msg = str(exc)
        raise ValueError(msg if msg.startswith(self.where) else f"{self.where}: {msg}") from None


def save_chip(chip: Chip, path: str | Path) -> Path:
    """Write ``chip`` to ``path`` as JSON (same as ``chip.save(path)``)."""
    return chip.save(path)
