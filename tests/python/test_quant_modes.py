"""The microscaled quantization modes mxfp4, mxfp8 and nvfp4: quantize and
dequantize bit for bit against real MLX (packed words, scales, decoded
values; float32/bfloat16/float16, nvfp4's global_scale), the rounding rules
on chosen values, quantized_matmul / gather_qmm in every mode (transpose,
batch, vectors) against matmul with the dequantized matrix, qqmm and
gather_qqmm against MLX where it computes them (one row of x, packed w) and
against their definition (both sides quantized then multiplied), and the
errors. Runs on every device."""
import numpy as np
import pytest

import cmx.core as mx

try:
    import mlx.core as mlx
except ImportError:  # pragma: no cover - MLX is optional
    mlx = None

needs_mlx = pytest.mark.skipif(mlx is None, reason="MLX is not installed")
MODES = ["mxfp4", "mxfp8", "nvfp4"]
GROUP = {"mxfp4": 32, "mxfp8": 32, "nvfp4": 16}
BITS = {"mxfp4": 4, "mxfp8": 8, "nvfp4": 4}
DTYPES = ["float32", "bfloat16", "float16"]
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float32)


def weights(shape, scale, seed=0):
    """Normal values with a spread of row magnitudes (finite in float16)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape) * scale
    w *= np.exp(rng.standard_normal(shape[:-1] + (1,)))
    return np.clip(w, -60000, 60000).astype(np.float32)


def f32(a):
    return np.array(a.astype(mx.float32) if isinstance(a, mx.array)
                    else a.astype(mlx.float32))


def both(w, dt):
    """w as a cmx array and an MLX array of dtype dt."""
    return (mx.array(w).astype(getattr(mx, dt)),
            mlx.array(w).astype(getattr(mlx, dt)))


# ------------------------------------------------ quantize / dequantize


@needs_mlx
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("scale", [1e-4, 1e-2, 1.0, 300.0, 3000.0])
def test_quantize_equals_mlx(on_device, mode, dt, scale):
    a, b = both(weights((24, 256), scale), dt)
    got, want = mx.quantize(a, mode=mode), mlx.quantize(b, mode=mode)
    assert len(got) == 2 and len(want) == 2
    assert got[0].dtype == mx.uint32 and got[1].dtype == mx.uint8
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(np.array(g), np.array(w))
    d = mx.dequantize(*got, mode=mode)
    assert d.dtype == mx.bfloat16  # MLX's default without biases
    for odt in DTYPES:
        np.testing.assert_array_equal(
            f32(mx.dequantize(*got, mode=mode, dtype=getattr(mx, odt))),
            f32(mlx.dequantize(*want, mode=mode, dtype=getattr(mlx, odt))))


@needs_mlx
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(1, 32), (2, 3, 64), (5, 128), (4, 1, 2, 96)])
def test_quantize_shapes_equal_mlx(on_device, mode, shape):
    w = weights(shape, 1.0, seed=len(shape))
    got = mx.quantize(mx.array(w), mode=mode)
    want = mlx.quantize(mlx.array(w), mode=mode)
    per = 32 // BITS[mode]
    assert got[0].shape == shape[:-1] + (shape[-1] // per,)
    assert got[1].shape == shape[:-1] + (shape[-1] // GROUP[mode],)
    for g, w_ in zip(got, want):
        np.testing.assert_array_equal(np.array(g), np.array(w_))
    np.testing.assert_array_equal(
        f32(mx.dequantize(*got, mode=mode, dtype=mx.float32)),
        f32(mlx.dequantize(*want, mode=mode, dtype=mlx.float32)))


@pytest.mark.parametrize("mode", MODES)
def test_empty(on_device, mode):
    """(MLX's CPU kernels fail on empty arrays; cmx returns empty ones.)"""
    q, s = mx.quantize(mx.zeros((3, 0, 64)), mode=mode)
    assert q.shape == (3, 0, 2 * BITS[mode]) and q.dtype == mx.uint32
    assert s.shape == (3, 0, 64 // GROUP[mode]) and s.dtype == mx.uint8
    d = mx.dequantize(q, s, mode=mode)
    assert d.shape == (3, 0, 64) and d.dtype == mx.bfloat16
    y = mx.quantized_matmul(mx.zeros((2, 64)), q, s, mode=mode)
    assert y.shape == (3, 2, 0)


def test_nvfp4_short_rows(on_device):
    """Rows of 16 values (MLX's CPU kernel only takes totals that are
    multiples of 32): each row as it is within a longer matrix."""
    w = weights((3, 16), 1.0)
    q, s = mx.quantize(mx.array(w), mode="nvfp4")
    assert q.shape == (3, 2) and s.shape == (3, 1)
    q2, s2 = mx.quantize(mx.array(w.reshape(1, 48)), mode="nvfp4")
    np.testing.assert_array_equal(np.array(q).reshape(-1), np.array(q2).reshape(-1))
    np.testing.assert_array_equal(np.array(s).reshape(-1), np.array(s2).reshape(-1))


@needs_mlx
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("gs", [0.01, 1.0, 3.7, 1000.0, "amax"])
def test_nvfp4_global_scale_equals_mlx(on_device, dt, gs):
    w = weights((16, 128), 1.0, seed=3)
    gv = float(np.abs(w).max()) if gs == "amax" else gs
    a, b = both(w, dt)
    got = mx.quantize(a, mode="nvfp4", global_scale=mx.array(gv))
    want = mlx.quantize(b, mode="nvfp4", global_scale=mlx.array(gv))
    for g, w_ in zip(got, want):
        np.testing.assert_array_equal(np.array(g), np.array(w_))
    np.testing.assert_array_equal(
        f32(mx.dequantize(*got, mode="nvfp4", global_scale=mx.array(gv),
                          dtype=mx.float32)),
        f32(mlx.dequantize(*want, mode="nvfp4", global_scale=mlx.array(gv),
                           dtype=mlx.float32)))


def codes4(q):
    """The 4-bit codes of packed words q, element order."""
    b = np.array(q).view(np.uint8)
    return np.stack([b & 15, b >> 4], -1).reshape(b.shape[:-1] + (-1,))


def test_e2m1_rounding_rules(on_device):
    """Ties go toward zero, |v| > 5 saturates to 6, -0 and values rounding
    to zero get code 0 (no sign), the scale of a group whose largest
    magnitude is 6 is 2^0 (E8M0 127)."""
    vals = [6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -2.5, -5.0,
            0.24, 0.26, -0.0, 0.1, 5.9]
    want = [7, 0, 1, 2, 3, 4, 5, 6, 0, 12, 14, 0, 1, 0, 0, 7]
    w = np.zeros((1, 32), np.float32)
    w[0, :16] = vals
    q, s = mx.quantize(mx.array(w), mode="mxfp4")
    assert np.array(s).tolist() == [[127]]
    assert codes4(q)[0, :16].tolist() == want
    d = np.array(mx.dequantize(q, s, mode="mxfp4", dtype=mx.float32))[0, :16]
    np.testing.assert_array_equal(
        d, np.where(np.array(want) & 8, -1, 1) * E2M1[np.array(want) & 7])


@pytest.mark.parametrize("amax,byte", [(1.0, 125), (1.5, 125), (2.0, 126),
                                       (6.0, 127), (6.1, 128), (12.0, 128),
                                       (12.1, 129), (448.0, 134), (0.0, 127),
                                       (1e-9, 95)])
def test_mxfp4_scale_is_ceil_log2(on_device, amax, byte):
    w = np.zeros((1, 32), np.float32)
    w[0, 3] = -amax
    assert np.array(mx.quantize(mx.array(w), mode="mxfp4")[1]).item() == byte


@pytest.mark.parametrize("amax,byte", [(1.0, 119), (448.0, 127), (449.0, 128),
                                       (7.0, 121), (0.0, 127)])
def test_mxfp8_scale_and_codes(on_device, amax, byte):
    w = np.zeros((2, 32), np.float32)
    w[0, 0] = amax
    w[0, 1] = -amax / 2
    q, s = mx.quantize(mx.array(w), mode="mxfp8")
    assert np.array(s)[0, 0] == byte
    b = np.array(q).view(np.uint8)[0]
    scale = 2.0 ** (byte - 127)
    want = np.array(mx.to_fp8(mx.array(w[0, :2] / scale)))
    np.testing.assert_array_equal(b[:2], want)


def test_nvfp4_scale_is_e4m3_of_amax_over_6(on_device):
    for amax in [6.0, 1.0, 7.0, 100.0, 3000.0, 1e-3, 0.0]:
        w = np.zeros((1, 16), np.float32)
        w[0, 5] = amax
        q, s = mx.quantize(mx.array(w), mode="nvfp4")
        want = np.array(mx.to_fp8(mx.array(np.float32(amax) / np.float32(6))))
        assert np.array(s).item() == want.item(), amax
        if want.item() == 0:  # a zero scale gives zero codes
            assert not np.array(q).any()


@pytest.mark.parametrize("mode", MODES)
def test_round_trip_error_bound(on_device, mode):
    """Every value comes back within half a step of its group's grid: for
    E2M1 a relative step of 1/2 of the group scale times 2 at the top; the
    bound checked is |w - d| <= scale * (1 for fp4, 16 / 448 * 8 for fp8)."""
    w = weights((8, 256), 1.0, seed=7)
    q, s = mx.quantize(mx.array(w), mode=mode)
    d = np.array(mx.dequantize(q, s, mode=mode, dtype=mx.float32))
    g = GROUP[mode]
    if mode == "nvfp4":
        sv = np.array(mx.from_fp8(s, mx.float32))
    else:
        sv = 2.0 ** (np.array(s).astype(np.float64) - 127)
    err = np.abs(w - d).reshape(8, -1, g).max(-1)
    amax = np.abs(w).reshape(8, -1, g).max(-1)
    bound = sv * 1.0 if mode != "mxfp8" else amax * 2.0 ** -4
    assert (err <= bound + 1e-7).all()


# ------------------------------------------------ quantized_matmul


def deq(q, s, mode, gs=None):
    return np.array(mx.dequantize(q, s, mode=mode, global_scale=gs,
                                  dtype=mx.float32)).astype(np.float64)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("xshape", [(64,), (1, 64), (5, 64), (2, 3, 64)])
@pytest.mark.parametrize("dt", DTYPES)
def test_quantized_matmul(on_device, mode, transpose, xshape, dt):
    wshape = (2, 96, 64) if transpose else (2, 64, 128)
    w = weights(wshape, 1.0, seed=1)
    q, s = mx.quantize(mx.array(w), mode=mode)
    x = weights(xshape, 1.0, seed=2)
    xa = mx.array(x).astype(getattr(mx, dt))
    y = mx.quantized_matmul(xa, q, s, transpose=transpose, mode=mode)
    W = deq(q, s, mode)
    ref = f32(xa).astype(np.float64) @ (np.swapaxes(W, -1, -2) if transpose else W)
    assert y.dtype == getattr(mx, dt) and y.shape == ref.shape
    tol = 1e-4 if dt == "float32" else 2e-2
    np.testing.assert_allclose(f32(y), ref, rtol=tol, atol=tol * np.abs(ref).max())


@needs_mlx
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transpose", [True, False])
def test_quantized_matmul_equals_mlx(on_device, mode, transpose):
    w = weights((96, 128), 1.0, seed=4)
    x = weights((3, 96 if not transpose else 128), 1.0, seed=5)
    got = mx.quantized_matmul(mx.array(x), *mx.quantize(mx.array(w), mode=mode),
                              transpose=transpose, mode=mode)
    want = mlx.quantized_matmul(mlx.array(x),
                                *mlx.quantize(mlx.array(w), mode=mode),
                                transpose=transpose, mode=mode)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", MODES)
def test_quantized_matmul_grad_x(on_device, mode):
    w = weights((40, 64), 1.0, seed=6)
    q, s = mx.quantize(mx.array(w), mode=mode)
    x = mx.array(weights((3, 64), 1.0, seed=8))
    g = mx.grad(lambda x: mx.quantized_matmul(x, q, s, mode=mode).sum())(x)
    want = np.broadcast_to(deq(q, s, mode).sum(0), (3, 64))
    np.testing.assert_allclose(np.array(g), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("M", [1, 9])
def test_quantized_matmul_strided_inputs(on_device, mode, M):
    """Transposed x, every other row of w and its scales (views)."""
    w = weights((80, 64), 1.0, seed=21)
    q, s = mx.quantize(mx.array(w), mode=mode)
    qv, sv = q[::2], s[::2]
    x = mx.array(weights((64, M), 1.0, seed=22)).T
    y = mx.quantized_matmul(x, qv, sv, mode=mode)
    ref = np.array(x).astype(np.float64) @ deq(q, s, mode)[::2].T
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", MODES)
def test_quantized_matmul_vmap(on_device, mode):
    w = weights((3, 32, 64), 1.0, seed=23)
    q, s = mx.quantize(mx.array(w), mode=mode)
    x = mx.array(weights((3, 2, 64), 1.0, seed=24))
    y = mx.vmap(lambda x, q, s: mx.quantized_matmul(x, q, s, mode=mode))(x, q, s)
    ref = np.array(x).astype(np.float64) @ np.swapaxes(deq(q, s, mode), -1, -2)
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transpose", [True, False])
def test_gather_qmm(on_device, mode, transpose):
    E, N, K = 4, 48 if transpose else 64, 64
    w = weights((E, N, K) if transpose else (E, K, N), 1.0, seed=9)
    q, s = mx.quantize(mx.array(w), mode=mode)
    x = weights((3, 2, K), 1.0, seed=10)
    lhs, rhs = np.array([2, 0, 1, 2]), np.array([3, 3, 0, 1])
    y = mx.gather_qmm(mx.array(x), q, s, lhs_indices=mx.array(lhs),
                      rhs_indices=mx.array(rhs), transpose=transpose, mode=mode)
    W = deq(q, s, mode)
    Wt = np.swapaxes(W, -1, -2) if transpose else W
    ref = np.stack([x[lhs[i]] @ Wt[rhs[i]] for i in range(4)])
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-4, atol=1e-4)
    # no indices: batch by batch
    y2 = mx.gather_qmm(mx.array(x[:1].repeat(4, 0)), q, s, transpose=transpose,
                       mode=mode)
    np.testing.assert_allclose(np.array(y2), np.stack([x[0] @ Wt[i] for i in range(4)]),
                               rtol=1e-4, atol=1e-4)


def test_gather_qmm_nvfp4_global_scale(on_device):
    w = weights((3, 32, 64), 1.0, seed=11)
    gs = mx.array(float(np.abs(w).max()))
    q, s = mx.quantize(mx.array(w), mode="nvfp4", global_scale=gs)
    x = weights((2, 1, 64), 1.0, seed=12)
    y = mx.gather_qmm(mx.array(x), q, s, rhs_indices=mx.array([2, 0]),
                      mode="nvfp4", global_scale=gs)
    W = deq(q, s, "nvfp4", gs)
    ref = np.stack([x[0] @ W[2].T, x[1] @ W[0].T])
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-4, atol=1e-4)


# ------------------------------------------------ qqmm, gather_qqmm


def qdq(a, mode, gs=None, dtype=mx.float32):
    """a (as dtype) quantized and decoded again (float64), as qqmm treats
    x."""
    q, s = mx.quantize(mx.array(a).astype(dtype), mode=mode, global_scale=gs)
    return deq(q, s, mode, gs)


@needs_mlx
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", DTYPES)
def test_qqmm_equals_mlx(on_device, mode, dt):
    """One row of x against a packed w: the case MLX's CPU computes."""
    w, x = weights((7, 128), 1.0, seed=13), weights((1, 128), 1.0, seed=14)
    a, b = both(x, dt)
    got = mx.qqmm(a, *mx.quantize(mx.array(w), mode=mode), mode=mode)
    want = mlx.qqmm(b, *mlx.quantize(mlx.array(w), mode=mode), mode=mode)
    if mode == "nvfp4" and dt == "bfloat16":
        # MLX 0.32.4's CPU qqmm here matches no quantization of x (its own
        # quantize's included): cmx keeps the definition (x quantized as
        # mx.quantize does it, test_qqmm_definition).
        xd = qdq(np.array(a.astype(mx.float32)), mode, dtype=a.dtype)
        want = xd @ deq(*mx.quantize(mx.array(w), mode=mode), mode).T
        np.testing.assert_allclose(f32(got), want, rtol=1e-2, atol=0.05)
        return
    assert got.dtype == getattr(mx, dt)
    tol = 1e-5 if dt == "float32" else 2e-2
    np.testing.assert_allclose(f32(got), f32(want), rtol=tol,
                               atol=tol * np.abs(f32(want)).max())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("xshape", [(128,), (4, 128), (2, 3, 128)])
@pytest.mark.parametrize("packed", [True, False])
def test_qqmm_definition(on_device, mode, xshape, packed):
    w, x = weights((24, 128), 1.0, seed=15), weights(xshape, 1.0, seed=16)
    if packed:
        y = mx.qqmm(mx.array(x), *mx.quantize(mx.array(w), mode=mode), mode=mode)
    else:
        y = mx.qqmm(mx.array(x), mx.array(w), mode=mode)
    xd = qdq(x.reshape(-1, 128), mode).reshape(xshape)
    ref = xd @ qdq(w, mode).T
    assert y.shape == ref.shape and y.dtype == mx.float32
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-5, atol=1e-4)


