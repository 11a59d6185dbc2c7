"""einsum, einsum_path, diagonal, diag, hadamard_transform, gather_mm,
segmented_mm and block_masked_mm against NumPy (np.einsum, np.einsum_path,
np.diagonal, np.diag) and plain NumPy reference implementations, with
MLX's signatures, error types and messages naming the op."""
import re

import numpy as np
import pytest

import cmx.core as mx

# Every test here runs on every device (the GPU where there is one).
pytestmark = pytest.mark.usefixtures("on_device")

RNG = np.random.default_rng(7)
SIZES = dict(zip("abcdefghijklmnopqrstuvwxyz", [2, 3, 4, 5] * 7))


def arr(x):
    """mx.array keeping float64 (mx.array makes float32 of it by default)."""
    return mx.array(x, dtype=mx.float64) if x.dtype == np.float64 else mx.array(x)


def inputs_for(case, dtype=np.float32, sizes=SIZES):
    terms = case.split("->")[0].split(",")
    return [RNG.uniform(-1, 1, tuple(sizes[c] for c in t)).astype(dtype) for t in terms]


# ---------------- einsum ----------------
SIMPLE = ["ii->i", "iii->i", "iijj->ij", "ijij->ij", "ii", "ij->", "ij->i",
          "ij->j", "iii->", "ijij->j", "ij", "ij->ji", "ijk->jki", "jii->ij"]
TWO = ["ik,kj", "ik,kj->ji", "i,i", "i,j->ij", "ij,ij->ij", "abcd,fgda->bfca",
       "ab,bc->c", "itjk,iujk->ijtu", "ijtu,iujk->itjk"]
OPT_EINSUM = [
    "a,ab,abc->abc", "a,b,ab->ab", "ea,fb,gc,hd,abcd->efgh",
    "ea,fb,abcd,gc,hd->efgh", "abcd,ea,fb,gc,hd->efgh",
    "acdf,jbje,gihb,hfac,gfac,gifabc,hfac", "cd,bdhe,aidb,hgca,gc,hgibcd,hgac",
    "abhe,hidj,jgba,hiab,gab", "bde,cdh,agdb,hica,ibd,hgicd,hiac",
    "chd,bde,agbc,hiad,hgc,hgi,hiad", "chd,bde,agbc,hiad,bdi,cgh,agdb",
    "bdhe,acad,hiab,agac,hibd", "ab,ab,c->", "ab,ab,c->c", "ab,ab,cd,cd->",
    "ab,ab,cd,cd->ac", "ab,ab,cd,cd->cd", "ab,ab,cd,cd,ef,ef->",
    "ab,cd,ef->abcdef", "ab,cd,ef->acdf", "ab,cd,de->abcde", "ab,cd,de->be",
    "ab,bcd,cd->abcd", "ab,bcd,cd->abd", "eb,cb,fb->cef", "dd,fb,be,cdb->cef",
    "bca,cdb,dbf,afc->", "dcc,fce,ea,dbf->ab", "fdf,cdd,ccd,afe->ae",
    "abcd,ad", "ed,fcd,ff,bcf->be", "baa,dcf,af,cde->be", "bd,db,eac->ace",
    "fff,fae,bef,def->abd", "efc,dbc,acf,fd->abe", "ab,ab", "ab,ba", "abc,abc",
    "abc,bac", "abc,cba", "ab,bc", "ab,cb", "ba,bc", "ba,cb", "abcd,cd",
    "abcd,ab", "abcd,cdef", "abcd,cdef->feba", "abcd,efdc", "aab,bc->ac",
    "ab,bcc->ac", "aab,bcc->ac", "baa,bcc->ac", "aab,ccb->ac",
    "aab,fa,df,ecc->bde", "ecb,fef,bad,ed->ac", "bcf,bbb,fbf,fc->",
    "bb,ff,be->e", "bcb,bb,fc,fff->", "fbb,dfd,fc,fc->", "afd,ba,cc,dc->bf",
    "adb,bc,fa,cfc->d", "bbd,bda,fc,db->acf", "dba,ead,cad->bce",
    "aef,fbc,dca->bde",
]


