"""Transforms under compile over the fast ops and QuantizedMatmul (whose
rules transform their composite forms), against the same transforms
uncompiled: compile(grad) with every argnum, jvp and vmap under compile,
compile(grad(grad)), grad of a compiled function and, for AddRMSNorm (made
by compile's add_rms_norm pass), compile(grad(compile)).

Also the fuse pass's convexity through regions it already fused: two
regions, each of which is convex in the op graph, where fusing the first
makes a path from the second's inputs to its outputs (the first region's
Compiled op reads a value the second computes and writes one the second
reads). Before the fix, fusing the second closed a cycle: the graph ran an
op on a value not computed yet (a segfault in the one-op run, '[Compiled]
input k is a null array' op by op); the backward graph of
grad(rms_norm(x, w) ** 2, argnums=(0, 1)) has that shape.
"""
import numpy as np
import pytest

import cmx.core as mx


def _close(got, want, rtol=1e-4, atol=1e-5):
    got = got if isinstance(got, (list, tuple)) else [got]
    want = want if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert np.allclose(np.array(g), np.array(w), rtol=rtol, atol=atol)


@pytest.fixture(autouse=True, params=["one_op", "op_by_op"])
def run_mode(request, monkeypatch):
    """Each case runs with compiled graphs run as one op (the default) and
    replayed op by op: the two ways a graph ordered wrongly failed."""
    if request.param == "op_by_op":
        monkeypatch.setenv("CMX_COMPILE_OP_BY_OP", "1")
    else:
        monkeypatch.delenv("CMX_COMPILE_OP_BY_OP", raising=False)


# ----------------------------------------------- fuse: convex in the fused graph

def _two_regions(x, y):
    e = mx.exp(x)                  # region A (x's shape), read by the sum
    b = mx.sin(y)                  # region B (y's shape), read by A
    return e * b[:, None], b * e.sum(1)


def _two_regions_swapped(x, y):
    a, b = _two_regions(x, y)
    return b, a


@pytest.mark.parametrize("fun", [_two_regions, _two_regions_swapped])
def test_fused_region_paths_keep_the_graph_acyclic(fun):
    rng = np.random.default_rng(3)
    x = mx.array(rng.standard_normal((4, 8)).astype(np.float32))
    y = mx.array(rng.standard_normal(4).astype(np.float32))
    f0 = mx._compile_stats()["fused"]
    got = mx.compile(fun)(x, y)
    # one region fuses; the other would read its own output through it
    assert mx._compile_stats()["fused"] == f0 + 1
    _close(got, fun(x, y), rtol=1e-6, atol=0)


# ----------------------------------------------------------------- fast ops

def _arr(rng, *shape):
    return mx.array(rng.standard_normal(shape).astype(np.float32))


def _cases():
    rng = np.random.default_rng(7)
    x, r = _arr(rng, 4, 16), _arr(rng, 4, 16)
    w, b = _arr(rng, 16), _arr(rng, 16)
    q, k, v = _arr(rng, 1, 2, 3, 8), _arr(rng, 1, 2, 5, 8), _arr(rng, 1, 2, 5, 8)
    m = _arr(rng, 1, 2, 3, 5)
    W = _arr(rng, 24, 64)
    Wq, sc, bi = mx.quantize(W, 32, 4)
    xq = _arr(rng, 3, 64)
    eps = 1e-5
    ln = mx.fast.layer_norm
    return {
        "rms_norm": (lambda x, w: mx.fast.rms_norm(x, w, eps), (x, w)),
        "rms_norm_no_weight": (lambda x: mx.fast.rms_norm(x, None, eps), (x,)),
        "layer_norm": (lambda x, w, b: ln(x, w, b, eps), (x, w, b)),
        "layer_norm_weight": (lambda x, w: ln(x, w, None, eps), (x, w)),
        "layer_norm_bias": (lambda x, b: ln(x, None, b, eps), (x, b)),
        "layer_norm_plain": (lambda x: ln(x, None, None, eps), (x,)),
        "rope": (lambda x: mx.fast.rope(x.reshape(1, 4, 16), 16,
                                        traditional=False, base=10000.0,
                                        scale=1.0, offset=3), (x,)),
        "rope_traditional": (lambda x: mx.fast.rope(x.reshape(1, 4, 16), 8,
                                                    traditional=True,
                                                    base=10000.0, scale=0.5,
                                                    offset=0), (x,)),
        "sdpa": (lambda q, k, v: mx.fast.scaled_dot_product_attention(
            q, k, v, scale=0.35), (q, k, v)),
        "sdpa_mask": (lambda q, k, v: mx.fast.scaled_dot_product_attention(
            q, k, v, scale=0.35, mask=m), (q, k, v)),
        "quantized_matmul": (lambda x, s, c: mx.quantized_matmul(
            x, Wq, s, c, True, 32, 4), (xq, sc, bi)),
        # compile's add_rms_norm pass makes this an AddRMSNorm
        "add_rms_norm": (lambda x, r, w: mx.fast.rms_norm(x + r, w, eps),
                         (x, r, w)),
    }


