"""Indexing: a[key], a[key] = v, a.at[key].op(v), compared with NumPy."""
import numpy as np
import pytest

import cmx.core as mx

# Every test here runs on every device (the GPU where there is one).
pytestmark = pytest.mark.usefixtures("on_device")

X = np.arange(60, dtype=np.int32).reshape(3, 4, 5)

GET_KEYS = [
    0, -1, 2, (1, 2), (1, 2, 3), (-1, -2, -3),
    slice(None), slice(1, None), slice(None, 2), slice(None, None, -1),
    slice(None, None, 2), slice(-10, None, -1), slice(5, 1, -1), slice(1, 1),
    slice(-2, -1), slice(100, 200),
    (slice(None), 0), (slice(None), slice(None, None, -2)),
    (Ellipsis, 0), (0, Ellipsis), (Ellipsis,), (), (1, Ellipsis, None),
    (None,), (0, None, slice(1, 3)), (None, Ellipsis, None),
    (2, slice(None), slice(4, 0, -2)), (slice(None, None, -1), 1, slice(None, None, 3)),
]


@pytest.mark.parametrize("key", GET_KEYS, ids=repr)
def test_getitem_matches_numpy(key):
    a = mx.array(X)
    got = a[key]
    ref = X[key]
    assert got.shape == ref.shape
    np.testing.assert_array_equal(np.array(got), ref)


def test_getitem_documented_examples():
    arr = mx.arange(10)
    assert arr[3].item() == 3 and arr[3].dtype == mx.int32 and arr[3].shape == ()
    assert arr[-2].item() == 8
    assert arr[2:8:2].tolist() == [2, 4, 6]
    arr = mx.arange(8).reshape(2, 2, 2)
    assert arr[:, :, 0].tolist() == [[0, 2], [4, 6]]
    assert arr[..., 0].tolist() == [[0, 2], [4, 6]]
    assert mx.arange(8)[None].shape == (1, 8)


def test_getitem_numpy_integer_keys():
    a = mx.array(X)
    np.testing.assert_array_equal(np.array(a[np.int64(1)]), X[1])
    np.testing.assert_array_equal(np.array(a[:, np.int32(-1)]), X[:, -1])


def test_getitem_errors():
    a = mx.array(X)
    with pytest.raises(IndexError, match="out of bounds"):
        a[3]
    with pytest.raises(IndexError, match="out of bounds"):
        a[0, -5]
    # MLX raises ValueError for malformed keys (out-of-range ones above
    # are IndexError)
    with pytest.raises(ValueError, match="(?i)too many indices"):
        a[0, 0, 0, 0]
    with pytest.raises(ValueError, match="single ellipsis"):
        a[..., 0, ...]
    with pytest.raises(ValueError):
        a[1.5]
    with pytest.raises(ValueError):
        a["x"]
    with pytest.raises(ValueError):
        mx.array(1)[0]
    with pytest.raises(ValueError, match="bool"):
        a[True]


def test_getitem_without_slicing():
    a = mx.array(7)
    assert a[()].item() == 7
    assert a[...].item() == 7
    b = mx.array([1, 2])
    assert b[:].tolist() == [1, 2]


ARRAY_KEYS = [
    [0, 2],
    [[0, 1], [2, 2]],
    (slice(None), [0, 3]),
    (1, [0, -1], slice(None, None, 2)),
    ([0, 2], [1, 3]),
    ([0, 2], slice(None), [1, 3]),           # separated advanced indices
    (Ellipsis, [4, 0]),
    (None, [1], 0),
    ([[0], [2]], [[1, 2, 3]]),               # broadcasting index arrays
    (slice(1, None), [[0, 1]], None),
]


@pytest.mark.parametrize("key", ARRAY_KEYS, ids=repr)
def test_array_indices_match_numpy(key):
    a = mx.array(X)
    got = a[key]
    ref = X[key]
    assert got.shape == ref.shape
    np.testing.assert_array_equal(np.array(got), ref)


def test_index_array_types():
    a = mx.array(X)
    for idx in [mx.array([0, 2]), np.array([0, 2]), mx.array([0, 2], dtype=mx.uint8),
                mx.array([-1, 0], dtype=mx.int64)]:
        np.testing.assert_array_equal(np.array(a[idx]), X[np.array(idx)])
    arr = mx.arange(10)
    idx = mx.array([5, 7])
    assert arr[idx].tolist() == [5, 7] and arr[idx].dtype == mx.int32
    with pytest.raises(TypeError):
        a[mx.array([0.5])]


def test_boolean_masks():
    a = mx.array(X)
    m = X[:, :, 0] % 2 == 0
    np.testing.assert_array_equal(np.array(a[mx.array(m)]), X[m])
    np.testing.assert_array_equal(np.array(a[np.array([True, False, True])]), X[[True, False, True]])
    np.testing.assert_array_equal(np.array(a[1, :, np.arange(5) > 2]), X[1, :, np.arange(5) > 2])
    with pytest.raises(IndexError, match="boolean index"):
        a[mx.array([True, False])]


SET_CASES = [
    (2, 0),
    (-1, 5),
    ((0, 1), [1, 2, 3, 4, 5]),
    ((slice(None), 0), 7),
    ((slice(None), 0), [[1, 2, 3, 4, 5]]),
    ((Ellipsis, 1), np.arange(12).reshape(3, 4)),
    ((slice(None, None, -1), slice(1, 3)), np.arange(5)),
    ((None, 1, slice(None, None, 2)), np.ones((1, 2, 5))),
    ((1, None), 3),
    ((slice(0, 3, 2), 2, slice(4, 0, -2)), [[10, 20], [30, 40]]),
    ((), 1),
    ([0, 2], 9),
    (([0, 2], slice(None), [1, 3]), [[1, 2, 3, 4]]),
    ((slice(None), [3, 1]), np.arange(30).reshape(3, 2, 5)),
]


