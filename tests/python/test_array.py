"""The array object: construction, properties, item/tolist, Python
protocols (len, bool, int/float, format, hash, weakref), copy, pickle."""
import copy
import math
import pickle
import weakref

import numpy as np
import pytest

import cmx.core as mx
from conftest import ALL_DTYPES, np_dtype


# ---------------- construction from Python scalars ----------------
@pytest.mark.parametrize(
    "val,dtype",
    [
        (True, mx.bool_),
        (False, mx.bool_),
        (1, mx.int32),
        (-(2**31), mx.int32),
        (2**31 - 1, mx.int32),
        (2**31, mx.int64),
        (-(2**31) - 1, mx.int64),
        (2**63 - 1, mx.int64),
        (1.5, mx.float32),
        (1 + 2j, mx.complex64),
    ],
)
def test_scalar_defaults(val, dtype):
    a = mx.array(val)
    assert a.dtype == dtype
    assert a.shape == ()
    assert a.ndim == 0 and a.size == 1
    assert a.item() == val


def test_scalar_with_dtype():
    assert mx.array(3, dtype=mx.float32).item() == 3.0
    assert mx.array(3, mx.int8).dtype == mx.int8
    assert mx.array(2.7, dtype=mx.int32).item() == 2
    assert mx.array(-2.7, dtype=mx.int32).item() == -2
    assert mx.array(True, dtype=mx.float32).item() == 1.0
    assert mx.array(2**64 - 1, dtype=mx.uint64).item() == 2**64 - 1
    assert mx.array(0.1, dtype=mx.float64).item() == 0.1
    assert mx.array(1 + 2j, dtype=mx.float32).item() == 1.0
    assert mx.array(2.0**70, dtype=mx.float32).item() == float(np.float32(2.0**70))


def test_int_overflow_raises():
    # past int64 (uint64 for uint64 arrays): RuntimeError, MLX's type
    with pytest.raises(RuntimeError, match="overflow"):
        mx.array(2**64)
    with pytest.raises(RuntimeError, match="overflow"):
        mx.array(2**63)
    with pytest.raises(RuntimeError, match="overflow"):
        mx.array([1, 2**70])
    with pytest.raises(RuntimeError, match="overflow"):
        mx.array(2**64, dtype=mx.uint64)


def test_float32_item_is_the_float32_value():
    # MLX returns the float32 value widened to a Python float.
    assert mx.array(0.1).item() == float(np.float32(0.1))
    assert mx.array(0.1).item() != 0.1


# ---------------- construction from lists ----------------
@pytest.mark.parametrize(
    "val",
    [
        [1, 2, 3],
        [[1, 2], [3, 4], [5, 6]],
        [[[1.5], [2.5]], [[3.5], [4.5]]],
        [True, False, True],
        [1, 2.5],
        [True, 2],
        [1j, 2],
        (1, 2, 3),
        [(1, 2), (3, 4)],
        ([1, 2], [3, 4]),
        [[], []],
    ],
)
def test_from_lists_matches_numpy(val):
    a = mx.array(val)
    ref = np.array(val)
    assert a.shape == ref.shape
    assert a.tolist() == ref.tolist()
    kind = ref.dtype.kind
    expected = {"b": mx.bool_, "i": mx.int32, "f": mx.float32, "c": mx.complex64}[kind]
    if ref.size == 0:
        expected = mx.float32
    assert a.dtype == expected


def test_empty_list_is_float32():
    a = mx.array([])
    assert a.shape == (0,) and a.dtype == mx.float32
    assert a.tolist() == []


def test_list_ints_beyond_int32_become_int64():
    a = mx.array([1, 2**40])
    assert a.dtype == mx.int64
    assert a.tolist() == [1, 2**40]


def test_list_with_dtype():
    a = mx.array([1, 2, 3], dtype=mx.float16)
    assert a.dtype == mx.float16 and a.tolist() == [1.0, 2.0, 3.0]
    b = mx.array([0.5, 1.5], dtype=mx.int32)
    assert b.tolist() == [0, 1]
    c = mx.array([1, 2], mx.complex64)
    assert c.tolist() == [1 + 0j, 2 + 0j]
    d = mx.array([2**63, 1], dtype=mx.uint64)
    assert d.tolist() == [2**63, 1]


