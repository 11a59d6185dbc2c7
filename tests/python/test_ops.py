"""Op functions against NumPy: the element-wise and reduction tables, shape
manipulation and creation, with MLX's argument names and defaults. Ops the
linked libcmx lacks are skipped."""
import inspect

import numpy as np
import pytest

import cmx.core as mx
from conftest import cpu_match

# Every test here runs on every device (the GPU where there is one).
pytestmark = pytest.mark.usefixtures("on_device")

RNG = np.random.default_rng(3)
XF = RNG.uniform(0.1, 0.9, (3, 4)).astype(np.float32)  # in every domain
YF = RNG.uniform(0.5, 2.0, (4,)).astype(np.float32)
XI = RNG.integers(-20, 20, (3, 4)).astype(np.int32)
YI = RNG.integers(1, 5, (4,)).astype(np.int32)

UNARY = {
    "abs": np.abs, "sign": np.sign, "negative": np.negative, "positive": np.positive,
    "square": np.square, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "reciprocal": np.reciprocal, "exp": np.exp, "expm1": np.expm1, "log": np.log,
    "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos,
    "arctan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "arcsinh": np.arcsinh, "arctanh": np.arctanh, "degrees": np.degrees,
    "radians": np.radians, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "isnan": np.isnan,
    "isinf": np.isinf, "isfinite": np.isfinite, "isposinf": np.isposinf,
    "isneginf": np.isneginf, "conjugate": np.conjugate, "conj": np.conjugate,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "stop_gradient": lambda x: x,
}

BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "divide": np.divide, "floor_divide": np.floor_divide, "remainder": np.remainder,
    "power": np.power, "pow": np.power, "maximum": np.maximum, "minimum": np.minimum,
    "arctan2": np.arctan2, "atan2": np.arctan2, "logaddexp": np.logaddexp,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater,
    "greater_equal": np.greater_equal,
}

INT_BINARY = {
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "left_shift": np.left_shift,
    "right_shift": np.right_shift, "floor_divide": np.floor_divide,
    "remainder": np.remainder,
}

REDUCE = {
    "sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max,
    "mean": np.mean, "all": np.all, "any": np.any,
    "logsumexp": lambda x, axis=None, keepdims=False: np.log(
        np.sum(np.exp(x), axis=axis, keepdims=keepdims)),
    "var": np.var, "std": np.std,
}


def close(got, ref, rtol=2e-5, atol=1e-6):
    ref = np.asarray(ref)
    g = np.array(got)
    assert g.shape == ref.shape, (g.shape, ref.shape)
    if ref.dtype.kind in "fc":
        np.testing.assert_allclose(g, ref, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(g, ref)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, device):
    fn = getattr(mx, name)
    close(cpu_match(device, lambda: fn(mx.array(XF))), UNARY[name](XF))
    sig = inspect.signature(fn)
    assert list(sig.parameters) == ["a", "stream"]
    assert sig.parameters["stream"].kind == inspect.Parameter.KEYWORD_ONLY
    close(fn(mx.array(XF), stream=mx.cpu), UNARY[name](XF))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, device):
    fn = getattr(mx, name)
    close(cpu_match(device, lambda: fn(mx.array(XF), mx.array(YF))), BINARY[name](XF, YF))
    close(fn(mx.array(XF), 0.5), BINARY[name](XF, np.float32(0.5)))
    close(fn(2.0, mx.array(YF)), BINARY[name](np.float32(2.0), YF))
    assert inspect.signature(fn).parameters["stream"].kind == inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("name", sorted(INT_BINARY))
def test_integer_binary(name, device):
    fn = getattr(mx, name)
    got = cpu_match(device, lambda: fn(mx.array(XI), mx.array(YI)), rtol=0, atol=0)
    close(got, INT_BINARY[name](XI, YI))
    close(fn(mx.array(XI), mx.array(YI), stream=device), INT_BINARY[name](XI, YI))


@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduce(name, device):
    fn = getattr(mx, name)
    a = mx.array(XF)
    ref = REDUCE[name]
    close(fn(a, stream=device), ref(XF), rtol=1e-5)
    close(cpu_match(device, lambda: fn(a, axis=0)), ref(XF, axis=0), rtol=1e-5)
    for axis in [0, 1, -1, (0, 1), [1]]:
        npax = tuple(axis) if isinstance(axis, list) else axis
        close(fn(a, axis=axis), ref(XF, axis=npax), rtol=1e-5)
        close(fn(a, axis, True), ref(XF, axis=npax, keepdims=True), rtol=1e-5)
    # the array method
    close(getattr(a, name)(axis=1), ref(XF, axis=1), rtol=1e-5)