@pytest.mark.parametrize("key,value", SET_CASES, ids=repr)
def test_setitem_matches_numpy(key, value):
    ref = X.copy()
    ref[key] = value
    a = mx.array(X)
    v = mx.array(value) if isinstance(value, (list, np.ndarray)) else value
    a[key] = v
    assert a.dtype == mx.int32
    np.testing.assert_array_equal(np.array(a), ref)


def test_setitem_visible_through_references():
    a = mx.array([1, 2, 3])
    b = a
    b[2] = 0
    assert b.tolist() == [1, 2, 0]
    assert a.tolist() == [1, 2, 0]


def test_setitem_converts_to_the_array_dtype():
    a = mx.zeros((3,), dtype=mx.int32)
    a[1] = 2.7
    assert a.dtype == mx.int32 and a.tolist() == [0, 2, 0]
    f = mx.zeros((2,), dtype=mx.float16)
    f[0] = mx.array(1.5, dtype=mx.float32)
    assert f.dtype == mx.float16 and f.tolist() == [1.5, 0.0]


def test_setitem_errors():
    a = mx.zeros((3, 4))
    with pytest.raises(ValueError, match="broadcast"):
        a[0] = mx.zeros((3,))
    with pytest.raises(ValueError, match="broadcast"):
        a[:, 1] = mx.zeros((4,))
    with pytest.raises(IndexError):
        a[5] = 1
    with pytest.raises(ValueError, match="overflow"):
        mx.zeros((2,), dtype=mx.int8)[0] = 1000
    with pytest.raises(TypeError):
        del a[0]


def test_at_updates():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = mx.array(x)
    for name, fn in [
        ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
        ("divide", np.divide), ("maximum", np.maximum), ("minimum", np.minimum),
    ]:
        ref = x.copy()
        ref[:, 1:] = fn(ref[:, 1:], 2.5)
        got = getattr(a.at[:, 1:], name)(2.5)
        np.testing.assert_allclose(np.array(got), ref)
    np.testing.assert_array_equal(np.array(a), x)  # a itself is unchanged


def test_at_add_documented():
    assert mx.array([0, 0]).at[1].add(2).tolist() == [0, 2]
    a = mx.array([0, 0])
    idx = mx.array([0, 1, 0, 1])
    a[idx] += 1  # assignment: repeated indices keep one update
    assert a.tolist() == [1, 1]
    a = mx.array([0, 0])
    assert a.at[idx].add(1).tolist() == [2, 2]  # at: all updates apply


def test_at_with_repeated_indices_matches_numpy_ufunc_at():
    x = np.arange(6, dtype=np.float32) + 1
    idx = np.array([0, 2, 2, 5, 0])
    vals = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    for name, ufunc in [("add", np.add), ("subtract", np.subtract),
                        ("multiply", np.multiply), ("maximum", np.maximum),
                        ("minimum", np.minimum)]:
        ref = x.copy()
        ufunc.at(ref, idx, vals)
        got = getattr(mx.array(x).at[mx.array(idx)], name)(mx.array(vals))
        np.testing.assert_allclose(np.array(got), ref, rtol=1e-6)
    ref = x.copy()
    np.divide.at(ref, idx, vals)
    got = mx.array(x).at[mx.array(idx)].divide(mx.array(vals))
    np.testing.assert_allclose(np.array(got), ref, rtol=1e-6)


# Out-of-range index arrays raise on every device. On the GPU the kernel
# cannot stop: it records the first bad index and the eval that waits for
# it raises the CPU's IndexError; the array keeps the error and the
# device stays usable.
OUT_OF_RANGE_CASES = {
    "take": lambda a: mx.take(a, mx.array([1, 7, 2]), axis=0),
    "take_negative": lambda a: mx.take(a, mx.array([-8]), axis=0),
    "take_along_axis": lambda a: mx.take_along_axis(
        a, mx.array([[0], [5], [1], [2]]), axis=1),
    "getitem": lambda a: a[mx.array([0, 4])],
    "put_along_axis": lambda a: mx.put_along_axis(
        a, mx.array([[0], [9], [1], [2]]), mx.array(1.0), axis=1),
    "at_add_scalar": lambda a: a.at[mx.array([5])].add(1.0),
    "scatter_add": lambda a: a.at[mx.array([1, 4])].add(mx.ones((2, 3))),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_RANGE_CASES))
def test_out_of_range_indices_raise_on_every_device(device, case):
    fn = OUT_OF_RANGE_CASES[case]
    messages = []
    for dev in (mx.cpu, device):
        with mx.stream(dev):
            a = mx.arange(12, dtype=mx.float32).reshape(4, 3)
            out = fn(a)
            with pytest.raises(IndexError, match="out of bounds") as e:
                mx.eval(out)
            messages.append(str(e.value))
            with pytest.raises(IndexError, match="out of bounds"):
                mx.eval(out)  # the array keeps its error
            with pytest.raises(IndexError, match="out of bounds"):
                mx.eval(out + 1)  # and so do arrays computed from it
            ok = mx.take(a, mx.array([3, 0]), axis=0) * 2
            assert ok.tolist() == [[18, 20, 22], [0, 2, 4]]  # still usable
    assert messages[0] == messages[1]
