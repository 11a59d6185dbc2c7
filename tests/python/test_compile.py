"""mx.compile: every example of shared/seeds/compile.rst with its printed
output, the recompilation triggers, captured state (random state too),
transforms, fused results against uncompiled ones (every fusable op and
random graphs of them), and, in fresh processes, the kernel disk cache
(reused without running the compiler; tampered or foreign files
refused), a machine without a compiler, CMX_COMPILE_EXPLAIN and
MLX_DISABLE_COMPILE."""

import math
import os
import random
import subprocess
import sys
import textwrap
from functools import partial

import numpy as np
import pytest

import cmx.core as mx


def stats():
    return mx._compile_stats()


def traces():
    return stats()["traces"]


# ------------------------------------------------------- compile.rst


def test_basics(capsys):
    def fun(x, y):
        return mx.exp(-x) + y

    x = mx.array(1.0)
    y = mx.array(2.0)
    print(fun(x, y))
    compiled_fun = mx.compile(fun)
    print(compiled_fun(x, y))
    assert capsys.readouterr().out == (
        "array(2.36788, dtype=float32)\narray(2.36788, dtype=float32)\n"
    )


def test_not_compiled_again():
    def fun(x, y):
        return mx.exp(-x) + y

    x = mx.array(1.0)
    y = mx.array(2.0)
    compiled_fun = mx.compile(fun)
    t0 = traces()
    compiled_fun(x, y)  # compiled here
    assert traces() == t0 + 1
    compiled_fun(x, y)  # not compiled again
    mx.compile(fun)(x, y)  # not compiled again
    assert traces() == t0 + 1


def test_call_keeps_no_input_alive():
    """A compiled call holds its inputs only while it runs (no reference
    cycle waiting for Python's collector): the caller's last reference
    going frees the buffer, or lets a later op reuse it in place."""
    import gc

    fun = mx.compile(lambda a, b: {"s": a[0] + b[1][0]})
    a = mx.zeros((1 << 20,))  # 4 MB
    b = [mx.array(1.0), (mx.array(2.0),)]
    mx.eval(a, fun(a, b))
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        before = mx.get_active_memory()
        out = fun(a, b)
        mx.eval(out)
        del a
        assert before - mx.get_active_memory() > (4 << 20) - 4096
    finally:
        if enabled:
            gc.enable()


def test_recompile_triggers():
    def fun(x, y):
        return mx.exp(-x) + y

    f = mx.compile(fun)
    a = mx.ones((2, 3))
    t0 = traces()
    f(a, a)
    f(mx.zeros((2, 3)), a)  # same shapes and dtypes: no trace
    assert traces() == t0 + 1
    f(mx.ones((3, 2)), mx.ones((3, 2)))  # shape
    assert traces() == t0 + 2
    f(mx.ones((6,)), mx.ones((6,)))  # number of dimensions
    assert traces() == t0 + 3
    f(a.astype(mx.float16), a)  # type
    assert traces() == t0 + 4

    g = mx.compile(lambda *xs: sum(xs[1:], xs[0]))
    t0 = traces()
    g(a, a)
    g(a, a, a)  # number of inputs
    assert traces() == t0 + 2

    h = mx.compile(lambda x, k: x * k)
    t0 = traces()
    assert h(a, 2).tolist() == [[2.0] * 3] * 2
    assert h(a, 2).tolist() == [[2.0] * 3] * 2
    assert h(a, 3).tolist() == [[3.0] * 3] * 2  # a constant's value
    assert traces() == t0 + 2
    with pytest.raises(ValueError, match="trees of arrays or constants"):
        h(a, object())


def test_lambda_in_a_loop():
    a = mx.array(1.0)
    e0 = stats()["entries"]
    for _ in range(5):
        r = mx.compile(lambda x: mx.exp(mx.abs(x)))(a)
    assert r.item() == pytest.approx(math.e)
    # each lambda's trace went with it
    assert stats()["entries"] == e0


def test_print_inside_is_an_error_and_disable_compile(capsys):
    @mx.compile
    def fun(x):
        z = -x
        print(z)  # an error while compiling
        return mx.exp(z)

    with pytest.raises(ValueError, match="Attempting to eval an array"):
        fun(mx.array(5.0))
    mx.disable_compile()
    try:
        capsys.readouterr()
        assert fun(mx.array(5.0)).item() == pytest.approx(math.exp(-5))
        assert capsys.readouterr().out == "array(-5, dtype=float32)\n"
    finally:
        mx.enable_compile()


def test_pure_functions_state():
    state = []

    @mx.compile
    def fun(x, y):
        z = x + y
        state.append(z)
        return mx.exp(z)

    fun(mx.array(1.0), mx.array(2.0))
    with pytest.raises(ValueError, match="Attempting to eval"):
        print(state)  # a placeholder: an error, not a crash


def test_state_returned(capsys):
    state = []

    @mx.compile
    def fun(x, y):
        z = x + y
        state.append(z)
        return mx.exp(z), state

    _, state = fun(mx.array(1.0), mx.array(2.0))
    print(state)
    assert capsys.readouterr().out == "[array(3, dtype=float32)]\n"


def test_captured_outputs(capsys):
    state = []

    @partial(mx.compile, outputs=state)
    def fun(x, y):
        z = x + y
        state.append(z)
        return mx.exp(z), state

    fun(mx.array(1.0), mx.array(2.0))
    print(state)
    assert capsys.readouterr().out == "[array(3, dtype=float32)]\n"
    fun(mx.array(2.0), mx.array(2.0))  # replayed: the state is updated
    assert len(state) == 1 and state[0].item() == 4.0


def test_constants_and_captured_inputs(capsys):
    state = [mx.array(1.0)]

    @mx.compile
    def fun(x):
        return x + state[0]

    print(fun(mx.array(1.0)))
    state[0] = mx.array(5.0)
    print(fun(mx.array(1.0)))  # still 2: state[0] is a constant

    state = [mx.array(1.0)]

    @partial(mx.compile, inputs=state)
    def fun2(x):
        return x + state[0]

    print(fun2(mx.array(1.0)))
    state[0] = mx.array(5.0)
    print(fun2(mx.array(1.0)))
    assert capsys.readouterr().out == (
        "array(2, dtype=float32)\narray(2, dtype=float32)\n"
        "array(2, dtype=float32)\narray(6, dtype=float32)\n"
    )


