"""SRAM macros from CACTI 7: read and write energy per access, leakage, area and access time by node.

The CACTI 7 binary and its configuration writer ship in the ``zigzag-dse`` wheel (BSD licence; the binary at
``zigzag/cacti/cacti_master/cacti``, its technology files in ``tech_params/``, the configuration template in
``cacti_config_creator.py``). :func:`sram_macro` writes ZigZag's template with this package's choices, runs the
binary in a private folder and parses its one-line summary (``<cfg>.out``); nothing is downloaded.

Choices (where CACTI asks and the chip model is silent)
    * one read-write port, one bank, 64-bit words by default (the width of [Hor14]'s SRAM figures);
    * cell and peripheral devices of the flavour: ``LP`` -> ITRS LSTP (low standby power: the off-current of
      :mod:`hw_models.technology`'s LP is the LSTP target), ``HP`` -> ITRS HP;
    * 300 K (the 25 °C of :meth:`hw_models.technology.TechnologyNode.leakage_density`), no ECC (an
      accelerator's scratchpad, like [Hor14]'s figures), otherwise ZigZag's template (UCA, ED² objective);
    * the capacity rounded up to a power of two (what a macro compiler delivers), to at least
      :data:`MIN_BYTES` (the smallest array CACTI organises with 64-bit words) and at most :data:`MAX_BYTES`
      (1 MiB; a larger buffer is banked in such macros); the energy per access is the macro's, the leakage and
      area are per bit of the macro times the bits asked for;
    * CACTI runs at its own nominal supply of the flavour (``tech_params/*.dat``, interpolated linearly in the
      node as CACTI does); at another supply the dynamic energies are scaled by (V / V_CACTI)² and the
      leakage by V / V_CACTI (assumed, first order: the off-current held).

Nodes
    The binary accepts 22–90 nm (it interpolates its tables between 22, 32, 45, 65 and 90 nm itself; 28 nm is
    CACTI's interpolation between 32 and 22 nm). Beyond them the figures are carried from the nearest end
    (22 or 90 nm) with a :class:`~hw_models.technology.TechnologyExtrapolationWarning` (or stated under
    :func:`~hw_models.technology.stated_extrapolation`): energies by the Stillmaker-Baas energy ratio at the
    two nodes' supplies, area by the published bitcell-area ratio (:meth:`TechnologyNode.sram_cell_area`),
    leakage by the ratio of :meth:`TechnologyNode.leakage_density` times the area ratio.

Results are cached on disk (:func:`hw_models.derived_cache.cached_arrays`, kind ``cacti``) and in the process,
so a configuration runs the binary at most once.

References
----------
[CACTI7] R. Balasubramonian, A. B. Kahng, N. Muralimanohar, A. Shafiee, V. Srinivas, "CACTI 7: new tools for
         interconnect exploration in innovative off-chip memories", ACM TACO 14, 14 (2017).
[ZZ] L. Mei et al., "ZigZag: enlarging joint architecture-mapping design space exploration for DNN
     accelerators", IEEE Trans. Computers 70, 1160 (2021); the ``zigzag-dse`` package.
[Hor14] M. Horowitz, ISSCC 2014, p. 10.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import math
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hw_models.derived_cache import cache_root, cached_arrays
from hw_models.technology import Figure, TechnologyNode, _warn, device_off_current

__all__ = ["SramMacro", "sram_macro", "device_off_current", "cacti_dir", "CACTI_NODES_NM", "MIN_BYTES", "MAX_BYTES",
           "CactiError"]

#: The nodes the binary accepts [nm] (its tables: 22, 32, 45, 65, 90; between them interpolated by CACTI).
CACTI_NODES_NM = (22.0, 90.0)
#: Smallest capacity CACTI organises with 64-bit words [bytes] (128 B finds no organisation; 256 B does).
MIN_BYTES = 256
#: Largest macro modelled [bytes]: a larger buffer is banked in 1 MiB macros, each access one macro's (the
#: routing between the macros is not modelled; assumed, as the former rule that clamped [Hor14] at 1 MB).
MAX_BYTES = 1 << 20
_CELL = {"LP": "itrs-lstp", "HP": "itrs-hp"}
_VDD_COLUMN = {"itrs-hp": 0, "itrs-lstp": 1}  # columns of '-Vdd (V)' in tech_params/*.dat
_TEMPERATURE_K = 300
_TABLE_NODES = (22, 32, 45, 65, 90)


class CactiError(RuntimeError):
    """CACTI found no organisation for a configuration, or its binary could not be run."""


@dataclass(frozen=True, kw_only=True)
class SramMacro:
    """One SRAM macro's figures (CACTI 7 at its node, flavour and supply).

    Attributes
    ----------
    capacity_bytes : float
        The capacity asked for [bytes] (the CACTI macro is :attr:`macro_bytes`).
    macro_bytes : int
        The capacity CACTI modelled [bytes].
    word_bits, banks, ports : int
    node_nm : float
    flavor : str
    vdd_v : float
    read_j, write_j : Figure
        Dynamic energy per word access [J].
    leakage_w : Figure
        Standby leakage of ``capacity_bytes`` [W].
    area_mm2 : Figure
        Area of ``capacity_bytes`` [mm²].
    access_s : Figure
        Access time of the macro [s].
    source : str
        How the figures were obtained.
    """

    capacity_bytes: float
    macro_bytes: int
    word_bits: int
    banks: int
    ports: int
    node_nm: float
    flavor: str
    vdd_v: float
    read_j: Figure
    write_j: Figure
    leakage_w: Figure
    area_mm2: Figure
    access_s: Figure
    source: str

    @property
    def read_j_per_bit(self) -> float:
        """Read energy per bit [J/bit]."""
        return self.read_j.value / self.word_bits

    @property
    def write_j_per_bit(self) -> float:
        """Write energy per bit [J/bit]."""
        return self.write_j.value / self.word_bits


# ---------------------------------------------------------------------------------------------- the binary
@functools.lru_cache(maxsize=1)
def _package_dir() -> Path:
    spec = importlib.util.find_spec("zigzag")
    if spec is None or not spec.submodule_search_locations:
        raise CactiError("the zigzag-dse package (CACTI 7's binary) is not installed: pip install 'zigzag-dse>=3.9.1'")
    d = Path(list(spec.submodule_search_locations)[0]) / "cacti" / "cacti_master"
    if not (d / "cacti").is_file() or not (d / "tech_params").is_dir():
        raise CactiError(f"no CACTI binary or tech_params in {d} (zigzag-dse >= 3.9.1 ships both)")
    return d


def _version() -> str:
    try:
        return importlib.metadata.version("zigzag-dse")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@functools.lru_cache(maxsize=1)
def cacti_dir() -> Path:
    """The folder whose ``cacti`` is executable and whose ``tech_params/`` it reads: the wheel's own folder when
    the binary is executable there, else a copy under ``$OSCSIM_CACHE/cacti-<version>`` with the execute bit
    set (a wheel may drop it)."""
    src = _package_dir()
    if os.access(src / "cacti", os.X_OK):
        return src
    dst = cache_root() / f"cacti-{_version()}"
    if not os.access(dst / "cacti", os.X_OK):
        tmp = Path(tempfile.mkdtemp(prefix=".cacti-", dir=cache_root()))
        shutil.copy2(src / "cacti", tmp / "cacti")
        shutil.copytree(src / "tech_params", tmp / "tech_params")
        (tmp / "cacti").chmod((tmp / "cacti").stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        try:
            os.replace(tmp, dst)
        except OSError:  # another process published it first
            shutil.rmtree(tmp, ignore_errors=True)
    return dst


def _cacti_vdd(node_nm: float, cell: str) -> float:
    """CACTI's nominal supply of the flavour at ``node_nm`` [V]: its ``tech_params`` tables, linear in the node
    between them (CACTI's own interpolation)."""
    def vdd_at(n: int) -> float:
        for line in (cacti_dir() / "tech_params" / f"{n}nm.dat").read_text().splitlines():
            if line.startswith("-Vdd (V)"):
                return float(line.split()[2 + _VDD_COLUMN[cell]])
        raise CactiError(f"no '-Vdd (V)' line in tech_params/{n}nm.dat")

    if node_nm in _TABLE_NODES:
        return vdd_at(int(node_nm))
    hi = min(n for n in _TABLE_NODES if n > node_nm)
    lo = max(n for n in _TABLE_NODES if n < node_nm)
    a = (node_nm - lo) / (hi - lo)
    return a * vdd_at(hi) + (1 - a) * vdd_at(lo)


def _config_text(macro_bytes: int, word_bits: int, banks: int, ports: int, node_nm: float, cell: str) -> str:
    """ZigZag's CACTI configuration template with this module's choices (see the module notes)."""
    from zigzag.cacti.cacti_master.cacti_config_creator import CactiConfig

    cfg = CactiConfig()
    base = []
    for line in cfg.baseline_config:
        if line.startswith(("-Data array cell type", "-Data array peripheral type", "-Tag array cell type",
                            "-Tag array peripheral type")):
            line = line.split(' - "')[0] + f' - "{cell}"\n'
        elif line.startswith("-operating temperature"):
            line = f"-operating temperature (K) {_TEMPERATURE_K}\n"
        elif line.startswith("-Add ECC"):
            line = '-Add ECC - "false"\n'
        base.append(line)
    values = {"cache_size": macro_bytes, "line_size": word_bits // 8, "IO_bus_width": word_bits,
              "associativity": 1, "rd_wr_port": ports, "ex_rd_port": 0, "ex_wr_port": 0, "single_rd_port": 0,
              "bank_count": banks, "technology": f"{node_nm / 1000:.4f}", "mem_type": '"ram"'}
    opts = cfg.config_options
    return "".join(base) + "".join(opts[k]["string"] + str(v) + "\n" for k, v in values.items())


def _run_cacti(macro_bytes: int, word_bits: int, banks: int, ports: int, node_nm: float, cell: str) -> dict:
    """Run the binary once: {'read_j', 'write_j', 'leakage_w', 'area_mm2', 'access_s'} at CACTI's supply."""
    d = cacti_dir()
    text = _config_text(macro_bytes, word_bits, banks, ports, node_nm, cell)
    with tempfile.TemporaryDirectory(prefix="oscsim-cacti-") as tmp:
        # CACTI reads tech_params/ relative to its working folder (absolute paths crash it, ZigZag notes)
        os.symlink(d / "tech_params", Path(tmp) / "tech_params")
        (Path(tmp) / "sram.cfg").write_text(text)
        try:
            r = subprocess.run([str(d / "cacti"), "-infile", "sram.cfg"], cwd=tmp, capture_output=True, text=True,
                               timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CactiError(f"CACTI binary {d / 'cacti'} could not run: {e}") from e
        out = Path(tmp) / "sram.cfg.out"
        if not out.is_file():
            tail = " ".join(r.stdout.strip().splitlines()[-1:]) or r.stderr.strip()[-200:]
            raise CactiError(f"CACTI found no SRAM of {macro_bytes} B, {word_bits}-bit words, {banks} bank(s), "
                             f"{ports} port(s) at {node_nm:g} nm ({cell}): {tail}")
        head, row = out.read_text().splitlines()[:2]
    cols = {k.strip(): v.strip() for k, v in zip(head.split(","), row.split(","))}
    try:
        return {"read_j": float(cols["Dynamic read energy (nJ)"]) * 1e-9,
                "write_j": float(cols["Dynamic write energy (nJ)"]) * 1e-9,
                "leakage_w": float(cols["Standby leakage per bank(mW)"]) * 1e-3 * banks,
                "area_mm2": float(cols["Area (mm2)"]),
                "access_s": float(cols["Access time (ns)"]) * 1e-9}
    except (KeyError, ValueError) as e:
        raise CactiError(f"unexpected CACTI output columns: {sorted(cols)}") from e


_KEYS = ("read_j", "write_j", "leakage_w", "area_mm2", "access_s")


@functools.lru_cache(maxsize=512)
def _cacti_cached(macro_bytes: int, word_bits: int, banks: int, ports: int, node_nm: float, cell: str) -> dict:
    key = f"{macro_bytes}:{word_bits}:{banks}:{ports}:{node_nm!r}:{cell}:{_TEMPERATURE_K}K:zigzag-dse-{_version()}"
    import numpy as np

    def compute():
        r = _run_cacti(macro_bytes, word_bits, banks, ports, node_nm, cell)
        return {"figures": np.array([r[k] for k in _KEYS])}

    a = cached_arrays("cacti", key, compute, {"figures": (len(_KEYS),)})["figures"]
    return dict(zip(_KEYS, (float(x) for x in a)))


# ---------------------------------------------------------------------------------------------- the macro
def _check_int(name: str, v, allowed: tuple) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}, got {v!r}")
    return v


def sram_macro(capacity_bytes: float, node: TechnologyNode, *, word_bits: int = 64, banks: int = 1,
               ports: int = 1) -> SramMacro:
    """CACTI 7's figures for an SRAM of ``capacity_bytes`` at ``node`` (its node, flavour and supply).

    Parameters
    ----------
    capacity_bytes : float
        Capacity [bytes], > 0 (rounded up for CACTI: see the module notes).
    node : TechnologyNode
        Node, flavour (LP: ITRS LSTP devices; HP: ITRS HP) and supply.
    word_bits : {8, 16, 32, 64, 128, 256, 512}
        Bits per access.
    banks : {1, 2, 4, 8, 16}
        UCA banks.
    ports : {1, 2}
        Read-write ports.

    Returns
    -------
    SramMacro
    """
    c = capacity_bytes
    if isinstance(c, bool) or not isinstance(c, (int, float)) or not (math.isfinite(c) and c > 0):
        raise ValueError(f"capacity_bytes must be a finite number > 0 [bytes], got {c!r}")
    if not isinstance(node, TechnologyNode):
        raise ValueError(f"node must be a hw_models.technology.TechnologyNode, got {type(node).__name__}")
    word_bits = _check_int("word_bits", word_bits, (8, 16, 32, 64, 128, 256, 512))
    banks = _check_int("banks", banks, (1, 2, 4, 8, 16))
    ports = _check_int("ports", ports, (1, 2))
    macro = min(MAX_BYTES, max(MIN_BYTES * banks * max(1, word_bits // 64), 2 ** math.ceil(math.log2(c))))
    lo, hi = CACTI_NODES_NM
    n = float(node.node_nm)
    at = min(max(n, lo), hi)
    cell = _CELL[node.device_flavor]
    raw = _cacti_cached(macro, word_bits, banks, ports, at, cell)
    v_c = _cacti_vdd(at, cell)
    how = (f"CACTI 7 [CACTI7] (zigzag-dse {_version()}): {macro} B macro, {word_bits}-bit words, {banks} bank(s), "
           f"{ports} r/w port(s), {cell} cells and periphery, {_TEMPERATURE_K} K, at {at:g} nm"
           + (" (CACTI's own interpolation between its 32 and 22 nm tables)" if 22 < at < 32 else "")
           + f", {v_c:.3g} V; dynamic energy x (V/V_CACTI)^2 = ({node.vdd:.3g}/{v_c:.3g})^2, leakage x V/V_CACTI "
             f"(assumed)")
    e_s, a_s, l_s = (node.vdd / v_c) ** 2, 1.0, node.vdd / v_c
    if at != n:
        ref = TechnologyNode(node_nm=at, flavor=node.device_flavor)
        _warn(f"SRAM at {n:g} nm: CACTI 7 covers {lo:g}-{hi:g} nm; carried from its {at:g} nm figures by the "
              f"Stillmaker-Baas energy ratio and the bitcell-area and leakage-density ratios")
        e_s = node.scale_energy(1.0, ref) * (ref.vdd / v_c) ** 2
        a_s = node.sram_cell_area().value / ref.sram_cell_area().value
        l_s = (ref.vdd / v_c) * a_s * node.leakage_density().value / ref.leakage_density().value
        how += (f"; carried from {at:g} nm to {n:g} nm (outside CACTI's {lo:g}-{hi:g} nm): energy x {e_s:.3g} "
                f"(Stillmaker-Baas energy ratio at the nodes' supplies), area x {a_s:.3g} (bitcell areas), "
                f"leakage x {l_s:.3g} (leakage density x area)")
    share = c / macro
    return SramMacro(
        capacity_bytes=float(c), macro_bytes=macro, word_bits=word_bits, banks=banks, ports=ports, node_nm=n,
        flavor=node.device_flavor, vdd_v=node.vdd,
        read_j=Figure(raw["read_j"] * e_s, "J/access", how),
        write_j=Figure(raw["write_j"] * e_s, "J/access", how),
        leakage_w=Figure(raw["leakage_w"] * l_s * share, "W", how + f"; x {share:.3g} of the macro's bits"),
        area_mm2=Figure(raw["area_mm2"] * a_s * share, "mm^2", how + f"; x {share:.3g} of the macro's bits"),
        access_s=Figure(raw["access_s"], "s", how + " (at CACTI's supply)"),
        source=how)
