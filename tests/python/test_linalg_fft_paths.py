"""mx.linalg and mx.fft over the sizes that pick different code paths on
the GPU (cuSOLVER/cuBLAS batched routines for batches of small matrices,
cmx's batched Jacobi eigh/svd up to 64x64 (cuSOLVER's up to 32x32 with
CMX_CUDA_JACOBI=0), looped 64-bit routines for single or large matrices; cuFFT plans over the last axis, strided over inner axes, and
executed per outer index): results against NumPy and reconstruction
identities on every device, non-finite and singular matrices inside a
batch, and the GPU's results against the CPU's."""
import numpy as np
import pytest

import cmx.core as mx
from conftest import cpu_match

pytestmark = pytest.mark.usefixtures("on_device")

RNG = np.random.default_rng(19)
# (batch, n): batched small (<= 32), batched medium (33..128), batched
# large (> 128), single small, single large
SIZES = [((7,), 5), ((3, 2), 32), ((4,), 33), ((2,), 130), ((), 1), ((), 200)]


def rand(shape, dt):
    return RNG.standard_normal(shape).astype(dt)


def spd(shape, dt):
    x = RNG.standard_normal(shape)
    n = shape[-1]
    return (x @ np.swapaxes(x, -1, -2) + n * np.eye(n)).astype(dt)


def tol(dt, n=8):
    return (2e-3 if dt == np.float32 else 1e-8) * max(1.0, n / 16)


def arr(x):
    return mx.array(x, dtype=mx.float64) if x.dtype == np.float64 else mx.array(x)


def eye_err(x, n):
    return float(np.abs(x - np.eye(n)).max())


@pytest.mark.parametrize("batch,n", SIZES)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_inv_solve_cholesky_paths(batch, n, dt):
    a = rand(batch + (n, n), dt) + n * np.eye(n, dtype=dt)
    inv = np.array(mx.linalg.inv(arr(a)))
    assert eye_err(a.astype(np.float64) @ inv, n) < tol(dt, n)
    for k in (1, 3):
        b = rand(batch + (n, k), dt)
        x = np.array(mx.linalg.solve(arr(a), arr(b)))
        np.testing.assert_allclose(a.astype(np.float64) @ x, b, atol=tol(dt, n) * 10)
    s = spd(batch + (n, n), dt)
    for upper in (False, True):
        c = np.array(mx.linalg.cholesky(arr(s), upper=upper))
        tri = np.triu(c) if upper else np.tril(c)
        np.testing.assert_array_equal(c, tri)
        rec = np.swapaxes(c, -1, -2) @ c if upper else c @ np.swapaxes(c, -1, -2)
        np.testing.assert_allclose(rec, s, rtol=tol(dt, n), atol=tol(dt, n) * n)


@pytest.mark.parametrize("batch,n", SIZES)
@pytest.mark.parametrize("upper", [False, True])
def test_triangular_paths(batch, n, upper):
    dt = np.float64
    a = rand(batch + (n, n), dt) + 2 * n * np.eye(n)
    t = np.triu(a) if upper else np.tril(a)
    garbage = a  # the other triangle must not be read
    inv = np.array(mx.linalg.tri_inv(arr(garbage), upper=upper))
    np.testing.assert_allclose(inv, np.linalg.inv(t), atol=1e-9)
    b = rand(batch + (n, 4), dt)
    x = np.array(mx.linalg.solve_triangular(arr(garbage), arr(b), upper=upper))
    np.testing.assert_allclose(t @ x, b, atol=1e-8)


@pytest.mark.parametrize("batch,n", SIZES)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_eigh_svd_paths(batch, n, dt):
    s = spd(batch + (n, n), dt)
    w, v = mx.linalg.eigh(arr(s))
    w, v = np.array(w), np.array(v)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(s.astype(np.float64)), rtol=tol(dt, n), atol=tol(dt, n))
    rec = v @ (w[..., :, None] * np.swapaxes(v, -1, -2))
    np.testing.assert_allclose(rec, s, rtol=tol(dt, n), atol=tol(dt, n) * n)
    for m in (n, n + 3, max(1, n - 1)):
        a = rand(batch + (m, n), dt)
        u, sv, vt = (np.array(x) for x in mx.linalg.svd(arr(a)))
        assert u.shape == batch + (m, m) and vt.shape == batch + (n, n)
        np.testing.assert_allclose(sv, np.linalg.svd(a.astype(np.float64), compute_uv=False),
                                   rtol=tol(dt, n), atol=tol(dt, n))
        k = min(m, n)
        rec = (u[..., :, :k] * sv[..., None, :]) @ vt[..., :k, :]
        np.testing.assert_allclose(rec, a, atol=tol(dt, n) * 5)
        assert eye_err(np.swapaxes(u, -1, -2) @ u, m) < tol(dt, n) * 5
        only = np.array(mx.linalg.svd(arr(a), compute_uv=False))
        np.testing.assert_allclose(only, sv, rtol=tol(dt, n), atol=tol(dt, n))


