"""mx.linalg against numpy.linalg: every function over shapes, batches and
dtypes, reconstruction identities (Q R = A, U S Vt = A, L L^T = A, A inv(A)
= I, L[P] U = A), singular, non-positive-definite, ill-conditioned and
non-finite inputs, MLX's errors, and gradients (vjp, jvp, vmap) against
central finite differences in float64."""
import numpy as np
import pytest

import cmx.core as mx

pytestmark = pytest.mark.usefixtures("on_device")

RNG = np.random.default_rng(17)
SHAPES = [(1, 1), (3, 3), (5, 5), (2, 4, 4), (2, 3, 6, 6)]
DTYPES = [np.float32, np.float64]


def arr(x):
    x = np.asarray(x)
    return mx.array(x, dtype=mx.float64) if x.dtype == np.float64 else mx.array(x)


def tol(dt):
    return dict(rtol=2e-4, atol=2e-4) if dt == np.float32 else dict(rtol=1e-9, atol=1e-9)


def rand(shape, dt=np.float32):
    return RNG.standard_normal(shape).astype(dt)


def spd(shape, dt=np.float32):
    x = rand(shape, np.float64)
    n = shape[-1]
    return (x @ np.swapaxes(x, -1, -2) + n * np.eye(n)).astype(dt)


# ---------------- factorizations against NumPy ----------------
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dt", DTYPES)
def test_inv(shape, dt):
    a = rand(shape, dt) + 3 * np.eye(shape[-1], dtype=dt)
    x = mx.linalg.inv(arr(a))
    assert x.dtype == arr(a).dtype and x.shape == a.shape
    np.testing.assert_allclose(np.array(x), np.linalg.inv(a), **tol(dt))
    eye = np.broadcast_to(np.eye(shape[-1]), shape)
    np.testing.assert_allclose(a @ np.array(x), eye, **tol(dt))


@pytest.mark.parametrize("shape", [(4, 4), (3, 2), (2, 5), (2, 3, 5, 4)])
@pytest.mark.parametrize("dt", DTYPES)
def test_qr(shape, dt):
    a = rand(shape, dt)
    q, r = mx.linalg.qr(arr(a))
    k = min(shape[-2:])
    assert q.shape == shape[:-1] + (k,) and r.shape == shape[:-2] + (k, shape[-1])
    q, r = np.array(q), np.array(r)
    np.testing.assert_allclose(q @ r, a, **tol(dt))
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q,
                               np.broadcast_to(np.eye(k), shape[:-2] + (k, k)), **tol(dt))
    assert np.all(np.tril(r, -1) == 0)
    # NumPy's Householder QR too: the same factors
    nq, nr = np.linalg.qr(a)
    np.testing.assert_allclose(np.abs(r), np.abs(nr), **tol(dt))


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 6)])
@pytest.mark.parametrize("dt", DTYPES)
def test_svd(shape, dt):
    a = rand(shape, dt)
    u, s, vt = mx.linalg.svd(arr(a))
    m, n = shape[-2:]
    k = min(m, n)
    assert u.shape == shape[:-2] + (m, m) and vt.shape == shape[:-2] + (n, n)
    assert s.shape == shape[:-2] + (k,)
    u, s, vt = np.array(u), np.array(s), np.array(vt)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), **tol(dt))
    rec = (u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :]
    np.testing.assert_allclose(rec, a, **tol(dt))
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u,
                               np.broadcast_to(np.eye(m), u.shape), **tol(dt))
    s_only = mx.linalg.svd(arr(a), compute_uv=False)
    assert isinstance(s_only, mx.array)
    np.testing.assert_allclose(np.array(s_only), s, **tol(dt))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(shape, dt, upper):
    a = spd(shape, dt)
    c = np.array(mx.linalg.cholesky(arr(a), upper=upper))
    want = np.linalg.cholesky(a)
    if upper:
        want = np.swapaxes(want, -1, -2)
        np.testing.assert_allclose(np.swapaxes(c, -1, -2) @ c, a, **tol(dt))
    else:
        np.testing.assert_allclose(c @ np.swapaxes(c, -1, -2), a, **tol(dt))
    np.testing.assert_allclose(c, want, **tol(dt))
    # only the named triangle is read
    junk = np.triu(np.full(shape, 7.0, dt), 1) if not upper else np.tril(np.full(shape, 7.0, dt), -1)
    masked = np.tril(a) if not upper else np.triu(a)
    np.testing.assert_allclose(np.array(mx.linalg.cholesky(arr(masked + junk), upper=upper)), c, **tol(dt))
    inv = np.array(mx.linalg.cholesky_inv(arr(c), upper=upper))
    np.testing.assert_allclose(inv, np.linalg.inv(a), **tol(dt))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_tri_inv_and_solve_triangular(dt, upper):
    a = rand((3, 4, 4), dt) + 4 * np.eye(4, dtype=dt)
    t = np.triu(a) if upper else np.tril(a)
    x = np.array(mx.linalg.tri_inv(arr(a), upper=upper))
    np.testing.assert_allclose(x, np.linalg.inv(t), **tol(dt))
    assert np.all((np.tril(x, -1) if upper else np.triu(x, 1)) == 0)
    b = rand((3, 4, 2), dt)
    y = np.array(mx.linalg.solve_triangular(arr(a), arr(b), upper=upper))
    np.testing.assert_allclose(y, np.linalg.solve(t, b), **tol(dt))
    v = rand((4,), dt)
    y = np.array(mx.linalg.solve_triangular(arr(a[0]), arr(v), upper=upper))
    np.testing.assert_allclose(y, np.linalg.solve(t[0], v), **tol(dt))


