"""complex64 mx.linalg.svd, eigh, eigvalsh, eig and eigvals on every device:
output dtypes (MLX's: real singular values and Hermitian eigenvalues,
complex vectors), reconstruction identities (U S V^H = A, A V = V diag(w)),
unitarity, value order, UPLO, batches, empty and non-finite input, the
sizes that pick different GPU routines, the GPU against the CPU, vmap, the
ops that stay real-only (MLX's errors) and the clear error of gradients."""
import numpy as np
import pytest

import cmx.core as mx
from conftest import cpu_match

pytestmark = pytest.mark.usefixtures("on_device")

RNG = np.random.default_rng(31)
L = mx.linalg


def crand(shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


def herm(shape):
    a = crand(shape).astype(np.complex128)
    return ((a + np.conj(np.swapaxes(a, -1, -2))) / 2).astype(np.complex64)


def ct(x):
    return np.conj(np.swapaxes(x, -1, -2))


def eye_like(shape, n):
    return np.broadcast_to(np.eye(n), tuple(shape[:-2]) + (n, n))


def atol(n):
    return 2e-4 * max(1.0, n / 8)


# (batch + matrix) shapes: single, batched, the GPU's batched routines
# (<= 32), its per-matrix ones (> 32), non-square both ways
SVD_SHAPES = [(1, 1), (4, 4), (5, 3), (3, 5), (2, 4, 6), (2, 3, 6, 6), (3, 20, 17), (2, 40, 40),
              (70, 45)]


@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_svd(shape):
    a = crand(shape)
    u, s, vt = L.svd(mx.array(a))
    assert (u.dtype, s.dtype, vt.dtype) == (mx.complex64, mx.float32, mx.complex64)
    m, n = shape[-2:]
    k = min(m, n)
    b = tuple(shape[:-2])
    assert u.shape == b + (m, m) and s.shape == b + (k,) and vt.shape == b + (n, n)
    u, s, vt = np.array(u), np.array(s), np.array(vt)
    tl = atol(max(m, n))
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-4, atol=tl)
    assert np.all(np.diff(s, axis=-1) <= 1e-6), "descending"
    rec = (u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :]
    np.testing.assert_allclose(rec, a, atol=tl)
    np.testing.assert_allclose(ct(u) @ u, eye_like(u.shape, m), atol=tl)
    np.testing.assert_allclose(vt @ ct(vt), eye_like(vt.shape, n), atol=tl)
    s2 = L.svd(mx.array(a), compute_uv=False)
    assert s2.dtype == mx.float32 and s2.shape == b + (k,)
    np.testing.assert_allclose(np.array(s2), s, rtol=1e-4, atol=tl)


EIG_SHAPES = [(1, 1), (3, 3), (5, 5), (2, 4, 4), (2, 3, 6, 6), (3, 32, 32), (2, 33, 33), (70, 70)]


@pytest.mark.parametrize("shape", EIG_SHAPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(shape, uplo):
    h = herm(shape)
    n = shape[-1]
    # only the named triangle is read, and the diagonal's real part
    junk = h.copy()
    off = np.triu_indices(n, 1) if uplo == "L" else np.tril_indices(n, -1)
    junk[(...,) + off] = 7 + 5j
    junk[..., np.arange(n), np.arange(n)] += 3j
    w, v = L.eigh(mx.array(junk), UPLO=uplo)
    assert w.dtype == mx.float32 and v.dtype == mx.complex64
    assert w.shape == shape[:-1] and v.shape == shape
    w, v = np.array(w), np.array(v)
    tl = atol(n)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(h), rtol=1e-4, atol=tl)
    assert np.all(np.diff(w, axis=-1) >= -1e-6), "ascending"
    np.testing.assert_allclose(h @ v, v * w[..., None, :], atol=tl * 4)
    np.testing.assert_allclose(ct(v) @ v, eye_like(shape, n), atol=tl)
    wv = L.eigvalsh(mx.array(junk), UPLO=uplo)
    assert wv.dtype == mx.float32
    np.testing.assert_allclose(np.array(wv), w, rtol=1e-4, atol=tl)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (6, 6), (2, 5, 5), (2, 2, 4, 4), (40, 40)])
