"""Dtypes, categories, finfo/iinfo, promotion, and weakly typed Python
scalars in binary ops."""
import numpy as np
import pytest

import cmx.core as mx
from conftest import ALL_DTYPES, np_dtype

NAMES = [
    "bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
    "int64", "float16", "bfloat16", "float32", "float64", "complex64",
]


def test_dtype_objects():
    sizes = [1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8]
    for name, size in zip(NAMES, sizes):
        dt = getattr(mx, name)
        assert isinstance(dt, mx.Dtype)
        assert dt.size == size
        printed = "bool" if name == "bool_" else name
        assert repr(dt) == f"cmx.core.{printed}"
        assert dt == getattr(mx, name)
        assert hash(dt) == hash(getattr(mx, name))
    assert len({hash(d) for d in ALL_DTYPES}) == len(ALL_DTYPES)
    assert mx.float32 != mx.float16
    assert (mx.float32 == "float32") is False
    assert mx.float32 != 1


def _np_issubdtype(dt, cat):
    npcat = {
        mx.generic: np.generic, mx.number: np.number, mx.integer: np.integer,
        mx.signedinteger: np.signedinteger, mx.unsignedinteger: np.unsignedinteger,
        mx.inexact: np.inexact, mx.floating: np.floating,
        mx.complexfloating: np.complexfloating,
    }[cat]
    return np.issubdtype(np_dtype(dt), npcat)


CATEGORIES = [
    mx.generic, mx.number, mx.integer, mx.signedinteger, mx.unsignedinteger,
    mx.inexact, mx.floating, mx.complexfloating,
]


@pytest.mark.parametrize("dt", [d for d in ALL_DTYPES if d != mx.bfloat16])
def test_issubdtype_matches_numpy(dt):
    for cat in CATEGORIES:
        assert mx.issubdtype(dt, cat) == _np_issubdtype(dt, cat), (dt, cat)
    for other in ALL_DTYPES:
        assert mx.issubdtype(dt, other) == (dt == other)


def test_issubdtype_categories():
    assert mx.issubdtype(mx.bfloat16, mx.floating)
    assert mx.issubdtype(mx.floating, mx.inexact)
    assert mx.issubdtype(mx.signedinteger, mx.number)
    assert not mx.issubdtype(mx.inexact, mx.floating)
    assert not mx.issubdtype(mx.floating, mx.float32)
    assert mx.issubdtype(mx.generic, mx.generic)
    assert isinstance(mx.floating, mx.DtypeCategory)
    with pytest.raises(TypeError):
        mx.issubdtype(mx.float32, "floating")


@pytest.mark.parametrize("dt", [mx.float16, mx.float32, mx.float64])
def test_finfo_matches_numpy(dt):
    f = mx.finfo(dt)
    ref = np.finfo(np_dtype(dt))
    assert f.max == float(ref.max) and f.min == float(ref.min)
    assert f.eps == float(ref.eps)
    assert f.dtype == dt
    assert repr(f).startswith("finfo(min=") and repr(f).endswith(f"dtype={repr(dt)[9:]})")


def test_finfo_bfloat16_and_complex():
    f = mx.finfo(mx.bfloat16)
    assert f.eps == 2.0**-7
    assert f.max == (2 - 2.0**-7) * 2.0**127
    assert mx.finfo(mx.complex64).dtype == mx.float32
    with pytest.raises(ValueError, match="finfo"):
        mx.finfo(mx.int32)


@pytest.mark.parametrize(
    "dt", [mx.uint8, mx.uint16, mx.uint32, mx.uint64, mx.int8, mx.int16, mx.int32, mx.int64]
)
def test_iinfo_matches_numpy(dt):
    i = mx.iinfo(dt)
    ref = np.iinfo(np_dtype(dt))
    assert i.min == int(ref.min) and i.max == int(ref.max)
    assert i.dtype == dt
    assert repr(i) == f"iinfo(min={int(ref.min)}, max={int(ref.max)}, dtype={repr(dt)[9:]})"
    with pytest.raises(ValueError, match="iinfo"):
        mx.iinfo(mx.float32)


# MLX's promotion table, written out independently (JAX-like lattice:
# unsigned+signed widens to the next signed size, uint64+signed gives
# float32, integers with a float keep the float, float16+bfloat16 gives
# float32, anything with complex64 gives complex64).
def mlx_promote(a, b):
    order_u = [mx.uint8, mx.uint16, mx.uint32, mx.uint64]
    order_i = [mx.int8, mx.int16, mx.int32, mx.int64]
    floats = [mx.float16, mx.bfloat16, mx.float32, mx.float64]
    if a == b:
        return a
    if a == mx.bool_:
        return b
    if b == mx.bool_:
        return a
    if mx.complex64 in (a, b):
        return mx.complex64
    if a in floats and b in floats:
        if {a, b} == {mx.float16, mx.bfloat16}:
            return mx.float32
        return a if floats.index(a) > floats.index(b) else b
    if a in floats:
        return a
    if b in floats:
        return b
    if a in order_u and b in order_u:
        return a if a.size > b.size else b
    if a in order_i and b in order_i:
        return a if a.size > b.size else b
    u, i = (a, b) if a in order_u else (b, a)
    if u == mx.uint64:
        return mx.float32
    if i.size > u.size:
        return i
    return order_i[order_u.index(u) + 1]


