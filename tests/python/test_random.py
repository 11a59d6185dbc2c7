"""cmx.core.random: keys, bits and samplers checked bit for bit against an
independent threefry2x32 reference written here (validated on the
Random123 known-answer vectors and JAX's published split of key 0), the
samplers' formulas and distributions, the global state (seed, state), and
errors."""
import inspect
import math

import numpy as np
import pytest

import cmx.core as mx

# Every test here runs on every device (the GPU where there is one).
pytestmark = pytest.mark.usefixtures("on_device")

M32 = 0xFFFFFFFF


# ---------------- the reference ----------------
def rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & M32


def threefry2x32(key, ctr):
    """Threefry-2x32 with 20 rounds (Salmon et al., SC'11), on ints."""
    k0, k1 = int(key[0]), int(key[1])
    ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
    rot = ((13, 15, 26, 6), (17, 29, 16, 24))
    x0, x1 = (int(ctr[0]) + ks[0]) & M32, (int(ctr[1]) + ks[1]) & M32
    for i in range(5):
        for r in rot[i % 2]:
            x0 = (x0 + x1) & M32
            x1 = rotl(x1, r) ^ x0
        x0 = (x0 + ks[(i + 1) % 3]) & M32
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) & M32
    return x0, x1


def ref_words(key, nwords):
    """MLX's (and JAX's) layout of n random words from one key: the
    counters are split in two halves hashed as pairs (j, j + h'), the odd
    middle word from the pair (h, 0)."""
    half, odd = nwords // 2, nwords % 2
    out = [0] * nwords
    for j in range(half):
        a, b = threefry2x32(key, (j, j + half + odd))
        out[j], out[j + half + odd] = a, b
    if odd:
        out[half] = threefry2x32(key, (half, 0))[0]
    return np.array(out, np.uint32)