@pytest.mark.parametrize("case", SIMPLE + TWO + OPT_EINSUM)
def test_einsum_cases(case):
    xs = inputs_for(case)
    got = mx.einsum(case, *[mx.array(x) for x in xs])
    np.testing.assert_allclose(np.array(got), np.einsum(case, *xs), rtol=1e-4, atol=1e-4)


ELLIPSES = [
    ("abc->ab", "...c->..."), ("abcd->ad", "a...d->..."),
    ("abij,abgj->abig", "...ij,...gj->...ig"), ("abij,abgj->abig", "...ij,...gj->..."),
    ("abhh->abh", "...hh->...h"), ("bch,abcj->abchj", "...h,...j->...hj"),
    ("bc,cd->bd", "...c,cd"), ("abc,acd->bd", "...bc,...cd"),
    ("abcd,c->abd", "...cd,c"), ("abcd,c->abd", "...cd,c..."),
    ("abcd,c->abd", "...cd,c...->d..."), ("abc,b->abc", "ab...,b...->ab..."),
    ("abc,b->abc", "ab...,...b->ab..."), ("abc,b->abc", "ab...,b->ab..."),
    ("ab,bc->ac", "ab...,b...->a..."), ("ab,bc->ac", "ab...,...bc->a...c"),
    ("ab,bc->ac", "ab,b...->a..."), ("abcdef,defg->abcg", "...def,defg->...g"),
]


@pytest.mark.parametrize("shapes_from,case", ELLIPSES)
def test_einsum_ellipses(shapes_from, case):
    xs = inputs_for(shapes_from)
    got = mx.einsum(case, *[mx.array(x) for x in xs])
    np.testing.assert_allclose(np.array(got), np.einsum(case, *xs), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.int64,
                                   np.complex64, np.bool_])
@pytest.mark.parametrize("case", ["ij,jk->ik", "ii->i", "ijk,ikl->ijl", "abc,cd,de->abe",
                                  "ij->", "i,i->"])
def test_einsum_dtypes(dtype, case):
    if dtype == np.complex64:
        xs = [(x + 1j * y).astype(dtype) for x, y in zip(inputs_for(case), inputs_for(case))]
    elif dtype == np.bool_:
        xs = [x > 0 for x in inputs_for(case)]
    elif np.issubdtype(dtype, np.integer):
        xs = [(x * 5).astype(dtype) for x in inputs_for(case)]
    else:
        xs = inputs_for(case, dtype)
    got = mx.einsum(case, *[arr(x) for x in xs])
    want = np.einsum(case, *xs)
    assert np.array(got).dtype == want.dtype
    tol = 2e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(np.array(got), want, rtol=tol, atol=tol)


def test_einsum_layouts_and_broadcasting():
    a = RNG.uniform(-1, 1, (6, 5)).astype(np.float32)
    b = RNG.uniform(-1, 1, (7, 12)).astype(np.float32)
    ma, mb = mx.array(a).T, mx.array(b)[:, ::2]  # transposed and strided views
    np.testing.assert_allclose(np.array(mx.einsum("ij,kj->ik", ma, mb)),
                               np.einsum("ij,kj->ik", a.T, b[:, ::2]), rtol=1e-5)
    x = RNG.uniform(size=(5, 1, 3, 1)).astype(np.float32)
    y = RNG.uniform(size=(1, 7, 1, 2)).astype(np.float32)
    # Size-1 dims broadcast across operands (as NumPy does here):
    # out[a, b, c, d] = x[a, 0, c, 0] * y[0, d, 0, b].
    got = np.array(mx.einsum("abcd,cdab->abcd", mx.array(x), mx.array(y)))
    assert got.shape == (5, 2, 3, 7)
    np.testing.assert_allclose(got, np.einsum("abcd,cdab->abcd", x, y), rtol=1e-6)
    ref = x[:, 0, :, 0][:, None, :, None] * y[0, :, 0, :].T[None, :, None, :]
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_einsum_size_one_broadcast():
    # A size-1 dim meets the same letter's size elsewhere (MLX broadcasts).
    a = RNG.uniform(size=(5, 1)).astype(np.float32)
    b = RNG.uniform(size=(8, 2)).astype(np.float32)
    got = mx.einsum("ab,bc->c", mx.array(a), mx.array(b))
    want = a.sum() * b.sum(axis=0)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5)