def test_ddof():
    close(mx.var(mx.array(XF), axis=0, ddof=1), np.var(XF, axis=0, ddof=1))
    close(mx.array(XF).std(ddof=1), np.std(XF, ddof=1))


def test_argminmax():
    for name in ["argmin", "argmax"]:
        fn = getattr(mx, name)
        ref = getattr(np, name)
        got = fn(mx.array(XI))
        assert got.dtype == mx.uint32 and got.item() == ref(XI)
        close(fn(mx.array(XI), axis=1), ref(XI, axis=1))
        close(fn(mx.array(XI), axis=0, keepdims=True), ref(XI, axis=0, keepdims=True))


def test_softmax():
    e = np.exp(XF - XF.max(axis=-1, keepdims=True))
    close(mx.softmax(mx.array(XF), axis=-1), e / e.sum(axis=-1, keepdims=True))


def test_where():
    c = XF > 0.5
    close(mx.where(mx.array(c), mx.array(XF), 0.0), np.where(c, XF, 0.0))


def test_clip():
    close(mx.clip(mx.array(XF), 0.3, 0.6), np.clip(XF, 0.3, 0.6))
    close(mx.clip(mx.array(XF), None, 0.6), np.clip(XF, None, 0.6))
    with pytest.raises(ValueError):
        mx.clip(mx.array(XF), None, None)


def test_round():
    x = np.array([0.5, 1.5, 2.5, -0.5, 1.234567], np.float32)
    close(mx.round(mx.array(x)), np.round(x))
    close(mx.round(mx.array(x), 2), np.round(x, 2))


# ---------------- shape ----------------
X3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_reshape_family():
    a = mx.array(X3)
    close(mx.reshape(a, (4, 6)), X3.reshape(4, 6))
    close(mx.reshape(a, [-1]), X3.reshape(-1))
    close(a.reshape(6, 4), X3.reshape(6, 4))
    close(a.reshape((3, -1)), X3.reshape(3, -1))
    close(mx.flatten(a), X3.reshape(-1))
    close(mx.flatten(a, start_axis=1), X3.reshape(2, 12))
    close(a.flatten(0, 1), X3.reshape(6, 4))
    close(mx.unflatten(mx.array(X3.reshape(2, 12)), 1, (3, 4)), X3)
    b = mx.zeros((1, 3, 1))
    assert mx.squeeze(b).shape == (3,)
    assert mx.squeeze(b, axis=0).shape == (3, 1)
    assert b.squeeze([0, 2]).shape == (3,)
    assert mx.expand_dims(mx.zeros((3,)), 0).shape == (1, 3)
    assert mx.expand_dims(mx.zeros((3,)), (0, 2)).shape == (1, 3, 1)


def test_transpose_family():
    a = mx.array(X3)
    close(mx.transpose(a), X3.transpose())
    close(mx.transpose(a, (1, 0, 2)), X3.transpose(1, 0, 2))
    close(a.transpose(2, 0, 1), X3.transpose(2, 0, 1))
    close(a.transpose((2, 0, 1)), X3.transpose(2, 0, 1))
    close(a.T, X3.T)
    close(mx.swapaxes(a, 0, 2), np.swapaxes(X3, 0, 2))
    close(a.swapaxes(1, 2), np.swapaxes(X3, 1, 2))
    close(mx.moveaxis(a, 0, -1), np.moveaxis(X3, 0, -1))
    close(mx.permute_dims(a, (2, 1, 0)), X3.transpose(2, 1, 0))
    close(mx.matrix_transpose(a), np.swapaxes(X3, -1, -2))


def test_broadcast():
    close(mx.broadcast_to(mx.array([1, 2]), (3, 2)), np.broadcast_to([1, 2], (3, 2)))
    close(mx.broadcast_to(1.5, (2,)), [1.5, 1.5])
    x, y = mx.broadcast_arrays(mx.array([1, 2]), mx.array([[1], [2], [3]]))
    assert x.shape == y.shape == (3, 2)
    assert mx.broadcast_shapes((1,), (3, 1)) == (3, 1)
    assert mx.broadcast_shapes((5, 1, 4), (3, 1), (1,)) == (5, 3, 4)
    with pytest.raises(ValueError):
        mx.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError):
        mx.broadcast_to(mx.array([1, 2]), (3,))