def ref_bits(key, shape, width=4):
    n = int(np.prod(shape, dtype=np.int64))
    nbytes = n * width
    words = ref_words(key, (nbytes + 3) // 4)
    dt = {4: np.uint32, 2: np.uint16, 1: np.uint8}[width]
    return words.view(np.uint8)[:nbytes].view(dt).reshape(shape)


def key_of(seed):
    return (seed >> 32) & M32, seed & M32


def as_key(k):
    return tuple(int(v) for v in np.array(k).tolist())


def ref_uniform(key, shape, low=0.0, high=1.0):
    """MLX's uniform in float32: low + (high - low) * min(bits / 2^32, 1-ulp)."""
    u = ref_bits(key, shape).astype(np.float32) / np.float32(2.0**32)
    u = np.minimum(u, np.nextafter(np.float32(1), np.float32(0)))
    low, high = np.float32(low), np.float32(high)
    return (high - low) * u + low


def erfinv(y):
    """Inverse error function in float64 by Newton's method on math.erf."""
    if y <= -1:
        return -math.inf
    x = 0.0
    for _ in range(100):
        step = (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
        x -= step
        if abs(step) < 1e-15:
            break
    return x


def test_reference_threefry_known_answers():
    assert threefry2x32((0, 0), (0, 0)) == (0x6B200159, 0x99BA4EFE)
    assert threefry2x32((M32, M32), (M32, M32)) == (0x1CB996FC, 0xBB002BE7)
    assert threefry2x32((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3)) == \
        (0xC4923A9C, 0x483DF7A0)
    # JAX's random.split(PRNGKey(0)), as printed in its documentation
    assert ref_words((0, 0), 4).reshape(2, 2).tolist() == \
        [[4146024105, 967050713], [2718843009, 1272950319]]


# ---------------- keys and bits ----------------
@pytest.mark.parametrize("seed", [0, 1, 42, 2**32 + 7, 2**64 - 1])
def test_key_layout(seed):
    k = mx.random.key(seed)
    assert k.dtype == mx.uint32 and k.shape == (2,)
    assert as_key(k) == key_of(seed)


@pytest.mark.parametrize("seed", [0, 3, 123456789])
@pytest.mark.parametrize("num", [0, 1, 2, 3, 5])
def test_split_matches_reference(seed, num):
    k = mx.random.key(seed)
    got = np.array(mx.random.split(k, num))
    assert got.shape == (num, 2)
    np.testing.assert_array_equal(got, ref_bits(key_of(seed), (num, 2)))
    if num == 2:
        k1, k2 = mx.random.split(k)
        np.testing.assert_array_equal(np.array(k1), got[0])
        np.testing.assert_array_equal(np.array(k2), got[1])


def test_split_of_key_zero_is_jax_published_value():
    assert mx.random.split(mx.random.key(0)).tolist() == \
        [[4146024105, 967050713], [2718843009, 1272950319]]


@pytest.mark.parametrize("shape", [(), (1,), (2,), (7,), (3, 5), (4, 4, 2), (0, 3)])
@pytest.mark.parametrize("width", [4, 2, 1])
def test_bits_match_reference(shape, width):
    for seed in [0, 7]:
        got = mx.random.bits(shape, width=width, key=mx.random.key(seed))
        assert got.shape == shape
        assert got.dtype == {4: mx.uint32, 2: mx.uint16, 1: mx.uint8}[width]
        np.testing.assert_array_equal(np.array(got), ref_bits(key_of(seed), shape, width))


def test_bits_from_split_keys():
    k = mx.random.split(mx.random.key(5), 3)[1]
    np.testing.assert_array_equal(np.array(mx.random.bits((9,), key=k)),
                                  ref_bits(as_key(k), (9,)))


# ---------------- samplers against their formulas ----------------
@pytest.mark.parametrize("shape", [(), (5,), (3, 4)])
def test_uniform_exact(shape):
    key = mx.random.key(11)
    np.testing.assert_array_equal(np.array(mx.random.uniform(shape=shape, key=key)),
                                  ref_uniform(key_of(11), shape))
    got = mx.random.uniform(-2, 3, shape, key=key)
    np.testing.assert_array_equal(np.array(got), ref_uniform(key_of(11), shape, -2, 3))
    a = np.array(mx.random.uniform(shape=(1000,), low=-1, high=5))
    assert a.min() >= -1 and a.max() < 5


def test_uniform_dtypes_and_bounds():
    assert mx.random.uniform().dtype == mx.float32
    assert mx.random.uniform(dtype=None).dtype == mx.float32
    for dt in [mx.float16, mx.bfloat16]:
        a = mx.random.uniform(-0.1, 0.1, (4000,), dtype=dt)
        assert a.dtype == dt
        v = np.array(a.astype(mx.float32))
        assert v.min() >= -0.1 - 1e-3 and v.max() < 0.1
    # array bounds broadcast against the shape
    lo = mx.array([[0.0], [10.0]])
    a = np.array(mx.random.uniform(lo, lo + 1, (2, 3)))
    assert (a[0] < 1).all() and (a[1] >= 10).all()


def test_normal_formula():
    key = mx.random.key(3)
    shape = (6,)
    got = np.array(mx.random.normal(shape, key=key)).astype(np.float64)
    # MLX: sqrt(2) * erfinv(u), u uniform on [nextafter(-1, 0), 1)
    lo = np.nextafter(np.float32(-1), np.float32(0))
    u = ref_uniform(key_of(3), shape, lo, 1.0)
    ref = np.array([math.sqrt(2) * erfinv(float(v)) for v in u])
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5)
    # loc and scale
    a = mx.random.normal((3, 2), loc=1.0, scale=2.0, key=key)
    b = 2.0 * mx.random.normal((3, 2), key=key) + 1.0
    np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-6)
    # array loc/scale broadcast against the shape
    s = mx.random.normal((2, 10, 2), loc=mx.ones((10, 2)), scale=mx.ones((10, 2)))
    assert s.shape == (2, 10, 2)


def test_normal_statistics_and_dtypes():
    x = np.array(mx.random.normal((200_000,), key=mx.random.key(1))).astype(np.float64)
    assert abs(x.mean()) < 0.01 and abs(x.std() - 1) < 0.01
    for dt in [mx.float16, mx.bfloat16, mx.float32]:
        a = mx.random.normal((10_000,), dtype=dt)
        assert a.dtype == dt and np.isfinite(np.array(a.astype(mx.float32))).all()
    c = mx.random.normal((4, 3), dtype=mx.complex64, loc=3.0 + 1j, scale=2.0)
    assert c.dtype == mx.complex64 and c.shape == (4, 3)


def test_randint_formula():
    key = mx.random.key(9)
    shape = (50,)
    got = np.array(mx.random.randint(3, 15, shape, key=key))
    u = ref_uniform(key_of(9), shape, 3, 15)
    ref = np.clip(np.floor(u).astype(np.int32), 3, 14)
    np.testing.assert_array_equal(got, ref)
    a = mx.random.randint(0, 1, [])
    assert a.shape == () and a.dtype == mx.int32 and a.item() == 0
    a = np.array(mx.random.randint(-10, 10, [1000]))
    assert a.min() >= -10 and a.max() < 10
    assert (np.array(mx.random.randint(10, -10, [100])) == 10).all()
    low = mx.zeros((3, 1), dtype=mx.int32)
    high = mx.array([[12, 13, 14, 15]])
    assert mx.random.randint(low, high, (3, 4)).shape == (3, 4)
    for dt in [mx.int8, mx.uint16, mx.int64, mx.uint32]:
        assert mx.random.randint(0, 100, (5,), dtype=dt).dtype == dt