def test_einsum_attention_and_multi():
    q, k, v = (RNG.uniform(size=(2, 3, 4, 5)).astype(np.float32) for _ in range(3))
    s = mx.einsum("itjk,iujk->ijtu", mx.array(q), mx.array(k))
    out = mx.einsum("ijtu,iujk->itjk", s, mx.array(v))
    want = np.einsum("ijtu,iujk->itjk", np.einsum("itjk,iujk->ijtu", q, k), v)
    np.testing.assert_allclose(np.array(out), want, rtol=1e-4)
    a = np.ones((3, 4, 5), np.float32)
    np.testing.assert_allclose(np.array(mx.einsum("ijk,lmk,ijf->lf", *[mx.array(a)] * 3)),
                               np.einsum("ijk,lmk,ijf->lf", a, a, a))


@pytest.mark.parametrize("subs,shapes,msg", [
    ("ij,jk", [(2, 3)], "Number of operands, 1, does not match number of input subscripts, 2"),
    ("i1", [(2, 3)], "Subscripts must be letters, but got '1'"),
    ("i\u00e9", [(2, 3)], "Subscripts must be letters, but got byte 0xc3"),
    ("a...b...c", [(2, 3, 4)], "Only one ellipsis per subscript"),
    ("ij->ii", [(2, 3)], "Repeat indices not allowed in output"),
    ("ij->k", [(2, 3)], "Output subscript 'k' does not appear"),
    ("ijk", [(2, 3)], "Invalid number of subscripts 3 for input 0 with 2 dimensions"),
    ("ij,jk", [(2, 3), (4, 5)], "Cannot broadcast dimension 0 of input 1"),
    ("ii", [(2, 3)], "Dimensions of repeated subscripts do not have the same size"),
    ("...ij", [(3,)], "has insufficient dimensions for subscript"),
])
def test_einsum_errors(subs, shapes, msg):
    ops = [mx.zeros(s) for s in shapes]
    with pytest.raises(ValueError, match=r"\[einsum\] (.* )?" + re.escape(msg)):
        mx.einsum(subs, *ops)
    with pytest.raises(ValueError, match=r"\[einsum_path\]"):
        mx.einsum_path(subs, *ops)
    with pytest.raises(TypeError):
        mx.einsum(mx.zeros((2,)), mx.zeros((2,)))


# ---------------- einsum_path ----------------
def test_einsum_path_simple():
    a = mx.zeros((5, 5))
    assert mx.einsum_path("ii", a)[0] == [(0,)]
    assert mx.einsum_path("ij->i", a)[0] == [(0,)]
    assert mx.einsum_path("ii->i", a)[0] == [(0,)]
    a, b = mx.zeros((5, 8)), mx.zeros((8, 3))
    assert mx.einsum_path("ij,jk", a, b)[0] == [(0, 1)]
    assert mx.einsum_path("ij,jk -> ijk", a, b)[0] == [(0, 1)]
    c = mx.zeros((3, 7))
    assert mx.einsum_path("ij,jk,kl", a, b, c)[0] == [(0, 1), (0, 1)]
    b, c = mx.zeros((8, 10)), mx.zeros((10, 7))
    path, report = mx.einsum_path("ij,jk,kl", a, b, c)
    assert path == [(1, 2), (0, 1)]
    assert isinstance(report, str)
    assert report.startswith("  Complete contraction:  ij,jk,kl\n"
                             "         Naive scaling:  4\n"
                             "     Optimized scaling:  3\n"
                             "      Naive FLOP count:  8400\n"
                             "  Optimized FLOP count:  1680\n")


@pytest.mark.parametrize("case", [
    "eb,cb,fb->cef", "dd,fb,be,cdb->cef", "bca,cdb,dbf,afc->", "dcc,fce,ea,dbf->ab",
    "ea,fb,abcd,gc,hd->efgh", "abcd,ea,fb,gc,hd->efgh", "bdhe,acad,hiab,agac,hibd",
    "ab,bcd,cd->abd", "chd,bde,agbc,hiad,hgc,hgi,hiad",
])
def test_einsum_path_matches_numpy(case):
    chars = "abcdefghijklmopqABC"
    sizes = [2, 3, 4, 5, 4, 3, 2, 6, 5, 4, 3, 2, 5, 7, 4, 3, 2, 3, 4]
    dims = dict(zip(chars, sizes))
    xs = [np.ones([dims[c] for c in t]) for t in case.split("->")[0].split(",")]
    np_path = np.einsum_path(case, *xs, optimize="greedy")
    mx_path = mx.einsum_path(case, *[mx.array(x) for x in xs])
    assert mx_path[0] == np_path[0][1:]
    # Same FLOP figures as NumPy's report.
    np_naive = float(np_path[1].split("Naive FLOP count:")[1].split()[0])
    mx_naive = float(mx_path[1].split("Naive FLOP count:")[1].split()[0])
    assert mx_naive == np_naive


