"""Differential suite, the families the other files leave thin: linalg,
fft, fast, quantization and the smaller top-level functions, run in cmx and
in MLX (see _mlx_diff.py)."""
import itertools

import numpy as np
import pytest

from _mlx_diff import Cases, check, mlx, np_values, make_rng

pytestmark = pytest.mark.skipif(mlx is None, reason="mlx[cpu] not installed")

rng = make_rng(25)
C = Cases()
LOOSE = (1e-4, 1e-4)
LA = (2e-3, 2e-3)


def arr(shape, dt="float32", domain=None):
    return np_values(rng, shape, dt, domain)


def case(cid, f, tol=None):
    C.add(cid, f, tol)


def spd(n, batch=()):
    a = arr(batch + (n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(np.float32)


# ---------------------------------------------------------------- linalg
for shape in [(3, 3), (2, 4, 4), (1, 1)]:
    a, s = arr(shape), spd(shape[-1], shape[:-2])
    b = arr(shape[:-1] + (2,))
    case(f"la/inv/{shape}", lambda m, A, a=s: m.linalg.inv(A(a), stream=m.cpu), LA)
    case(f"la/cholesky/{shape}",
         lambda m, A, a=s: m.linalg.cholesky(A(a), stream=m.cpu), LA)
    case(f"la/cholesky_upper/{shape}",
         lambda m, A, a=s: m.linalg.cholesky(A(a), upper=True, stream=m.cpu), LA)
    case(f"la/eigvalsh/{shape}",
         lambda m, A, a=s: m.linalg.eigvalsh(A(a), stream=m.cpu), LA)
    case(f"la/solve/{shape}",
         lambda m, A, a=s, b=b: m.linalg.solve(A(a), A(b), stream=m.cpu), LA)
    case(f"la/tri_inv/{shape}",
         lambda m, A, a=s: m.linalg.tri_inv(A(np.tril(a)), stream=m.cpu), LA)
    case(f"la/solve_triangular/{shape}",
         lambda m, A, a=s, b=b: m.linalg.solve_triangular(
             A(np.triu(a)), A(b), upper=True, stream=m.cpu), LA)
    case(f"la/cholesky_inv/{shape}",
         lambda m, A, a=s: m.linalg.cholesky_inv(
             m.linalg.cholesky(A(a), stream=m.cpu), stream=m.cpu), LA)
    case(f"la/svd_values/{shape}",
         lambda m, A, a=a: m.linalg.svd(A(a), compute_uv=False, stream=m.cpu), LA)
    case(f"la/pinv/{shape}", lambda m, A, a=s: m.linalg.pinv(A(a), stream=m.cpu), LA)
for ord_, axis in [(None, None), (2, None), ("fro", None), (1, 0), (np.inf, -1),
                   (-np.inf, 1), (0, 1), (3, 0), ("nuc", None), (-1, None),
                   (1, None), (np.inf, None)]:
    x = arr((3, 4))
    case(f"la/norm/{ord_}/{axis}",
         lambda m, A, x=x, o=ord_, ax=axis: m.linalg.norm(A(x), o, ax,
                                                          stream=m.cpu), LOOSE)
for shape in [(3,), (2, 3)]:
    a, b = arr(shape), arr(shape)
    case(f"la/cross/{shape}", lambda m, A, a=a, b=b: m.linalg.cross(A(a), A(b)), LOOSE)
case("la/cross/bad", lambda m, A: m.linalg.cross(A(arr((4,))), A(arr((4,)))))
case("la/inv/nonsquare", lambda m, A: m.linalg.inv(A(arr((2, 3))), stream=m.cpu))
case("la/inv/int", lambda m, A: m.linalg.inv(A(np.eye(2, dtype=np.int32), "int32"),
                                             stream=m.cpu))
case("la/qr/shape", lambda m, A: [x.shape for x in m.linalg.qr(A(arr((4, 3))),
                                                              stream=m.cpu)])
case("la/lu_factor/shape", lambda m, A: [x.shape for x in m.linalg.lu_factor(
    A(arr((3, 3))), stream=m.cpu)])
case("la/eigh/values", lambda m, A: m.linalg.eigh(A(spd(3)), stream=m.cpu)[0], LA)
s3 = spd(3)
case("la/det", lambda m, A: m.linalg.det(A(s3), stream=m.cpu)
     if hasattr(m.linalg, "det") else m.array(0), LA)
case("la/slogdet", lambda m, A: m.linalg.slogdet(A(s3), stream=m.cpu)
     if hasattr(m.linalg, "slogdet") else m.array(0), LA)

# ---------------------------------------------------------------- fft
for shape, n, axis in [((8,), None, -1), ((4, 6), None, 0), ((4, 6), 5, -1),
                       ((4, 6), 8, 1), ((3, 4, 5), None, -1)]:
    x = arr(shape)
    xc = arr(shape, "complex64")
    for name in ["fft", "ifft"]:
        case(f"fft/{name}/{shape}/{n}/{axis}",
             lambda m, A, x=xc, f=name, n=n, a=axis: getattr(m.fft, f)(
                 A(x, "complex64"), n=n, axis=a), LA)
    case(f"fft/rfft/{shape}/{n}/{axis}",
         lambda m, A, x=x, n=n, a=axis: m.fft.rfft(A(x), n=n, axis=a), LA)
    case(f"fft/irfft/{shape}/{n}/{axis}",
         lambda m, A, x=xc, n=n, a=axis: m.fft.irfft(A(x, "complex64"), n=n, axis=a), LA)
for name in ["fft2", "ifft2", "fftn", "ifftn"]:
    xc = arr((3, 4, 6), "complex64")
    case(f"fft/{name}", lambda m, A, x=xc, f=name: getattr(m.fft, f)(A(x, "complex64")), LA)
for name in ["rfft2", "rfftn"]:
    x = arr((3, 4, 6))
    case(f"fft/{name}", lambda m, A, x=x, f=name: getattr(m.fft, f)(A(x)), LA)
for name in ["irfft2", "irfftn"]:
    xc = arr((3, 4, 4), "complex64")
    case(f"fft/{name}", lambda m, A, x=xc, f=name: getattr(m.fft, f)(A(x, "complex64")), LA)
for n, d in [(8, 1.0), (5, 0.5), (1, 2.0)]:
    case(f"fft/fftfreq/{n}/{d}", lambda m, A, n=n, d=d: m.fft.fftfreq(n, d), LOOSE)
    case(f"fft/rfftfreq/{n}/{d}", lambda m, A, n=n, d=d: m.fft.rfftfreq(n, d), LOOSE)
for axes in [None, (0,), (1,), (0, 1)]:
    x = arr((4, 5))
    case(f"fft/fftshift/{axes}", lambda m, A, x=x, a=axes: m.fft.fftshift(A(x), a))
    case(f"fft/ifftshift/{axes}", lambda m, A, x=x, a=axes: m.fft.ifftshift(A(x), a))
case("fft/fft/int", lambda m, A: m.fft.fft(A(np.arange(4), "int32")), LA)
case("fft/fft/bad_axis", lambda m, A: m.fft.fft(A(arr((4,))), axis=2))
case("fft/fft/zero_n", lambda m, A: m.fft.fft(A(arr((4,))), n=0))


def _win(m, A, kw):
    """kw with its NumPy window made an array of module m."""
    return {k: (A(v) if k == "window" else v) for k, v in kw.items()}


HANN6 = np.hanning(6).astype(np.float32) + 0.1
STFT_KW = [dict(n_fft=8), dict(n_fft=9, hop_length=2, center=False),
           dict(n_fft=8, pad_mode="constant", onesided=False),
           dict(n_fft=8, pad_mode="edge", norm="ortho"),
           dict(n_fft=16, win_length=10, hop_length=3, norm="forward"),
           dict(n_fft=8, window=HANN6, pad_mode="symmetric")]
for i, kw in enumerate(STFT_KW):
    x, xc = arr((2, 30)), arr((30,), "complex64")
    case(f"fft/stft/{i}", lambda m, A, x=x, kw=kw: m.fft.stft(A(x), **_win(m, A, kw)), LA)
    case(f"fft/stft_complex/{i}",
         lambda m, A, x=xc, kw=kw: m.fft.stft(A(x, "complex64"), **_win(m, A, kw)), LA)
    kw_i = {k: v for k, v in kw.items() if k != "pad_mode"}
    case(f"fft/istft_round_trip/{i}",
         lambda m, A, x=x, kw=kw, kw_i=kw_i: m.fft.istft(
             m.fft.stft(A(x), **_win(m, A, kw)), length=30 if kw_i.get("center", True) else 28,
             **_win(m, A, kw_i)), LA)
for i, kw in enumerate([dict(), dict(n_fft=9), dict(n_fft=16, onesided=False, length=40),
                        dict(n_fft=8, hop_length=10, center=False), dict(window=HANN6, length=11)]):
    s = arr((2, 16, 4) if kw.get("onesided") is False else (2, 5, 4), "complex64")
    case(f"fft/istft/{i}", lambda m, A, s=s, kw=kw: m.fft.istft(A(s, "complex64"), **_win(m, A, kw)), LA)
s, t = arr((4, 6), "complex64"), arr((4, 6), "complex64")
case("fft/istft_jvp_odd", lambda m, A, s=s, t=t: m.jvp(
    lambda v: m.fft.istft(v, n_fft=7, hop_length=2), [A(s, "complex64")],
    [A(t, "complex64")])[1][0], LA)
case("fft/istft_jvp_even", lambda m, A, s=s, t=t: m.jvp(
    lambda v: m.fft.istft(v, n_fft=6, hop_length=2), [A(s, "complex64")],
    [A(t, "complex64")])[1][0], LA)
for i, (f, shape, kw) in enumerate([
        ("stft", (20,), dict(n_fft=0)), ("stft", (20,), dict(n_fft=8, hop_length=0)),
        ("stft", (20,), dict(n_fft=8, win_length=9)), ("stft", (20,), dict(n_fft=8, pad_mode="wrap")),
        ("stft", (20,), dict(n_fft=8, norm="none")), ("stft", (20,), dict(n_fft=40, center=False)),
        ("stft", (), dict(n_fft=8)), ("stft", (0,), dict(n_fft=8)),
        ("istft", (9,), dict()), ("istft", (1, 3), dict()), ("istft", (9, 0), dict()),
        ("istft", (9, 3), dict(n_fft=16, win_length=17))]):
    a = arr(shape, "complex64" if f == "istft" else "float32")
    case(f"fft/{f}_error/{i}",
         lambda m, A, f=f, a=a, kw=kw: getattr(m.fft, f)(
             A(a, "complex64" if f == "istft" else "float32"), **kw))

# ---------------------------------------------------------------- fast
for dt in ["float32", "float16"]:
    x, w, b = arr((2, 3, 8), dt), arr((8,), dt), arr((8,), dt)
    tol = LOOSE if dt == "float32" else (5e-3, 5e-3)
    case(f"fast/rms_norm/{dt}",
         lambda m, A, x=x, w=w, dt=dt: m.fast.rms_norm(A(x, dt), A(w, dt), 1e-5), tol)
    case(f"fast/rms_norm_noweight/{dt}",
         lambda m, A, x=x, dt=dt: m.fast.rms_norm(A(x, dt), None, 1e-5), tol)
    case(f"fast/layer_norm/{dt}",
         lambda m, A, x=x, w=w, b=b, dt=dt: m.fast.layer_norm(
             A(x, dt), A(w, dt), A(b, dt), 1e-5), tol)
    case(f"fast/layer_norm_none/{dt}",
         lambda m, A, x=x, dt=dt: m.fast.layer_norm(A(x, dt), None, None, 1e-5), tol)
    for trad, off in [(False, 0), (True, 3)]:
        xr = arr((1, 2, 4, 8), dt)
        case(f"fast/rope/{dt}/{trad}/{off}",
             lambda m, A, x=xr, dt=dt, t=trad, o=off: m.fast.rope(
                 A(x, dt), 8, traditional=t, base=10000.0, scale=1.0, offset=o), tol)
    q, k, v = arr((1, 2, 4, 8), dt), arr((1, 2, 5, 8), dt), arr((1, 2, 5, 8), dt)
    for mask in [None, "causal"]:
        case(f"fast/sdpa/{dt}/{mask}",
             lambda m, A, q=q, k=k, v=v, dt=dt, mk=mask:
             m.fast.scaled_dot_product_attention(
                 A(q, dt), A(k, dt), A(v, dt), scale=0.35, mask=mk), tol)
case("fast/sdpa/array_mask",
     lambda m, A: m.fast.scaled_dot_product_attention(
         A(arr((1, 2, 4, 8))), A(arr((1, 2, 5, 8))), A(arr((1, 2, 5, 8))),
         scale=0.35, mask=A(arr((4, 5)))), LOOSE)
case("fast/sdpa/gqa",
     lambda m, A: m.fast.scaled_dot_product_attention(
         A(arr((1, 4, 3, 8))), A(arr((1, 2, 5, 8))), A(arr((1, 2, 5, 8))),
         scale=0.35), LOOSE)
case("fast/rms_norm/bad_weight",
     lambda m, A: m.fast.rms_norm(A(arr((2, 8))), A(arr((4,))), 1e-5))

# ---------------------------------------------------------------- quantization
for bits, gs in [(4, 32), (8, 64), (4, 64), (2, 32), (8, 32)]:
    w = arr((8, 128))
    case(f"quant/roundtrip/{bits}/{gs}",
         lambda m, A, w=w, b=bits, g=gs: m.dequantize(
             *m.quantize(A(w), group_size=g, bits=b), group_size=g, bits=b),
         (1e-3, 1e-3))
    case(f"quant/quantize/{bits}/{gs}",
         lambda m, A, w=w, b=bits, g=gs: m.quantize(A(w), group_size=g, bits=b),
         (1e-3, 1e-3))
    x = arr((3, 128))
    case(f"quant/qmm/{bits}/{gs}",
         lambda m, A, w=w, x=x, b=bits, g=gs: m.quantized_matmul(
             A(x), *m.quantize(A(w), group_size=g, bits=b), transpose=True,
             group_size=g, bits=b), (2e-3, 2e-3))
case("quant/bad_group", lambda m, A: m.quantize(A(arr((4, 48))), group_size=32))

# ---------------------------------------------------------------- misc
for dt in ["float32", "int32", "float16"]:
    a, b = arr((3, 4), dt), arr((3, 4), dt)
    case(f"misc/allclose/{dt}", lambda m, A, a=a, dt=dt: m.allclose(A(a, dt), A(a, dt)))
    case(f"misc/isclose/{dt}", lambda m, A, a=a, b=b, dt=dt: m.isclose(A(a, dt), A(b, dt)))
    case(f"misc/array_equal/{dt}",
         lambda m, A, a=a, b=b, dt=dt: m.array_equal(A(a, dt), A(b, dt)))
case("misc/isclose/nan", lambda m, A: m.isclose(
    A(np.array([np.nan, 1.0], np.float32)), A(np.array([np.nan, 1.0], np.float32)),
    equal_nan=True))
case("misc/array_equal/nan", lambda m, A: m.array_equal(
    A(np.array([np.nan], np.float32)), A(np.array([np.nan], np.float32)), equal_nan=True))
case("misc/array_equal/shape", lambda m, A: m.array_equal(A(arr((2,))), A(arr((3,)))))
for axis in [None, 0, 1, (0, 1), -1]:
    case(f"misc/flip/{axis}", lambda m, A, a=axis: m.flip(A(arr((2, 3))), a)
         if hasattr(m, "flip") else None)
for name in ["atleast_1d", "atleast_2d", "atleast_3d"]:
    case(f"misc/{name}/multi",
         lambda m, A, n=name: getattr(m, n)(A(arr(())), A(arr((2,)))))
case("misc/permute_dims", lambda m, A: m.permute_dims(A(arr((2, 3, 4))), (2, 0, 1)))
case("misc/matrix_transpose", lambda m, A: m.matrix_transpose(A(arr((2, 3, 4)))))
for fn, kw in [("cumulative_sum", {"axis": 1}), ("cumulative_prod", {"axis": 0}),
               ("cumulative_sum", {"axis": 1, "include_initial": True})]:
    case(f"misc/{fn}/{kw}",
         lambda m, A, f=fn, kw=kw: getattr(m, f)(A(arr((2, 3))), **kw), LOOSE)
for a, b in itertools.product(["int8", "float32", "bool_", "uint32"], repeat=2):
    case(f"misc/can_cast/{a}/{b}",
         lambda m, A, a=a, b=b: m.can_cast(getattr(m, a), getattr(m, b))
         if hasattr(m, "can_cast") else None)
for dt, kind in [("float32", "real floating"), ("int8", "integral"),
                 ("complex64", "complex floating"), ("bool_", "bool"),
                 ("uint16", "unsigned integer"), ("float16", "numeric")]:
    case(f"misc/isdtype/{dt}/{kind}",
         lambda m, A, d=dt, k=kind: m.isdtype(getattr(m, d), k))
case("misc/empty", lambda m, A: m.empty((2, 3)).shape)
case("misc/empty_like", lambda m, A: m.empty_like(A(arr((2,)))).dtype)
x = arr((4, 5))
for start, upd in [((1, 0), (2, 3)), ((0, 2), (4, 3))]:
    u = arr(upd)
    case(f"misc/slice_update/{start}",
         lambda m, A, s=start, u=u: m.slice_update(
             A(x), A(u), m.array(s), axes=(0, 1)))
for x in [np.array([3, 1, 2, 3, 1], np.int32), np.array([[1.0, 2.0], [1.0, 2.0]], np.float32)]:
    case(f"misc/unique/{x.dtype}", lambda m, A, x=x: m.unique(A(x)))
case("misc/view/int8->int32", lambda m, A: A(np.arange(8, dtype=np.int8), "int8").view(m.int32))
case("misc/contiguous", lambda m, A: m.contiguous(A(arr((3, 4))).T))
case("misc/hadamard", lambda m, A: m.hadamard_transform(A(arr((2, 16))), scale=0.25), LOOSE)
case("misc/hadamard/12", lambda m, A: m.hadamard_transform(A(arr((1, 12)))), LOOSE)
case("misc/hadamard/bad", lambda m, A: m.hadamard_transform(A(arr((1, 10)))))
case("misc/einsum_path", lambda m, A: m.einsum_path(
    "ij,jk,kl->il", A(arr((2, 3))), A(arr((3, 4))), A(arr((4, 5))))[0])
case("misc/conv_transpose2d",
     lambda m, A: m.conv_transpose2d(A(arr((1, 5, 5, 2))), A(arr((3, 3, 3, 2))),
                                     stride=2, padding=1), LOOSE)
case("misc/conv_transpose3d",
     lambda m, A: m.conv_transpose3d(A(arr((1, 3, 3, 3, 2))), A(arr((2, 2, 2, 2, 2)))),
     LOOSE)
case("misc/gather_mm",
     lambda m, A: m.gather_mm(A(arr((3, 2, 4))), A(arr((2, 4, 5))),
                              rhs_indices=m.array([1, 0, 1])), LOOSE)
case("misc/block_masked_mm",
     lambda m, A: m.block_masked_mm(A(arr((64, 64))), A(arr((64, 64))), 32,
                                    mask_out=m.array([[True, False], [False, True]])),
     (1e-3, 1e-3))
case("misc/depends", lambda m, A: m.depends([A(arr((2,)))], [A(arr((3,)))])[0].shape)
case("misc/pow", lambda m, A: m.pow(A(arr((3,), "float32", "pos")), 2.5), LOOSE)
case("misc/bitwise_left_shift",
     lambda m, A: m.bitwise_left_shift(A(np.array([1, 2], np.int32), "int32"), 3))


@pytest.mark.parametrize("case_id,fn,tol", C.params())
def test_mlx_diff_more(case_id, fn, tol):
    check(case_id, fn, tol)