def test_eig(shape):
    a = crand(shape)
    n = shape[-1]
    w, v = L.eig(mx.array(a))
    assert w.dtype == mx.complex64 and v.dtype == mx.complex64
    assert w.shape == shape[:-1] and v.shape == shape
    w, v = np.array(w), np.array(v)
    tl = atol(n) * 4
    # A V = V diag(w): the right eigenvectors themselves (MLX 0.32's are
    # their conjugates, which fail this identity)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=tl)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), np.ones(shape[:-1]), atol=1e-5)
    ref = np.linalg.eigvals(a.astype(np.complex128)).reshape(-1, n)
    got = w.reshape(-1, n)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(np.sort_complex(g), np.sort_complex(r), atol=tl)
    wv = np.array(L.eigvals(mx.array(a)))
    assert wv.dtype == np.complex64
    np.testing.assert_allclose(wv, w, atol=1e-5)


def test_hermitian_eig_values_real():
    h = herm((5, 5))
    w = np.array(L.eigvals(mx.array(h)))
    np.testing.assert_allclose(w.imag, 0, atol=1e-5)
    np.testing.assert_allclose(np.sort(w.real), np.linalg.eigvalsh(h), atol=1e-4)


def test_real_input_to_complex_paths_unchanged():
    # a real-valued complex matrix: the same values as the float32 path
    r = RNG.standard_normal((4, 5)).astype(np.float32)
    s_c = np.array(L.svd(mx.array(r.astype(np.complex64)), compute_uv=False))
    s_r = np.array(L.svd(mx.array(r), compute_uv=False))
    np.testing.assert_allclose(s_c, s_r, rtol=1e-5, atol=1e-5)
    sym = r[:, :4] + r[:, :4].T
    w_c = np.array(L.eigvalsh(mx.array(sym.astype(np.complex64))))
    np.testing.assert_allclose(w_c, np.array(L.eigvalsh(mx.array(sym))), rtol=1e-5, atol=1e-5)


def test_non_contiguous_input():
    a = crand((5, 4))
    x = mx.array(a).T  # a transposed view
    u, s, vt = [np.array(t) for t in L.svd(x)]
    np.testing.assert_allclose((u * s) @ vt[:4], a.T, atol=1e-4)
    h = herm((2, 4, 4))
    hx = mx.array(h)[::-1]  # a reversed batch
    w = np.array(L.eigvalsh(hx))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(h[::-1]), atol=1e-4)


def test_empty():
    u, s, vt = L.svd(mx.zeros((2, 0, 3), dtype=mx.complex64))
    assert u.shape == (2, 0, 0) and s.shape == (2, 0) and vt.shape == (2, 3, 3)
    assert s.dtype == mx.float32 and vt.dtype == mx.complex64
    np.testing.assert_array_equal(np.array(vt), np.broadcast_to(np.eye(3), (2, 3, 3)))
    w, v = L.eigh(mx.zeros((2, 0, 0), dtype=mx.complex64))
    assert w.shape == (2, 0) and w.dtype == mx.float32 and v.shape == (2, 0, 0)
    w, v = L.eig(mx.zeros((0, 3, 3), dtype=mx.complex64))
    assert w.shape == (0, 3) and v.shape == (0, 3, 3) and w.dtype == mx.complex64
    assert L.eigvals(mx.zeros((2, 0, 0), dtype=mx.complex64)).shape == (2, 0)


def test_non_finite_gives_nan_in_its_matrix_only():
    a = crand((3, 4, 4))
    a[1, 2, 0] = np.nan
    h = herm((3, 4, 4))
    h[1, 3, 3] = np.inf
    u, s, vt = [np.array(t) for t in L.svd(mx.array(a))]
    assert np.isnan(s[1]).all() and np.isnan(u[1]).all() and np.isnan(vt[1]).all()
    assert np.isfinite(s[[0, 2]]).all() and np.isfinite(u[[0, 2]]).all()
    w, v = [np.array(t) for t in L.eigh(mx.array(h))]
    assert np.isnan(w[1]).all() and np.isnan(v[1]).all() and np.isfinite(w[[0, 2]]).all()
    w, v = [np.array(t) for t in L.eig(mx.array(a))]
    assert np.isnan(w[1]).all() and np.isnan(v[1]).all() and np.isfinite(v[[0, 2]]).all()