# ---------------- diagonal and diag ----------------
@pytest.mark.parametrize("shape,offset,axis1,axis2", [
    ((4, 6), 0, 0, 1), ((4, 6), 2, 0, 1), ((4, 6), -3, 0, 1), ((4, 6), 1, 1, 0),
    ((4, 6), 9, 0, 1), ((3, 4, 5), 1, 0, 2), ((3, 4, 5), -1, -1, 1),
    ((2, 3, 3, 2), 0, 1, 2), ((2, 3, 3, 2), 1, 3, 0),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.bool_])
def test_diagonal(shape, offset, axis1, axis2, dtype):
    x = (RNG.uniform(-5, 5, shape)).astype(dtype)
    want = np.diagonal(x, offset, axis1, axis2)
    got = mx.diagonal(arr(x), offset, axis1, axis2)
    np.testing.assert_array_equal(np.array(got), want)
    got = arr(x).diagonal(offset=offset, axis1=axis1, axis2=axis2)
    np.testing.assert_array_equal(np.array(got), want)
    # Non-contiguous input.
    xt = np.swapaxes(x, 0, -1)
    got = mx.diagonal(mx.swapaxes(arr(x), 0, -1), offset, axis1, axis2)
    np.testing.assert_array_equal(np.array(got), np.diagonal(xt, offset, axis1, axis2))


def test_diagonal_errors():
    with pytest.raises(ValueError, match=r"\[diagonal\] Array must have at least two"):
        mx.diagonal(mx.zeros((3,)))
    with pytest.raises(ValueError, match=r"\[diagonal\] axis1 and axis2 cannot be the same"):
        mx.diagonal(mx.zeros((3, 3)), 0, 1, 1)
    with pytest.raises(IndexError, match=r"\[diagonal\] axis 2 is out of bounds"):
        mx.diagonal(mx.zeros((3, 3)), 0, 0, 2)


@pytest.mark.parametrize("k", [-2, 0, 1, 3])
def test_diag(k):
    v = RNG.uniform(-1, 1, (4,)).astype(np.float32)
    np.testing.assert_array_equal(np.array(mx.diag(mx.array(v), k)), np.diag(v, k))
    np.testing.assert_array_equal(np.array(mx.array(v).diag(k=k)), np.diag(v, k))
    m = RNG.uniform(-1, 1, (3, 5)).astype(np.float64)
    np.testing.assert_array_equal(np.array(mx.diag(arr(m), k=k)), np.diag(m, k))
    np.testing.assert_array_equal(np.array(arr(m).diag(k)), np.diag(m, k))


def test_diag_errors():
    with pytest.raises(ValueError, match=r"\[diag\] array must be 1-D or 2-D"):
        mx.diag(mx.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"\[diag\] array must be 1-D or 2-D"):
        mx.diag(mx.array(1.0))


# ---------------- hadamard_transform ----------------
def _paley12():
    chi = {0: 0, 1: 1, 4: 1, 2: -1, 3: -1}
    c = np.zeros((6, 6))
    c[0, 1:] = c[1:, 0] = 1
    for i in range(5):
        for j in range(5):
            c[1 + i, 1 + j] = chi[(j - i) % 5]
    return np.kron(c, [[1, 1], [1, -1]]) + np.kron(np.eye(6), [[1, -1], [-1, -1]])


def _williamson(p, plus):
    def circ(bits):
        f = np.array([1 if bits >> k & 1 else -1 for k in range(p)])
        return np.array([[f[(c - r) % p] for c in range(p)] for r in range(p)])

    W, X, Y, Z = (circ(b) for b in plus)
    return np.block([[W, X, Y, Z], [-X, W, -Z, Y], [-Y, Z, W, -X], [-Z, -Y, X, W]])


