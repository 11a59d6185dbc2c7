"""Matrix products and indexing on every device against the CPU: matmul and
addmm in every float dtype and layout (transposed, sliced, broadcast
batches, vectors, empty dims), take / take_along_axis / put_along_axis /
array indexing / .at[] updates (duplicate indices included), and a small
MLP's training step whose losses must match the CPU's."""

import numpy as np
import pytest

import cmx.core as mx
import cmx.nn as nn
import cmx.optimizers as optim
from conftest import cpu_match

FLOATS = [mx.float32, mx.float64, mx.float16, mx.bfloat16, mx.complex64]
TOL = {mx.float32: 1e-4, mx.float64: 1e-10, mx.float16: 2e-2,
       mx.bfloat16: 6e-2, mx.complex64: 1e-4}


def rand(shape, dtype=mx.float32, seed=0):
    r = np.random.default_rng(seed)
    x = r.uniform(-1, 1, shape)
    if dtype == mx.complex64:
        x = x + 1j * r.uniform(-1, 1, shape)
    return mx.array(x).astype(dtype)


def as_np(x):
    return np.array(x.astype(mx.float32) if x.dtype == mx.bfloat16 else x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("sa,sb,ta,tb", [
    ((5, 7), (7, 3), False, False),
    ((7, 5), (7, 3), True, False),
    ((5, 7), (3, 7), False, True),
    ((4, 5, 7), (4, 7, 3), False, False),
    ((2, 1, 5, 7), (3, 3, 7), False, True),
    ((4, 5, 7), (7, 3), False, False),
    ((7,), (7, 3), False, False),
    ((5, 7), (7,), False, False),
    ((0, 7), (7, 3), False, False),
    ((5, 0), (0, 3), False, False),
    ((1, 1), (1, 1), False, False),
])
def test_matmul(device, dtype, sa, sb, ta, tb):
    a, b = rand(sa, dtype, 1), rand(sb, dtype, 2)

    def f():
        x = mx.swapaxes(a, -1, -2) if ta else a
        y = mx.swapaxes(b, -1, -2) if tb else b
        return x @ y
    tol = TOL[dtype] * max(1, sa[-1 if not ta else -2]) ** 0.5
    cpu_match(device, f, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_strided_operands(device, dtype):
    a, b = rand((6, 18), dtype, 3), rand((9, 8), dtype, 4)
    cpu_match(device, lambda: a[:, ::2] @ b[:, ::-1], rtol=TOL[dtype], atol=TOL[dtype])
    cpu_match(device, lambda: a[1:5, 2:11] @ b[:, 1:6], rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS)
def test_addmm(device, dtype):
    a, b = rand((6, 9), dtype, 5), rand((9, 4), dtype, 6)
    c, bias = rand((6, 4), dtype, 7), rand((4,), dtype, 8)
    t = TOL[dtype] * 3
    cpu_match(device, lambda: mx.addmm(c, a, b, alpha=2.0, beta=0.5), rtol=t, atol=t)
    cpu_match(device, lambda: mx.addmm(bias, a, b), rtol=t, atol=t)
    cpu_match(device, lambda: mx.addmm(bias, a, b, beta=2.0), rtol=t, atol=t)
    cpu_match(device, lambda: mx.addmm(c.T.T, a, b, beta=0.0), rtol=t, atol=t)


def test_matmul_no_tf32(device):
    # 1 + 2^-12 is exact in float32 but 1 in TF32: 64 terms sum to 64 + 2^-6
    a = mx.array(np.full((64, 64), 1 + 2.0 ** -12, np.float32))
    b = mx.array(np.ones((64, 64), np.float32))
    out = mx.matmul(a, b, stream=device)
    assert np.all(np.array(out) == np.float32(64 + 2.0 ** -6))


DTYPES_ALL = [mx.bool_, mx.uint8, mx.int8, mx.int16, mx.int32, mx.int64,
              mx.uint32, mx.float16, mx.bfloat16, mx.float32, mx.float64,
              mx.complex64]


def data(shape, dtype, seed=0):
    r = np.random.default_rng(seed)
    return mx.array(r.integers(-9, 10, shape)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES_ALL)
def test_take_and_indexing(device, dtype):
    a = data((10, 6), dtype)
    idx = mx.array([3, -1, 0, 9, 3, -10])
    cpu_match(device, lambda: mx.take(a, idx, axis=0), rtol=0, atol=0)
    cpu_match(device, lambda: mx.take(a, mx.array([[1, -6], [5, 0]]), axis=1),
              rtol=0, atol=0)
    cpu_match(device, lambda: a[idx], rtol=0, atol=0)
    cpu_match(device, lambda: a[idx, mx.array([0, 1, 2, 3, 4, 5])], rtol=0, atol=0)
    cpu_match(device, lambda: a[mx.array([True, False] * 5)], rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES_ALL)
def test_along_axis(device, dtype):
    a = data((4, 5, 6), dtype, 1)
    r = np.random.default_rng(2)
    idx = mx.array(r.integers(-5, 5, (4, 3, 6)))
    cpu_match(device, lambda: mx.take_along_axis(a, idx, axis=1), rtol=0, atol=0)
    # distinct indices along the axis (last write wins on the CPU)
    perm = mx.array(np.stack([r.permutation(5)[:3] for _ in range(24)])
                    .reshape(4, 6, 3).transpose(0, 2, 1))
    vals = data((4, 3, 6), dtype, 3)
    cpu_match(device, lambda: mx.put_along_axis(a, perm, vals, axis=1), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [mx.int32, mx.int8, mx.uint16, mx.float32,
                                   mx.float16, mx.bfloat16, mx.float64,
                                   mx.complex64, mx.bool_])
@pytest.mark.parametrize("op", ["add", "multiply", "maximum", "minimum"])
def test_at_updates_duplicates(device, dtype, op):
    a = data((6, 5), dtype, 4)
    idx = mx.array([1, 1, 0, -1, 1, 5, 3, 2, 1])
    upd = data((9, 5), dtype, 5)
    exact = dtype not in (mx.float32, mx.float16, mx.bfloat16, mx.float64, mx.complex64)
    tol = 0 if exact else 3e-2
    cpu_match(device, lambda: getattr(a.at[idx], op)(upd), rtol=tol, atol=tol)


def test_scatter_add_int_exact_many_duplicates(device):
    idx = mx.array(np.arange(200000) % 7)
    upd = mx.array(np.arange(200000) % 13 - 6).astype(mx.int32)
    a = mx.array(np.zeros(7, np.int32))
    cpu_match(device, lambda: a.at[idx].add(upd), rtol=0, atol=0)


def test_mlp_training_step(device):
    """784-64-10 MLP, SGD, a few steps: the GPU's losses are the CPU's."""
    r = np.random.default_rng(0)
    x = mx.array(r.standard_normal((32, 784)).astype(np.float32))
    y = mx.array(r.integers(0, 10, 32))

    def make():
        return nn.Sequential(nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10))
    with mx.stream(mx.cpu):  # the same starting weights on both devices
        mx.random.seed(0)
        init = make().parameters()
        mx.eval(init)

    def losses():
        model = make()
        model.update(init)
        opt = optim.SGD(learning_rate=0.1)

        def loss_fn(m, x, y):
            return nn.losses.cross_entropy(m(x), y, reduction="mean")
        step = nn.value_and_grad(model, loss_fn)
        out = []
        for _ in range(3):
            loss, grads = step(model, x, y)
            opt.update(model, grads)
            mx.eval(model.parameters(), loss)
            out.append(loss)
        return mx.stack(out)
    got = cpu_match(device, losses, rtol=1e-4, atol=1e-5)
    assert float(got[-1]) < float(got[0])


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.float64])
def test_gather_mm(device, dtype):
    a, b = rand((3, 4, 5), dtype, 9), rand((2, 5, 6), dtype, 10)
    li = mx.array(np.array([[0, 2, 1], [1, 0, 2]], np.uint32))
    ri = mx.array(np.array([[1, 0, 0], [1, 1, 0]], np.uint32))
    t = TOL[dtype] * 3
    cpu_match(device, lambda: mx.gather_mm(a, b, li, ri), rtol=t, atol=t)
    cpu_match(device, lambda: mx.gather_mm(mx.swapaxes(mx.swapaxes(a, 1, 2), 1, 2)[:, ::-1], b,
                                           li, ri), rtol=t, atol=t)