def test_bernoulli():
    key = mx.random.key(21)
    got = np.array(mx.random.bernoulli(0.3, (40,), key=key))
    upper = np.nextafter(np.float32(2.0**32), np.float32(np.inf))
    ref = ref_bits(key_of(21), (40,)).astype(np.float32) < np.float32(0.3) * upper
    np.testing.assert_array_equal(got, ref)
    a = mx.random.bernoulli()
    assert a.shape == () and a.dtype == mx.bool_
    assert mx.random.bernoulli(mx.array(0.5), [5]).shape == (5,)
    assert mx.random.bernoulli(mx.array([2.0, -2.0])).tolist() == [True, False]
    assert mx.random.bernoulli(mx.array([0.1, 0.2, 0.3]), [4, 3]).shape == (4, 3)
    frac = np.array(mx.random.bernoulli(0.25, (100_000,))).mean()
    assert abs(frac - 0.25) < 0.01


def test_truncated_normal():
    a = mx.random.truncated_normal(-2.0, 2.0)
    assert a.size == 1 and a.dtype == mx.float32
    a = mx.random.truncated_normal(mx.array([]), mx.array([]))
    assert a.size == 0 and a.dtype == mx.float32
    lower = mx.array([[-2.0, 0.0]])
    upper = mx.array([[0.0], [1.0], [2.0]])
    a = mx.random.truncated_normal(lower, upper)
    assert a.shape == (3, 2)
    assert mx.all(lower <= a).item() and mx.all(a <= upper).item()
    assert mx.all(mx.random.truncated_normal(2.0, -2.0) == 2.0).item()
    assert mx.random.truncated_normal(-3.0, 3.0, [54, 39]).shape == (54, 39)
    x = np.array(mx.random.truncated_normal(0.0, 10.0, (100_000,)))
    # the half-normal's mean sqrt(2/pi)
    assert abs(x.mean() - math.sqrt(2 / math.pi)) < 0.01 and x.min() >= 0


def test_gumbel_and_laplace():
    key = mx.random.key(4)
    g = np.array(mx.random.gumbel((8,), key=key)).astype(np.float64)
    u = ref_uniform(key_of(4), (8,)).astype(np.float64)
    np.testing.assert_allclose(g, -np.log(-np.log(u)), rtol=1e-5)
    s = np.array(mx.random.gumbel((100_000,)))
    assert abs(s.mean() - 0.5772) < 0.02
    assert mx.random.gumbel((1, 1), dtype=None).dtype == mx.float32
    lp = np.array(mx.random.laplace((200_000,), loc=1.5, scale=2.0)).astype(np.float64)
    assert abs(np.median(lp) - 1.5) < 0.03 and abs(np.abs(lp - 1.5).mean() - 2.0) < 0.03
    a = mx.random.laplace((3, 2), loc=1.0, scale=2.0, key=key)
    b = 2.0 * mx.random.laplace((3, 2), key=key) + 1.0
    np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-6)
    for dt in [mx.float16, mx.bfloat16]:
        h = mx.random.laplace((10_000,), dtype=dt)
        assert h.dtype == dt and np.isfinite(np.array(h.astype(mx.float32))).all()


def test_categorical():
    logits = mx.zeros((10, 20))
    assert mx.random.categorical(logits, -1).shape == (10,)
    assert mx.random.categorical(logits, 0).shape == (20,)
    out = mx.random.categorical(logits)
    assert out.dtype == mx.uint32 and mx.max(out).item() < 20
    out = mx.random.categorical(logits, 0, [5, 20])
    assert out.shape == (5, 20) and mx.max(out).item() < 10
    assert mx.random.categorical(logits, 1, num_samples=7).shape == (10, 7)
    assert mx.random.categorical(logits, 0, num_samples=7).shape == (20, 7)
    p = np.array([0.1, 0.2, 0.7])
    draws = np.array(mx.random.categorical(mx.log(mx.array(p)), num_samples=60_000))
    freq = np.bincount(draws, minlength=3) / draws.size
    np.testing.assert_allclose(freq, p, atol=0.01)
    # Gumbel-max with the same key: argmax(logits + gumbel(key))
    key = mx.random.key(8)
    lg = mx.array(np.log(np.array([[0.2, 0.5, 0.3], [0.6, 0.3, 0.1]], np.float32)))
    got = mx.random.categorical(lg, key=key)
    ref = mx.argmax(lg + mx.random.gumbel(lg.shape, key=key), axis=-1)
    assert got.tolist() == ref.tolist()


