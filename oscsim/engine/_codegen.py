"""Source of the disk-cacheable group loops: one per (built-in model kernel, solver), and one per `CustomODE`.

Numba cannot cache a function that takes other compiled functions as arguments (it embeds their
addresses), so each combination of a loop template (`_templates`), a solver's ``step`` and a model's
``drift`` is spelled out as a top-level function naming its step and drift as globals. This module only
*renders* that source, as text, deterministically; `_kernel_cache` writes it into the user cache at first
use and imports it from there. Nothing it generates is kept in the repository.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import re
from pathlib import Path

import numba

from . import _templates

__all__ = ["render", "render_custom", "sources_hash", "kernel_name", "FIXED_ARGS", "ADAPTIVE_ARGS"]

MODEL_KERNELS = {
    # model key suffix -> (module, drift, phases, prepare)
    "phase_sine": ("phase_network", "_drift_sine", "_phases_identity", "no_prepare"),
    "phase_general": ("phase_network", "_drift_general", "_phases_identity", "no_prepare"),
    "phase_sine_factors": ("phase_factored", "_drift_sine_factors", "_phases_identity", "_prepare_factors"),
    "phase_general_factors": ("phase_factored", "_drift_general_factors", "_phases_identity", "_prepare_factors"),
    "stuart_landau": ("stuart_landau", "_drift_sl", "_phases_sl", "no_prepare"),
}
FIXED_SOLVERS = {
    "EulerMaruyama": "euler_maruyama",
    "StochasticHeun": "stochastic_heun",
    "SRA1": "sra1",
    "RK4": "rk4",
    "Heun": "heun",
}
ADAPTIVE_SOLVERS = {"Dopri5": "dopri5"}

FIXED_ARGS = (
    "y0, t0, dt, n_steps, h_last, tgrid, P, sig, noisy, need_area, seed, m_sub, ws_len, n_stage, save_steps, ys, "
    "summ_on, summ_start, summ_every, mean_re, mean_im, coh, n_summ, yfin, fail_step, fail_t"
)
ADAPTIVE_ARGS = (
    "y0, t0, dt, targets, save_flag, P, ws_len, n_stage, rtol, atol, max_steps, ys, yfin, n_acc, n_rej, "
    "fail_code, fail_t"
)
# (template in `_templates`, argument list) per kind of loop
_KINDS = {"fixed": ("group_fixed", FIXED_ARGS), "adaptive": ("group_adaptive", ADAPTIVE_ARGS)}

# Every engine source the generated loops inline or call: Numba's disk cache is keyed on the generated file
# alone and does not notice a change in a function it calls, so all of these go into the cache key.
_HASHED = ("_codegen", "_templates", "_coupling", "rng", "phase_network", "phase_factored", "stuart_landau",
           "custom_ode")


def kernel_name(kind: str, model_key: tuple, solver) -> str | None:
    """Name of the generated loop for a built-in model kernel and a solver, or None if there is none.

    Parameters
    ----------
    kind : {"fixed", "adaptive"}
    model_key : tuple
        ``model._kernel_key()``: a built-in model's key ends in a string; a `CustomODE`'s in its ``rhs``.
    solver : Solver
    """
    if not isinstance(model_key[-1], str):
        return None
    suffix = model_key[0] if len(model_key) == 1 else f"{model_key[0]}_{model_key[1]}"
    solvers = FIXED_SOLVERS if kind == "fixed" else ADAPTIVE_SOLVERS
    if suffix not in MODEL_KERNELS or type(solver).__name__ not in solvers:
        return None
    return f"{kind}__{suffix}__{type(solver).__name__}"


def _wrap(args: str, indent: str) -> str:
    out, line = [], ""
    for a in args.split(", "):
        piece = a + ", "
        if len(indent) + len(line) + len(piece) > 110:
            out.append(line.rstrip())
            line = ""
        line += piece
    out.append(line.rstrip().rstrip(","))
    return ("\n" + indent).join(out)


def _specialise(template: str, name: str, step: str, drift: str, phases: str | None, prepare: str) -> str:
    """The source of ``_templates.<template>`` with its step/drift/phases/prepare arguments replaced by globals."""
    src = inspect.getsource(getattr(_templates, template))
    src = re.sub(r"@nb\.njit\([^\n]*\n", "@nb.njit(cache=True, fastmath=False)\n", src, count=1)
    src = src.replace(f"def {template}(step, drift, phases, prepare, g,", f"def {name}(g,")
    src = src.replace(f"def {template}(step, drift, prepare, g,", f"def {name}(g,")
    src = re.sub(r"\bstep\(drift, ", f"{step}(", src)
    src = re.sub(r"\bprepare\(g, ", f"{prepare}(g, ", src)
    if phases is not None:
        src = re.sub(r"\bphases\(", f"{phases}(", src)
    return src.rstrip()


def _specialise_step(module: str, name: str, drift: str) -> str:
    """The source of ``solvers.<module>.step`` with its ``drift`` argument replaced by a global."""
    mod = importlib.import_module(f"oscsim.engine.solvers.{module}")
    src = inspect.getsource(mod.step)
    src = re.sub(r"@nb\.njit\([^\n]*\n", "@nb.njit(cache=True, fastmath=True)\n", src, count=1)
    src = src.replace("def step(drift, ", f"def {name}(")
    src = re.sub(r"\bdrift\(", f"{drift}(", src)
    return src.rstrip()


def _solver_constants(smod: str) -> dict:
    """A solver module's private float constants (tableau entries) its step uses, by name."""
    m = importlib.import_module(f"oscsim.engine.solvers.{smod}")
    return {k: v for k, v in sorted(vars(m).items()) if k.startswith("_") and isinstance(v, float)}