def test_join_split():
    a, b = np.ones((2, 3), np.float32), np.zeros((1, 3), np.float32)
    close(mx.concatenate([mx.array(a), mx.array(b)]), np.concatenate([a, b]))
    close(mx.concat([mx.array(a), mx.array(a)], axis=1), np.concatenate([a, a], 1))
    close(mx.concatenate([mx.array(a), mx.array(b)], axis=None),
          np.concatenate([a, b], axis=None))
    close(mx.stack([mx.array(a), mx.array(a)], axis=1), np.stack([a, a], axis=1))
    parts = mx.split(mx.array(X3), 2, axis=2)
    for p, r in zip(parts, np.split(X3, 2, axis=2)):
        close(p, r)
    parts = mx.array(X3).split([1, 3], axis=2)
    assert len(parts) == 3
    for p, r in zip(parts, np.split(X3, [1, 3], axis=2)):
        close(p, r)
    with pytest.raises(ValueError):
        mx.split(mx.array(X3), 5, axis=2)


def test_pad_repeat_tile_roll_flip():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    a = mx.array(x)
    close(mx.pad(a, 1), np.pad(x, 1))
    close(mx.pad(a, (1, 2)), np.pad(x, (1, 2)))
    close(mx.pad(a, [(0, 1), (2, 0)], constant_values=7), np.pad(x, [(0, 1), (2, 0)], constant_values=7))
    close(mx.pad(a, 2, mode="edge"), np.pad(x, 2, mode="edge"))
    close(mx.repeat(a, 2), np.repeat(x, 2))
    close(mx.repeat(a, 3, axis=1), np.repeat(x, 3, axis=1))
    close(mx.tile(a, (2, 2)), np.tile(x, (2, 2)))
    close(mx.tile(a, 3), np.tile(x, 3))
    close(mx.roll(a, 2), np.roll(x, 2))
    close(mx.roll(a, 1, axis=1), np.roll(x, 1, axis=1))
    close(mx.roll(a, (1, 2), axis=(0, 1)), np.roll(x, (1, 2), axis=(0, 1)))
    close(mx.flip(a), np.flip(x))
    close(mx.flip(a, axis=1), np.flip(x, axis=1))


def test_strided_contiguous_view():
    a = mx.arange(6)
    close(mx.as_strided(a, (2, 2), (1, 1)), [[0, 1], [1, 2]])
    close(mx.as_strided(a, (3,), (2,), 1), [1, 3, 5])
    t = mx.array(X3).transpose()
    close(mx.contiguous(t), X3.transpose())
    f = mx.array([1.0, -2.0], dtype=mx.float32)
    close(mx.view(f, mx.int32), np.array([1.0, -2.0], np.float32).view(np.int32))
    close(f.view(mx.uint8), np.array([1.0, -2.0], np.float32).view(np.uint8))


# ---------------- creation ----------------
def test_arange_linspace():
    a = mx.arange(5)
    assert a.dtype == mx.int32 and a.tolist() == [0, 1, 2, 3, 4]
    assert mx.arange(2, 10, 3).tolist() == [2, 5, 8]
    f = mx.arange(0.0, 1.0, 0.25)
    assert f.dtype == mx.float32 and f.tolist() == [0.0, 0.25, 0.5, 0.75]
    assert mx.arange(5, 0, -2).tolist() == [5, 3, 1]
    assert mx.arange(3, dtype=mx.float16).dtype == mx.float16
    assert mx.arange(start=1, stop=4).tolist() == [1, 2, 3]
    close(mx.linspace(0, 1, 5), np.linspace(0, 1, 5, dtype=np.float32))
    assert mx.linspace(0, 1).shape == (50,)


def test_fill_constructors():
    z = mx.zeros((2, 3))
    assert z.dtype == mx.float32 and np.array(z).sum() == 0
    assert mx.zeros(4, dtype=mx.int8).dtype == mx.int8
    assert mx.ones((2,), mx.int32).tolist() == [1, 1]
    assert mx.full((2, 2), 3).dtype == mx.int32
    assert mx.full((2, 2), 3.5).tolist() == [[3.5, 3.5], [3.5, 3.5]]
    assert mx.full((2,), 1, dtype=mx.float16).dtype == mx.float16
    close(mx.full((2, 3), mx.array([1, 2, 3])), np.full((2, 3), [1, 2, 3]))
    x = mx.array([[1, 2]], dtype=mx.int16)
    assert mx.zeros_like(x).dtype == mx.int16 and mx.zeros_like(x).tolist() == [[0, 0]]
    assert mx.ones_like(x).tolist() == [[1, 1]]
    assert mx.full_like(x, 7).tolist() == [[7, 7]]
    assert mx.full_like(x, 7, dtype=mx.float32).dtype == mx.float32
    assert mx.empty((2,)).shape == (2,)


