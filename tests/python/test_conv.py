"""Convolutions: conv1d/2d/3d, conv_transpose1d/2d/3d, conv_general and
convolve against NumPy references written here (a direct sum for the
forward convolution, a scatter for the transposed one), with errors."""
import inspect
import itertools

import numpy as np
import pytest

import cmx.core as mx

# Every test here runs on every device (the GPU where there is one).
pytestmark = pytest.mark.usefixtures("on_device")


def ref_conv(x, w, stride, lo, hi, kdil, idil, groups, flip):
    """Channels-last N-d cross-correlation (convolution when flip) in
    float64: x (N, *S, Cin), w (Cout, *K, Cin / groups)."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    nd = x.ndim - 2
    if any(d > 1 for d in idil):
        shape = [x.shape[0]] + [(s - 1) * d + 1 for s, d in zip(x.shape[1:-1], idil)] + [x.shape[-1]]
        xd = np.zeros(shape)
        xd[(slice(None),) + tuple(slice(None, None, d) for d in idil)] = x
        x = xd
    for i in range(nd):  # padding; negative values crop
        ax = i + 1
        if lo[i] < 0:
            x = np.take(x, range(-lo[i], x.shape[ax]), axis=ax)
        if hi[i] < 0:
            x = np.take(x, range(0, x.shape[ax] + hi[i]), axis=ax)
        pads = [(0, 0)] * x.ndim
        pads[ax] = (max(lo[i], 0), max(hi[i], 0))
        x = np.pad(x, pads)
    if flip:
        w = w[(slice(None),) + (slice(None, None, -1),) * nd]
    kshape = w.shape[1:-1]
    osp = [(x.shape[1 + i] - kdil[i] * (kshape[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    cout, cin_g = w.shape[0], w.shape[-1]
    cout_g = cout // groups
    out = np.zeros([x.shape[0]] + osp + [cout])
    for k in itertools.product(*[range(n) for n in kshape]):
        sl = tuple(slice(k[i] * kdil[i], k[i] * kdil[i] + (osp[i] - 1) * stride[i] + 1, stride[i])
                   for i in range(nd))
        xs = x[(slice(None),) + sl]
        for g in range(groups):
            wk = w[(slice(g * cout_g, (g + 1) * cout_g),) + k]  # (cout_g, cin_g)
            out[..., g * cout_g:(g + 1) * cout_g] += xs[..., g * cin_g:(g + 1) * cin_g] @ wk.T
    return out


def ref_conv_transpose(x, w, stride, pad, dil, opad, groups):
    """Each input element scatters x[n, i, ci] * w[co, k, ci] to output
    position i * stride + k * dilation - padding (channels-last, N-d)."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    nd = x.ndim - 2
    sp, kshape = x.shape[1:-1], w.shape[1:-1]
    full = [(sp[i] - 1) * stride[i] + dil[i] * (kshape[i] - 1) + 1 + opad[i] for i in range(nd)]
    cout, cin_g = w.shape[0], w.shape[-1]
    cout_g = cout // groups
    buf = np.zeros([x.shape[0]] + full + [cout])
    for k in itertools.product(*[range(n) for n in kshape]):
        sl = tuple(slice(k[i] * dil[i], k[i] * dil[i] + (sp[i] - 1) * stride[i] + 1, stride[i])
                   for i in range(nd))
        for g in range(groups):
            wk = w[(slice(g * cout_g, (g + 1) * cout_g),) + k]
            buf[(slice(None),) + sl + (slice(g * cout_g, (g + 1) * cout_g),)] += \
                x[..., g * cin_g:(g + 1) * cin_g] @ wk.T
    out_len = [(sp[i] - 1) * stride[i] - 2 * pad[i] + dil[i] * (kshape[i] - 1) + opad[i] + 1
               for i in range(nd)]
    return buf[(slice(None),) + tuple(slice(pad[i], pad[i] + out_len[i]) for i in range(nd))]


def rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def close(got, ref, tol=1e-4):
    np.testing.assert_allclose(np.array(got.astype(mx.float64)), ref, rtol=tol, atol=tol)


CASES_1D = [  # (N, L, Cin, Cout, K, stride, padding, dilation, groups)
    (1, 8, 1, 1, 3, 1, 0, 1, 1),
    (2, 10, 4, 6, 3, 2, 1, 1, 2),
    (3, 9, 3, 5, 2, 1, 2, 3, 1),
    (2, 7, 6, 6, 1, 3, 0, 1, 6),
    (1, 5, 2, 3, 5, 1, 2, 1, 1),
]


@pytest.mark.parametrize("case", CASES_1D)
def test_conv1d(case):
    n, length, cin, cout, k, s, p, d, g = case
    x, w = rand((n, length, cin), 1), rand((cout, k, cin // g), 2)
    got = mx.conv1d(mx.array(x), mx.array(w), stride=s, padding=p, dilation=d, groups=g)
    assert got.dtype == mx.float32
    close(got, ref_conv(x, w, [s], [p], [p], [d], [1], g, False))
    # positional arguments in MLX's order
    close(mx.conv1d(mx.array(x), mx.array(w), s, p, d, g), ref_conv(x, w, [s], [p], [p], [d], [1], g, False))


def test_conv1d_single_channel_is_numpy_correlate():
    x, w = rand((20,), 3), rand((4,), 4)
    got = mx.conv1d(mx.array(x).reshape(1, 20, 1), mx.array(w).reshape(1, 4, 1))
    np.testing.assert_allclose(np.array(got).reshape(-1), np.correlate(x, w, "valid"), rtol=1e-5, atol=1e-5)


CASES_2D = [  # (N, H, W, Cin, Cout, KH, KW, stride, padding, dilation, groups)
    (1, 6, 6, 1, 2, 3, 3, 1, 0, 1, 1),
    (2, 7, 9, 4, 4, 3, 2, (2, 1), (1, 2), (1, 2), 2),
    (1, 8, 5, 3, 6, 1, 3, 3, 1, 1, 3),
    (2, 5, 5, 2, 3, 5, 5, 1, 2, 1, 1),
]


@pytest.mark.parametrize("case", CASES_2D)
def test_conv2d(case):
    n, h, wd, cin, cout, kh, kw, s, p, d, g = case
    two = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    x, w = rand((n, h, wd, cin), 5), rand((cout, kh, kw, cin // g), 6)
    got = mx.conv2d(mx.array(x), mx.array(w), stride=s, padding=p, dilation=d, groups=g)
    close(got, ref_conv(x, w, two(s), two(p), two(p), two(d), [1, 1], g, False))


@pytest.mark.parametrize("groups", [1, 2])
def test_conv3d(groups):
    x, w = rand((2, 5, 6, 4, 4), 7), rand((4, 2, 3, 2, 4 // groups), 8)
    got = mx.conv3d(mx.array(x), mx.array(w), stride=(1, 2, 1), padding=(1, 0, 1),
                    dilation=(2, 1, 1), groups=groups)
    close(got, ref_conv(x, w, [1, 2, 1], [1, 0, 1], [1, 0, 1], [2, 1, 1], [1, 1, 1], groups, False))
    close(mx.conv3d(mx.array(x), mx.array(w), groups=groups),
          ref_conv(x, w, [1] * 3, [0] * 3, [0] * 3, [1] * 3, [1] * 3, groups, False))


@pytest.mark.parametrize("dt,tol", [(mx.float16, 2e-2), (mx.bfloat16, 6e-2), (mx.float64, 1e-10)])
def test_conv_dtypes(dt, tol):
    x, w = rand((2, 9, 3), 9), rand((4, 3, 3), 10)
    xa, wa = mx.array(x).astype(dt), mx.array(w).astype(dt)
    got = mx.conv1d(xa, wa, padding=1)
    assert got.dtype == dt
    xr, wr = np.array(xa.astype(mx.float64)), np.array(wa.astype(mx.float64))
    close(got, ref_conv(xr, wr, [1], [1], [1], [1], [1], 1, False), tol)
    # the result has the promoted dtype of input and weight
    assert mx.conv1d(mx.array(x), wa).dtype == (mx.float64 if dt == mx.float64 else mx.float32)


TRANSPOSE_1D = [  # (N, L, Cin, Cout, K, stride, padding, dilation, output_padding, groups)
    (1, 5, 1, 1, 3, 1, 0, 1, 0, 1),
    (2, 6, 4, 2, 3, 2, 1, 1, 1, 2),
    (1, 4, 3, 5, 2, 3, 0, 2, 2, 1),
    (2, 7, 2, 4, 4, 1, 2, 1, 0, 1),
]


@pytest.mark.parametrize("case", TRANSPOSE_1D)
def test_conv_transpose1d(case):
    n, length, cin, cout, k, s, p, d, op, g = case
    x, w = rand((n, length, cin), 11), rand((cout, k, cin // g), 12)
    got = mx.conv_transpose1d(mx.array(x), mx.array(w), stride=s, padding=p, dilation=d,
                               output_padding=op, groups=g)
    close(got, ref_conv_transpose(x, w, [s], [p], [d], [op], g))


def test_conv_transpose2d_and_3d():
    x, w = rand((2, 4, 5, 3), 13), rand((2, 3, 2, 3), 14)
    got = mx.conv_transpose2d(mx.array(x), mx.array(w), stride=(2, 1), padding=(1, 0),
                              dilation=(1, 2), output_padding=(1, 0))
    close(got, ref_conv_transpose(x, w, [2, 1], [1, 0], [1, 2], [1, 0], 1))
    close(mx.conv_transpose2d(mx.array(x), mx.array(w), stride=2),
          ref_conv_transpose(x, w, [2, 2], [0, 0], [1, 1], [0, 0], 1))
    x3, w3 = rand((1, 3, 4, 2, 4), 15), rand((2, 2, 2, 3, 2), 16)
    got = mx.conv_transpose3d(mx.array(x3), mx.array(w3), stride=(1, 2, 2), padding=(0, 1, 1),
                              output_padding=(0, 1, 0), groups=2)
    close(got, ref_conv_transpose(x3, w3, [1, 2, 2], [0, 1, 1], [1, 1, 1], [0, 1, 0], 2))


def test_conv_transpose_is_the_input_gradient_shape_inverse():
    # conv_transpose with the same stride/padding maps conv's output shape
    # back to its input shape (with output_padding for the lost remainder)
    x, w = rand((1, 11, 2), 17), rand((3, 3, 2), 18)
    y = mx.conv1d(mx.array(x), mx.array(w), stride=2, padding=1)
    back = mx.conv_transpose1d(y, mx.array(w).transpose(2, 1, 0), stride=2, padding=1)
    assert back.shape == (1, 11, 2)


@pytest.mark.parametrize("flip", [False, True])
def test_conv_general(flip):
    x, w = rand((2, 6, 7, 4), 19), rand((4, 3, 2, 4), 20)
    cases = [
        dict(stride=1, padding=0),
        dict(stride=[2, 1], padding=[1, 2], kernel_dilation=[1, 2]),
        dict(padding=([1, 0], [0, 2]), input_dilation=2),
        dict(padding=([2, 2], [-1, 1]), input_dilation=[1, 3], stride=2),
        dict(groups=2, kernel_dilation=2, padding=[[1, 1], [2, 0]]),
    ]
    for kw in cases:
        s = kw.get("stride", 1)
        s = [s, s] if isinstance(s, int) else s
        p = kw.get("padding", 0)
        if isinstance(p, int):
            lo = hi = [p, p]
        elif isinstance(p[0], int):
            lo = hi = list(p)
        else:
            lo, hi = list(p[0]), list(p[1])
        kd = kw.get("kernel_dilation", 1)
        kd = [kd, kd] if isinstance(kd, int) else kd
        idl = kw.get("input_dilation", 1)
        idl = [idl, idl] if isinstance(idl, int) else idl
        g = kw.get("groups", 1)
        wg = w[..., : 4 // g]
        got = mx.conv_general(mx.array(x), mx.array(wg), flip=flip, **kw)
        close(got, ref_conv(x, wg, s, lo, hi, kd, idl, g, flip))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,m", [(8, 3), (3, 8), (5, 5), (1, 4), (6, 1)])
def test_convolve_matches_numpy(mode, n, m):
    a, v = rand((n,), 21), rand((m,), 22)
    got = mx.convolve(mx.array(a), mx.array(v), mode=mode)
    np.testing.assert_allclose(np.array(got), np.convolve(a, v, mode=mode), rtol=1e-5, atol=1e-5)
    assert mx.convolve(mx.array(a), mx.array(v)).shape == (n + m - 1,)


def test_convolve_lists_and_ints():
    got = mx.convolve([1.0, 2.0, 3.0], [0.0, 1.0, 0.5])
    np.testing.assert_allclose(np.array(got), np.convolve([1, 2, 3], [0, 1, 0.5]))


def test_conv_errors():
    x, w = mx.zeros((1, 5, 2)), mx.zeros((3, 2, 2))
    cases = [
        (lambda: mx.conv1d(x, mx.zeros((3, 2, 3))), ValueError, "[conv"),
        (lambda: mx.conv1d(mx.zeros((5, 2)), w), ValueError, "[conv"),
        (lambda: mx.conv1d(x, w, stride=0), ValueError, "[conv"),
        (lambda: mx.conv1d(x, w, groups=3), ValueError, "[conv"),
        (lambda: mx.conv1d(x.astype(mx.int32), w), ValueError, "[conv"),
        (lambda: mx.conv1d(x, mx.zeros((3, 9, 2))), ValueError, "[conv"),
        (lambda: mx.conv2d(mx.zeros((1, 5, 5, 2)), mx.zeros((3, 2, 2, 2)), stride=(1, 2, 3)),
         ValueError, "[conv2d]"),
        (lambda: mx.conv2d(mx.zeros((1, 5, 5, 2)), mx.zeros((3, 2, 2, 2)), padding="same"),
         TypeError, "[conv2d]"),
        (lambda: mx.conv_general(x, w, stride=[1, 2]), ValueError, "[conv"),
        (lambda: mx.conv_general(x, w, stride=[1, 1, 1, 1]), ValueError, "[conv_general]"),
        (lambda: mx.conv_transpose1d(x, mx.zeros((3, 2, 3))), ValueError, "[conv"),
        (lambda: mx.convolve(mx.zeros((2, 2)), mx.zeros(2)), ValueError, "[convolve]"),
        (lambda: mx.convolve(mx.zeros(2), mx.zeros(2), mode="x"), ValueError, "[convolve]"),
        (lambda: mx.conv1d("x", w), TypeError, "conv1d"),
    ]
    for f, exc, msg in cases:
        with pytest.raises(exc) as e:
            mx.eval(f())
        assert msg in str(e.value)


def test_conv_signatures():
    assert str(inspect.signature(mx.conv2d)) == \
        "(input, weight, /, stride=1, padding=0, dilation=1, groups=1, *, stream=None)"
    assert str(inspect.signature(mx.conv_transpose1d)) == (
        "(input, weight, /, stride=1, padding=0, dilation=1, output_padding=0, groups=1, *, "
        "stream=None)")
    assert str(inspect.signature(mx.convolve)) == "(a, v, /, mode='full', *, stream=None)"
    x, w = mx.ones((1, 4, 1)), mx.ones((1, 2, 1))
    assert mx.conv1d(x, w, stream=mx.cpu).tolist() == [[[2.0], [2.0], [2.0]]]
