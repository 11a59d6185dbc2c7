"""The axpby extension: values against alpha * x + beta * y, gradients
against finite differences, vmap against a loop, and the same under
compile; on the CPU, and on the GPU where there is one."""

import numpy as np
import pytest

import cmx.core as mx
from axpby import axpby


@pytest.fixture(params=["cpu", "gpu"])
def device(request):
    dev = mx.cpu if request.param == "cpu" else mx.gpu
    if not mx.is_available(dev):
        pytest.skip("no GPU on this machine")
    return dev


def rand(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed + len(shape)).standard_normal(
        shape).astype(dtype)


def test_guide_usage(device):
    a = mx.ones((3, 4))
    b = mx.ones((3, 4))
    c = axpby(a, b, 4.0, 2.0, stream=device)
    assert c.shape == (3, 4)
    assert c.dtype == mx.float32
    assert mx.all(c == 6.0).item()


@pytest.mark.parametrize("xs,ys", [((5, 7), (5, 7)), ((4, 1, 3), (6, 1)),
                                   ((), (3,)), ((1000, 333), (333,))])
def test_values_broadcast(device, xs, ys):
    x, y = rand(*xs), rand(*ys, seed=1)
    z = axpby(mx.array(x), mx.array(y), 0.5, -3.0, stream=device)
    np.testing.assert_allclose(np.array(z), 0.5 * x - 3.0 * y, rtol=1e-6,
                               atol=1e-6)


def test_strided_inputs(device):
    x, y = rand(64, 48), rand(48, 64, seed=1)
    z = axpby(mx.array(x)[::2, 1:], mx.array(y).T[::2, 1:], 2.0, 1.5,
              stream=device)
    np.testing.assert_allclose(np.array(z), 2 * x[::2, 1:] +
                               1.5 * y.T[::2, 1:], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dt,tol", [(mx.float16, 1e-2), (mx.bfloat16, 5e-2),
                                    (mx.float64, 1e-12)])
def test_dtypes(device, dt, tol):
    x, y = rand(300, dtype=np.float64), rand(300, dtype=np.float64, seed=1)
    z = axpby(mx.array(x).astype(dt), mx.array(y).astype(dt), 1.25, 0.5,
              stream=device)
    assert z.dtype == dt
    ref = 1.25 * np.array(mx.array(x).astype(dt).astype(mx.float64)) + \
        0.5 * np.array(mx.array(y).astype(dt).astype(mx.float64))
    np.testing.assert_allclose(np.array(z.astype(mx.float64)), ref,
                               rtol=tol, atol=tol)


