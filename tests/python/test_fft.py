"""mx.fft against numpy.fft: every transform over lengths 1..64, every
prime up to 1009, powers of two up to 2^20, several axes, padding and
truncation (n, s), the three normalisations, dtypes, shifts and
frequencies, MLX's errors, and gradients (vjp against finite differences
with MLX's complex gradients dL/dRe + i dL/dIm, jvp, vmap)."""
import numpy as np
import pytest

import cmx.core as mx

pytestmark = pytest.mark.usefixtures("on_device")

RNG = np.random.default_rng(11)


def crand(*shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


def rrand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def close(got, want, rel=2e-5):
    """float32 transforms: error relative to the spectrum's size (and the
    log of the length, which the rounding grows with)."""
    got, want = np.array(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max())) * (1 + np.log2(max(2, want.size)) / 4)
    err = float(np.abs(got - want).max()) if want.size else 0.0
    assert err <= rel * scale, f"max error {err} vs allowed {rel * scale}"


PRIMES = [p for p in range(2, 1010) if all(p % d for d in range(2, int(p ** 0.5) + 1))]


def test_lengths_1_to_64():
    for n in range(1, 65):
        x, r = crand(n), rrand(n)
        close(mx.fft.fft(mx.array(x)), np.fft.fft(x))
        close(mx.fft.ifft(mx.array(x)), np.fft.ifft(x))
        close(mx.fft.rfft(mx.array(r)), np.fft.rfft(r))
        spec = np.fft.rfft(r).astype(np.complex64)
        close(mx.fft.irfft(mx.array(spec), n=n), np.fft.irfft(spec, n=n))


def test_primes_up_to_1009():
    assert len(PRIMES) == 169 and PRIMES[-1] == 1009
    for n in PRIMES:
        x = crand(n)
        close(mx.fft.fft(mx.array(x)), np.fft.fft(x))
        close(mx.fft.ifft(mx.array(x)), np.fft.ifft(x))
    for n in [97, 211, 1009, 2 * 1009, 3 * 101 * 7]:
        r = rrand(n)
        close(mx.fft.rfft(mx.array(r)), np.fft.rfft(r))
        spec = np.fft.rfft(r).astype(np.complex64)
        close(mx.fft.irfft(mx.array(spec), n=n), r)


def test_powers_of_two_up_to_2_20():
    for k in range(0, 21):
        n = 1 << k
        x = crand(n)
        close(mx.fft.fft(mx.array(x)), np.fft.fft(x))
        if k in (10, 15, 20):
            r = rrand(n)
            close(mx.fft.rfft(mx.array(r)), np.fft.rfft(r))
            close(mx.fft.irfft(mx.fft.rfft(mx.array(r))), r)
            close(mx.fft.ifft(mx.array(x)), np.fft.ifft(x))


def test_mixed_radix_and_round_trip():
    for n in [6, 12, 15, 30, 45, 60, 100, 360, 1000, 3 * 5 * 7 * 11, 2 * 37 * 41, 4096 * 3, 65537, 3 * 5 * 4099]:
        x = crand(n)
        close(mx.fft.fft(mx.array(x)), np.fft.fft(x))
        close(mx.fft.ifft(mx.fft.fft(mx.array(x))), x)


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
def test_norms(norm):
    x, r = crand(4, 12), rrand(4, 12)
    kw = {} if norm is None else {"norm": norm}
    close(mx.fft.fft(mx.array(x), **kw), np.fft.fft(x, **kw))
    close(mx.fft.ifft(mx.array(x), **kw), np.fft.ifft(x, **kw))
    close(mx.fft.rfft(mx.array(r), **kw), np.fft.rfft(r, **kw))
    close(mx.fft.irfft(mx.array(x), **kw), np.fft.irfft(x, **kw))
    close(mx.fft.fftn(mx.array(x), **kw), np.fft.fftn(x, **kw))
    close(mx.fft.irfftn(mx.array(x), **kw), np.fft.irfftn(x, **kw))


def test_n_axis_padding_truncation():
    x = crand(3, 10)
    for n in [1, 5, 10, 16, 17]:
        close(mx.fft.fft(mx.array(x), n=n), np.fft.fft(x, n=n))
        close(mx.fft.fft(mx.array(x), n=n, axis=0), np.fft.fft(x, n=n, axis=0))
        close(mx.fft.ifft(mx.array(x), n=n, axis=-2), np.fft.ifft(x, n=n, axis=-2))
        close(mx.fft.rfft(mx.array(x.real), n=n), np.fft.rfft(x.real, n=n))
        close(mx.fft.irfft(mx.array(x), n=n), np.fft.irfft(x, n=n))
        close(mx.fft.irfft(mx.array(x), n=n, axis=0), np.fft.irfft(x, n=n, axis=0))