@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 6, 6)])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(shape, dt, uplo):
    a = rand(shape, dt)
    a = a + np.swapaxes(a, -1, -2)
    w, v = mx.linalg.eigh(arr(a), UPLO=uplo)
    w, v = np.array(w), np.array(v)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a, UPLO=uplo), **tol(dt))
    np.testing.assert_allclose((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), a, **tol(dt))
    np.testing.assert_allclose(np.array(mx.linalg.eigvalsh(arr(a), UPLO=uplo)), w, **tol(dt))
    # only the named triangle is read
    half = np.tril(a) if uplo == "L" else np.triu(a)
    np.testing.assert_allclose(np.array(mx.linalg.eigvalsh(arr(half), UPLO=uplo)), w, **tol(dt))


@pytest.mark.parametrize("dt", DTYPES)
def test_eig(dt):
    a = rand((3, 5, 5), dt)
    w, v = mx.linalg.eig(arr(a))
    assert w.dtype == mx.complex64 and v.dtype == mx.complex64
    w, v = np.array(w), np.array(v)
    np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(a)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, rtol=1e-5)
    np.testing.assert_allclose(np.array(mx.linalg.eigvals(arr(a))), w, rtol=1e-5, atol=1e-5)
    rot = np.array([[0, -1], [1, 0]], dt)  # eigenvalues +-i
    np.testing.assert_allclose(np.sort_complex(np.array(mx.linalg.eigvals(arr(rot)))), [-1j, 1j], atol=1e-6)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 4, 4)])
@pytest.mark.parametrize("dt", DTYPES)
def test_lu(shape, dt):
    a = rand(shape, dt)
    p, l, u = mx.linalg.lu(arr(a))
    assert p.dtype == mx.uint32
    p, l, u = np.array(p), np.array(l), np.array(u)
    k = min(shape[-2:])
    assert l.shape == shape[:-1] + (k,) and u.shape == shape[:-2] + (k, shape[-1])
    rec = np.take_along_axis(l, p[..., None].astype(np.int64), axis=-2) @ u
    np.testing.assert_allclose(rec, a, **tol(dt))
    assert np.all(np.abs(np.tril(l, -1)) <= 1 + 1e-6)  # partial pivoting
    lu, piv = mx.linalg.lu_factor(arr(a))
    assert piv.dtype == mx.uint32 and piv.shape == shape[:-2] + (k,)
    lu = np.array(lu)
    np.testing.assert_allclose(np.triu(lu)[..., :k, :], u, **tol(dt))


