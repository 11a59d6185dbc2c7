"""Differential suite, element-wise ops, reductions and scans: generated
calls over shapes, dtypes, axes and parameters, run in cmx and in MLX (see
_mlx_diff.py)."""
import itertools

import numpy as np
import pytest

from _mlx_diff import DTYPES, FLOATS, INTS, Cases, check, mlx, np_values, make_rng

pytestmark = pytest.mark.skipif(mlx is None, reason="mlx[cpu] not installed")

rng = make_rng(20)
C = Cases()

SHAPES = [(), (5,), (3, 4), (2, 3, 4), (0,), (4, 1)]

# name -> value domain (None: anything)
UNARY = {
    "abs": None, "sign": None, "negative": None, "positive": None,
    "square": None, "sqrt": "pos", "rsqrt": "pos", "reciprocal": "nonzero",
    "exp": None, "expm1": None, "log": "pos", "log2": "pos", "log10": "pos",
    "log1p": "pos", "erf": None, "erfinv": "unit", "sin": None, "cos": None,
    "tan": None, "arcsin": "unit", "arccos": "unit", "arctan": None,
    "sinh": None, "cosh": None, "tanh": None, "arcsinh": None,
    "arccosh": "ge1", "arctanh": "unit", "degrees": None, "radians": None,
    "sigmoid": None, "floor": None, "ceil": None, "trunc": None,
    "round": None, "isnan": None, "isinf": None, "isfinite": None,
    "isposinf": None, "isneginf": None, "logical_not": None,
    "conjugate": None, "real": None, "imag": None, "bitwise_invert": None,
    "stop_gradient": None, "nan_to_num": None,
}


def unary_case(name, dtype, shape, domain):
    x = np_values(rng, shape, dtype, domain)
    return lambda m, A: getattr(m, name)(A(x, dtype))


for k, (name, domain) in enumerate(UNARY.items()):
    for j, dt in enumerate(DTYPES):
        shape = SHAPES[(k + j) % len(SHAPES)]
        C.add(f"unary/{name}/{dt}/{shape}", unary_case(name, dt, shape, domain))
    # outside the domain, and the special values
    if domain:
        C.add(f"unary/{name}/float32/off_domain",
              unary_case(name, "float32", (6,), None))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e30],
                       dtype=np.float32)
    C.add(f"unary/{name}/float32/special",
          lambda m, A, name=name: getattr(m, name)(A(special, "float32")))

# round with decimals
for dt, dec in itertools.product(["float32", "float16", "int32", "float64"],
                                 [-1, 0, 1, 2]):
    x = np_values(rng, (7,), dt) * (10 if dt != "int32" else 1)
    C.add(f"unary/round_dec/{dt}/{dec}",
          lambda m, A, x=x, dt=dt, dec=dec: m.round(A(x, dt), dec))
for nan, pinf, ninf in [(0.0, None, None), (1.0, 5.0, -5.0), (2.5, 1e3, None)]:
    v = np.array([np.nan, np.inf, -np.inf, 1.5], dtype=np.float32)
    C.add(f"unary/nan_to_num/args/{nan}/{pinf}/{ninf}",
          lambda m, A, v=v, a=(nan, pinf, ninf): m.nan_to_num(
              A(v, "float32"), nan=a[0], posinf=a[1], neginf=a[2]))

# ---------------------------------------------------------------- binary
BINARY = {
    "add": None, "subtract": None, "multiply": None, "divide": "nonzero",
    "floor_divide": "nonzero", "remainder": "nonzero", "power": None,
    "maximum": None, "minimum": None, "arctan2": None, "logaddexp": None,
    "equal": None, "not_equal": None, "less": None, "less_equal": None,
    "greater": None, "greater_equal": None, "logical_and": None,
    "logical_or": None, "logical_xor": None, "bitwise_and": None,
    "bitwise_or": None, "bitwise_xor": None, "left_shift": "shift",
    "right_shift": "shift",
}
PAIRS = [(d, d) for d in DTYPES] + [
    ("int32", "float32"), ("uint8", "int8"), ("uint32", "int32"),
    ("int64", "uint64"), ("float16", "bfloat16"), ("bool_", "int32"),
    ("float16", "float32"), ("int8", "float16"), ("uint64", "float32"),
    ("complex64", "float32"), ("int32", "complex64"), ("float64", "float32"),
]
BSHAPES = [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 4)), ((), (4,)),
           ((0, 3), (3,)), ((2, 3), (2, 1))]


def operand(dt, shape, domain):
    if domain == "shift":
        x = np_values(rng, shape, dt, "pos")
        return np.minimum(x, 6) if dt != "bool_" else x
    return np_values(rng, shape, dt, domain)


