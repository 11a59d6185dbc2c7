"""Differential suite, shape ops, creation, sorting and indexing: generated
calls run in cmx and in MLX (see _mlx_diff.py)."""
import itertools

import numpy as np
import pytest

from _mlx_diff import DTYPES, Cases, check, mlx, np_values, make_rng

pytestmark = pytest.mark.skipif(mlx is None, reason="mlx[cpu] not installed")

rng = make_rng(21)
C = Cases()


def arr(shape, dt="float32", domain=None):
    return np_values(rng, shape, dt, domain)


def case(cid, f):
    C.add(cid, f)


# ---------------------------------------------------------------- shape
x234 = arr((2, 3, 4))
for shape in [(6, 4), (24,), (-1, 2), (4, -1, 3), (2, 12), (5, 5), (-1, -1),
              (0, -1), (3, 8)]:
    case(f"shape/reshape/{shape}",
         lambda m, A, s=shape: m.reshape(A(x234), s))
    case(f"shape/reshape_method/{shape}",
         lambda m, A, s=shape: A(x234).reshape(*s))
for start, end in [(0, -1), (1, 2), (0, 0), (2, 1), (-2, -1), (0, 5)]:
    case(f"shape/flatten/{start}/{end}",
         lambda m, A, a=start, b=end: m.flatten(A(x234), a, b))
for axis in [None, 0, 2, (0, 2), -1, 5]:
    x = arr((1, 3, 1))
    case(f"shape/squeeze/{axis}", lambda m, A, x=x, a=axis: m.squeeze(A(x), a))
for axis in [0, -1, (0, 2), (1, 1), 4, -4, (0, -1)]:
    case(f"shape/expand_dims/{axis}",
         lambda m, A, a=axis: m.expand_dims(A(x234), a))
for axes in [None, (2, 0, 1), (0, 1, 2), (1, 0), (0, 0, 1), (-1, 0, 1)]:
    case(f"shape/transpose/{axes}",
         lambda m, A, a=axes: m.transpose(A(x234), a))
for a, b in [(0, 2), (-1, 0), (1, 1), (0, 3)]:
    case(f"shape/swapaxes/{a}/{b}",
         lambda m, A, a=a, b=b: m.swapaxes(A(x234), a, b))
    case(f"shape/moveaxis/{a}/{b}",
         lambda m, A, a=a, b=b: m.moveaxis(A(x234), a, b))
for ind, axis in [(2, 0), (3, 1), ([1, 3], 2), ([], 0), (4, 2), (5, 1),
                  ([0, 2, 2], 1), ([3, 1], 2)]:
    case(f"shape/split/{ind}/{axis}",
         lambda m, A, i=ind, a=axis: m.split(A(x234), i, axis=a))
for dts, axis in [(("float32", "float32"), 0), (("int32", "float16"), 1),
                  (("uint8", "int8"), -1), (("bool_", "int32"), None),
                  (("float32", "float32"), 3)]:
    a, b = arr((2, 3), dts[0]), arr((2, 3), dts[1])
    for op in ["concatenate", "stack"]:
        case(f"shape/{op}/{dts}/{axis}",
             lambda m, A, a=a, b=b, d=dts, ax=axis, op=op:
             getattr(m, op)([A(a, d[0]), A(b, d[1])], axis=ax)
             if ax is not None else getattr(m, op)([A(a, d[0]), A(b, d[1])]))
case("shape/concatenate/mismatch",
     lambda m, A: m.concatenate([A(arr((2, 3))), A(arr((3, 2)))], axis=0))
case("shape/stack/mismatch",
     lambda m, A: m.stack([A(arr((2, 3))), A(arr((3, 2)))]))
for reps, axis in [(2, None), (3, 0), (2, -1), (0, 1), (1, 2)]:
    case(f"shape/repeat/{reps}/{axis}",
         lambda m, A, r=reps, a=axis: m.repeat(A(x234), r, axis=a))
for reps in [2, (2, 1), (1, 2, 1, 2), (0,), (2, 2)]:
    case(f"shape/tile/{reps}", lambda m, A, r=reps: m.tile(A(arr((2, 3))), r))
for mode in ["constant", "edge", "reflect", "symmetric"]:
    for width in [1, (1, 2), [(0, 1), (2, 0)], ((2, 2), (1, 1)), 0]:
        for dt in ["float32", "int32"]:
            x = arr((3, 4), dt)
            case(f"shape/pad/{mode}/{width}/{dt}",
                 lambda m, A, x=x, w=width, mo=mode, dt=dt: m.pad(
                     A(x, dt), w, mode=mo))
    x = arr((5,))
    case(f"shape/pad1d/{mode}",
         lambda m, A, x=x, mo=mode: m.pad(A(x), (3, 2), mode=mo))