def _solver_constants_imports(smods) -> list[str]:
    """The import lines of the solvers' constants. They share the generated module's namespace, so a name
    two solvers define with different values is refused (the later import would silently replace the
    earlier one in the other solver's step)."""
    lines, owner = [], {}
    for smod in smods:
        consts = _solver_constants(smod)
        for k, v in consts.items():
            if k in owner and owner[k][1] != v:
                raise RuntimeError(f"solver constant {k} is defined by solvers.{owner[k][0]} ({owner[k][1]!r}) and "
                                   f"solvers.{smod} ({v!r}); the generated kernels import both into one module: "
                                   f"rename one")
            owner.setdefault(k, (smod, v))
        if consts:
            lines.append(f"from oscsim.engine.solvers.{smod} import {', '.join(consts)}")
    return lines


def _loop_block(kind: str, smod: str, name: str, step: str, drift: str, phases: str | None,
                prepare: str = "no_prepare") -> list[str]:
    """A solver step, the group loop over it, and the strided multi-group entry point ``name``."""
    template, args = _KINDS[kind]
    group = f"_g_{name}"
    return [
        "",
        "",
        _specialise_step(smod, step, drift),
        "",
        "",
        _specialise(template, group, step, drift, phases, prepare),
        "",
        "",
        "@nb.njit(cache=True, nogil=True)",
        f"def {name}(g_first, g_step, {_wrap(args, '    ')}):",
        "    for gp in range(g_first, y0.shape[0], g_step):",
        f"        {group}(np.int64(gp), {_wrap(args, '            ')})",
    ]


_HEADER = [
    "import numba as nb",
    "import numpy as np",
    "",
    "from oscsim.engine._templates import _INV_SQRT3, _accumulate, _all_finite, no_prepare, step_time",
    "from oscsim.engine.rng import fill_normals, seed_state",
]


def sources_hash(root: Path | None = None) -> str:
    """Hash of the generator, the loop templates, every source the generated loops inline, and Numba's version.

    Parameters
    ----------
    root : Path, optional
        The engine's source directory (default: this package's).

    Returns
    -------
    str
        16 hex digits; the cache file of the built-in loops is named after it, so any change in these
        sources (or a Numba upgrade) gives a new file, which Numba's disk cache sees as new.
    """
    here = Path(__file__).parent if root is None else Path(root)
    files = sorted([here / f"{m}.py" for m in _HASHED] + list((here / "solvers").glob("*.py")))
    h = hashlib.sha256(f"numba {numba.__version__}\n".encode())
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def render() -> str:
    """Source of the module of built-in loops: ``{kind}__{model}__{Solver}(g_first, g_step, ...)`` per combination.

    Deterministic: the same sources give the same text.
    """
    lines = [
        f'"""GENERATED by oscsim.engine._codegen (sources hash {sources_hash()}): do not edit.',
        "",
        "One disk-cached time loop over a strided set of groups per (built-in model kernel, solver);",
        'see oscsim/engine/_templates.py for the body."""',
        "",
        *_HEADER,
    ]
    imported = []
    for mod, drift, ph, prep in MODEL_KERNELS.values():
        names = ", ".join([drift, ph] + ([prep] if prep != "no_prepare" else []))
        line = f"from oscsim.engine.{mod} import {names}"
        if line not in imported:
            imported.append(line)
    imported += _solver_constants_imports({**FIXED_SOLVERS, **ADAPTIVE_SOLVERS}.values())
    lines += imported
    for key, (mod, drift, ph, prep) in MODEL_KERNELS.items():
        for kind, solvers in (("fixed", FIXED_SOLVERS), ("adaptive", ADAPTIVE_SOLVERS)):
            for cls, smod in solvers.items():
                name = f"{kind}__{key}__{cls}"
                phases = ph if kind == "fixed" else None
                lines += _loop_block(kind, smod, name, f"_step__{key}__{cls}", drift, phases, prep)
    return "\n".join(lines) + "\n"


def render_custom(mod_name: str, name: str, solver_cls: str, adaptive: bool) -> str:
    """Source of a module with one loop ``loop(g_first, g_step, ...)`` for a module-level `CustomODE` rhs.

    Parameters
    ----------
    mod_name, name : str
        Where the ``rhs`` is importable from (``from mod_name import name``).
    solver_cls : str
        The solver's class name (a key of `FIXED_SOLVERS` or `ADAPTIVE_SOLVERS`).
    adaptive : bool
    """
    kind = "adaptive" if adaptive else "fixed"
    smod = (ADAPTIVE_SOLVERS if adaptive else FIXED_SOLVERS)[solver_cls]
    lines = [
        '"""GENERATED by oscsim.engine._codegen for a CustomODE right-hand side: do not edit."""',
        *_HEADER,
        f"from {mod_name} import {name} as _rhs",
        "from oscsim.engine.custom_ode import _no_phases",
        *_solver_constants_imports([smod]),
        "",
        "",
        "@nb.njit(cache=True)",
        "def _drift(t, y, g, P, ws, out):",
        "    p = P[0]",
        "    _rhs(t, y, p[g * np.int64(p.shape[0] > 1)], out)",
    ]
    lines += _loop_block(kind, smod, "loop", "_step", "_drift", None if adaptive else "_no_phases")
    return "\n".join(lines) + "\n"