def test_multi_axis():
    x = crand(3, 4, 5, 6)
    r = x.real.copy()
    close(mx.fft.fft2(mx.array(x)), np.fft.fft2(x))
    close(mx.fft.ifft2(mx.array(x)), np.fft.ifft2(x))
    close(mx.fft.fftn(mx.array(x)), np.fft.fftn(x))
    close(mx.fft.ifftn(mx.array(x)), np.fft.ifftn(x))
    close(mx.fft.rfft2(mx.array(r)), np.fft.rfft2(r))
    close(mx.fft.rfftn(mx.array(r)), np.fft.rfftn(r))
    close(mx.fft.irfft2(mx.array(x)), np.fft.irfft2(x))
    close(mx.fft.irfftn(mx.array(x)), np.fft.irfftn(x))
    for axes in [[0, 2], [2, 0], [-1, 1], [3], [1, 2, 3]]:
        close(mx.fft.fftn(mx.array(x), axes=axes), np.fft.fftn(x, axes=axes))
        close(mx.fft.rfftn(mx.array(r), axes=axes), np.fft.rfftn(r, axes=axes))
        close(mx.fft.irfftn(mx.array(x), axes=axes), np.fft.irfftn(x, axes=axes))
    for s, axes in [([4, 7], [1, 2]), ([2, 3], [0, 3]), ([8, 3], [-1, -2])]:
        close(mx.fft.fftn(mx.array(x), s=s, axes=axes), np.fft.fftn(x, s=s, axes=axes))
        close(mx.fft.rfftn(mx.array(r), s=s, axes=axes), np.fft.rfftn(r, s=s, axes=axes))
        close(mx.fft.irfftn(mx.array(x), s=s, axes=axes), np.fft.irfftn(x, s=s, axes=axes))
        close(mx.fft.fft2(mx.array(x), s=s), np.fft.fft2(x, s=s))
        close(mx.fft.irfft2(mx.array(x), s=s), np.fft.irfft2(x, s=s))
    # the *2 functions with axes=None transform every axis, as MLX's
    close(mx.fft.fft2(mx.array(x), axes=None), np.fft.fftn(x))


def test_batched_and_strided_views():
    x = crand(64, 48)
    close(mx.fft.fft(mx.array(x)), np.fft.fft(x))
    close(mx.fft.fft(mx.array(x)[:, ::2]), np.fft.fft(x[:, ::2]))
    close(mx.fft.fft(mx.array(x).T), np.fft.fft(x.T))
    close(mx.fft.rfft(mx.array(x.real)[::3]), np.fft.rfft(x.real[::3]))


def test_dtypes():
    assert mx.fft.fft(mx.array([1, 2, 3])).dtype == mx.complex64
    assert mx.fft.fft(mx.array([1.0, 2.0], dtype=mx.float64)).dtype == mx.complex64
    assert mx.fft.rfft(mx.array([1, 2, 3, 4])).dtype == mx.complex64
    assert mx.fft.irfft(mx.array([1.0, 2.0, 3.0])).dtype == mx.float32
    assert mx.fft.fft(mx.ones((4,), dtype=mx.float16)).dtype == mx.complex64
    close(mx.fft.fft(mx.array([1, 2, 3])), np.fft.fft([1, 2, 3]))
    # rfft of a complex input uses its real part (as MLX)
    x = crand(8)
    close(mx.fft.rfft(mx.array(x)), np.fft.rfft(x.real))
    # the imaginary parts of the zero and Nyquist bins are ignored (NumPy)
    spec = crand(5)
    close(mx.fft.irfft(mx.array(spec)), np.fft.irfft(spec))
    close(mx.fft.irfft(mx.array(spec), n=9), np.fft.irfft(spec, n=9))


def test_shift_and_freq():
    a = np.arange(30).reshape(5, 6)
    for axes in [None, 0, [1], [0, 1], [-1]]:
        np.testing.assert_array_equal(np.array(mx.fft.fftshift(mx.array(a), axes=axes)), np.fft.fftshift(a, axes=axes))
        np.testing.assert_array_equal(np.array(mx.fft.ifftshift(mx.array(a), axes=axes)), np.fft.ifftshift(a, axes=axes))
    for n in [1, 4, 5, 10]:
        for d in [1.0, 0.5, 3.0]:
            np.testing.assert_allclose(np.array(mx.fft.fftfreq(n, d)), np.fft.fftfreq(n, d), rtol=1e-6)
            np.testing.assert_allclose(np.array(mx.fft.rfftfreq(n, d)), np.fft.rfftfreq(n, d), rtol=1e-6)
    assert mx.fft.fftfreq(4).dtype == mx.float32
    with pytest.raises(ValueError, match=r"\[fftfreq\] `n` must be greater than 0"):
        mx.fft.fftfreq(0)
    with pytest.raises(ValueError, match="`d` must be non-zero"):
        mx.fft.rfftfreq(4, 0.0)