case("shape/pad/value",
     lambda m, A: m.pad(A(arr((2, 2))), 1, constant_values=7.5))
case("shape/pad/bad_mode", lambda m, A: m.pad(A(arr((2, 2))), 1, mode="wrap"))
for shift, axis in [(1, None), (-2, None), ((1, 2), None), (1, 0),
                    ((1, 2), (0, 1)), (5, 1), ((1, -1), (0, 2)), (2, (0, 1))]:
    case(f"shape/roll/{shift}/{axis}",
         lambda m, A, s=shift, a=axis: m.roll(A(x234), s, axis=a))
for shape in [(2, 3, 4), (3, 1, 4), (1, 4), (2, 3, 5), (2, 0, 4)]:
    case(f"shape/broadcast_to/{shape}",
         lambda m, A, s=shape: m.broadcast_to(A(arr((3, 1, 4))), s))
for n in [1, 2, 3]:
    for shape in [(), (2,), (2, 3), (2, 3, 4)]:
        case(f"shape/atleast_{n}d/{shape}",
             lambda m, A, n=n, s=shape: getattr(m, f"atleast_{n}d")(A(arr(s))))
for axis, shape in [(0, (2, 1)), (1, (3, 1)), (-1, (2, 2)), (1, (-1, 3)),
                    (2, (2, 2))]:
    case(f"shape/unflatten/{axis}/{shape}",
         lambda m, A, a=axis, s=shape: m.unflatten(A(x234), a, s))
for k in [0, 1, -1, 3]:
    sq = arr((4, 4))
    case(f"shape/diagonal/{k}", lambda m, A, k=k: m.diagonal(A(sq), k))
    case(f"shape/diag2/{k}", lambda m, A, k=k: m.diag(A(sq), k))
    case(f"shape/diag1/{k}", lambda m, A, k=k: m.diag(A(arr((3,))), k))
    case(f"shape/tril/{k}", lambda m, A, k=k: m.tril(A(sq), k))
    case(f"shape/triu/{k}", lambda m, A, k=k: m.triu(A(sq), k))
    case(f"shape/trace/{k}", lambda m, A, k=k: m.trace(A(sq), k))
case("shape/diagonal/axes",
     lambda m, A: m.diagonal(A(x234), offset=1, axis1=2, axis2=0))
case("shape/as_strided",
     lambda m, A: m.as_strided(A(arr((12,))), (3, 3), (3, 1), 2))
case("shape/unstack", lambda m, A: m.unstack(A(x234), axis=1))
case("shape/broadcast_arrays",
     lambda m, A: m.broadcast_arrays(A(arr((3, 1))), A(arr((4,)))))
case("shape/broadcast_shapes", lambda m, A: m.broadcast_shapes((3, 1), (4,)))
case("shape/broadcast_shapes_bad", lambda m, A: m.broadcast_shapes((3,), (4,)))
for dt in DTYPES:
    x = arr((2, 3), dt)
    case(f"shape/view/{dt}->int8", lambda m, A, x=x, dt=dt: A(x, dt).view(m.int8))
    case(f"shape/astype/{dt}->float32",
         lambda m, A, x=x, dt=dt: A(x, dt).astype(m.float32))
    case(f"shape/astype/float32->{dt}",
         lambda m, A, dt=dt: A(arr((6,)) * 3, "float32").astype(getattr(m, dt)))
case("shape/view/bad", lambda m, A: A(arr((3,))).view(m.float64))

# ---------------------------------------------------------------- creation
for args in [(5,), (2, 7), (1, 10, 3), (0.5, 3.0), (3, 0, -1), (0, 1, 0.25),
             (5.0,), (1, 5, 1.0), (10, 2), (0, 5, 0.5)]:
    case(f"create/arange/{args}", lambda m, A, a=args: m.arange(*a))
    for dt in ["int32", "float32", "int64", "uint8", "float16"]:
        case(f"create/arange/{args}/{dt}",
             lambda m, A, a=args, dt=dt: m.arange(*a, dtype=getattr(m, dt)))
case("create/arange/zero_step", lambda m, A: m.arange(0, 5, 0))
case("create/arange/bool", lambda m, A: m.arange(3, dtype=m.bool_))
for args in [(0, 1, 5), (0, 10, 1), (1, 0, 4), (0, 1, 0), (-1, 1, 3)]:
    case(f"create/linspace/{args}", lambda m, A, a=args: m.linspace(*a))
    case(f"create/linspace_int/{args}",
         lambda m, A, a=args: m.linspace(*a, dtype=m.int32))