for k, (name, domain) in enumerate(BINARY.items()):
    for j, (da, db) in enumerate(PAIRS):
        sa, sb = BSHAPES[(k + j) % len(BSHAPES)]
        x = operand(da, sa, None if domain == "shift" else None)
        y = operand(db, sb, domain)
        C.add(f"binary/{name}/{da}-{db}/{sa}-{sb}",
              lambda m, A, n=name, x=x, y=y, da=da, db=db: getattr(m, n)(
                  A(x, da), A(y, db)))
    # Python scalars (weakly typed) on either side
    for dt, s in [("int8", 3), ("uint8", 2), ("float16", 1.5), ("int32", 2.5),
                  ("bool_", True), ("float32", 2), ("int64", -1),
                  ("complex64", 2.0), ("bfloat16", 3)]:
        x = operand(dt, (4,), None)
        C.add(f"binary/{name}/{dt}-pyscalar/{s!r}",
              lambda m, A, n=name, x=x, dt=dt, s=s: getattr(m, n)(A(x, dt), s))
        C.add(f"binary/{name}/pyscalar-{dt}/{s!r}",
              lambda m, A, n=name, x=x, dt=dt, s=s: getattr(m, n)(s, A(x, dt)))
    C.add(f"binary/{name}/shape_mismatch",
          lambda m, A, n=name: getattr(m, n)(A(np.ones((2, 3), np.float32)),
                                             A(np.ones((4,), np.float32))))

# integer powers, division corners
for dt in INTS + ["float32"]:
    b = np.array([0, 1, 2, 3, -1, -2, 5], dtype=np.int64)
    if dt.startswith("u"):
        b = np.abs(b)
    a = np.array([2, -3, 0, 1, 2, 4, 1], dtype=np.int64)
    if dt.startswith("u"):
        a = np.abs(a)
    C.add(f"binary/power_int/{dt}",
          lambda m, A, a=a, b=b, dt=dt: m.power(A(a, dt), A(b, dt)))
    C.add(f"binary/power_int_scalar/{dt}",
          lambda m, A, a=a, dt=dt: A(a, dt) ** 2)
for dt in ["int32", "int8", "uint8", "float32", "float16"]:
    a = np.array([7, -7, 7, -7, 0, 5], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3, 1], dtype=np.int64)
    if dt.startswith("u"):
        a, b = np.abs(a), np.abs(b)
    for op in ["floor_divide", "remainder", "divide"]:
        C.add(f"binary/{op}_signs/{dt}",
              lambda m, A, a=a, b=b, dt=dt, op=op: getattr(m, op)(A(a, dt),
                                                                 A(b, dt)))
    C.add(f"binary/divmod/{dt}",
          lambda m, A, a=a, b=b, dt=dt: m.divmod(A(a, dt), A(b, dt)))

# integer remainder and floor division by zero, bool remainder
for dt in ["int8", "uint8", "int32", "int64", "uint64", "bool_"]:
    a = np.array([3, 0, 5, 1], dtype=np.int64)
    b = np.array([0, 0, 2, 1], dtype=np.int64)
    for op in ["remainder", "floor_divide"]:
        C.add(f"binary/{op}_by_zero/{dt}",
              lambda m, A, a=a, b=b, dt=dt, op=op: getattr(m, op)(
                  A(a.astype(bool) if dt == "bool_" else a, dt),
                  A(b.astype(bool) if dt == "bool_" else b, dt)))
# argmin/argmax of empty arrays with any axis, logsumexp of 0-d with axes
for name in ["argmin", "argmax"]:
    for axis in [None, 0, 1, 5]:
        C.add(f"reduce/{name}_empty/{axis}",
              lambda m, A, n=name, axis=axis: getattr(m, n)(
                  A(np.zeros((0, 3), np.float32)), axis=axis))
C.add("reduce/logsumexp_0d_axis",
      lambda m, A: m.logsumexp(A(np.float32(1.5)), axis=0))
for axis in [0, -1, (0, 1)]:
    z2 = np_values(rng, (3, 2), "complex64")
    C.add(f"reduce/logsumexp_complex/{axis}",
          lambda m, A, z2=z2, axis=axis: m.logsumexp(A(z2, "complex64"),
                                                     axis=axis))
    C.add(f"reduce/var_complex_ddof/{axis}",
          lambda m, A, z2=z2, axis=axis: m.var(A(z2, "complex64"), axis=axis,
                                               ddof=1))
for dec in [0, 1, -1]:
    z1 = np_values(rng, (5,), "complex64") * 10
    C.add(f"unary/round_complex/{dec}",
          lambda m, A, z1=z1, dec=dec: m.round(A(z1, "complex64"), dec))