CASES = _cases()


def _loss(f):
    # a cotangent that is a traced value, not ones: the failing shape
    return lambda *a: (f(*a) ** 2 * 0.5 + mx.sin(f(*a))).sum()


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_grad_every_argnum(name):
    f, args = CASES[name]
    loss = _loss(f)
    every = tuple(range(len(args)))
    _close(mx.compile(mx.grad(loss, argnums=every))(*args),
           mx.grad(loss, argnums=every)(*args))
    for i in every:
        _close(mx.compile(mx.grad(loss, argnums=i))(*args),
               mx.grad(loss, argnums=i)(*args))
    # value_and_grad, and grad of the compiled function
    vc, gc = mx.compile(mx.value_and_grad(loss, argnums=every))(*args)
    ve, ge = mx.value_and_grad(loss, argnums=every)(*args)
    _close(vc, ve)
    _close(gc, ge)
    _close(mx.grad(mx.compile(loss), argnums=every)(*args), ge)


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_jvp_and_vmap(name):
    f, args = CASES[name]
    rng = np.random.default_rng(11)
    tans = [mx.array(rng.standard_normal(a.shape).astype(np.float32))
            for a in args]

    def jvp(*a):
        return mx.jvp(f, list(a), tans)

    _close(list(mx.compile(jvp)(*args)[1]), list(jvp(*args)[1]))
    # vmap over a new leading axis of the first input (the others shared)
    xs = mx.stack([args[0], args[0] * 0.5 + 1.0, -args[0]])
    axes = (0,) + (None,) * (len(args) - 1)
    vf = mx.vmap(f, in_axes=axes)
    _close(mx.compile(vf)(xs, *args[1:]), vf(xs, *args[1:]))
    # and the gradient of the batched function, compiled
    vl = mx.vmap(_loss(f), in_axes=axes)
    every = tuple(range(len(args)))
    gl = mx.grad(lambda *a: vl(*a).sum(), argnums=every)
    _close(mx.compile(gl)(xs, *args[1:]), gl(xs, *args[1:]))


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_grad_of_grad(name):
    f, args = CASES[name]
    every = tuple(range(len(args)))
    g1 = mx.grad(_loss(f), argnums=every)

    def h(*a):
        gs = g1(*a)
        gs = gs if isinstance(gs, tuple) else (gs,)
        return sum((g * g).sum() for g in gs)

    g2 = mx.grad(h, argnums=every)
    _close(mx.compile(g2)(*args), g2(*args), rtol=1e-3, atol=1e-4)
    _close(mx.compile(mx.grad(mx.compile(h), argnums=every))(*args),
           g2(*args), rtol=1e-3, atol=1e-4)


def test_add_rms_norm_made_by_compile_then_differentiated():
    """compile(grad(compile(f))): the inner trace holds an AddRMSNorm (the
    pass's), whose vjp transforms its composite inside the outer trace."""
    f, args = CASES["add_rms_norm"]
    loss = _loss(f)
    every = (0, 1, 2)
    want = mx.grad(loss, argnums=every)(*args)
    _close(mx.compile(mx.grad(mx.compile(loss), argnums=every))(*args), want)
    t = [mx.ones_like(a) for a in args]
    _close(mx.compile(lambda *a: mx.jvp(mx.compile(f), list(a), t)[1])(*args),
           mx.jvp(f, list(args), t)[1])