# cmx's batched Jacobi kernels take eigh and svd up to 64 x 64 on the GPU;
# CMX_CUDA_JACOBI=0 keeps cuSOLVER: both paths against NumPy and the
# reconstruction identities (the GPU's values against the CPU's below)
JACOBI = [((), 1), ((300,), 2), ((5,), 3), ((2, 3), 17), ((4,), 32), ((1,), 33), ((6,), 64),
          ((), 64)]


def small_kinds(batch, n, dt):
    """Random, rank-deficient (rank n // 2) and repeated-eigenvalue matrices."""
    a = rand(batch + (n, n), np.float64)
    r = n // 2
    low = rand(batch + (n, r), np.float64) @ rand(batch + (r, n), np.float64)
    q, _ = np.linalg.qr(rand((n, n), np.float64))
    rep = q @ np.diag(np.arange(n) % 3 - 1.0) @ q.T
    return [x.astype(dt) for x in (a, low, np.broadcast_to(rep, batch + (n, n)).copy())]


@pytest.mark.parametrize("batch,n", JACOBI)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_small_eigh_svd_both_paths(batch, n, dt, device, monkeypatch):
    eps = 1.2e-7 if dt == np.float32 else 2.2e-16
    paths = ["1", "0"] if device == mx.gpu else ["1"]
    for path in paths:
        monkeypatch.setenv("CMX_CUDA_JACOBI", path)
        for a in small_kinds(batch, n, dt):
            a64 = a.astype(np.float64)
            scale = 1 + np.abs(a64).max() * n
            tol = 8 * eps * n * scale
            u, s, vt = (np.array(x, dtype=np.float64) for x in mx.linalg.svd(arr(a)))
            np.testing.assert_allclose(s, np.linalg.svd(a64, compute_uv=False), atol=tol)
            assert np.all(np.diff(s, axis=-1) <= 0)
            np.testing.assert_allclose((u * s[..., None, :]) @ vt, a64, atol=tol)
            assert eye_err(np.swapaxes(u, -1, -2) @ u, n) < 8 * eps * n
            assert eye_err(vt @ np.swapaxes(vt, -1, -2), n) < 8 * eps * n
            only = np.array(mx.linalg.svd(arr(a), compute_uv=False), dtype=np.float64)
            np.testing.assert_allclose(only, s, atol=tol)
            for uplo in ("L", "U"):
                tri = np.tril(a64) if uplo == "L" else np.triu(a64)
                sym = tri + np.swapaxes(tri, -1, -2) - tri * np.eye(n)
                w, v = (np.array(x, dtype=np.float64) for x in mx.linalg.eigh(arr(a), UPLO=uplo))
                np.testing.assert_allclose(w, np.linalg.eigvalsh(sym), atol=tol)
                np.testing.assert_allclose((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), sym, atol=tol)
                assert eye_err(np.swapaxes(v, -1, -2) @ v, n) < 8 * eps * n
                wo = np.array(mx.linalg.eigvalsh(arr(a), UPLO=uplo), dtype=np.float64)
                np.testing.assert_allclose(wo, w, atol=tol)