def test_ragged_lists_raise():
    with pytest.raises(ValueError, match="non-uniform length"):
        mx.array([[1, 2], [3]])
    with pytest.raises(ValueError, match="non-uniform length"):
        mx.array([[1, 2], 3])
    with pytest.raises(ValueError, match="extra dimension"):
        mx.array([1, [2, 3]])


def test_invalid_types_raise():
    with pytest.raises(ValueError, match="Invalid type"):
        mx.array("abc")
    with pytest.raises(ValueError, match="Invalid type"):
        mx.array([1, "a"])
    with pytest.raises(ValueError, match="Invalid type"):
        mx.array(object())
    with pytest.raises(ValueError):
        mx.array({1: 2})
    with pytest.raises(TypeError):
        mx.array([1], dtype="float32")


def test_list_of_arrays_is_stacked():
    x = mx.array([1, 2])
    y = mx.array([3, 4])
    a = mx.array([x, y])
    assert a.shape == (2, 2) and a.tolist() == [[1, 2], [3, 4]]
    b = mx.array([mx.array(1.5), 2])
    assert b.dtype == mx.float32 and b.tolist() == [1.5, 2.0]
    c = mx.array([mx.array([1], dtype=mx.int8), mx.array([2], dtype=mx.int16)])
    assert c.dtype == mx.int16
    with pytest.raises(ValueError, match="non-uniform"):
        mx.array([x, mx.array([1, 2, 3])])


def test_from_array_shares_and_converts():
    a = mx.array([1, 2, 3])
    b = mx.array(a)
    assert b.dtype == mx.int32 and b.tolist() == [1, 2, 3]
    c = mx.array(a, dtype=mx.float32)
    assert c.dtype == mx.float32 and c.tolist() == [1.0, 2.0, 3.0]


class MlxArrayLike:
    def __init__(self, a):
        self.a = a

    def __mlx_array__(self):
        return self.a


def test_mlx_array_protocol():
    a = mx.array(MlxArrayLike(mx.array([1, 2])))
    assert a.tolist() == [1, 2]
    b = mx.add(MlxArrayLike(mx.array([1, 2])), 1)
    assert b.tolist() == [2, 3] and b.dtype == mx.int32


# ---------------- properties ----------------
@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_properties(dt):
    a = mx.array(np.zeros((2, 3, 4)), dtype=dt)
    assert a.shape == (2, 3, 4)
    assert isinstance(a.shape, tuple)
    assert a.ndim == 3
    assert a.size == 24
    assert a.dtype == dt
    assert a.itemsize == dt.size
    assert a.nbytes == 24 * dt.size


# ---------------- item / tolist ----------------
@pytest.mark.parametrize("dt", [d for d in ALL_DTYPES if d != mx.bfloat16])
def test_tolist_matches_numpy(dt):
    rng = np.random.default_rng(0)
    ref = (rng.standard_normal((3, 4)) * 50).astype(np_dtype(dt))
    a = mx.array(ref, dtype=dt)
    assert a.dtype == dt
    got = a.tolist()
    assert got == ref.tolist()
    for row in got:
        for v in row:
            assert type(v) is type(ref.flat[0].item())


def test_tolist_bfloat16():
    a = mx.array([1.0, 2.5, -3.0], dtype=mx.bfloat16)
    assert a.tolist() == [1.0, 2.5, -3.0]
    assert mx.array(1 / 3, dtype=mx.bfloat16).item() == 0.333984375


def test_tolist_scalar_and_item_errors():
    assert mx.array(5).tolist() == 5
    assert mx.array([[7]]).item() == 7
    with pytest.raises(ValueError, match="length-1"):
        mx.array([1, 2]).item()


