"""What LLVM makes of the tiled SSA forward tile (``tile_fast_f32``) for several x86 targets: compile only.

The tiled SSA forward spends its element loop in :func:`oscsim.nn.ssa_tiled_numba.tile_fast_f32` (the
BLAS products around it are PyTorch's). Numba compiles it for the host CPU, so on an Intel AVX-512 machine
the loop may be 256- or 512-bit wide depending on LLVM's tuning for that CPU, while PyTorch's own CPU
kernels (SDPA, the competitor of ``oscsim bench attention``) dispatch to AVX-512 code there. This script
compiles the tile for each target named (``NUMBA_CPU_NAME``, ``NUMBA_CPU_FEATURES`` given or "" = that
CPU's own features, in a fresh interpreter with a throw-away cache folder) and reads the assembly: the
widths of the packed single-precision arithmetic, and of the innermost loop with most of it, its length and
stack accesses (spills). Nothing is run on those targets: it says what code the target would get, not how
fast it is.

Usage: ``python benchmarks/ssa_tile_codegen.py [CPU[:FEATURES] ...]``, default: the host, haswell,
skylake-avx512, skylake-avx512:-prefer-256-bit, icelake-server, sapphirerapids, znver3, znver4.
One JSON line per target.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

DEFAULT = ("host", "haswell", "skylake-avx512", "skylake-avx512:-prefer-256-bit", "icelake-server",
           "sapphirerapids", "znver3", "znver4")
_BITS = {"xmm": 128, "ymm": 256, "zmm": 512}
# packed single-precision arithmetic (not moves/shuffles): what the element loop's width is judged by
_ARITH = re.compile(r"^\s+(v(?:fn?m(?:add|sub)\d*|add|sub|mul|div|sqrt|max|min|rndscale|round|cvt\w*)ps)\s+(.*)$")


def _analyse(asm: str) -> dict:
    counts: dict = {}
    for line in asm.splitlines():
        m = _ARITH.match(line)
        if m:
            regs = re.findall(r"%([xyz]mm)\d+", m.group(2))
            if regs:
                w = max(_BITS[r] for r in regs)
                counts[w] = counts.get(w, 0) + 1
    lines = asm.splitlines()
    blocks = []
    for k, line in enumerate(lines):
        lab = re.match(r"^(\.?LBB\w+):", line)
        if lab:
            for e in range(k + 1, len(lines)):
                if re.match(r"^\.?LBB\w+:", lines[e]):
                    break  # not an innermost loop
                if re.match(rf"^\s+j\w+\s+{re.escape(lab.group(1))}\s*$", lines[e]):
                    blocks.append(lines[k + 1: e + 1])
                    break

    def arith(block):
        return [x for x in block if _ARITH.match(x) and re.search(r"%[xyz]mm", x)]

    hot = max(blocks, key=lambda b: len(arith(b))) if blocks else []
    hot_widths: dict = {}
    for x in arith(hot):
        w = max(_BITS[r] for r in re.findall(r"%([xyz]mm)\d+", x))
        hot_widths[w] = hot_widths.get(w, 0) + 1
    instr = [x for x in hot if x.strip() and not x.strip().startswith((".", "#")) and not x.rstrip().endswith(":")]
    return {"packed_f32_arith_by_bits": {str(k): v for k, v in sorted(counts.items())},
            "hot_loop": {"instructions": len(instr), "packed_arith_by_bits": {str(k): v for k, v in
                                                                             sorted(hot_widths.items())},
                         "stack_accesses": sum("(%rsp)" in x for x in hot)},
            "zmm_registers": len(set(re.findall(r"%zmm\d+", asm))),
            "ymm_registers": len(set(re.findall(r"%ymm\d+", asm)))}


def inspect_here() -> dict:
    """Compile ``tile_fast_f32`` for this process's target (reference boundary, no drift, and with drift)."""
    from numba import types as T
    from numba.core.registry import cpu_target

    from oscsim.nn.ssa_tiled_numba import tile_fast_f32

    # the signatures `ssa_tiled` calls it with (C-contiguous float32 arrays from torch); compiled, never run:
    # the target may have instructions this machine lacks
    a1, a2, a3 = (T.Array(T.float32, n, "C") for n in (1, 2, 3))
    head = (a3, a2, a1, a2, T.int64, T.int64, T.boolean, T.boolean, a2, a2)
    out = {}
    for name, mu in (("no_drift", T.none), ("drift", a1)):
        sig = (*head, mu)
        tile_fast_f32.compile(sig)
        out[name] = _analyse(tile_fast_f32.inspect_asm(sig))
    cg = cpu_target.target_context.codegen()
    feats = cg._get_host_cpu_features()
    # with NUMBA_CPU_FEATURES="" the named CPU's own features apply (the string is then empty)
    return {"cpu_name": cg._get_host_cpu_name(), "features": feats or "(the CPU's own)", **out}


def inspect_target(spec: str) -> dict:
    """``spec``: ``host`` or ``CPU[:FEATURES]``; compiled in a fresh interpreter."""
    env = dict(os.environ)
    if spec != "host":
        cpu, _, feats = spec.partition(":")
        env.update(NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES=feats)
    with tempfile.TemporaryDirectory() as cache:
        env["NUMBA_CACHE_DIR"] = cache  # never leave another target's objects in the package's cache
        code = "import json, sys; sys.path.insert(0, 'benchmarks'); import ssa_tile_codegen as m; " \
               "print(json.dumps(m.inspect_here()))"
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    if spec == "host":  # the host's full features string is long: keep whether AVX-512 is on
        res["features"] = "+avx512f on" if "+avx512f" in res["features"].split(",") else "host, no +avx512f"
    return {"target": spec, **res}


def main(argv: list[str]) -> None:
    for spec in argv or DEFAULT:
        print(json.dumps(inspect_target(spec)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
