"""Operators of array (+ - * / // % ** @ & | ^ << >> ~ -x abs, comparisons)
with their reflected and in-place forms, compared with NumPy."""
import operator

import numpy as np
import pytest

import cmx.core as mx
from conftest import cpu_match

# Every test here runs on every device (the GPU where there is one).
pytestmark = pytest.mark.usefixtures("on_device")

# (operator, C op, applies to floats)
BINARY = [
    (operator.add, "add", True),
    (operator.sub, "subtract", True),
    (operator.mul, "multiply", True),
    (operator.truediv, "divide", True),
    (operator.floordiv, "floor_divide", True),
    (operator.mod, "remainder", True),
    (operator.pow, "power", True),
    (operator.and_, "bitwise_and", False),
    (operator.or_, "bitwise_or", False),
    (operator.xor, "bitwise_xor", False),
    (operator.lshift, "left_shift", False),
    (operator.rshift, "right_shift", False),
    (operator.lt, "less", True),
    (operator.le, "less_equal", True),
    (operator.gt, "greater", True),
    (operator.ge, "greater_equal", True),
    (operator.eq, "equal", True),
    (operator.ne, "not_equal", True),
]

INPLACE = {
    operator.add: operator.iadd, operator.sub: operator.isub,
    operator.mul: operator.imul, operator.truediv: operator.itruediv,
    operator.floordiv: operator.ifloordiv, operator.mod: operator.imod,
    operator.pow: operator.ipow, operator.and_: operator.iand,
    operator.or_: operator.ior, operator.xor: operator.ixor,
    operator.lshift: operator.ilshift, operator.rshift: operator.irshift,
}


def operands(floats):
    rng = np.random.default_rng(1)
    if floats:
        x = rng.uniform(0.5, 3.0, (3, 4)).astype(np.float32)
        y = rng.uniform(0.5, 3.0, (4,)).astype(np.float32)
        return x, y, 1.5
    x = rng.integers(1, 20, (3, 4)).astype(np.int32)
    y = rng.integers(1, 4, (4,)).astype(np.int32)
    return x, y, 2


def check(got, ref):
    ref = np.asarray(ref)
    assert got.shape == ref.shape
    g = np.array(got)
    if ref.dtype.kind == "f":
        np.testing.assert_allclose(g, ref, rtol=2e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(g, ref)


@pytest.mark.parametrize("op,name,floats", BINARY, ids=[b[1] for b in BINARY])
def test_binary_operator(op, name, floats, device):
    with mx.stream(device):
        binary_operator_cases(op, floats)
    x, y, _ = operands(floats)
    cpu_match(device, lambda: op(mx.array(x), mx.array(y)))


def binary_operator_cases(op, floats):
    for use_float in [True, False] if floats else [False]:
        x, y, s = operands(use_float)
        a, b = mx.array(x), mx.array(y)
        check(op(a, b), op(x, y))          # broadcasting
        check(op(a, s), op(x, np.array(s, x.dtype)))  # scalar, weakly typed
        check(op(s, a), op(np.array(s, x.dtype), x))  # reflected
        assert op(a, s).dtype == mx.array(op(x, np.array(s, x.dtype))).dtype
        check(op(a, y), op(x, y))          # NumPy operand


@pytest.mark.parametrize("op", list(INPLACE), ids=lambda o: o.__name__)
def test_inplace_visible_through_references(op):
    name = dict((b[0], b[1]) for b in BINARY)[op]
    floats = op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow)
    x, y, _ = operands(floats)
    a = mx.array(x)
    alias = a
    ident = id(a)
    iop = INPLACE[op]
    a = iop(a, mx.array(y))
    assert id(a) == ident
    check(alias, op(x, y))


def test_inplace_add_changes_dtype_like_mlx():
    a = mx.array([1, 2])
    a += 0.5
    assert a.dtype == mx.float32 and a.tolist() == [1.5, 2.5]


def test_inplace_division_of_integers_raises():
    a = mx.array([1, 2])
    with pytest.raises(ValueError, match="In place division"):
        a /= 2


def test_bitwise_operators_refuse_floats():
    a = mx.array([1.0])
    for op in [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift]:
        with pytest.raises(ValueError, match="Floating point types not allowed"):
            op(a, 1)
    with pytest.raises(ValueError, match="Floating point types not allowed"):
        mx.array([1]) & 1.5
    with pytest.raises(ValueError, match="bitwise inversion"):
        ~a


def test_invert():
    check(~mx.array([1, 2], dtype=mx.uint8), ~np.array([1, 2], np.uint8))
    assert (~mx.array([True, False])).tolist() == [False, True]


@pytest.mark.parametrize("op,name", [(operator.neg, "negative"), (abs, "abs"), (operator.pos, "positive")])
def test_unary_operators(op, name):
    x = np.array([-1.5, 0.0, 2.0], np.float32)
    check(op(mx.array(x)), op(x))


def test_matmul_operator():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.arange(12, dtype=np.float32).reshape(3, 4)
    check(mx.array(x) @ mx.array(y), x @ y)
    a = mx.array(x)
    a @= mx.array(y)
    check(a, x @ y)


def test_invalid_operands():
    a = mx.array([1, 2])
    with pytest.raises(ValueError, match="Cannot perform addition on an cmx.core.array and str"):
        a + "x"
    with pytest.raises(ValueError, match="Cannot perform addition"):
        "x" + a
    with pytest.raises(ValueError, match="inplace addition"):
        a += object()
    assert (a == "x") is False
    assert (a == [1, 2]) is False and (a != (1, 2)) is True  # as MLX
    with pytest.raises(TypeError, match="NoneType"):  # MLX: no overload
        a != None  # noqa: E711
    with pytest.raises(TypeError, match="NoneType"):
        a == None  # noqa: E711
    with pytest.raises(ValueError, match="less than"):
        a < "x"
    with pytest.raises(TypeError):
        pow(a, 2, 3)


def test_divmod_operator():
    q, r = divmod(mx.array([7, -7]), 3)
    assert q.tolist() == [2, -3] and r.tolist() == [1, 2]