@pytest.mark.parametrize("dt", DTYPES)
def test_solve(dt):
    a = rand((2, 5, 5), dt) + 3 * np.eye(5, dtype=dt)
    b = rand((2, 5, 3), dt)
    np.testing.assert_allclose(np.array(mx.linalg.solve(arr(a), arr(b))), np.linalg.solve(a, b), **tol(dt))
    v = rand((5,), dt)
    x = mx.linalg.solve(arr(a[0]), arr(v))
    assert x.shape == (5,)
    np.testing.assert_allclose(np.array(x), np.linalg.solve(a[0], v), **tol(dt))
    # batch axes broadcast
    bb = rand((4, 1, 5, 2), dt)
    np.testing.assert_allclose(np.array(mx.linalg.solve(arr(a), arr(bb))), np.linalg.solve(a, bb), **tol(dt))
    # integer b promotes with a
    x = mx.linalg.solve(arr(a[0]), mx.array([1, 2, 3, 4, 5]))
    np.testing.assert_allclose(np.array(x), np.linalg.solve(a[0], np.arange(1, 6)), **tol(dt))


@pytest.mark.parametrize("dt", DTYPES)
def test_det_slogdet(dt):
    a = rand((3, 4, 4), dt)
    np.testing.assert_allclose(np.array(mx.linalg.det(arr(a))), np.linalg.det(a), **tol(dt))
    s, l = mx.linalg.slogdet(arr(a))
    ws, wl = np.linalg.slogdet(a)
    np.testing.assert_array_equal(np.array(s), ws)
    np.testing.assert_allclose(np.array(l), wl, **tol(dt))
    s, l = mx.linalg.slogdet(mx.zeros((2, 2)))
    assert s.item() == 0 and l.item() == -np.inf
    assert mx.linalg.det(mx.array([[1, 2], [3, 4]])).dtype == mx.float32  # ints: float32
    assert mx.linalg.det(mx.zeros((0, 0))).item() == 1


