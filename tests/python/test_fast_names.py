"""mx.fast.cross_entropy, gated_delta_update, metal_kernel and
precompiled_cuda_kernel (issues 15 and 20).

cross_entropy and gated_delta_update are checked on every device against
a NumPy reference (float64), against real MLX on the CPU where it is
installed (results, gradients, errors), and on the GPU against the CPU.
metal_kernel raises as MLX without Metal does. precompiled_cuda_kernel
loads PTX/CUBIN that NVRTC makes here; running it needs the GPU."""
import numpy as np
import pytest

import cmx.core as mx
from cmx import _compat
from conftest import cpu_match

try:
    import mlx.core as mlx
except ImportError:  # pragma: no cover - MLX is optional
    mlx = None

needs_mlx = pytest.mark.skipif(mlx is None, reason="MLX is not installed")
needs_nvrtc = pytest.mark.skipif(not mx._cuda_nvrtc_available(),
                                 reason="NVRTC is not installed")
needs_gpu = pytest.mark.skipif(not mx.is_available(mx.gpu),
                               reason="no GPU on this machine")

RNG = np.random.default_rng(46)
F = {"float32": (mx.float32, np.float32), "float16": (mx.float16, np.float16),
     "bfloat16": (mx.bfloat16, np.float32)}


def to_np(a):
    return np.array(a.astype(mx.float32) if a.dtype == mx.bfloat16 else a)


def test_no_longer_pending():
    for n in ("cross_entropy", "gated_delta_update", "metal_kernel",
              "precompiled_cuda_kernel"):
        assert _compat.implemented(mx.fast, n), n
        assert f"fast.{n}" not in _compat.pending_names()


# ------------------------------------------------------------ cross_entropy


def ce_ref(x, t):
    x = x.astype(np.float64)
    m = x.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(-1, keepdims=True)))[..., 0]
    t = np.where(t < 0, t + x.shape[-1], t)
    return lse - np.take_along_axis(x, t[..., None].astype(np.int64), -1)[..., 0]


def ce_grad_ref(x, t, c):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    sm = e / e.sum(-1, keepdims=True)
    t = np.where(t < 0, t + x.shape[-1], t)
    oh = np.eye(x.shape[-1])[t]
    return (sm - oh) * c[..., None]


CE_SHAPES = [(7,), (3, 5), (2, 3, 10), (4, 1), (5, 1000), (3, 1001),
             (2, 4096), (2, 5003), (1, 50257), (33, 64)]


@pytest.mark.parametrize("shape", CE_SHAPES)
@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_cross_entropy_values(device, shape, dt):
    mdt, ndt = F[dt]
    V = shape[-1]
    x = (RNG.standard_normal(shape) * 3).astype(ndt)
    t = RNG.integers(-V, V, shape[:-1]).astype(np.int32)
    xa = mx.array(x).astype(mdt)
    xr = to_np(xa)  # the values cmx sees, in float32
    got = cpu_match(device, lambda: mx.fast.cross_entropy(xa, mx.array(t)),
                    rtol=2e-5, atol=2e-5)
    assert got.dtype == mx.float32 and got.shape == shape[:-1]
    tol = 1e-5 if dt == "float32" else 1e-4
    np.testing.assert_allclose(np.array(got), ce_ref(xr, t), rtol=tol, atol=tol)


@pytest.mark.parametrize("tdt", [mx.uint8, mx.int16, mx.uint32, mx.int64])
def test_cross_entropy_target_dtypes(device, tdt):
    x = RNG.standard_normal((6, 9)).astype(np.float32)
    t = RNG.integers(0, 9, (6,))
    got = cpu_match(device, lambda: mx.fast.cross_entropy(
        mx.array(x), mx.array(t).astype(tdt)))
    np.testing.assert_allclose(np.array(got), ce_ref(x, t), rtol=1e-5,
                               atol=1e-5)


