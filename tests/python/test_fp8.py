"""to_fp8 and from_fp8 (8-bit floats E4M3 stored as uint8): every code
decoded to float16/bfloat16/float32 and a dense sweep of float32 values
(ties, subnormals, saturation, NaN, +-0) encoded, equal to real MLX's where
it is installed; MLX-free round trips of all finite codes, a NumPy
reference of the encoding, and the errors. Runs on every device."""
import numpy as np
import pytest

import cmx.core as mx

try:
    import mlx.core as mlx
except ImportError:  # pragma: no cover - MLX is optional
    mlx = None

needs_mlx = pytest.mark.skipif(mlx is None, reason="MLX is not installed")
CODES = np.arange(256, dtype=np.uint8)
DTYPES = ["float16", "bfloat16", "float32"]


def sweep():
    """Float32 values around every code: the codes' values, the midpoints
    between neighbours (ties) and just either side of them, subnormals,
    values past 448, infinities, NaNs and signed zeros."""
    e = np.arange(-9, 10, dtype=np.float64)
    grid = np.concatenate([m * 2.0 ** e for m in np.arange(8, 17) / 8.0])
    grid = np.concatenate([grid, np.arange(0, 17) * 2.0 ** -10])
    grid = np.unique(grid).astype(np.float32)
    mids = np.float32(0.5) * (grid[1:] + grid[:-1])
    near = np.concatenate([np.nextafter(mids, np.float32(np.inf)),
                           np.nextafter(mids, np.float32(-np.inf))])
    extra = np.array([448, 449, 464, 480, 1e6, 3e38, np.inf, np.nan, 0.0,
                      1e-30, 2.0 ** -140], np.float32)
    pos = np.concatenate([grid, mids, near, extra])
    return np.concatenate([pos, -pos])


def reference(x):
    """E4M3 codes of float32 x by search: the nearest code's value, ties to
    the even code, |x| >= 448 (and NaN) saturating to 126 | sign."""
    vals = np.array(mx.from_fp8(mx.array(CODES[:127]), mx.float32,
                                stream=mx.cpu))
    a = np.abs(x.astype(np.float64))
    sign = np.signbit(x).astype(np.int64) << 7
    d = np.abs(a[:, None] - vals[None, :].astype(np.float64))
    best = d.min(axis=1, keepdims=True)
    cand = np.where(d == best, np.arange(127)[None, :], 1000)
    even = np.where(cand % 2 == 0, cand, 1000).min(axis=1)
    code = np.where(even < 1000, even, cand.min(axis=1))
    code = np.where(np.isnan(a) | (a >= 448), 126, code)
    return (code | sign).astype(np.uint8)


@needs_mlx
@pytest.mark.parametrize("dt", DTYPES)
def test_from_fp8_every_code_equals_mlx(on_device, dt):
    got = mx.from_fp8(mx.array(CODES), getattr(mx, dt))
    want = mlx.from_fp8(mlx.array(CODES), getattr(mlx, dt))
    assert got.dtype == getattr(mx, dt)
    g = np.array(got.astype(mx.float32))
    w = np.array(want.astype(mlx.float32))
    np.testing.assert_array_equal(g, w)  # NaN where NaN
    # signs of zeros and of every number (a NaN's sign is astype's: MLX
    # makes bfloat16 NaNs positive, cmx keeps the sign)
    num = ~np.isnan(w)
    np.testing.assert_array_equal(np.signbit(g)[num], np.signbit(w)[num])


@needs_mlx
def test_from_fp8_default_dtype_is_bfloat16(on_device):
    assert mx.from_fp8(mx.array(CODES)).dtype == mx.bfloat16
    assert mlx.from_fp8(mlx.array(CODES)).dtype == mlx.bfloat16


@needs_mlx
@pytest.mark.parametrize("dt", DTYPES)
def test_to_fp8_sweep_equals_mlx(on_device, dt):
    # the same input bits in both (MLX's astype drops a NaN's sign)
    a = mx.array(sweep()).astype(getattr(mx, dt))
    u = mx.uint32 if dt == "float32" else mx.uint16
    bits = np.array(a.view(u))
    b = mlx.array(bits).view(getattr(mlx, dt))
    got = mx.to_fp8(a)
    want = mlx.to_fp8(b, stream=mlx.cpu)
    assert got.dtype == mx.uint8
    np.testing.assert_array_equal(np.array(got), np.array(want))


def test_to_fp8_sweep_matches_reference(on_device):
    x = sweep()
    np.testing.assert_array_equal(np.array(mx.to_fp8(mx.array(x))),
                                  reference(x))


def test_to_fp8_float64_rounds_once(on_device):
    """float64 input is encoded from its own value (MLX 0.32.4's float64
    to_fp8 gives wrong codes, see _mlx_diff.DIFFERENCES): a value just
    above a float32-representable tie rounds up, not to the tie's even."""
    x = np.array([1.0625 + 2.0 ** -40, 1.0625, 1.0625 - 2.0 ** -40, -3.0,
                  2.0 ** -10 + 2.0 ** -60, 500.0, -np.inf, np.nan, -0.0])
    got = np.array(mx.to_fp8(mx.array(x, dtype=mx.float64)))
    np.testing.assert_array_equal(got, [57, 56, 56, 196, 1, 126, 254, 126,
                                        128])


def test_round_trip_every_finite_code(on_device):
    finite = CODES[(CODES & 127) != 127]
    assert finite.size == 254
    for dt in [mx.float16, mx.bfloat16, mx.float32, mx.float64]:
        back = mx.to_fp8(mx.from_fp8(mx.array(finite), dt))
        np.testing.assert_array_equal(np.array(back), finite)
    v = np.array(mx.from_fp8(mx.array(CODES), mx.float32))
    assert np.isnan(v[[127, 255]]).all() and np.signbit(v[255])
    assert v[56] == 1.0 and v[126] == 448.0 and v[1] == 2.0 ** -9
    assert v[128] == 0 and np.signbit(v[128])


def test_shapes_and_transforms(on_device):
    x = mx.array(RNG_VALUES.reshape(4, 8))
    q = mx.to_fp8(x)
    assert q.shape == (4, 8) and q.dtype == mx.uint8
    f = mx.compile(lambda a: mx.from_fp8(mx.to_fp8(a), mx.float32))
    np.testing.assert_array_equal(np.array(f(x)),
                                  np.array(mx.from_fp8(q, mx.float32)))
    v = mx.vmap(lambda a: mx.to_fp8(a))(x)
    np.testing.assert_array_equal(np.array(v), np.array(q))


RNG_VALUES = np.random.default_rng(8).standard_normal(32).astype(np.float32)


def test_errors():
    with pytest.raises(ValueError, match=r"\[to_fp8\] Only real floating "
                       r"types are supported but x.dtype\(\) == int32\."):
        mx.to_fp8(mx.array([1, 2]))
    with pytest.raises(ValueError, match=r"\[from_fp8\] Input must have type "
                       r"uint8 but x.dtype\(\) == float32\."):
        mx.from_fp8(mx.array([1.0]))
    with pytest.raises(ValueError, match=r"\[from_fp8\] Only real floating "
                       r"types are supported but dtype == int32\."):
        mx.from_fp8(mx.array(CODES), mx.int32)
