/* Matrix products (matmul, addmm): shapes with NumPy broadcasting and 1-d
 * operands, every inexact dtype, operands in many memory layouts (row-major,
 * transposed, padded rows, gapped, reversed, broadcast), empty dims, and
 * error messages. Every result is checked against a naive triple loop in
 * double precision over the logical values, with an error bound scaled by
 * the dtype's epsilon and the sum of |terms|. */
#include <complex.h>

#include "test.h"

#define S CMX_STREAM_DEFAULT

/* ---- a test-only view primitive (any strides and offset) ----
 * It has a CPU kernel only (a user primitive without a GPU kernel fails
 * there, as in MLX), so it runs on the CPU stream; the products run on the
 * default device (a GPU when present), which reads the views' buffers. */
typedef struct {
  int64_t offset;
  int64_t strides[CMX_MAX_NDIM];
} view_params;

static cmx_status view_cpu(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const view_params* q = cmx_primitive_params(p);
  return cmx_kernel_set_view(out[0], in[0], q->offset, q->strides);
}
static const cmx_primitive_vtable view_vt = {
    .name = "TestView",
    .flags = CMX_PRIM_VIEW | CMX_PRIM_EXTERNAL,
    .id = -1,
    .eval_cpu = view_cpu};

static cmx_array make_view(cmx_array base, const int64_t* shape, int nd,
                           const int64_t* strides, int64_t offset) {
  view_params q;
  memset(&q, 0, sizeof q);
  q.offset = offset;
  memcpy(q.strides, strides, (size_t)nd * sizeof(int64_t));
  cmx_primitive* p = cmx_primitive_new(&view_vt, &q, sizeof q,
                                       cmx_stream_on(cmx_device_cpu()));
  cmx_array out = NULL;
  const int64_t* shapes[1] = {shape};
  cmx_dtype dt = cmx_array_dtype(base);
  OK(cmx_primitive_apply(&out, 1, p, &base, 1, shapes, &nd, &dt));
  return out;
}

/* ---- operands: logical values in double, stored in some layout ---- */
/* CONTIG row-major; TRANS column-major matrices; LD padded rows; GAP
 * every other column; REV reversed columns; BPAD row-major matrices with
 * a gap between batch elements. */
enum { CONTIG, TRANS, LD, GAP, REV, BPAD, NKINDS };
static const char* const kind_names[NKINDS] = {"contig", "trans", "ld",
                                               "gap",    "rev",   "bpad"};