def test_pinv():
    for shape in [(4, 4), (5, 3), (3, 5), (2, 3, 4)]:
        a = rand(shape, np.float64)
        np.testing.assert_allclose(np.array(mx.linalg.pinv(arr(a))), np.linalg.pinv(a), rtol=1e-8, atol=1e-8)
    rank1 = np.array([[1.0, 2], [2, 4]], np.float32)
    np.testing.assert_allclose(np.array(mx.linalg.pinv(mx.array(rank1))), np.linalg.pinv(rank1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.array(mx.linalg.pinv(mx.zeros((2, 3)))), np.zeros((3, 2)))


def test_cross():
    a, b = rand((4, 3)), rand((4, 3))
    np.testing.assert_allclose(np.array(mx.linalg.cross(mx.array(a), mx.array(b))), np.cross(a, b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(mx.linalg.cross(mx.array(a.T), mx.array(b.T), axis=0)), np.cross(a, b).T, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.array(mx.linalg.cross(mx.array([1.0, 0]), mx.array([0.0, 1]))), [0, 0, 1])
    assert mx.linalg.cross(mx.array([1, 2, 3]), mx.array([4, 5, 6])).dtype == mx.int32
    with pytest.raises(ValueError, match=r"\[linalg::cross\].*size 2 or 3"):
        mx.linalg.cross(mx.ones((4,)), mx.ones((4,)))


NORM_VEC = [None, np.inf, -np.inf, 0, 1, 2, 3, 0.5, -1]
NORM_MAT = [None, "fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2]


@pytest.mark.parametrize("ord", NORM_VEC)
def test_norm_vector(ord):
    x = rand((3, 5))
    x[0, 1] = 0
    for axis in [0, 1, -1]:
        for keep in [False, True]:
            got = mx.linalg.norm(mx.array(x), ord=ord, axis=axis, keepdims=keep)
            np.testing.assert_allclose(np.array(got), np.linalg.norm(x, ord=ord, axis=axis, keepdims=keep), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(mx.linalg.norm(mx.array(x[0]), ord=ord)), np.linalg.norm(x[0], ord=ord), rtol=1e-5)


@pytest.mark.parametrize("ord", NORM_MAT)
def test_norm_matrix(ord):
    x = rand((2, 3, 4))
    for axes in [(0, 1), (1, 2), (2, 0), (-1, -2)]:
        for keep in [False, True]:
            got = mx.linalg.norm(mx.array(x), ord=ord, axis=list(axes), keepdims=keep)
            want = np.linalg.norm(x, ord=ord, axis=axes, keepdims=keep)
            assert got.shape == want.shape
            np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array(mx.linalg.norm(mx.array(x[0]), ord=ord)), np.linalg.norm(x[0], ord=ord), rtol=1e-5)


def test_norm_defaults_and_errors():
    x = rand((2, 3, 4))
    np.testing.assert_allclose(np.array(mx.linalg.norm(mx.array(x))), np.linalg.norm(x.ravel()), rtol=1e-5)
    assert mx.linalg.norm(mx.array(x), keepdims=True).shape == (1, 1, 1)
    assert mx.linalg.norm(mx.array([3, 4])).item() == 5
    with pytest.raises(ValueError, match="too many axes"):
        mx.linalg.norm(mx.array(x), ord=2)
    with pytest.raises(ValueError, match="Invalid ord 3"):
        mx.linalg.norm(mx.array(x[0]), ord=3)
    with pytest.raises(ValueError, match="Invalid ord value 'foo'"):
        mx.linalg.norm(mx.array(x[0]), ord="foo")
    with pytest.raises(ValueError, match="'nuc' only supported for matrices"):
        mx.linalg.norm(mx.array(x[0, 0]), ord="nuc")


# ---------------- special inputs and errors ----------------
def test_singular_and_not_positive_definite():
    with pytest.raises(RuntimeError, match=r"\[linalg::inv\] Singular"):
        mx.eval(mx.linalg.inv(mx.zeros((3, 3))))
    with pytest.raises(RuntimeError, match=r"Singular"):
        mx.eval(mx.linalg.solve(mx.zeros((2, 2)), mx.ones((2,))))
    with pytest.raises(RuntimeError, match=r"Singular"):
        mx.eval(mx.linalg.tri_inv(mx.array([[0.0, 2], [3, 4]])))
    with pytest.raises(RuntimeError, match=r"Singular"):
        mx.eval(mx.linalg.solve_triangular(mx.array([[0.0, 0], [3, 4]]), mx.ones((2,))))
    with pytest.raises(RuntimeError, match=r"not positive definite"):
        mx.eval(mx.linalg.cholesky(-mx.eye(3)))
    # singular matrices factor fine where NumPy's do
    p, l, u = mx.linalg.lu(mx.zeros((3, 3)))
    assert np.all(np.array(u) == 0)
    assert mx.linalg.det(mx.array([[1.0, 2], [2, 4]])).item() == 0
    np.testing.assert_allclose(np.array(mx.linalg.svd(mx.ones((3, 3)), compute_uv=False)), [3, 0, 0], atol=1e-6)


def test_empty_matrices():
    u, s, vt = mx.linalg.svd(mx.zeros((0, 3)))
    assert u.shape == (0, 0) and s.shape == (0,)
    np.testing.assert_array_equal(np.array(vt), np.eye(3))
    u, s, vt = mx.linalg.svd(mx.zeros((2, 2, 0)))
    np.testing.assert_array_equal(np.array(u), np.broadcast_to(np.eye(2), (2, 2, 2)))
    p, l, u = mx.linalg.lu(mx.zeros((3, 0)))
    np.testing.assert_array_equal(np.array(p), [0, 1, 2])
    assert l.shape == (3, 0) and u.shape == (0, 0)
    q, r = mx.linalg.qr(mx.zeros((3, 0)))
    assert q.shape == (3, 0) and r.shape == (0, 0)
    assert mx.linalg.inv(mx.zeros((0, 0))).shape == (0, 0)
    assert mx.linalg.solve(mx.zeros((0, 0)), mx.zeros((0,))).shape == (0,)
    assert mx.linalg.eigvalsh(mx.zeros((2, 0, 0))).shape == (2, 0)


def test_non_finite_inputs_give_nan():
    a = np.eye(3, dtype=np.float32)
    a[1, 1] = np.nan
    for out in [mx.linalg.svd(mx.array(a), compute_uv=False), mx.linalg.eigvalsh(mx.array(a)),
                mx.linalg.eigvals(mx.array(a))]:
        assert np.all(np.isnan(np.array(out)))
    u, s, vt = mx.linalg.svd(mx.array(a))
    assert np.all(np.isnan(np.array(u))) and np.all(np.isnan(np.array(vt)))


def test_ill_conditioned():
    n = 8
    hilbert = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1)
    cond = np.linalg.cond(hilbert)  # ~1.5e10
    x = np.array(mx.linalg.inv(arr(hilbert)))
    # backward error of an inverse: |A X - I| ~ eps cond
    assert np.abs(hilbert @ x - np.eye(n)).max() < 1e-15 * cond * 10
    b = np.ones(n)
    y = np.array(mx.linalg.solve(arr(hilbert), arr(b)))
    # backward stable: residual ~ eps |A| |y|, as NumPy's
    bound = 1e-15 * n * np.linalg.norm(hilbert) * np.linalg.norm(y)
    assert np.linalg.norm(hilbert @ y - b) < bound
    np.testing.assert_allclose(y, np.linalg.solve(hilbert, b), rtol=1e-4)
    s = np.array(mx.linalg.svd(arr(hilbert), compute_uv=False))
    np.testing.assert_allclose(s, np.linalg.svd(hilbert, compute_uv=False), rtol=1e-6, atol=1e-16)
    w = np.array(mx.linalg.eigvalsh(arr(hilbert)))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(hilbert), rtol=1e-5, atol=1e-15)