def test_cross_entropy_layouts(device):
    """Transposed, sliced and broadcast logits and targets."""
    x = RNG.standard_normal((40, 24)).astype(np.float32)
    t = RNG.integers(0, 40, (24,)).astype(np.int32)
    cases = [
        (lambda: mx.array(x).T, lambda: mx.array(t), x.T, t),
        (lambda: mx.array(x)[::3, 1:20:2], lambda: mx.array(t)[:14:1],
         x[::3, 1:20:2], t[:14] % 10),
        (lambda: mx.broadcast_to(mx.array(x[0]), (5, 24)),
         lambda: mx.array(t[:5] % 24), np.broadcast_to(x[0], (5, 24)),
         t[:5] % 24),
    ]
    for mk_x, mk_t, xn, tn in cases:
        tn = np.asarray(tn)
        got = cpu_match(device, lambda: mx.fast.cross_entropy(
            mk_x(), mx.array(tn)))
        np.testing.assert_allclose(np.array(got), ce_ref(xn, tn), rtol=1e-5,
                                   atol=1e-5)


def test_cross_entropy_special_values(device):
    x = np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, 2.0],
                  [np.nan, 0.0, 1.0], [np.inf, 0.0, 1.0]], np.float32)
    t = np.array([0, 2, 1, 1], np.int32)
    got = cpu_match(device, lambda: mx.fast.cross_entropy(mx.array(x),
                                                          mx.array(t)))
    g = np.array(got)
    np.testing.assert_allclose(g[:2], ce_ref(x[:2], t[:2]), rtol=1e-6)
    assert np.isnan(g[2])
    assert g[3] == np.inf  # lse = +inf, the target's logit is finite


def test_cross_entropy_out_of_range_target(device):
    x = mx.zeros((3, 4))
    for bad in (4, -5, 100):
        y = mx.fast.cross_entropy(x, mx.array([0, bad, 1]), stream=device)
        with pytest.raises(IndexError, match=r"\[cross_entropy\] Index "
                           rf"{bad} is out of bounds for axis 1 with size 4"):
            mx.eval(y)


@needs_mlx
@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_cross_entropy_matches_mlx(dt):
    mdt, ndt = F[dt]
    x = (RNG.standard_normal((4, 3, 37)) * 2).astype(np.float32)
    t = RNG.integers(0, 37, (4, 3)).astype(np.int32)
    a = mx.fast.cross_entropy(mx.array(x).astype(mdt), mx.array(t))
    b = mlx.fast.cross_entropy(mlx.array(x).astype(getattr(mlx, dt)),
                               mlx.array(t))
    assert str(a.dtype) == str(b.dtype).replace("mlx.core", "cmx.core")
    # MLX's CPU reduces in the logits' dtype; cmx in float32
    tol = 1e-5 if dt == "float32" else 3e-2
    np.testing.assert_allclose(np.array(a), np.array(b), rtol=tol, atol=tol)
    ga = mx.grad(lambda z: mx.fast.cross_entropy(z, mx.array(t)).sum())(
        mx.array(x))
    gb = mlx.grad(lambda z: mlx.fast.cross_entropy(z, mlx.array(t)).sum())(
        mlx.array(x))
    np.testing.assert_allclose(np.array(ga), np.array(gb), rtol=1e-5,
                               atol=1e-6)


CE_ERRORS = [
    ("rank0", lambda m: (m.array(1.0), m.array(0))),
    ("int_logits", lambda m: (m.array([[1, 2]]), m.array([0]))),
    ("shape", lambda m: (m.zeros((3, 5)), m.array([0, 1]))),
    ("shape2", lambda m: (m.zeros((3, 5)), m.array([[0, 1, 2]]))),
    ("float_targets", lambda m: (m.zeros((3, 5)), m.array([0.0, 1.0, 2.0]))),
    ("bool_targets", lambda m: (m.zeros((2, 5)), m.array([True, False]))),
    ("empty_rows", lambda m: (m.zeros((0, 5)), m.zeros((0,), m.int32))),
    ("empty_classes", lambda m: (m.zeros((3, 0)), m.array([0, 0, 0]))),
]


