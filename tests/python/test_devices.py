"""Devices and streams: Device/DeviceType/Stream objects, defaults, the
mx.stream context, new streams, synchronize, the stream argument of ops."""
import threading

import numpy as np
import pytest

import cmx.core as mx


def test_device_objects():
    d = mx.Device(mx.cpu)
    assert repr(d) == "Device(cpu, 0)"
    assert d == mx.cpu and mx.cpu == d
    assert d == mx.Device(mx.cpu, 0)
    assert d != mx.Device(mx.gpu, 0)
    assert d.type == mx.cpu
    assert mx.Device(mx.gpu, 1) != mx.gpu
    assert isinstance(mx.cpu, mx.DeviceType)
    assert {d: 1}[mx.Device(mx.cpu)] == 1
    with pytest.raises(TypeError):
        mx.Device("cpu")
    assert (d == "cpu") is False


def test_default_device_and_stream():
    assert mx.default_device() == mx.cpu or mx.is_available(mx.gpu)
    s = mx.default_stream(mx.cpu)
    assert isinstance(s, mx.Stream)
    assert s.device == mx.cpu
    assert repr(s) == f"Stream(Device(cpu, 0), {s.index})"
    assert s == mx.default_stream(mx.cpu)


def test_availability():
    assert mx.is_available(mx.cpu)
    assert mx.device_count(mx.cpu) == 1
    assert mx.is_available(mx.gpu) == (mx.device_count(mx.gpu) > 0)
    info = mx.device_info(mx.cpu)
    # As MLX: the machine's architecture and the CPU's model name.
    import platform
    assert info["architecture"] == platform.machine()
    assert info["device_name"] and info["memory_size"] > 0


def test_gpu_unavailable_errors():
    if mx.is_available(mx.gpu):
        pytest.skip("a GPU is available")
    with pytest.raises(ValueError, match="not available"):
        mx.set_default_device(mx.gpu)
    with pytest.raises(ValueError):
        mx.add(mx.array([1]), 1, stream=mx.gpu)
    with pytest.raises(ValueError):
        mx.device_info(mx.gpu)


def test_new_stream_and_context():
    s = mx.new_stream(mx.cpu)
    assert s != mx.default_stream(mx.cpu)
    before = mx.default_stream(mx.cpu)
    with mx.stream(s):
        assert mx.default_stream(mx.cpu) == s
        a = mx.add(mx.array([1, 2]), 1)
    assert mx.default_stream(mx.cpu) == before
    assert a.tolist() == [2, 3]
    with mx.stream(mx.cpu):
        assert mx.default_device() == mx.cpu
    with pytest.raises(RuntimeError):
        mx.stream(None)
    with pytest.raises(TypeError):
        mx.stream("cpu")


def test_context_restores_on_exception():
    s = mx.new_stream(mx.cpu)
    before = mx.default_stream(mx.cpu)
    with pytest.raises(KeyError):
        with mx.stream(s):
            raise KeyError
    assert mx.default_stream(mx.cpu) == before


def test_set_default_stream():
    before = mx.default_stream(mx.cpu)
    s = mx.new_stream(mx.cpu)
    mx.set_default_stream(s)
    try:
        assert mx.default_stream(mx.cpu) == s
    finally:
        mx.set_default_stream(before)
    with pytest.raises(TypeError):
        mx.set_default_stream(mx.cpu)


def test_stream_argument_forms():
    a = mx.array([1.0, 2.0])
    s = mx.new_stream(mx.cpu)
    for st in [None, mx.cpu, mx.Device(mx.cpu), s, mx.default_stream(mx.cpu)]:
        assert mx.add(a, a, stream=st).tolist() == [2.0, 4.0]
        assert a.astype(mx.int32, stream=st).tolist() == [1, 2]
    with pytest.raises(TypeError, match="stream"):
        mx.add(a, a, stream="cpu")
    with pytest.raises(TypeError):
        mx.add(a, a, mx.cpu)  # stream is keyword-only


def test_cross_stream_dependencies_and_synchronize():
    s1, s2 = mx.new_stream(mx.cpu), mx.new_stream(mx.cpu)
    x = mx.array(np.arange(100000, dtype=np.float32))
    y = mx.add(x, 1, stream=s1)
    z = mx.add(y, y, stream=s2)
    mx.async_eval(z)
    mx.synchronize(s2)
    mx.synchronize()
    np.testing.assert_array_equal(np.array(z), 2 * (np.arange(100000) + 1))


def test_defaults_are_per_thread():
    s = mx.new_stream(mx.cpu)
    seen = []
    with mx.stream(s):
        t = threading.Thread(target=lambda: seen.append(mx.default_stream(mx.cpu)))
        t.start()
        t.join()
    assert seen[0] != s


@pytest.mark.skipif(not mx.is_available(mx.gpu), reason="no GPU available")
def test_gpu_ops():
    a = mx.array([1.0, 2.0])
    assert mx.add(a, a, stream=mx.gpu).tolist() == [2.0, 4.0]
    with mx.stream(mx.gpu):
        assert mx.default_device() == mx.gpu
        b = a + 1
    assert np.array(b).tolist() == [2.0, 3.0]
    # reductions, softmax and scans run there (src/backend/cuda/reduce.c)
    assert mx.sum(a, stream=mx.gpu).item() == 3.0
    assert mx.cumsum(a, stream=mx.gpu).tolist() == [1.0, 3.0]


def test_kernel_coverage_table():
    """cmx.core._kernel_coverage(): the one table of which primitive has a
    kernel on which device, as cmx_primitive_has_kernel gives it."""
    cov = mx._kernel_coverage()
    assert len(cov) > 50
    assert all(isinstance(c, bool) and isinstance(g, bool) for c, g in cov.values())
    assert cov["Add"] == (True, True) and cov["Exp"][0] is True
    assert all(c for c, g in cov.values()), "every primitive has a CPU kernel"


def test_gpu_xfail_reasons_come_from_the_coverage_table(monkeypatch):
    """A GPU case failing for a missing kernel is an expected failure only
    when the table says the primitive has no GPU kernel. Every built-in
    primitive has one now, so the table is given one that has not (as an
    extension's primitive without a GPU kernel would be)."""
    from conftest import _no_gpu_kernel_reason

    cov = mx._kernel_coverage()
    assert all(g for c, g in cov.values()), [n for n, (c, g) in cov.items() if not g]
    without = "NoGpuKernel"
    monkeypatch.setattr(mx, "_kernel_coverage", lambda: {**cov, without: (True, False)})
    with_kernel = next(n for n, (c, g) in cov.items() if g)
    reason = _no_gpu_kernel_reason(RuntimeError(f"[{without}] has no gpu implementation"))
    assert reason == f"coverage table: {without} has no gpu kernel (cpu: yes)"
    assert _no_gpu_kernel_reason(RuntimeError(f"[{with_kernel}] has no gpu implementation")) is None
    assert _no_gpu_kernel_reason(RuntimeError("[NotAPrimitive] has no gpu implementation")) is None
    assert _no_gpu_kernel_reason(ValueError(f"[{without}] has no gpu implementation")) is None
    assert _no_gpu_kernel_reason(RuntimeError("something else")) is None
