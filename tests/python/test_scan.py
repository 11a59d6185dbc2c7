"""Scans and the remaining reductions: cumsum, cumprod, cummax, cummin,
logcumsumexp (functions and array methods, reverse/inclusive),
cumulative_sum/cumulative_prod, diff, median and count_nonzero against
NumPy, with their errors."""
import inspect

import numpy as np
import pytest

import cmx.core as mx
from conftest import np_dtype

# Every test here runs on every device (the GPU where there is one).
pytestmark = pytest.mark.usefixtures("on_device")

SHAPES = [(0,), (1,), (10,), (3, 4), (2, 0, 3), (2, 3, 4)]
INT_DTYPES = [mx.int8, mx.int16, mx.int32, mx.int64, mx.uint8, mx.uint32]
FLOAT_DTYPES = [mx.float16, mx.float32, mx.float64]


def sample(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    if dt == mx.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    npd = np_dtype(dt)
    if np.issubdtype(npd, np.integer):
        lo = 0 if np.issubdtype(npd, np.unsignedinteger) else -3
        return rng.integers(lo, 4, shape).astype(npd)
    return rng.uniform(-1.5, 1.5, shape).astype(npd)


def identity(op, npd):
    if op == "cumsum":
        return 0
    if op == "cumprod":
        return 1
    if op == "logcumsumexp":
        return -np.inf
    if npd == np.bool_:
        return op == "cummin"
    big = np.iinfo(npd).max if np.issubdtype(npd, np.integer) else np.inf
    small = np.iinfo(npd).min if np.issubdtype(npd, np.integer) else -np.inf
    return small if op == "cummax" else big


def ref_scan(x, op, axis, reverse, inclusive, out_dtype):
    """The scan along axis in NumPy, accumulating in out_dtype."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    y = x.astype(out_dtype)
    if reverse:
        y = np.flip(y, axis)
    acc = {
        "cumsum": lambda v: np.cumsum(v, axis=axis, dtype=out_dtype),
        "cumprod": lambda v: np.cumprod(v, axis=axis, dtype=out_dtype),
        "cummax": lambda v: np.maximum.accumulate(v, axis=axis),
        "cummin": lambda v: np.minimum.accumulate(v, axis=axis),
        "logcumsumexp": lambda v: np.logaddexp.accumulate(v.astype(np.float64), axis=axis),
    }[op](y)
    if not inclusive and y.shape[axis] > 0:
        first = np.full_like(np.take(acc, [0], axis=axis), identity(op, out_dtype))
        acc = np.concatenate([first, np.take(acc, range(y.shape[axis] - 1), axis=axis)], axis)
    if reverse:
        acc = np.flip(acc, axis)
    return acc


def out_dtype_of(op, dt):
    npd = np_dtype(dt)
    if dt == mx.bool_ and op == "cumsum":
        return np.int32
    if op == "logcumsumexp" and not np.issubdtype(npd, np.floating):
        return np.float32
    return npd


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("dt", INT_DTYPES + [mx.float32, mx.float64, mx.bool_])
@pytest.mark.parametrize("shape", SHAPES)
def test_scans_match_numpy(op, dt, shape):
    x = sample(shape, dt)
    a = mx.array(x, dtype=dt)
    f = getattr(mx, op)
    for axis in [None] + list(range(-len(shape), len(shape))):
        for reverse in [False, True]:
            for inclusive in [True, False]:
                got = f(a, axis=axis, reverse=reverse, inclusive=inclusive)
                od = out_dtype_of(op, dt)
                ref = ref_scan(x, op, axis, reverse, inclusive, od)
                assert np.array(got).dtype == ref.dtype, (op, dt)
                if np.issubdtype(od, np.floating):
                    np.testing.assert_allclose(np.array(got), ref, rtol=1e-5, atol=1e-6)
                else:
                    np.testing.assert_array_equal(np.array(got), ref)
    # the array method gives the same as the function
    np.testing.assert_array_equal(np.array(getattr(a, op)()), np.array(f(a)))
    if len(shape) > 1:
        np.testing.assert_array_equal(np.array(getattr(a, op)(1, reverse=True)),
                                      np.array(f(a, axis=1, reverse=True)))


def test_integer_scans_wrap_like_the_dtype():
    x = np.array([100, 100, 100], np.int8)
    np.testing.assert_array_equal(np.array(mx.cumsum(mx.array(x))), np.cumsum(x, dtype=np.int8))
    u = np.array([200, 100], np.uint8)
    np.testing.assert_array_equal(np.array(mx.cumprod(mx.array(u))), np.cumprod(u, dtype=np.uint8))


@pytest.mark.parametrize("dt", FLOAT_DTYPES + [mx.bfloat16, mx.int32, mx.bool_])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4)])
def test_logcumsumexp(dt, shape):
    x = sample(shape, dt if dt != mx.bfloat16 else mx.float32, seed=2)
    a = mx.array(x).astype(dt)
    xr = np.array(a.astype(mx.float32)).astype(np.float64)
    tol = 1e-2 if dt in (mx.float16, mx.bfloat16) else 1e-5
    for axis in [None, 0, -1]:
        for reverse, inclusive in [(False, True), (True, False), (True, True)]:
            got = a.logcumsumexp(axis=axis, reverse=reverse, inclusive=inclusive)
            exp_dt = mx.float32 if dt in (mx.int32, mx.bool_) else dt
            assert got.dtype == exp_dt
            ref = ref_scan(xr, "logcumsumexp", axis, reverse, inclusive, np.float64)
            np.testing.assert_allclose(np.array(got.astype(mx.float64)), ref, rtol=tol, atol=tol)
    # stable for large values, -inf in an exclusive start
    big = mx.array([1000.0, 1000.0])
    np.testing.assert_allclose(np.array(mx.logcumsumexp(big)), [1000.0, 1000.0 + np.log(2)], rtol=1e-6)
    assert mx.logcumsumexp(big, inclusive=False)[0].item() == -np.inf


@pytest.mark.parametrize("dt", [mx.float16, mx.bfloat16])
def test_half_precision_scans_accumulate_in_float32(dt):
    x = np.full(3000, 1.0, np.float32)
    got = mx.cumsum(mx.array(x).astype(dt))
    assert got.dtype == dt
    ref = np.cumsum(x).astype(np.float32)
    # float32 accumulation rounded once: 2049 (not representable) is not
    # stuck at 2048 as a float16 accumulator would be
    np.testing.assert_allclose(np.array(got.astype(mx.float32)), ref, rtol=1e-2)
    assert got[-1].item() > 2900


@pytest.mark.parametrize("op", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2)])
def test_cumulative_aliases(op, shape):
    x = sample(shape, mx.int32, seed=7)
    a = mx.array(x)
    f = getattr(mx, op)
    ref_f = getattr(np, op)
    for axis in range(len(shape)):
        for include in [False, True]:
            got = f(a, axis=axis, include_initial=include)
            np.testing.assert_array_equal(np.array(got), ref_f(x, axis=axis, include_initial=include))
    if len(shape) == 1:
        np.testing.assert_array_equal(np.array(f(a)), ref_f(x))
        np.testing.assert_array_equal(np.array(f(a, include_initial=True)),
                                      ref_f(x, include_initial=True))
    got = f(a, axis=0, dtype=mx.float32)
    assert got.dtype == mx.float32
    np.testing.assert_allclose(np.array(got), ref_f(x.astype(np.float32), axis=0))
    with pytest.raises(TypeError):
        f(a, 0)  # axis is keyword-only in the array API


@pytest.mark.parametrize("dt", [mx.int32, mx.uint8, mx.float32, mx.float64, mx.bool_, mx.int64])
@pytest.mark.parametrize("shape", [(6,), (3, 5), (2, 4, 3)])
def test_diff(dt, shape):
    x = sample(shape, dt, seed=8)
    a = mx.array(x, dtype=dt)
    for axis in range(-len(shape), len(shape)):
        for n in [0, 1, 2, shape[axis], shape[axis] + 2]:
            got = mx.diff(a, n=n, axis=axis)
            np.testing.assert_array_equal(np.array(got), np.diff(x, n=n, axis=axis))
    np.testing.assert_array_equal(np.array(mx.diff(a)), np.diff(x))
    if dt != mx.bool_:
        pre = np.ones(shape[:-1] + (2,), np_dtype(dt))
        np.testing.assert_array_equal(np.array(mx.diff(a, prepend=mx.array(pre), append=3)),
                                      np.diff(x, prepend=pre, append=np_dtype(dt)(3)))
        np.testing.assert_array_equal(np.array(mx.diff(a, axis=0, prepend=1)),
                                      np.diff(x, axis=0, prepend=np_dtype(dt)(1)))


@pytest.mark.parametrize("dt", [mx.float32, mx.float64, mx.int32, mx.uint8, mx.float16, mx.bool_])
@pytest.mark.parametrize("shape", [(1,), (7,), (4, 6), (3, 2, 5)])
def test_median(dt, shape):
    x = sample(shape, dt, seed=9)
    a = mx.array(x, dtype=dt)
    axes = [None] + list(range(len(shape))) + ([(0, -1)] if len(shape) > 1 else [])
    for axis in axes:
        for keepdims in [False, True]:
            got = mx.median(a, axis=axis, keepdims=keepdims)
            assert got.dtype in (mx.float16, mx.float32, mx.float64)
            if dt in (mx.float16, mx.float32, mx.float64):
                assert got.dtype == dt
            ref = np.median(x.astype(np.float64), axis=axis, keepdims=keepdims)
            tol = 1e-3 if dt == mx.float16 else 1e-6
            np.testing.assert_allclose(np.array(got.astype(mx.float64)), ref, rtol=tol, atol=tol)
    nan = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
    np.testing.assert_array_equal(np.array(mx.median(mx.array(nan), axis=1)),
                                  np.median(nan, axis=1))


@pytest.mark.parametrize("dt", [mx.float32, mx.int32, mx.bool_, mx.uint8, mx.complex64, mx.bfloat16])
@pytest.mark.parametrize("shape", [(0,), (7,), (4, 6), (3, 2, 5)])
def test_count_nonzero(dt, shape):
    rng = np.random.default_rng(10)
    x = (rng.integers(0, 3, shape) * (1 if dt != mx.complex64 else 1j)).astype(
        np.complex64 if dt == mx.complex64 else np.float32)
    a = mx.array(x).astype(dt)
    xs = np.array(a.astype(mx.complex64 if dt == mx.complex64 else mx.float32))
    axes = [None] + list(range(len(shape))) + ([(0, -1)] if len(shape) > 1 else [])
    for axis in axes:
        for keepdims in [False, True]:
            got = mx.count_nonzero(a, axis=axis, keepdims=keepdims)
            assert got.dtype == mx.int32
            np.testing.assert_array_equal(np.array(got),
                                          np.count_nonzero(xs, axis=axis, keepdims=keepdims))


def test_scan_family_errors():
    a = mx.array([[1.0, 2.0], [3.0, 4.0]])
    cases = [
        (lambda: mx.cumsum(a, axis=2), IndexError, "[cumsum]"),
        (lambda: a.cumprod(axis=-3), IndexError, "[cumprod]"),
        (lambda: mx.cummax(a, axis=[0]), TypeError, "[cummax]"),
        (lambda: mx.diff(a, n=-1), ValueError, "[diff]"),
        (lambda: mx.diff(mx.array(1.0)), ValueError, "[diff]"),
        (lambda: mx.diff(mx.array(1.0), prepend=0), ValueError, "[diff]"),
        (lambda: mx.diff(a, axis=2), IndexError, "[diff]"),
        (lambda: mx.diff(a, prepend=mx.zeros((3, 3))), ValueError, ""),
        (lambda: mx.median(mx.zeros((0,))), ValueError, "[median]"),
        (lambda: mx.median(a, axis=5), IndexError, "[median]"),
        (lambda: mx.count_nonzero(a, axis=(0, 0)), ValueError, "[count_nonzero]"),
        (lambda: mx.count_nonzero(a, axis=3), IndexError, "[count_nonzero]"),
        (lambda: mx.cumulative_sum(a, axis=4), IndexError, "[cumsum]"),
    ]
    for f, exc, msg in cases:
        with pytest.raises(exc) as e:
            f()
        assert msg in str(e.value)
    # complex logcumsumexp computes, as MLX
    z = mx.logcumsumexp(mx.array([1 + 2j, 0.5 - 1j]))
    np.testing.assert_allclose(np.array(z), np.log(np.cumsum(np.exp([1 + 2j, 0.5 - 1j]))), rtol=1e-5)


def test_scan_signatures_and_docs():
    assert str(inspect.signature(mx.cumsum)) == \
        "(a, /, axis=None, *, reverse=False, inclusive=True, stream=None)"
    assert str(inspect.signature(mx.array.logcumsumexp)) == \
        "(self, /, axis=None, *, reverse=False, inclusive=True, stream=None)"
    assert str(inspect.signature(mx.median)) == "(a, /, axis=None, keepdims=False, *, stream=None)"
    for name in ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff", "median",
                 "count_nonzero", "cumulative_sum", "cumulative_prod"]:
        assert getattr(mx, name).__doc__
    with pytest.raises(TypeError):
        mx.cumsum(mx.array([1]), 0, True)  # reverse is keyword-only
    assert mx.cumsum(mx.array([1, 2]), stream=mx.cpu).tolist() == [1, 3]