@pytest.mark.parametrize("a", ALL_DTYPES)
def test_result_type_table(a):
    for b in ALL_DTYPES:
        assert mx.result_type(a, b) == mlx_promote(a, b), (a, b)


def test_result_type_and_add_agree():
    for a in [mx.bool_, mx.uint8, mx.int8, mx.int32, mx.uint64, mx.float16, mx.bfloat16, mx.float32]:
        for b in [mx.int16, mx.uint32, mx.float16, mx.float64, mx.complex64]:
            x = mx.array([1], dtype=a)
            y = mx.array([1], dtype=b)
            assert mx.add(x, y).dtype == mx.result_type(x, y) == mlx_promote(a, b)


def test_result_type_errors():
    # As MLX: only arrays and dtypes (no Python scalars, lists or strings).
    assert mx.result_type(mx.int8, mx.array(1.0)) == mx.float32
    for bad in [(mx.int8, 1), (1, 2.0), ([mx.int8, mx.uint8],), ("x",), ()]:
        with pytest.raises(ValueError, match=r"\[result_type\]"):
            mx.result_type(*bad)


def test_can_cast_and_isdtype():
    assert mx.can_cast(mx.int8, mx.int32)
    assert not mx.can_cast(mx.int32, mx.int8)
    assert mx.can_cast(mx.array([1], dtype=mx.uint8), mx.int16)
    assert mx.isdtype(mx.float32, "real floating")
    assert mx.isdtype(mx.int8, "signed integer")
    assert not mx.isdtype(mx.uint8, "signed integer")
    assert mx.isdtype(mx.uint8, ("bool", "unsigned integer"))
    assert mx.isdtype(mx.complex64, "complex floating")
    assert mx.isdtype(mx.int64, "numeric") and not mx.isdtype(mx.bool_, "numeric")
    assert mx.isdtype(mx.float16, mx.float16)
    with pytest.raises(ValueError):
        mx.isdtype(mx.float32, "reals")


# ---------------- weak scalars ----------------
@pytest.mark.parametrize(
    "dt,scalar,expected",
    [
        (mx.int8, 1, mx.int8),
        (mx.uint8, 1, mx.uint8),
        (mx.int8, 1.5, mx.float32),
        (mx.float16, 2.0, mx.float16),
        (mx.bfloat16, 2, mx.bfloat16),
        (mx.uint8, True, mx.uint8),
        (mx.bool_, True, mx.bool_),
        (mx.bool_, 1, mx.int32),
        (mx.bool_, 1.5, mx.float32),
        (mx.int64, 2**40, mx.int64),
        (mx.float32, 1j, mx.complex64),
        (mx.int16, 2j, mx.complex64),
        (mx.float64, 0.5, mx.float64),
        (mx.uint64, 2**64 - 1, mx.uint64),
    ],
)
def test_weak_scalars(dt, scalar, expected):
    a = mx.array([1], dtype=dt)
    assert (a + scalar).dtype == expected
    assert (scalar + a).dtype == expected
    assert mx.add(a, scalar).dtype == expected
    assert mx.add(scalar, a).dtype == expected


def test_weak_scalar_values():
    a = mx.array([1, 2, 3], dtype=mx.int8)
    assert (a + 100).tolist() == [101, 102, 103]
    f = mx.array([0.5], dtype=mx.float16)
    assert (f + 0.25).item() == 0.75
    u = mx.array([2**63], dtype=mx.uint64)
    assert (u + (2**63 - 1)).item() == 2**64 - 1
    d = mx.array([1.0], dtype=mx.float64)
    assert (d + 0.1).item() == 1.1


def test_weak_int_overflow_messages():
    with pytest.raises(ValueError, match="Converting 300 to int8 would result in overflow"):
        mx.array([1], dtype=mx.int8) + 300
    with pytest.raises(ValueError, match="uint8"):
        mx.array([1], dtype=mx.uint8) + -1
    with pytest.raises(ValueError, match="overflow"):
        mx.array([1]) + 2**40
    with pytest.raises(RuntimeError, match="overflow"):  # MLX's type
        mx.array([1], dtype=mx.int64) + 2**64


def test_scalars_alone_use_default_dtypes():
    assert mx.add(1, 2).dtype == mx.int32
    assert mx.add(1, 2.5).dtype == mx.float32
    assert mx.add(True, False).dtype == mx.bool_
    assert mx.add(1, 2).item() == 3
    assert mx.add(2**40, 1).dtype == mx.int64


def test_array_likes_take_the_array_dtype():
    # As MLX: a NumPy operand is converted to the array's dtype.
    a = mx.array([1, 2], dtype=mx.float16)
    r = a + np.array([0.5, 0.25], dtype=np.float64)
    assert r.dtype == mx.float16 and r.tolist() == [1.5, 2.25]
    r2 = mx.add(a, [1, 2])
    assert r2.dtype == mx.float16 and r2.tolist() == [2.0, 4.0]
    with pytest.raises(ValueError, match="Cannot perform addition"):
        a + [1, 2]  # MLX's operators take no lists