def test_qqmm_default_mode_and_global_scales(on_device):
    w, x = weights((16, 64), 1.0, seed=17), weights((3, 64), 1.0, seed=18)
    gx, gw = mx.array(float(np.abs(x).max())), mx.array(float(np.abs(w).max()))
    q, s = mx.quantize(mx.array(w), mode="nvfp4", global_scale=gw)
    y = mx.qqmm(mx.array(x), q, s, global_scale_x=gx, global_scale_w=gw)
    ref = qdq(x, "nvfp4", gx) @ deq(q, s, "nvfp4", gw).T
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-5, atol=1e-4)
    y2 = mx.qqmm(mx.array(x), mx.array(w), global_scale_x=gx, global_scale_w=gw)
    np.testing.assert_allclose(np.array(y2), ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("packed", [True, False])
def test_gather_qqmm(on_device, mode, packed):
    w, x = weights((3, 20, 64), 1.0, seed=19), weights((4, 2, 64), 1.0, seed=20)
    lhs, rhs = np.array([3, 0, 0]), np.array([1, 2, 0])
    wa = mx.quantize(mx.array(w), mode=mode) if packed else [mx.array(w)]
    y = mx.gather_qqmm(mx.array(x), *wa, lhs_indices=mx.array(lhs),
                       rhs_indices=mx.array(rhs), mode=mode)
    W = qdq(w.reshape(-1, 64), mode).reshape(w.shape)
    X = qdq(x.reshape(-1, 64), mode).reshape(x.shape)
    ref = np.stack([X[lhs[i]] @ W[rhs[i]].T for i in range(3)])
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-5, atol=1e-4)