case("create/linspace/neg", lambda m, A: m.linspace(0, 1, -1))
for n, mm, k in [(3, None, 0), (3, 4, 1), (2, 5, -1), (3, 3, 5), (3, 3, -5),
                 (0, None, 0), (3, 0, 0), (1, 1, 0)]:
    case(f"create/eye/{n}/{mm}/{k}", lambda m, A, a=(n, mm, k): m.eye(*a))
    case(f"create/tri/{n}/{mm}/{k}", lambda m, A, a=(n, mm, k): m.tri(*a))
case("create/eye/neg", lambda m, A: m.eye(-1))
case("create/identity", lambda m, A: m.identity(3, dtype=m.int32))
for dt in DTYPES:
    case(f"create/zeros/{dt}", lambda m, A, dt=dt: m.zeros((2, 3), getattr(m, dt)))
    case(f"create/ones/{dt}", lambda m, A, dt=dt: m.ones((2,), dtype=getattr(m, dt)))
    case(f"create/full/{dt}", lambda m, A, dt=dt: m.full((3,), 2.5, getattr(m, dt)))
    x = arr((2, 2), dt)
    case(f"create/zeros_like/{dt}", lambda m, A, x=x, dt=dt: m.zeros_like(A(x, dt)))
    case(f"create/ones_like/{dt}", lambda m, A, x=x, dt=dt: m.ones_like(A(x, dt)))
    case(f"create/full_like/{dt}",
         lambda m, A, x=x, dt=dt: m.full_like(A(x, dt), 3))
for v in [1, 2.5, True, 1 + 2j, -3]:
    case(f"create/full_value/{v!r}", lambda m, A, v=v: m.full((2,), v))
case("create/full/array_value",
     lambda m, A: m.full((2, 3), A(np.array([1.0, 2.0, 3.0], np.float32))))
case("create/full/bad_shape",
     lambda m, A: m.full((2, 2), A(np.array([1.0, 2.0, 3.0], np.float32))))
case("create/zeros/neg", lambda m, A: m.zeros((2, -1)))
case("create/zeros/int", lambda m, A: m.zeros(3))
for fn in ["bartlett", "hanning", "hamming", "blackman"]:
    for n in [0, 1, 5, 8]:
        case(f"create/{fn}/{n}", lambda m, A, f=fn, n=n: getattr(m, f)(n))
for idx, sp in [("xy", False), ("ij", False), ("xy", True), ("ij", True)]:
    case(f"create/meshgrid/{idx}/{sp}",
         lambda m, A, i=idx, s=sp: m.meshgrid(A(arr((2,))), A(arr((3,))),
                                              sparse=s, indexing=i))
for v in [[1, 2, 3], [[1, 2], [3, 4]], [1.5, 2], [True, False], [1, 2.5j],
          [], [[]], [2 ** 31], [2 ** 63], [-(2 ** 31) - 1], 3, 2.5, True,
          [[1, 2], [3]], [1, [2]], (1, 2), [(1, 2), (3, 4)]]:
    case(f"create/array/{v!r}", lambda m, A, v=v: m.array(v))
for v, dt in [([1, 2], "float16"), ([1.7, -1.7], "int32"), ([300], "uint8"),
              ([-1], "uint32"), ([1, 0], "bool_"), ([1.5], "complex64"),
              ([2 ** 40], "int32")]:
    case(f"create/array_dtype/{v!r}/{dt}",
         lambda m, A, v=v, dt=dt: m.array(v, dtype=getattr(m, dt)))
for dt in ["float64", "int16", "uint16", "bool_", "complex64", "float16"]:
    x = arr((2, 3), dt)
    case(f"create/array_numpy/{dt}", lambda m, A, x=x: m.array(x))
case("create/array_of_arrays",
     lambda m, A: m.array([A(arr((2,))), A(arr((2,)))]))
case("create/array_of_arrays_mixed",
     lambda m, A: m.array([A(arr((2,))), [1.0, 2.0]]))
case("create/array_of_0d",
     lambda m, A: m.array([A(np.array(1, np.int32)), A(np.array(2.5, np.float32))]))
case("create/array_of_arrays_dtype",
     lambda m, A: m.array([A(arr((2,), "int32"), "int32"),
                           A(arr((2,), "int32"), "int32")], dtype=m.float16))
case("create/array_of_arrays_nested_mixed",
     lambda m, A: m.array([[A(arr((2,))), [1.0, 2.0]],
                           [A(arr((2,))), A(arr((2,)))]]))
