"""Shared helpers of the cmx Python tests.

The package is imported from PYTHONPATH (make test-python puts
build/python there); as a fallback the build tree next to the sources is
used.
"""
import os
import sys

import pytest

try:
    import cmx.core  # noqa: F401
except ImportError:  # pragma: no cover - developer convenience
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(root, "build", "python"))

import cmx.core as mx  # noqa: E402

ALL_DTYPES = [
    mx.bool_, mx.uint8, mx.uint16, mx.uint32, mx.uint64, mx.int8, mx.int16,
    mx.int32, mx.int64, mx.float16, mx.bfloat16, mx.float32, mx.float64,
    mx.complex64,
]


def np_dtype(dt):
    import numpy as np

    return {
        mx.bool_: np.bool_, mx.uint8: np.uint8, mx.uint16: np.uint16,
        mx.uint32: np.uint32, mx.uint64: np.uint64, mx.int8: np.int8,
        mx.int16: np.int16, mx.int32: np.int32, mx.int64: np.int64,
        mx.float16: np.float16, mx.float32: np.float32, mx.float64: np.float64,
        mx.complex64: np.complex64,
    }[dt]


def devices():
    """The devices to run device-parametrized tests on."""
    out = [mx.cpu]
    if mx.is_available(mx.gpu):
        out.append(mx.gpu)
    return out


@pytest.fixture(params=["cpu", "gpu"])
def device(request):
    dev = mx.cpu if request.param == "cpu" else mx.gpu
    if not mx.is_available(dev):
        pytest.skip("no GPU available")
    return dev


# The GPU has kernels for a few primitives so far (add, subtract, multiply,
# copies, views); the others raise "[Name] has no gpu implementation", a
# documented error. A GPU-parametrized test that fails with exactly that
# error is reported as an expected failure naming the primitive; any other
# failure, on either device, fails as usual.
NO_GPU_KERNEL = "has no gpu implementation"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not report.failed or call.excinfo is None:
        return
    params = getattr(item, "callspec", None)
    on_gpu = params is not None and params.params.get("device") == "gpu"
    exc = call.excinfo.value
    if on_gpu and isinstance(exc, RuntimeError) and NO_GPU_KERNEL in str(exc):
        report.outcome = "skipped"
        report.wasxfail = f"no gpu kernel yet: {exc}"
