"""mx.fft.stft and mx.fft.istft: against direct formulas (explicit DFT
sums and padding index maps in float64, no FFT library), against real MLX
where it is importable (values, shapes, dtypes and every error message),
round trips, gradients against float64 finite differences of the direct
formulas, jvp, and vmap; on every device."""
import math

import numpy as np
import pytest

import cmx.core as mx

try:  # the oracle, where installed
    import mlx.core as mlx
except ImportError:  # pragma: no cover
    mlx = None

pytestmark = pytest.mark.usefixtures("on_device")
needs_mlx = pytest.mark.skipif(mlx is None, reason="mlx not installed")

RNG = np.random.default_rng(45)


def rrand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def crand(*shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


# ---------------------------------------------------------------- formulas
def dft(x, inverse=False):
    """sum_j x_j exp(-+2 pi i j k / n) over the last axis (unscaled)."""
    n = x.shape[-1]
    k = np.arange(n)
    w = np.exp((1 if inverse else -1) * 2j * np.pi * np.outer(k, k) / n)
    return x.astype(np.complex128) @ w


def scale(norm, n, inverse):
    if norm == "ortho":
        return 1 / math.sqrt(n)
    return 1 / n if (norm == "forward") != inverse else 1.0


def pad_index(length, p, mode):
    """Source index of each of the length + 2 p samples (-1: zero)."""
    i = np.arange(-p, length + p)
    if mode == "constant":
        return np.where((i >= 0) & (i < length), i, -1)
    if mode == "edge":
        return np.clip(i, 0, length - 1)
    if mode == "reflect":
        period = 2 * (length - 1)
        if period == 0:
            return np.zeros_like(i)
        j = i % period
        return np.where(j < length, j, period - j)
    period = 2 * length  # symmetric
    j = i % period
    return np.where(j < length, j, period - 1 - j)


def centred(n_fft, win_length=None, window=None):
    w = np.ones(n_fft if win_length is None else win_length) if window is None else np.asarray(window)
    out = np.zeros(n_fft, np.result_type(w.dtype, np.float64))
    lo = (n_fft - len(w)) // 2
    out[lo:lo + len(w)] = w
    return out


def ref_stft(x, n_fft, hop_length=None, win_length=None, window=None, center=True,
             pad_mode="reflect", norm="backward", onesided=None):
    x = np.asarray(x)
    hop = hop_length or n_fft // 4
    w = centred(n_fft, win_length, window)
    if onesided is None:
        onesided = not np.iscomplexobj(x)
    x = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    if center:
        idx = pad_index(x.shape[-1], n_fft // 2, pad_mode)
        x = np.where(idx >= 0, x[..., np.maximum(idx, 0)], 0)
    n_frames = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., i * hop:i * hop + n_fft] for i in range(n_frames)], -2) * w
    if onesided:
        spec = dft(frames.real)[..., :n_fft // 2 + 1]
    else:
        spec = dft(frames)
    return np.swapaxes(spec * scale(norm, n_fft, False), -1, -2)


def resize(a, n):
    out = np.zeros(a.shape[:-1] + (n,), a.dtype)
    m = min(n, a.shape[-1])
    out[..., :m] = a[..., :m]
    return out


def ref_istft(s, n_fft=None, hop_length=None, win_length=None, window=None, center=True,
              norm="backward", onesided=None, length=None):
    s = np.asarray(s).astype(np.complex128)
    onesided = True if onesided is None else onesided
    n_freq, n_frames = s.shape[-2:]
    n_fft = n_fft or (2 * (n_freq - 1) if onesided else n_freq)
    hop = hop_length or n_fft // 4
    w = centred(n_fft, win_length, window)
    f = np.swapaxes(s, -1, -2)
    if onesided:  # the Hermitian extension of the n_fft // 2 + 1 bins
        f = resize(f, n_fft // 2 + 1)
        full = np.concatenate([f, np.conj(f[..., 1:(n_fft + 1) // 2][..., ::-1])], -1)
    else:
        full = resize(f, n_fft)
    frames = (dft(full, inverse=True) * scale(norm, n_fft, True)).real * w
    extent = n_fft + hop * (n_frames - 1)
    y = np.zeros(s.shape[:-2] + (extent,), frames.dtype)
    env = np.zeros(extent, w.dtype)
    for i in range(n_frames):
        y[..., i * hop:i * hop + n_fft] += frames[..., i, :]
        env[i * hop:i * hop + n_fft] += w * w
    y = y / np.maximum(env, 1e-8)
    start = n_fft // 2 if center else 0
    n = extent - 2 * start if length is None else max(length, 0)
    out = np.zeros(y.shape[:-1] + (n,), y.dtype)
    have = min(n, extent - start)
    out[..., :have] = y[..., start:start + have]
    return out


def close(got, want, rel=2e-5):
    got, want = np.array(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.size == 0:
        return
    err = float(np.abs(got - want).max())
    allowed = rel * max(1.0, float(np.abs(want).max())) * (1 + np.log2(max(2, want.shape[-1])) / 4)
    assert err <= allowed, f"max error {err} vs allowed {allowed}"


def mx_window(kw):
    """kw with a NumPy window made an array of cmx."""
    kw = dict(kw)
    if kw.get("window") is not None:
        kw["window"] = mx.array(kw["window"])
    return kw


# ---------------------------------------------------------------- stft
STFT_CASES = [
    dict(n_fft=16),
    dict(n_fft=16, center=False),
    dict(n_fft=15, hop_length=3),
    dict(n_fft=15, hop_length=3, center=False),
    dict(n_fft=16, win_length=10),
    dict(n_fft=16, win_length=9, hop_length=5),
    dict(n_fft=15, win_length=10),
    dict(n_fft=16, onesided=False),
    dict(n_fft=15, onesided=False, hop_length=2),
    dict(n_fft=8, pad_mode="constant"),
    dict(n_fft=8, pad_mode="edge"),
    dict(n_fft=8, pad_mode="symmetric"),
    dict(n_fft=9, pad_mode="reflect", hop_length=1),
    dict(n_fft=8, norm="ortho"),
    dict(n_fft=8, norm="forward", onesided=False),
    dict(n_fft=12, hop_length=20),
    dict(n_fft=33, hop_length=7),
    dict(n_fft=16, window=np.hanning(16).astype(np.float32)),
    dict(n_fft=16, window=np.hanning(11).astype(np.float32), hop_length=4),
    dict(n_fft=17, window=np.hamming(12).astype(np.float32), win_length=3),
    dict(n_fft=8, win_length=0),
]


def case_id(kw):
    return ",".join(f"{k}={'w%d' % len(v) if k == 'window' else v}" for k, v in kw.items())


@pytest.mark.parametrize("kw", STFT_CASES, ids=case_id)
@pytest.mark.parametrize("shape", [(50,), (3, 41), (2, 1, 37)], ids=str)
def test_stft_formula(kw, shape):
    x = rrand(*shape)
    got = mx.fft.stft(mx.array(x), **mx_window(kw))
    assert got.dtype == mx.complex64
    close(got, ref_stft(x, **kw))


@pytest.mark.parametrize("kw", STFT_CASES[:10], ids=case_id)
def test_stft_complex_input(kw):
    x = crand(2, 45)
    got = mx.fft.stft(mx.array(x), **mx_window(kw))
    assert got.shape[-2] == (kw["n_fft"] // 2 + 1 if kw.get("onesided") else kw["n_fft"])
    close(got, ref_stft(x, **kw))
    # onesided on complex input transforms the frames' real part
    one = kw | dict(onesided=True)
    close(mx.fft.stft(mx.array(x), **mx_window(one)), ref_stft(x.real, **one))


@pytest.mark.parametrize("dtype", ["float64", "int32", "float16", "bool_"])
def test_stft_dtypes(dtype):
    x = RNG.standard_normal(40) * 3
    xd = mx.array(x).astype(getattr(mx, dtype))
    ref = np.array(xd.astype(mx.float64) if dtype != "float64" else xd, dtype=np.float64)
    got = mx.fft.stft(xd, n_fft=8, hop_length=3)
    assert got.dtype == mx.complex64
    close(got, ref_stft(ref, n_fft=8, hop_length=3), rel=1e-3 if dtype == "float16" else 2e-5)


def test_stft_defaults_and_short_signals():
    x = rrand(5000)
    got = mx.fft.stft(mx.array(x))
    assert got.shape == (1025, 1 + 5000 // 512)
    close(got, ref_stft(x, 2048), rel=5e-5)
    # reflect padding longer than the signal repeats the mirror (period
    # 2 (n - 1)); one sample repeats itself
    for n, n_fft in [(20, 40), (20, 60), (3, 8), (1, 4), (2, 16)]:
        x = rrand(n)
        close(mx.fft.stft(mx.array(x), n_fft=n_fft, hop_length=2), ref_stft(x, n_fft, 2))
    x = rrand(0, 3)
    assert mx.fft.stft(mx.array(x), n_fft=8).shape == (0, 5, 2)


def test_stft_window_dtypes():
    x = rrand(30)
    for dt in [mx.float16, mx.float64, mx.int32, mx.bool_]:
        w = mx.ones((8,), dtype=dt)
        got = mx.fft.stft(mx.array(x), n_fft=8, window=w)
        assert got.dtype == mx.complex64
        close(got, ref_stft(x, 8))
    wc = crand(8)
    # complex window: the onesided transform keeps the frames' real part
    close(mx.fft.stft(mx.array(x), n_fft=8, window=mx.array(wc)),
          ref_stft(x, 8, window=wc.real.astype(np.float64)), rel=5e-5)


# ---------------------------------------------------------------- istft
ISTFT_CASES = [
    dict(n_fft=16),
    dict(n_fft=20),
    dict(n_fft=17),
    dict(n_fft=12),
    dict(),
    dict(n_fft=16, onesided=False),
    dict(n_fft=9, onesided=False),
    dict(n_fft=7, onesided=False),
    dict(onesided=False),
    dict(n_fft=16, hop_length=20),
    dict(n_fft=16, hop_length=5, win_length=9),
    dict(n_fft=16, hop_length=5, win_length=9, center=False),
    dict(n_fft=15, hop_length=3, window=np.hanning(11).astype(np.float32) + 0.1),
    dict(n_fft=15, hop_length=3, window=np.hanning(15).astype(np.float32), norm="ortho"),
    dict(n_fft=15, hop_length=3, norm="forward", onesided=False),
    dict(n_fft=16, length=30),
    dict(n_fft=16, length=5),
    dict(n_fft=16, length=100),
    dict(n_fft=16, length=0),
    dict(n_fft=16, length=-3),
    dict(n_fft=16, center=False, length=60),
    dict(n_fft=16, window=np.full(16, 1e-5, np.float32)),
    dict(n_fft=16, win_length=0),
]


@pytest.mark.parametrize("kw", ISTFT_CASES, ids=case_id)
@pytest.mark.parametrize("shape", [(9, 7), (2, 9, 4), (2, 1, 9, 1)], ids=str)
def test_istft_formula(kw, shape):
    s = crand(*shape)
    got = mx.fft.istft(mx.array(s), **mx_window(kw))
    assert got.dtype == mx.float32
    want = ref_istft(s, **kw)
    if kw.get("window") is not None and kw["window"].max() < 1e-3 and want.size:
        # the envelope (at most 4e-10) is clamped to 1e-8: the frames
        # (times 1e-10) grow by 1e-2 instead of 1e10 / k; compared relative
        # to their size
        m = float(np.abs(want).max())
        assert 10 < m < 1e4
        got, want = np.array(got) / m, want / m
    close(got, want, rel=5e-5)


@pytest.mark.parametrize("kw", [
    dict(n_fft=16), dict(n_fft=15, hop_length=5), dict(n_fft=16, center=False),
    dict(n_fft=16, window=np.hanning(12).astype(np.float32) + 0.1, hop_length=4),
    dict(n_fft=16, win_length=12, hop_length=3), dict(n_fft=16, onesided=False),
    dict(n_fft=8, norm="ortho"), dict(n_fft=9, norm="forward", hop_length=2),
    dict(n_fft=16, pad_mode="constant"), dict(n_fft=16, pad_mode="edge"),
], ids=case_id)
def test_round_trip(kw):
    x = rrand(3, 50)
    kw_i = {k: v for k, v in kw.items() if k != "pad_mode"}
    spec = mx.fft.stft(mx.array(x), **mx_window(kw))
    n = 50 if kw.get("center", True) else x.shape[-1] - (x.shape[-1] - kw["n_fft"]) % (kw.get("hop_length") or kw["n_fft"] // 4)
    y = mx.fft.istft(spec, length=n, **mx_window(kw_i))
    close(y, x[:, :n], rel=5e-6)
    # complex signals come back through the two-sided transforms' real part
    xc = crand(2, 40)
    spec = mx.fft.stft(mx.array(xc), n_fft=16, onesided=False)
    close(mx.fft.istft(spec, n_fft=16, onesided=False, length=40), xc.real, rel=5e-6)


def test_istft_dtypes():
    s = crand(9, 5)
    for dt, want in [(mx.float16, mx.float32), (mx.float64, mx.float64), (mx.int32, mx.float32),
                     (mx.bool_, mx.float32), (mx.complex64, mx.complex64)]:
        w = mx.ones((16,), dtype=dt)
        got = mx.fft.istft(mx.array(s), n_fft=16, window=w)
        assert got.dtype == want, (dt, got.dtype)
        close(got.astype(mx.complex64) if want == mx.complex64 else got.astype(mx.float32),
              ref_istft(s, n_fft=16), rel=5e-5)
    # a real stft matrix is a spectrum with zero imaginary parts
    r = rrand(9, 5)
    close(mx.fft.istft(mx.array(r), n_fft=16), ref_istft(r.astype(np.complex64), n_fft=16), rel=5e-5)
    assert mx.fft.istft(mx.zeros((0, 9, 3), dtype=mx.complex64)).shape == (0, 8)


# ---------------------------------------------------------------- errors
X20 = np.arange(20, dtype=np.float32)
S93 = np.zeros((9, 3), np.complex64)
ERRORS = [
    ("stft", X20, dict(n_fft=0), "[stft] n_fft must be positive."),
    ("stft", X20, dict(n_fft=8, hop_length=0), "[stft] hop_length must be positive."),
    ("stft", X20, dict(n_fft=2), "[stft] hop_length must be positive."),
    ("stft", X20, dict(n_fft=8, win_length=9), "[stft] window length must not exceed n_fft."),
    ("stft", X20, dict(n_fft=8, win_length=-2), "[stft] Negative dimensions not allowed."),
    ("stft", X20, dict(n_fft=8, window=np.ones(9, np.float32)), "[stft] window length must not exceed n_fft."),
    ("stft", X20, dict(n_fft=8, window=np.ones((2, 4), np.float32)), "[stft] window must be a one-dimensional array."),
    ("stft", X20, dict(n_fft=8, window=np.float32(1)), "[stft] window must be a one-dimensional array."),
    ("stft", X20, dict(n_fft=8, pad_mode="zeros"), "[stft] Invalid padding mode (zeros) passed to pad"),
    ("stft", X20, dict(n_fft=8, norm="xx"), "[stft] Invalid norm. Expected one of {'backward', 'ortho', 'forward'}."),
    ("stft", X20, dict(n_fft=32, center=False), "[stft] Input is too short for the given n_fft."),
    ("stft", np.float32(1), dict(n_fft=8), "[stft] Input must have at least one dimension."),
    ("stft", np.zeros(0, np.float32), dict(n_fft=8), "[stft] Cannot infer the shape of an empty array"),
    ("stft", np.zeros((2, 0), np.float32), dict(n_fft=8, center=False), "[stft] Cannot infer the shape of an empty array"),
    # the order of the checks
    ("stft", np.float32(1), dict(n_fft=0), "[stft] n_fft must be positive."),
    ("stft", X20, dict(n_fft=0, norm="xx"), "[stft] Invalid norm. Expected one of {'backward', 'ortho', 'forward'}."),
    ("stft", np.float32(1), dict(n_fft=8, hop_length=0), "[stft] Input must have at least one dimension."),
    ("stft", X20, dict(n_fft=8, hop_length=0, win_length=9), "[stft] hop_length must be positive."),
    ("stft", np.zeros(0, np.float32), dict(n_fft=8, win_length=-1), "[stft] Negative dimensions not allowed."),
    ("stft", np.zeros(0, np.float32), dict(n_fft=8, pad_mode="x"), "[stft] Cannot infer the shape of an empty array"),
    ("stft", X20, dict(n_fft=80, pad_mode="x"), "[stft] Invalid padding mode (x) passed to pad"),
    ("istft", S93, dict(n_fft=0), "[istft] n_fft must be positive."),
    ("istft", S93, dict(n_fft=16, hop_length=-1), "[istft] hop_length must be positive."),
    ("istft", S93, dict(n_fft=16, win_length=17), "[istft] window length must not exceed n_fft."),
    ("istft", S93, dict(n_fft=16, win_length=-1), "[istft] Negative dimensions not allowed."),
    ("istft", S93, dict(window=np.ones(17, np.float32)), "[istft] window length must not exceed n_fft."),
    ("istft", S93, dict(window=np.ones((2, 8), np.float32)), "[istft] window must be a one-dimensional array."),
    ("istft", S93, dict(norm="bad"), "[istft] Invalid norm. Expected one of {'backward', 'ortho', 'forward'}."),
    ("istft", S93[:, 0], dict(), "[istft] Input must have at least two dimensions (freq, frames)."),
    ("istft", S93[:1], dict(), "[istft] n_fft must be positive."),
    ("istft", S93[:2], dict(), "[istft] hop_length must be positive."),
    ("istft", S93[:, :0], dict(), "[istft] Cannot infer the shape of an empty array"),
    ("istft", S93[:0], dict(n_fft=4), "[istft] Cannot infer the shape of an empty array"),
    ("istft", S93[:0], dict(), "[istft] n_fft must be positive."),
    ("istft", S93[:, 0], dict(norm="x"), "[istft] Invalid norm. Expected one of {'backward', 'ortho', 'forward'}."),
    ("istft", S93[:, :0], dict(win_length=-1), "[istft] Negative dimensions not allowed."),
    ("istft", S93, dict(n_fft=0, hop_length=0), "[istft] n_fft must be positive."),
]


def _call(m, fn, a, kw):
    kw = {k: (m.array(v) if k == "window" else v) for k, v in kw.items()}
    return getattr(m.fft, fn)(m.array(a), **kw)


@pytest.mark.parametrize("fn,a,kw,msg", ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors(fn, a, kw, msg):
    with pytest.raises(ValueError) as info:
        _call(mx, fn, a, kw)
    assert str(info.value) == msg


@needs_mlx
@pytest.mark.parametrize("fn,a,kw,msg", ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_as_mlx(fn, a, kw, msg):
    """MLX raises the same type, and the same text but for the op it
    names (MLX reports some from inside: [full], [reshape], pad)."""
    with pytest.raises(ValueError) as info:
        _call(mlx, fn, a, kw)
    theirs = str(info.value)
    for inner in ["[full] ", "[reshape] ", ""]:
        if theirs.startswith(inner) and msg == f"[{fn}] " + theirs[len(inner):]:
            break
    else:
        assert theirs == msg


def test_huge_broadcast_inputs_fail_cleanly():
    """2 (n_freq - 1) of a broadcast (2**62 + 1, 1) spectrum does not fit
    int64: an error, not an overflow."""
    s = mx.broadcast_to(mx.array(True), (2 ** 62 + 1, 1))  # 1-byte elements
    with pytest.raises(ValueError, match=r"^\[istft\] The frames are too large\.$"):
        mx.fft.istft(s)


def test_int_arguments_beyond_int32_are_type_errors():
    with pytest.raises(TypeError, match="incompatible function arguments"):
        mx.fft.stft(mx.array(X20), n_fft=2 ** 40)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        mx.fft.istft(mx.array(S93), length=2 ** 31)


def test_signatures():
    import inspect

    assert list(inspect.signature(mx.fft.stft).parameters) == [
        "x", "n_fft", "hop_length", "win_length", "window", "center", "pad_mode", "norm",
        "onesided", "stream"]
    assert list(inspect.signature(mx.fft.istft).parameters) == [
        "stft_matrix", "n_fft", "hop_length", "win_length", "window", "center", "norm",
        "onesided", "length", "stream"]
    p = inspect.signature(mx.fft.stft).parameters
    assert p["n_fft"].default == 2048 and p["pad_mode"].default == "reflect"
    from cmx import _compat

    assert _compat.implemented(mx.fft, "stft") and _compat.implemented(mx.fft, "istft")


# ---------------------------------------------------------------- MLX
def _mlx_pair(fn, a, kw, **extra):
    got = _call(mx, fn, a, kw)
    want = _call(mlx, fn, a, kw)
    assert got.shape == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    return np.array(got), np.array(want)


@needs_mlx
@pytest.mark.parametrize("kw", STFT_CASES, ids=case_id)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_stft_as_mlx(kw, dtype):
    x = (crand(2, 43) if dtype == "complex64" else rrand(2, 43)).astype(dtype)
    got, want = _mlx_pair("stft", x, kw)
    close(got, want, rel=5e-5)


@needs_mlx
@pytest.mark.parametrize("kw", ISTFT_CASES, ids=case_id)
def test_istft_as_mlx(kw):
    s = crand(2, 9, 6)
    got, want = _mlx_pair("istft", s, kw)
    m = float(np.abs(want).max()) if want.size else 0.0
    m = m if m > 0 else 1.0
    close(got / m, want / m, rel=5e-5)


@needs_mlx
def test_complex_window_as_mlx():
    """A complex window: istft divides by max(envelope, 1e-8) in complex64
    (ordered by real part, then imaginary), as MLX."""
    s, wc = crand(9, 6), crand(16)
    for one in [True, False]:
        s_in = s if one else crand(16, 6)
        got, want = _mlx_pair("istft", s_in, dict(n_fft=16, window=wc, onesided=one))
        close(got / np.abs(want).max(), want / np.abs(want).max(), rel=5e-5)
        got, want = _mlx_pair("stft", rrand(40), dict(n_fft=16, window=wc, onesided=one))
        close(got, want, rel=5e-5)


# ---------------------------------------------------------------- rules
def fd(f, x, eps=1e-6):
    """The gradient of real f at x by central differences in float64
    (complex x: dL/dRe + i dL/dIm, MLX's convention)."""
    x = np.asarray(x)
    g = np.zeros(x.shape, x.dtype)
    units = [1, 1j] if np.iscomplexobj(x) else [1]
    for i in np.ndindex(x.shape):
        for u in units:
            xp, xm = x.copy(), x.copy()
            xp[i] += eps * u
            xm[i] -= eps * u
            g[i] += u * (f(xp) - f(xm)) / (2 * eps)
    return g


def weigh(y, wr, wi=None):
    """A real loss of y: sum(Re y wr + Im y wi)."""
    if wi is None:
        return (y * wr).sum()
    return (y.real * wr).sum() + (y.imag * wi).sum()


def mx_weigh(y, wr, wi=None):
    if wi is None:
        return mx.sum(y * mx.array(wr))
    return mx.sum(mx.real(y) * mx.array(wr)) + mx.sum(mx.imag(y) * mx.array(wi))


GRAD_STFT = [dict(n_fft=8, hop_length=3), dict(n_fft=7, hop_length=2, pad_mode="edge"),
             dict(n_fft=8, hop_length=4, center=False, norm="ortho"),
             dict(n_fft=8, hop_length=3, pad_mode="symmetric", onesided=False)]


@pytest.mark.parametrize("kw", GRAD_STFT, ids=case_id)
def test_stft_grad(kw):
    x = rrand(2, 19).astype(np.float64)
    w = (np.hanning(6) + 0.5).astype(np.float64)
    shape = ref_stft(x, window=w, **kw).shape
    wr, wi = rrand(*shape), rrand(*shape)
    # with respect to the signal
    want = fd(lambda v: weigh(ref_stft(v, window=w, **kw), wr, wi), x)

    def loss_x(v):
        return mx_weigh(mx.fft.stft(v, window=mx.array(w), **kw), wr, wi)
    got = mx.grad(loss_x)(mx.array(x))
    close(got, want, rel=1e-5)
    t = rrand(*x.shape).astype(np.float64)
    _, (jv,) = mx.jvp(loss_x, [mx.array(x)], [mx.array(t)])
    np.testing.assert_allclose(jv.item(), float(np.sum(want * t)), rtol=1e-4, atol=1e-4)
    # with respect to the window
    want = fd(lambda v: weigh(ref_stft(x, window=v, **kw), wr, wi), w)
    got = mx.grad(lambda v: mx_weigh(mx.fft.stft(mx.array(x), window=v, **kw), wr, wi))(mx.array(w))
    close(got, want, rel=1e-5)


GRAD_ISTFT = [dict(n_fft=8, hop_length=3), dict(n_fft=7, hop_length=2, length=12),
              dict(n_fft=8, hop_length=2, center=False, norm="forward"),
              dict(n_fft=8, hop_length=3, onesided=False, length=20)]


@pytest.mark.parametrize("kw", GRAD_ISTFT, ids=case_id)
def test_istft_grad(kw):
    n_freq = kw["n_fft"] if kw.get("onesided") is False else kw["n_fft"] // 2 + 1
    s = crand(2, n_freq, 6).astype(np.complex128)
    w = (np.hanning(kw["n_fft"]) + 0.5)
    wr = rrand(*ref_istft(s, window=w, **kw).shape)
    want = fd(lambda v: weigh(ref_istft(v, window=w, **kw), wr), s)

    def loss_s(v):
        return mx_weigh(mx.fft.istft(v, window=mx.array(w, mx.float32), **kw), wr)
    got = mx.grad(loss_s)(mx.array(s.astype(np.complex64)))
    close(got, want, rel=2e-5)
    t = crand(*s.shape)
    _, (jv,) = mx.jvp(loss_s, [mx.array(s.astype(np.complex64))], [mx.array(t)])
    want_dir = float(np.sum(want.real * t.real) + np.sum(want.imag * t.imag))
    np.testing.assert_allclose(jv.item(), want_dir, rtol=1e-4, atol=1e-4)
    # with respect to the window (it also divides: not linear)
    want = fd(lambda v: weigh(ref_istft(s, window=v, **kw), wr), w)
    got = mx.grad(lambda v: mx_weigh(mx.fft.istft(mx.array(s.astype(np.complex64)), window=v, **kw), wr))(
        mx.array(w))
    close(got, want, rel=1e-4)


def test_vmap():
    x = rrand(5, 3, 30)
    got = mx.vmap(lambda v: mx.fft.stft(v, n_fft=8, hop_length=3), in_axes=1)(mx.array(x))
    close(got, np.stack([ref_stft(x[:, i], 8, 3) for i in range(3)]))
    # batched windows
    w = rrand(4, 8)
    got = mx.vmap(lambda v: mx.fft.stft(mx.array(x[0, 0]), n_fft=8, window=v))(mx.array(w))
    close(got, np.stack([ref_stft(x[0, 0], 8, window=w[i]) for i in range(4)]))
    s = crand(9, 4, 5)
    got = mx.vmap(lambda v: mx.fft.istft(v, n_fft=16, length=20), in_axes=2, out_axes=0)(mx.array(s))
    close(got, np.stack([ref_istft(s[..., i], n_fft=16, length=20) for i in range(5)]), rel=5e-5)


def test_compile_matches_eager():
    x = mx.array(rrand(2, 40))

    def f(v):
        return mx.fft.istft(mx.fft.stft(v, n_fft=16, hop_length=4), n_fft=16, hop_length=4, length=40)
    close(mx.compile(f)(x), np.array(f(x)), rel=1e-6)
    close(f(x), np.array(x), rel=5e-6)
