"""Automatic vectorization (shared/seeds: function transforms): vmap adds
the i-th row of xs to the i-th column of ys, checked against a Python loop,
and both timed.

    PYTHONPATH=build/python python examples/vmap.py
"""

import timeit

import cmx.core as mx

xs = mx.random.uniform(shape=(4096, 100))
ys = mx.random.uniform(shape=(100, 4096))


def naive_add(xs, ys):
    return [xs[i] + ys[:, i] for i in range(xs.shape[0])]


# Vectorize over the first axis of x and the second axis of y.
vmap_add = mx.vmap(lambda x, y: x + y, in_axes=(0, 1))

loop = mx.stack(naive_add(xs, ys))
vec = vmap_add(xs, ys)
print("same result:", mx.array_equal(loop, vec).item(), "shape", vec.shape)
print("direct xs + ys.T agrees:", mx.array_equal(vec, xs + ys.T).item())
t_loop = timeit.timeit(lambda: mx.eval(naive_add(xs, ys)), number=10) / 10
t_vec = timeit.timeit(lambda: mx.eval(vmap_add(xs, ys)), number=10) / 10
print(f"loop {t_loop * 1e3:.2f} ms, vmap {t_vec * 1e3:.2f} ms "
      f"({t_loop / t_vec:.0f}x faster)")
