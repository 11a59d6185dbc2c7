"""Differential suite, random numbers: every sampler of mx.random over
dtypes, shapes, broadcast parameters and keys, run in cmx and in MLX (see
_mlx_diff.py). Samplers draw from the same keys, so the values agree too."""
import itertools

import numpy as np
import pytest

from _mlx_diff import Cases, check, mlx, np_values, make_rng

pytestmark = pytest.mark.skipif(mlx is None, reason="mlx[cpu] not installed")

rng = make_rng(24)
C = Cases()
LOOSE = (1e-4, 1e-4)
SHAPES = [(), (1,), (5,), (3, 4), (2, 3, 2), (0, 3), (7,)]
FLOATS = ["float32", "float16", "bfloat16"]


def case(cid, f, tol=None):
    C.add(cid, f, tol)


def key(m, seed):
    return m.random.key(seed)


for k, (shape, dt) in enumerate(itertools.product(SHAPES, FLOATS)):
    seed = 100 + k
    case(f"random/uniform/{dt}/{shape}",
         lambda m, A, s=shape, d=dt, k=seed: m.random.uniform(
             -2, 3, s, dtype=getattr(m, d), key=key(m, k)), LOOSE)
    case(f"random/normal/{dt}/{shape}",
         lambda m, A, s=shape, d=dt, k=seed: m.random.normal(
             s, dtype=getattr(m, d), loc=0.5, scale=2.0, key=key(m, k)), LOOSE)
    case(f"random/gumbel/{dt}/{shape}",
         lambda m, A, s=shape, d=dt, k=seed: m.random.gumbel(
             s, dtype=getattr(m, d), key=key(m, k)), LOOSE)
    case(f"random/laplace/{dt}/{shape}",
         lambda m, A, s=shape, d=dt, k=seed: m.random.laplace(
             s, dtype=getattr(m, d), loc=1.0, scale=0.5, key=key(m, k)), LOOSE)
    case(f"random/truncated_normal/{dt}/{shape}",
         lambda m, A, s=shape, d=dt, k=seed: m.random.truncated_normal(
             -0.5, 1.5, s, dtype=getattr(m, d), key=key(m, k)), LOOSE)
for k, (shape, dt) in enumerate(itertools.product(
        SHAPES, ["int32", "int8", "uint8", "int16", "uint32", "int64",
                 "uint64", "float32"])):
    case(f"random/randint/{dt}/{shape}",
         lambda m, A, s=shape, d=dt, k=k: m.random.randint(
             0, 50, s, dtype=getattr(m, d), key=key(m, 200 + k)))
for k, shape in enumerate(SHAPES):
    case(f"random/bernoulli/{shape}",
         lambda m, A, s=shape, k=k: m.random.bernoulli(0.4, s, key=key(m, 300 + k)))
# broadcast array parameters
lo, hi = np_values(rng, (3, 1), "float32"), np_values(rng, (4,), "float32", "pos")
case("random/uniform/array_bounds",
     lambda m, A: m.random.uniform(A(lo), A(lo) + A(hi), (3, 4), key=key(m, 1)), LOOSE)
case("random/uniform/array_bounds_noshape",
     lambda m, A: m.random.uniform(A(lo), A(lo) + A(hi), key=key(m, 2)), LOOSE)
case("random/uniform/bad_shape",
     lambda m, A: m.random.uniform(A(lo), A(hi), (2, 2), key=key(m, 3)))
case("random/randint/array_bounds",
     lambda m, A: m.random.randint(A(np.array([[0], [10]], np.int32), "int32"),
                                   A(np.array([5, 20, 30], np.int32), "int32"),
                                   key=key(m, 4)))
p = np.array([[0.1, 0.5, 0.9]], np.float32)
case("random/bernoulli/array_p",
     lambda m, A: m.random.bernoulli(A(p), (4, 3), key=key(m, 5)))
case("random/bernoulli/array_p_noshape",
     lambda m, A: m.random.bernoulli(A(p), key=key(m, 6)))
case("random/truncated_normal/array_bounds",
     lambda m, A: m.random.truncated_normal(A(lo), A(lo) + A(hi), (3, 4),
                                            key=key(m, 7)), LOOSE)
case("random/normal/array_loc",
     lambda m, A: m.random.normal((3, 4), loc=A(lo), scale=A(hi), key=key(m, 8)),
     LOOSE)
logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))
for axis in [-1, 0]:
    case(f"random/categorical/axis{axis}",
         lambda m, A, a=axis: m.random.categorical(A(logits), axis=a, key=key(m, 9)))
    case(f"random/categorical/samples/axis{axis}",
         lambda m, A, a=axis: m.random.categorical(
             A(logits), axis=a, num_samples=5, key=key(m, 10)))
case("random/categorical/shape",
     lambda m, A: m.random.categorical(A(logits), shape=(4, 2), key=key(m, 11)))
case("random/categorical/both",
     lambda m, A: m.random.categorical(A(logits), shape=(4, 2), num_samples=3,
                                       key=key(m, 12)))
x = np_values(rng, (4, 3), "float32")
for axis in [0, 1]:
    case(f"random/permutation/array/axis{axis}",
         lambda m, A, a=axis: m.random.permutation(A(x), axis=a, key=key(m, 13)))
for n in [0, 1, 9]:
    case(f"random/permutation/int/{n}",
         lambda m, A, n=n: m.random.permutation(n, key=key(m, 14)))
for num in [1, 2, 5]:
    case(f"random/split/{num}", lambda m, A, n=num: m.random.split(key(m, 15), n))
case("random/split/batched_key",
     lambda m, A: m.random.split(m.random.split(key(m, 16), 3)))
mean = np.array([0.5, -1.0], np.float32)
cov = np.array([[2.0, 0.3], [0.3, 0.5]], np.float32)
for shape in [(), (3,), (2, 2)]:
    case(f"random/multivariate_normal/{shape}",
         lambda m, A, s=shape: m.random.multivariate_normal(
             A(mean), A(cov), s, key=key(m, 17), stream=m.cpu), (1e-3, 1e-3))
case("random/multivariate_normal/bad_cov",
     lambda m, A: m.random.multivariate_normal(A(mean), A(cov[:1]), (2,),
                                               key=key(m, 18), stream=m.cpu))
# errors of parameters
case("random/uniform/int_dtype",
     lambda m, A: m.random.uniform(shape=(2,), dtype=m.int32, key=key(m, 19)))
case("random/normal/int_dtype",
     lambda m, A: m.random.normal((2,), dtype=m.int32, key=key(m, 20)))
case("random/randint/float_dtype",
     lambda m, A: m.random.randint(0, 5, (3,), dtype=m.float16, key=key(m, 21)))
case("random/bernoulli/bad_p_shape",
     lambda m, A: m.random.bernoulli(A(p), (2, 2), key=key(m, 22)))
case("random/key/negative", lambda m, A: m.random.key(-1))
case("random/categorical/bad_both",
     lambda m, A: m.random.categorical(A(logits), shape=(5,), key=key(m, 24)))


@pytest.mark.parametrize("case_id,fn,tol", C.params())
def test_mlx_diff_random(case_id, fn, tol):
    check(case_id, fn, tol)