@pytest.mark.parametrize("name", ["inv", "cholesky", "qr", "pinv", "tri_inv", "lu", "lu_factor"])
def test_dtype_errors(name):
    fn = getattr(mx.linalg, name)
    for dt in [mx.float16, mx.int32]:
        with pytest.raises(ValueError, match=rf"\[linalg::{name}\] Arrays must have type float32 or float64"):
            fn(mx.eye(3).astype(dt))
    with pytest.raises(ValueError, match=r"must have >= 2 dimensions"):
        fn(mx.ones((3,)))


def test_shape_errors():
    for fn in [mx.linalg.inv, mx.linalg.cholesky, mx.linalg.eigh, mx.linalg.eigvals]:
        with pytest.raises(ValueError, match="square"):
            fn(mx.ones((3, 4)))
    with pytest.raises(ValueError, match=r"\[linalg::svd\].*float32, float64 or complex64"):
        mx.linalg.svd(mx.ones((3, 3), dtype=mx.int32))
    with pytest.raises(ValueError, match="must promote to float32 or float64"):
        mx.linalg.solve(mx.eye(2).astype(mx.float16), mx.ones((2,), dtype=mx.float16))
    with pytest.raises(ValueError, match=r"\[linalg::solve\]"):
        mx.linalg.solve(mx.eye(3), mx.ones((4,)))
    with pytest.raises(ValueError, match="UPLO"):
        mx.linalg.eigh(mx.eye(2), UPLO="X")


def test_signatures():
    import inspect

    def params(fn):
        return [(p.name, p.default, p.kind) for p in inspect.signature(fn).parameters.values()]
    P = inspect.Parameter
    assert params(mx.linalg.svd)[:2] == [("a", P.empty, P.POSITIONAL_OR_KEYWORD),
                                         ("compute_uv", True, P.POSITIONAL_OR_KEYWORD)]
    assert params(mx.linalg.svd)[2] == ("stream", None, P.KEYWORD_ONLY)
    assert [p[0] for p in params(mx.linalg.norm)] == ["a", "ord", "axis", "keepdims", "stream"]
    assert params(mx.linalg.eigh)[1] == ("UPLO", "L", P.POSITIONAL_OR_KEYWORD)
    assert params(mx.linalg.solve_triangular)[2] == ("upper", False, P.KEYWORD_ONLY)
    import cmx.core.linalg as la  # importable as a module

    assert la.inv is mx.linalg.inv
    # every function is declared in python/cmx/core.pyi
    import ast
    import os

    import cmx

    stub = open(os.path.join(os.path.dirname(cmx.__file__), "core.pyi")).read()
    for cls_name, mod in [("_LinalgModule", mx.linalg), ("_FFTModule", mx.fft)]:
        cls = next(n for n in ast.parse(stub).body if isinstance(n, ast.ClassDef) and n.name == cls_name)
        declared = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
        public = {n for n in dir(mod) if not n.startswith("_")}
        assert public == declared, (cls_name, public ^ declared)
        for name in public:
            assert getattr(mod, name).__doc__