def test_matrix_constructors():
    close(mx.eye(3), np.eye(3, dtype=np.float32))
    close(mx.eye(3, 4, k=1), np.eye(3, 4, k=1, dtype=np.float32))
    close(mx.identity(2), np.identity(2, dtype=np.float32))
    close(mx.tri(3, 4, k=-1), np.tri(3, 4, k=-1, dtype=np.float32))
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    close(mx.tril(mx.array(x)), np.tril(x))
    close(mx.triu(mx.array(x), k=1), np.triu(x, k=1))
    close(mx.triu(mx.array(x), -1), np.triu(x, -1))


def test_matmul():
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    b = RNG.standard_normal((4, 5)).astype(np.float32)
    close(mx.matmul(mx.array(a), mx.array(b)), a @ b, rtol=1e-4, atol=1e-5)
    c = RNG.standard_normal((3, 5)).astype(np.float32)
    close(mx.addmm(mx.array(c), mx.array(a[0]), mx.array(b), alpha=2.0, beta=0.5),
          2.0 * a[0] @ b + 0.5 * c, rtol=1e-4, atol=1e-5)


def test_astype_function_and_method():
    a = mx.array([1.7, -2.2])
    assert mx.astype(a, mx.int32).tolist() == [1, -2]
    assert a.astype(mx.int32).tolist() == [1, -2]
    assert a.astype(dtype=mx.float16, stream=mx.cpu).dtype == mx.float16


def test_signatures_follow_mlx():
    sig = inspect.signature(mx.broadcast_to)
    assert list(sig.parameters) == ["a", "shape", "stream"]
    assert sig.parameters["stream"].kind == inspect.Parameter.KEYWORD_ONLY
    sig = inspect.signature(mx.sum)
    assert list(sig.parameters) == ["a", "axis", "keepdims", "stream"]
    assert sig.parameters["axis"].default is None
    assert sig.parameters["keepdims"].default is False
    assert "dtype" in inspect.signature(mx.arange).parameters


def test_every_public_function_has_a_docstring():
    for name in dir(mx):
        if name.startswith("_"):
            continue
        obj = getattr(mx, name)
        if callable(obj) and not isinstance(obj, mx.Dtype):
            assert obj.__doc__, name
    for name in dir(mx.array):
        if not name.startswith("_"):
            assert getattr(mx.array, name).__doc__, name


# ---------------- compositions done in the binding ----------------
def test_atleast():
    for fn, nfn in [(mx.atleast_1d, np.atleast_1d), (mx.atleast_2d, np.atleast_2d),
                    (mx.atleast_3d, np.atleast_3d)]:
        for x in [np.array(1.0), np.arange(3.0), np.ones((2, 3)), np.ones((1, 2, 3, 4))]:
            close(fn(mx.array(x)), nfn(x))
        outs = fn(mx.array(1.0), mx.array([1.0, 2.0]))
        assert isinstance(outs, list) and len(outs) == 2
        for o, r in zip(outs, nfn(np.array(1.0), np.array([1.0, 2.0]))):
            close(o, r)


def test_unstack():
    parts = mx.unstack(mx.array(X3), axis=1)
    assert len(parts) == 3
    for i, p in enumerate(parts):
        close(p, X3[:, i])
    assert [p.tolist() for p in mx.unstack(mx.array([1, 2]))] == [1, 2]
    with pytest.raises(IndexError):  # MLX's type for a bad axis
        mx.unstack(mx.array(X3), axis=3)


def test_meshgrid():
    x, y, z = np.arange(3), np.arange(2) * 10, np.arange(4) * 100
    for kw in [{}, {"indexing": "ij"}, {"sparse": True}, {"sparse": True, "indexing": "ij"}]:
        got = mx.meshgrid(mx.array(x), mx.array(y), mx.array(z), **kw)
        for g, r in zip(got, np.meshgrid(x, y, z, **kw)):
            close(g, r)
    with pytest.raises(ValueError):
        mx.meshgrid(mx.array(x), indexing="xx")


