"""Technology nodes: how logic, SRAM, wires, converters, mismatch, leakage and the ring scale with the process.

A :class:`TechnologyNode` (``node_nm``, flavour ``HP``/``LP``, supply) answers every process question the
energy, area and device models ask, each answer a :class:`Figure` (value, unit, source). The figures live in
``hw_models/data/technology.json`` with their sources; numbers compared with a source the project can show are
listed there under ``checked`` (:func:`figures_checked`), the others under ``check``, each with the reason it is
left (:func:`figures_to_check`).

Logic (delay, energy, power, area)
    Stillmaker & Baas 2017 [SB17]: per node a cubic fit of an FO4 circuit's delay in V_DD and quadratic fits of
    its energy and power, and an area table, 180 nm to 7 nm (PTM bulk to 65 nm, PTM HP/LP at 45 and 32 nm,
    PTM-MG FinFET HP/LP at 20 to 7 nm). A quantity known at one (node, V_DD) is carried to another by the ratio
    of the fits (:meth:`TechnologyNode.scale_energy` etc.); :mod:`mapping.energy` carries every figure it
    assumes at 65 nm (:data:`REFERENCE_NODE`) to the chip's node this way and no other. 28 and 22 nm are not
    nodes of the paper: their fits are
    interpolated log-log in the node between the bracketing nodes (32 and 20 nm) at the same V_DD, stated in
    every source string. Outside 7–180 nm, or outside the fits' V_DD window, a
    :class:`TechnologyExtrapolationWarning` is issued.
SRAM
    The chip's SRAM comes from CACTI 7 (:mod:`hw_models.cacti`). :meth:`TechnologyNode.sram_j_per_bit` keeps the
    former figure as the cross-check: [Hor14]'s 45 nm, 0.9 V read energies (8 kB / 32 kB / 1 MB) scaled by the
    [SB17] energy ratio (rule: an SRAM access is C·V² of bit- and word-lines, which shrink like logic; assumed);
    published bitcell areas by node (the coupler-register latches).
Wires
    0.2 fF/µm, nearly node-independent [HoMH01] over 180–35 nm; a warning below 35 nm.
Converters
    Walden FoM of a SAR ADC: 5 fJ/step at 65 nm (assumed, optimistic: the [Mur] survey's comparable 65 nm SARs
    span 6.3-88 fJ/step, median 30; the data file's 'checked' entry); rule: half the conversion energy
    (SAR logic and capacitive DAC switching) scales with the [SB17] energy ratio, the comparator half does not
    (assumed). Capacitive DAC unit switches scale with the effective capacitance E/V² of [SB17].
Mismatch
    Pelgrom σ(ΔV_T) = A_VT / √(W L). One figure at 65 nm, the ring card's 3.9 mV·µm (IHP SG13G2 LV NMOS,
    :func:`hw_models.presets.cmos_65nm_ring`, assumed for 65 nm); other nodes by the ratio of a node trend
    (table, to check) to its 65 nm entry.
Leakage
    Density [W/mm²] = ½ · I_off(flavour) · V_DD · W_density, with W_density = transistor density (Intel 45 nm
    anchor scaled by the [SB17] area ratio) × mean gate width 4 F (assumed); half the devices off (assumed).
    I_off: CACTI 7's ITRS device tables at 300 K (LP: LSTP, HP: HP; 22–90 nm, held beyond).
Flavours
    Below 65 nm [SB17] fits HP and LP devices apart and every figure follows the flavour. At 65 nm and above it
    has one bulk model per node: both flavours are that one fit, read as LP for every figure (speed, energy,
    leakage, SRAM): :attr:`TechnologyNode.device_flavor`. [SB17]'s PTM LP 45 nm devices are slower than the
    65 nm bulk ones (high-V_T low-standby devices), so an LP chip's logic gets slower from 65 to 45 nm: what the
    fits say, kept.
Ring oscillator
    A model card exists at 65 nm (:func:`hw_models.presets.cmos_65nm_ring`); the project has none below 65 nm.
    Rule (:meth:`TechnologyNode.ring_params`): port the card's circuit by constant-field self-similar scaling to
    the node's V_DD (V_T and 1/λ with it), W and L with the node, every capacitance with the [SB17] effective
    capacitance ratio (E/V²), and the transconductance parameter chosen so that the stage delay C·V/I follows
    the [SB17] delay ratio; A_VT scaled by the node table's ratio. The circuit model then re-derives f₀, power,
    PPV and phase diffusion: f₀ ∝ 1/delay ratio, P ∝ C V² f and D ∝ 1/(s_D s_C s_V²) hold exactly.

References
----------
[SB17] A. Stillmaker, B. Baas, Integration 58, 74 (2017), doi:10.1016/j.vlsi.2017.02.002.
[Hor14] M. Horowitz, ISSCC 2014, p. 10.
[HoMH01] R. Ho, K. Mai, M. Horowitz, Proc. IEEE 89, 490 (2001).
[Mur] B. Murmann, "ADC Performance Survey 1997–2024".
[Pel89] M. Pelgrom, A. Duinmaijer, A. Welbers, IEEE JSSC 24, 1433 (1989).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import math
import warnings
from dataclasses import dataclass, field
from importlib import resources

__all__ = ["Figure", "TechnologyNode", "TechnologyExtrapolationWarning", "stated_extrapolation", "FLAVORS", "TABULATED_NODES_NM",
           "SUPPORTED_NODES_NM", "HOROWITZ_REFERENCE", "REFERENCE_NODE", "chip_node", "figures_to_check",
           "figures_checked", "device_off_current", "cacti_tech_params"]

FLAVORS = ("HP", "LP")
#: Nodes of the paper's fits [SB17].
TABULATED_NODES_NM = (180, 130, 90, 65, 45, 32, 20, 16, 14, 10, 7)
#: Nodes with every figure from a table (28 and 22 nm interpolate the [SB17] fits; see the module notes).
SUPPORTED_NODES_NM = (65, 45, 28, 22, 16, 7)
_NODE_RANGE_NM = (7.0, 180.0)
_BULK_MIN_NM = 65  # [SB17] has one bulk model per node down to 65 nm, HP/LP pairs below
_MEAN_WIDTH_F = 4.0  # mean logic gate width in feature sizes (assumed)
_OFF_FRACTION = 0.5  # devices off at any time (assumed)
_ADC_SCALING_SHARE = 0.5  # share of a SAR conversion energy that scales like logic (assumed)


class TechnologyExtrapolationWarning(UserWarning):
    """A figure was asked for outside the range its source covers (node or supply); the value is extrapolated."""


@dataclass(frozen=True)
class Figure:
    """A number with its unit and source."""

    value: float
    unit: str
    source: str


@functools.lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(resources.files("hw_models").joinpath("data/technology.json").read_text())


def figures_to_check() -> dict:
    """{table: [{'figure', 'reason'}]}: the transcribed figures not yet compared with a source the project can
    show, each with the reason it is left (the data file's ``check`` lists; what was compared, and against what,
    is under ``checked``)."""
    return {k: list(v["check"]) for k, v in _data().items() if isinstance(v, dict) and v.get("check")}


def figures_checked() -> dict:
    """{table: [{'figure', 'against'}]}: the transcribed figures compared with a source, and the source."""
    return {k: list(v["checked"]) for k, v in _data().items() if isinstance(v, dict) and v.get("checked")}


_STATED: contextvars.ContextVar = contextvars.ContextVar("stated_extrapolation", default=None)


def _warn(msg: str) -> None:
    sink = _STATED.get()
    if sink is not None:  # inside stated_extrapolation(): the caller states it, nothing is warned
        sink.append(msg)
        return
    warnings.warn(msg, TechnologyExtrapolationWarning, stacklevel=3)


@contextlib.contextmanager
def stated_extrapolation():
    """Collect the extrapolation statements of the figures computed inside, instead of warning them.

    For a caller that states the extrapolation in its own result (e.g. the GPU's SRAM figure at 4 nm, below the
    fits). Unlike ``warnings.catch_warnings`` it leaves the warning filters and the once-per-location registry
    alone, so a warning the chip issued once is not issued again on every report. Per thread and task
    (a context variable).

    Yields
    ------
    list of str
        The messages that would have been warned (:class:`TechnologyExtrapolationWarning`), in order.

    Examples
    --------
    >>> with stated_extrapolation() as stated:
    ...     e = TechnologyNode(node_nm=4, flavor="HP").sram_j_per_bit(1e6)
    >>> bool(stated)
    True
    """
    sink: list = []
    token = _STATED.set(sink)
    try:
        yield sink
    finally:
        _STATED.reset(token)


def _loglog(x: float, xs: list, ys: list, what: str) -> float:
    """Log-log interpolation of y(x) through the points (xs ascending); linear extrapolation of the end segment
    in log-log beyond the table, with a warning."""
    if x < xs[0] or x > xs[-1]:
        _warn(f"{what}: node {x:g} nm is outside the table's {xs[0]:g}-{xs[-1]:g} nm; extrapolated log-log")
    if x in xs:
        return float(ys[xs.index(x)])
    i = min(max(1, sum(1 for v in xs if v < x)), len(xs) - 1)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    w = math.log(x / x0) / math.log(x1 / x0)
    return math.exp((1 - w) * math.log(y0) + w * math.log(y1))


def _table(name: str) -> tuple[list, list]:
    vals = _data()[name]["values"]
    xs = sorted(float(k) for k in vals)
    return xs, [vals[k] for k in sorted(vals, key=float)]


@dataclass(frozen=True, kw_only=True)
class TechnologyNode:
    """A CMOS process node at an operating supply.

    Attributes
    ----------
    node_nm : float
        Feature size [nm], > 0. Tabulated fits at 180, 130, 90, 65, 45, 32, 20, 16, 14, 10, 7 nm; between
        them interpolated (log-log in the node), outside 7–180 nm extrapolated with a warning.
    flavor : {'LP', 'HP'}
        Low-power (low standby leakage, higher V_T) or high-performance devices. [SB17] has one bulk model per
        node at 65 nm and above: there both flavours are the one fit, read as LP everywhere (speed, energy,
        leakage, SRAM; :attr:`device_flavor`). Default ``'LP'``: an inference accelerator whose array idles
        between windows is a low-standby design (assumed).
    vdd_v : float or None
        Operating supply [V]; None: the node's nominal supply (:attr:`nominal_vdd`). Outside the fits' window
        (0.6–1.3 × nominal, assumed) a warning is issued.

    Examples
    --------
    >>> n7, n65 = TechnologyNode(node_nm=7), TechnologyNode(node_nm=65, vdd_v=1.2)
    >>> e = n7.scale_energy(1e-12, n65)   # a 1 pJ operation at 65 nm, 1.2 V, carried to 7 nm, 0.7 V [J]
    """

    node_nm: float
    flavor: str = "LP"
    vdd_v: float | None = None
    _fit: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        n = self.node_nm
        if isinstance(n, bool) or not isinstance(n, (int, float)) or not (math.isfinite(n) and n > 0):
            raise ValueError(f"node_nm must be a finite number > 0 [nm], got {n!r}")
        if not 1.0 <= n <= 1000.0:
            raise ValueError(f"node_nm must be in [1, 1000] nm (the fits cover {_NODE_RANGE_NM[0]:g}-"
                             f"{_NODE_RANGE_NM[1]:g} nm), got {n!r}")
        if self.flavor not in FLAVORS:
            raise ValueError(f"flavor must be one of {', '.join(FLAVORS)}, got {self.flavor!r}")
        if self.vdd_v is not None:
            v = self.vdd_v
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and 0.1 <= v <= 5.0):
                raise ValueError(f"vdd_v must be a number in [0.1, 5] V or None (the nominal supply), got {v!r}")
        if not _NODE_RANGE_NM[0] <= n <= _NODE_RANGE_NM[1]:
            _warn(f"node_nm = {n:g} is outside the {_NODE_RANGE_NM[0]:g}-{_NODE_RANGE_NM[1]:g} nm of "
                  f"Stillmaker & Baas 2017; every logic figure is extrapolated")
        object.__setattr__(self, "_fit", self._bracket())
        lo, hi = _data()["stillmaker_baas_2017"]["vdd_window"]["value"]
        v, v0 = self.vdd, self.nominal_vdd.value
        if not lo * v0 <= v <= hi * v0:
            _warn(f"vdd_v = {v:g} V at {n:g} nm is outside the assumed window of the fits, {lo:g}-{hi:g} x the "
                  f"nominal {v0:g} V; extrapolated")
        for q in ("delay", "energy", "power"):
            if self._poly(q, v) <= 0:
                raise ValueError(f"vdd_v = {v:g} V at {n:g} nm: the Stillmaker-Baas {q} fit is not positive there; "
                                 f"choose a supply near the nominal {v0:g} V")

    # ------------------------------------------------------------------------------------------ the fits
    def _models(self) -> list:
        """[(node_nm, model key)] of the fits of this flavour, ascending in node."""
        models = _data()["stillmaker_baas_2017"]["models"]
        out = [(m["node_nm"], k) for k, m in models.items()
               if m["flavor"] == "bulk" or m["flavor"] == self.flavor]
        return sorted(out)

    def _bracket(self) -> tuple:
        """((node, key), (node, key), w): the two fits this node is read from and the log-log weight of the second."""
        ms = self._models()
        n = float(self.node_nm)
        for a, b in zip(ms, ms[1:]):
            if a[0] <= n <= b[0]:
                break
        else:
            a, b = (ms[0], ms[1]) if n < ms[0][0] else (ms[-2], ms[-1])
        w = math.log(n / a[0]) / math.log(b[0] / a[0])
        return a, b, w

    def _poly(self, quantity: str, vdd: float) -> float:
        models = _data()["stillmaker_baas_2017"]["models"]
        (n0, k0), (n1, k1), w = self._fit
        vals = []
        for k in (k0, k1):
            c = models[k][quantity]
            vals.append(sum(ci * vdd ** (len(c) - 1 - i) for i, ci in enumerate(c)))
        if w == 0.0:
            return vals[0]
        if w == 1.0:
            return vals[1]
        if min(vals) <= 0:
            return min(vals)
        return math.exp((1 - w) * math.log(vals[0]) + w * math.log(vals[1]))

    def _fit_source(self) -> str:
        (n0, k0), (n1, k1), w = self._fit
        if w in (0.0, 1.0):
            return f"[SB17] {k0 if w == 0.0 else k1} fit"
        return f"[SB17] interpolated log-log in the node between the {k0} and {k1} fits (weight {w:.3f})"

    @property
    def device_flavor(self) -> str:
        """The flavour every figure of this node is read for: ``flavor`` below 65 nm; at 65 nm and above, where
        [SB17] has one bulk model per node, ``'LP'`` for both flavours (one fit for speed, energy, leakage and
        SRAM: the bulk model is not split into HP and LP devices, so no figure may differ between them)."""
        return "LP" if self.node_nm >= _BULK_MIN_NM else self.flavor

    @property
    def tabulated(self) -> bool:
        """Whether [SB17] fits this node directly (no interpolation)."""
        return self._fit[2] in (0.0, 1.0)

    @property
    def nominal_vdd(self) -> Figure:
        """Nominal supply of the node [V] (the PTM supplies of [SB17]; see the data file for 28 and 22 nm)."""
        d = _data()["nominal_vdd_v"]
        table = {float(k): v for k, v in {**d[self.flavor], **d["bulk"]}.items()}  # bulk >= 65 nm, flavour below
        xs = sorted(table)
        n = float(self.node_nm)
        how = "" if n in table else "; interpolated log-log in the node"
        return Figure(_loglog(n, xs, [table[x] for x in xs], "nominal supply"), "V", d["source"] + how)

    @property
    def vdd(self) -> float:
        """Operating supply [V]: ``vdd_v`` or the nominal."""
        return float(self.vdd_v) if self.vdd_v is not None else self.nominal_vdd.value

    def delay(self) -> Figure:
        """[SB17] delay fit at this node and supply (the paper's units; use ratios)."""
        return Figure(self._poly("delay", self.vdd), "SB17 delay units (ps of its FO4 circuit)",
                      f"{self._fit_source()} at {self.vdd:g} V")

    def energy(self) -> Figure:
        """[SB17] energy fit at this node and supply (the paper's units; use ratios)."""
        return Figure(self._poly("energy", self.vdd), "SB17 energy units (fJ of its FO4 circuit)",
                      f"{self._fit_source()} at {self.vdd:g} V")

    def power(self) -> Figure:
        """[SB17] power fit at this node and supply (the paper's units; use ratios)."""
        return Figure(self._poly("power", self.vdd), "SB17 power units", f"{self._fit_source()} at {self.vdd:g} V")

    def area_relative_to_45nm(self) -> Figure:
        """Logic area relative to 45 nm ([SB17] area table, row 45 nm; log-log between its nodes)."""
        t = _data()["stillmaker_baas_2017"]["area"]["45"]
        xs = sorted(float(k) for k in t)
        ys = [t[{float(k): k for k in t}[x]] for x in xs]
        n = float(self.node_nm)
        how = "" if n in xs else "; interpolated log-log in the node"
        return Figure(_loglog(n, xs, ys, "area"), "1", f"[SB17] area table (area at node / area at 45 nm){how}")

    # ------------------------------------------------------------------------------------------ ratios
    def scale_energy(self, e_j: float, frm: "TechnologyNode") -> float:
        """An energy known at ``frm`` carried to this node and supply by the [SB17] energy ratio [J]."""
        return float(e_j) * self._poly("energy", self.vdd) / frm._poly("energy", frm.vdd)

    def scale_delay(self, t_s: float, frm: "TechnologyNode") -> float:
        """A logic delay known at ``frm`` carried here by the [SB17] delay ratio [s]."""
        return float(t_s) * self._poly("delay", self.vdd) / frm._poly("delay", frm.vdd)

    def scale_power(self, p_w: float, frm: "TechnologyNode") -> float:
        """A logic power known at ``frm`` carried here by the [SB17] power ratio [W]."""
        return float(p_w) * self._poly("power", self.vdd) / frm._poly("power", frm.vdd)

    def scale_area(self, a: float, frm: "TechnologyNode") -> float:
        """A logic area known at ``frm`` carried here ([SB17] area table; the direct entry for two tabulated
        nodes, else through the 45 nm row)."""
        t = _data()["stillmaker_baas_2017"]["area"]
        a_to, a_from = str(int(self.node_nm)), str(int(frm.node_nm))
        if float(a_to) == self.node_nm and float(a_from) == frm.node_nm and a_to in t and a_from in t[a_to]:
            return float(a) / t[a_to][a_from]  # t[dst][src] = area at src / area at dst
        return float(a) * self.area_relative_to_45nm().value / frm.area_relative_to_45nm().value

    def scale_capacitance(self, c_f: float, frm: "TechnologyNode") -> float:
        """A switched capacitance known at ``frm`` carried here by the [SB17] effective capacitance E/V² [F]."""
        return float(c_f) * (self._poly("energy", self.vdd) / self.vdd**2) / (frm._poly("energy", frm.vdd) / frm.vdd**2)

    # ------------------------------------------------------------------------------------------ figures
    def sram_j_per_bit(self, size_bytes: float) -> Figure:
        """SRAM read energy [J/bit] of an array of ``size_bytes``: [Hor14] at 45 nm, 0.9 V (log-log in size,
        clamped to 8 kB–1 MB: larger arrays are banked, assumed), carried here by the [SB17] energy ratio.
        Writes cost as much as reads (assumed)."""
        if not (isinstance(size_bytes, (int, float)) and math.isfinite(size_bytes) and size_bytes >= 0):
            raise ValueError(f"size_bytes must be finite and >= 0, got {size_bytes!r}")
        h = _data()["horowitz_sram_45nm"]
        pts = [(s, e / 64) for s, e in h["points"]]
        s = min(max(float(size_bytes), pts[0][0]), pts[-1][0])
        e45 = _loglog(s, [p[0] for p in pts], [p[1] for p in pts], "SRAM size")
        e = self.scale_energy(e45, HOROWITZ_REFERENCE)
        return Figure(e, "J/bit", f"{h['source']}; carried from 45 nm HP, 0.9 V to {self.node_nm:g} nm "
                                  f"{self.device_flavor}, {self.vdd:g} V by the [SB17] energy ratio (assumed rule)")

    def sram_cell_area(self) -> Figure:
        """Area of one high-density 6T SRAM bitcell [µm²] (published cells; log-log between them)."""
        xs, ys = _table("sram_cell_um2")
        d = _data()["sram_cell_um2"]
        return Figure(_loglog(float(self.node_nm), xs, ys, "SRAM bitcell area"), d["unit"], d["source"])

    def wire_capacitance(self) -> Figure:
        """On-chip wire capacitance per length [F/m] ([HoMH01]; warns below 35 nm)."""
        d = _data()["wire_capacitance_f_per_um"]
        lo, hi = d["valid_nm"]
        if not lo <= self.node_nm <= hi:
            _warn(f"wire capacitance at {self.node_nm:g} nm: [HoMH01] projects {lo}-{hi} nm; 0.2 fF/um assumed to hold")
        return Figure(d["value"] / 1e-6, "F/m", d["source"])

    def adc_fom(self) -> Figure:
        """Walden figure of merit of a SAR ADC [J/conversion-step] (see the module notes for the rule; the 65 nm
        figure holds at :data:`REFERENCE_NODE`, 1.2 V)."""
        d = _data()["adc_fom_65nm_j_per_step"]
        ref = REFERENCE_NODE
        r = self._poly("energy", self.vdd) / ref._poly("energy", ref.vdd)
        s = _ADC_SCALING_SHARE
        return Figure(d["value"] * ((1 - s) + s * r), d["unit"],
                      f"{d['source']}; at {self.node_nm:g} nm: {s:g} of it scales with the [SB17] energy ratio "
                      f"({r:.3g}), the comparator share does not (assumed rule)")

    def a_vt(self) -> Figure:
        """Pelgrom coefficient A_VT of NMOS V_T [V·m]: the ring card's 65 nm figure times the node trend's ratio
        to its 65 nm entry (log-log between the trend's nodes)."""
        from hw_models.presets import cmos_65nm_ring

        xs, ys = _table("a_vt_trend_mv_um")
        d = _data()["a_vt_trend_mv_um"]
        a65 = cmos_65nm_ring().a_vt_n_v_m
        r = _loglog(float(self.node_nm), xs, ys, "A_VT") / _loglog(65.0, xs, ys, "A_VT")
        return Figure(a65 * r, "V m", f"{a65 * 1e9:.3g} mV um at 65 nm (the ring card, cmos_65nm_ring: IHP SG13G2 LV "
                                      f"NMOS, assumed for 65 nm) x {r:.3g}, the ratio of the node trend: {d['source']}")

    def sigma_vt(self, w_m: float, l_m: float) -> float:
        """σ(ΔV_T) [V] of a matched pair of W × L [m] transistors, A_VT / √(W L) [Pel89]."""
        for name, v in (("w_m", w_m), ("l_m", l_m)):
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be finite and > 0 [m], got {v!r}")
        return self.a_vt().value / math.sqrt(w_m * l_m)

    def off_current(self) -> Figure:
        """Off-current per gate width [A/m] of the device flavour (:attr:`device_flavor`) at this node: CACTI 7's
        ITRS device tables (LP: LSTP, HP: HP) at 300 K (:func:`device_off_current`)."""
        return device_off_current(float(self.node_nm), self.device_flavor)

    def leakage_density(self) -> Figure:
        """Static (leakage) power per logic area [W/mm²] at 25 °C (see the module notes for the rule)."""
        dens = _data()["transistor_density_45nm_per_mm2"]
        n_per_mm2 = dens["value"] / self.area_relative_to_45nm().value
        w_m = _MEAN_WIDTH_F * self.node_nm * 1e-9
        p = _OFF_FRACTION * self.off_current().value * w_m * n_per_mm2 * self.vdd
        return Figure(p, "W/mm^2",
                      f"1/2 (devices off, assumed) x I_off {self.off_current().value * 1e-6:.3g} A/um "
                      f"({self.off_current().source}) x V_DD {self.vdd:g} V x {n_per_mm2:.3g} transistors/mm^2 "
                      f"({dens['source']}, scaled by the [SB17] area ratio) x mean width {_MEAN_WIDTH_F:g} F (assumed)")

    # ------------------------------------------------------------------------------------------ the ring
    def ring_params(self, base=None):
        """The ring oscillator ported to this node (a new :class:`~hw_models.params.RingOscillatorParams`).

        Parameters
        ----------
        base : RingOscillatorParams, optional
            The model card to port (default :func:`hw_models.presets.cmos_65nm_ring`); its own node is its
            channel length, its supply its ``vdd_v``.

        Returns
        -------
        RingOscillatorParams
            ``base`` itself when this node and supply are the card's (the model card exists there); otherwise
            the card scaled by the rule of the module notes: with s_V = V/V₀, s_L = node/node₀,
            s_C = (E/V²)/(E₀/V₀²) and s_D = delay/delay₀ ([SB17] fits): V_T × s_V, λ / s_V, W, L × s_L,
            C_load × s_C, KP × s_C / (s_V s_D), A_VT × the node table's ratio.

        Notes
        -----
        The level-1 circuit C dV/dt = I(V) is then the card's circuit with voltages × s_V and time × s_D, so
        f₀ = f₀' / s_D, P = P' s_C s_V² / s_D and the phase diffusion D = D' / (s_D s_C s_V²) (thermal current
        noise ∝ g_m ∝ s_C / s_D over charge² ∝ (s_C s_V)²) — the circuit model computes them.
        """
        from hw_models.presets import cmos_65nm_ring

        base = cmos_65nm_ring() if base is None else base
        card = TechnologyNode(node_nm=round(base.l_n_m * 1e9, 6), flavor=self.flavor, vdd_v=base.vdd_v)
        if card.node_nm == self.node_nm and abs(card.vdd - self.vdd) < 1e-12:
            return base
        s_v = self.vdd / card.vdd
        s_l = self.node_nm / card.node_nm
        s_c = self.scale_capacitance(1.0, card)
        s_d = self.scale_delay(1.0, card)
        s_a = self.a_vt().value / card.a_vt().value
        s_k = s_c / (s_v * s_d)
        return base.replace(
            vdd_v=self.vdd, vto_n_v=base.vto_n_v * s_v, vto_p_v=base.vto_p_v * s_v,
            lambda_n_per_v=base.lambda_n_per_v / s_v, lambda_p_per_v=base.lambda_p_per_v / s_v,
            w_n_m=base.w_n_m * s_l, l_n_m=base.l_n_m * s_l, w_p_m=base.w_p_m * s_l, l_p_m=base.l_p_m * s_l,
            c_load_f=base.c_load_f * s_c, kp_n_a_per_v2=base.kp_n_a_per_v2 * s_k,
            kp_p_a_per_v2=base.kp_p_a_per_v2 * s_k, a_vt_n_v_m=base.a_vt_n_v_m * s_a,
            a_vt_p_v_m=base.a_vt_p_v_m * s_a)

    def porting_rule(self) -> str:
        """How :meth:`ring_params` carries a model card to this node (the ported device's source line; the device
        object itself is :meth:`hw_models.devices.RingOscillator.at_node`: the process model imports no device)."""
        return (f"the model card ported to {self.node_nm:g} nm {self.flavor} at {self.vdd:g} V by self-similar "
                f"scaling: delay {self._fit_source()}, capacitance by its E/V^2, A_VT by the node table "
                f"(hw_models.technology.TechnologyNode.ring_params; no model card exists below 65 nm)")

    def figures(self) -> dict:
        """Every figure of this node {name: Figure} (for reports)."""
        return {"nominal_vdd": self.nominal_vdd, "vdd": Figure(self.vdd, "V", "operating supply"),
                "delay": self.delay(), "energy": self.energy(), "power": self.power(),
                "area_relative_to_45nm": self.area_relative_to_45nm(), "sram_j_per_bit_8kB": self.sram_j_per_bit(8192),
                "sram_cell_area": self.sram_cell_area(), "wire_capacitance": self.wire_capacitance(),
                "adc_fom": self.adc_fom(), "a_vt": self.a_vt(), "off_current": self.off_current(),
                "leakage_density": self.leakage_density()}


#: The node and supply of [Hor14]'s 45 nm table (0.9 V; HP flavour assumed).
HOROWITZ_REFERENCE = TechnologyNode(node_nm=45, flavor="HP", vdd_v=0.9)
#: 65 nm at 1.2 V: the node and supply of the ring model card (:func:`hw_models.presets.cmos_65nm_ring`, [Lo23])
#: and of every figure the chip models assume at 65 nm.
REFERENCE_NODE = TechnologyNode(node_nm=65, vdd_v=1.2)


def chip_node(node_nm: float, flavor: str = "LP") -> TechnologyNode:
    """The node a chip is built at: its nominal supply, except at the ring card's node, where the card's supply
    (65 nm: 1.2 V, [Lo23]) is kept so that the card is used as it is."""
    if float(node_nm) == REFERENCE_NODE.node_nm:
        return TechnologyNode(node_nm=node_nm, flavor=flavor, vdd_v=REFERENCE_NODE.vdd)
    return TechnologyNode(node_nm=node_nm, flavor=flavor)


# ---------------------------------------------------------------------------------------------- CACTI's device tables
_CACTI_TABLE_NODES = (22, 32, 45, 65, 90)
_CACTI_COLUMN = {"HP": 0, "LP": 1}  # ITRS HP, ITRS LSTP columns of tech_params/*.dat


@functools.lru_cache(maxsize=1)
def cacti_tech_params():
    """The ``tech_params`` folder of CACTI 7 in the ``zigzag-dse`` wheel (:mod:`hw_models.cacti` runs the binary)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("zigzag")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the zigzag-dse package (CACTI 7's tables) is not installed: pip install 'zigzag-dse>=3.9.1'")
    return Path(list(spec.submodule_search_locations)[0]) / "cacti" / "cacti_master" / "tech_params"


def device_off_current(node_nm: float, flavor: str) -> Figure:
    """NMOS off-current per width [A/m] at 300 K of CACTI 7's ITRS device of the flavour (``LP``: LSTP, ``HP``:
    HP) at ``node_nm``: its ``tech_params`` tables (``-I_off_n (A/um) 0``), linear in the node between them as CACTI
    interpolates; outside 22–90 nm the nearest table's value (stated in the source)."""
    col = _CACTI_COLUMN[flavor]

    def at(n: int) -> float:
        for line in (cacti_tech_params() / f"{n}nm.dat").read_text().splitlines():
            parts = line.split()
            if line.startswith("-I_off_n (A/um)") and parts[2] == "0":
                return float(parts[3 + col])
        raise RuntimeError(f"no '-I_off_n (A/um) 0' line in CACTI's tech_params/{n}nm.dat")

    lo, hi = _CACTI_TABLE_NODES[0], _CACTI_TABLE_NODES[-1]
    n = min(max(float(node_nm), lo), hi)
    if n in _CACTI_TABLE_NODES:
        v = at(int(n))
    else:
        b = min(x for x in _CACTI_TABLE_NODES if x > n)
        a = max(x for x in _CACTI_TABLE_NODES if x < n)
        w = (n - a) / (b - a)
        v = w * at(b) + (1 - w) * at(a)
    cell = ("itrs-hp", "itrs-lstp")[col]
    how = (f"CACTI 7 tech_params ({cell} NMOS I_off at 300 K, the ITRS roadmap devices of CACTI 7; zigzag-dse)"
           + ("" if n in _CACTI_TABLE_NODES else f", linear in the node between its tables at {n:g} nm")
           + ("" if n == float(node_nm) else f"; held at its {n:g} nm value at {float(node_nm):g} nm (outside "
                                              f"CACTI's {lo:g}-{hi:g} nm; assumed)"))
    return Figure(v / 1e-6, "A/m", how)
