"""NumPy and other interop: the buffer protocol (zero-copy views of
evaluated arrays), __array__, DLPack, and conversions of every dtype."""
import array as pyarray

import numpy as np
import pytest

import cmx.core as mx
from conftest import ALL_DTYPES, np_dtype

NUMPY_DTYPES = [d for d in ALL_DTYPES if d != mx.bfloat16]


@pytest.mark.parametrize("dt", NUMPY_DTYPES)
def test_roundtrip_every_dtype(dt):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((2, 3, 5)) * 20).astype(np_dtype(dt))
    a = mx.array(x, dtype=dt)
    y = np.array(a)
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize(
    "npdt,expected",
    [
        (np.bool_, mx.bool_), (np.uint8, mx.uint8), (np.uint16, mx.uint16),
        (np.uint32, mx.uint32), (np.uint64, mx.uint64), (np.int8, mx.int8),
        (np.int16, mx.int16), (np.int32, mx.int32), (np.int64, mx.int64),
        (np.float16, mx.float16), (np.float32, mx.float32),
        (np.float64, mx.float32), (np.complex64, mx.complex64),
        (np.complex128, mx.complex64),
    ],
)
def test_default_dtype_from_numpy(npdt, expected):
    x = np.arange(6).reshape(2, 3).astype(npdt)
    a = mx.array(x)
    assert a.dtype == expected
    np.testing.assert_array_equal(np.array(a), x.astype(np_dtype(expected)))


def test_complex128_values():
    x = np.array([1 + 2j, -3.5 - 0.25j])
    assert mx.array(x).tolist() == [1 + 2j, -3.5 - 0.25j]


def test_non_contiguous_numpy_inputs():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    for view in [x.T, x[::2, 1::3], x[::-1, ::-2], x[:, 2], np.broadcast_to(x[0], (3, 6))]:
        a = mx.array(view)
        assert a.shape == view.shape
        np.testing.assert_array_equal(np.array(a), view)
    c = np.arange(12, dtype=np.complex128).reshape(3, 4).T
    np.testing.assert_array_equal(np.array(mx.array(c)), c.astype(np.complex64))


def test_zero_d_and_empty_numpy():
    assert mx.array(np.float32(2.5)).item() == 2.5
    assert mx.array(np.array(7, np.int16)).dtype == mx.int16
    e = mx.array(np.zeros((0, 4), np.int32))
    assert e.shape == (0, 4) and np.array(e).shape == (0, 4)


def test_numpy_scalars():
    assert mx.array(np.int64(3)).dtype == mx.int64
    assert mx.array(np.float64(0.5)).dtype == mx.float32  # a float subclass
    assert mx.array([np.int32(1), np.float32(2.5)]).tolist() == [1.0, 2.5]


def test_other_buffers():
    a = mx.array(pyarray.array("f", [1.0, 2.0]))
    assert a.dtype == mx.float32 and a.tolist() == [1.0, 2.0]
    b = mx.array(memoryview(np.arange(4, dtype=np.int16)))
    assert b.dtype == mx.int16 and b.tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        mx.array(b"abc")
    with pytest.raises(ValueError):
        mx.array(np.array(["a", "b"]))


@pytest.mark.parametrize("dt", NUMPY_DTYPES)
def test_memoryview(dt):
    a = mx.array(np.ones((2, 3)), dtype=dt)
    m = memoryview(a)
    assert m.shape == (2, 3)
    assert m.itemsize == dt.size
    assert m.strides == (3 * dt.size, dt.size)
    assert m.nbytes == 6 * dt.size
    assert not m.readonly
    assert np.dtype(np_dtype(dt)) == np.asarray(m).dtype


def test_zero_copy_view_writes_through():
    a = mx.array([1, 2, 3])
    b = a
    view = np.array(a, copy=False)
    assert not view.flags.owndata
    view[0] = 10
    assert a.tolist() == [10, 2, 3]
    assert b.tolist() == [10, 2, 3]
    assert np.shares_memory(view, np.asarray(a))


def test_view_keeps_data_alive():
    a = mx.array(np.arange(1000, dtype=np.float32))
    view = np.asarray(a)
    del a
    assert view[999] == 999.0