@pytest.mark.parametrize("name,make", CE_ERRORS, ids=[c[0] for c in CE_ERRORS])
def test_cross_entropy_errors(name, make):
    with pytest.raises(ValueError, match=r"\[cross_entropy\]") as e:
        mx.eval(mx.fast.cross_entropy(*make(mx)))
    if mlx is not None:
        with pytest.raises(ValueError) as m:
            mlx.eval(mlx.fast.cross_entropy(*make(mlx)))
        if "logsumexp" not in str(m.value):  # MLX names its inner op there
            assert str(e.value) == str(m.value)


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
def test_cross_entropy_vjp(device, dt):
    mdt, _ = F[dt]
    x = RNG.standard_normal((3, 4, 50)).astype(np.float32)
    t = RNG.integers(-50, 50, (3, 4)).astype(np.int32)
    c = RNG.standard_normal((3, 4)).astype(np.float32)
    xa = mx.array(x).astype(mdt)

    def f():
        _, (g,) = mx.vjp(lambda z: [mx.fast.cross_entropy(z, mx.array(t))],
                         [xa], [mx.array(c)])
        return g[0] if isinstance(g, list) else g

    with mx.stream(device):
        _, vj = mx.vjp(lambda z: mx.fast.cross_entropy(z, mx.array(t)), [xa],
                       [mx.array(c)])
    g = vj[0]
    assert g.dtype == mdt and g.shape == x.shape
    tol = 1e-5 if dt == "float32" else 1e-2
    np.testing.assert_allclose(to_np(g), ce_grad_ref(to_np(xa), t, c),
                               rtol=tol, atol=tol)


def test_cross_entropy_training_step(device):
    """nn.losses-style use: the mean loss's gradient and one SGD step."""
    with mx.stream(device):
        W = mx.array(RNG.standard_normal((8, 10)).astype(np.float32))
        X = mx.array(RNG.standard_normal((16, 8)).astype(np.float32))
        y = mx.array(RNG.integers(0, 10, (16,)).astype(np.int32))

        def loss(w):
            return mx.fast.cross_entropy(X @ w, y).mean()

        def loss_ref(w):
            z = X @ w
            return (mx.logsumexp(z, axis=-1) - mx.take_along_axis(
                z, y[:, None], axis=-1)[:, 0]).mean()

        l0, g = mx.value_and_grad(loss)(W)
        l1, g1 = mx.value_and_grad(loss_ref)(W)
        np.testing.assert_allclose(np.array(l0), np.array(l1), rtol=1e-5)
        np.testing.assert_allclose(np.array(g), np.array(g1), rtol=1e-4,
                                   atol=1e-6)
        assert loss(W - 0.5 * g).item() < l0.item()


def test_cross_entropy_no_vjp_for_targets():
    x = mx.zeros((2, 3))
    with pytest.raises(ValueError, match=r"\[cross_entropy\] Cannot calculate "
                       "VJP with respect to indices"):
        mx.vjp(lambda x, t: mx.fast.cross_entropy(x, t), [x, mx.array([0, 1])],
               [mx.ones((2,))], )


def test_cross_entropy_jvp_vmap(device):
    x = RNG.standard_normal((5, 3, 6)).astype(np.float32)
    t = RNG.integers(0, 6, (5, 3)).astype(np.int32)
    dx = RNG.standard_normal((5, 3, 6)).astype(np.float32)
    with mx.stream(device):
        _, (tan,) = mx.jvp(lambda z: mx.fast.cross_entropy(z, mx.array(t)),
                           [mx.array(x)], [mx.array(dx)])
        e = np.exp(x - x.max(-1, keepdims=True))
        sm = e / e.sum(-1, keepdims=True)
        want = (sm * dx).sum(-1) - np.take_along_axis(dx, t[..., None], -1)[..., 0]
        np.testing.assert_allclose(np.array(tan), want, rtol=1e-5, atol=1e-5)
        v = mx.vmap(mx.fast.cross_entropy, in_axes=(1, 1))(mx.array(x),
                                                           mx.array(t))
        np.testing.assert_allclose(np.array(v), ce_ref(x, t).T, rtol=1e-5,
                                   atol=1e-5)