H_ODD = {1: np.ones((1, 1)), 12: _paley12(), 20: _williamson(5, [0x01, 0x01, 0x13, 0x0d]),
         28: _williamson(7, [0x01, 0x43, 0x25, 0x19])}


def hadamard_matrix(n):
    for m in (1, 12, 20, 28):
        if n % m == 0 and (n // m) & (n // m - 1) == 0:
            h = np.ones((1, 1))
            while h.shape[0] < n // m:
                h = np.block([[h, h], [h, -h]])
            return np.kron(H_ODD[m], h)
    raise ValueError(n)


def test_hadamard_matrices_are_hadamard():
    for m in (12, 20, 28):
        h = H_ODD[m]
        np.testing.assert_array_equal(h @ h.T, m * np.eye(m))


@pytest.mark.parametrize("n", [2, 8, 64, 12, 24, 20, 40, 28, 56, 1024])
@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_hadamard_transform(n, dtype):
    x = RNG.uniform(-1, 1, (3, n)).astype(np.float32)
    xa = mx.array(x).astype(dtype)
    xr = np.array(xa.astype(mx.float32))
    want = xr @ hadamard_matrix(n).T / np.sqrt(n)
    got = mx.hadamard_transform(xa)
    assert got.dtype == dtype
    tol = {mx.float32: 1e-5, mx.float16: 5e-3, mx.bfloat16: 3e-2}[dtype]
    np.testing.assert_allclose(np.array(got.astype(mx.float32)), want, rtol=tol, atol=tol)
    got = mx.hadamard_transform(xa, scale=0.25)
    np.testing.assert_allclose(np.array(got.astype(mx.float32)), want * np.sqrt(n) * 0.25,
                               rtol=tol, atol=tol * np.sqrt(n))


def test_hadamard_transform_ints_and_errors():
    x = np.arange(16, dtype=np.int32).reshape(2, 8)
    got = mx.hadamard_transform(mx.array(x), 1.0)
    assert got.dtype == mx.float32
    np.testing.assert_allclose(np.array(got), x @ hadamard_matrix(8).T)
    with pytest.raises(ValueError, match=r"\[hadamard_transform\] Only supports n = m\*2\^k"):
        mx.hadamard_transform(mx.zeros((2, 36)))
    with pytest.raises(ValueError, match=r"\[hadamard_transform\] Does not support empty"):
        mx.hadamard_transform(mx.zeros((0, 8)))


def test_hadamard_grad_and_vmap():
    # The vjp is the transpose (H_20 and H_28 are not symmetric).
    for n in (8, 20, 28):
        x = mx.array(RNG.uniform(-1, 1, (2, n)).astype(np.float32))
        w = RNG.uniform(-1, 1, (2, n)).astype(np.float32)
        g = mx.grad(lambda x: (mx.hadamard_transform(x) * mx.array(w)).sum())(x)
        np.testing.assert_allclose(np.array(g), w @ hadamard_matrix(n) / np.sqrt(n),
                                   rtol=1e-5, atol=1e-5)
        xs = RNG.uniform(-1, 1, (n, 3)).astype(np.float32)
        got = mx.vmap(mx.hadamard_transform, in_axes=1)(mx.array(xs))
        np.testing.assert_allclose(np.array(got), xs.T @ hadamard_matrix(n).T / np.sqrt(n),
                                   rtol=1e-5, atol=1e-5)


# ---------------- gather_mm ----------------
def ref_gather_mm(a, b, li, ri):
    A = a.reshape(-1, *a.shape[-2:])
    B = b.reshape(-1, *b.shape[-2:])
    li, ri = np.broadcast_arrays(li, ri)
    out = np.stack([A[i] @ B[j] for i, j in zip(li.ravel(), ri.ravel())])
    return out.reshape(*li.shape, a.shape[-2], b.shape[-1])


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.float64])
def test_gather_mm(dtype):
    a = RNG.uniform(-1, 1, (2, 3, 4, 5)).astype(np.float32)
    b = RNG.uniform(-1, 1, (4, 5, 6)).astype(np.float32)
    li = RNG.integers(0, 6, (3, 1)).astype(np.int32)
    ri = RNG.integers(0, 4, (1, 2)).astype(np.uint32)
    ma, mb = mx.array(a).astype(dtype), mx.array(b).astype(dtype)
    got = mx.gather_mm(ma, mb, mx.array(li), mx.array(ri))
    assert got.dtype == dtype
    ar, br = np.array(ma.astype(mx.float64)), np.array(mb.astype(mx.float64))
    tol = 1e-2 if dtype == mx.float16 else 1e-5
    np.testing.assert_allclose(np.array(got.astype(mx.float64)), ref_gather_mm(ar, br, li, ri),
                               rtol=tol, atol=tol)
    # rhs only (lhs: every batch element of a), keyword sorted_indices.
    a2 = RNG.uniform(-1, 1, (4, 5)).astype(np.float32)
    r2 = np.array([0, 0, 2, 3], np.uint32)
    got = mx.gather_mm(mx.array(a2), mx.array(b), rhs_indices=mx.array(r2), sorted_indices=True)
    np.testing.assert_allclose(np.array(got), ref_gather_mm(a2[None], b, np.zeros(1, int), r2),
                               rtol=1e-5, atol=1e-5)
    # Transposed b (a view), the MoE layout.
    bt = RNG.uniform(-1, 1, (4, 6, 5)).astype(np.float32)
    got = mx.gather_mm(mx.array(a2), mx.swapaxes(mx.array(bt), -1, -2), rhs_indices=mx.array(r2))
    np.testing.assert_allclose(np.array(got), ref_gather_mm(a2[None], bt.swapaxes(-1, -2),
                                                            np.zeros(1, int), r2), rtol=1e-5,
                               atol=1e-5)
    # No indices: matmul.
    np.testing.assert_allclose(np.array(mx.gather_mm(mx.array(a2), mx.array(b))), a2 @ b,
                               rtol=1e-5, atol=1e-6)


