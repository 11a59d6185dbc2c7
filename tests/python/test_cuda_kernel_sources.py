"""Every built-in CUDA kernel begins with CMX_GRID_WAIT() (the families are
flagged CMX__GPU_GRID_WAITS, so graph.c may launch any of them
programmatically, before the kernel ahead of it has ended: a kernel that
read or wrote memory before that wait would race with it). Checked on the
sources, so it holds on machines without a GPU too."""

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


def test_every_kernel_waits_first():
    seen = 0
    for path in sorted(KERNELS.glob("*.cu")):
        for name, body in _bodies(path.read_text()):
            first = body.replace("\\\n", "\n").lstrip()
            assert first.startswith("CMX_GRID_WAIT();"), (
                f"{path.name}: kernel {name} does not begin with CMX_GRID_WAIT()")
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
            assert body.startswith("CMX_GRID_WAIT();"), (
                f"{path.name}: the kernels of macro {m.group(1)} do not begin "
                "with CMX_GRID_WAIT()")
            seen.add(m.group(1))
    assert {"CMX_QMV_ENTRY_R", "CMX_QMV_ENTRY_SG", "CMX_QMV_ENTRY_N"} <= seen