def test_cross_entropy_float64_cpu():
    x = RNG.standard_normal((4, 7))
    t = RNG.integers(0, 7, (4,))
    with mx.stream(mx.cpu):
        got = mx.fast.cross_entropy(mx.array(x, mx.float64), mx.array(t))
    assert got.dtype == mx.float32
    np.testing.assert_allclose(np.array(got), ce_ref(x, t), rtol=1e-6)


# ------------------------------------------------------- gated_delta_update


def gdn_ref(q, k, v, g, b, S=None, mask=None):
    """The recurrence, float64, one step at a time."""
    B, T, Hk, Dk = q.shape
    Hv, Dv = v.shape[2:]
    R = Hv // Hk
    q, k, v, g, b = (a.astype(np.float64) for a in (q, k, v, g, b))
    S = np.zeros((B, Hv, Dv, Dk)) if S is None else S.astype(np.float64)
    ys = np.zeros((B, T, Hv, Dv))
    for t in range(T):
        qt, kt = np.repeat(q[:, t], R, 1), np.repeat(k[:, t], R, 1)
        old = S
        gt = g[:, t]
        S = S * (gt[..., None, None] if gt.ndim == 2 else gt[:, :, None, :])
        d = (v[:, t] - (S * kt[:, :, None, :]).sum(-1)) * b[:, t][..., None]
        S = S + d[..., None] * kt[:, :, None, :]
        ys[:, t] = (S * qt[:, :, None, :]).sum(-1)
        if mask is not None:
            m = mask[:, t].astype(bool)
            ys[:, t] *= m[:, None, None]
            S = np.where(m[:, None, None, None], S, old)
    return ys, S


def gdn_inputs(B, T, Hk, Hv, Dk, Dv, vec_gamma=False):
    q = RNG.standard_normal((B, T, Hk, Dk)).astype(np.float32) * 0.5
    k = RNG.standard_normal((B, T, Hk, Dk)).astype(np.float32) * 0.5
    v = RNG.standard_normal((B, T, Hv, Dv)).astype(np.float32)
    gshape = (B, T, Hv, Dk) if vec_gamma else (B, T, Hv)
    g = RNG.uniform(0.5, 1.0, gshape).astype(np.float32)
    b = RNG.uniform(0.0, 1.0, (B, T, Hv)).astype(np.float32)
    S0 = RNG.standard_normal((B, Hv, Dv, Dk)).astype(np.float32)
    return q, k, v, g, b, S0


GDN_CASES = [
    dict(B=1, T=3, Hk=1, Hv=1, Dk=2, Dv=3),
    dict(B=2, T=5, Hk=2, Hv=4, Dk=3, Dv=4),      # GQA: 2 value heads a key
    dict(B=2, T=4, Hk=1, Hv=3, Dk=8, Dv=5),
    dict(B=1, T=1, Hk=2, Hv=2, Dk=16, Dv=16),    # one decode step
    dict(B=2, T=6, Hk=2, Hv=4, Dk=4, Dv=3, vec_gamma=True),
]


@pytest.mark.parametrize("case", GDN_CASES, ids=str)
@pytest.mark.parametrize("state", [False, True])
@pytest.mark.parametrize("masked", [None, "bool", "float", "row"])
def test_gated_delta_values(device, case, state, masked):
    q, k, v, g, b, S0 = gdn_inputs(**case)
    B, T = q.shape[:2]
    mask = None
    if masked == "bool":
        mask = RNG.uniform(size=(B, T)) > 0.4
    elif masked == "float":
        mask = (RNG.uniform(size=(B, T)) > 0.4) * RNG.uniform(0.5, 2, (B, T))
        mask = mask.astype(np.float32)
    elif masked == "row":
        mask = RNG.uniform(size=(1, T)) > 0.4
    args = [mx.array(a) for a in (q, k, v, g, b)]
    kw = {}
    if state:
        kw["initial_state"] = mx.array(S0)
    if mask is not None:
        kw["mask"] = mx.array(mask)
    y, S = cpu_match(device, lambda: mx.fast.gated_delta_update(*args, **kw),
                     rtol=1e-5, atol=1e-5)
    assert y.shape == v.shape and y.dtype == mx.float32
    assert S.shape == S0.shape and S.dtype == mx.float32
    m = None if mask is None else np.broadcast_to(mask, (B, T))
    yr, Sr = gdn_ref(q, k, v, g, b, S0 if state else None, m)
    np.testing.assert_allclose(np.array(y), yr, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.array(S), Sr, rtol=1e-4, atol=1e-4)


