"""Creation, random and join ops on every device: on the GPU each result
must equal the CPU's exactly (same dtype, shape and bits) - ranges, fills,
triangles, RandomBits and the exact samplers, concatenate/stack/pad,
slice updates (x[...] = v, x.at[...]) and dtype views - for every dtype,
empty and size-1 dims, odd sizes and strided inputs. Float samplers that
go through transcendental functions (normal, gumbel ...) agree within a
small tolerance."""
import numpy as np
import pytest

import cmx.core as mx

pytestmark = pytest.mark.usefixtures("on_device")

DTYPES = [mx.bool_, mx.uint8, mx.uint16, mx.uint32, mx.uint64, mx.int8,
          mx.int16, mx.int32, mx.int64, mx.float16, mx.bfloat16, mx.float32,
          mx.float64, mx.complex64]
# One dtype of each element size (1, 2, 4, 8 bytes) and complex64.
SIZES = [mx.bool_, mx.int8, mx.float16, mx.bfloat16, mx.int32, mx.float32,
         mx.float64, mx.int64, mx.complex64]


def _bits(a):
    """a's values as raw bytes (row-major), with dtype and shape."""
    mx.eval(a)
    if a.dtype == mx.bfloat16:
        a = a.view(mx.uint16)
    return a.dtype, a.shape, np.array(a).tobytes()


def same(device, fn):
    """fn() on device; on the GPU its result(s) must equal the CPU's bit
    for bit."""
    with mx.stream(device):
        got = fn()
    if device == mx.cpu:
        return got
    with mx.stream(mx.cpu):
        want = fn()
    gots = got if isinstance(got, (list, tuple)) else [got]
    wants = want if isinstance(want, (list, tuple)) else [want]
    for g, w in zip(gots, wants):
        assert _bits(g) == _bits(w), "the GPU's result differs from the CPU's"
    return got


def values(shape, dtype, seed=0):
    """Host values of dtype (shape), varied, finite."""
    rng = np.random.default_rng(seed)
    x = np.asarray(rng.integers(-100, 100, size=shape), np.float64) / 4
    if dtype == mx.bool_:
        return mx.array(x > 0)
    if dtype == mx.complex64:
        flip = x.ravel()[::-1].reshape(x.shape)
        return mx.array((x + 1j * flip).astype(np.complex64))
    return mx.array(x).astype(dtype)


# ---------------- creation ----------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("args", [(10,), (-3.5, 7.25, 0.37), (5, -5, -0.3),
                                  (0, 100003), (1e9, 1e9 + 257, 1.1), (0,)])
