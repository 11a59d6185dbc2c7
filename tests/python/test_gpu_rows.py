"""The GPU's matrix-vector kernels and its whole-row gather / scatter
kernels on every device against the CPU: both orientations of a
matrix-vector product (x @ W, W @ x, transposed and sliced matrices,
strided and broadcast vectors, odd sizes, k split over blocks) in float32,
float16 and bfloat16, with cmx's kernels and with CMX_CUDA_GEMV=0
(cuBLASLt); embedding-style gathers and scatters of rows (16-byte vector
rows and odd rows, every dtype, duplicate and negative indices, strided
index arrays, out-of-range indices)."""

import numpy as np
import pytest

import cmx.core as mx
from conftest import cpu_match

GEMV_DTYPES = [mx.float32, mx.float16, mx.bfloat16]
TOL = {mx.float32: 1e-4, mx.float16: 2e-2, mx.bfloat16: 5e-2}


def rand(shape, dtype=mx.float32, seed=0):
    r = np.random.default_rng(seed)
    return mx.array(r.uniform(-1, 1, shape).astype(np.float32)).astype(dtype)


def ints(shape, dtype, seed=0, lo=-9, hi=10):
    r = np.random.default_rng(seed)
    return mx.array(r.integers(lo, hi, shape)).astype(dtype)


@pytest.fixture(params=["kernels", "cublaslt"])
def gemv_path(request, monkeypatch):
    if request.param == "cublaslt":
        monkeypatch.setenv("CMX_CUDA_GEMV", "0")
    else:
        monkeypatch.delenv("CMX_CUDA_GEMV", raising=False)
    return request.param


# (vector length K, outputs N): vector rows (N % 8 == 0), odd sizes, a
# long k split over blocks (few outputs), short k
SIZES = [(4096, 256), (1000, 1027), (33, 5), (8192, 24), (7, 4096)]


@pytest.mark.parametrize("dtype", GEMV_DTYPES)
@pytest.mark.parametrize("k,n", SIZES)
def test_vector_times_matrix(device, gemv_path, dtype, k, n):
    x, w = rand((1, k), dtype, 1), rand((k, n), dtype, 2)
    wt = rand((n, k), dtype, 3)
    tol = TOL[dtype] * max(1.0, k ** 0.5 / 4)
    cpu_match(device, lambda: x @ w, rtol=tol, atol=tol)          # along rows
    cpu_match(device, lambda: x[0] @ w, rtol=tol, atol=tol)       # 1-d vector
    cpu_match(device, lambda: x @ wt.T, rtol=tol, atol=tol)       # along k