case("create/array_of_arrays_mixed_dtype",
     lambda m, A: m.array([A(arr((2,), "int32"), "int32"), [1, 2]],
                          dtype=m.float16))
for v, dt in [([2 ** 31], "uint32"), ([-1], "uint16"), ([2 ** 32], "uint32"),
              ([2 ** 31], "int32"), ([2 ** 40], "int64"), ([2 ** 63], "uint64"),
              ([2 ** 40], "bool_"), ([1.5, 2 ** 20], "int32"),
              ([True, 2 ** 40], "int32"), ([2 ** 40], "int16")]:
    case(f"create/array_int_range/{v!r}/{dt}",
         lambda m, A, v=v, dt=dt: m.array(v, dtype=getattr(m, dt)))
case("create/array_scalar_2**63", lambda m, A: m.array(2 ** 63))
case("create/add_scalar_2**63",
     lambda m, A: m.add(A(np.array([1], np.int8), "int8"), 2 ** 63))
case("create/array_of_arrays_ragged",
     lambda m, A: m.array([A(arr((2,))), A(arr((3,)))]))
case("create/array_from_array",
     lambda m, A: m.array(A(arr((2,), "int32"), "int32"), dtype=m.float32))
for v in [[1, 2], 3.5, [[1, 2]]]:
    case(f"create/asarray/{v!r}", lambda m, A, v=v: m.asarray(v))

# ---------------------------------------------------------------- sorting
for k, dt in enumerate(DTYPES):
    x = arr((3, 5), dt)
    axis = [0, -1, None][k % 3]
    case(f"sort/sort/{dt}/{axis}", lambda m, A, x=x, dt=dt, a=axis: m.sort(A(x, dt), axis=a))
    case(f"sort/argsort/{dt}/{axis}",
         lambda m, A, x=x, dt=dt, a=axis: m.argsort(A(x, dt), axis=a)
         if dt in ("float32", "int32", "uint8", "bool_", "float64", "int64")
         else m.sort(A(x, dt), axis=a))
    kth = [0, 2, -1][k % 3]
    if dt != "complex64":
        case(f"sort/partition_sorted/{dt}/{kth}",
             lambda m, A, x=x, dt=dt, k=kth: m.sort(
                 m.partition(A(x, dt), k, axis=-1), axis=-1))
    case(f"sort/topk_sorted/{dt}",
         lambda m, A, x=x, dt=dt: m.sort(m.topk(A(x, dt), 2, axis=-1), axis=-1))
xs = np.array([3.0, 1.0, 2.0, 1.0, np.nan, -np.inf, 5.0], np.float32)
case("sort/sort/nan", lambda m, A: m.sort(A(xs)))
case("sort/argsort/stable", lambda m, A: m.argsort(A(np.array([2, 1, 2, 1, 2, 1]))))
case("sort/topk/bad_k", lambda m, A: m.topk(A(xs), 10))
case("sort/partition/bad_k", lambda m, A: m.partition(A(xs), 10))
srt = np.array([1, 2, 2, 3, 5, 8], np.float32)
for side in ["left", "right"]:
    for v in [[2], [0, 2, 9], [[2, 3], [5, 1]], 2.5]:
        case(f"sort/searchsorted/{side}/{v!r}",
             lambda m, A, s=side, v=v: m.searchsorted(A(srt), A(np.array(v, np.float32)),
                                                      side=s))
case("sort/searchsorted/2d", lambda m, A: m.searchsorted(A(arr((2, 3))), A(srt)))
case("sort/searchsorted/side", lambda m, A: m.searchsorted(A(srt), A(srt), side="mid"))

# ---------------------------------------------------------------- indexing
base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
IDX = [0, -1, 2, slice(None), slice(1, 3), slice(None, None, -1),
       slice(-2, None), slice(0, 10, 2), (0, 1), (slice(None), 2),
       (Ellipsis, 1), (None, 0), (1, None, slice(1, 3)), (Ellipsis,),
       (0, Ellipsis, None), (slice(None), None, Ellipsis, 0), (), None,
       (slice(5, 1),), (-3, -4, -5), (1, slice(None, None, -2), 3),
       (slice(1, None), slice(None, 2), slice(None, None, 2))]
for idx in IDX:
    case(f"index/get/{idx!r}", lambda m, A, i=idx: A(base)[i])
ARR_IDX = [([0, 2],), ([[0, 1], [2, 2]],), (slice(None), [1, 3]),
           ([0, 1], [1, 2]), ([0, 1], slice(None), [4, 0]),
           (Ellipsis, [0, -1]), ([2, 0], None), (0, [1, 2], [3, 4]),
           ([[0], [1]], [1, 2])]
