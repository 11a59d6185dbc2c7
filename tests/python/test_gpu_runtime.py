"""The GPU runtime from Python: device queries, memory figures and limits,
out-of-device-memory errors, GPU streams from several threads, and DLPack
exchange of device memory (with PyTorch when it and a GPU are present).

GPU cases skip only where no GPU is available; the torch cases also where
torch (with CUDA) is missing.
"""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import cmx.core as mx

HAS_GPU = mx.is_available(mx.gpu)
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no GPU available")


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def test_cuda_is_available_matches_the_gpu():
    assert mx.cuda.is_available() == HAS_GPU
    assert (mx.device_count(mx.gpu) > 0) == HAS_GPU


def test_default_device_is_the_gpu_when_present():
    # As MLX: the GPU when one is available, unless CMX_DEFAULT_DEVICE=cpu.
    want_gpu = os.environ.get("CMX_DEFAULT_DEVICE") != "cpu" and HAS_GPU
    assert mx.default_device() == (mx.gpu if want_gpu else mx.cpu)
    script = ("import cmx.core as mx; "
              "print('gpu' if mx.default_device() == mx.gpu else 'cpu')")
    for value, gpu in [("cpu", False), ("gpu", HAS_GPU), (None, HAS_GPU)]:
        env = dict(os.environ)
        env.pop("CMX_DEFAULT_DEVICE", None)
        if value:
            env["CMX_DEFAULT_DEVICE"] = value
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        out = subprocess.run([sys.executable, "-c", script], env=env, text=True,
                             capture_output=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == ("gpu" if gpu else "cpu"), (value, out.stdout)


def test_cpu_device_info():
    info = mx.device_info(mx.cpu)
    assert info["memory_size"] > 0 and info["device_count"] == 1
    assert 0 <= info["free_memory"] <= info["memory_size"]
    assert "sm_count" not in info


@needs_gpu
def test_gpu_device_info():
    info = mx.device_info(mx.gpu)
    major, minor = info["compute_capability"]
    assert info["architecture"] == f"sm_{major}{minor}"
    assert info["memory_size"] > 0 and info["sm_count"] >= 1
    assert 0 <= info["free_memory"] <= info["memory_size"]
    assert info["device_name"] and info["device_count"] == mx.device_count(mx.gpu)


@needs_gpu
def test_synchronize_gpu_stream():
    s = mx.new_stream(mx.gpu)
    a = mx.add(mx.array([1.0, 2.0]), 1.0, stream=s)
    mx.async_eval(a)
    mx.synchronize(s)
    assert a.tolist() == [2.0, 3.0]


@needs_gpu
def test_gpu_memory_figures_and_cache():
    mx.clear_cache()
    base = mx.get_active_memory()
    x = mx.add(mx.zeros((1 << 20,)), 1.0, stream=mx.gpu)  # 4 MiB on the GPU
    mx.eval(x)
    assert mx.get_active_memory() >= base + (4 << 20)
    assert mx.get_peak_memory() >= base + (4 << 20)
    del x
    mx.synchronize(mx.gpu)
    assert mx.get_cache_memory() >= 4 << 20
    prev = mx.set_cache_limit(0)
    assert mx.get_cache_memory() < 4 << 20
    mx.set_cache_limit(prev)
    mx.clear_cache()
    assert mx.get_active_memory() <= base + 4096
    assert mx.set_wired_limit(0) == 0


@needs_gpu
def test_out_of_device_memory_raises_and_the_next_op_works():
    total = mx.device_info(mx.gpu)["memory_size"]
    n = total // 4 + (1 << 20)
    big = mx.broadcast_to(mx.array(1.0), (n,))
    with pytest.raises(MemoryError, match=r"\[Add\] out of device memory.*" + str(n * 4)):
        mx.eval(mx.add(big, 1.0, stream=mx.gpu))
    # The attempt's memory went back to the card.
    assert mx.device_info(mx.gpu)["free_memory"] > total // 2
    assert mx.add(mx.array([1.0]), 1.0, stream=mx.gpu).tolist() == [2.0]


@needs_gpu
def test_memory_limit_bounds_the_gpu():
    prev = mx.set_memory_limit(2 << 20)
    try:
        with pytest.raises(MemoryError, match="exceed the memory limit"):
            mx.eval(mx.add(mx.broadcast_to(mx.array(1.0), (1 << 20,)), 1.0,
                           stream=mx.gpu))
    finally:
        mx.set_memory_limit(prev)


@needs_gpu
def test_many_evals_stay_within_the_cache_limit():
    prev = mx.set_cache_limit(1 << 20)
    try:
        inputs = [mx.add(mx.zeros((n,)), 1.0, stream=mx.gpu) for n in (1, 33, 1000, 70000)]
        mx.eval(inputs)
        base = mx.get_active_memory()
        peak_cache = 0
        for i in range(20000):
            y = mx.add(inputs[i % 4], 1.0, stream=mx.gpu)
            mx.eval(y)
            del y
            peak_cache = max(peak_cache, mx.get_cache_memory())
        assert mx.get_active_memory() <= base
        assert peak_cache <= (1 << 20) + _host_cache_slack()
    finally:
        mx.set_cache_limit(prev)


def _host_cache_slack():
    # The cache figure holds host buffers too, under the same limit.
    return 1 << 20


@needs_gpu
def test_four_threads_async_eval_on_their_own_gpu_streams():
    errors = []

    def work(k):
        try:
            s = mx.new_stream(mx.gpu)
            x = mx.array(np.arange(4096, dtype=np.float32))
            y = x
            for _ in range(50):
                y = mx.add(y, float(k + 1), stream=s)
            mx.async_eval(y)
            np.testing.assert_array_equal(np.array(y), np.arange(4096) + 50.0 * (k + 1))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@needs_gpu
def test_numpy_copies_a_gpu_result_back():
    a = mx.add(mx.array([[1, 2], [3, 4]], dtype=mx.int32), 10, stream=mx.gpu)
    assert a.__dlpack_device__() == (2, 0)  # kDLCUDA: the data is on the GPU
    np.testing.assert_array_equal(np.array(a), [[11, 12], [13, 14]])
    assert a.__dlpack_device__() == (1, 0)  # now read on the host


@needs_gpu
def test_torch_from_cmx_gpu_array_shares_memory():
    torch = _torch_cuda()
    if torch is None:
        pytest.skip("torch with CUDA is not installed")
    a = mx.add(mx.array(np.arange(8, dtype=np.float32)), 1.0, stream=mx.gpu)
    t = torch.from_dlpack(a)
    assert t.is_cuda and t.tolist() == [float(i + 1) for i in range(8)]
    # No copy: a write through torch shows in the array's device memory.
    t[0] = 100.0
    torch.cuda.synchronize()
    assert np.array(a)[0] == 100.0


@needs_gpu
def test_cmx_array_from_torch_cuda_tensor_shares_memory():
    torch = _torch_cuda()
    if torch is None:
        pytest.skip("torch with CUDA is not installed")
    t = torch.arange(16, dtype=torch.float32, device="cuda") * 2  # queued on torch's stream
    a = mx.array(t)
    b = mx.add(a, 1.0, stream=mx.gpu)  # ordered after torch's work
    np.testing.assert_array_equal(np.array(b), np.arange(16) * 2.0 + 1.0)
    t[3] = -5.0
    torch.cuda.synchronize()
    c = mx.add(a, 0.0, stream=mx.gpu)
    assert np.array(c)[3] == -5.0  # the same memory
    b2 = mx.from_dlpack(t.reshape(4, 4))
    assert b2.shape == (4, 4) and b2.dtype == mx.float32
    with pytest.raises(BufferError, match="contiguous"):
        mx.from_dlpack(t.reshape(4, 4).t())
    del a, b, c, b2
    t.add_(1.0)  # torch still owns its tensor
    torch.cuda.synchronize()
