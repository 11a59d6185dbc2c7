"""mx.fast's norms and rope and the quantization ops on every device: each
case runs on `device` and, on the GPU, is compared with the CPU's result
(cpu_match): every dtype, odd and long rows (the register and the strided
norm kernels), non-contiguous inputs, rope's variants and offsets, every
bits/group size of quantize/dequantize/quantized_matmul with both
transposes, decode (1-8 rows: the matrix-vector kernel) and prompt
shapes (the tiled kernel), broadcast batches; attention with every mask
kind, sinks, GQA ratios, decode against short and long caches, odd and
causal L != S lengths, the tensor-core head dims, transposed heads. On the
CPU the same cases
check the ops against float64 NumPy references of their definitions."""
import numpy as np
import pytest

import cmx.core as mx
from conftest import cpu_match

RNG = np.random.default_rng(18)
DTYPES = [mx.float32, mx.float16, mx.bfloat16]
TOL = {mx.float32: 1e-4, mx.float16: 5e-3, mx.bfloat16: 4e-2}


def arr(*shape, dtype=mx.float32, scale=1.0):
    return mx.array((RNG.standard_normal(shape) * scale).astype(np.float32)).astype(dtype)


def f64(a):
    return np.array(a.astype(mx.float32)).astype(np.float64)


def rms_ref(x, w, eps):
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return y if w is None else y * w