@pytest.mark.parametrize("dtype", GEMV_DTYPES)
@pytest.mark.parametrize("k,m", SIZES)
def test_matrix_times_vector(device, gemv_path, dtype, k, m):
    a, x = rand((m, k), dtype, 4), rand((k,), dtype, 5)
    at = rand((k, m), dtype, 6)
    tol = TOL[dtype] * max(1.0, k ** 0.5 / 4)
    cpu_match(device, lambda: a @ x, rtol=tol, atol=tol)
    cpu_match(device, lambda: a @ x[:, None], rtol=tol, atol=tol)
    cpu_match(device, lambda: at.T @ x, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", GEMV_DTYPES)
def test_gemv_strided_operands(device, gemv_path, dtype):
    big = rand((300, 520), dtype, 7)
    v = rand((900,), dtype, 8)
    tol = TOL[dtype] * 4
    # a sliced matrix (row stride above its width), an unaligned start,
    # a strided vector, a broadcast vector
    cpu_match(device, lambda: v[:300] @ big[:, :512], rtol=tol, atol=tol)
    cpu_match(device, lambda: v[1:301] @ big[:, 3:259], rtol=tol, atol=tol)
    cpu_match(device, lambda: v[::3] @ big[:, 8:], rtol=tol, atol=tol)
    cpu_match(device, lambda: big[:, 5:405] @ v[::2][:400], rtol=tol, atol=tol)
    cpu_match(device, lambda: mx.broadcast_to(v[:1], (300,)) @ big,
              rtol=tol, atol=tol)
    cpu_match(device, lambda: big[::2, 1:] @ v[:519], rtol=tol, atol=tol)
    # non-finite values propagate as on the CPU
    w = mx.where(mx.arange(520) == 7, mx.array(float("nan")), big[0]).astype(dtype)
    m = mx.concatenate([big, w[None]], axis=0)
    cpu_match(device, lambda: v[:301] @ m, rtol=tol, atol=tol)


ALL_DTYPES = [mx.bool_, mx.uint8, mx.int8, mx.int16, mx.int32, mx.int64,
              mx.uint32, mx.float16, mx.bfloat16, mx.float32, mx.float64,
              mx.complex64]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("width", [256, 67, 16])
def test_gather_rows(device, dtype, width):
    table = ints((40, width), dtype, 9)
    ids = mx.array([3, -1, 0, 39, 3, -40, 17, 17])
    ids2 = mx.array(np.arange(24).reshape(4, 6) % 40 - 12)
    cpu_match(device, lambda: table[ids], rtol=0, atol=0)
    cpu_match(device, lambda: mx.take(table, ids2, axis=0), rtol=0, atol=0)
    cpu_match(device, lambda: mx.take(table, ids2.T, axis=0), rtol=0, atol=0)
    u8 = mx.array([3, 9, 39, 9, 0, 9, 17, 9], dtype=mx.uint8)
    cpu_match(device, lambda: table[u8[::2]], rtol=0, atol=0)
    # rows of a sliced table, and a 3-d table (rows of rows)
    cpu_match(device, lambda: table[:, : width - 1][ids], rtol=0, atol=0)
    t3 = ints((10, 4, width), dtype, 10)
    cpu_match(device, lambda: t3[mx.array([9, 0, -2, 9])], rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("width", [64, 67, 24])
def test_scatter_add_rows(device, dtype, width):
    # integer values: every float sum below is exact in any order
    base = ints((30, width), dtype, 11)
    ids = mx.array([1, 1, 0, -1, 1, 29, 3, 2, 1, 0, 0, -30])
    upd = ints((12, width), dtype, 12)
    cpu_match(device, lambda: base.at[ids].add(upd), rtol=0, atol=0)
    z = mx.zeros((30, width), dtype)
    ids2 = mx.array(np.arange(40).reshape(5, 8) % 30)
    upd2 = ints((5, 8, width), dtype, 13)
    cpu_match(device, lambda: z.at[ids2].add(upd2), rtol=0, atol=0)
    # updates that are not row-contiguous take the general path
    cpu_match(device, lambda: z.at[ids].add(upd[::-1]), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.int32])
@pytest.mark.parametrize("op", ["multiply", "maximum", "minimum"])
def test_scatter_rows_other_modes(device, dtype, op):
    base = ints((20, 40), dtype, 14, 1, 4)
    ids = mx.array([1, 1, 0, -1, 1, 19, 3, 2, 1])
    upd = ints((9, 40), dtype, 15, 1, 4)
    cpu_match(device, lambda: getattr(base.at[ids], op)(upd), rtol=0, atol=0)


def test_scatter_add_rows_many_duplicates(device):
    # float32 sums of many rows into few: order differs, values close
    r = np.random.default_rng(16)
    ids = mx.array(r.integers(0, 50, 20000))
    g = mx.array(r.standard_normal((20000, 128)).astype(np.float32))
    z = mx.zeros((50, 128))
    cpu_match(device, lambda: z.at[ids].add(g), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("case", ["gather", "scatter_add"])
def test_rows_out_of_range(device, case):
    def fn(a):
        if case == "gather":
            return mx.take(a, mx.array([1, 7, 2]), axis=0)
        return a.at[mx.array([1, -9, 2])].add(mx.ones((3, 128)))
    messages = []
    for dev in (mx.cpu, device):
        with mx.stream(dev):
            a = mx.arange(4 * 128, dtype=mx.float32).reshape(4, 128)
            with pytest.raises(IndexError, match="out of bounds") as e:
                mx.eval(fn(a))
            messages.append(str(e.value))
            ok = mx.take(a, mx.array([3, 0]), axis=0)
            assert ok[:, 0].tolist() == [384, 0]
    assert messages[0] == messages[1]


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.int32])
def test_slice_update_at_an_array_start(device, dtype):
    # a KV cache's write: one index position (no winner pass on the GPU),
    # starts wrapped when negative and clamped to fit, as on the CPU
    cache = ints((1, 3, 40, 16), dtype, 17)
    for start, rows in [(0, 1), (7, 1), (39, 1), (-3, 1), (45, 1), (5, 6), (37, 6)]:
        upd = ints((1, 3, rows, 16), dtype, 18 + start)
        got = cpu_match(device, lambda: mx.slice_update(
            cache, upd, mx.array([start], mx.int32), (2,)), rtol=0, atol=0)
        want = np.array(cache)
        s0 = min(max(start + 40 if start < 0 else start, 0), 40 - rows)
        want[:, :, s0:s0 + rows] = np.array(upd)
        np.testing.assert_array_equal(np.array(got), want)
    # starts along two axes, a scalar start, a broadcast update
    upd = ints((1, 2, 3, 16), dtype, 30)
    cpu_match(device, lambda: mx.slice_update(
        cache, upd, mx.array([1, 20]), (1, 2)), rtol=0, atol=0)
    cpu_match(device, lambda: mx.slice_update(
        cache, mx.broadcast_to(ints((16,), dtype, 31), (1, 3, 2, 16)),
        mx.array(11), (2,)), rtol=0, atol=0)
    # several positions that meet: the last update of an element wins
    ids = mx.array([3, 5, 3, 3, 0, 5])
    rows6 = ints((6, 16), dtype, 32)
    cpu_match(device, lambda: _assign(cache[0, 0], ids, rows6), rtol=0, atol=0)


def _assign(a, ids, rows):
    b = a + 0
    b[ids] = rows
    return b
