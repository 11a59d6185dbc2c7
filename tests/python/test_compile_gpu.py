"""mx.compile on the GPU: the compile.rst examples of test_compile with the
GPU as the default device, fused GPU results against eager GPU results and
against the CPU (random fusable graphs, broadcast and transposed inputs,
every dtype class), and shapeless functions taking changing shapes.

Fused float results may differ from eager ones in the last bits (NVRTC
contracts multiply-adds across fused steps); integer, bool and comparison
results are exact. Skipped where no GPU exists."""

import random

import numpy as np
import pytest

import cmx.core as mx
import test_compile as tc
from test_compile import (  # noqa: F401  (rerun here on the GPU)
    test_basics,
    test_captured_outputs,
    test_compiled_training_example_nn,
    test_compiled_training_step_handwritten,
    test_constants_and_captured_inputs,
    test_lambda_in_a_loop,
    test_not_compiled_again,
    test_pure_functions_state,
    test_random_state_captured,
    test_recompile_triggers,
    test_shapeless,
    test_shapeless_broadcast,
    test_shapeless_derived_shapes_and_fixed_ones,
    test_state_returned,
    test_transformations_with_compile,
)


@pytest.fixture(autouse=True)
def on_gpu():
    if not mx.is_available(mx.gpu):
        pytest.skip("no GPU on this machine")
    prev = mx.default_device()  # the GPU already when present, as MLX
    mx.set_default_device(mx.gpu)
    yield
    mx.set_default_device(prev)


def _np(a):
    return np.array(a.astype(mx.float32) if a.dtype == mx.bfloat16 else a)


def _close(got, want, rtol, atol=0.0, exact_kinds="biu?"):
    assert got.dtype == want.dtype
    a, b = _np(got), _np(want)
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.kind in exact_kinds:
        assert np.array_equal(a, b)
    else:
        assert np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def _inputs(seed, nin):
    shapes = [(5, 6), (6,), (1, 6), ()]
    r = np.random.default_rng(seed)
    xs = [r.uniform(-2, 2, size=(5, 6)).astype(np.float32) for _ in range(nin)]
    if nin > 1:
        xs[1] = r.uniform(-2, 2, size=shapes[seed % 4]).astype(np.float32)
    return xs


@pytest.mark.parametrize("seed", range(24))
def test_random_graphs_gpu(seed):
    rng = random.Random(seed)
    nin = rng.randint(1, 3)
    fun = tc._random_graph(rng, nin)
    xn = _inputs(seed, nin)
    xs = [mx.array(x) for x in xn]
    if nin > 2:  # a transposed input
        xs[2] = mx.array(np.ascontiguousarray(xn[2].T)).T
    got = mx.compile(fun)(*xs)
    want = fun(*xs)
    with mx.stream(mx.cpu):
        cpu = fun(*xs)
    assert len(got) == len(want) == len(cpu)
    for g, w, c in zip(got, want, cpu):
        _close(g, w, 1e-5, 1e-6)
        _close(g, c, 1e-4, 1e-5)


@pytest.mark.parametrize("dt", [mx.bool_, mx.uint8, mx.int32, mx.int64,
                                mx.float16, mx.bfloat16, mx.float32,
                                mx.float64, mx.complex64],
                         ids=str)
def test_dtype_classes_gpu(dt):
    x = (mx.arange(60).reshape(5, 12) % 7).astype(dt)
    y = ((mx.arange(60) % 5) + 1).reshape(5, 12).astype(dt)
    if dt == mx.bool_:
        fun = lambda x, y: mx.logical_xor(x & y, ~x) | y  # noqa: E731
    else:
        fun = lambda x, y: (x * y + x) - y * y + mx.maximum(x, y)  # noqa: E731
    got = mx.compile(fun)(x, y)
    want = fun(x, y)
    tol = {mx.float16: 1e-3, mx.bfloat16: 8e-3}.get(dt, 1e-6)
    _close(got, want, tol)
    with mx.stream(mx.cpu):
        cpu = fun(x, y)
    _close(got, cpu, tol)


def test_multiple_outputs_and_constants_gpu():
    def fun(x):
        e = mx.exp(x)
        return e * 2, e + 1, mx.sqrt(e + 1) > 1.5
    x = mx.array(np.linspace(-3, 3, 1001, dtype=np.float32))
    got = mx.compile(fun)(x)
    want = fun(x)
    for g, w in zip(got, want):
        _close(g, w, 2e-6)