for idx in ARR_IDX:
    def conv(m, i):
        return tuple(m.array(p) if isinstance(p, list) else p for p in i)
    case(f"index/get_array/{idx!r}", lambda m, A, i=idx: A(base)[conv(m, i)])
    case(f"index/set_array/{idx!r}",
         lambda m, A, i=idx: _set(m, A(base), conv(m, i), -1.0))
for idx in IDX[:16]:
    case(f"index/set/{idx!r}", lambda m, A, i=idx: _set(m, A(base), i, 7.0))
    case(f"index/set_bcast/{idx!r}",
         lambda m, A, i=idx: _set(m, A(base), i, A(np.array([1.0], np.float32))))
case("index/set/int_to_float", lambda m, A: _set(m, A(base), 0, 2))
case("index/set/float_to_int",
     lambda m, A: _set(m, A(base.astype(np.int32), "int32"), 0, 2.7))
case("index/set/shape_mismatch",
     lambda m, A: _set(m, A(base), 0, A(np.ones((3,), np.float32))))
case("index/get/too_many", lambda m, A: A(base)[0, 0, 0, 0])
case("index/get/two_ellipses", lambda m, A: A(base)[..., 0, ...])
case("index/set/too_many", lambda m, A: _set(m, A(base), (0, 0, 0, 0), 1.0))
case("index/set/float_index", lambda m, A: _set(m, A(base), 1.5, 1.0))
case("index/get/0d", lambda m, A: A(np.array(1.0, np.float32))[0])
case("index/set/0d", lambda m, A: _set(m, A(np.array(1.0, np.float32)), 0, 2.0))
case("index/set/0d_ellipsis",
     lambda m, A: _set(m, A(np.array(1.0, np.float32)), Ellipsis, 2.0))
case("index/get/float_index", lambda m, A: A(base)[1.5])
case("index/get/str_index", lambda m, A: A(base)["a"])
mask = np.array([True, False, True])
case("index/bool_mask/get", lambda m, A: A(base)[A(mask)])
case("index/bool_mask/set_scalar",
     lambda m, A: _set(m, A(base[:, 0, 0]), A(mask), 5.0))
case("index/bool_mask/set_values",
     lambda m, A: _set(m, A(base[:, 0, 0]), A(mask), A(np.array([8.0, 9.0], np.float32))))
case("index/bool_mask/set_2d",
     lambda m, A: _set(m, A(base[0]), A(base[0] > 7), 0.0))
case("index/out_of_bounds/get", lambda m, A: A(base)[A(np.array([5]))] * 0)
for op in ["add", "subtract", "multiply", "divide", "maximum", "minimum"]:
    case(f"index/at/{op}",
         lambda m, A, op=op: getattr(A(base[0]).at[m.array([0, 0, 2])], op)(2.0))
    case(f"index/at_slice/{op}",
         lambda m, A, op=op: getattr(A(base[0]).at[1:3, ::2], op)(
             A(np.array([1.0, 2.0, 3.0], np.float32))))
for axis in [0, 1, -1, None]:
    idx = np.array([[0, 1, 3], [2, 2, 0]], np.int32) if axis is not None \
        else np.array([0, 7, 11], np.int32)
    x = arr((3, 4))
    case(f"index/take/{axis}", lambda m, A, x=x, i=idx, a=axis: m.take(A(x), A(i), axis=a))
    ia = np.array([[0, 1, 3, 2], [2, 2, 0, 1], [1, 0, 0, 3]], np.int32)
    if axis == 0:
        ia = ia % 3
    if axis is None:
        ia = np.array([0, 5, 11], np.int32)
    case(f"index/take_along_axis/{axis}",
         lambda m, A, x=x, i=ia, a=axis: m.take_along_axis(A(x), A(i), axis=a))
    case(f"index/put_along_axis/{axis}",
         lambda m, A, x=x, i=ia, a=axis: m.put_along_axis(
             A(x), A(i), A(np.float32(-1)), axis=a))
case("index/take/scalar", lambda m, A: m.take(A(arr((4,))), 2))
case("index/take/int", lambda m, A: m.take(A(arr((3, 4))), 1, axis=1))
case("index/take_along_axis/bad",
     lambda m, A: m.take_along_axis(A(arr((3, 4))), A(np.zeros((3,), np.int32)), axis=0))


def _set(m, a, idx, v):
    a[idx] = v
    return a


@pytest.mark.parametrize("case_id,fn,tol", C.params())
def test_mlx_diff_shape(case_id, fn, tol):
    check(case_id, fn, tol)