def test_transformations_with_compile(capsys):
    grad_fn = mx.grad(mx.exp)
    compiled_grad_fn = mx.compile(grad_fn)
    print(grad_fn(mx.array(1.0)))
    print(compiled_grad_fn(mx.array(1.0)))
    assert capsys.readouterr().out == (
        "array(2.71828, dtype=float32)\narray(2.71828, dtype=float32)\n"
    )

    @mx.compile
    def inner(x):
        return mx.exp(-mx.abs(x))

    def outer(x):
        return inner(inner(x))

    fun = mx.compile(outer)
    x = mx.array([1.0, -2.0, 0.5])
    want = np.exp(-np.abs(np.exp(-np.abs(np.array(x)))))
    assert np.allclose(np.array(fun(x)), want, rtol=1e-6)
    # a transformed compiled function (uncompiled inside)
    g = mx.grad(lambda x: inner(x).sum())(x)
    gx = np.array(x)
    assert np.allclose(np.array(g), -np.sign(gx) * np.exp(-np.abs(gx)), rtol=1e-6)
    v = mx.vmap(inner)(mx.array([[1.0, 2.0], [-3.0, 0.0]]))
    assert np.allclose(np.array(v), np.exp(-np.abs([[1, 2], [-3, 0]])), rtol=1e-6)


def test_shapeless(capsys):
    def fun(x, y):
        return mx.abs(x + y)

    compiled_fun = mx.compile(fun, shapeless=True)
    t0 = traces()
    print(compiled_fun(mx.array(1.0), mx.array(-2.0)))
    print(compiled_fun(mx.array([1.0, -6.0]), mx.array([-2.0, 3.0])))
    # 0-d then 1-d is a change of ndim: one more trace; 1-d shapes after
    # that reuse it
    print(compiled_fun(mx.array([1.0, -6.0, 2.0]), mx.array([-2.0, 3.0, 0.5])))
    assert traces() == t0 + 2
    assert capsys.readouterr().out == (
        "array(1, dtype=float32)\narray([1, 3], dtype=float32)\n"
        "array([1, 3, 2.5], dtype=float32)\n"
    )

    def fun2(x):
        return x.reshape(x.shape[0] * x.shape[1], -1)

    compiled_fun = mx.compile(fun2, shapeless=True)
    compiled_fun(mx.random.uniform(shape=(2, 3, 4)))
    with pytest.raises(ValueError, match=r"reshape.*\(6,4\)"):
        compiled_fun(mx.random.uniform(shape=(5, 5, 3)))

    def fun3(x):
        return x.flatten(0, 1)

    compiled_fun = mx.compile(fun3, shapeless=True)
    assert compiled_fun(mx.random.uniform(shape=(2, 3, 4))).shape == (6, 4)
    x = mx.random.uniform(shape=(5, 5, 3))
    out = compiled_fun(x)  # Ok
    assert out.shape == (25, 3)
    assert np.array_equal(np.array(out), np.array(x).reshape(25, 3))


def test_shapeless_broadcast():
    f = mx.compile(lambda x, y: mx.exp(x * 2 + y), shapeless=True)
    for n in (3, 5, 8):
        x = mx.arange(n, dtype=mx.float32)
        y = mx.array(0.5)
        want = np.exp(np.arange(n, dtype=np.float32) * 2 + 0.5)
        assert np.allclose(np.array(f(x, y)), want, rtol=1e-6)


def test_shapeless_derived_shapes_and_fixed_ones():
    # reductions and transposes derive their shapes from the new inputs
    f = mx.compile(lambda x: (x * 2).sum(axis=0) + x.T.max(axis=1), shapeless=True)
    for shape in ((2, 3), (4, 5), (3, 3)):
        x = mx.random.uniform(shape=shape)
        xn = np.array(x)
        got = f(x)
        assert got.shape == (shape[1],)
        assert np.allclose(np.array(got), (xn * 2).sum(axis=0) + xn.max(axis=0), rtol=1e-5)
    # a slice holds positions of the traced shape: a new shape is an
    # error naming it, not a slice of the wrong extent
    g = mx.compile(lambda x: x[:-1] * 2, shapeless=True)
    assert g(mx.arange(4, dtype=mx.float32)).shape == (3,)
    with pytest.raises(ValueError, match="Slice.*shapeless"):
        g(mx.arange(6, dtype=mx.float32))


def test_compiled_training_step_handwritten():
    """compile.rst's compiled SGD step, with a hand-written linear model,
    binary cross-entropy and SGD with momentum over dicts of arrays: the
    compiled step must reproduce the eager losses."""

    def make():
        mx.random.seed(3)
        params = {"w": mx.random.normal((10, 1)) * 0.1, "b": mx.zeros((1,))}
        opt = {"v_w": mx.zeros((10, 1)), "v_b": mx.zeros((1,))}
        return params, opt

    mx.random.seed(0)
    x = mx.random.uniform(shape=(4, 10))
    y = mx.array([0, 1, 0, 1])

    def loss_fn(p, x, y):
        logits = (x @ p["w"] + p["b"]).squeeze()
        yf = y.astype(mx.float32)
        return mx.mean(mx.logaddexp(0.0, logits) - yf * logits)

    def update(params, opt, grads):
        for k in params:
            v = 0.8 * opt["v_" + k] + grads[k]
            opt["v_" + k] = v
            params[k] = params[k] - 0.1 * v

    def run(compiled):
        params, opt = make()
        state = [params, opt]

        def step(x, y):
            loss, grads = mx.value_and_grad(loss_fn)(params, x, y)
            update(params, opt, grads)
            return loss

        if compiled:
            step = partial(mx.compile, inputs=state, outputs=state)(step)
        losses = []
        for _ in range(10):
            loss = step(x, y)
            mx.eval(state)
            losses.append(loss.item())
        return losses

    t0 = traces()
    eager, comp = run(False), run(True)
    assert traces() == t0 + 1
    assert np.allclose(eager, comp, rtol=1e-5)
    assert comp[-1] < comp[0]