def test_permutation():
    assert sorted(mx.random.permutation(4).tolist()) == [0, 1, 2, 3]
    assert sorted(mx.random.permutation(np.int64(3)).tolist()) == [0, 1, 2]
    assert sorted(mx.random.permutation(mx.array([0, 1, 2, 3])).tolist()) == [0, 1, 2, 3]
    x = mx.arange(16).reshape(4, 4)
    assert mx.array_equal(mx.sort(mx.random.permutation(x, axis=0), axis=0), x).item()
    assert mx.array_equal(mx.sort(mx.random.permutation(x, axis=1), axis=1), x).item()
    assert not mx.array_equal(mx.arange(16384), mx.random.permutation(16384)).item()
    x = mx.random.permutation(mx.array([[1]]))
    assert x.shape == (1, 1) and x.dtype == mx.int32
    # a stable argsort of the key's words
    key = mx.random.key(13)
    got = np.array(mx.random.permutation(50, key=key))
    np.testing.assert_array_equal(got, np.argsort(ref_bits(key_of(13), (50,)), kind="stable"))


def test_multivariate_normal():
    key = mx.random.key(0)
    mean = mx.array([0, 0])
    cov = mx.array([[1, 0], [0, 1]])
    a = mx.random.multivariate_normal(mean, cov, key=key, stream=mx.cpu)
    assert a.shape == (2,) and a.dtype == mx.float32
    for dt in [mx.int32, mx.uint8, mx.float16, mx.bfloat16]:
        with pytest.raises(ValueError):
            mx.random.multivariate_normal(mean, cov, dtype=dt, key=key)
    for m, c, shape in [((2, 2), (2, 2), (3,)), ((2,), (2, 2, 2), (3,)),
                        ((3,), (2, 2), ()), ((2,), (2, 3), ())]:
        with pytest.raises(ValueError):
            mx.random.multivariate_normal(mx.zeros(m), mx.zeros(c), shape=shape, key=key)
    mean = mx.array([[0, 7], [1, 2], [3, 4]])
    cov = mx.array([[1, 0.5], [0.5, 1]])
    assert mx.random.multivariate_normal(mean, cov, shape=(4, 3)).shape == (4, 3, 2)
    n = 100_000
    m = np.array([4.0, 7.0])
    c = np.array([[2, 0.5], [0.5, 1]])
    data = np.array(mx.random.multivariate_normal(mx.array(m), mx.array(c), (n,), key=key))
    np.testing.assert_allclose(data.mean(0), m, atol=0.03)
    np.testing.assert_allclose(np.cov(data.T), c, atol=0.03)


# ---------------- global state ----------------
def test_seed_reproduces_draws():
    mx.random.seed(3)
    a, b = mx.random.uniform(), mx.random.uniform()
    mx.random.seed(3)
    x, y = mx.random.uniform(), mx.random.uniform()
    assert a.item() == x.item() and b.item() == y.item()
    assert a.item() != b.item()


def test_state_follows_the_key_sequence():
    assert isinstance(mx.random.state, list) and len(mx.random.state) == 1
    mx.random.seed(5)
    assert as_key(mx.random.state[0]) == key_of(5)
    # (state, sample) = split(state): the first draw uses split(key(5))[1]
    first = mx.random.uniform(shape=(4,))
    s = ref_bits(key_of(5), (2, 2))
    np.testing.assert_array_equal(np.array(first), ref_uniform(tuple(s[1]), (4,)))
    assert as_key(mx.random.state[0]) == tuple(int(v) for v in s[0])
    # explicit keys leave the state alone
    before = as_key(mx.random.state[0])
    mx.random.normal((3,), key=mx.random.key(1))
    assert as_key(mx.random.state[0]) == before


