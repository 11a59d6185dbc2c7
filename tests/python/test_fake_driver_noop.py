"""scripts/host-profile.sh's ground: the fake CUDA driver's no-op mode
(FAKE_CUDA_NOOP=1) and the no-op cuBLASLt beside it (fake_cuda/noop) let a
GPU program that uses kernels the fake cannot emulate, and a matrix
product, run to its end (its host side alone), while without them the same
program fails with an error naming the kernel. Runs in a child process,
since the driver is chosen when cmx first loads it."""

import os
import pathlib
import subprocess
import sys

import cmx.core as mx
import pytest

BUILD = pathlib.Path(mx.__file__).resolve().parents[2]
FAKE = BUILD / "fake_cuda" / "libcuda.so.1"

PROGRAM = """
import cmx.core as mx
mx.set_default_device(mx.gpu)
x = mx.arange(64, dtype=mx.float32).reshape(8, 8)
y = mx.fast.rms_norm(mx.exp(x), mx.ones((8,)), 1e-5) @ x
y = y.sum(axis=1)
mx.eval(y)
print("shape", y.shape)
"""


def _run(noop):
    dirs = [str(FAKE.parent)] + ([str(FAKE.parent / "noop")] if noop else [])
    env = dict(os.environ, FAKE_CUDA_DELAY="0", LD_LIBRARY_PATH=":".join(
        dirs + [os.environ.get("LD_LIBRARY_PATH", "")]))
    env.pop("FAKE_CUDA_NOOP", None)
    if noop:
        env["FAKE_CUDA_NOOP"] = "1"
    return subprocess.run([sys.executable, "-c", PROGRAM], env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(not FAKE.exists(), reason="the fake driver is built only "
                    "where NVRTC is installed")
def test_noop_mode_runs_the_host_side():
    r = _run(noop=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "shape (8,)" in r.stdout
    r = _run(noop=False)
    assert r.returncode != 0
    assert "failed" in r.stderr and "cmx_" in r.stderr, r.stderr[-2000:]
