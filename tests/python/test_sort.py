"""Sort and select: sort, argsort, partition, argpartition, topk and
searchsorted against NumPy on many shapes and dtypes, with their errors."""
import numpy as np
import pytest

import cmx.core as mx
from conftest import ALL_DTYPES, np_dtype

# Every test here runs on every device (the GPU where there is one).
pytestmark = pytest.mark.usefixtures("on_device")

SHAPES = [(0,), (1,), (9,), (4, 7), (3, 0, 2), (2, 3, 5)]
NP_DTYPES = [d for d in ALL_DTYPES if d != mx.bfloat16]


def sample(shape, dt, seed=0):
    """Values with many ties (to see stability), as a NumPy array."""
    rng = np.random.default_rng(seed)
    if dt == mx.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dt == mx.complex64:
        re = rng.integers(-3, 4, shape)
        im = rng.integers(-2, 3, shape)
        return (re + 1j * im).astype(np.complex64)
    npd = np_dtype(dt)
    if np.issubdtype(npd, np.unsignedinteger):
        return rng.integers(0, 6, shape).astype(npd)
    if np.issubdtype(npd, np.integer):
        return rng.integers(-5, 6, shape).astype(npd)
    return (rng.integers(-8, 9, shape) / 2).astype(npd)


def axes_for(shape):
    return [None] + list(range(-len(shape), len(shape)))


def as_np(a):
    if a.dtype == mx.bfloat16:
        a = a.astype(mx.float32)
    return np.array(a)