def test_state_can_be_saved_and_restored():
    mx.random.seed(17)
    mx.random.uniform()
    saved = mx.random.state[0]
    x = mx.random.normal((5,))
    mx.random.uniform()
    mx.random.state[0] = saved
    y = mx.random.normal((5,))
    assert x.tolist() == y.tolist()
    mx.random.state[0] = mx.random.key(99)
    z = mx.random.bits((3,))
    np.testing.assert_array_equal(np.array(z), ref_bits(tuple(ref_bits(key_of(99), (2, 2))[1]), (3,)))
    mx.random.state[0] = "not a key"
    with pytest.raises(TypeError):
        mx.random.uniform()
    mx.random.state[0] = mx.array([1, 2, 3], dtype=mx.uint32)
    with pytest.raises(ValueError):
        mx.random.uniform()
    mx.random.seed(0)  # seed repairs the state
    assert as_key(mx.random.state[0]) == (0, 0)


def test_every_sampler_without_a_key_advances_the_state():
    mx.random.seed(1)
    calls = [
        lambda: mx.random.bits((2,)), lambda: mx.random.uniform(), lambda: mx.random.normal(),
        lambda: mx.random.randint(0, 5), lambda: mx.random.bernoulli(),
        lambda: mx.random.truncated_normal(0, 1), lambda: mx.random.gumbel(),
        lambda: mx.random.laplace(), lambda: mx.random.categorical(mx.zeros(3)),
        lambda: mx.random.permutation(3),
        lambda: mx.random.multivariate_normal(mx.zeros(2), mx.eye(2)),
    ]
    seen = set()
    for f in calls:
        before = as_key(mx.random.state[0])
        mx.eval(f())
        after = as_key(mx.random.state[0])
        assert after != before and after not in seen
        seen.add(after)


def test_submodule_import_and_stubs():
    import ast
    import os

    import cmx
    import cmx.core.random as r
    assert r is mx.random
    from cmx.core import random as r2
    assert r2 is mx.random
    stub = open(os.path.join(os.path.dirname(cmx.__file__), "core.pyi")).read()
    cls = next(n for n in ast.parse(stub).body
               if isinstance(n, ast.ClassDef) and n.name == "_RandomModule")
    declared = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    declared |= {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)}
    public = {n for n in dir(mx.random) if not n.startswith("_")}
    assert public - declared == set()
    for name in public - {"state"}:
        assert getattr(mx.random, name).__doc__


def test_signatures():
    assert str(inspect.signature(mx.random.uniform)) == \
        "(low=0, high=1, shape=[], dtype=None, key=None, stream=None)"
    assert str(inspect.signature(mx.random.categorical)) == \
        "(logits, axis=-1, shape=None, num_samples=None, key=None, stream=None)"
    assert mx.random.uniform(shape=(2,), stream=mx.cpu).shape == (2,)
    assert mx.random.split(mx.random.key(0), 3, mx.cpu).shape == (3, 2)


def test_random_errors():
    cases = [
        (lambda: mx.random.uniform(dtype=mx.int32), ValueError, "[uniform]"),
        (lambda: mx.random.normal(dtype=mx.int32), ValueError, "[normal]"),
        (lambda: mx.random.split(mx.array([1, 2, 3], dtype=mx.uint32)), ValueError, "[split]"),
        (lambda: mx.random.split(mx.array([1.0, 2.0])), ValueError, "[split]"),
        (lambda: mx.random.randint(0, 10, dtype=mx.float32), ValueError, "[randint]"),
        (lambda: mx.random.bernoulli(0, [2]), ValueError, "[bernoulli]"),
        (lambda: mx.random.bernoulli(mx.array([0.1, 0.2, 0.3]), [2]), ValueError, "[bernoulli]"),
        (lambda: mx.random.categorical(mx.zeros((3,)), shape=(2,), num_samples=2), ValueError,
         "[categorical]"),
        (lambda: mx.random.bits((2,), width=3), ValueError, "[bits]"),
        (lambda: mx.random.permutation(-1), ValueError, "[permutation]"),
        (lambda: mx.random.uniform(shape=(2,), low=mx.zeros(3)), ValueError, "[uniform]"),
        (lambda: mx.random.truncated_normal(mx.array([-2.0, -1.0]), mx.array([1.0, 2.0, 3.0])),
         ValueError, "[truncated_normal]"),
        (lambda: mx.random.normal((2, 10, 2), loc=mx.zeros(10)), ValueError, "broadcast"),
        (lambda: mx.random.seed(-1), TypeError, "[seed]"),
        (lambda: mx.random.key(1.5), TypeError, "[key]"),
        (lambda: mx.random.uniform(shape="ab"), TypeError, "[uniform]"),
        (lambda: mx.random.normal(key=[1, 2]), ValueError, "[normal]"),
    ]
    for f, exc, msg in cases:
        with pytest.raises(exc) as e:
            mx.eval(f())
        assert msg in str(e.value), (msg, str(e.value))