def test_errors():
    a = mx.ones((4, 6))
    with pytest.raises(ValueError, match=r"Invalid FFT output size requested \(0\)"):
        mx.fft.fft(a, n=0)
    with pytest.raises(ValueError, match="Duplicated axis"):
        mx.fft.fftn(a, axes=[0, 0])
    with pytest.raises(ValueError, match="`axes` should not be `None` if `s` is not `None`"):
        mx.fft.fftn(a, s=[2, 2])
    with pytest.raises(ValueError, match="Shape and axes have different sizes"):
        mx.fft.fftn(a, s=[2, 2], axes=[0])
    with pytest.raises(ValueError, match="Invalid norm"):
        mx.fft.fft(a, norm="bad")
    with pytest.raises(IndexError, match="out of bounds"):  # MLX's type
        mx.fft.fft(a, axis=2)
    with pytest.raises(ValueError, match=r"Invalid FFT output size requested \(0\)"):
        mx.fft.irfft(mx.ones((1,), dtype=mx.complex64))
    # an empty axis list gives the input back (MLX)
    assert mx.fft.fftn(a, axes=[]).dtype == mx.float32


def test_module_and_signatures():
    import inspect

    import cmx.core.fft as f

    assert f.fft is mx.fft.fft
    assert list(inspect.signature(mx.fft.fft).parameters) == ["a", "n", "axis", "norm", "stream"]
    assert inspect.signature(mx.fft.rfftn).parameters["norm"].default == "backward"


# ---------------- gradients ----------------
def fd_complex(f, x, eps=0.5):
    """dL/dRe + i dL/dIm of real f at complex x (MLX's gradient convention;
    f linear: exact FD)."""
    g = np.zeros(x.shape, np.complex128)
    for i in np.ndindex(x.shape):
        for unit, sign in [(1, 1), (1j, 1j)]:
            xp, xm = x.copy(), x.copy()
            xp[i] += eps * unit
            xm[i] -= eps * unit
            g[i] += sign * (f(xp) - f(xm)) / (2 * eps)
    return g


def fd_real(f, x, eps=0.5):
    g = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


WR = RNG.standard_normal((8, 8)).astype(np.float32)
WI = RNG.standard_normal((8, 8)).astype(np.float32)


def loss_c(y):
    """A real loss weighing the real and imaginary parts of y."""
    n0, n1 = y.shape[-2:] if y.ndim > 1 else (1, y.shape[-1])
    wr, wi = mx.array(WR[:n0, :n1].reshape(y.shape)), mx.array(WI[:n0, :n1].reshape(y.shape))
    if y.dtype != mx.complex64:
        return mx.sum(y * wr)
    return mx.sum(mx.real(y) * wr) + mx.sum(mx.imag(y) * wi)


CASES = [
    ("fft", lambda x: mx.fft.fft(x), True, (3, 8)),
    ("ifft", lambda x: mx.fft.ifft(x, norm="ortho"), True, (3, 8)),
    ("fft_n", lambda x: mx.fft.fft(x, n=6, axis=0), True, (2, 5)),
    ("fft2", lambda x: mx.fft.fft2(x), True, (3, 5)),
    ("rfft", lambda x: mx.fft.rfft(x), False, (3, 8)),
    ("rfft_odd", lambda x: mx.fft.rfft(x, n=7), False, (2, 7)),
    ("rfft2", lambda x: mx.fft.rfft2(x, norm="forward"), False, (3, 6)),
    ("irfft", lambda x: mx.fft.irfft(x), True, (3, 5)),
    ("irfft_odd", lambda x: mx.fft.irfft(x, n=7), True, (2, 4)),
    ("irfft2", lambda x: mx.fft.irfft2(x), True, (3, 4)),
]


@pytest.mark.parametrize("name,fn,cplx,shape", CASES, ids=[c[0] for c in CASES])
def test_grad(name, fn, cplx, shape):
    x = crand(*shape) if cplx else rrand(*shape)

    def f_np(v):
        return loss_c(fn(mx.array(v.astype(x.dtype)))).item()
    want = fd_complex(f_np, x.astype(np.complex128)) if cplx else fd_real(f_np, x.astype(np.float64))
    got = np.array(mx.grad(lambda v: loss_c(fn(v)))(mx.array(x)))
    close(got, want.astype(got.dtype), rel=1e-4)
    t = crand(*shape) if cplx else rrand(*shape)
    _, (jv,) = mx.jvp(lambda v: loss_c(fn(v)), [mx.array(x)], [mx.array(t)])
    # the directional derivative: Re(sum(conj(g) * t)) of MLX's gradient
    want_dir = float(np.sum(want.real * t.real) + np.sum(want.imag * t.imag)) if cplx else float(np.sum(want * t))
    np.testing.assert_allclose(jv.item(), want_dir, rtol=1e-3, atol=1e-3)


def test_vmap():
    x = crand(5, 3, 8)
    got = mx.vmap(lambda v: mx.fft.fft(v, axis=0), in_axes=1)(mx.array(x))
    close(got, np.stack([np.fft.fft(x[:, i], axis=0) for i in range(3)]))
    r = x.real.copy()
    got = mx.vmap(mx.fft.rfft2, in_axes=2, out_axes=1)(mx.array(r))
    close(got, np.stack([np.fft.rfft2(r[:, :, i]) for i in range(8)], axis=1))
    got = mx.vmap(lambda v: mx.fft.irfft(v, n=6))(mx.array(x))
    close(got, np.fft.irfft(x, n=6))