def test_lazy_arrays_are_evaluated_on_export():
    a = mx.array([1.0, 2.0]) + 1
    np.testing.assert_array_equal(np.array(a), [2.0, 3.0])
    assert bytes(memoryview(mx.array([1, 2], dtype=mx.uint8))) == b"\x01\x02"


def test_broadcast_arrays_export_readonly():
    a = mx.broadcast_to(mx.array([1.0, 2.0]), (3, 2))
    v = np.asarray(a)
    np.testing.assert_array_equal(v, [[1, 2]] * 3)
    assert not v.flags.writeable
    assert v.strides == (0, 4)


def test_bfloat16_to_numpy():
    a = mx.array([1.0, 2.5], dtype=mx.bfloat16)
    with pytest.raises(TypeError, match="bfloat16 arrays cannot be converted to NumPy"):
        np.array(a)
    # Asking for a dtype converts.
    np.testing.assert_array_equal(np.array(a, dtype=np.float32), [1.0, 2.5])
    np.testing.assert_array_equal(np.asarray(a, dtype=np.float64), [1.0, 2.5])
    np.testing.assert_array_equal(np.array(a.astype(mx.float32)), [1.0, 2.5])
    with pytest.raises(BufferError):
        memoryview(a)


def test_dunder_array():
    a = mx.array([1, 2], dtype=mx.int32)
    x = a.__array__()
    assert x.dtype == np.int32 and x.tolist() == [1, 2]
    y = a.__array__(np.float64)
    assert y.dtype == np.float64
    z = a.__array__(copy=True)
    z[0] = 5
    assert a.tolist() == [1, 2]


# ---------------- DLPack ----------------
@pytest.mark.parametrize("dt", NUMPY_DTYPES)
def test_dlpack_to_numpy_shares_memory(dt):
    # a CPU array (kDLCPU), whatever the default device: NumPy takes host
    # tensors only
    with mx.stream(mx.cpu):
        a = mx.array(np.arange(6).reshape(2, 3) % 2, dtype=dt)
        x = np.from_dlpack(a)
        assert x.dtype == np_dtype(dt)
        np.testing.assert_array_equal(x, np.array(a))
        assert np.shares_memory(x, np.asarray(a))
        assert a.__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("dt", NUMPY_DTYPES)
def test_from_dlpack(dt):
    x = (np.arange(12).reshape(3, 4) % 3).astype(np_dtype(dt))
    a = mx.from_dlpack(x)
    assert a.dtype == dt
    np.testing.assert_array_equal(np.array(a), x)
    x[0, 0] = 1  # a copy: the array does not change
    assert a.tolist()[0][0] == 0


def test_from_dlpack_strided_and_complex128():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)[::2, ::-2]
    np.testing.assert_array_equal(np.array(mx.from_dlpack(x)), x)
    c = np.array([1 + 1j, 2 - 2j])
    assert mx.from_dlpack(c).tolist() == [1 + 1j, 2 - 2j]


def test_dlpack_capsules():
    a = mx.array([1.0, 2.0])
    cap = a.__dlpack__()
    assert "dltensor" in repr(cap)
    b = mx.from_dlpack(cap)
    assert b.tolist() == [1.0, 2.0]
    with pytest.raises(TypeError):
        mx.from_dlpack(cap)  # consumed
    v = a.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(v)
    del v  # an unconsumed capsule frees its tensor
    assert mx.from_dlpack(a).tolist() == [1.0, 2.0]
    with pytest.raises(BufferError, match="cannot export"):
        a.__dlpack__(dl_device=(8, 0))  # Metal: never a cmx device
    if mx.is_available(mx.gpu):  # CUDA export: the data goes to the card
        assert "dltensor" in repr(a.__dlpack__(dl_device=(2, 0)))
    else:
        with pytest.raises(BufferError, match="cannot export"):
            a.__dlpack__(dl_device=(2, 0))


def test_dlpack_bfloat16_export():
    a = mx.array([1.0, 2.0], dtype=mx.bfloat16)
    assert mx.from_dlpack(a).dtype == mx.bfloat16
    assert mx.from_dlpack(a).tolist() == [1.0, 2.0]