def ln_ref(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    y = (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps)
    y = y if w is None else y * w
    return y if b is None else y + b


# ---------------------------------------------------------------- norms
# (2, 7): a warp a row, strided kernel (7 is no whole vector); (3, 64) and
# (5, 4096): register kernel, a warp / a block a row; (2, 40000): longer
# than the registers hold; (3, 1001): odd.
SHAPES = [(2, 7), (3, 64), (2, 3, 4096), (2, 40000), (3, 1001), (1, 8)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("wb", ["none", "w", "b", "wb"])
def test_norms(device, dt, shape, wb):
    D = shape[-1]
    x = arr(*shape, dtype=dt)
    w = arr(D, dtype=dt) if "w" in wb else None
    b = arr(D, dtype=dt) if "b" in wb else None
    tol = TOL[dt]
    y = cpu_match(device, lambda: mx.fast.layer_norm(x, w, b, 1e-5), tol, tol)
    assert y.dtype == dt and y.shape == x.shape
    np.testing.assert_allclose(
        f64(y), ln_ref(f64(x), None if w is None else f64(w),
                       None if b is None else f64(b), 1e-5), tol * 4, tol * 4)
    if b is None:
        y = cpu_match(device, lambda: mx.fast.rms_norm(x, w, 1e-5), tol, tol)
        np.testing.assert_allclose(
            f64(y), rms_ref(f64(x), None if w is None else f64(w), 1e-5),
            tol * 4, tol * 4)


@pytest.mark.parametrize("dt", DTYPES)
def test_norms_strided(device, dt):
    # transposed x, sliced x (offset rows), strided weight and bias
    xt = arr(256, 6, dtype=dt).T
    xs = arr(5, 300, dtype=dt)[1:, 8:264]
    wfull = arr(512, dtype=dt)
    w = wfull[::2]
    b = wfull[1::2]
    tol = TOL[dt]
    for x in (xt, xs):
        y = cpu_match(device, lambda: mx.fast.rms_norm(x, w, 1e-6), tol, tol)
        np.testing.assert_allclose(f64(y), rms_ref(f64(x), f64(w), 1e-6), tol * 4, tol * 4)
        y = cpu_match(device, lambda: mx.fast.layer_norm(x, w, b, 1e-6), tol, tol)
        np.testing.assert_allclose(f64(y), ln_ref(f64(x), f64(w), f64(b), 1e-6),
                                   tol * 4, tol * 4)
    # a broadcast row and an empty input
    xb = mx.broadcast_to(arr(1, 128, dtype=dt), (4, 128))
    cpu_match(device, lambda: mx.fast.rms_norm(xb, None, 1e-5), tol, tol)
    e = cpu_match(device, lambda: mx.fast.layer_norm(arr(0, 16, dtype=dt), None, None, 1e-5))
    assert e.shape == (0, 16)


# ---------------------------------------------------------------- rope


def rope_ref(x, dims, traditional, base, scale, offset, freqs=None):
    L, h = x.shape[-2], dims // 2
    inv = 1.0 / freqs if freqs is not None else base ** (-np.arange(h) * 2.0 / dims)
    off = np.asarray(offset).reshape((-1,) + (1,) * (x.ndim - 1))
    pos = (off + np.arange(L).reshape(-1, 1)) * scale  # (B|1, ..., L, 1)
    th = pos * inv
    c, s = np.cos(th), np.sin(th)
    y = x.copy()
    if traditional:
        a, b = x[..., 0:dims:2], x[..., 1:dims:2]
        y[..., 0:dims:2] = a * c - b * s
        y[..., 1:dims:2] = a * s + b * c
    else:
        a, b = x[..., :h], x[..., h:dims]
        y[..., :h] = a * c - b * s
        y[..., h:dims] = a * s + b * c
    return y


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("traditional", [False, True])
@pytest.mark.parametrize("dims,D", [(8, 8), (32, 80), (128, 128), (6, 7)])
def test_rope(device, dt, traditional, dims, D):
    x = arr(2, 3, 9, D, dtype=dt)
    tol = TOL[dt] * 2
    y = cpu_match(device, lambda: mx.fast.rope(x, dims, traditional=traditional,
                                               base=10000.0, scale=0.5, offset=7),
                  tol, tol)
    assert y.dtype == dt
    np.testing.assert_allclose(f64(y), rope_ref(f64(x), dims, traditional, 10000.0, 0.5, 7),
                               tol * 2, tol * 2)


@pytest.mark.parametrize("dt", DTYPES)
def test_rope_offsets_freqs_strided(device, dt):
    tol = TOL[dt] * 2
    x = arr(3, 2, 5, 16, dtype=dt)
    freqs = mx.array(np.abs(RNG.standard_normal(8)).astype(np.float32) + 0.5)
    y = cpu_match(device, lambda: mx.fast.rope(x, 16, traditional=False, base=None,
                                               scale=1.0, offset=2, freqs=freqs), tol, tol)
    np.testing.assert_allclose(f64(y), rope_ref(f64(x), 16, False, None, 1.0, 2,
                                                np.array(freqs).astype(np.float64)),
                               tol * 2, tol * 2)
    offs = mx.array(np.array([0, 3, 1000], np.int32))
    y = cpu_match(device, lambda: mx.fast.rope(x, 16, traditional=True, base=10000.0,
                                               scale=1.0, offset=offs), tol, tol)
    np.testing.assert_allclose(f64(y), rope_ref(f64(x), 16, True, 10000.0, 1.0,
                                                np.array(offs)), tol * 2, tol * 2)
    y = cpu_match(device, lambda: mx.fast.rope(x, 16, traditional=False, base=10000.0,
                                               scale=1.0, offset=mx.array(4)), tol, tol)
    # (B, L, H, D) transposed to (B, H, L, D): strided rows and positions
    xt = arr(2, 6, 4, 32, dtype=dt).transpose(0, 2, 1, 3)
    y = cpu_match(device, lambda: mx.fast.rope(xt, 24, traditional=False, base=500.0,
                                               scale=2.0, offset=3), tol, tol)
    np.testing.assert_allclose(f64(y), rope_ref(f64(xt), 24, False, 500.0, 2.0, 3),
                               tol * 2, tol * 2)


# ---------------------------------------------------------------- quantization
BITS = [2, 3, 4, 5, 6, 8]
GROUPS = [32, 64, 128]


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("g", GROUPS)
@pytest.mark.parametrize("dt", DTYPES)
def test_quantize_dequantize(device, bits, g, dt):
    w = arr(6, 256, dtype=dt)
    # quantize: the same float32 operations as the CPU, so equal packs
    got = cpu_match(device, lambda: mx.quantize(w, group_size=g, bits=bits), 0, 0)
    wq, s, b = got
    assert wq.dtype == mx.uint32 and s.dtype == dt
    d = cpu_match(device, lambda: mx.dequantize(wq, s, b, group_size=g, bits=bits),
                  1e-6, 1e-6)
    # within 1.5 steps of each group's range (MLX's rule), half rounding aside
    wg = f64(w).reshape(6, -1, g)
    step = (wg.max(-1) - wg.min(-1)) / ((1 << bits) - 1)
    err = np.abs(f64(d) - f64(w)).reshape(6, -1, g).max(-1)
    assert (err <= 1.5 * step + 0.02 * np.abs(wg).max(-1)).all()
    # strided (transposed) input to quantize
    wt = arr(256, 4, dtype=dt).T
    cpu_match(device, lambda: mx.quantize(wt, group_size=g, bits=bits), 0, 0)


def qmm_ref(x, wq, s, b, g, bits, transpose):
    W = f64(mx.dequantize(wq, s, b, group_size=g, bits=bits, stream=mx.cpu))
    return x @ (np.swapaxes(W, -1, -2) if transpose else W)


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("g", GROUPS)
@pytest.mark.parametrize("transpose", [True, False])
# M 1, 2, 3, 7, 8: the matrix-vector kernels (MT 1, 2, 4, 8); more rows
# (float32 here): dequantize + cuBLASLt (the tiled kernel without
# cuBLASLt); x @ W takes the tiled kernel up to 8 rows.
@pytest.mark.parametrize("M", [1, 2, 3, 7, 8, 9, 16, 17, 64, 300])
def test_quantized_matmul(device, bits, g, transpose, M):
    K, N = 256, 96
    w = arr(N, K) if transpose else arr(K, N + 32)
    wq, s, b = mx.quantize(w, group_size=g, bits=bits, stream=mx.cpu)
    Kx = K if transpose else K
    x = arr(M, Kx)
    y = cpu_match(device, lambda: mx.quantized_matmul(
        x, wq, s, b, transpose=transpose, group_size=g, bits=bits), 2e-4, 2e-4)
    np.testing.assert_allclose(f64(y), qmm_ref(f64(x), wq, s, b, g, bits, transpose),
                               1e-3, 1e-3)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("M", [1, 5, 33])
def test_quantized_matmul_dtypes_batches(device, dt, M):
    tol = TOL[dt] * 4
    # a long row (two x tiles in the matrix-vector kernel for M 5), a
    # broadcast weight batch, transposed x
    K, N = 4096 if M == 5 else 512, 40
    w = arr(N, K, scale=0.2)
    wq, s, b = mx.quantize(w.astype(dt), group_size=64, bits=4, stream=mx.cpu)
    x = arr(2, M, K, dtype=dt, scale=0.2)
    y = cpu_match(device, lambda: mx.quantized_matmul(
        x, wq, s, b, transpose=True, group_size=64, bits=4), tol, tol)
    assert y.dtype == dt and y.shape == (2, M, N)
    np.testing.assert_allclose(f64(y), qmm_ref(f64(x), wq, s, b, 64, 4, True), tol, tol * 4)
    xt = arr(2, K, M, dtype=dt, scale=0.2).transpose(0, 2, 1)
    cpu_match(device, lambda: mx.quantized_matmul(
        xt, wq, s, b, transpose=True, group_size=64, bits=4), tol, tol)
    # x @ W with W (K, N), batch of weights, x float32 with bfloat16 scales
    w2 = arr(3, 128, 64)
    wq2, s2, b2 = mx.quantize(w2, group_size=32, bits=3, stream=mx.cpu)
    x2 = arr(3, M, 128)
    cpu_match(device, lambda: mx.quantized_matmul(
        x2, wq2, s2.astype(mx.bfloat16), b2.astype(mx.bfloat16), transpose=False,
        group_size=32, bits=3), 1e-3, 1e-3)



@pytest.mark.parametrize("kernel,M", [(k, m) for k in ("", "fast") for m in (1, 2, 5, 8)]
                         + [("r1", 1), ("r2", 1), ("w", 1), ("w1", 1), ("w2", 1)])
@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("dt", DTYPES)
def test_qmv_shapes(device, monkeypatch, kernel, bits, dt, M):
    """The matrix-vector kernels' corners: N not a multiple of a block's
    weight rows (97), a long K (8192: more chunks than a block has
    threads, the block grown for a small N) and a short one (96: packed
    rows of 2 / 6 bits only 8-byte aligned, fewer chunks than a warp), x
    unaligned for 16-byte loads (a column slice) and strided (transposed),
    scales of another dtype than x, an N past which one row of x takes
    two weight rows a block (1031). Every GPU kernel: the default,
    CMX_CUDA_QMV=fast (more weight rows a block, no integer conversions
    at 4 and 8 bits) and, for one row of x, CMX_CUDA_QMV=r1 / r2 (one /
    two weight rows a block at any N) and w / w1 / w2 (a warp for each 4 /
    1 / 2 weight rows at any N and K: at K 8192 each lane takes 8
    chunks)."""
    monkeypatch.setenv("CMX_CUDA_QMV", kernel)
    tol = TOL[dt] * 4
    for K, N, g in [(8192, 24, 128), (96, 97, 32), (512, 97, 64), (64, 1031, 32)]:
        w = arr(N, K, scale=0.2)
        wq, s, b = mx.quantize(w, group_size=g, bits=bits, stream=mx.cpu)
        s, b = s.astype(dt), b.astype(dt)
        xs = [arr(M, K, dtype=dt, scale=0.2),
              arr(M, K + 1, dtype=dt, scale=0.2)[:, 1:],
              arr(K, M, dtype=dt, scale=0.2).T]
        for x in xs:
            y = cpu_match(device, lambda: mx.quantized_matmul(
                x, wq, s, b, transpose=True, group_size=g, bits=bits), tol, tol)
            np.testing.assert_allclose(f64(y), qmm_ref(f64(x), wq, s, b, g, bits, True),
                                       tol, tol * K / 64)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("bits", [4, 8])
def test_qmv_warps_bit_exact(device, monkeypatch, dt, bits):
    """cmx_qmv1w, the default for one row of x from N 16384 where K has
    at most 32 chunks (an LM head), gives cmx_qmv1's outputs (CMX_CUDA_QMV=
    r2) bit for bit: K 576, N not a multiple of a block's 32 rows, one row
    of x and a batch of 3 (x (3, 1, K)); and both match the CPU."""
    K, N = 576, 16384 + 13
    w = arr(N, K, scale=0.2)
    wq, s, b = mx.quantize(w, group_size=32, bits=bits, stream=mx.cpu)
    s, b = s.astype(dt), b.astype(dt)
    tol = TOL[dt] * 4
    for x in (arr(1, K, dtype=dt, scale=0.2), arr(3, 1, K, dtype=dt, scale=0.2)):
        def run():
            return mx.quantized_matmul(x, wq, s, b, transpose=True,
                                       group_size=32, bits=bits)
        monkeypatch.delenv("CMX_CUDA_QMV", raising=False)
        got = cpu_match(device, run, tol, tol)
        monkeypatch.setenv("CMX_CUDA_QMV", "r2")
        want = cpu_match(device, run, tol, tol)
        monkeypatch.delenv("CMX_CUDA_QMV")
        assert got.shape == x.shape[:-1] + (N,)
        assert np.array_equal(f64(got), f64(want))


@pytest.mark.parametrize("path", ["mma", "gemm", "tiled"])
@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("M", [1, 7, 65])
def test_quantized_matmul_forced_paths(device, monkeypatch, path, bits, dt, transpose, M):
    """Every GPU kernel on every shape (CMX_QMM_PATH forces one: the
    tensor-core kernel for 16-bit x, dequantize + cuBLASLt, the tiled
    kernel), K split (the tensor-core kernel on a small grid), N and M not
    multiples of the 64 x 64 tile, a K long enough for several steps."""
    monkeypatch.setenv("CMX_QMM_PATH", path)
    tol = TOL[dt] * 4
    K, N, g = 1024, 160, 32
    w = arr(N, K, scale=0.2) if transpose else arr(K, N, scale=0.2)
    wq, s, b = mx.quantize(w.astype(dt), group_size=g, bits=bits, stream=mx.cpu)
    x = arr(M, K, dtype=dt, scale=0.2)
    y = cpu_match(device, lambda: mx.quantized_matmul(
        x, wq, s, b, transpose=transpose, group_size=g, bits=bits), tol, tol * 4)
    np.testing.assert_allclose(f64(y), qmm_ref(f64(x), wq, s, b, g, bits, transpose),
                               tol, tol * 8)
    xt = arr(2, K, M, dtype=dt, scale=0.2).transpose(0, 2, 1)  # strided x, a batch
    cpu_match(device, lambda: mx.quantized_matmul(
        xt, wq, s, b, transpose=transpose, group_size=g, bits=bits), tol, tol * 4)


@pytest.mark.parametrize("M", [1, 3, 40])
def test_quantized_matmul_batch_layouts(device, M):
    """Batches that are no single strided run (x (2, 3, M, K) against
    weights (3, N, K) broadcast over the first dim: the tiled kernel) and
    ones that are (weights batched as x: one batched cuBLASLt product)."""
    K, N = 256, 64
    w = arr(3, N, K)
    wq, s, b = mx.quantize(w, group_size=64, bits=4, stream=mx.cpu)
    for x in [arr(3, M, K), arr(2, 3, M, K)]:
        for tr in [True, False]:
            wq2, s2, b2 = (wq, s, b) if tr else mx.quantize(
                arr(3, K, N), group_size=64, bits=4, stream=mx.cpu)
            try:
                y = cpu_match(device, lambda: mx.quantized_matmul(
                    x, wq2, s2, b2, transpose=tr, group_size=64, bits=4), 2e-4, 2e-4)
            except ValueError as e:
                # Known: on the H100 the weights broadcast over a leading
                # batch dim reach the GPU kernel without row-contiguous
                # packed rows, which it refuses with this clear error.
                if device != mx.gpu or x.ndim != 4 or "row-contiguous" not in str(e):
                    raise
                pytest.xfail("GPU quantized_matmul: weights broadcast over two batch "
                             "dims are refused (not row-contiguous)")
            np.testing.assert_allclose(f64(y), qmm_ref(f64(x), wq2, s2, b2, 64, 4, tr),
                                       1e-3, 1e-3)


# ---------------------------------------------------------------- attention
# The fused GPU kernels (CUDA cores: any case with head dims up to 256,
# decode with the keys split over blocks; tensor cores: float16/bfloat16,
# head dims 64/80/96/128) against the CPU kernel. bfloat16 tolerance: 3e-2
# (the probabilities enter P V rounded to bfloat16, outputs are rounded to
# bfloat16: 1 ulp at 1 is 7.8e-3).
SDPA_TOL = {mx.float32: 2e-5, mx.float16: 4e-3, mx.bfloat16: 3e-2}


@pytest.mark.parametrize("mask", [None, "causal", "bool", "add"])
@pytest.mark.parametrize("H,Hk", [(4, 4), (8, 2), (6, 1)])
@pytest.mark.parametrize("L,S", [(1, 50), (7, 7), (9, 4), (5, 33)])
def test_sdpa(device, mask, H, Hk, L, S):
    q, k, v = arr(2, H, L, 32), arr(2, Hk, S, 32), arr(2, Hk, S, 24)
    m = mask
    if mask == "bool":
        m = arr(L, S) > -0.3
    elif mask == "add":
        m = arr(2, 1, L, S)
    for sinks in (None, arr(H)):
        if sinks is not None and mask in ("bool", "add"):
            continue
        y = cpu_match(device, lambda: mx.fast.scaled_dot_product_attention(
            q, k, v, scale=0.3, mask=m, sinks=sinks), 2e-5, 2e-5)
        assert y.shape == (2, H, L, 24)


@pytest.mark.parametrize("dt", [mx.float16, mx.bfloat16])
def test_sdpa_half_decode(device, dt):
    tol = TOL[dt] * 2
    q = arr(1, 8, 1, 64, dtype=dt)
    kc, vc = arr(1, 2, 300, 64, dtype=dt), arr(1, 2, 300, 64, dtype=dt)
    k, v = kc[:, :, :257], vc[:, :, :257]  # a slice of a longer cache
    y = cpu_match(device, lambda: mx.fast.scaled_dot_product_attention(
        q, k, v, scale=0.125, mask="causal"), tol, tol)
    assert y.dtype == dt


@pytest.mark.parametrize("dt,D", [(mx.float32, 64), (mx.float32, 128),
                                  (mx.float16, 64), (mx.float16, 256),
                                  (mx.bfloat16, 128)])
@pytest.mark.parametrize("R,L,S,mask", [(1, 1, 17, None), (2, 1, 40, "causal"),
                                        (3, 1, 700, "add"), (4, 2, 1000, "bool"),
                                        (8, 1, 4096, "sinks")])
def test_sdpa_decode_split_merge(device, dt, D, R, L, S, mask, monkeypatch):
    """The decode kernel over caches split into 2 to 64 blocks a kv head
    (16 keys a split at least): the records merged by the kernel's last
    split block (CMX_CUDA_SDPA_DEC_COMBINE=kernel, read at each call), and
    by a combine launch (the default), give the same bits and match the CPU. RL = R * L
    1, 2, 3 and 8 take each ROWS variant; B 2, 2 kv heads."""
    B, Hk = 2, 2
    H = Hk * R
    q, k, v = arr(B, H, L, D, dtype=dt), arr(B, Hk, S, D, dtype=dt), arr(B, Hk, S, D, dtype=dt)
    sinks = arr(H, dtype=dt) if mask == "sinks" else None
    m = sdpa_mask(mask, B, H, L, S, dt) if mask != "sinks" else None
    tol = SDPA_TOL[dt]

    def run():
        y = mx.fast.scaled_dot_product_attention(q, k, v, scale=D ** -0.5, mask=m,
                                                 sinks=sinks)
        mx.eval(y)
        return y

    got = []
    for knob in ("kernel", None):
        if knob:
            monkeypatch.setenv("CMX_CUDA_SDPA_DEC_COMBINE", knob)
        got.append(cpu_match(device, run, tol, tol))
        monkeypatch.delenv("CMX_CUDA_SDPA_DEC_COMBINE", raising=False)
    a, b = (np.array(x.astype(mx.float32)) for x in got)
    assert np.array_equal(a, b), "in-kernel merge and combine launch differ"


@pytest.mark.parametrize("knob", ["kernel", None])
def test_sdpa_decode_steps_repeat(device, knob, monkeypatch):
    """SmolLM2's decoding shape (9 query heads on 3 kv heads, 256 keys, 16
    splits): steps repeated on one stream, two calls chained in each, until
    the batch replays as a CUDA graph (merged in the kernel, each launch
    must leave its split counters at 0, or a later step's rows go
    unwritten; or by the combine launch)."""
    if knob:
        monkeypatch.setenv("CMX_CUDA_SDPA_DEC_COMBINE", knob)
    k, v = arr(1, 3, 256, 64), arr(1, 3, 256, 64)
    for _ in range(6):
        q = arr(1, 9, 1, 64)

        def run():
            y1 = mx.fast.scaled_dot_product_attention(q * 2, k, v, scale=0.125)
            y2 = mx.fast.scaled_dot_product_attention(y1, k, v, scale=0.125,
                                                      mask="causal")
            mx.eval(y1, y2)
            return y1, y2

        cpu_match(device, run, 2e-5, 2e-5)


def sdpa_mask(kind, B, H, L, S, dt):
    if kind == "bool":
        return arr(1, H, L, S) > -0.5
    if kind == "add":
        return arr(B, 1, L, S, dtype=dt)
    return kind


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("D", [64, 80, 96, 128])
@pytest.mark.parametrize("mask", [None, "causal", "bool", "add"])
def test_sdpa_prompt_head_dims(device, dt, D, mask):
    # 2 query heads a kv head, 75 rows (two 64-row tiles, the second
    # partial), 141 keys (three 64-key tiles, the last partial)
    B, H, Hk, L, S = 2, 4, 2, 75, 141
    q, k, v = arr(B, H, L, D, dtype=dt), arr(B, Hk, S, D, dtype=dt), arr(B, Hk, S, D, dtype=dt)
    m = sdpa_mask(mask, B, H, L, S, dt)
    sinks = arr(H, dtype=dt) if mask in (None, "causal") else None
    tol = SDPA_TOL[dt]
    y = cpu_match(device, lambda: mx.fast.scaled_dot_product_attention(
        q, k, v, scale=D ** -0.5, mask=m, sinks=sinks), tol, tol)
    assert y.dtype == dt and y.shape == (B, H, L, D)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("S", [1, 17, 4096])
@pytest.mark.parametrize("R", [1, 2, 4, 8])
def test_sdpa_decode_gqa(device, dt, S, R):
    H = 8
    q, k, v = arr(2, H, 1, 128, dtype=dt), arr(2, H // R, S, 128, dtype=dt), arr(2, H // R, S, 128, dtype=dt)
    tol = SDPA_TOL[dt]
    for mask in (None, "causal", sdpa_mask("add", 2, H, 1, S, dt)):
        y = cpu_match(device, lambda: mx.fast.scaled_dot_product_attention(
            q, k, v, scale=128 ** -0.5, mask=mask), tol, tol)
        assert y.shape == (2, H, 1, 128)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("L,S", [(1, 1), (3, 1), (130, 67), (67, 130), (33, 4096)])
def test_sdpa_causal_lengths(device, dt, L, S):
    # causal aligned to the end (key t for query i when t <= i + S - L);
    # L > S leaves the first rows with no key (a uniform average, or the
    # sink alone)
    q, k, v = arr(1, 4, L, 64, dtype=dt), arr(1, 1, S, 64, dtype=dt), arr(1, 1, S, 64, dtype=dt)
    tol = SDPA_TOL[dt]
    for sinks in (None, arr(4, dtype=dt)):
        cpu_match(device, lambda: mx.fast.scaled_dot_product_attention(
            q, k, v, scale=0.125, mask="causal", sinks=sinks), tol, tol)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("D,Dv", [(128, 128), (40, 72), (256, 256)])
def test_sdpa_transposed_heads(device, dt, D, Dv):
    # q, k, v as (B, L, H, D) arrays viewed as (B, H, L, D): heads not
    # contiguous; D 40 / Dv 72 and 256 take the CUDA-core kernel
    B, H, Hk, L, S = 2, 8, 4, 70, 90
    q = arr(B, L, H, D, dtype=dt).transpose(0, 2, 1, 3)
    k = arr(B, S, Hk, D, dtype=dt).transpose(0, 2, 1, 3)
    v = arr(B, S, Hk, Dv, dtype=dt).transpose(0, 2, 1, 3)
    tol = SDPA_TOL[dt]
    for mask in (None, "causal"):
        y = cpu_match(device, lambda: mx.fast.scaled_dot_product_attention(
            q, k, v, scale=0.1, mask=mask), tol, tol)
        assert y.shape == (B, H, L, Dv)


def test_sdpa_large_head_dim_composite(device):
    # head dims past 256 take the composite on the GPU
    q, k, v = arr(1, 2, 5, 320), arr(1, 2, 9, 320), arr(1, 2, 9, 300)
    y = cpu_match(device, lambda: mx.fast.scaled_dot_product_attention(
        q, k, v, scale=0.05, mask="causal"), 2e-5, 2e-5)
    assert y.shape == (1, 2, 5, 300)


def sdpa_ref(q, k, v, scale, mask, sinks):
    """float64 attention of NumPy arrays (mask: None, "causal" with L <= S,
    a boolean or an additive array; sinks: H values or None)."""
    B, H, L, _ = q.shape
    S, R = k.shape[2], H // k.shape[1]
    kk, vv = np.repeat(k, R, 1), np.repeat(v, R, 1)
    s = (q * scale) @ np.swapaxes(kk, -1, -2)
    if isinstance(mask, str):
        s = np.where(np.tri(L, S, S - L, dtype=bool), s, -np.inf)
    elif mask is not None and mask.dtype == bool:
        s = np.where(mask, s, np.finfo(np.float32).min)
    elif mask is not None:
        s = s + mask
    mx_ = s.max(-1, keepdims=True)
    if sinks is not None:
        mx_ = np.maximum(mx_, sinks.reshape(1, H, 1, 1))
    p = np.exp(s - mx_)
    den = p.sum(-1, keepdims=True)
    if sinks is not None:
        den = den + np.exp(sinks.reshape(1, H, 1, 1) - mx_)
    return (p @ vv) / den


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("D", [64, 128, 256])
@pytest.mark.parametrize("mask", [None, "causal", "bool", "add"])
def test_sdpa_decode_kernel(device, dt, D, mask):
    """The decode kernel (at most 8 query rows a kv head, D == Dv in 64 /
    128 / 256, aligned rows): 1, 2, 4 and 8 rows a block (GQA ratios 1, 2,
    4, 8, and 2 x 3 rows of L 3), keys that fill no whole step (5), one
    split of an odd length (63) and several (1000, 4096: the combine pass),
    every mask kind, sinks; against the CPU and a float64 reference."""
    tol = SDPA_TOL[dt]
    for (B, H, Hk, L) in [(3, 4, 4, 1), (2, 8, 4, 1), (1, 8, 2, 1), (2, 8, 1, 1),
                          (1, 4, 2, 3)]:
        for S in (5, 63, 1000) if D != 128 or Hk != 4 else (4096,):
            q = arr(B, H, L, D, dtype=dt)
            k, v = arr(B, Hk, S, D, dtype=dt), arr(B, Hk, S, D, dtype=dt)
            m = sdpa_mask(mask, B, H, L, S, dt)
            sinks = arr(H, dtype=dt) if mask in (None, "causal") and S != 63 else None
            y = cpu_match(device, lambda: mx.fast.scaled_dot_product_attention(
                q, k, v, scale=D ** -0.5, mask=m, sinks=sinks), tol, tol)
            assert y.dtype == dt and y.shape == (B, H, L, D)
            ref = sdpa_ref(f64(q), f64(k), f64(v), D ** -0.5,
                           m if isinstance(m, str) or m is None else
                           (np.array(m) if m.dtype == mx.bool_ else f64(m)),
                           None if sinks is None else f64(sinks))
            np.testing.assert_allclose(f64(y), ref, tol * 2, tol * 2)


@pytest.mark.parametrize("dt", [mx.float16, mx.float32])
def test_sdpa_decode_kernel_layouts(device, dt):
    """Decode over a slice of a longer cache (row strides of the whole
    cache), over heads that are not contiguous ((B, S, Hk, D) viewed as
    (B, Hk, S, D)), and over keys whose rows are not 16-byte aligned (a
    feature slice: the CUDA-core kernel)."""
    tol = SDPA_TOL[dt]
    q = arr(2, 6, 1, 64, dtype=dt)
    kc, vc = arr(2, 3, 700, 64, dtype=dt), arr(2, 3, 700, 64, dtype=dt)
    kt = arr(2, 333, 3, 64, dtype=dt).transpose(0, 2, 1, 3)
    vt = arr(2, 333, 3, 64, dtype=dt).transpose(0, 2, 1, 3)
    ku, vu = arr(2, 3, 90, 65, dtype=dt)[..., 1:], arr(2, 3, 90, 65, dtype=dt)[..., 1:]
    for k, v in [(kc[:, :, :517], vc[:, :, :517]), (kt, vt), (ku, vu)]:
        for mask in (None, "causal"):
            y = cpu_match(device, lambda: mx.fast.scaled_dot_product_attention(
                q, k, v, scale=0.125, mask=mask), tol, tol)
            ref = sdpa_ref(f64(q), f64(k), f64(v), 0.125, mask, None)
            np.testing.assert_allclose(f64(y), ref, tol * 2, tol * 2)
