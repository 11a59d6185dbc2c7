"""Shared helpers of the cmx Python tests.

The package is imported from PYTHONPATH (make test-python puts
build/python there); as a fallback the build tree next to the sources is
used.
"""
import os
import re
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


# ---------------------------------------------------------------- devices
# Op tests run on every device: `device` is parametrized over cpu and gpu
# (GPU cases are skipped only where no GPU exists), and modules of op tests
# use `on_device` to make it the default device for the whole test. On the
# GPU a result can be checked against the CPU's with `cpu_match`.


@pytest.fixture(params=["cpu", "gpu"])
def device(request):
    dev = mx.cpu if request.param == "cpu" else mx.gpu
    if not mx.is_available(dev):
        pytest.skip("no GPU on this machine")
    return dev


@pytest.fixture
def on_device(device):
    """Runs the test with `device` as the default device (and stream)."""
    with mx.stream(device):
        yield device


def _as_numpy(tree):
    import numpy as np

    if isinstance(tree, (list, tuple)):
        return [_as_numpy(t) for t in tree]
    if isinstance(tree, mx.array):
        mx.eval(tree)
        return tree.astype(mx.float32) if tree.dtype == mx.bfloat16 else tree
    return np.asarray(tree)


def cpu_match(device, fn, rtol=1e-5, atol=1e-6):
    """fn() on `device` (the default device meanwhile); on the GPU its
    result (an array or a list/tuple of arrays) must equal the CPU's in
    dtype and shape, and in value to the tolerance. Returns the result."""
    import numpy as np

    with mx.stream(device):
        got = fn()
    if device == mx.cpu:
        return got
    with mx.stream(mx.cpu):
        want = fn()
    for g, w in zip(_flat(got), _flat(want)):
        assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
        np.testing.assert_allclose(
            np.array(_as_numpy(g)), np.array(_as_numpy(w)), rtol=rtol, atol=atol,
            err_msg="the GPU's result differs from the CPU's")
    return got


def _flat(tree):
    return [x for t in tree for x in _flat(t)] if isinstance(tree, (list, tuple)) else [tree]


# A GPU case that fails with "[Name] has no gpu implementation" is an
# expected failure when the one coverage table (cmx_primitive_has_kernel,
# as cmx.core._kernel_coverage() and build/cmx_coverage show it) says Name
# has no GPU kernel; the reason names the primitive. Any other failure, and
# that error for a primitive the table says has a GPU kernel, fails.
NO_GPU_KERNEL = re.compile(r"\[(\w+)\] has no gpu implementation")


def _no_gpu_kernel_reason(exc):
    m = NO_GPU_KERNEL.search(str(exc)) if isinstance(exc, RuntimeError) else None
    if not m:
        return None
    cpu, gpu = mx._kernel_coverage().get(m.group(1), (None, None))
    if gpu is not False:
        return None
    return f"coverage table: {m.group(1)} has no gpu kernel (cpu: {'yes' if cpu else 'no'})"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not report.failed or call.excinfo is None:
        return
    params = getattr(item, "callspec", None)
    if params is None or params.params.get("device") != "gpu":
        return
    reason = _no_gpu_kernel_reason(call.excinfo.value)
    if reason:
        report.outcome = "skipped"
        report.wasxfail = reason


def pytest_collection_modifyitems(config, items):
    """CMX_PYTEST_SHARD=i/n keeps every n-th collected test from the i-th
    (0-based): n concurrent processes run the whole suite once, in balanced
    parts (scripts/gpu-check.sh runs the GPU suite so)."""
    shard = os.environ.get("CMX_PYTEST_SHARD")
    if not shard:
        return
    i, n = (int(v) for v in shard.split("/"))
    if not 0 <= i < n:
        raise pytest.UsageError(f"CMX_PYTEST_SHARD={shard}: want i/n with 0 <= i < n")
    keep = items[i::n]
    config.hook.pytest_deselected(items=[t for k, t in enumerate(items) if k % n != i])
    items[:] = keep