@pytest.mark.parametrize("shape", [(3, 64, 5), (3, 5, 64), (2, 40, 33), (1, 64, 63)])
def test_small_svd_non_square(shape):
    for dt in (np.float32, np.float64):
        eps = 1.2e-7 if dt == np.float32 else 2.2e-16
        m, n = shape[-2:]
        k = min(m, n)
        for a in (rand(shape, dt), (rand(shape[:-1] + (1,), dt) @ rand(shape[:-2] + (1, n), dt))):
            a64 = a.astype(np.float64)
            tol = 8 * eps * max(m, n) * (1 + np.abs(a64).max() * k)
            u, s, vt = (np.array(x, dtype=np.float64) for x in mx.linalg.svd(arr(a)))
            assert u.shape == shape[:-2] + (m, m) and vt.shape == shape[:-2] + (n, n)
            np.testing.assert_allclose(s, np.linalg.svd(a64, compute_uv=False), atol=tol)
            np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :], a64, atol=tol)
            assert eye_err(np.swapaxes(u, -1, -2) @ u, m) < 8 * eps * max(m, n)
            assert eye_err(vt @ np.swapaxes(vt, -1, -2), n) < 8 * eps * max(m, n)


def test_small_jacobi_matches_cpu(device):
    a = rand((300, 64, 64), np.float32)
    s = spd((256, 64, 64), np.float32)
    cpu_match(device, lambda: mx.linalg.svd(mx.array(a), compute_uv=False), rtol=1e-4, atol=1e-4)
    cpu_match(device, lambda: mx.linalg.eigvalsh(mx.array(s)), rtol=1e-4, atol=1e-3)
    d = rand((7, 33, 33), np.float64)
    cpu_match(device, lambda: mx.linalg.svd(mx.array(d, dtype=mx.float64), compute_uv=False),
              rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 5, 5), (2, 40, 33), (150, 140)])
def test_qr_lu_paths(shape):
    a = rand(shape, np.float64)
    q, r = (np.array(x) for x in mx.linalg.qr(arr(a)))
    np.testing.assert_allclose(q @ r, a, atol=1e-10)
    np.testing.assert_array_equal(r, np.triu(r))
    p, l, u = (np.array(x) for x in mx.linalg.lu(arr(a)))
    rec = np.take_along_axis(l, p[..., None].astype(np.int64), axis=-2) @ u
    np.testing.assert_allclose(rec, a, atol=1e-10)
    assert np.all(np.abs(np.tril(l, -1)) <= 1 + 1e-12)


def test_eig_paths():
    for shape in [(5, 5), (3, 4, 4), (40, 40)]:
        a = rand(shape, np.float32)
        w, v = (np.array(x) for x in mx.linalg.eig(mx.array(a)))
        np.testing.assert_allclose(a.astype(np.complex128) @ v, v * w[..., None, :], atol=2e-3 * shape[-1])
        np.testing.assert_allclose(np.sort_complex(w.reshape(-1, shape[-1])),
                                   np.sort_complex(np.linalg.eigvals(a.astype(np.float64)).reshape(-1, shape[-1])),
                                   atol=2e-3 * shape[-1])


def test_bad_matrix_inside_a_batch():
    a = np.stack([np.eye(3), np.eye(3), np.eye(3)]).astype(np.float32)
    a[1, 1, 1] = np.nan
    for out in [mx.linalg.svd(mx.array(a), compute_uv=False), mx.linalg.eigvalsh(mx.array(a))]:
        out = np.array(out)
        assert np.all(np.isnan(out[1])) and np.all(out[[0, 2]] == 1)
    a[1] = 0
    with pytest.raises(RuntimeError, match=r"\[linalg::inv\] Singular matrix"):
        mx.eval(mx.linalg.inv(mx.array(a)))
    with pytest.raises(RuntimeError, match=r"\[linalg::solve\] Singular matrix"):
        mx.eval(mx.linalg.solve(mx.array(a), mx.ones((3, 3, 2))))
    with pytest.raises(RuntimeError, match=r"\[linalg::solve_triangular\] Singular"):
        mx.eval(mx.linalg.solve_triangular(mx.array(a), mx.ones((3, 3, 2))))
    with pytest.raises(RuntimeError, match=r"\[linalg::cholesky\] Matrix is not positive definite"):
        mx.eval(mx.linalg.cholesky(mx.array(a)))
    big = np.eye(200, dtype=np.float32)
    big[7] = 0
    with pytest.raises(RuntimeError, match=r"\[linalg::inv\] Singular matrix"):
        mx.eval(mx.linalg.inv(mx.array(big)))
    with pytest.raises(RuntimeError, match=r"not positive definite"):
        mx.eval(mx.linalg.cholesky(mx.array(big)))


