"""The coupling kernel's code generation: vector widths per target, and the alignment its sums rely on."""

import platform

import pytest

from oscsim.bench.integrator import coupling_codegen, cpu_info, numba_target
from oscsim.engine._coupling import ALIGN


def test_cpu_and_target_reports():
    cpu = cpu_info()
    assert cpu["model"] and cpu["logical_cpus"] >= 1
    assert cpu["vector_isa"] in (None, "AVX-512", "AVX2+FMA", "AVX", "SSE4.2", "other")
    tgt = numba_target()
    assert tgt["cpu_name"] and isinstance(tgt["avx512f_enabled"], bool)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 assembly is read")
@pytest.mark.parametrize("cpu", [None, "skylake-avx512", "znver4"])
def test_vector_loop_width_divides_the_bound_alignment(cpu):
    """`block_bounds` aligns to ALIGN columns so that a row's sum does not depend on the bounds; that holds
    when one iteration of the vectorised column loop covers a divisor of ALIGN columns (compile only: the
    AVX-512 targets are inspected on any x86 machine). Intel AVX-512 CPUs get 256-bit vectors (LLVM's
    prefer-256-bit tuning), Zen 4 gets 512-bit ones."""
    gen = coupling_codegen(cpu)
    cols = gen["loop_columns_per_iteration"]
    assert len(cols) == 1 and ALIGN % cols[0] == 0, gen
    assert gen["hot_loop"]["packed_fmas"] >= 8 and gen["hot_loop"]["stack_accesses"] == 0, gen
    if cpu == "skylake-avx512":
        assert gen["fma_vector_bits"] == 256 and cols == [8]
    elif cpu == "znver4":
        assert gen["fma_vector_bits"] == 512 and cols == [16]
