"""Convolutions, their gradients, segmented_mm and hadamard_transform on the
GPU against the CPU, on both GPU convolution paths (cuDNN where it loads,
and cmx's own unfold + cuBLASLt, forced by CMX_CUDA_CONV=fallback, which
is read at every convolution): conv1d/2d/3d with strides, padding,
dilation and groups, conv_general with input dilation, asymmetric padding
and flip, conv_transpose1d/2d/3d, batch 1 and odd sizes, float32, float16
and bfloat16, and mx.grad through each. On a machine without a GPU these
cases skip."""

import os

import numpy as np
import pytest

import cmx.core as mx
from conftest import cpu_match

TOL = {mx.float32: (1e-4, 1e-4), mx.float16: (2e-2, 2e-2),
       mx.bfloat16: (8e-2, 8e-2)}


@pytest.fixture(params=["default", "fallback"])
def path(request, monkeypatch):
    if request.param == "fallback":
        monkeypatch.setenv("CMX_CUDA_CONV", "fallback")
    else:
        monkeypatch.delenv("CMX_CUDA_CONV", raising=False)
    return request.param


@pytest.fixture
def gpu():
    if not mx.is_available(mx.gpu):
        pytest.skip("no GPU on this machine")
    return mx.gpu


def rand(shape, dtype, seed):
    r = np.random.default_rng(seed)
    return mx.array(r.uniform(-1, 1, shape).astype(np.float32)).astype(dtype)


# (name, x shape, w shape, fn(x, w))
CASES = [
    ("conv1d", (2, 13, 3), (4, 3, 3),
     lambda x, w: mx.conv1d(x, w, stride=2, padding=1)),
    ("conv1d dil groups", (1, 17, 4), (6, 3, 2),
     lambda x, w: mx.conv1d(x, w, padding=2, dilation=2, groups=2)),
    ("conv2d resnet", (2, 9, 9, 16), (16, 3, 3, 16),
     lambda x, w: mx.conv2d(x, w, padding=1)),
    ("conv2d lenet", (3, 28, 28, 1), (6, 5, 5, 1),
     lambda x, w: mx.conv2d(x, w)),
    ("conv2d stride dil", (2, 11, 10, 3), (5, 3, 2, 3),
     lambda x, w: mx.conv2d(x, w, stride=(2, 3), padding=(1, 0),
                            dilation=(2, 1))),
    ("conv2d depthwise", (2, 8, 7, 6), (6, 3, 3, 1),
     lambda x, w: mx.conv2d(x, w, padding=1, groups=6)),
    ("conv3d", (2, 5, 6, 4, 3), (4, 3, 2, 3, 3),
     lambda x, w: mx.conv3d(x, w, stride=(1, 2, 1), padding=(1, 0, 1))),
    ("conv_general", (2, 7, 6, 4), (3, 3, 2, 4),
     lambda x, w: mx.conv_general(x, w, stride=(1, 2), padding=([2, 0], [1, 3]),
                                  kernel_dilation=(1, 2),
                                  input_dilation=(2, 1), flip=True)),
    ("conv_general crop", (1, 9, 9, 2), (3, 2, 2, 2),
     lambda x, w: mx.conv_general(x, w, padding=([-1, 0], [0, -2]))),
    ("conv_transpose1d", (2, 7, 4), (3, 3, 4),
     lambda x, w: mx.conv_transpose1d(x, w, stride=2, padding=1)),
    ("conv_transpose2d", (2, 5, 6, 4), (3, 3, 3, 4),
     lambda x, w: mx.conv_transpose2d(x, w, stride=2, padding=1,
                                      output_padding=1)),
    ("conv_transpose3d", (1, 3, 4, 3, 2), (3, 2, 3, 2, 2),
     lambda x, w: mx.conv_transpose3d(x, w, stride=(2, 1, 2))),
]


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_conv_and_grads(gpu, path, case, dtype):
    name, xs, ws, fn = case
    x, w = rand(xs, dtype, 1), rand(ws, dtype, 2)
    rtol, atol = TOL[dtype]
    y = cpu_match(gpu, lambda: fn(x, w), rtol, atol)
    r = rand(y.shape, dtype, 3)

    def loss(a, b):
        return (fn(a, b) * r).sum()

    scale = max(1, int(np.prod(ws[1:])) // 8)
    cpu_match(gpu, lambda: mx.grad(loss, argnums=(0, 1))(x, w),
              rtol * scale, atol * scale)


def test_conv_transposed_input_layout(gpu, path):
    x = rand((3, 6, 7, 4), mx.float32, 4).transpose(0, 2, 1, 3)
    w = rand((8, 3, 3, 4), mx.float32, 5)
    cpu_match(gpu, lambda: mx.conv2d(x, w, padding=1), 1e-4, 1e-4)


def test_conv_resnet_stage_grads_both_paths_agree(gpu):
    x, w = rand((4, 14, 14, 32), mx.float32, 6), rand((32, 3, 3, 32),
                                                      mx.float32, 7)

    def loss(a, b):
        return (mx.conv2d(a, b, padding=1) ** 2).sum()

    g = mx.grad(loss, argnums=(0, 1))
    with mx.stream(gpu):
        a = g(x, w)
        mx.eval(a)
        os.environ["CMX_CUDA_CONV"] = "fallback"
        try:
            b = g(x, w)
            mx.eval(b)
        finally:
            del os.environ["CMX_CUDA_CONV"]
    for u, v in zip(a, b):
        np.testing.assert_allclose(np.array(u), np.array(v), rtol=1e-3,
                                   atol=1e-3)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16,
                                   mx.float64])
@pytest.mark.parametrize("shape", [(3, 64), (2, 12), (4, 5, 20 * 8),
                                   (1, 28 * 32), (2, 4096), (1, 1)])
def test_hadamard(gpu, dtype, shape):
    a = rand(shape, dtype, 8)
    out = cpu_match(gpu, lambda: mx.hadamard_transform(a), 0, 0)
    assert out.dtype == dtype
    at = rand(shape[::-1], dtype, 9).T  # a strided input
    cpu_match(gpu, lambda: mx.hadamard_transform(at, scale=0.5), 0, 0)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_segmented_mm(gpu, dtype):
    a, b = rand((5, 40), dtype, 10), rand((40, 7), dtype, 11)
    seg = mx.array([[0, 10], [10, 40], [5, 5], [30, 7], [0, 40], [17, 33]],
                   dtype=mx.uint32).reshape(2, 3, 2)
    rtol, atol = TOL[dtype]
    cpu_match(gpu, lambda: mx.segmented_mm(a, b, seg), rtol * 4, atol * 4)
    cpu_match(gpu, lambda: mx.segmented_mm(a.T.T, b[:, ::1], seg[:, ::2]),
              rtol * 4, atol * 4)