@needs_mlx
@pytest.mark.parametrize("case", GDN_CASES, ids=str)
def test_gated_delta_matches_mlx(case):
    q, k, v, g, b, S0 = gdn_inputs(**case)
    B, T = q.shape[:2]
    mask = RNG.uniform(size=(B, T)) > 0.3
    ins = (q, k, v, g, b)
    y, S = mx.fast.gated_delta_update(*map(mx.array, ins),
                                      initial_state=mx.array(S0),
                                      mask=mx.array(mask))
    ym, Sm = mlx.fast.gated_delta_update(*map(mlx.array, ins),
                                         initial_state=mlx.array(S0),
                                         mask=mlx.array(mask))
    np.testing.assert_allclose(np.array(y), np.array(ym), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array(S), np.array(Sm), rtol=1e-5, atol=1e-5)

    def loss(lib):
        def f(q, k, v, g, b, s):
            yy, ss = lib.fast.gated_delta_update(q, k, v, g, b,
                                                 initial_state=s)
            return (yy * yy).sum() + ss.sum()
        return f

    ga = mx.grad(loss(mx), argnums=(0, 1, 2, 3, 4, 5))(
        *map(mx.array, ins + (S0,)))
    gb = mlx.grad(loss(mlx), argnums=(0, 1, 2, 3, 4, 5))(
        *map(mlx.array, ins + (S0,)))
    for a, c in zip(ga, gb):
        np.testing.assert_allclose(np.array(a), np.array(c), rtol=1e-4,
                                   atol=1e-4)


@needs_mlx
@pytest.mark.parametrize("dts", [("float16",) * 5, ("bfloat16",) * 5,
                                 ("float16", "float32", "float32", "float32",
                                  "float32"),
                                 ("int32",) * 5])
def test_gated_delta_dtypes_as_mlx(dts):
    q, k, v, g, b, S0 = gdn_inputs(B=1, T=2, Hk=1, Hv=2, Dk=3, Dv=2)
    ins = (q, k, v, g, b)
    a = mx.fast.gated_delta_update(
        *[mx.array(x).astype(getattr(mx, d)) for x, d in zip(ins, dts)])
    m = mlx.fast.gated_delta_update(
        *[mlx.array(x).astype(getattr(mlx, d)) for x, d in zip(ins, dts)])
    for x, y in zip(a, m):
        assert str(x.dtype).split(".")[-1] == str(y.dtype).split(".")[-1]
        np.testing.assert_allclose(to_np(x), np.array(y.astype(mlx.float32)),
                                   rtol=2e-2, atol=2e-2)


def test_gated_delta_grad_on_device(device):
    q, k, v, g, b, S0 = gdn_inputs(B=1, T=3, Hk=1, Hv=2, Dk=4, Dv=3)

    def f():
        def loss(q, g, s):
            y, ss = mx.fast.gated_delta_update(
                q, mx.array(k), mx.array(v), g, mx.array(b), initial_state=s)
            return (y * y).sum() + (ss * ss).sum()
        return list(mx.grad(loss, argnums=(0, 1, 2))(
            mx.array(q), mx.array(g), mx.array(S0)))

    grads = cpu_match(device, f, rtol=1e-4, atol=1e-5)
    # finite differences of the float64 reference in one entry of each
    eps = 1e-4
    for i, (arr, idx) in enumerate(((q, (0, 1, 0, 2)), (g, (0, 2, 1)),
                                    (S0, (0, 1, 2, 3)))):
        def lr(x):
            qq, gg, ss = q, g, S0
            if i == 0:
                qq = x
            elif i == 1:
                gg = x
            else:
                ss = x
            y, s = gdn_ref(qq, k, v, gg, b, ss)
            return (y * y).sum() + (s * s).sum()
        p, m = arr.astype(np.float64), arr.astype(np.float64)
        p[idx] += eps
        m[idx] -= eps
        fd = (lr(p) - lr(m)) / (2 * eps)
        np.testing.assert_allclose(np.array(grads[i])[idx], fd, rtol=1e-3,
                                   atol=1e-3)