typedef struct {
  int nd;
  int64_t shape[CMX_MAX_NDIM];
  int64_t size;
  double* re; /* logical values, row-major */
  double* im; /* complex64 only, else NULL */
  cmx_array arr;
} operand;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void) { /* uniform in [-1, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / (double)(1ull << 52) - 1.0;
}

/* The value v as dtype dt stores it (rounded), and its bytes into dst. */
static double store(cmx_dtype dt, double v, void* dst) {
  switch (dt) {
    case CMX_FLOAT16: {
      cmx_float16_t h = cmx_float_to_float16((float)v);
      memcpy(dst, &h, 2);
      return cmx_float16_to_float(h);
    }
    case CMX_BFLOAT16: {
      cmx_bfloat16_t h = cmx_float_to_bfloat16((float)v);
      memcpy(dst, &h, 2);
      return cmx_bfloat16_to_float(h);
    }
    case CMX_FLOAT32: {
      float f = (float)v;
      memcpy(dst, &f, 4);
      return f;
    }
    case CMX_FLOAT64:
      memcpy(dst, &v, 8);
      return v;
    default: { /* one part of a complex64 */
      float f = (float)v;
      memcpy(dst, &f, 4);
      return f;
    }
  }
}

/* An operand of logical shape `shape` and dtype dt with random values,
 * laid out as `kind` (matrices for >= 2-d, vectors for 1-d). Padding is
 * filled with NaN so a kernel reading it fails the comparison. */
static operand make(cmx_dtype dt, const int64_t* shape, int nd, int kind) {
  operand o;
  memset(&o, 0, sizeof o);
  o.nd = nd;
  memcpy(o.shape, shape, (size_t)nd * sizeof(int64_t));
  o.size = 1;
  for (int d = 0; d < nd; d++) o.size *= shape[d];
  bool cplx = dt == CMX_COMPLEX64;
  o.re = calloc((size_t)o.size + 1, sizeof(double));
  if (cplx) o.im = calloc((size_t)o.size + 1, sizeof(double));
  /* strides and offset of the physical layout */
  int64_t R = nd >= 2 ? shape[nd - 2] : 1, C = nd ? shape[nd - 1] : 1;
  int64_t st[CMX_MAX_NDIM], off = 0, block;
  int nm = nd >= 2 ? 2 : nd; /* matrix dims */
  int64_t rs = 0, cs = 1;
  switch (kind) {
    case TRANS:
      rs = 1, cs = R, block = R * C;
      break;
    case LD:
      rs = C + 3, cs = 1, block = R * (C + 3);
      break;
    case GAP:
      rs = 2 * C + 1, cs = 2, block = R * (2 * C + 1);
      break;
    case REV:
      rs = C, cs = -1, block = R * C, off = C - 1;
      break;
    case BPAD:
      rs = C, cs = 1, block = R * C + 5;
      break;
    default:
      rs = C, cs = 1, block = R * C;
      break;
  }
  if (nd == 0) {
    kind = CONTIG; /* a scalar has no layout */
  } else if (nd == 1) {
    st[0] = cs;
  } else {
    st[nd - 2] = rs;
    st[nd - 1] = cs;
  }
  int64_t acc = block;
  for (int d = nd - nm - 1; d >= 0; d--) {
    st[d] = acc;
    acc *= shape[d];
  }
  int64_t phys = acc + 4; /* total elements of the base buffer */
  size_t esz = cmx_dtype_size(dt);
  unsigned char* buf = malloc((size_t)phys * esz);
  for (int64_t i = 0; i < phys; i++) { /* NaN padding */
    unsigned char* p = buf + (size_t)i * esz;
    if (cplx) {
      store(CMX_FLOAT32, NAN, p);
      store(CMX_FLOAT32, NAN, p + 4);
    } else {
      store(dt, NAN, p);
    }
  }
  int64_t idx[CMX_MAX_NDIM] = {0};
  for (int64_t i = 0; i < o.size; i++) {
    int64_t pos = off;
    for (int d = 0; d < nd; d++) pos += idx[d] * st[d];
    unsigned char* p = buf + (size_t)pos * esz;
    if (cplx) {
      o.re[i] = store(dt, urand(), p);
      o.im[i] = store(dt, urand(), p + 4);
    } else {
      o.re[i] = store(dt, urand(), p);
    }
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  if (kind == CONTIG) {
    OK(cmx_array_from_data(&o.arr, buf, shape, nd, dt));
  } else {
    cmx_array base;
    OK(cmx_array_from_data(&base, buf, &phys, 1, dt));
    o.arr = make_view(base, shape, nd, st, off);
    cmx_array_release(base);
  }
  free(buf);
  return o;
}

static void drop(operand* o) {
  free(o->re);
  free(o->im);
  cmx_array_release(o->arr);
}

/* ---- the reference ---- */
typedef struct {
  bool ok;
  const char* what;
} result;

static double unit_roundoff(cmx_dtype dt) {
  switch (dt) {
    case CMX_FLOAT16:
      return 0x1p-11;
    case CMX_BFLOAT16:
      return 0x1p-8;
    case CMX_FLOAT64:
      return 0x1p-53;
    default:
      return 0x1p-24;
  }
}

/* Offset of the element of operand shape (sh, n dims, matrix dims nm)
 * selected by the output batch index bidx (nb dims), broadcasting. */
static int64_t batch_offset(const int64_t* sh, int n, int nm,
                            const int64_t* bidx, int nb) {
  int64_t off = 0, mult = 1;
  for (int d = n - 1; d >= 0; d--) {
    if (d >= n - nm) {
      mult *= sh[d];
      continue;
    }
    int od = nb - (n - nm - d);
    if (sh[d] != 1) off += bidx[od] * mult;
    mult *= sh[d];
  }
  return off;
}

/* Checks got = alpha * (a @ b) + beta * c (c optional, already of the
 * output shape) with a naive loop in double. */
static bool check_product(cmx_array got, const operand* a, const operand* b,
                          const operand* c, double alpha, double beta,
                          cmx_dtype dt, const char* label) {
  int na = a->nd, nb = b->nd;
  int64_t K = a->shape[na - 1];
  int64_t M = na >= 2 ? a->shape[na - 2] : 1;
  int64_t N = nb >= 2 ? b->shape[nb - 1] : 1;
  int nba = na >= 2 ? na - 2 : 0, nbb = nb >= 2 ? nb - 2 : 0;
  int nbo = nba > nbb ? nba : nbb;
  int64_t bsh[CMX_MAX_NDIM];
  for (int d = 0; d < nbo; d++) {
    int da = d - (nbo - nba), db = d - (nbo - nbb);
    int64_t x = da >= 0 ? a->shape[da] : 1, y = db >= 0 ? b->shape[db] : 1;
    bsh[d] = x == 1 ? y : x;
  }
  /* expected shape */
  int64_t want[CMX_MAX_NDIM];
  int nw = 0;
  for (int d = 0; d < nbo; d++) want[nw++] = bsh[d];
  if (na >= 2) want[nw++] = M;
  if (nb >= 2) want[nw++] = N;
  bool ok = cmx_array_ndim(got) == nw && cmx_array_dtype(got) == dt;
  for (int d = 0; ok && d < nw; d++) ok = cmx_array_shape(got)[d] == want[d];
  CHECK_MSG(ok, "%s: shape/dtype", label);
  if (!ok) return false;
  int64_t size = cmx_array_size(got);
  size_t esz = cmx_dtype_size(dt);
  unsigned char* data = malloc((size_t)size * esz + 1);
  OK(cmx_array_copy_to(got, data, (size_t)size * esz));
  double u = unit_roundoff(dt), u32 = dt == CMX_FLOAT64 ? 0x1p-53 : 0x1p-24;
  int64_t nbatch = size / (M * N > 0 ? M * N : 1);
  if (M * N == 0) nbatch = 0;
  int bad = 0;
  for (int64_t bi = 0; bi < nbatch; bi++) {
    int64_t bidx[CMX_MAX_NDIM], rem = bi;
    for (int d = nbo - 1; d >= 0; d--) {
      bidx[d] = rem % bsh[d];
      rem /= bsh[d];
    }
    int64_t oa = batch_offset(a->shape, na, na >= 2 ? 2 : 1, bidx, nbo);
    int64_t ob = batch_offset(b->shape, nb, nb >= 2 ? 2 : 1, bidx, nbo);
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double sr = 0, si = 0, mag = 0;
        for (int64_t k = 0; k < K; k++) {
          int64_t ia = oa + m * K + k, ib = ob + k * N + n;
          double ar = a->re[ia], br = b->re[ib];
          double ai = a->im ? a->im[ia] : 0, bim = b->im ? b->im[ib] : 0;
          sr += ar * br - ai * bim;
          si += ar * bim + ai * br;
          mag += cabs(ar + I * ai) * cabs(br + I * bim);
        }
        int64_t oi = (bi * M + m) * N + n;
        sr *= alpha;
        si *= alpha;
        mag *= fabs(alpha);
        if (c) {
          sr += beta * c->re[oi];
          si += c->im ? beta * c->im[oi] : 0;
          mag += fabs(beta) * cabs(c->re[oi] + I * (c->im ? c->im[oi] : 0));
        }
        double gr, gi = 0;
        unsigned char* p = data + (size_t)oi * esz;
        if (dt == CMX_COMPLEX64) {
          float f[2];
          memcpy(f, p, 8);
          gr = f[0];
          gi = f[1];
        } else if (dt == CMX_FLOAT16) {
          cmx_float16_t h;
          memcpy(&h, p, 2);
          gr = cmx_float16_to_float(h);
        } else if (dt == CMX_BFLOAT16) {
          cmx_bfloat16_t h;
          memcpy(&h, p, 2);
          gr = cmx_bfloat16_to_float(h);
        } else if (dt == CMX_FLOAT32) {
          float f;
          memcpy(&f, p, 4);
          gr = f;
        } else {
          memcpy(&gr, p, 8);
        }
        /* accumulation in the compute type plus rounding of the result */
        double tol =
            2.0 * (double)(K + 2) * u32 * mag + u * cabs(sr + I * si) + 1e-30;
        if (!(fabs(gr - sr) <= tol && fabs(gi - si) <= tol)) {
          if (bad++ < 3)
            fprintf(stderr, "  %s: [%lld] got %g%+gi want %g%+gi (tol %g)\n",
                    label, (long long)oi, gr, gi, sr, si, tol);
        }
      }
  }
  free(data);
  CHECK_MSG(bad == 0, "%s: %d wrong values", label, bad);
  return bad == 0;
}

/* matmul of fresh operands of the given shapes, dtypes and layouts. */
static void run_matmul(const int64_t* sa, int na, const int64_t* sb, int nb,
                       cmx_dtype dt, int ka, int kb) {
  operand a = make(dt, sa, na, ka), b = make(dt, sb, nb, kb);
  char label[160];
  snprintf(label, sizeof label, "matmul %s %s/%s na=%d nb=%d K=%lld",
           cmx_dtype_name(dt), kind_names[ka], kind_names[kb], na, nb,
           (long long)sa[na - 1]);
  cmx_array out = NULL;
  OK(cmx_matmul(&out, a.arr, b.arr, S));
  if (out) check_product(out, &a, &b, NULL, 1, 0, dt, label);
  cmx_array_release(out);
  drop(&a);
  drop(&b);
}

static const cmx_dtype k_dtypes[] = {CMX_FLOAT32, CMX_FLOAT64, CMX_FLOAT16,
                                     CMX_BFLOAT16, CMX_COMPLEX64};
#define NDT 5

#define SH(...)                     \
  ((const int64_t[]){__VA_ARGS__}), \
      (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

static void test_shapes(void) {
  for (int t = 0; t < NDT; t++) {
    cmx_dtype dt = k_dtypes[t];
    run_matmul(SH(7), SH(7), dt, CONTIG, CONTIG);       /* vec.vec */
    run_matmul(SH(5, 7), SH(7), dt, CONTIG, CONTIG);    /* mat.vec */
    run_matmul(SH(7), SH(7, 6), dt, CONTIG, CONTIG);    /* vec.mat */
    run_matmul(SH(5, 7), SH(7, 6), dt, CONTIG, CONTIG); /* mat.mat */
    run_matmul(SH(1, 3, 4), SH(5, 4, 2), dt, CONTIG, CONTIG);
    run_matmul(SH(2, 1, 3, 4), SH(5, 4, 2), dt, CONTIG, CONTIG);
    run_matmul(SH(7), SH(3, 7, 2), dt, CONTIG, CONTIG);    /* vec.batch */
    run_matmul(SH(3, 2, 7), SH(7), dt, CONTIG, CONTIG);    /* batch.vec */
    run_matmul(SH(4, 3, 5), SH(5, 6), dt, CONTIG, CONTIG); /* folds */
    run_matmul(SH(4, 1, 5), SH(5, 6), dt, CONTIG, CONTIG);
    run_matmul(SH(1, 1), SH(1, 1), dt, CONTIG, CONTIG);
    run_matmul(SH(3, 1), SH(1, 4), dt, CONTIG, CONTIG); /* outer */
  }
}

static void test_layouts(void) {
  for (int t = 0; t < NDT; t++)
    for (int ka = 0; ka < NKINDS; ka++)
      for (int kb = 0; kb < NKINDS; kb++) {
        cmx_dtype dt = k_dtypes[t];
        run_matmul(SH(5, 7), SH(7, 6), dt, ka, kb);
        run_matmul(SH(2, 5, 7), SH(2, 7, 6), dt, ka, kb);
        run_matmul(SH(3, 4, 7), SH(7, 6), dt, ka, kb);
        run_matmul(SH(7), SH(2, 7, 6), dt, ka, kb);
        run_matmul(SH(5, 7), SH(7), dt, ka, kb);
        run_matmul(SH(1, 7), SH(7, 1), dt, ka, kb);
      }
}

/* Operands produced by broadcast_to (stride-0 rows and batches). */
static void test_broadcast_views(void) {
  for (int t = 0; t < NDT; t++) {
    cmx_dtype dt = k_dtypes[t];
    /* a: (K) broadcast to (M, K): every row the same, row stride 0 */
    operand v = make(dt, SH(6), CONTIG), b = make(dt, SH(6, 4), TRANS);
    cmx_array a = NULL, out = NULL;
    OK(cmx_broadcast_to(&a, v.arr, SH(5, 6), S));
    OK(cmx_matmul(&out, a, b.arr, S));
    /* the reference: a matrix of 5 copies of v */
    operand full = v;
    full.nd = 2;
    full.shape[0] = 5;
    full.shape[1] = 6;
    full.re = malloc(30 * sizeof(double));
    full.im = v.im ? malloc(30 * sizeof(double)) : NULL;
    for (int i = 0; i < 30; i++) {
      full.re[i] = v.re[i % 6];
      if (full.im) full.im[i] = v.im[i % 6];
    }
    if (out) check_product(out, &full, &b, NULL, 1, 0, dt, "row stride 0");
    cmx_array_release(out);
    /* b: (K, N) broadcast to (B, K, N): batch stride 0 */
    operand x = make(dt, SH(3, 2, 6), LD);
    cmx_array bb = NULL;
    OK(cmx_broadcast_to(&bb, b.arr, SH(3, 6, 4), S));
    OK(cmx_matmul(&out, x.arr, bb, S));
    if (out) check_product(out, &x, &b, NULL, 1, 0, dt, "batch stride 0");
    cmx_array_release_all((cmx_array[]){out, a, bb}, 3);
    free(full.re);
    free(full.im);
    drop(&v);
    drop(&b);
    drop(&x);
  }
}

/* Sizes on both sides of the threading policy: one big gemm (OpenBLAS
 * threads), big batches (sequential), many small ones (pool). */
static void test_sizes(void) {
  run_matmul(SH(70, 80), SH(80, 90), CMX_FLOAT32, CONTIG, CONTIG);
  run_matmul(SH(70, 80), SH(80, 90), CMX_FLOAT32, TRANS, TRANS);
  run_matmul(SH(3, 70, 64), SH(3, 64, 70), CMX_FLOAT64, CONTIG, TRANS);
  run_matmul(SH(3, 70, 64), SH(3, 64, 70), CMX_FLOAT16, TRANS, CONTIG);
  run_matmul(SH(200, 8, 8), SH(200, 8, 8), CMX_FLOAT32, CONTIG, CONTIG);
  run_matmul(SH(200, 8, 8), SH(200, 8, 8), CMX_BFLOAT16, GAP, TRANS);
  run_matmul(SH(50, 4, 9, 7), SH(4, 7, 3), CMX_FLOAT32, TRANS, LD);
  run_matmul(SH(300, 64), SH(64), CMX_FLOAT32, CONTIG, CONTIG);
  run_matmul(SH(64, 1), SH(1, 300), CMX_COMPLEX64, TRANS, CONTIG);
  run_matmul(SH(128, 96, 5), SH(5, 40), CMX_FLOAT32, CONTIG, CONTIG);
}

static void test_empty(void) {
  for (int t = 0; t < NDT; t++) {
    cmx_dtype dt = k_dtypes[t];
    run_matmul(SH(2, 3, 0), SH(0, 4), dt, CONTIG, CONTIG); /* K = 0: zeros */
    run_matmul(SH(0), SH(0), dt, CONTIG, CONTIG);
    run_matmul(SH(0, 3, 4), SH(4, 2), dt, CONTIG, CONTIG); /* empty batch */
    run_matmul(SH(0, 4), SH(4, 2), dt, CONTIG, CONTIG);    /* M = 0 */
    run_matmul(SH(3, 4), SH(4, 0), dt, CONTIG, TRANS);     /* N = 0 */
  }
}

/* Mixed dtypes promote (integers with floats are fine, as in MLX). */
static void test_promotion(void) {
  struct {
    cmx_dtype a, b, out;
  } cases[] = {{CMX_FLOAT16, CMX_FLOAT32, CMX_FLOAT32},
               {CMX_BFLOAT16, CMX_FLOAT16, CMX_FLOAT32},
               {CMX_FLOAT32, CMX_FLOAT64, CMX_FLOAT64},
               {CMX_FLOAT32, CMX_COMPLEX64, CMX_COMPLEX64},
               {CMX_INT32, CMX_FLOAT32, CMX_FLOAT32},
               {CMX_INT8, CMX_FLOAT16, CMX_FLOAT16}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int32_t iv[12];
    int8_t i8[12];
    float fv[12];
    for (int k = 0; k < 12; k++) {
      iv[k] = k - 5;
      i8[k] = (int8_t)(3 - k);
      fv[k] = (float)k * 0.25f - 1.0f;
    }
    /* a (3, 4) from integer-valued data, b (4, 3) */
    cmx_array a0, b0, a, b, out = NULL;
    OK(cmx_array_from_data(&a0, iv, SH(3, 4), CMX_INT32));
    OK(cmx_array_from_data(&b0, fv, SH(4, 3), CMX_FLOAT32));
    if (cases[i].a == CMX_INT8) {
      cmx_array_release(a0);
      OK(cmx_array_from_data(&a0, i8, SH(3, 4), CMX_INT8));
      a = cmx_array_retain(a0);
    } else if (cases[i].a == CMX_INT32) {
      a = cmx_array_retain(a0);
    } else {
      OK(cmx_astype(&a, a0, cases[i].a, S));
    }
    OK(cmx_astype(&b, b0, cases[i].b, S));
    OK(cmx_matmul(&out, a, b, S));
    CHECK(out && cmx_array_dtype(out) == cases[i].out);
    double r[9];
    cmx_array o64 = NULL;
    OK(cmx_astype(&o64, out, CMX_FLOAT64, S));
    OK(cmx_array_copy_to(o64, r, sizeof r));
    for (int m = 0; m < 3; m++)
      for (int n = 0; n < 3; n++) {
        double want = 0;
        for (int k = 0; k < 4; k++) {
          double av = cases[i].a == CMX_INT8 ? i8[m * 4 + k] : iv[m * 4 + k];
          want += av * fv[k * 3 + n];
        }
        /* every value is exact in float16 and bfloat16 except the
         * rounding of the result */
        CHECK_MSG(fabs(r[m * 3 + n] - want) <= 0.01 * fabs(want) + 1e-6,
                  "promotion case %zu: %g vs %g", i, r[m * 3 + n], want);
      }
    cmx_array_release_all((cmx_array[]){a0, b0, a, b, out, o64}, 6);
  }
}

static void run_addmm(const int64_t* sa, int na, const int64_t* sb, int nb,
                      const int64_t* sc, int nc, cmx_dtype dt, int ka, int kb,
                      float alpha, float beta) {
  operand a = make(dt, sa, na, ka), b = make(dt, sb, nb, kb);
  operand c = make(dt, sc, nc, CONTIG);
  char label[160];
  snprintf(label, sizeof label, "addmm %s %s/%s alpha=%g beta=%g nc=%d",
           cmx_dtype_name(dt), kind_names[ka], kind_names[kb], alpha, beta, nc);
  cmx_array out = NULL;
  OK(cmx_addmm(&out, c.arr, a.arr, b.arr, alpha, beta, S));
  if (out) {
    /* c broadcast to the output shape, for the reference */
    cmx_array cb = NULL;
    OK(cmx_broadcast_to(&cb, c.arr, cmx_array_shape(out), cmx_array_ndim(out),
                        S));
    operand full = c;
    int64_t n = cmx_array_size(out);
    full.re = calloc((size_t)n + 1, sizeof(double));
    full.im = c.im ? calloc((size_t)n + 1, sizeof(double)) : NULL;
    const int64_t* osh = cmx_array_shape(out);
    int od = cmx_array_ndim(out);
    for (int64_t i = 0; i < n; i++) {
      int64_t rem = i, ci = 0, mult = 1;
      for (int d = od - 1; d >= 0; d--) {
        int64_t idx = rem % osh[d];
        rem /= osh[d];
        int cd = d - (od - nc);
        if (cd >= 0) {
          if (sc[cd] != 1) ci += idx * mult;
          mult *= sc[cd];
        }
      }
      full.re[i] = c.re[ci];
      if (full.im) full.im[i] = c.im[ci];
    }
    check_product(out, &a, &b, &full, alpha, beta, dt, label);
    free(full.re);
    free(full.im);
    cmx_array_release(cb);
  }
  cmx_array_release(out);
  drop(&a);
  drop(&b);
  drop(&c);
}

static void test_addmm(void) {
  for (int t = 0; t < NDT; t++) {
    cmx_dtype dt = k_dtypes[t];
    run_addmm(SH(5, 7), SH(7, 6), SH(5, 6), dt, CONTIG, CONTIG, 1, 1);
    run_addmm(SH(5, 7), SH(7, 6), SH(6), dt, TRANS, CONTIG, 0.5f, -2);
    run_addmm(SH(5, 7), SH(7, 6), SH(5, 1), dt, CONTIG, GAP, 2, 0.25f);
    run_addmm(SH(2, 5, 7), SH(7, 6), SH(5, 6), dt, LD, TRANS, 1, 1);
    run_addmm(SH(1, 5, 7), SH(3, 7, 6), SH(3, 1, 6), dt, REV, CONTIG, -1, 3);
    run_addmm(SH(7), SH(7, 6), SH(6), dt, CONTIG, CONTIG, 1.5f, 0.5f);
    run_addmm(SH(5, 7), SH(7), SH(1), dt, CONTIG, CONTIG, 1, -1);
    run_addmm(SH(7), SH(7), (const int64_t[]){0}, 0, dt, GAP, REV, 1, 1);
    run_addmm(SH(5, 0), SH(0, 6), SH(5, 6), dt, CONTIG, CONTIG, 1, 0.5f);
    run_addmm(SH(5, 0), SH(0, 6), SH(6), dt, CONTIG, CONTIG, 1, 1);
    run_addmm(SH(5, 0), SH(0, 6), SH(6), dt, CONTIG, CONTIG, 1, 0);
    run_addmm(SH(100, 4, 4), SH(100, 4, 4), SH(4), dt, CONTIG, TRANS, 2, 1);
    /* the small kernel (all dims <= 32): whole and partial column vectors,
     * row groups of four with a remainder, beta 0 and not */
    run_addmm(SH(8, 8), SH(8, 8), SH(8), dt, CONTIG, CONTIG, 2.5f, 0);
    run_addmm(SH(13, 9), SH(9, 24), SH(13, 24), dt, TRANS, CONTIG, -1.5f, 0);
    run_addmm(SH(6, 32), SH(32, 16), SH(16), dt, CONTIG, TRANS, 0.5f, 2);
    run_addmm(SH(3, 17, 5), SH(5, 19), SH(19), dt, REV, GAP, 3, 0);
  }
  run_addmm(SH(70, 80), SH(80, 90), SH(90), CMX_FLOAT32, CONTIG, CONTIG, 1, 1);
}

/* beta == 0 ignores c entirely (NaN in c does not propagate); a c that
 * nothing else holds is updated in place; c may alias a and b. */
static void test_addmm_special(void) {
  float av[4] = {1, 2, 3, 4}, nanv[4] = {NAN, NAN, NAN, NAN};
  cmx_array a, cn, out = NULL;
  OK(cmx_array_from_data(&a, av, SH(2, 2), CMX_FLOAT32));
  OK(cmx_array_from_data(&cn, nanv, SH(2, 2), CMX_FLOAT32));
  OK(cmx_addmm(&out, cn, a, a, 1, 0, S));
  float r[4];
  OK(cmx_array_copy_to(out, r, sizeof r));
  CHECK(r[0] == 7 && r[1] == 10 && r[2] == 15 && r[3] == 22);
  cmx_array_release(out);
  /* gemv outputs (M x 1, 1 x N) land in recycled buffers full of NaN
   * (the cache keeps its free-list link in a block's first 8 bytes) */
  for (int round = 0; round < 2; round++) {
    float nan8[8], m16[16], v2v[2] = {1, 2};
    for (int i = 0; i < 8; i++) nan8[i] = NAN;
    for (int i = 0; i < 16; i++) m16[i] = (float)i;
    cmx_array junk, v2, c8, m, mv = NULL;
    OK(cmx_array_from_data(&junk, nan8, SH(8), CMX_FLOAT32));
    OK(cmx_array_from_data(&c8, nan8, SH(8), CMX_FLOAT32));
    OK(cmx_array_from_data(&v2, v2v, SH(2), CMX_FLOAT32));
    int64_t msh[2] = {round ? 2 : 8, round ? 8 : 2};
    OK(cmx_array_from_data(&m, m16, msh, 2, CMX_FLOAT32));
    OK(cmx_array_eval(junk));
    cmx_array_release(junk); /* its buffer goes back to the cache */
    if (round == 0)
      OK(cmx_matmul(&mv, m, v2, S)); /* (8,2) @ (2) */
    else
      OK(cmx_addmm(&mv, c8, v2, m, 1, 0, S)); /* (2) @ (2,8) */
    float g[8] = {0};
    OK(cmx_array_copy_to(mv, g, sizeof g));
    int bad = 0;
    for (int i = 0; i < 8; i++) {
      float want =
          round ? m16[i] + 2 * m16[8 + i] : m16[2 * i] + 2 * m16[2 * i + 1];
      bad += g[i] != want;
    }
    CHECK_MSG(bad == 0, "gemv round %d: %d wrong (g[7] = %g)", round, bad,
              g[7]);
    cmx_array_release_all((cmx_array[]){v2, c8, m, mv}, 4);
  }
  /* c = a + a, held only by the addmm node: its buffer is reused */
  cmx_array c2 = NULL;
  OK(cmx_add(&c2, a, a, S));
  OK(cmx_addmm(&out, c2, a, a, 2, 0.5f, S));
  cmx_array_release(c2);
  OK(cmx_array_copy_to(out, r, sizeof r));
  /* 2 * a@a + 0.5 * 2a = 2 * a@a + a */
  CHECK(r[0] == 15 && r[1] == 22 && r[2] == 33 && r[3] == 48);
  cmx_array_release(out);
  /* c aliases a and b */
  OK(cmx_addmm(&out, a, a, a, 1, 1, S));
  OK(cmx_array_copy_to(out, r, sizeof r));
  CHECK(r[0] == 8 && r[1] == 12 && r[2] == 18 && r[3] == 26);
  cmx_array_release(out);
  /* a weak scalar c takes the arrays' dtype */
  cmx_array w, a16, o16 = NULL;
  OK(cmx_array_weak_float(&w, 0.5));
  OK(cmx_astype(&a16, a, CMX_FLOAT16, S));
  OK(cmx_addmm(&o16, w, a16, a16, 1, 2, S));
  CHECK(o16 && cmx_array_dtype(o16) == CMX_FLOAT16);
  double d;
  cmx_array e = NULL;
  int64_t zero = 0;
  (void)zero;
  OK(cmx_astype(&e, o16, CMX_FLOAT64, S));
  const double* ep;
  OK(cmx_array_eval(e));
  OK(cmx_array_data(e, (const void**)&ep));
  d = ep[3];
  CHECK(d == 23);
  cmx_array_release_all((cmx_array[]){a, cn, w, a16, o16, e}, 6);
}

static void test_errors(void) {
  float v[20] = {0};
  cmx_array a23, b45, v3, v4, s0, i23, i32, bl, out = (cmx_array)1;
  OK(cmx_array_from_data(&a23, v, SH(2, 3), CMX_FLOAT32));
  OK(cmx_array_from_data(&b45, v, SH(4, 5), CMX_FLOAT32));
  OK(cmx_array_from_data(&v3, v, SH(3), CMX_FLOAT32));
  OK(cmx_array_from_data(&v4, v, SH(4), CMX_FLOAT32));
  OK(cmx_array_from_data(&s0, v, NULL, 0, CMX_FLOAT32));
  int32_t iv[6] = {0};
  OK(cmx_array_from_data(&i23, iv, SH(2, 3), CMX_INT32));
  OK(cmx_array_from_data(&i32, iv, SH(3, 2), CMX_INT32));
  bool bv[6] = {0};
  OK(cmx_array_from_data(&bl, bv, SH(2, 2), CMX_BOOL));
  FAILS(cmx_matmul(&out, a23, b45, S), CMX_ERR_VALUE,
        "[matmul] Last dimension of first input with shape (2,3) must match "
        "second to last dimension of second input with shape (4,5).");
  CHECK(out == NULL);
  FAILS(cmx_matmul(&out, v3, v4, S), CMX_ERR_VALUE,
        "[matmul] Last dimension of first input with shape (1,3) must match "
        "second to last dimension of second input with shape (4,1).");
  FAILS(cmx_matmul(&out, s0, v3, S), CMX_ERR_VALUE,
        "[matmul] Got 0 dimension input. Inputs must have at least one "
        "dimension.");
  FAILS(cmx_matmul(&out, i23, i32, S), CMX_ERR_VALUE,
        "[matmul] Only inexact types are supported but int32 and int32 were "
        "provided which results in int32, which is not a floating point "
        "type.");
  FAILS(cmx_matmul(&out, bl, bl, S), CMX_ERR_VALUE, "bool and bool");
  FAILS(cmx_matmul(&out, NULL, v3, S), CMX_ERR_VALUE, "[matmul]");
  /* batch dims that do not broadcast */
  float big[60] = {0};
  cmx_array x234, x345;
  OK(cmx_array_from_data(&x234, big, SH(2, 3, 4), CMX_FLOAT32));
  OK(cmx_array_from_data(&x345, big, SH(3, 4, 5), CMX_FLOAT32));
  FAILS(cmx_matmul(&out, x234, x345, S), CMX_ERR_VALUE,
        "[matmul] shapes (2) and (3) cannot be broadcast.");
  /* addmm */
  FAILS(cmx_addmm(&out, v3, a23, b45, 1, 1, S), CMX_ERR_VALUE,
        "[addmm] Last dimension of first input with shape (2,3) must match "
        "second to last dimension of second input with shape (4,5).");
  FAILS(cmx_addmm(&out, i23, i23, i32, 1, 1, S), CMX_ERR_VALUE,
        "[addmm] Only inexact types are supported but int32, int32 and "
        "int32");
  cmx_array b32;
  OK(cmx_array_from_data(&b32, v, SH(3, 2), CMX_FLOAT32));
  FAILS(cmx_addmm(&out, v3, a23, b32, 1, 1, S), CMX_ERR_VALUE,
        "[addmm] Input c with shape (3) must broadcast to the output shape "
        "(2,2).");
  FAILS(cmx_addmm(&out, x234, a23, b32, 1, 1, S), CMX_ERR_VALUE,
        "must broadcast to the output shape");
  /* c never widens the output (MLX): (3) @ (3) is 0-d, c (1) is not */
  FAILS(cmx_addmm(&out, v3, v3, v3, 1, 1, S), CMX_ERR_VALUE,
        "[addmm] Input c with shape (3) must broadcast to the output shape "
        "().");
  FAILS(cmx_addmm(&out, s0, s0, b32, 1, 1, S), CMX_ERR_VALUE,
        "[addmm] Got 0 dimension input");
  FAILS(cmx_matmul(NULL, a23, b32, S), CMX_ERR_VALUE, "output pointer");
  CHECK(out == NULL);
  cmx_array_release_all(
      (cmx_array[]){a23, b45, v3, v4, s0, i23, i32, bl, x234, x345, b32}, 11);
}

/* A product inside a longer lazy graph, evaluated once at the end. */
static void test_in_graph(void) {
  operand a = make(CMX_FLOAT32, SH(6, 6), CONTIG);
  cmx_array x = cmx_array_retain(a.arr);
  for (int i = 0; i < 3; i++) {
    cmx_array y = NULL;
    OK(cmx_matmul(&y, x, a.arr, S));
    cmx_array_release(x);
    x = y;
  }
  /* reference: a^4 in double */
  double p[36], q[36];
  memcpy(p, a.re, sizeof p);
  for (int it = 0; it < 3; it++) {
    for (int m = 0; m < 6; m++)
      for (int n = 0; n < 6; n++) {
        double s = 0;
        for (int k = 0; k < 6; k++) s += p[m * 6 + k] * a.re[k * 6 + n];
        q[m * 6 + n] = s;
      }
    memcpy(p, q, sizeof p);
  }
  float r[36];
  OK(cmx_array_copy_to(x, r, sizeof r));
  int bad = 0;
  for (int i = 0; i < 36; i++) bad += fabs(r[i] - p[i]) > 1e-4;
  CHECK(bad == 0);
  cmx_array_release(x);
  drop(&a);
}

/* Views made by the shape ops (swapaxes, slice with a step) go to BLAS
 * in place or packed, and match the reference. */
static void test_shape_op_views(void) {
  for (int t = 0; t < NDT; t++) {
    cmx_dtype dt = k_dtypes[t];
    /* x (2, 5, 7) @ swapaxes(w (2, 6, 7)) = x @ w^T: w^T is (2, 7, 6) */
    operand x = make(dt, SH(2, 5, 7), CONTIG), w = make(dt, SH(2, 6, 7), LD);
    cmx_array wt = NULL, out = NULL;
    OK(cmx_swapaxes(&wt, w.arr, -1, -2, S));
    OK(cmx_matmul(&out, x.arr, wt, S));
    /* the reference operand: w transposed, as logical values */
    operand r = w;
    r.shape[1] = 7;
    r.shape[2] = 6;
    r.re = malloc(84 * sizeof(double));
    r.im = w.im ? malloc(84 * sizeof(double)) : NULL;
    for (int b = 0; b < 2; b++)
      for (int i = 0; i < 6; i++)
        for (int k = 0; k < 7; k++) {
          r.re[b * 42 + k * 6 + i] = w.re[b * 42 + i * 7 + k];
          if (r.im) r.im[b * 42 + k * 6 + i] = w.im[b * 42 + i * 7 + k];
        }
    if (out) check_product(out, &x, &r, NULL, 1, 0, dt, "swapaxes view");
    cmx_array_release(out);
    /* every other row of x: (2, 3, 7) with row stride 14 */
    cmx_array xs = NULL;
    OK(cmx_slice(&xs, x.arr, (const int64_t[]){0, 0, 0},
                 (const int64_t[]){2, 5, 7}, (const int64_t[]){1, 2, 1}, S));
    OK(cmx_matmul(&out, xs, wt, S));
    operand xr = x;
    xr.shape[1] = 3;
    xr.re = malloc(42 * sizeof(double));
    xr.im = x.im ? malloc(42 * sizeof(double)) : NULL;
    for (int b = 0; b < 2; b++)
      for (int i = 0; i < 3; i++)
        for (int k = 0; k < 7; k++) {
          xr.re[b * 21 + i * 7 + k] = x.re[b * 35 + 2 * i * 7 + k];
          if (xr.im) xr.im[b * 21 + i * 7 + k] = x.im[b * 35 + 2 * i * 7 + k];
        }
    if (out) check_product(out, &xr, &r, NULL, 1, 0, dt, "strided slice");
    cmx_array_release_all((cmx_array[]){out, xs, wt}, 3);
    free(r.re);
    free(r.im);
    free(xr.re);
    free(xr.im);
    drop(&x);
    drop(&w);
  }
}

/* The small kernel reads whole groups of four rows of A in place and
 * copies only a last partial group: batches of 8x8 (two whole groups) and
 * 6x8 (one whole, one padded) times the transpose of an 8x8, A plain and
 * transposed, on small integers (exact), against loops. */
static void test_small_batched(void) {
  for (int rows = 6; rows <= 8; rows += 2)
    for (int ta = 0; ta < 2; ta++) {
      enum { NB = 33, D = 8 };
      float av[NB * D * D], bv[NB * D * D], got[NB * D * D];
      for (int i = 0; i < NB * D * D; i++) {
        av[i] = (float)((i * 7 + 3) % 11) - 5;
        bv[i] = (float)((i * 5 + 1) % 13) - 6;
      }
      /* A is rows x D: stored as is, or as the transpose of a D x rows */
      int64_t ash[3] = {NB, ta ? D : rows, ta ? rows : D}, bsh[3] = {NB, D, D};
      cmx_array a0, b0, a, bt, c = NULL;
      OK(cmx_array_from_data(&a0, av, ash, 3, CMX_FLOAT32));
      OK(cmx_array_from_data(&b0, bv, bsh, 3, CMX_FLOAT32));
      if (ta)
        OK(cmx_swapaxes(&a, a0, 1, 2, S));
      else
        a = a0, a0 = NULL;
      OK(cmx_swapaxes(&bt, b0, 1, 2, S));
      OK(cmx_matmul(&c, a, bt, S));
      OK(cmx_array_copy_to(c, got, sizeof(float) * NB * rows * D));
      int bad = 0;
      for (int n = 0; n < NB; n++)
        for (int i = 0; i < rows; i++)
          for (int j = 0; j < D; j++) {
            float want = 0;
            for (int k = 0; k < D; k++) {
              float x = ta ? av[n * D * rows + k * rows + i]
                           : av[n * rows * D + i * D + k];
              want += x * bv[n * D * D + j * D + k];
            }
            bad += got[(n * rows + i) * D + j] != want;
          }
      CHECK_MSG(bad == 0, "batched %dx8 (A%s) @ (8x8).T: %d wrong", rows,
                ta ? ".T" : "", bad);
      cmx_array_release_all((cmx_array[]){a0, b0, a, bt, c}, 5);
    }
}

int main(void) {
  RUN(test_shapes);
  RUN(test_layouts);
  RUN(test_broadcast_views);
  RUN(test_sizes);
  RUN(test_empty);
  RUN(test_promotion);
  RUN(test_addmm);
  RUN(test_addmm_special);
  RUN(test_errors);
  RUN(test_in_graph);
  RUN(test_shape_op_views);
  RUN(test_small_batched);
  return test_summary("test_matmul");
}
