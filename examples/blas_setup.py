"""Import before cmx.core: picks OpenBLAS's kernels when OpenBLAS might
not.

Debian 12's OpenBLAS (0.3.21) does not recognise some newer Xeons and falls
back to its SSE3 ("Prescott") kernels, about 4x slower for matrix products
and convolutions (README: Environment variables). OpenBLAS reads
OPENBLAS_CORETYPE once, when it is loaded, so this sets it first: SkylakeX
on CPUs with AVX-512, Haswell on CPUs with AVX2 (the kernels those
instructions run), unless the user set it. NOTE says what was done.
"""

import os


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def choose_coretype(flags):
    """The OPENBLAS_CORETYPE for a CPU with these /proc/cpuinfo flags, or
    None to leave OpenBLAS's own choice."""
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


if "OPENBLAS_CORETYPE" in os.environ:
    NOTE = f"OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} set by the user"
else:
    _core = choose_coretype(_cpu_flags())
    if _core:
        os.environ["OPENBLAS_CORETYPE"] = _core
        NOTE = f"OPENBLAS_CORETYPE={_core} from the CPU's flags"
    else:
        NOTE = "OpenBLAS's own choice"
