"""Gather and scatter with one index array on every device, against NumPy
and the CPU: the GPU's general kernels read such an index in place (no
offsets pass; src/backend/cuda/indexing.c) when its positions lie at one
stride. Index arrays of every integer dtype, negative and repeated,
contiguous, strided and reversed (read in place) and transposed (the
offsets pass); slices that are not whole rows; every scatter mode; dynamic
slice and slice_update with array starts (wrapped and clamped); empty
updates; and out-of-range indices, which fail the eval with the CPU's
IndexError."""

import numpy as np
import pytest

import cmx.core as mx
from conftest import cpu_match

INDEX_DTYPES = [mx.int8, mx.int16, mx.int32, mx.int64,
                mx.uint8, mx.uint16, mx.uint32, mx.uint64]
SIGNED = {mx.int8, mx.int16, mx.int32, mx.int64}


def index_values(dtype, shape, size, room=1, seed=0):
    """Indices for an axis of `size` with room for `room`: in range,
    repeated, a third negative where the dtype is signed."""
    r = np.random.default_rng(seed)
    v = r.integers(0, size - room + 1, shape)
    if dtype in SIGNED:
        v = np.where(r.integers(0, 3, shape) == 0, v - size, v)
    return v


def index_array(v, dtype, layout):
    """v (a 2-d array) as a cmx index array of dtype in layout."""
    if layout == "transposed":  # a transposed view of the transposed data
        return mx.array(np.ascontiguousarray(v.T)).astype(dtype).T
    if layout == "strided":  # every other column of a wider array
        wide = np.repeat(v, 2, axis=1)
        return mx.array(wide).astype(dtype)[:, ::2]
    return mx.array(v).astype(dtype)


def data(shape, dtype=mx.float32, seed=0, lo=-9, hi=10):
    r = np.random.default_rng(seed)
    return mx.array(r.integers(lo, hi, shape)).astype(dtype)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=str)
def test_gather_one_index(device, idt, layout):
    a = data((6, 5, 4), mx.float32, 1)
    an = np.array(a)
    v = index_values(idt, (3, 4), 5, seed=2)
    idx = index_array(v, idt, layout)
    # the middle axis and the last (strided slices), the first (slices of
    # 20 contiguous floats: five 16-byte vectors each), a[:, idx] through
    # getitem
    for axis in (1, 0, 2):
        size = a.shape[axis]
        w = index_values(idt, (3, 4), size, seed=3 + axis)
        ix = index_array(w, idt, layout)
        got = cpu_match(device, lambda: mx.take(a, ix, axis=axis), rtol=0, atol=0)
        np.testing.assert_array_equal(np.array(got), np.take(an, w, axis=axis))
    got = cpu_match(device, lambda: a[:, idx], rtol=0, atol=0)
    np.testing.assert_array_equal(np.array(got), an[:, v])
    # a reversed index vector (a negative stride)
    flat = mx.array(v.reshape(-1)).astype(idt)[::-1]
    got = cpu_match(device, lambda: mx.take(a, flat, axis=1), rtol=0, atol=0)
    np.testing.assert_array_equal(np.array(got), an[:, v.reshape(-1)[::-1]])


@pytest.mark.parametrize("dtype", [mx.int8, mx.float16, mx.bfloat16, mx.int64,
                                   mx.complex64, mx.bool_], ids=str)
def test_gather_one_index_dtypes(device, dtype):
    a = data((7, 3, 5), dtype, 4)
    idx = index_array(index_values(mx.int32, (2, 6), 3, seed=5), mx.int32,
                      "strided")
    cpu_match(device, lambda: mx.take(a, idx, axis=1), rtol=0, atol=0)
    cpu_match(device, lambda: a[mx.array(-2)], rtol=0, atol=0)  # a 0-d index


SCATTER_OPS = ["set", "add", "multiply", "maximum", "minimum"]


@pytest.mark.parametrize("op", SCATTER_OPS)
@pytest.mark.parametrize("dtype", [mx.int32, mx.float32, mx.float16,
                                   mx.bfloat16, mx.uint8, mx.int64,
                                   mx.float64, mx.complex64, mx.bool_], ids=str)