@pytest.mark.parametrize("dt", NP_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_sort_argsort_match_numpy_stable(dt, shape):
    x = sample(shape, dt)
    a = mx.array(x, dtype=dt)
    for axis in axes_for(shape):
        s = mx.sort(a, axis=axis)
        assert s.dtype == dt
        np.testing.assert_array_equal(as_np(s), np.sort(x, axis=axis, kind="stable"))
        i = mx.argsort(a, axis=axis)
        assert i.dtype == mx.uint32
        np.testing.assert_array_equal(as_np(i), np.argsort(x, axis=axis, kind="stable"))
    # default axis is -1
    np.testing.assert_array_equal(as_np(mx.sort(a)), np.sort(x, axis=-1))


def test_sort_bfloat16_and_nan():
    x = np.array([[3.5, np.nan, -1.0, 2.0], [np.nan, 0.5, -0.0, 0.0]], np.float32)
    for dt in [mx.float32, mx.float16, mx.bfloat16, mx.float64]:
        a = mx.array(x).astype(dt)
        np.testing.assert_array_equal(as_np(mx.sort(a)), np.sort(x, axis=-1))
        np.testing.assert_array_equal(as_np(mx.argsort(a, axis=None)),
                                      np.argsort(x, axis=None, kind="stable"))


def test_sort_non_contiguous_inputs():
    x = sample((6, 8), mx.float32, seed=3)
    a = mx.array(x)
    for view, ref in [(a.T, x.T), (a[:, ::2], x[:, ::2]), (a[::-1, 1:], x[::-1, 1:])]:
        for axis in [0, 1, None]:
            np.testing.assert_array_equal(np.array(mx.sort(view, axis=axis)),
                                          np.sort(ref, axis=axis))
            np.testing.assert_array_equal(np.array(mx.argsort(view, axis=axis)),
                                          np.argsort(ref, axis=axis, kind="stable"))


def check_partition(x, part, kth, axis):
    """part is a partition of x around kth along axis."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    srt = np.sort(x, axis=axis)
    pivot = np.take(srt, [kth], axis=axis)
    np.testing.assert_array_equal(np.take(part, [kth], axis=axis), pivot)
    n = x.shape[axis]
    k = kth % n
    before = np.take(part, range(0, k), axis=axis)
    after = np.take(part, range(k + 1, n), axis=axis)
    assert np.all(before <= pivot) and np.all(after >= pivot)
    np.testing.assert_array_equal(np.sort(part, axis=axis), srt)


@pytest.mark.parametrize("dt", [mx.int32, mx.uint8, mx.float32, mx.float64, mx.int64, mx.float16])
@pytest.mark.parametrize("shape", [(9,), (4, 7), (2, 3, 5)])
def test_partition_and_argpartition(dt, shape):
    x = sample(shape, dt, seed=1)
    a = mx.array(x, dtype=dt)
    for axis in [None, -1, 0]:
        n = x.size if axis is None else x.shape[axis]
        for kth in sorted({0, n // 2, n - 1, -1}):
            p = mx.partition(a, kth, axis=axis)
            check_partition(x, np.array(p), kth, axis)
            idx = np.array(mx.argpartition(a, kth=kth, axis=axis))
            flat = x.reshape(-1) if axis is None else x
            ax = 0 if axis is None else axis
            check_partition(x, np.take_along_axis(flat, idx.astype(np.int64), axis=ax), kth, axis)
            # ties are broken by index: position kth holds argsort's kth index
            np.testing.assert_array_equal(
                np.take(idx, [kth], axis=ax),
                np.take(np.argsort(flat, axis=ax, kind="stable"), [kth], axis=ax))


@pytest.mark.parametrize("dt", [mx.int32, mx.float32, mx.uint16, mx.float64, mx.bfloat16])
def test_topk(dt):
    x = sample((5, 8), dt if dt != mx.bfloat16 else mx.float32, seed=2)
    a = mx.array(x).astype(dt)
    for axis, k in [(-1, 3), (0, 2), (None, 5), (1, 8), (1, 0)]:
        t = as_np(mx.topk(a, k, axis=axis))
        if axis is None:
            ref = np.sort(x.reshape(-1))[x.size - k:]
            np.testing.assert_array_equal(np.sort(t), ref)
        else:
            ref = np.take(np.sort(x, axis=axis), range(x.shape[axis] - k, x.shape[axis]), axis=axis)
            np.testing.assert_array_equal(np.sort(t, axis=axis), ref)
    assert mx.topk(a, k=2).shape == (5, 2)


@pytest.mark.parametrize("dt", [mx.int32, mx.float32, mx.uint8, mx.float64, mx.int64])
def test_searchsorted(dt):
    rng = np.random.default_rng(4)
    seq = np.sort(sample((12,), dt, seed=5))
    for vshape in [(), (0,), (7,), (3, 4)]:
        vals = sample(vshape, dt, seed=6) if vshape else np.array(seq[3])
        for side in ["left", "right"]:
            got = mx.searchsorted(mx.array(seq, dtype=dt), mx.array(vals, dtype=dt), side=side)
            assert got.dtype == mx.uint32 and got.shape == vals.shape
            np.testing.assert_array_equal(np.array(got), np.searchsorted(seq, vals, side=side))
    # the documented example, a Python scalar value, NaNs ordered last
    a = mx.array([1, 2, 2, 4])
    assert mx.searchsorted(a, mx.array([0, 2, 3, 5])).tolist() == [0, 1, 3, 4]
    assert mx.searchsorted(a, mx.array([0, 2, 3, 5]), side="right").tolist() == [0, 3, 3, 4]
    assert mx.searchsorted(a, 2, side="right").item() == 3
    f = np.array([1.0, 2.0, np.nan], np.float32)
    v = np.array([np.nan, 1.5, 3.0], np.float32)
    np.testing.assert_array_equal(np.array(mx.searchsorted(mx.array(f), mx.array(v))),
                                  np.searchsorted(f, v))
    del rng


def test_sort_family_errors():
    a = mx.array([[3, 1, 2], [9, -1, 0]])
    cases = [
        (lambda: mx.sort(a, axis=2), IndexError, "[sort]"),
        (lambda: mx.argsort(a, axis=-3), IndexError, "[argsort]"),
        (lambda: mx.partition(a, 3), ValueError, "[partition]"),
        (lambda: mx.argpartition(a, -4, axis=0), ValueError, "[argpartition]"),
        (lambda: mx.topk(a, 4), ValueError, "[topk]"),
        (lambda: mx.topk(a, -1), ValueError, "[topk]"),
        (lambda: mx.searchsorted(a, 1), ValueError, "[searchsorted]"),
        (lambda: mx.searchsorted(mx.array([1, 2]), 1, side="middle"), ValueError, "[searchsorted]"),
        (lambda: mx.sort(a, axis="x"), TypeError, "[sort]"),
        (lambda: mx.topk(a, 1.5), TypeError, "[topk]"),
        (lambda: mx.sort("abc"), TypeError, "sort"),
    ]
    for f, exc, msg in cases:
        with pytest.raises(exc) as e:
            f()
        assert msg in str(e.value)
    with pytest.raises(TypeError):
        mx.sort(a, -1, mx.cpu)  # stream is keyword-only


def test_sort_stream_and_signature():
    a = mx.array([3.0, 1.0, 2.0])
    assert mx.sort(a, stream=mx.cpu).tolist() == [1.0, 2.0, 3.0]
    assert mx.argsort(a, axis=0, stream=mx.default_stream(mx.cpu)).tolist() == [1, 2, 0]
    import inspect
    assert str(inspect.signature(mx.sort)) == "(a, /, axis=-1, *, stream=None)"
    assert str(inspect.signature(mx.topk)) == "(a, /, k, axis=-1, *, stream=None)"
    assert "sorted copy" in mx.sort.__doc__


def sample_specials(shape, dt, seed):
    """sample() with NaN, +-inf, -0.0 and 0.0 mixed into float dtypes."""
    x = sample(shape, dt, seed)
    if np.issubdtype(x.dtype, np.floating):
        rng = np.random.default_rng(seed + 1)
        m = rng.integers(0, 10, shape)
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], x.dtype)
        x = np.where(m < 5, specials[np.minimum(m, 4)], x).astype(x.dtype)
    return x


# Row lengths that reach each GPU path (bitonic rows several to a block,
# a block's radix sort, the tiled radix sort over one and many tiles),
# sorted along the last, first and a middle axis; stable ties, NaN last.
@pytest.mark.parametrize("n", [1, 2, 31, 1024, 1025, 4097, 1 << 20])
@pytest.mark.parametrize("dt", [mx.float32, mx.int64, mx.float16, mx.uint8, mx.float64])
def test_sort_rows_of_every_length(n, dt):
    shapes = [((3, n), -1), ((n, 2), 0), ((2, n, 3), 1)] if n < (1 << 20) else [((n,), 0)]
    for shape, axis in shapes:
        x = sample_specials(shape, dt, seed=n % 97)
        a = mx.array(x, dtype=dt)
        want = np.argsort(x, axis=axis, kind="stable")
        np.testing.assert_array_equal(np.array(mx.argsort(a, axis=axis)), want)
        got = np.array(mx.sort(a, axis=axis))
        ref = np.take_along_axis(x, want, axis=axis)
        # the elements themselves, bit for bit (-0.0 stays -0.0)
        u = f"u{x.itemsize}"
        np.testing.assert_array_equal(got.view(u), ref.view(u))
        # a partition: the sorted element at k, the sorted sides as sets
        k = shape[axis] // 2
        p = np.array(mx.partition(a, k, axis=axis))
        srt = np.take_along_axis(x, want, axis=axis)
        n_ax = shape[axis]
        for lo, hi in [(0, k), (k, k + 1), (k + 1, n_ax)]:
            np.testing.assert_array_equal(np.sort(np.take(p, range(lo, hi), axis=axis), axis=axis),
                                          np.take(srt, range(lo, hi), axis=axis))