def test_extreme_integer_values():
    for dt, lo, hi in [
        (mx.int8, -128, 127),
        (mx.uint8, 0, 255),
        (mx.int64, -(2**63), 2**63 - 1),
        (mx.uint64, 0, 2**64 - 1),
    ]:
        a = mx.array([lo, hi], dtype=dt)
        assert a.tolist() == [lo, hi]


# ---------------- Python protocols ----------------
def test_len():
    assert len(mx.array([1, 2, 3])) == 3
    assert len(mx.array([[1, 2, 3]])) == 1
    with pytest.raises(TypeError, match="0-dimensional"):
        len(mx.array(1))


def test_bool_int_float_complex():
    assert bool(mx.array(1)) is True
    assert bool(mx.array([0.0])) is False
    assert int(mx.array(3.7)) == 3
    assert float(mx.array(2)) == 2.0
    assert complex(mx.array(1 + 2j)) == 1 + 2j
    with pytest.raises(ValueError):
        bool(mx.array([1, 2]))
    with pytest.raises(ValueError):
        int(mx.array([1, 2]))


def test_iteration_of_0d_raises():
    with pytest.raises(TypeError):
        iter(mx.array(1))


def test_iteration():
    a = mx.array([[1, 2], [3, 4], [5, 6]])
    rows = [r.tolist() for r in a]
    assert rows == [[1, 2], [3, 4], [5, 6]]
    assert [x.item() for x in mx.array([4, 5])] == [4, 5]


def test_format():
    assert f"{mx.array(1.5):.2f}" == "1.50"
    assert f"{mx.array(7):>3}" == "  7"
    with pytest.raises(TypeError):
        f"{mx.array([1.5]):.2f}"


def test_hash_and_weakref():
    a = mx.array([1])
    b = mx.array([1])
    d = {a: 1, b: 2}
    assert d[a] == 1 and d[b] == 2
    r = weakref.ref(a)
    assert r() is a
    del a, d
    assert r() is None


# ---------------- copy and pickle ----------------
def test_copy_and_deepcopy():
    a = mx.array([1.0, 2.0, 3.0])
    b = copy.copy(a)
    c = copy.deepcopy(a)
    assert b.tolist() == c.tolist() == [1.0, 2.0, 3.0]
    # deepcopy owns its data: writing through a NumPy view of a leaves it.
    view = np.array(a, copy=False)
    view[0] = 9.0
    assert a.tolist()[0] == 9.0
    assert c.tolist()[0] == 1.0


@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_pickle_roundtrip(dt):
    a = mx.array(np.arange(12).reshape(3, 4) % 3, dtype=dt)
    b = pickle.loads(pickle.dumps(a))
    assert b.dtype == dt and b.shape == (3, 4)
    assert b.tolist() == a.tolist()


def test_pickle_scalar_and_empty():
    for a in [mx.array(2.5), mx.array(np.zeros((0, 3), np.float32))]:
        b = pickle.loads(pickle.dumps(a))
        assert b.shape == a.shape and b.tolist() == a.tolist()


def test_dtype_pickle():
    for dt in ALL_DTYPES:
        assert pickle.loads(pickle.dumps(dt)) == dt


# ---------------- printing ----------------
def test_repr():
    a = mx.array([1, 2])
    try:
        r = repr(a)
    except NotImplementedError as e:
        assert "cmx_array_tostring" in str(e)
        return
    assert r == "array([1, 2], dtype=int32)"
    assert str(a) == r
    assert repr(mx.array(-1.0)) == "array(-1, dtype=float32)"
    assert repr(mx.array([[1, 2], [3, 4]])) == "array([[1, 2],\n       [3, 4]], dtype=int32)"
    assert repr(mx.array([True, False])) == "array([True, False], dtype=bool)"


def test_array_namespace():
    assert mx.array(1).__array_namespace__() is mx


def test_nan_inf_constants():
    assert math.isnan(mx.nan) and mx.inf == float("inf")
    assert mx.pi == math.pi and mx.e == math.e
    assert abs(mx.euler_gamma - 0.5772156649015329) < 1e-15
    assert mx.newaxis is None