# The GPU kernel's paths: 16-byte vectors and a scalar tail (sizes not a
# multiple of the vector), more elements than the grid has threads (the
# grid-stride loop), an input 4 bytes off the vector alignment (the
# scalar loop alone: x[1:] is contiguous, its data one element in).
@pytest.mark.parametrize("n", [1, 3, 8, 1003, (1 << 21) + 5])
@pytest.mark.parametrize("dt", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("offset", [0, 1])
def test_contiguous_paths(device, n, dt, offset):
    x, y = rand(n + offset, dtype=dt), rand(n, dtype=dt, seed=1)
    z = axpby(mx.array(x)[offset:], mx.array(y), 1.5, -2.0, stream=device)
    ref = 1.5 * x[offset:].astype(np.float64) - 2.0 * y.astype(np.float64)
    tol = 1e-2 if dt == np.float16 else 1e-6
    np.testing.assert_allclose(np.array(z).astype(np.float64), ref,
                               rtol=tol, atol=tol)


needs_nvrtc = pytest.mark.skipif(not mx._cuda_nvrtc_available(),
                                 reason="NVRTC not available")


@needs_nvrtc
def test_cuda_source_vector_accesses():
    """The CUDA program compiles (sm_90), and each contiguous kernel loads
    and stores 16 bytes at a time."""
    import re

    from axpby import _ext
    src = _ext._cuda_source()
    mx._cuda_compile_check("axpby", src, 90)
    ptx = mx._cuda_compile("axpby", src, 90, True).decode()
    entries = {e.split("(")[0].strip(): e
               for e in re.split(r"\.entry ", ptx)[1:]}
    for dt in ("float32", "float16", "bfloat16", "float64"):
        body = entries["axpby_contig_" + dt]
        for op in ("ld", "st"):
            assert re.search(op + r"\.global\.(v4\.(f32|u32|b32)|v2\."
                             r"(f64|u64|b64))", body), (dt, op)
        assert "axpby_general_" + dt in entries


def test_integers_promote_to_float():
    z = axpby(mx.array([1, 2, 3]), mx.array([True, False, True]), 2.0, 1.0)
    assert z.dtype == mx.float32
    assert z.tolist() == [3.0, 4.0, 7.0]


def test_complex_on_cpu():
    x = mx.array([1 + 2j, 3 - 1j])
    z = axpby(x, x, 2.0, 1.0, stream=mx.cpu)
    assert z.dtype == mx.complex64
    np.testing.assert_allclose(np.array(z), 3 * np.array([1 + 2j, 3 - 1j]))


def test_errors():
    with pytest.raises(ValueError, match="broadcast"):
        axpby(mx.zeros((2, 3)), mx.zeros((4,)), 1.0, 1.0)
    with pytest.raises(TypeError):
        axpby(mx.zeros(2), "y", 1.0, 1.0)
    with pytest.raises(TypeError):
        axpby(mx.zeros(2), mx.zeros(2), 1.0, 1.0, stream="cpu")


def loss(x, y):
    return mx.sum(mx.sin(axpby(x, y, 0.7, -1.3)) * x)


def finite_diff(f, args, i, dtype, eps):
    base = [np.array(a, dtype=np.float64) for a in args]
    g = np.zeros_like(base[i])
    for k in range(g.size):
        for sgn in (1, -1):
            b = [a.copy() for a in base]
            b[i].flat[k] += sgn * eps
            g.flat[k] += sgn * f(*[mx.array(a, dtype=dtype)
                                   for a in b]).item()
    return g / (2 * eps)


# float64 on the CPU (tight checks); the GPU in float32.
def precision(device):
    if device == mx.cpu:
        return mx.float64, 1e-6, 1e-5
    return mx.float32, 1e-2, 2e-2


def test_grad_against_finite_differences(device):
    dt, eps, tol = precision(device)
    with mx.stream(device):
        x = mx.array(rand(3, 4), dtype=dt)
        y = mx.array(rand(4, seed=1), dtype=dt)
        gx, gy = mx.grad(loss, argnums=(0, 1))(x, y)
        assert gx.dtype == dt
        np.testing.assert_allclose(
            np.array(gx), finite_diff(loss, (x, y), 0, dt, eps), rtol=tol,
            atol=tol)
        np.testing.assert_allclose(
            np.array(gy), finite_diff(loss, (x, y), 1, dt, eps), rtol=tol,
            atol=tol)


def test_jvp_matches_vjp(device):
    with mx.stream(device):
        x, y = mx.array(rand(5)), mx.array(rand(5, seed=1))
        tx, ty = mx.array(rand(5, seed=2)), mx.array(rand(5, seed=3))
        (out,), (t,) = mx.jvp(lambda a, b: axpby(a, b, 2.0, 3.0), [x, y],
                              [tx, ty])
        np.testing.assert_allclose(np.array(t), 2 * np.array(tx) +
                                   3 * np.array(ty), rtol=1e-6)
        (_,), (t1,) = mx.jvp(lambda a: axpby(a, y, 2.0, 3.0), [x], [tx])
        np.testing.assert_allclose(np.array(t1), 2 * np.array(tx), rtol=1e-6)


def test_second_order(device):
    dt, eps, tol = precision(device)
    with mx.stream(device):
        x = mx.array(rand(4), dtype=dt)
        y = mx.array(rand(4, seed=1), dtype=dt)

        def gsum(a):
            return mx.sum(mx.grad(loss)(a, y))
        g2 = mx.grad(gsum)(x)
        np.testing.assert_allclose(
            np.array(g2), finite_diff(gsum, (x,), 0, dt, eps), rtol=10 * tol,
            atol=10 * tol)


@pytest.mark.parametrize("axes", [(0, 0), (1, None), (None, 0), (0, 1)])
def test_vmap_against_loop(device, axes):
    with mx.stream(device):
        x, y = mx.array(rand(3, 3, 5)), mx.array(rand(3, 3, 5, seed=1))
        f = mx.vmap(lambda a, b: axpby(a, b, 1.5, -0.5), in_axes=axes)
        got = f(x if axes[0] is not None else x[0],
                y if axes[1] is not None else y[0])

        def take(a, ax, i):
            return a[0] if ax is None else (a[i] if ax == 0 else a[:, i])
        rows = [axpby(take(x, axes[0], i), take(y, axes[1], i), 1.5, -0.5)
                for i in range(3)]
        np.testing.assert_allclose(np.array(got), np.array(mx.stack(rows)),
                                   rtol=1e-6)


def test_compile(device):
    with mx.stream(device):
        def f(x, y):
            return axpby(x, y, 4.0, 2.0) * 2 + 1

        cf = mx.compile(f)
        x, y = mx.array(rand(64)), mx.array(rand(64, seed=1))
        np.testing.assert_allclose(np.array(cf(x, y)), np.array(f(x, y)),
                                   rtol=1e-6)
        # Again with new values (the trace is reused), and grad of it.
        x2 = mx.array(rand(64, seed=5))
        np.testing.assert_allclose(np.array(cf(x2, y)),
                                   8 * np.array(x2) + 4 * np.array(y) + 1,
                                   rtol=1e-5, atol=1e-5)
        g = mx.grad(lambda a: mx.sum(cf(a, y)))(x)
        np.testing.assert_allclose(np.array(g), np.full(64, 8.0))


def test_large_threaded_cpu():
    x, y = rand(1024, 1024), rand(1024, 1024, seed=1)
    z = axpby(mx.array(x), mx.array(y), 4.0, 2.0, stream=mx.cpu)
    np.testing.assert_allclose(np.array(z), 4 * x + 2 * y, rtol=1e-6,
                               atol=1e-5)