def test_gpu_matches_cpu(device):
    a = rand((4, 6, 6), np.float32) + 6 * np.eye(6, dtype=np.float32)
    s = spd((4, 6, 6), np.float32)
    cpu_match(device, lambda: mx.linalg.inv(mx.array(a)), rtol=1e-4, atol=1e-5)
    cpu_match(device, lambda: mx.linalg.cholesky(mx.array(s)), rtol=1e-4, atol=1e-5)
    cpu_match(device, lambda: mx.linalg.eigvalsh(mx.array(s)), rtol=1e-4, atol=1e-4)
    cpu_match(device, lambda: mx.linalg.svd(mx.array(a), compute_uv=False), rtol=1e-4, atol=1e-4)
    cpu_match(device, lambda: mx.linalg.solve(mx.array(a), mx.array(s[..., :2])), rtol=1e-4, atol=1e-4)
    cpu_match(device, lambda: mx.fft.rfft2(mx.array(a)), rtol=1e-4, atol=1e-4)


# ---------------- FFT ----------------
def crand(*shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


def close(got, want, rel=2e-5):
    got, want = np.array(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max())) * (1 + np.log2(max(2, want.size)) / 4)
    err = float(np.abs(got - want).max()) if want.size else 0.0
    assert err <= rel * scale, f"max error {err} vs allowed {rel * scale}"


@pytest.mark.parametrize("shape,axis", [((3, 17, 5), 1), ((4, 1, 6), 1), ((2, 3, 64), 0),
                                        ((5, 7), 0), ((1, 9), 1), ((6, 1), 0)])
def test_fft_axes_with_inner_and_outer(shape, axis):
    x = crand(*shape)
    close(mx.fft.fft(mx.array(x), axis=axis), np.fft.fft(x, axis=axis))
    close(mx.fft.ifft(mx.array(x), axis=axis), np.fft.ifft(x, axis=axis))
    r = np.real(x).astype(np.float32)
    close(mx.fft.rfft(mx.array(r), axis=axis), np.fft.rfft(r, axis=axis))
    h = np.fft.rfft(r, axis=axis).astype(np.complex64)
    n = shape[axis]
    close(mx.fft.irfft(mx.array(h), n=n, axis=axis), np.fft.irfft(h, n=n, axis=axis))


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_fftn_rfftn_irfftn(norm):
    x = crand(3, 10, 12)
    close(mx.fft.fftn(mx.array(x), norm=norm), np.fft.fftn(x, norm=norm))
    close(mx.fft.ifftn(mx.array(x), axes=(0, 2), norm=norm), np.fft.ifftn(x, axes=(0, 2), norm=norm))
    r = np.real(x).astype(np.float32)
    close(mx.fft.rfftn(mx.array(r), norm=norm), np.fft.rfftn(r, norm=norm))
    close(mx.fft.rfft2(mx.array(r), axes=(2, 1), norm=norm), np.fft.rfft2(r, axes=(2, 1), norm=norm))
    # arbitrary (non-Hermitian) input: the ignored imaginary parts included
    for s in [(3, 10, 22), (3, 10, 21)]:
        h = crand(3, 10, s[-1] // 2 + 1)
        close(mx.fft.irfftn(mx.array(h), s=s, axes=(0, 1, 2), norm=norm),
                  np.fft.irfftn(h, s=s, axes=(0, 1, 2), norm=norm))
        close(mx.fft.irfft(mx.array(h), n=s[-1], norm=norm), np.fft.irfft(h, n=s[-1], norm=norm))


def test_fft_large_batch_and_primes():
    x = crand(1024, 1009)
    close(mx.fft.fft(mx.array(x)), np.fft.fft(x), rel=5e-5)
    y = crand(1009, 8)
    close(mx.fft.fft(mx.array(y), axis=0), np.fft.fft(y, axis=0), rel=5e-5)
    r = RNG.standard_normal(1 << 20).astype(np.float32)
    close(mx.fft.rfft(mx.array(r)), np.fft.rfft(r), rel=5e-5)
    # the plan cache: many distinct plans, then the first again
    for n in range(2, 90):
        z = crand(n)
        close(mx.fft.fft(mx.array(z)), np.fft.fft(z))
    close(mx.fft.fft(mx.array(x)), np.fft.fft(x), rel=5e-5)
