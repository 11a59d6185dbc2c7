"""The portable wheel's BLAS (CMX_BLAS=wheel): PyPI's scipy-openblas32
exports every CBLAS/LAPACK name with the prefix `scipy_`, and
src/backend/cpu/blas.h (CBLAS, thread count) and lapack.h (LAPACK) map
cmx's calls onto those names. Each CPU source that calls BLAS is compiled
here as the wheel build compiles it (CMX_BLAS_PREFIX=scipy_, the wheel's
cblas.h): every BLAS name it leaves undefined must carry the prefix and be
exported by the wheel's library, so a BLAS call added without its mapping
fails here instead of failing to load from the wheel. (`make wheel` builds
and repairs the wheel itself; that takes a whole library build. Run this
file from a fresh venv with the wheel installed, and the last test calls
BLAS and LAPACK through the installed cmx.)"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CPU = ROOT / "src" / "backend" / "cpu"

sob = pytest.importorskip(
    "scipy_openblas32",
    reason="scipy-openblas32 is installed by `make venv` (the project venv)")


def blas_sources():
    """The CPU sources that include blas.h or lapack.h."""
    out = []
    for f in sorted(CPU.glob("*.c")):
        text = f.read_text()
        if re.search(r'#include "backend/cpu/(blas|lapack)\.h"', text):
            out.append(f)
    return out


def exported(lib):
    r = subprocess.run(["nm", "-D", "--defined-only", str(lib)],
                       capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in r.stdout.splitlines() if line}


def test_no_source_includes_cblas_directly():
    direct = [f.name for f in sorted((ROOT / "src").rglob("*.[ch]"))
              if f.name != "blas.h"
              and re.search(r"#include <cblas\.h>", f.read_text())]
    assert direct == [], f"include backend/cpu/blas.h instead: {direct}"


def test_prefixed_build_calls_only_prefixed_exported_names(tmp_path):
    srcs = blas_sources()
    assert len(srcs) >= 5, srcs  # matmul, conv, linalg, quantized, threads
    lib = Path(sob.get_lib_dir()) / "libscipy_openblas.so"
    have = exported(lib)
    undefined = set()
    for src in srcs:
        obj = tmp_path / (src.stem + ".o")
        r = subprocess.run(
            ["cc", "-std=c11", "-O0", "-c", f"-I{ROOT / 'src'}",
             f"-I{ROOT / 'include'}", f"-I{sob.get_include_dir()}",
             "-DCMX_BLAS_PREFIX=scipy_", str(src), "-o", str(obj)],
            capture_output=True, text=True)
        assert r.returncode == 0, f"{src.name}:\n{r.stderr[-3000:]}"
        nm = subprocess.run(["nm", "-u", str(obj)], capture_output=True,
                            text=True, check=True).stdout
        undefined |= {line.split()[-1] for line in nm.splitlines() if line}
    blas_like = re.compile(
        r"^(scipy_)?(cblas_\w+|openblas_\w+|[sdcz][a-z]{3,6}_)$")
    calls = sorted(s for s in undefined if blas_like.match(s))
    assert calls, "no BLAS call found: the pattern no longer matches"
    unprefixed = [s for s in calls if not s.startswith("scipy_")]
    assert unprefixed == [], f"names blas.h/lapack.h do not map: {unprefixed}"
    missing = [s for s in calls if s not in have]
    assert missing == [], f"not exported by {lib.name}: {missing}"


def test_the_imported_cmx_calls_blas_and_lapack():
    # sgemm and LAPACK's getrf/getri through whichever cmx is imported (the
    # build tree, or an installed wheel finding scipy-openblas32's library)
    np = pytest.importorskip("numpy")
    import cmx.core as mx

    a = np.random.default_rng(0).standard_normal((48, 48)).astype(np.float32)
    a += 48 * np.eye(48, dtype=np.float32)  # well conditioned
    m = mx.array(a)
    np.testing.assert_allclose(np.array(m @ m), a @ a, rtol=1e-4, atol=1e-3)
    inv = np.array(mx.linalg.inv(m, stream=mx.cpu))
    np.testing.assert_allclose(inv @ a, np.eye(48), atol=1e-4)