def test_shapeless_changing_shapes_gpu():
    fun = lambda x, y: mx.tanh(x * 2 + 1) - y  # noqa: E731
    cf = mx.compile(fun, shapeless=True)
    t0 = tc.traces()
    for shape, yshape in [((3, 4), (3, 4)), ((17, 33), (1, 33)),
                          ((1000, 3), (1000, 1)), ((1, 1), (1, 1)),
                          ((64, 4099), (64, 4099))]:
        r = np.random.default_rng(shape[0])
        x = mx.array(r.standard_normal(shape).astype(np.float32))
        y = mx.array(r.standard_normal(yshape).astype(np.float32))
        got = cf(x, y)
        assert got.shape == shape
        _close(got, fun(x, y), 2e-6, 1e-7)
    assert tc.traces() - t0 == 1


def test_gelu_gpu_one_region_against_eager_and_cpu():
    def gelu(x):
        return x * (1 + mx.erf(x / np.sqrt(2))) / 2
    xn = np.random.default_rng(3).standard_normal((64, 1027)).astype(np.float32)
    f0 = tc.stats()["fused"]
    got = mx.compile(gelu)(mx.array(xn))
    assert tc.stats()["fused"] == f0 + 1
    _close(got, gelu(mx.array(xn)), 2e-6, 1e-7)
    with mx.stream(mx.cpu):
        cpu = gelu(mx.array(xn))
    _close(got, cpu, 1e-5, 1e-6)  # the GPU's erff is not the CPU's


# The contiguous kernel's paths (the pipelined one with
# CMX_CUDA_FUSED_PIPELINE=1, and the plain default one): 16-byte vectors then a scalar tail, sizes
# from one element to several trips of the whole grid, an input 4 bytes
# off the vector alignment (x[1:]: the scalar loop alone), a broadcast
# 0-d input; integers, so every element must be exact.
@pytest.mark.parametrize("pipeline", ["1", "0"])
@pytest.mark.parametrize("n", [1, 5, 4099, (1 << 22) + 7])
@pytest.mark.parametrize("offset", [0, 1])
def test_contiguous_kernel_paths_gpu(monkeypatch, pipeline, n, offset):
    monkeypatch.setenv("CMX_CUDA_FUSED_PIPELINE", pipeline)
    r = np.random.default_rng(n + offset)
    a = r.integers(-1000, 1000, n + offset).astype(np.int32)
    b = r.integers(-1000, 1000, n).astype(np.int32)

    def fun(x, y, s):
        return (x * 3 + y) * s - mx.right_shift(x, 2)
    f0 = tc.stats()["fused"]
    got = mx.compile(fun)(mx.array(a)[offset:], mx.array(b),
                          mx.array(np.int32(7)))
    assert tc.stats()["fused"] == f0 + 1
    x = a[offset:]
    assert np.array_equal(np.array(got), (x * 3 + b) * 7 - (x >> 2))


# Vectors of 8 (float16), 2 (float64) and 4 (an int8 input beside a
# float32 one: the widest sets the vector) elements.
@pytest.mark.parametrize("dt,other", [(mx.float16, mx.float16),
                                      (mx.float64, mx.float64),
                                      (mx.float32, mx.int8)])
@pytest.mark.parametrize("n", [7, 100003])
def test_contiguous_vector_widths_gpu(dt, other, n):
    r = np.random.default_rng(n)
    x = mx.array(r.uniform(-2, 2, n).astype(np.float32)).astype(dt)
    y = mx.array(r.integers(-9, 9, n).astype(np.float32)).astype(other)

    def fun(x, y):
        return mx.abs(x * 2 - y) + 1
    got = mx.compile(fun)(x, y)
    _close(got, fun(x, y), 4e-3 if dt == mx.float16 else 1e-6)


# More inputs than the pipelined kernel prefetches (8): loaded then
# computed, one vector a thread.
def test_many_inputs_gpu():
    n = (1 << 20) + 3
    r = np.random.default_rng(11)
    xs = [r.integers(-100, 100, n).astype(np.int32) for _ in range(10)]

    def fun(*a):
        acc = a[0]
        for i in range(1, 10):
            acc = acc * 3 + a[i] * (i + 1)
        return acc
    f0 = tc.stats()["fused"]
    got = mx.compile(fun)(*[mx.array(v) for v in xs])
    assert tc.stats()["fused"] == f0 + 1
    assert np.array_equal(np.array(got), fun(*xs))