def test_dynamic_slice_and_update():
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    a = mx.array(x)
    close(mx.slice(a, mx.array([1, 2]), [0, 1], [2, 3]), x[1:3, 2:5])
    close(mx.slice(a, mx.array([3]), [1], [2]), x[:, 3:5])
    close(mx.slice(a, [1], (0,), (1,)), x[1:2])
    ref = x.copy()
    ref[2:4, 1:3] = -1
    close(mx.slice_update(a, mx.full((2, 2), -1), mx.array([2, 1]), [0, 1]), ref)
    ref = x.copy()
    ref[:, 4:6] = [[7, 8]]
    close(mx.slice_update(a, mx.array([[7, 8]] * 4), mx.array([4]), [1]), ref)
    with pytest.raises(ValueError):
        mx.slice(a, mx.array([1.5]), [0], [1])


def test_dynamic_slice_is_a_lazy_differentiable_op():
    """Start indices are read when the result is evaluated (they may be
    computed, batched by vmap, ...); negative ones count from the end and
    windows are clamped into the axis."""
    x = np.arange(10, dtype=np.float32)
    a = mx.array(x)
    start = mx.array([1]) * 3  # lazy
    close(mx.slice(a, start, [0], [2]), x[3:5])
    close(mx.slice(a, mx.array(-3), [0], [2]), x[7:9])
    close(mx.slice(a, mx.array([100]), [0], [4]), x[6:10])
    close(mx.slice(a, mx.array([-100]), [0], [4]), x[0:4])
    g = mx.grad(lambda t: mx.slice(t, mx.array([2]), [0], [3]).sum())(a)
    close(g, np.isin(np.arange(10), [2, 3, 4]).astype(np.float32))
    gu = mx.grad(lambda u: (mx.slice_update(a, u, mx.array([4]), [0]) ** 2).sum())(
        mx.ones(3))
    close(gu, np.full(3, 2.0, np.float32))
    b = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = mx.vmap(lambda i: mx.slice(mx.array(b), i, [1], [2]))(mx.array([[0], [1], [2]]))
    close(got, np.stack([b[:, i:i + 2] for i in range(3)]))
    upd = mx.slice_update(mx.array(b), mx.array([[7, 7]]), mx.array([2, 9]), [0, 1])
    ref = b.copy()
    ref[2, 2:4] = 7
    close(upd, ref)


def test_asarray():
    a = mx.array([1, 2])
    assert mx.asarray(a) is a
    assert mx.asarray([1, 2]).tolist() == [1, 2]
    assert mx.asarray(np.ones(2), dtype=mx.int8).dtype == mx.int8


def test_stubs_cover_the_module():
    """python/cmx/core.pyi declares every public name of cmx.core."""
    import ast
    import os

    import cmx

    stub = os.path.join(os.path.dirname(cmx.__file__), "core.pyi")
    tree = ast.parse(open(stub).read())
    declared = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            declared.add(node.target.id)
        elif isinstance(node, ast.Assign):
            declared.update(t.id for t in node.targets)
    public = {n for n in dir(mx) if not n.startswith("__")}
    assert public - declared == set()


SPECIAL_A = np.array([1.0, np.inf, -np.inf, np.nan, 1e-9, 2.0, np.nan, -np.inf], np.float32)
SPECIAL_B = np.array([1.0 + 1e-6, np.inf, np.inf, np.nan, 0.0, 2.1, 1.0, -np.inf], np.float32)


def test_isclose():
    for kw in [{}, {"equal_nan": True}, {"rtol": 0.1}, {"atol": 0.2, "rtol": 0.0}]:
        got = mx.isclose(mx.array(SPECIAL_A), mx.array(SPECIAL_B), **kw)
        assert got.dtype == mx.bool_
        np.testing.assert_array_equal(np.array(got), np.isclose(SPECIAL_A, SPECIAL_B, **kw))
    np.testing.assert_array_equal(np.array(mx.isclose(mx.array(XF), 0.5, atol=0.2)),
                                  np.isclose(XF, 0.5, atol=0.2))


def test_allclose_array_equal():
    assert mx.allclose(mx.array(XF), mx.array(XF + 1e-7)).item()
    assert not mx.allclose(mx.array(XF), mx.array(XF + 1e-3)).item()
    assert mx.allclose(mx.array([np.nan]), mx.array([np.nan]), equal_nan=True).item()
    assert mx.array_equal(mx.array([1, 2]), mx.array([1.0, 2.0])).item()
    assert not mx.array_equal(mx.array([1, 2]), mx.array([1, 3])).item()
    assert not mx.array_equal(mx.array([1, 2]), mx.array([[1, 2]])).item()
    assert not mx.array_equal(mx.array([np.nan]), mx.array([np.nan])).item()
    assert mx.array_equal(mx.array([np.nan]), mx.array([np.nan]), equal_nan=True).item()