def test_gather_mm_errors_and_grad():
    a, b = mx.zeros((3, 4, 5)), mx.zeros((2, 5, 6))
    mx.eval(a, b)  # so the raises below see gather_mm's own errors
    with pytest.raises(ValueError, match=r"\[gather_mm\] Only real floating point"):
        mx.gather_mm(a.astype(mx.int32), b.astype(mx.int32), mx.array([0]))
    with pytest.raises(ValueError, match=r"\[gather_mm\] Got lhs_indices with invalid dtype"):
        mx.gather_mm(a, b, mx.array([0.0]))
    with pytest.raises(ValueError, match=r"\[gather_mm\] Last dimension of first input"):
        mx.gather_mm(a, a, mx.array([0]))
    with pytest.raises(IndexError, match=r"\[gather_mm\] lhs index 3 is out of bounds"):
        mx.eval(mx.gather_mm(a, b, mx.array([3]), mx.array([0])))
    # Gradients: dA[li[i]] += w[i] @ B[ri[i]]^T, dB[ri[i]] += A[li[i]]^T @ w[i].
    A = RNG.uniform(-1, 1, (3, 4, 5)).astype(np.float32)
    B = RNG.uniform(-1, 1, (2, 5, 6)).astype(np.float32)
    li, ri = np.array([2, 0, 2]), np.array([1, 1, 0])
    w = RNG.uniform(-1, 1, (3, 4, 6)).astype(np.float32)

    def loss(x, y):
        return (mx.gather_mm(x, y, mx.array(li), mx.array(ri)) * mx.array(w)).sum()

    ga, gb = mx.grad(loss, argnums=(0, 1))(mx.array(A), mx.array(B))
    wa, wb = np.zeros_like(A), np.zeros_like(B)
    for i in range(3):
        wa[li[i]] += w[i] @ B[ri[i]].T
        wb[ri[i]] += A[li[i]].T @ w[i]
    np.testing.assert_allclose(np.array(ga), wa, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array(gb), wb, rtol=1e-5, atol=1e-5)