# ternary: where, clip
for dt in DTYPES:
    x = np_values(rng, (2, 3), dt)
    y = np_values(rng, (3,), dt)
    c = rng.random((2, 3)) > 0.5
    C.add(f"ternary/where/{dt}",
          lambda m, A, x=x, y=y, c=c, dt=dt: m.where(A(c), A(x, dt), A(y, dt)))
    C.add(f"ternary/where_scalar/{dt}",
          lambda m, A, x=x, c=c, dt=dt: m.where(A(c), A(x, dt), 1))
    if dt not in ("complex64",):
        C.add(f"ternary/clip/{dt}",
              lambda m, A, x=x, dt=dt: m.clip(A(x, dt), 0, 2))
        C.add(f"ternary/clip_none/{dt}",
              lambda m, A, x=x, dt=dt: m.clip(A(x, dt), None, 1))

# ---------------------------------------------------------------- reductions
REDUCE = ["sum", "prod", "min", "max", "mean", "all", "any", "logsumexp",
          "var", "std", "argmin", "argmax"]
RSHAPES = [(4,), (3, 4), (2, 3, 4), (), (0, 3)]
AXES = [None, 0, -1, (0, 1), 1, (0, 2), 3]

def _empty_groups(shape, axis):
    """Whether reducing shape over axis reduces a zero-size axis."""
    if axis is None:
        return 0 in shape
    axes = axis if isinstance(axis, tuple) else (axis,)
    return any(-len(shape) <= a < len(shape) and shape[a] == 0 for a in axes)


for k, name in enumerate(REDUCE):
    for j, dt in enumerate(DTYPES):
        for kk in range(2):
            shape = RSHAPES[(k + j + kk) % len(RSHAPES)]
            axis = AXES[(k * 3 + j + kk) % len(AXES)]
            if name in ("argmin", "argmax") and isinstance(axis, tuple):
                axis = 0
            keep = (j + kk) % 2 == 0
            if _empty_groups(shape, axis):
                # MLX 0.32 reduces empty groups from uninitialised memory
                # (sum of complex64, any of uint16, mean of uint64 vary
                # between runs): no oracle there. cmx's empty reductions
                # are in its own tests (test_reduce.c).
                continue
            x = np_values(rng, shape, dt)
            C.add(f"reduce/{name}/{dt}/{shape}/{axis}/{keep}",
                  lambda m, A, n=name, x=x, dt=dt, axis=axis, keep=keep:
                  getattr(m, n)(A(x, dt), axis=axis, keepdims=keep))
for name in ["var", "std"]:
    for ddof in [0, 1, 2, 5]:
        x = np_values(rng, (3, 4), "float32")
        C.add(f"reduce/{name}_ddof/{ddof}",
              lambda m, A, n=name, x=x, d=ddof: getattr(m, n)(
                  A(x, "float32"), axis=1, ddof=d))
for name in ["median", "count_nonzero"]:
    for dt in ["float32", "int32", "bool_", "float16"]:
        for axis in [None, 0, 1]:
            x = np_values(rng, (3, 5), dt)
            C.add(f"reduce/{name}/{dt}/{axis}",
                  lambda m, A, n=name, x=x, dt=dt, axis=axis:
                  getattr(m, n)(A(x, dt), axis=axis))
for axis in [0, 1, -1, (0, 1)]:
    x = np_values(rng, (3, 4), "float32")
    C.add(f"reduce/softmax/{axis}",
          lambda m, A, x=x, axis=axis: m.softmax(A(x, "float32"), axis=axis))

# ---------------------------------------------------------------- scans
SCANS = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]
for k, name in enumerate(SCANS):
    for j, dt in enumerate(DTYPES):
        shape = [(5,), (3, 4), (2, 3, 2)][(k + j) % 3]
        axis = [None, 0, -1][(k + 2 * j) % 3]
        rev, inc = [(False, True), (True, True), (False, False),
                    (True, False)][(k + j) % 4]
        x = np_values(rng, shape, dt)
        C.add(f"scan/{name}/{dt}/{shape}/{axis}/{rev}/{inc}",
              lambda m, A, n=name, x=x, dt=dt, axis=axis, rev=rev, inc=inc:
              getattr(m, n)(A(x, dt), axis=axis, reverse=rev, inclusive=inc))
for dt in ["float32", "int32", "bool_"]:
    x = np_values(rng, (3, 5), dt)
    for n, axis in [(1, -1), (2, 0), (0, 1)]:
        C.add(f"scan/diff/{dt}/{n}/{axis}",
              lambda m, A, x=x, dt=dt, n=n, axis=axis: m.diff(
                  A(x, dt), n=n, axis=axis))


@pytest.mark.parametrize("case_id,fn,tol", C.params())
def test_mlx_diff_ops(case_id, fn, tol):
    check(case_id, fn, tol)