# ------------------------------------------------ errors


ERRORS = [
    (lambda w, q, s: mx.quantize(w, mode="foo"),
     r"\[quantize\] Invalid quantization mode 'foo'"),
    (lambda w, q, s: mx.quantize(w, group_size=16, mode="mxfp4"),
     r"\[quantize\] mxfp4 quantization requires group size 32 but got 16"),
    (lambda w, q, s: mx.quantize(w, bits=8, mode="mxfp4"),
     r"mxfp4 quantization requires bits to be 4 but got 8"),
    (lambda w, q, s: mx.quantize(w, group_size=32, mode="nvfp4"),
     r"nvfp4 quantization requires group size 16 but got 32"),
    (lambda w, q, s: mx.quantize(w, bits=4, mode="mxfp8"),
     r"mxfp8 quantization requires bits to be 8 but got 4"),
    (lambda w, q, s: mx.quantize(mx.ones((4, 48)), mode="mxfp4"),
     r"divisible by the quantization group size 32"),
    (lambda w, q, s: mx.quantize(mx.ones((64,)), mode="mxfp4"),
     r"at least 2 dimension"),
    (lambda w, q, s: mx.quantize(w, mode="mxfp4", global_scale=mx.array(1.0)),
     r"Global scale is only supported for 'nvfp4'"),
    (lambda w, q, s: mx.quantize(w, global_scale=mx.array(1.0)),
     r"Global scale is only supported for 'nvfp4'"),
    (lambda w, q, s: mx.quantize(w, mode="nvfp4", global_scale=mx.array([1.0, 2.0])),
     r"Global scale must be a scalar but got shape \(2\)"),
    (lambda w, q, s: mx.quantize(w, mode="nvfp4",
                                 global_scale=mx.array(1.0, dtype=mx.float16)),
     r"Global scale must have dtype float32 but got float16"),
    (lambda w, q, s: mx.dequantize(q, s, s, mode="mxfp4"),
     r"\[dequantize\] Biases must be null for quantization mode 'mxfp4'"),
    (lambda w, q, s: mx.dequantize(q, s.astype(mx.float32), mode="mxfp4"),
     r"Scale type must be uint8 but received type float32"),
    (lambda w, q, s: mx.dequantize(q, s[:, :1], mode="mxfp4"),
     r"Shape of scales does not match the matrix"),
    (lambda w, q, s: mx.dequantize(q.astype(mx.int32), s, mode="mxfp4"),
     r"The matrix should be given as a uint32"),
    (lambda w, q, s: mx.dequantize(q, s, mode="mxfp4", dtype=mx.int32),
     r"Only real floating types are supported but output dtype == int32"),
    (lambda w, q, s: mx.dequantize(q[0], s[0], mode="mxfp4"),
     r"must have at least 2 dimension"),
    (lambda w, q, s: mx.dequantize(q, s, mode="mxfp8"),
     r"Shape of scales does not match"),
    (lambda w, q, s: mx.quantized_matmul(mx.ones((2, 64)), q, s, s, mode="mxfp4"),
     r"\[quantized_matmul\] Biases must be null"),
    (lambda w, q, s: mx.quantized_matmul(mx.ones((2, 32)), q, s, mode="mxfp4"),
     r"\[quantized_matmul\] Last dimension of first input with shape \(\.\.\., 32\)"),
    (lambda w, q, s: mx.quantized_matmul(mx.ones((2, 64), dtype=mx.int32), q, s,
                                         mode="mxfp4"),
     r"Only real floating types are supported but x.dtype\(\) == int32"),
    (lambda w, q, s: mx.quantized_matmul(mx.ones((2, 64)), q, s, mode="affine"),
     r"Biases must be provided for affine quantization"),
    (lambda w, q, s: mx.qqmm(mx.ones((1, 64)), q, mode="mxfp4"),
     r"\[qqmm\] Scales must be provided if second argument is quantized"),
    (lambda w, q, s: mx.qqmm(mx.ones((1, 64)), q, s[:, :1], mode="mxfp4"),
     r"\[qqmm\] The shapes of the weight and scales are incompatible"),
    (lambda w, q, s: mx.qqmm(mx.ones((1, 64), dtype=mx.int32), q, s, mode="mxfp4"),
     r"Only real floating types except float64 are supported but first "
     r"argument dtype == int32"),
    (lambda w, q, s: mx.qqmm(mx.ones((2, 1, 64)), q[None], s[None], mode="mxfp4"),
     r"Only 2D inputs are supported"),
    (lambda w, q, s: mx.qqmm(mx.ones((1, 32)), q, s, mode="mxfp4"),
     r"\[qqmm\] Last dimension of first input"),
    (lambda w, q, s: mx.qqmm(mx.ones((1, 64)), q, s, mode="mxfp4",
                             global_scale_x=mx.array(1.0)),
     r"\[qqmm\] Global scale is only supported for 'nvfp4'"),
    (lambda w, q, s: mx.qqmm(mx.ones((1, 64)), w, s, mode="mxfp4"),
     r"\[qqmm\] Scales were given but the second argument is not quantized"),
    (lambda w, q, s: mx.qqmm(mx.ones((1, 64)), w, group_size=32, mode="affine"),
     r"\[qqmm\] Only the 'mxfp4', 'mxfp8' and 'nvfp4' modes are supported"),
    (lambda w, q, s: mx.gather_qqmm(mx.ones((1, 64)), q, s, mode="mxfp4",
                                    lhs_indices=mx.array([0.5])),
     r"\[gather_qqmm\] Got lhs_indices or rhs_indices with a non-integer type"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(on_device, case):
    fn, msg = ERRORS[case]
    w = mx.ones((4, 64))
    q, s = mx.quantize(w, mode="mxfp4")
    with pytest.raises(ValueError, match=msg):
        mx.eval(fn(w, q, s))


def test_qqmm_is_no_longer_pending():
    import cmx._compat as compat

    names = {n for groups in compat.PENDING.get("", []) for n in groups[1]}
    assert "qqmm" not in names and "gather_qqmm" not in names
    assert not getattr(mx.qqmm, "_cmx_pending", None)
    assert not getattr(mx.gather_qqmm, "_cmx_pending", None)