# ---------------- segmented_mm ----------------
def test_segmented_mm():
    a = RNG.uniform(-1, 1, (4, 10)).astype(np.float32)
    b = RNG.uniform(-1, 1, (10, 3)).astype(np.float32)
    segs = np.array([[0, 3], [3, 10], [2, 2], [5, 4], [0, 10]], np.uint32)
    want = np.stack([a[:, s:e] @ b[s:e] if e > s else np.zeros((4, 3)) for s, e in segs])
    got = mx.segmented_mm(mx.array(a), mx.array(b), mx.array(segs))
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-6)
    got = mx.segmented_mm(mx.array(a), mx.array(b), segments=mx.array(segs.reshape(5, 1, 2)))
    assert got.shape == (5, 1, 4, 3)
    got = mx.segmented_mm(mx.array(a).astype(mx.float16), mx.array(b), mx.array([1, 7]))
    assert got.dtype == mx.float32 and got.shape == (4, 3)
    with pytest.raises(ValueError, match=r"\[segmented_mm\] Batched matmul not supported"):
        mx.segmented_mm(mx.zeros((2, 4, 10)), mx.array(b), mx.array(segs))
    with pytest.raises(ValueError, match=r"\[segmented_mm\] The segments should have shape"):
        mx.segmented_mm(mx.array(a), mx.array(b), mx.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"\[segmented_mm\] Last dimension of first input"):
        mx.segmented_mm(mx.array(a), mx.array(a), mx.array(segs))
    with pytest.raises(IndexError, match=r"\[segmented_mm\] Segment bound 11"):
        mx.eval(mx.segmented_mm(mx.array(a), mx.array(b), mx.array([0, 11])))
    # Gradient of a: every segment's (w[s] @ b^T) on its columns.
    w = RNG.uniform(-1, 1, (5, 4, 3)).astype(np.float32)
    g = mx.grad(lambda x: (mx.segmented_mm(x, mx.array(b), mx.array(segs)) * mx.array(w)).sum())(
        mx.array(a))
    want = np.zeros_like(a)
    for (s, e), ws in zip(segs, w):
        if e > s:
            want[:, s:e] += ws @ b[s:e].T
    np.testing.assert_allclose(np.array(g), want, rtol=1e-5, atol=1e-5)


# ---------------- block_masked_mm ----------------
def expand(mask, bs, rows, cols):
    m = np.repeat(np.repeat(mask, bs, axis=-2), bs, axis=-1)
    return m[..., :rows, :cols]


@pytest.mark.parametrize("bs", [32, 64])
def test_block_masked_mm(bs):
    M, K, N = 70, 40, 33
    a = RNG.uniform(-1, 1, (2, M, K)).astype(np.float32)
    b = RNG.uniform(-1, 1, (K, N)).astype(np.float32)
    tm, tk, tn = (-(-d // bs) for d in (M, K, N))
    ml = RNG.uniform(size=(2, tm, tk)) > 0.4
    mr = RNG.uniform(size=(tk, tn)) > 0.3
    mo = RNG.uniform(size=(tm, tn)) > 0.3
    got = mx.block_masked_mm(mx.array(a), mx.array(b), bs, mx.array(mo), mx.array(ml),
                             mx.array(mr))
    want = ((a * expand(ml, bs, M, K)) @ (b * expand(mr, bs, K, N))) * expand(mo, bs, M, N)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-5)
    # Numeric masks scale blocks.
    fo = RNG.uniform(-2, 2, (tm, tn)).astype(np.float32)
    got = mx.block_masked_mm(mx.array(a), mx.array(b), block_size=bs, mask_out=mx.array(fo))
    np.testing.assert_allclose(np.array(got), (a @ b) * expand(fo, bs, M, N), rtol=1e-5,
                               atol=1e-5)
    # No masks: matmul.
    np.testing.assert_allclose(np.array(mx.block_masked_mm(mx.array(a), mx.array(b))), a @ b,
                               rtol=1e-5, atol=1e-5)


def test_block_masked_mm_errors():
    a, b = mx.zeros((64, 64)), mx.zeros((64, 64))
    m = mx.ones((2, 2), dtype=mx.bool_)
    with pytest.raises(ValueError, match=r"\[block_masked_mm\] Only block_sizes 32, 64"):
        mx.block_masked_mm(a, b, 16, m)
    with pytest.raises(ValueError, match=r"\[block_masked_mm\] mask_out with shape \(3\)"):
        mx.block_masked_mm(a, b, 32, mx.ones((3,), dtype=mx.bool_))
    with pytest.raises(ValueError, match=r"\[block_masked_mm\] Only real floating point"):
        mx.block_masked_mm(a.astype(mx.int32), b.astype(mx.int32), 32, m)