def test_norms_through_complex_svd():
    a = crand((4, 5))
    x = mx.array(a)
    for o in [2, -2, "nuc"]:
        got = np.array(L.norm(x, ord=o))
        np.testing.assert_allclose(np.abs(got), np.linalg.norm(a, ord=o), rtol=1e-4)
    got = np.array(L.norm(mx.array(np.stack([a, a[::-1]])), ord="nuc", axis=(1, 2)))
    np.testing.assert_allclose(got, np.linalg.norm(np.stack([a, a[::-1]]), ord="nuc", axis=(1, 2)),
                               rtol=1e-4)


def test_gpu_matches_cpu(device):
    a = crand((4, 6, 5))
    h = herm((4, 6, 6))
    big = herm((40, 40))
    cpu_match(device, lambda: L.svd(mx.array(a), compute_uv=False), rtol=1e-4, atol=1e-4)
    cpu_match(device, lambda: L.svd(mx.array(big), compute_uv=False), rtol=1e-4, atol=1e-3)
    cpu_match(device, lambda: L.eigvalsh(mx.array(h)), rtol=1e-4, atol=1e-4)
    cpu_match(device, lambda: L.eigvalsh(mx.array(big), UPLO="U"), rtol=1e-4, atol=1e-3)
    # eigenvalues of a Hermitian matrix through eig: the order LAPACK and
    # cuSOLVER give may differ, so sorted
    cpu_match(device, lambda: mx.sort(mx.real(L.eigvals(mx.array(h))), axis=-1),
              rtol=1e-4, atol=1e-4)


def test_vmap_matches_loop():
    a = crand((3, 4, 4))
    h = herm((3, 4, 4))
    sv = mx.vmap(lambda x: L.svd(x, compute_uv=False))(mx.array(a))
    np.testing.assert_allclose(np.array(sv), np.linalg.svd(a, compute_uv=False), atol=1e-4)
    w = mx.vmap(lambda x: L.eigh(x)[0])(mx.array(h))
    assert w.dtype == mx.float32
    np.testing.assert_allclose(np.array(w), np.linalg.eigvalsh(h), atol=1e-4)
    # mapped over a middle axis: (4, 3, 4) -> three 4 x 4 U's
    u = mx.vmap(lambda x: L.svd(x)[0], in_axes=1)(mx.array(np.swapaxes(a, 0, 1)))
    assert u.dtype == mx.complex64 and u.shape == (3, 4, 4)
    u = np.array(u)
    np.testing.assert_allclose(ct(u) @ u, eye_like(u.shape, 4), atol=1e-4)
    # U^H A = S V^H: its rows' norms are the singular values
    np.testing.assert_allclose(np.linalg.norm(ct(u) @ a, axis=-1),
                               np.linalg.svd(a, compute_uv=False), atol=1e-4)


@pytest.mark.parametrize("fn", [
    lambda x: L.svd(x, compute_uv=False).sum(),
    lambda x: mx.abs(L.svd(x)[0]).sum(),
    lambda x: L.eigvalsh(x).sum(),
    lambda x: mx.abs(L.eigh(x)[1]).sum(),
])
def test_gradients_raise(fn):
    # MLX has no gradient for these (complex or real); cmx's real rules do
    # not hold for complex input: a clear error, never a wrong gradient
    with pytest.raises(ValueError, match=r"complex64 input"):
        mx.eval(mx.grad(fn)(mx.array(herm((3, 3)))))
    with pytest.raises(ValueError, match=r"complex64 input"):
        mx.eval(mx.jvp(fn, [mx.array(herm((3, 3)))], [mx.array(herm((3, 3)))]))


@pytest.mark.parametrize("name", ["inv", "cholesky", "qr", "pinv", "tri_inv", "lu", "lu_factor",
                                  "cholesky_inv"])
def test_real_only_ops_refuse_complex_as_mlx(name):
    with pytest.raises(ValueError, match=rf"Arrays must have type float32 or float64\. Received array with type complex64"):
        getattr(L, name)(mx.array(herm((3, 3))))


def test_dtype_errors_name_complex64():
    for name in ["svd", "eigh", "eigvalsh", "eig", "eigvals"]:
        with pytest.raises(ValueError, match=rf"\[linalg::{name}\] Arrays must have type float32, float64 or complex64"):
            getattr(L, name)(mx.eye(3).astype(mx.float16))
    with pytest.raises(ValueError, match="must promote to float32 or float64"):
        L.solve(mx.array(herm((3, 3))), mx.array(crand((3,))))
    with pytest.raises(ValueError, match=r"\[linalg::det\] Complex inputs are not supported"):
        L.det(mx.array(herm((3, 3))))