def test_gated_delta_vmap():
    q, k, v, g, b, _ = gdn_inputs(B=1, T=3, Hk=1, Hv=1, Dk=2, Dv=2)
    qs = np.stack([q, 2 * q, -q])
    out = mx.vmap(lambda qq: mx.fast.gated_delta_update(
        qq, mx.array(k), mx.array(v), mx.array(g), mx.array(b))[0])(
            mx.array(qs))
    for i in range(3):
        np.testing.assert_allclose(np.array(out[i]),
                                   gdn_ref(qs[i], k, v, g, b)[0], rtol=1e-5,
                                   atol=1e-5)


def test_gated_delta_empty_sequence():
    q, k, v, g, b, S0 = gdn_inputs(B=2, T=0, Hk=1, Hv=2, Dk=3, Dv=4)
    y, S = mx.fast.gated_delta_update(*map(mx.array, (q, k, v, g, b)),
                                      initial_state=mx.array(S0))
    assert y.shape == (2, 0, 2, 4)
    np.testing.assert_array_equal(np.array(S), S0)


GDN_ERRORS = [
    ("rank", dict(q=(2, 3, 1, 4))),
    ("k_shape", dict(k=(2, 4, 1, 3))),
    ("v_seq", dict(v=(2, 3, 2, 5))),
    ("heads", dict(v=(2, 4, 3, 5), g=(2, 4, 3), b=(2, 4, 3))),
    ("beta", dict(b=(2, 3, 2))),
    ("gamma", dict(g=(2, 4, 2, 5))),
    ("state", dict(S=(2, 2, 4, 5))),
    ("mask", dict(m=(2, 4, 1))),
]


@pytest.mark.parametrize("name,bad", GDN_ERRORS, ids=[e[0] for e in GDN_ERRORS])
def test_gated_delta_errors(name, bad):
    shp = dict(q=(2, 4, 2, 4), k=(2, 4, 2, 4), v=(2, 4, 4, 5), g=(2, 4, 4),
               b=(2, 4, 4), S=None, m=None)
    shp.update(bad)
    if name == "rank":
        shp["q"] = shp["k"] = (2, 4, 8)
    a = {n: (mx.ones(s) if s else None) for n, s in shp.items()}
    with pytest.raises(ValueError, match=r"\[gated_delta_update\]"):
        mx.fast.gated_delta_update(a["q"], a["k"], a["v"], a["g"], a["b"],
                                   initial_state=a["S"], mask=a["m"])


# ------------------------------------------------------------ metal_kernel


def test_metal_kernel_raises_as_mlx():
    k = mx.fast.metal_kernel(name="myexp", input_names=["inp"],
                             output_names=["out"], source="out[0] = inp[0];")
    a = mx.ones((4,))
    kw = dict(inputs=[a], template=[("T", mx.float32)], grid=(4, 1, 1),
              threadgroup=(4, 1, 1), output_shapes=[a.shape],
              output_dtypes=[a.dtype])
    for stream in (None, mx.cpu):
        with pytest.raises(RuntimeError,
                           match=r"^\[metal_kernel\] No Metal back-end\."):
            k(stream=stream, **kw)
    with pytest.raises(TypeError):
        k(inputs=[a])  # the keyword arguments are required, as in MLX
    if mlx is not None:
        km = mlx.fast.metal_kernel(name="myexp", input_names=["inp"],
                                   output_names=["out"], source="")
        with pytest.raises(RuntimeError, match=r"^\[metal_kernel\] No Metal "
                           r"back-end\."):
            km(inputs=[mlx.ones((4,))], grid=(4, 1, 1),
               threadgroup=(4, 1, 1), output_shapes=[(4,)],
               output_dtypes=[mlx.float32])


