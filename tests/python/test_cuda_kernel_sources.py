"""Every built-in CUDA kernel begins with CMX_GRID_WAIT() (the families are
flagged CMX__GPU_GRID_WAITS, so graph.c may launch any of them
programmatically, before the kernel ahead of it has ended: a kernel that
read or wrote memory before that wait would race with it), or with L2
prefetches (cmx_prefetch_l2: hints that read nothing into the kernel) and
then the wait. Checked on the sources, so it holds on machines without a
GPU too."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNELS = ROOT / "src" / "backend" / "cuda" / "kernels"


def _bodies(text):
    """(kernel name, the text after its opening brace) of each __global__."""
    for m in re.finditer(r"(__global__|CMX_LA_KERNEL)\s[^{;]*?(\w+)\s*\(", text):
        line = text[text.rfind("\n", 0, m.start()) + 1 : m.start()]
        if line.lstrip().startswith("#define"):
            continue
        brace = text.index("{", m.end())
        yield m.group(2), text[brace + 1 : brace + 200]


# What the code before a kernel's CMX_GRID_WAIT() may call: the prefetch,
# and arithmetic on the kernel's parameters (layout offsets, min / max).
PRE_WAIT_CALLS = {"cmx_prefetch_l2", "cmx_offsets", "min", "max", "for", "if",
                  "__align__",
                  "sizeof"}


def _function_body(name):
    """The whole body of the device function ``name`` (kernels/*.cu)."""
    for path in sorted(KERNELS.glob("*.cu")):
        text = path.read_text()
        m = re.search(r"_FN\s+void\s+" + name + r"\s*\(", text)
        if m:
            i = depth = text.index("{", m.end())
            depth = 0
            for j in range(i, len(text)):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    return text[i + 1 : j]
    raise AssertionError(f"no device function {name}")


def _check_pre_wait(where, code):
    """code (run before CMX_GRID_WAIT()) reads no memory into the kernel and
    writes none: its calls are PRE_WAIT_CALLS (or *_prefetch helpers,
    checked the same way), no loads (__ldg, atomics, dereferences)."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", " ", code, flags=re.S)
    for bad in ("__ldg", "atomic", "->", "*(", "cmx_q_ld", "cmx_q_load"):
        assert bad not in code, f"{where}: '{bad}' before CMX_GRID_WAIT()"
    for call in re.findall(r"(\w+)\s*(?:<[^<>;()]*>)?\s*\(", code):
        if call.endswith("_prefetch"):
            _check_pre_wait(call, _function_body(call))
        elif not (call in PRE_WAIT_CALLS or call in ("void", "char", "int")
                  or call.startswith("cmx_at") or call.startswith("const")):
            raise AssertionError(f"{where}: calls {call} before CMX_GRID_WAIT()")


def _waits_first(where, body):
    """body (a kernel's, after its brace) waits before it touches memory:
    CMX_GRID_WAIT() first, or prefetch helpers and then the wait, or a
    first call into a function that does so itself (cmx_qmv)."""
    body = body.replace("\\\n", "\n").lstrip()
    if body.startswith("CMX_GRID_WAIT();"):
        return
    m = re.match(r"(\w+)\s*(?:<[^;]*?>)?\s*\([^;]*\);\s*", body)
    assert m, f"{where} does not begin with CMX_GRID_WAIT()"
    name = m.group(1)
    if name.endswith("_prefetch"):
        _check_pre_wait(where, _function_body(name))
        assert body[m.end():].startswith("CMX_GRID_WAIT();"), (
            f"{where}: {name} is not followed by CMX_GRID_WAIT()")
        return
    fn = _function_body(name)
    assert "CMX_GRID_WAIT();" in fn, f"{where} does not begin with CMX_GRID_WAIT()"
    _check_pre_wait(f"{where} ({name})", fn[: fn.index("CMX_GRID_WAIT();")])


def test_every_kernel_waits_first():
    seen = 0
    for path in sorted(KERNELS.glob("*.cu")):
        for name, body in _bodies(path.read_text()):
            _waits_first(f"{path.name}: kernel {name}", body)
            seen += 1
    assert seen >= 60  # the walk found the kernels


def test_generated_kernels_wait_first():
    # compile's fused kernels (compiled.c writes their source)
    text = (ROOT / "src" / "backend" / "cuda" / "compiled.c").read_text()
    entries = re.findall(r'__global__ void[^{]*\{\\n"\s*"  CMX_GRID_WAIT\(\);', text)
    assert len(entries) == 2, "compiled.c's two kernel entries must wait first"


def test_macro_kernels_wait_first():
    """Kernels whose entry a macro writes (every family's, quantized.cu's
    CMX_QMV_ENTRY* among them: the mat-vec kernels and
    AddRMSNormQuantizedMatmul's cmx_qmv1n / cmx_qmv1r1n / cmx_qmv1sgn) wait
    first too; the walk above skips #define lines."""
    seen = set()
    for path in sorted(KERNELS.glob("*.cu")):
        text = path.read_text().replace("\\\n", " ")
        for line in text.splitlines():
            m = re.match(r"\s*#define\s+(\w+)", line)
            # a macro standing for the qualifiers (linalg's CMX_LA_KERNEL)
            # has no body: the walk above checks its uses
            if not m or "{" not in line.partition("__global__")[2]:
                continue
            body = line[line.index("{", line.index("__global__")) + 1:].lstrip()
            _waits_first(f"{path.name}: the kernels of macro {m.group(1)}", body)
            seen.add(m.group(1))
    assert {"CMX_QMV_ENTRY_R", "CMX_QMV_ENTRY_SG", "CMX_QMV_ENTRY_N",
            "CMX_SDPA_DEC"} <= seen


def test_pre_wait_check_catches_loads():
    # the check itself: a load or an unknown call before the wait fails it
    import pytest
    for code in ("float v = __ldg(p);", "x = foo(a);", "s = cmx_q_ld(A.sc, 0, 1);"):
        with pytest.raises(AssertionError):
            _check_pre_wait("case", code)
    _check_pre_wait("case", "for (int i = 0; i < n; i++) cmx_prefetch_l2(p + i);")