# ---------------- gradients ----------------
def num_grad(f, x, eps=1e-6):
    """Central differences of scalar f (numpy float64 in, float out)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def check_grad(fn, x, rtol=1e-5, atol=1e-6):
    """grad (vjp), jvp and the finite differences of scalar fn agree."""
    def f_np(v):
        return fn(arr(v)).item()

    want = num_grad(f_np, x)
    got = np.array(mx.grad(fn)(arr(x)))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    t = RNG.standard_normal(x.shape)
    _, (jv,) = mx.jvp(fn, [arr(x)], [arr(t)])
    np.testing.assert_allclose(jv.item(), np.sum(want * t), rtol=rtol, atol=atol * x.size)


W = {k: RNG.standard_normal((4, 4)) for k in range(6)}


def wsum(x, k):
    """A fixed random weighting of (matrix or vector) x, summed."""
    w = W[k][: x.shape[-2], : x.shape[-1]] if x.ndim >= 2 else W[k][0, : x.shape[-1]]
    return mx.sum(x * arr(w))


def sym(x):
    return (x + mx.swapaxes(x, -1, -2)) / 2


A4 = RNG.standard_normal((4, 4)) + 4 * np.eye(4)


def test_grad_inv_solve():
    check_grad(lambda a: wsum(mx.linalg.inv(a), 0), A4)
    b = RNG.standard_normal((4, 3))
    check_grad(lambda a: wsum(mx.linalg.solve(a, arr(b)), 1), A4)
    check_grad(lambda b_: wsum(mx.linalg.solve(arr(A4), b_), 1), b)
    check_grad(lambda a: wsum(mx.linalg.solve(a, arr(b[:, 0])), 2), A4)


@pytest.mark.parametrize("upper", [False, True])
def test_grad_triangular(upper):
    b = RNG.standard_normal((4, 2))
    check_grad(lambda a: wsum(mx.linalg.tri_inv(a, upper=upper), 0), A4)
    check_grad(lambda a: wsum(mx.linalg.solve_triangular(a, arr(b), upper=upper), 1), A4)
    check_grad(lambda b_: wsum(mx.linalg.solve_triangular(arr(A4), b_, upper=upper), 1), b)


@pytest.mark.parametrize("upper", [False, True])
def test_grad_cholesky(upper):
    x = RNG.standard_normal((4, 4))
    base = arr(x @ x.T + 4 * np.eye(4))
    check_grad(lambda a: wsum(mx.linalg.cholesky(base + sym(a), upper=upper), 0), 0.1 * x)
    check_grad(lambda l: wsum(mx.linalg.cholesky_inv(l, upper=upper), 2), np.tril(A4) if not upper else np.triu(A4))


def test_grad_qr():
    for shape in [(4, 4), (4, 3)]:
        a = RNG.standard_normal(shape)
        check_grad(lambda a_: wsum(mx.linalg.qr(a_)[0], 0) + wsum(mx.linalg.qr(a_)[1], 1), a)
    with pytest.raises(Exception, match="at least as many rows"):
        mx.grad(lambda a_: mx.sum(mx.linalg.qr(a_)[0]))(mx.ones((2, 3)))


def test_grad_eigh():
    x = RNG.standard_normal((4, 4))
    a0 = x + x.T
    # eigenvectors enter through sign-invariant V diag(c) V^T
    c = arr(np.array([1.0, -2.0, 0.5, 3.0]))

    def f(a):
        w, v = mx.linalg.eigh(sym(a))
        return wsum((v * c) @ mx.swapaxes(v, -1, -2), 0) + mx.sum(w * mx.arange(4))
    check_grad(f, a0)
    check_grad(lambda a: mx.sum(mx.linalg.eigvalsh(sym(a)) * c), a0)


def test_grad_svd():
    a = RNG.standard_normal((4, 4))
    c = arr(np.array([1.0, -2.0, 0.5, 3.0]))

    def f(a_):
        u, s, vt = mx.linalg.svd(a_)
        return wsum((u * c) @ mx.swapaxes(u, -1, -2), 0) + wsum(mx.swapaxes(vt, -1, -2) * c @ vt, 1) + mx.sum(s * c)
    check_grad(f, a)
    for shape in [(4, 3), (3, 4)]:
        r = RNG.standard_normal(shape)
        check_grad(lambda a_: mx.sum(mx.linalg.svd(a_, compute_uv=False) * c[: min(shape)]), r)
        check_grad(lambda a_: mx.linalg.norm(a_, ord="nuc"), r)
    with pytest.raises(Exception, match="non-square"):
        mx.grad(lambda a_: mx.sum(mx.linalg.svd(a_)[0]))(mx.ones((2, 3)))


def test_grad_lu_det_pinv():
    check_grad(lambda a: wsum(mx.linalg.lu(a)[1], 0) + wsum(mx.linalg.lu(a)[2], 1), A4)
    check_grad(lambda a: wsum(mx.linalg.lu_factor(a)[0], 2), A4)
    check_grad(mx.linalg.det, A4)
    check_grad(lambda a: mx.linalg.slogdet(a)[1], A4)
    check_grad(lambda a: wsum(mx.linalg.pinv(a), 3), A4)
    check_grad(lambda a: mx.linalg.norm(a, ord=2), A4)


def test_multivariate_normal_differentiable():
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    key = mx.random.key(3)

    def f(c):
        return mx.sum(mx.random.multivariate_normal(mx.zeros((2,)), c, shape=(5,), key=key))
    g = mx.grad(f)(mx.array(cov, dtype=mx.float32))
    assert g.shape == (2, 2) and np.all(np.isfinite(np.array(g)))


def test_eig_not_differentiable():
    with pytest.raises(Exception, match="not differentiable"):
        mx.grad(lambda a: mx.sum(mx.abs(mx.linalg.eigvals(a))))(mx.eye(2))


@pytest.mark.parametrize("name", ["inv", "cholesky", "qr", "svd", "eigh", "lu", "det", "pinv"])
def test_vmap(name):
    fn = getattr(mx.linalg, name)
    x = spd((3, 4, 4), np.float32).transpose(1, 0, 2)  # batch on axis 1
    out = mx.vmap(fn, in_axes=1)(mx.array(x))
    ref = [fn(mx.array(x[:, i])) for i in range(3)]
    outs = out if isinstance(out, (list, tuple)) else [out]
    refs = [r if isinstance(r, (list, tuple)) else [r] for r in ref]
    for k, o in enumerate(outs):
        want = np.stack([np.array(r[k]) for r in refs])
        np.testing.assert_allclose(np.array(o), want, rtol=1e-4, atol=1e-4)


def test_vmap_solve():
    a = RNG.standard_normal((3, 4, 4)).astype(np.float32) + 4 * np.eye(4, dtype=np.float32)
    b = RNG.standard_normal((4, 3)).astype(np.float32)
    got = mx.vmap(mx.linalg.solve, in_axes=(0, 1))(mx.array(a), mx.array(b))
    np.testing.assert_allclose(np.array(got), np.stack([np.linalg.solve(a[i], b[:, i]) for i in range(3)]), rtol=1e-4, atol=1e-5)
    got = mx.vmap(lambda b_: mx.linalg.solve_triangular(mx.array(a[0]), b_, upper=True))(mx.array(b.T))
    np.testing.assert_allclose(np.array(got), np.stack([np.linalg.solve(np.triu(a[0]), b[:, i]) for i in range(3)]), rtol=1e-4, atol=1e-5)