MK_ERRORS = [
    ("no_outputs", (["a"], []), {}, ValueError),
    ("options_type", (["a"], ["b"]), dict(compile_options=3), ValueError),
    ("math_mode", (["a"], ["b"]), dict(compile_options={"math_mode": "x"}),
     ValueError),
    ("names_str", ("a", ["b"]), {}, TypeError),
]


@pytest.mark.parametrize("name,names,kw,exc", MK_ERRORS,
                         ids=[e[0] for e in MK_ERRORS])
def test_metal_kernel_argument_errors(name, names, kw, exc):
    with pytest.raises(exc) as e:
        mx.fast.metal_kernel("k", *names, "src", **kw)
    if mlx is not None:
        with pytest.raises(exc) as m:
            mlx.fast.metal_kernel("k", *names, "src", **kw)
        if exc is ValueError:
            assert str(e.value) == str(m.value)


# ------------------------------------------------- precompiled_cuda_kernel

AXPB = """
extern "C" __global__ void axpb(const float* x, float* y, float* z,
                                float a, int b, bool neg) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 10) {
    float v = a * x[i] + b;
    y[i] = neg ? -v : v;
    z[i] += 1.0f;
  }
}
"""


def pck(src, **kw):
    args = dict(name="axpb", compiled_source=src,
                inputs=[mx.arange(10, dtype=mx.float32)],
                output_shapes=[(10,), (10,)],
                output_dtypes=[mx.float32, mx.float32],
                scalars=[2.0, 3, True], grid=(10, 1, 1),
                threadgroup=(4, 1, 1), init_value=5.0)
    args.update(kw)
    return mx.fast.precompiled_cuda_kernel(**args)


def test_precompiled_argument_errors():
    with pytest.raises(ValueError, match=r"^\[precompiled_cuda_kernel\] "
                       "Invalid scalar argument type. Received str but must "
                       "be one of bool, int or float$"):
        pck(b"x", scalars=["s"])
    with pytest.raises(TypeError):
        pck("not bytes")
    with pytest.raises(TypeError):  # keyword-only, as MLX
        mx.fast.precompiled_cuda_kernel("k", b"x", [], [(1,)], [mx.float32],
                                        [], (1, 1, 1), (1, 1, 1))
    with pytest.raises(ValueError, match="only on the gpu"):
        pck(b"x", stream=mx.cpu)
    if mlx is not None:
        with pytest.raises(ValueError) as m:
            mlx.fast.precompiled_cuda_kernel(
                name="k", compiled_source=b"x", inputs=[], output_shapes=[(1,)],
                output_dtypes=[mlx.float32], scalars=["s"], grid=(1, 1, 1),
                threadgroup=(1, 1, 1))
        assert "Invalid scalar argument type. Received str" in str(m.value)


@needs_nvrtc
def test_compile_to_ptx_and_cubin():
    ptx = mx._cuda_compile("axpb", AXPB, 80, True)
    assert b".entry axpb" in ptx and b"\0" not in ptx
    cubin = mx._cuda_compile("axpb", AXPB, 80, False)
    assert cubin[:4] == b"\x7fELF"
    with pytest.raises(RuntimeError, match="axpb"):
        mx._cuda_compile("axpb", AXPB + "syntax error here", 80, True)


@needs_gpu
@needs_nvrtc
@pytest.mark.parametrize("ptx", [True, False])
def test_precompiled_runs(ptx):
    src = mx._cuda_compile("axpb", AXPB, 0, ptx)
    with mx.stream(mx.gpu):
        y, z = pck(src)
        x = np.arange(10, dtype=np.float32)
        np.testing.assert_allclose(np.array(y), -(2.0 * x + 3))
        np.testing.assert_allclose(np.array(z), np.full(10, 6.0))
        y2, _ = pck(src, scalars=[0.5, -1, False], init_value=None)
        np.testing.assert_allclose(np.array(y2), 0.5 * x - 1)
        with pytest.raises(RuntimeError):
            mx.eval(pck(src, name="no_such_kernel"))
        with pytest.raises(RuntimeError):
            mx.eval(pck(b"garbage that is no image"))