def test_compiled_training_example_nn(capsys):
    nn = pytest.importorskip("cmx.nn", reason="cmx.nn is not in this tree yet")
    optim = pytest.importorskip("cmx.optimizers")
    x = mx.random.uniform(shape=(4, 10))
    y = mx.array([0, 1, 0, 1])
    model = nn.Linear(10, 1)
    optimizer = optim.SGD(learning_rate=0.1, momentum=0.8)

    def loss_fn(model, x, y):
        logits = model(x).squeeze()
        return nn.losses.binary_cross_entropy(logits, y)

    state = [model.state, optimizer.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def step(x, y):
        loss_and_grad_fn = nn.value_and_grad(model, loss_fn)
        loss, grads = loss_and_grad_fn(model, x, y)
        optimizer.update(model, grads)
        return loss

    losses = []
    for it in range(10):
        loss = step(x, y)
        mx.eval(state)
        print(loss)
        losses.append(loss.item())
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 10 and all(
        line.startswith("array(") and line.endswith("dtype=float32)") for line in out
    )
    assert losses[-1] < losses[0]


def test_random_state_captured():
    def draw():
        return mx.random.uniform(shape=(3,))

    mx.random.seed(7)
    eager = [np.array(draw()) for _ in range(3)]
    f = partial(mx.compile, inputs=mx.random.state, outputs=mx.random.state)(draw)
    mx.random.seed(7)
    comp = [np.array(f()) for _ in range(3)]
    for e, c in zip(eager, comp):
        assert np.array_equal(e, c)
    # eager draws continue from the state the compiled calls left
    mx.random.seed(7)
    for _ in range(3):
        draw()
    want = np.array(draw())
    mx.random.seed(7)
    for _ in range(3):
        f()
    assert np.array_equal(np.array(draw()), want)


def test_random_state_not_captured_is_constant():
    f = mx.compile(lambda: mx.random.uniform(shape=(4,)))
    a, b = np.array(f()), np.array(f())
    assert np.array_equal(a, b)  # as MLX: capture mx.random.state to advance


def test_disable_compile_env_flag_in_state():
    assert mx._compile_enabled()
    mx.disable_compile()
    assert not mx._compile_enabled()
    mx.enable_compile()
    assert mx._compile_enabled()


# ------------------------------------------------------- fused results

UNARY = [
    mx.abs, mx.negative, mx.square, mx.sqrt, mx.rsqrt, mx.exp, mx.expm1,
    mx.log, mx.log2, mx.log10, mx.log1p, mx.erf, mx.erfinv, mx.sin, mx.cos,
    mx.tan, mx.arcsin, mx.arccos, mx.arctan, mx.sinh, mx.cosh, mx.tanh,
    mx.arcsinh, mx.arccosh, mx.arctanh, mx.sigmoid, mx.floor, mx.ceil,
    mx.round, mx.sign, mx.reciprocal, mx.isnan, mx.isinf, mx.logical_not,
]
BINARY = [
    mx.add, mx.subtract, mx.multiply, mx.divide, mx.maximum, mx.minimum,
    mx.power, mx.arctan2, mx.logaddexp, mx.remainder, mx.floor_divide,
    mx.equal, mx.not_equal, mx.less, mx.less_equal, mx.greater,
    mx.greater_equal, mx.logical_and, mx.logical_or,
]
# Fused steps are contracted (FMA) exactly where libcmx's eager rows are,
# so fused results are the eager bits (with a gcc-built libcmx and gcc as
# the system compiler, as here).
HEAVY = set()


def _agree(a, b, tol):
    if a.dtype == mx.bfloat16:  # numpy has no bfloat16; float32 holds it
        a, b = a.astype(mx.float32), b.astype(mx.float32)
    a, b = np.array(a), np.array(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    if tol == 0:
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    else:
        assert np.allclose(a, b, rtol=tol, atol=0, equal_nan=True)


@pytest.fixture(scope="module")
def values():
    rng = np.random.default_rng(0)
    v = rng.uniform(-3, 3, size=(7, 9)).astype(np.float32)
    v[0, :5] = [0.0, -0.0, np.inf, -np.inf, np.nan]
    w = rng.uniform(-3, 3, size=(7, 9)).astype(np.float32)
    return mx.array(v), mx.array(w)


@pytest.mark.parametrize("op", UNARY, ids=lambda f: f.__name__)
def test_fused_unary(op, values):
    x, w = values
    fun = lambda x, w: op(x * 0.5 + w)  # noqa: E731
    f0 = stats()["fused"]
    got = mx.compile(fun)(x, w)
    assert stats()["fused"] == f0 + 1
    _agree(got, fun(x, w), 4e-7 if op in HEAVY else 0)


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_fused_binary(op, values):
    x, w = values
    fun = lambda x, w: op(x * 0.5, mx.abs(w))  # noqa: E731
    got = mx.compile(fun)(x, w)
    _agree(got, fun(x, w), 4e-7 if op in HEAVY else 0)


OPS1 = [mx.sin, mx.cos, mx.abs, mx.negative, mx.square, mx.tanh, mx.exp,
        lambda x: mx.sqrt(mx.abs(x)), lambda x: x * 0.5, lambda x: x + 1.0,
        lambda x: mx.maximum(x, 0.0), mx.floor, mx.sigmoid,
        lambda x: x.astype(mx.float16).astype(mx.float32)]
OPS2 = [mx.add, mx.subtract, mx.multiply, mx.maximum, mx.minimum,
        lambda a, b: mx.where(a > b, a, b * 2), mx.arctan2]


def _random_graph(rng, nin):
    """A random elementwise function of nin inputs (a list of steps)."""
    steps = []
    nvals = nin
    for _ in range(rng.randint(3, 10)):
        if rng.random() < 0.5:
            steps.append((rng.randrange(len(OPS1)), rng.randrange(nvals)))
        else:
            steps.append((rng.randrange(len(OPS2)), rng.randrange(nvals),
                          rng.randrange(nvals)))
        nvals += 1
    outs = sorted({nvals - 1, rng.randrange(nin, nvals)})

    def fun(*xs):
        vals = list(xs)
        for s in steps:
            if len(s) == 2:
                vals.append(OPS1[s[0]](vals[s[1]]))
            else:
                vals.append(OPS2[s[0]](vals[s[1]], vals[s[2]]))
        return [vals[i] for i in outs]

    return fun


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs(seed):
    rng = random.Random(seed)
    nin = rng.randint(1, 3)
    fun = _random_graph(rng, nin)
    shapes = [(5, 6), (6,), (1, 6), ()]
    xs = [mx.array(np.random.default_rng(seed + i).uniform(-2, 2, size=(5, 6))
                   .astype(np.float32)) for i in range(nin)]
    # one input broadcast, one transposed
    if nin > 1:
        xs[1] = mx.array(np.random.default_rng(seed).uniform(-2, 2, size=shapes[seed % 4])
                         .astype(np.float32))
    if nin > 2:
        xs[2] = mx.array(np.random.default_rng(seed + 9).uniform(-2, 2, size=(6, 5))
                         .astype(np.float32)).T
    want = fun(*xs)
    got = mx.compile(fun)(*xs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _agree(g, w, 0)


def test_dtypes_fused():
    for dt in (mx.float16, mx.bfloat16, mx.float64, mx.int32, mx.uint8,
               mx.int64, mx.complex64):
        x = mx.arange(12).reshape(3, 4).astype(dt)
        y = (mx.arange(12) % 5 + 1).reshape(3, 4).astype(dt)
        fun = lambda x, y: (x * y + x) - y * y  # noqa: E731
        _agree(mx.compile(fun)(x, y), fun(x, y), 0)


# ------------------------------------------------------- fresh processes

_SCRIPT = """
import sys, math, json
import cmx.core as mx
def gelu(x):
    return x * (1 + mx.erf(x / math.sqrt(2))) / 2
x = mx.arange(-8, 8, dtype=mx.float32) / 3
y = mx.compile(gelu)(x)
assert abs(y[-1].item() - gelu(x)[-1].item()) < 1e-6
print(json.dumps(mx._compile_stats()))
"""


def _run(env_extra, script=_SCRIPT):
    env = dict(os.environ)
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run([sys.executable, "-c", script], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    import json

    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


@pytest.fixture()
def logging_cc(tmp_path):
    """A compiler wrapper that logs each run, then runs cc."""
    log = tmp_path / "cc.log"
    cc = tmp_path / "cc"
    cc.write_text(f"#!/bin/sh\necho run >> {log}\nexec cc \"$@\"\n")
    cc.chmod(0o755)
    return cc, log


def test_disk_cache_reused_by_another_process(tmp_path, logging_cc):
    cc, log = logging_cc
    # the C compiler's kernels: the CPU's, whatever the default device
    env = {"CMX_CACHE_DIR": str(tmp_path / "cache"), "CMX_CC": str(cc),
           "CMX_DEFAULT_DEVICE": "cpu"}
    s1, _ = _run(env)
    assert s1["kernels_built"] == 1 and s1["disk_hits"] == 0
    runs = log.read_text().count("run")
    assert runs == 1
    files = list((tmp_path / "cache" / "cpu").glob("fused-*.so"))
    assert len(files) == 1
    assert (files[0].stat().st_mode & 0o777) == 0o600
    assert ((tmp_path / "cache" / "cpu").stat().st_mode & 0o777) == 0o700
    s2, _ = _run(env)
    assert s2["kernels_built"] == 0 and s2["disk_hits"] == 1
    assert log.read_text().count("run") == runs  # the compiler did not run

    # a tampered entry is refused and built again
    data = bytearray(files[0].read_bytes())
    data[-100] ^= 0xFF
    files[0].write_bytes(bytes(data))
    s3, _ = _run(env)
    assert s3["disk_rejects"] == 1 and s3["kernels_built"] == 1
    assert log.read_text().count("run") == runs + 1
    s4, _ = _run(env)  # rewritten: good again
    assert s4["disk_hits"] == 1 and s4["kernels_built"] == 0

    # an entry others may write, or owned by someone else, is refused
    files[0].chmod(0o666)
    s5, _ = _run(env)
    assert s5["disk_rejects"] == 1 and s5["kernels_built"] == 1
    if os.geteuid() == 0:
        os.chown(files[0], 12345, 12345)
        s6, _ = _run(env)
        assert s6["disk_rejects"] == 1 and s6["kernels_built"] == 1


def test_without_a_compiler(tmp_path):
    s, err = _run({"CMX_CACHE_DIR": str(tmp_path / "c"),
                   "CMX_CC": str(tmp_path / "no-such-cc"),
                   "CMX_COMPILE_EXPLAIN": "1",
                   "CMX_DEFAULT_DEVICE": "cpu"})  # the C compiler: the CPU
    assert s["traces"] == 1 and s["fused"] == 0 and s["kernels_built"] == 0


def test_explain(tmp_path):
    script = """
import json
import cmx.core as mx
def f(x):
    return mx.exp(x) * 2
g = mx.compile(f)
g(mx.ones((2,)))
g(mx.ones((2,)))
g(mx.ones((3,)))
g(mx.ones((3,), dtype=mx.float16))
print(json.dumps(mx._compile_stats()))
"""
    s, err = _run({"CMX_CACHE_DIR": str(tmp_path / "c"),
                   "CMX_COMPILE_EXPLAIN": "1"}, script)
    lines = [l for l in err.splitlines() if l.startswith("[compile] tracing")]
    assert lines == [
        "[compile] tracing f: first call",
        "[compile] tracing f: input 0's shape changed from (2) to (3)",
        "[compile] tracing f: input 0's dtype changed from float32 to float16",
    ]


@pytest.mark.parametrize("var", ["MLX_DISABLE_COMPILE", "CMX_DISABLE_COMPILE"])
def test_disable_compile_variables(tmp_path, var):
    script = """
import json
import cmx.core as mx
@mx.compile
def fun(x):
    z = -x
    print(z)
    return mx.exp(z)
fun(mx.array(5.0))
print(json.dumps(mx._compile_stats()))
"""
    s, _ = _run({"CMX_CACHE_DIR": str(tmp_path / "c"), var: "1"}, script)
    assert s["traces"] == 0


def test_gelu_kernel_is_one_region():
    def gelu(x):
        return x * (1 + mx.erf(x / math.sqrt(2))) / 2

    f0 = stats()["fused"]
    x = mx.random.uniform(shape=(4, 100))
    y = mx.compile(gelu)(x)
    assert stats()["fused"] == f0 + 1
    _agree(y, gelu(x), 0)


def test_trace_key_tells_structures_and_constants_apart():
    # A trace per distinct argument structure/constant: the function's
    # Python body runs once per trace, never for a call that replays one.
    traces = []

    @mx.compile
    def fun(x, *rest, **kw):
        traces.append((rest, tuple(sorted(kw))))
        return x * 2

    x = mx.array([1.0, 2.0])
    calls = [
        (x,), (x, 1), (x, 1.0), (x, True), (x, "1"), (x, None),
        (x, [x]), (x, (x,)), (x, [[x]]), (x, [x, x]), (x, {"a": x}),
        (x, {"b": x}), (x, {1: x}), (x, {"1": x}), (x, "A"), (x, "K1:'a'"),
    ]
    for args in calls:
        assert np.array_equal(np.array(fun(*args)), [2.0, 4.0])
    assert len(traces) == len(calls)
    for args in calls:  # all replayed now
        fun(*args)
    assert len(traces) == len(calls)
    fun(x, k=x)
    fun(x, j=x)
    fun(x, k=x)
    assert len(traces) == len(calls) + 2
    out = fun(x, {"a": [x, (x, 3)]})
    assert np.array_equal(np.array(out), [2.0, 4.0])
    with pytest.raises(ValueError, match=r"\[compile\] Function arguments"):
        fun(x, object())


# ------------------------------------------- CPU walks and donation


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.int8])
def test_short_rows_match_eager(dtype):
    """Rows shorter than a kernel block (NHWC bias and relu, a row per
    batch, a value per row, rows of strided pooling views) give the eager
    results on the CPU."""
    rng = np.random.default_rng(5)

    def arr(shape):
        return mx.array(rng.random(shape) * 10 - 5).astype(dtype)

    def bias_relu(x, b):
        return mx.maximum(x + b, 0) * 2, x - b

    def pool(x):
        return mx.maximum(mx.maximum(x[:, ::2, ::2], x[:, 1::2, ::2]),
                          mx.maximum(x[:, ::2, 1::2], x[:, 1::2, 1::2]))

    cases = [((128, 6, 6, 32), (32,)), ((5, 9, 7), (5, 1, 7)), ((50, 8), (50, 1)),
             ((300, 2), (2,)), ((4, 129), (129,)), ((3, 37, 24), (1, 24))]
    with mx.stream(mx.cpu):
        for xs, bs in cases:
            x, b = arr(xs), arr(bs)
            for e, c in zip(bias_relu(x, b), mx.compile(bias_relu)(x, b)):
                assert np.array_equal(np.array(e.astype(mx.float32)),
                                      np.array(c.astype(mx.float32))), (xs, bs)
        x = arr((8, 12, 12, 6))
        assert np.array_equal(np.array(pool(x).astype(mx.float32)),
                              np.array(mx.compile(pool)(x).astype(mx.float32)))


def test_dead_argument_is_donated():
    """A fused output takes the buffer of an argument nothing else holds
    (no new memory at its evaluation); an argument the caller still holds
    keeps its buffer and values."""
    f = mx.compile(lambda x: mx.exp(x) * 2 + 1)
    g = mx.compile(lambda t: mx.exp(t["x"][0]) * 2 + 1)  # a tree argument
    n = 1 << 20  # 4 MiB of float32
    with mx.stream(mx.cpu):
        for held, tree in ((False, False), (True, False), (False, True),
                           (True, True), (False, False)):
            x = mx.random.uniform(shape=(n,))
            mx.eval(x)
            xn = np.array(x)
            before = mx.get_active_memory()
            mx.reset_peak_memory()
            y = g({"x": [x]}) if tree else f(x)
            if not held:
                del x
            mx.eval(y)
            extra = mx.get_peak_memory() - before
            if held:
                assert extra >= 4 * n
                assert np.array_equal(np.array(x), xn)
            else:
                assert extra < 4 * n // 2
            assert np.allclose(np.array(y), np.exp(xn) * 2 + 1, rtol=1e-6)
            del y


# ------------------------------- residual add + rms_norm (add_rms_norm pass)

def _residual_block(x, wa, wm, w1, w2):
    """Two residual adds, each feeding an rms_norm: compile fuses each add
    with its norm (one AddRMSNorm kernel)."""
    h = x + mx.fast.rms_norm(x, w1, 1e-5) @ wa
    out = h + mx.fast.rms_norm(h, w2, 1e-5) @ wm
    return mx.fast.rms_norm(out, w1, 1e-5), out, h


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("weights", [True, False])
@pytest.mark.parametrize("rows", [1, 5])
def test_compiled_residual_norm_equals_uncompiled(device, dtype, weights, rows):
    """Compiled and uncompiled results are the same bits on each device (the
    fused kernel rounds h as Add does and norms that rounded h as RMSNorm
    does); on the GPU they also match the CPU's to the dtype's tolerance."""
    from conftest import cpu_match

    dt = getattr(mx, dtype)
    rng = np.random.default_rng(15)
    D = 576
    x = rng.standard_normal((rows, D)).astype(np.float32)
    wa, wm = (rng.standard_normal((D, D)).astype(np.float32) / D for _ in "am")
    w1, w2 = (rng.standard_normal(D).astype(np.float32) for _ in "12")

    def run():
        args = [mx.array(a).astype(dt) for a in (x, wa, wm)]
        ws = [mx.array(w).astype(dt) if weights else None for w in (w1, w2)]
        want = _residual_block(*args, *ws)
        got = mx.compile(_residual_block)(*args, *ws)
        for g, w in zip(got, want):
            assert g.dtype == dt
            assert np.array_equal(np.array(g.astype(mx.float32)),
                                  np.array(w.astype(mx.float32)))
        return got

    tol = 1e-4 if dtype == "float32" else 3e-2
    cpu_match(device, run, rtol=tol, atol=tol)


def test_grads_through_compiled_residual_norm(on_device):
    """Gradients of a compiled function holding the pattern (the fused op's
    vjp runs through its composite) match the uncompiled function's, and so
    do those of the compiled gradient, jvp and vmap."""
    rng = np.random.default_rng(5)
    x, r = (mx.array(rng.standard_normal((3, 64)).astype(np.float32))
            for _ in "xr")
    w = mx.array(rng.standard_normal(64).astype(np.float32))

    def loss(x, r, w):
        h = x + mx.sin(r)
        y = mx.fast.rms_norm(h, w, 1e-5)
        return (y * y * mx.cos(h)).sum() + (h * h).sum()

    def close(a, b):
        assert np.allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-5)

    want = mx.grad(loss, argnums=(0, 1, 2))(x, r, w)
    for g, e in zip(mx.grad(mx.compile(loss), argnums=(0, 1, 2))(x, r, w),
                    want):
        close(g, e)
    # the compiled gradient, the weight's included
    got = mx.compile(mx.grad(loss, argnums=(0, 1, 2)))(x, r, w)
    assert len(got) == 3
    for g, e in zip(got, want):
        close(g, e)
    t = mx.ones_like(x)
    _, jc = mx.jvp(mx.compile(loss), (x, r, w), (t, t, mx.ones_like(w)))
    _, je = mx.jvp(loss, (x, r, w), (t, t, mx.ones_like(w)))
    close(jc[0], je[0])
    vm = mx.vmap(mx.compile(loss), in_axes=(0, 0, None))
    ve = mx.vmap(loss, in_axes=(0, 0, None))
    close(vm(x[:, None], r[:, None], w), ve(x[:, None], r[:, None], w))



def test_compiling_a_transform_of_a_compiled_function():
    """compile(T(compile(f))) computes T(f): the transform's wrapper
    (functools.wraps) carries the inner compiled function's attributes,
    which compile's own update_wrapper copied over its state (the outer
    compiled function was the inner one: compile(grad(compile(f))) gave
    f's value)."""
    f = lambda x, w: (mx.sin(x) * w).sum()  # noqa: E731
    x, w = mx.array([0.5, 1.0, 2.0]), mx.array([1.0, -2.0, 3.0])
    xn, wn = np.array(x), np.array(w)
    cf = mx.compile(f)
    gx, gw = mx.compile(mx.grad(cf, argnums=(0, 1)))(x, w)
    assert np.allclose(np.array(gx), np.cos(xn) * wn)
    assert np.allclose(np.array(gw), np.sin(xn))
    v, g = mx.compile(mx.value_and_grad(cf))(x, w)
    assert np.isclose(v.item(), (np.sin(xn) * wn).sum())
    assert np.allclose(np.array(g), np.cos(xn) * wn)
    xb = mx.stack([x, 2 * x])
    got = mx.compile(mx.vmap(cf, in_axes=(0, None)))(xb, w)
    assert got.shape == (2,)
    assert np.allclose(np.array(got), (np.sin(np.array(xb)) * wn).sum(1))


# ------------------------------- RoPEs at one offset (rope_multi pass)

def _qk_rope(q, k, offset, freqs=None, traditional=False):
    """Attention's two RoPEs: q (B, 9, L, 64) fully, k (B, 3, L, 128) on its
    first 64 features, at one offset: compile makes them one RoPEMulti."""
    base = None if freqs is not None else 10000.0
    return (mx.fast.rope(q, 64, traditional=traditional, base=base, scale=1.0,
                         offset=offset, freqs=freqs),
            mx.fast.rope(k, 64, traditional=traditional, base=base, scale=1.0,
                         offset=offset, freqs=freqs))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("traditional", [False, True])
@pytest.mark.parametrize("kind", ["scalar", "vector", "freqs", "strided"])
def test_compiled_qk_rope_equals_uncompiled(device, dtype, traditional, kind):
    """Compiled and uncompiled q/k RoPEs are the same bits on each device
    (one launch computes each element as RoPE's kernel does); on the GPU
    they also match the CPU's to the dtype's tolerance. Kinds: a 0-d
    offset, a (B) offset, freqs, q a transposed view."""
    from conftest import cpu_match

    dt = getattr(mx, dtype)
    rng = np.random.default_rng(78)
    B = 2 if kind == "vector" else 1
    L = 1 if kind == "scalar" else 4
    qn = rng.standard_normal((B, L, 9, 64) if kind == "strided"
                             else (B, 9, L, 64)).astype(np.float32)
    kn = rng.standard_normal((B, 3, L, 128)).astype(np.float32)
    fr = np.abs(rng.standard_normal(32)).astype(np.float32) + 0.1
    off = [37, 201][:B] if kind == "vector" else 113

    def run():
        q, k = mx.array(qn).astype(dt), mx.array(kn).astype(dt)
        o = mx.array(off, dtype=mx.int32)
        f = mx.array(fr) if kind == "freqs" else None

        def fn(q, k, o):
            if kind == "strided":
                q = q.swapaxes(1, 2)
            return _qk_rope(q, k, o, f, traditional)

        want = fn(q, k, o)
        got = mx.compile(fn)(q, k, o)
        for g, w in zip(got, want):
            assert g.dtype == dt and g.shape == w.shape
            assert np.array_equal(np.array(g.astype(mx.float32)),
                                  np.array(w.astype(mx.float32)))
        return got

    tol = 1e-4 if dtype == "float32" else 3e-2
    cpu_match(device, run, rtol=tol, atol=tol)


def test_compiled_qk_rope_is_one_op(monkeypatch):
    """The compiled graph (replayed op by op to see it) holds one RoPEMulti
    and no RoPE; CMX_COMPILE_ROPE_MULTI=0 keeps the two RoPEs."""
    monkeypatch.setenv("CMX_COMPILE_OP_BY_OP", "1")
    rng = np.random.default_rng(1)
    q = mx.array(rng.standard_normal((1, 9, 1, 64)).astype(np.float32))
    k = mx.array(rng.standard_normal((1, 3, 1, 128)).astype(np.float32))
    o = mx.array(5, dtype=mx.int32)
    for env, multi, single in (("1", 1, 0), ("0", 0, 2)):
        monkeypatch.setenv("CMX_COMPILE_ROPE_MULTI", env)
        outs = mx.compile(lambda q, k, o: _qk_rope(q, k, o))(q, k, o)
        dot = mx._export_to_dot(list(outs))
        assert dot.count("RoPEMulti") == multi, dot
        assert dot.count("RoPE(") == single, dot


def test_grads_through_compiled_qk_rope(on_device):
    """Gradients of a compiled function holding two RoPEs at one offset
    (the fused op's vjp runs through RoPE's composite per input) match the
    uncompiled function's, and so do the compiled gradient, jvp and vmap."""
    rng = np.random.default_rng(9)
    q = mx.array(rng.standard_normal((1, 4, 3, 16)).astype(np.float32))
    k = mx.array(rng.standard_normal((1, 2, 3, 32)).astype(np.float32))
    off = mx.array(7, dtype=mx.int32)

    def loss(q, k):
        rq = mx.fast.rope(q, 16, traditional=False, base=10000.0, scale=1.0,
                          offset=off)
        rk = mx.fast.rope(k, 16, traditional=False, base=10000.0, scale=1.0,
                          offset=off)
        return (rq * mx.cos(rq)).sum() + (rk * rk).sum() * 0.5

    def close(a, b):
        assert np.allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-5)

    want = mx.grad(loss, argnums=(0, 1))(q, k)
    for g, e in zip(mx.grad(mx.compile(loss), argnums=(0, 1))(q, k), want):
        close(g, e)
    for g, e in zip(mx.compile(mx.grad(loss, argnums=(0, 1)))(q, k), want):
        close(g, e)
    tq, tk = mx.ones_like(q), mx.ones_like(k)
    _, jc = mx.jvp(mx.compile(loss), (q, k), (tq, tk))
    _, je = mx.jvp(loss, (q, k), (tq, tk))
    close(jc[0], je[0])
    vm = mx.vmap(mx.compile(loss), in_axes=(0, 0))
    ve = mx.vmap(loss, in_axes=(0, 0))
    close(vm(q[None], k[None]), ve(q[None], k[None]))