def test_scatter_one_index(device, op, dtype):
    # values whose sums and products are exact in any order (the GPU
    # combines repeated indices with atomics)
    lo, hi = (1, 3) if op == "multiply" else (0 if dtype == mx.uint8 else -9, 10)
    a = data((6, 5, 4), dtype, 6, lo, hi)
    for k, layout in enumerate(["contiguous", "transposed", "strided"]):
        idt = INDEX_DTYPES[(k * 3 + SCATTER_OPS.index(op)) % 8]
        v = index_values(idt, (3, 4), 5, seed=7 + k)
        idx = index_array(v, idt, layout)
        upd = data((6, 3, 4, 4), dtype, 8 + k, lo, hi)

        got = cpu_match(device, lambda: _update(a, idx, op, upd), rtol=0, atol=0)
        if op == "set" and dtype != mx.bfloat16:
            want = np.array(a).copy()
            for p in np.ndindex(3, 4):  # the last update of an element wins
                want[:, v[p] % 5] = np.array(upd)[:, p[0], p[1]]
            np.testing.assert_array_equal(np.array(got), want)
    # one position (no winner pass on the GPU) and a 0-d index
    one = data((6, 4), dtype, 9, lo, hi)
    for i in (mx.array(3), mx.array(-1, mx.int8)):
        cpu_match(device, lambda: _update(a, i, op, one), rtol=0, atol=0)


def _update(a, idx, op, upd):
    """a with a[:, idx] set to upd (op "set"), or combined with it."""
    if op != "set":
        return getattr(a.at[:, idx], op)(upd)
    b = mx.array(a)  # a new array object: a stays as it is
    b[:, idx] = upd
    return b


@pytest.mark.parametrize("idt", [mx.int32, mx.int64, mx.int16, mx.uint8])
def test_dynamic_slices(device, idt):
    # a KV cache's reads and writes: starts wrapped when negative and
    # clamped so the window fits, as on the CPU (MLX reads out of range)
    cache = data((2, 3, 40, 8), mx.float32, 10)
    cn = np.array(cache)
    starts = [0, 7, 39, 45, 250] + ([-3, -60] if idt in SIGNED else [])
    for st in starts:
        for rows in (1, 6):
            s0 = min(max(st + 40 if st < 0 else st, 0), 40 - rows)
            start = mx.array([st], mx.int64).astype(idt)
            got = cpu_match(device, lambda: mx.slice(
                cache, start, (2,), (rows,)), rtol=0, atol=0)
            np.testing.assert_array_equal(np.array(got), cn[:, :, s0:s0 + rows])
            upd = data((2, 3, rows, 8), mx.float32, 11 + rows)
            got = cpu_match(device, lambda: mx.slice_update(
                cache, upd, start, (2,)), rtol=0, atol=0)
            want = cn.copy()
            want[:, :, s0:s0 + rows] = np.array(upd)
            np.testing.assert_array_equal(np.array(got), want)
    # a scalar start, starts along two axes, an empty update
    cpu_match(device, lambda: mx.slice(cache, mx.array(5).astype(idt), (2,), (4,)),
              rtol=0, atol=0)
    cpu_match(device, lambda: mx.slice_update(
        cache, data((2, 2, 3, 8), mx.float32, 12), mx.array([1, 30]).astype(idt),
        (1, 2)), rtol=0, atol=0)
    got = cpu_match(device, lambda: mx.slice_update(
        cache, mx.zeros((2, 3, 0, 8)), mx.array([9]).astype(idt), (2,)),
        rtol=0, atol=0)
    np.testing.assert_array_equal(np.array(got), cn)


def test_empty_updates(device):
    a = data((6, 5, 4), mx.float32, 13)
    idx = mx.array([[1, -2], [0, 4]])
    got = cpu_match(device, lambda: a.at[:, idx, :0].add(mx.ones((6, 2, 2, 0))),
                    rtol=0, atol=0)
    np.testing.assert_array_equal(np.array(got), np.array(a))


OUT_OF_RANGE = {
    "take": lambda a: mx.take(a, mx.array([[1, 5], [0, 2]], mx.int16), axis=1),
    "take_negative": lambda a: mx.take(a, mx.array([-6, 1]), axis=1),
    "take_uint64": lambda a: mx.take(a, mx.array([2**63 + 1, 0], mx.uint64), axis=1),
    "set": lambda a: _update(a, mx.array([1, 3, 5, 3]), "set", mx.ones((6, 4, 4))),
    "add_0d": lambda a: a.at[:, mx.array(-7)].add(mx.ones((6, 4))),
    "maximum": lambda a: a.at[:, mx.array([[1, 9]], mx.uint8)].maximum(mx.ones((6, 1, 2, 4))),
    "empty_updates": lambda a: a.at[:, mx.array([0, 5]), :0].add(mx.ones((6, 2, 0))),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_RANGE))
def test_one_index_out_of_range(device, case):
    messages = []
    for dev in (mx.cpu, device):
        with mx.stream(dev):
            a = mx.arange(6 * 5 * 4, dtype=mx.float32).reshape(6, 5, 4)
            with pytest.raises(IndexError, match="out of bounds for axis 1 with size 5") as e:
                mx.eval(OUT_OF_RANGE[case](a))
            messages.append(str(e.value))
            # later work on the device is unaffected
            ok = mx.take(a, mx.array([4, 0]), axis=1)
            assert ok[0, :, 0].tolist() == [16, 0]
    assert messages[0] == messages[1]