def test_arange(device, dtype, args):
    if dtype in (mx.bool_, mx.complex64):
        pytest.skip("arange takes no bool or complex dtype")
    same(device, lambda: mx.arange(*args, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("args", [(-1, 3, 1001), (0, 1, 1), (0, 1, 0),
                                  (5, -7, 77), (1e-3, 1e5, 65537)])
def test_linspace(device, dtype, args):
    if dtype == mx.complex64:
        pytest.skip("linspace takes no complex dtype")
    same(device, lambda: mx.linspace(*args, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_eye_tri_tril_triu(device, dtype):
    for n, m in [(7, 5), (1, 1), (1, 3), (4, 1), (33, 65)]:
        for k in [-40, -1, 0, 2, 70]:
            same(device, lambda: mx.eye(n, m, k, dtype=dtype))
            same(device, lambda: mx.tri(n, m, k, dtype=dtype))
    x = values((5, 6, 3), dtype).transpose(2, 1, 0)
    for k in [-9, -2, 0, 1, 9]:
        same(device, lambda: mx.tril(x, k))
        same(device, lambda: mx.triu(x, k))
    same(device, lambda: mx.tril(values((2, 0, 4), dtype)))
    same(device, lambda: mx.identity(17, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_fills(device, dtype):
    for shape in [(3, 41, 37), (1,), (2, 0, 5), (1000, 37)]:
        same(device, lambda: mx.zeros(shape, dtype=dtype))
        same(device, lambda: mx.ones(shape, dtype=dtype))
        same(device, lambda: mx.full(shape, values((), dtype), dtype=dtype))
    same(device, lambda: mx.full((4, 37), values((37,), dtype)))
    x = values((3, 5), dtype)
    same(device, lambda: [mx.zeros_like(x), mx.ones_like(x), mx.full_like(x, 3)])


# ---------------- random ----------------
@pytest.mark.parametrize("shape", [(0,), (1,), (3,), (5,), (7,), (2, 3, 5),
                                   (1001,), ((1 << 20) + 3,)])
@pytest.mark.parametrize("width", [1, 2, 4])
def test_random_bits(device, shape, width):
    for seed in [0, 7, 2**40 + 3]:
        key = mx.random.key(seed)
        same(device, lambda: mx.random.bits(shape, width, key=key))
    # a key read with a stride (a column of split keys)
    k2 = mx.random.split(mx.random.key(5), 2)[:, 1]
    k3 = mx.random.split(mx.random.key(5), 4)
    same(device, lambda: mx.random.bits(shape, width, key=k3[2]))
    same(device, lambda: mx.stack([k2, k2]))


def test_random_bits_batched_keys(device):
    keys = mx.random.split(mx.random.key(11), 5)
    for shape in [(3,), (7,), (1001,), (2, 3)]:
        for width in [1, 2, 4]:
            f = mx.vmap(lambda k: mx.random.bits(shape, width, key=k))
            same(device, lambda: f(keys))
            # keys read transposed
            same(device, lambda: f(keys.T.T[::-1]))


def test_exact_samplers(device):
    key = mx.random.key(42)
    shape = (33, 77)
    same(device, lambda: mx.random.uniform(shape=shape, key=key))
    same(device, lambda: mx.random.uniform(-2, 5, shape, mx.float16, key=key))
    same(device, lambda: mx.random.randint(-5, 1000, shape, key=key))
    same(device, lambda: mx.random.randint(0, 2**40, (5, 7), mx.int64, key=key))
    same(device, lambda: mx.random.bernoulli(0.3, shape, key=key))
    same(device, lambda: mx.random.split(key, 7))


def test_float_samplers(device):
    key = mx.random.key(3)
    for fn in [lambda: mx.random.normal((64, 33), key=key),
               lambda: mx.random.gumbel((64, 33), key=key),
               lambda: mx.random.laplace((64, 33), key=key),
               lambda: mx.random.truncated_normal(-1, 2, (64, 33), key=key)]:
        with mx.stream(device):
            got = np.array(fn())
        with mx.stream(mx.cpu):
            want = np.array(fn())
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_categorical_permutation(device):
    # (these also need reductions and sort on the device)
    key = mx.random.key(3)
    logits = mx.array(np.linspace(-2, 2, 5 * 9).reshape(5, 9).astype(np.float32))
    with mx.stream(device):
        cat = mx.random.categorical(logits, key=key, num_samples=100)
        perm = mx.random.permutation(1000, key=key)
    assert cat.shape == (5, 100) and int(mx.max(cat).item()) < 9
    assert sorted(np.array(perm).tolist()) == list(range(1000))


# ---------------- joins ----------------
def layouts(dtype):
    """(4, 5, 6) inputs: contiguous, transposed, reversed, broadcast."""
    a = values((4, 5, 6), dtype, 1)
    t = values((6, 5, 4), dtype, 2).transpose(2, 1, 0)
    r = a[::-1, ::-1, ::-1]
    b = mx.broadcast_to(values((1, 1, 6), dtype, 3), (4, 5, 6))
    return [a, t, r, b]


@pytest.mark.parametrize("dtype", SIZES)
def test_concatenate_stack(device, dtype):
    xs = layouts(dtype)
    for axis in [0, 1, 2, -1]:
        same(device, lambda: mx.concatenate(xs, axis))
        same(device, lambda: mx.stack(xs, axis))
    empty = values((0, 5, 6), dtype)
    same(device, lambda: mx.concatenate([xs[2], empty, xs[1]], 0))
    same(device, lambda: mx.concatenate([xs[0][:1], xs[0][:1]], 0))


def test_concatenate_long_rows(device):
    a, b = values((1001, 257), mx.float32), values((1001, 3), mx.float32)
    same(device, lambda: mx.concatenate([a, b, a], 1))
    same(device, lambda: mx.concatenate([a, a], 0))


@pytest.mark.parametrize("dtype", SIZES)
def test_pad(device, dtype):
    for x in layouts(dtype):
        for widths in [((1, 2), (0, 3), (2, 0)), ((0, 0), (0, 0), (0, 1)),
                       ((3, 0), (7, 1), (1, 9))]:
            same(device, lambda: mx.pad(x, widths,
                                        constant_values=values((), dtype, 9)))
            same(device, lambda: mx.pad(x, widths, mode="edge"))
    same(device, lambda: mx.pad(values((0, 3), dtype), ((2, 1), (1, 0))))
    same(device, lambda: mx.pad(values((2, 3), dtype), 1))


@pytest.mark.parametrize("dtype", SIZES)
def test_slice_updates(device, dtype):
    keys = [(slice(None),), (slice(1, 3), slice(4, None, -2), slice(5, None, -3)),
            (slice(None, None, -1), slice(0, 5, 2)), (slice(0, 4, 3), 2),
            (Ellipsis, slice(1, 6, 5))]
    for x in layouts(dtype):
        for key in keys:
            region = np.empty((4, 5, 6))[key].shape

            def set_region(update):
                def fn():
                    y = x + 0 if dtype != mx.bool_ else mx.logical_not(x)
                    y[key] = update
                    return y
                return fn

            same(device, set_region(values(region, dtype, 5)))
            # a scalar update, and a transposed one
            same(device, set_region(values((), dtype, 7)))
            same(device, set_region(values(region[::-1], dtype, 8).T))
            if dtype != mx.bool_:
                same(device, lambda: x.at[key].add(values(region, dtype, 6)))


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
def test_view(device, src, dst):
    for x in layouts(src):
        def v():
            return x.view(dst)
        try:
            with mx.stream(mx.cpu):
                mx.eval(v())
        except ValueError:
            continue  # a view the last axis cannot hold
        same(device, v)