# --------------------- quantized gate_up and SwiGLU (qmm_swiglu pass)

def _gate_up_silu(x, wq, s, b, group, bits):
    """examples/llm's MLP on its fused gate_up projection, before `down`:
    y = x @ W.T, silu(first half) * second half (nn.silu: x * sigmoid(x))."""
    import cmx.nn as nn

    y = mx.quantized_matmul(x, wq, s, b, transpose=True, group_size=group,
                            bits=bits)
    n = y.shape[-1] // 2
    return nn.silu(y[..., :n]) * y[..., n:]


def _gate_up_inputs(dtype, group, bits, K=576, N=3072, rows=1, seed=79):
    rng = np.random.default_rng(seed)
    x = mx.array(rng.standard_normal((1, rows, K)).astype(np.float32)).astype(dtype)
    w = mx.array((rng.standard_normal((N, K)) * 0.05).astype(np.float32)).astype(dtype)
    wq, s, b = mx.quantize(w, group_size=group, bits=bits)
    return x, wq, s, b


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("bits,group", [(4, 32), (4, 64), (8, 32), (8, 64)])
@pytest.mark.parametrize("N", [3072, 128])
def test_compiled_swiglu_equals_uncompiled(device, dtype, bits, group, N,
                                           monkeypatch):
    """Compiled (one QuantizedMatmulSwiGLU) and uncompiled (the product,
    slices, sigmoid and products) are the same bits on each device, and so
    is the compiled function with CMX_COMPILE_SWIGLU=0; on the GPU they
    also match the CPU's to the dtype's tolerance. N 3072 is SmolLM2's
    gate_up; N 128 takes the GPU's other mat-vec kernel."""
    from conftest import cpu_match

    dt = getattr(mx, dtype)

    def run():
        x, wq, s, b = _gate_up_inputs(dt, group, bits, K=576 if N > 128 else 64,
                                      N=N)

        def fn(x, wq, s, b):
            return _gate_up_silu(x, wq, s, b, group, bits)

        want = fn(x, wq, s, b)
        got = mx.compile(fn)(x, wq, s, b)
        monkeypatch.setenv("CMX_COMPILE_SWIGLU", "0")
        off = mx.compile(lambda *a: fn(*a))(x, wq, s, b)
        monkeypatch.delenv("CMX_COMPILE_SWIGLU")
        assert got.dtype == dt and got.shape == (1, 1, N // 2)
        w32 = np.array(want.astype(mx.float32))
        assert np.abs(w32).max() > 0
        assert np.array_equal(np.array(got.astype(mx.float32)), w32)
        assert np.array_equal(np.array(off.astype(mx.float32)), w32)
        return got

    tol = 1e-4 if dtype == "float32" else 3e-2
    cpu_match(device, run, rtol=tol, atol=tol)


def test_compiled_swiglu_is_one_op(monkeypatch):
    """The compiled graph (replayed op by op to see it) holds one
    QuantizedMatmulSwiGLU and no QuantizedMatmul or Sigmoid;
    CMX_COMPILE_SWIGLU=0 keeps them; x of 2 rows and a half read elsewhere
    stay unfused."""
    monkeypatch.setenv("CMX_COMPILE_OP_BY_OP", "1")
    x, wq, s, b = _gate_up_inputs(mx.float32, 32, 4, K=64, N=128)

    def fn(x, wq, s, b):
        return _gate_up_silu(x, wq, s, b, 32, 4)

    def count(f, *a):
        out = mx.compile(f)(*a)
        dot = mx._export_to_dot(list(out) if isinstance(out, tuple) else [out])
        return (dot.count("QuantizedMatmulSwiGLU"), dot.count("QuantizedMatmul("),
                dot.count("Sigmoid"))

    for env, want in (("1", (1, 0, 0)), ("0", (0, 1, 1))):
        monkeypatch.setenv("CMX_COMPILE_SWIGLU", env)
        assert count(lambda *a: fn(*a), x, wq, s, b) == want
    monkeypatch.delenv("CMX_COMPILE_SWIGLU")
    x2 = mx.concatenate([x, x], axis=1)  # two rows
    assert count(lambda *a: fn(*a), x2, wq, s, b) == (0, 1, 1)

    def with_half(x, wq, s, b):  # the first half read elsewhere too
        y = mx.quantized_matmul(x, wq, s, b, transpose=True, group_size=32, bits=4)
        a = y[..., :64]
        return a * mx.sigmoid(a) * y[..., 64:], a

    assert count(with_half, x, wq, s, b) == (0, 1, 1)


def test_grads_through_compiled_swiglu(on_device):
    """Gradients through a compiled function holding the fused op (its vjp
    runs through the composite) match the uncompiled function's, and so do
    the compiled gradient, jvp and vmap."""
    x, wq, s, b = _gate_up_inputs(mx.float32, 32, 4, K=64, N=128, seed=3)

    def loss(x):
        return (_gate_up_silu(x, wq, s, b, 32, 4) ** 2).sum()

    def close(a, e):
        assert np.allclose(np.array(a), np.array(e), rtol=1e-4, atol=1e-5)

    want = mx.grad(loss)(x)
    assert np.abs(np.array(want)).max() > 0
    close(mx.grad(mx.compile(loss))(x), want)
    close(mx.compile(mx.grad(loss))(x), want)
    t = mx.ones_like(x)
    _, jc = mx.jvp(mx.compile(loss), (x,), (t,))
    _, je = mx.jvp(loss, (x,), (t,))
    close(jc[0], je[0])
    close(mx.vmap(mx.compile(loss))(x[None]), mx.vmap(loss)(x[None]))


# ------------- residual add + rms_norm into the next one-row quantized product
# (norm_qmm pass)

def _norm_qmv_layer(x, r, w, wq, s, b, group, bits, swiglu):
    """A decoding layer's residual add and norm feeding the next quantized
    projection: h = x + r, y = rms_norm(h, w); the fused qkv product of y,
    or (swiglu) examples/llm's MLP gate_up then silu(first half) * second
    half. Returns (product, h): h keeps its own use."""
    import cmx.nn as nn

    h = x + r
    y = mx.fast.rms_norm(h, w, 1e-5)
    o = mx.quantized_matmul(y, wq, s, b, transpose=True, group_size=group,
                            bits=bits)
    if swiglu:
        n = o.shape[-1] // 2
        o = nn.silu(o[..., :n]) * o[..., n:]
    return o, h


def _norm_qmv_inputs(dtype, group, bits, D, N, rows=1, seed=80):
    rng = np.random.default_rng(seed)
    x, r = (mx.array(rng.standard_normal((1, rows, D)).astype(np.float32)).astype(dtype)
            for _ in "xr")
    w = mx.array((1 + 0.1 * rng.standard_normal(D)).astype(np.float32)).astype(dtype)
    wm = mx.array((rng.standard_normal((N, D)) * 0.05).astype(np.float32)).astype(dtype)
    wq, s, b = mx.quantize(wm, group_size=group, bits=bits)
    return x, r, w, wq, s, b


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("bits,group", [(4, 32), (8, 64)])
@pytest.mark.parametrize("D,N,swiglu", [(576, 960, False), (576, 3072, True),
                                        (960, 1600, False), (960, 5120, True)])
def test_compiled_norm_qmv_equals_uncompiled(device, dtype, bits, group, D, N,
                                             swiglu, monkeypatch):
    """Compiled (one AddRMSNormQuantizedMatmul) and uncompiled (add,
    rms_norm, the product and its SwiGLU) are the same bits on each device,
    and so is the compiled function with CMX_COMPILE_NORM_QMV=0 (AddRMSNorm
    then the product's own kernel); on the GPU they also match the CPU's to
    the dtype's tolerance. SmolLM2-135M's (D 576) and -360M's (D 960) qkv
    and gate_up shapes."""
    from conftest import cpu_match

    dt = getattr(mx, dtype)

    def run():
        args = _norm_qmv_inputs(dt, group, bits, D, N)

        def fn(*a):
            return _norm_qmv_layer(*a, group, bits, swiglu)

        want = fn(*args)
        monkeypatch.setenv("CMX_COMPILE_NORM_QMV", "1")  # opt-in
        got = mx.compile(fn)(*args)
        monkeypatch.setenv("CMX_COMPILE_NORM_QMV", "0")
        off = mx.compile(lambda *a: fn(*a))(*args)
        monkeypatch.delenv("CMX_COMPILE_NORM_QMV")
        assert got[0].shape == (1, 1, N // 2 if swiglu else N)
        for g, w, o in zip(got, want, off):
            assert g.dtype == dt
            w32 = np.array(w.astype(mx.float32))
            assert len(np.unique(w32)) > 2
            assert np.array_equal(np.array(g.astype(mx.float32)), w32)
            assert np.array_equal(np.array(o.astype(mx.float32)), w32)
        return got

    tol = 1e-4 if dtype == "float32" else 3e-2
    cpu_match(device, run, rtol=tol, atol=tol)


def _op_names(out):
    import re

    dot = mx._export_to_dot(list(out) if isinstance(out, tuple) else [out])
    return re.findall(r'label="(\w+)', dot)


def test_compiled_norm_qmv_is_one_op(monkeypatch):
    """The compiled graph (replayed op by op to see it) holds one
    AddRMSNormQuantizedMatmul and no AddRMSNorm or QuantizedMatmul(SwiGLU),
    for both consumers; CMX_COMPILE_NORM_QMV=0 keeps AddRMSNorm and the
    product, and so does leaving it unset (the pass is opt-in); x of 2 rows
    and y read elsewhere stay unfused."""
    monkeypatch.setenv("CMX_COMPILE_OP_BY_OP", "1")
    names = ("AddRMSNormQuantizedMatmul", "AddRMSNorm", "QuantizedMatmul",
             "QuantizedMatmulSwiGLU")

    def count(f, *a):
        ops = _op_names(mx.compile(f)(*a))
        return tuple(ops.count(n) for n in names)

    for swiglu in (False, True):
        args = _norm_qmv_inputs(mx.float32, 32, 4, 64, 128)

        def fn(*a):
            return _norm_qmv_layer(*a, 32, 4, swiglu)

        q = (0, 0, 0, 1) if swiglu else (0, 0, 1, 0)
        for env, want in (("1", (1, 0, 0, 0)),
                          ("0", (0, 1) + q[2:]), (None, (0, 1) + q[2:])):
            if env is None:
                monkeypatch.delenv("CMX_COMPILE_NORM_QMV")
            else:
                monkeypatch.setenv("CMX_COMPILE_NORM_QMV", env)
            assert count(lambda *a: fn(*a), *args) == want, (swiglu, env)
        monkeypatch.setenv("CMX_COMPILE_NORM_QMV", "1")
        two = _norm_qmv_inputs(mx.float32, 32, 4, 64, 128, rows=2)
        assert count(lambda *a: fn(*a), *two) == (0, 1, 1, 0)

    def with_y(x, r, w, wq, s, b):  # the norm's output read elsewhere too
        y = mx.fast.rms_norm(x + r, w, 1e-5)
        return mx.quantized_matmul(y, wq, s, b, transpose=True, group_size=32,
                                   bits=4), y

    assert count(with_y, *args) == (0, 1, 1, 0)


@pytest.mark.parametrize("swiglu", [False, True])
def test_grads_through_compiled_norm_qmv(on_device, swiglu, monkeypatch):
    """Gradients through a compiled function holding the fused op (its vjp
    runs through the composite: add, rms_norm, the product) match the
    uncompiled function's, for x, r and the norm's weight; and so do the
    compiled gradient, jvp and vmap."""
    monkeypatch.setenv("CMX_COMPILE_NORM_QMV", "1")  # opt-in
    x, r, w, wq, s, b = _norm_qmv_inputs(mx.float32, 32, 4, 64, 128, seed=4)

    def loss(x, r, w):
        o, h = _norm_qmv_layer(x, r, w, wq, s, b, 32, 4, swiglu)
        return (o * o).sum() + (h * mx.sin(h)).sum()

    def close(a, e):
        assert np.allclose(np.array(a), np.array(e), rtol=1e-4, atol=1e-5)

    want = mx.grad(loss, argnums=(0, 1, 2))(x, r, w)
    assert all(np.abs(np.array(g)).max() > 0 for g in want)
    for g, e in zip(mx.grad(mx.compile(loss), argnums=(0, 1, 2))(x, r, w), want):
        close(g, e)
    got = mx.compile(mx.grad(loss, argnums=(0, 1, 2)))(x, r, w)
    assert len(got) == 3
    for g, e in zip(got, want):
        close(g, e)
    t = mx.ones_like(x)
    _, jc = mx.jvp(mx.compile(loss), (x, r, w), (t, t, mx.ones_like(w)))
    _, je = mx.jvp(loss, (x, r, w), (t, t, mx.ones_like(w)))
    close(jc[0], je[0])
    vm = mx.vmap(mx.compile(loss), in_axes=(0, 0, None))
    ve = mx.vmap(loss, in_axes=(0, 0, None))
    close(vm(x[None], r[None], w), ve(x[None], r[None], w))