def test_nan_to_num():
    close(mx.nan_to_num(mx.array(SPECIAL_A)), np.nan_to_num(SPECIAL_A))
    close(mx.nan_to_num(mx.array(SPECIAL_A), nan=5.0, posinf=7.0, neginf=-7.0),
          np.nan_to_num(SPECIAL_A, nan=5.0, posinf=7.0, neginf=-7.0))
    h = mx.nan_to_num(mx.array(SPECIAL_A, dtype=mx.float16))
    assert h.dtype == mx.float16
    close(h, np.nan_to_num(SPECIAL_A.astype(np.float16)))
    assert mx.nan_to_num(mx.array([1, 2])).tolist() == [1, 2]


def test_windows():
    for name in ["bartlett", "hanning", "hamming", "blackman"]:
        for m in [0, 1, 5, 12]:
            got = getattr(mx, name)(m)
            assert got.dtype == mx.float32
            close(got, getattr(np, name)(m).astype(np.float32), atol=1e-6)


def test_take_family():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = mx.array(x)
    idx = np.array([[0, 2], [3, 1]])
    close(mx.take(a, mx.array(idx)), np.take(x, idx))
    close(mx.take(a, mx.array([3, 0, 3]), axis=1), np.take(x, [3, 0, 3], axis=1))
    close(mx.take(a, 2, axis=0), np.take(x, 2, axis=0))
    close(mx.take(a, mx.array([-1]), axis=0), np.take(x, [-1], axis=0))
    ia = np.argsort(-x, axis=1)[:, :2]
    close(mx.take_along_axis(a, mx.array(ia), axis=1), np.take_along_axis(x, ia, axis=1))
    ref = x.copy()
    np.put_along_axis(ref, ia, -1.0, axis=1)
    close(mx.put_along_axis(a, mx.array(ia), -1.0, axis=1), ref)
    # found when evaluated (MLX does not check at all)
    with pytest.raises((IndexError, RuntimeError), match="out of bounds"):
        mx.eval(mx.take(a, mx.array([10]), axis=0))


def test_linalg_ops():
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    b = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    close(mx.tensordot(mx.array(a), mx.array(b)), np.tensordot(a, b), rtol=1e-4, atol=1e-5)
    b1 = RNG.standard_normal((4, 5)).astype(np.float32)
    close(mx.tensordot(mx.array(a), mx.array(b1), axes=1), np.tensordot(a, b1, axes=1),
          rtol=1e-4, atol=1e-5)
    ai = np.arange(6, dtype=np.int32).reshape(2, 3)
    close(mx.tensordot(mx.array(ai), mx.array(ai.T), axes=1), np.tensordot(ai, ai.T, axes=1))
    close(mx.tensordot(mx.array(a), mx.array(b), axes=([1, 2], [0, 1])),
          np.tensordot(a, b, axes=([1, 2], [0, 1])), rtol=1e-4, atol=1e-5)
    v, w = np.arange(4.0, dtype=np.float32), np.arange(4.0, 8.0, dtype=np.float32)
    close(mx.inner(mx.array(v), mx.array(w)), np.inner(v, w))
    close(mx.inner(mx.array(a), mx.array(a)), np.inner(a, a), rtol=1e-4, atol=1e-5)
    close(mx.outer(mx.array(v), mx.array(w)), np.outer(v, w))
    close(mx.vecdot(mx.array(a), mx.array(a)), np.sum(a * a, axis=-1), rtol=1e-5)
    close(mx.kron(mx.array([[1, 2], [3, 4]]), mx.array([[0, 1], [1, 0]])),
          np.kron([[1, 2], [3, 4]], [[0, 1], [1, 0]]))
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    close(mx.trace(mx.array(x)), np.trace(x))
    close(mx.trace(mx.array(x), offset=1), np.trace(x, offset=1))
    close(mx.trace(mx.array(a), 0, 1, 2), np.trace(a, 0, 1, 2), rtol=1e-5)
    assert mx.trace(mx.array(x), dtype=mx.float32).dtype == mx.float32


def test_depends():
    a = mx.array([1.0, 2.0])
    b = a + 1
    c = mx.depends(a, b)
    assert c.tolist() == [1.0, 2.0]
    outs = mx.depends([a, b], [b])
    assert [o.tolist() for o in outs] == [[1.0, 2.0], [2.0, 3.0]]
