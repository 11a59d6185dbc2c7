/* Matrix products (cuBLASLt) and gather/scatter on the GPU against the
 * CPU: every case is built twice from the same CPU inputs, once on a CPU
 * stream and once on each GPU's stream, and the GPU's values must match
 * the CPU's (exactly for integer, bool and data-movement results; within
 * a bound scaled by the dtype's epsilon and the inner size for products
 * and float sums). Layouts: transposed, padded rows, gapped and reversed
 * (packed), broadcast and transposed batch dims, 1-d operands, empty and
 * size-1 dims. On a machine without a GPU there is nothing to compare and
 * the test says so. */
#include <complex.h>

#include "devices.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static double urand(void) { /* [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / (double)(1ull << 52) - 1.0;
}

/* A CPU array of shape with random values: in [-1, 1) for floats (and
 * both parts of complex64), integers in [lo, hi] otherwise. */
static cmx_array rand_array(cmx_dtype dt, const int64_t* shape, int nd,
                            int64_t lo, int64_t hi) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= shape[i];
  bool cplx = dt == CMX_COMPLEX64;
  double* v = malloc((size_t)(n ? n : 1) * (cplx ? 2 : 1) * sizeof(double));
  for (int64_t i = 0; i < n * (cplx ? 2 : 1); i++)
    v[i] = cmx_dtype_is_inexact(dt)
               ? urand()
               : (double)(lo +
                          (int64_t)((urand() + 1) / 2 * (double)(hi - lo + 1)));
  cmx_array d = NULL, out = NULL;
  cmx_stream cpu = cmx_stream_on(cmx_device_cpu());
  if (cplx) {
    float* f = malloc((size_t)(n ? n : 1) * 2 * sizeof(float));
    for (int64_t i = 0; i < 2 * n; i++) f[i] = (float)v[i];
    OK(cmx_array_from_data(&out, f, shape, nd, CMX_COMPLEX64));
    free(f);
  } else {
    OK(cmx_array_from_data(&d, v, shape, nd, CMX_FLOAT64));
    OK(cmx_astype(&out, d, dt, cpu));
    cmx_array_release(d);
  }
  free(v);
  return out;
}

/* The values of a (evaluated) as doubles, two per element for complex64;
 * *n gets the count. NULL when evaluation failed. */
static double* values(cmx_array a, int64_t* n) {
  cmx_stream cpu = cmx_stream_on(cmx_device_cpu());
  cmx_dtype dt = cmx_array_dtype(a);
  cmx_array x = NULL;
  cmx_status st =
      cmx_astype(&x, a, dt == CMX_COMPLEX64 ? dt : CMX_FLOAT64, cpu);
  if (st == CMX_OK) st = cmx_eval(&x, 1);
  const void* p = NULL;
  if (st == CMX_OK) st = cmx_array_data(x, &p);
  if (st != CMX_OK) {
    cmx_array_release(x);
    return NULL;
  }
  int64_t m = cmx_array_size(a) * (dt == CMX_COMPLEX64 ? 2 : 1);
  double* v = malloc((size_t)(m ? m : 1) * sizeof(double));
  for (int64_t i = 0; i < m; i++)
    v[i] = dt == CMX_COMPLEX64 ? (double)((const float*)p)[i]
                               : ((const double*)p)[i];
  cmx_array_release(x);
  *n = m;
  return v;
}

static double eps_of(cmx_dtype dt) {
  switch (dt) {
    case CMX_FLOAT16:
      return 9.8e-4;
    case CMX_BFLOAT16:
      return 7.9e-3;
    case CMX_FLOAT32:
    case CMX_COMPLEX64:
      return 1.2e-7;
    case CMX_FLOAT64:
      return 2.3e-16;
    default:
      return 0;
  }
}

/* A filled float32 array of shape (made on the CPU). */
static cmx_array filled(const int64_t* shape, int nd, double v) {
  cmx_array x = NULL, out = NULL;
  OK(cmx_array_from_double(&x, v, CMX_FLOAT32));
  OK(cmx_full(&out, shape, nd, x, CMX_FLOAT32,
              cmx_stream_on(cmx_device_cpu())));
  cmx_array_release(x);
  return out;
}

/* A case: builds its result from inputs on stream s. */
typedef cmx_array (*build_fn)(cmx_stream s, const cmx_array* in,
                              const void* ctx);

/* Runs build on the CPU and on every GPU and compares: |gpu - cpu| <=
 * tol_terms * eps(dtype) * (|cpu| + terms) (0: exact). */
static void compare(const char* name, build_fn build, const cmx_array* in,
                    const void* ctx, double terms) {
  cmx_array ref = build(cmx_stream_on(cmx_device_cpu()), in, ctx);
  CHECK_MSG(ref != NULL, "%s: cpu build: %s", name, cmx_last_error());
  if (!ref) return;
  int64_t nr = 0;
  double* r = values(ref, &nr);
  CHECK_MSG(r != NULL, "%s: cpu eval: %s", name, cmx_last_error());
  for (int dev = 1; r && dev < h_ndevices(); dev++) {
    cmx_array got = build(h_stream(dev), in, ctx);
    CHECK_MSG(got != NULL, "%s: gpu build: %s", name, cmx_last_error());
    if (!got) continue;
    CHECK_MSG(cmx_array_ndim(got) == cmx_array_ndim(ref) &&
                  cmx_array_dtype(got) == cmx_array_dtype(ref),
              "%s: shape/dtype", name);
    int64_t ng = 0;
    double* g = values(got, &ng);
    CHECK_MSG(g != NULL, "%s: gpu eval: %s", name, cmx_last_error());
    if (g) {
      CHECK_MSG(ng == nr, "%s: %lld values, cpu %lld", name, (long long)ng,
                (long long)nr);
      double eps = eps_of(cmx_array_dtype(ref));
      int64_t bad = -1;
      for (int64_t i = 0; i < nr && i < ng && bad < 0; i++) {
        double d = fabs(g[i] - r[i]);
        bool same = g[i] == r[i] || (g[i] != g[i] && r[i] != r[i]);
        double tol = terms > 0 ? 4 * eps * (fabs(r[i]) + terms) : 0;
        if (!same && !(d <= tol)) bad = i;
      }
      CHECK_MSG(bad < 0, "%s: value %lld: gpu %.9g cpu %.9g", name,
                (long long)bad, bad >= 0 ? g[bad] : 0, bad >= 0 ? r[bad] : 0);
      free(g);
    }
    cmx_array_release(got);
  }
  free(r);
  cmx_array_release(ref);
}

static cmx_array index_array(const int64_t* v, const int64_t* shape, int nd,
                             cmx_dtype dt) {
  cmx_array i64 = NULL, out = NULL;
  OK(cmx_array_from_data(&i64, v, shape, nd, CMX_INT64));
  OK(cmx_astype(&out, i64, dt, cmx_stream_on(cmx_device_cpu())));
  cmx_array_release(i64);
  return out;
}

/* ---------------- matrix products ---------------- */

static const cmx_dtype k_floats[] = {CMX_FLOAT32, CMX_FLOAT64, CMX_FLOAT16,
                                     CMX_BFLOAT16, CMX_COMPLEX64};
#define NFLOATS 5

/* How an operand is laid out: the array made holds the values of the
 * logical (..., r, c) operand. */
enum { L_CONTIG, L_TRANS, L_PAD, L_GAP, L_REV, L_BATCHT };

/* A view of x (made on the CPU) in layout kind: the data arranged on the
 * CPU, the view itself taken on stream s (views run on any device; a GPU
 * kernel moves the whole underlying buffer). */
static cmx_array as_layout(cmx_array x, int kind, cmx_stream s) {
  cmx_stream cpu = cmx_stream_on(cmx_device_cpu());
  int nd = cmx_array_ndim(x);
  const int64_t* sh = cmx_array_shape(x);
  cmx_array out = NULL;
  int axes[CMX_MAX_NDIM];
  for (int i = 0; i < nd; i++) axes[i] = i;
  int64_t start[CMX_MAX_NDIM] = {0}, stop[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
  for (int i = 0; i < nd; i++) {
    stop[i] = sh[i];
    step[i] = 1;
  }
  switch (kind) {
    case L_TRANS: /* stored transposed: x = t.T for a contiguous t */
    case L_BATCHT: {
      if (nd < 2) return cmx_array_retain(x);
      if (kind == L_TRANS) {
        axes[nd - 1] = nd - 2;
        axes[nd - 2] = nd - 1;
      } else if (nd >= 4) {
        axes[0] = 1;
        axes[1] = 0;
      }
      cmx_array t = NULL, c = NULL;
      OK(cmx_transpose(&t, x, axes, nd, cpu));
      OK(cmx_contiguous(&c, t, false, cpu));
      OK(cmx_transpose(&out, c, axes, nd, s));
      cmx_array_release(t);
      cmx_array_release(c);
      return out;
    }
    case L_PAD:   /* rows of a wider matrix */
    case L_GAP:   /* every other column */
    case L_REV: { /* columns reversed */
      int64_t wide[CMX_MAX_NDIM];
      memcpy(wide, sh, (size_t)nd * sizeof(int64_t));
      int last = nd - 1;
      wide[last] = kind == L_PAD   ? sh[last] + 3
                   : kind == L_GAP ? 2 * sh[last]
                                   : sh[last];
      cmx_array w = NULL, p = NULL;
      OK(cmx_zeros(&w, wide, nd, cmx_array_dtype(x), cpu));
      if (kind == L_REV) {
        start[last] = sh[last] - 1;
        stop[last] = -sh[last] - 1;
        step[last] = -1;
      } else if (kind == L_GAP) {
        stop[last] = 2 * sh[last];
        step[last] = 2;
      }
      OK(cmx_slice_update(&p, w, x, start, stop, step, cpu));
      OK(cmx_slice(&out, p, start, stop, step, s));
      cmx_array_release(w);
      cmx_array_release(p);
      return out;
    }
    default:
      return cmx_array_retain(x);
  }
}

typedef struct {
  int ka, kb; /* layouts */
  float alpha, beta;
  bool addmm;
  int kc; /* c: 0 contiguous, 1 a broadcast row, 2 transposed */
} mm_ctx;

static cmx_array build_mm(cmx_stream s, const cmx_array* in, const void* vc) {
  const mm_ctx* c = vc;
  cmx_array a = as_layout(in[0], c->ka, s), b = as_layout(in[1], c->kb, s);
  cmx_array out = NULL, cc = NULL;
  cmx_status st;
  if (!c->addmm) {
    st = cmx_matmul(&out, a, b, s);
  } else {
    cc = c->kc == 2 ? as_layout(in[2], L_TRANS, s) : cmx_array_retain(in[2]);
    st = cmx_addmm(&out, cc, a, b, c->alpha, c->beta, s);
  }
  cmx_array_release(a);
  cmx_array_release(b);
  cmx_array_release(cc);
  return st == CMX_OK ? out : NULL;
}

static void mm_case(const char* what, cmx_dtype dt, const int64_t* sa, int na,
                    const int64_t* sb, int nb, const mm_ctx* c,
                    const int64_t* sc, int nc) {
  cmx_array in[3] = {rand_array(dt, sa, na, 0, 0), rand_array(dt, sb, nb, 0, 0),
                     c->addmm ? rand_array(dt, sc, nc, 0, 0) : NULL};
  char name[160];
  snprintf(name, sizeof name, "%s %s (layouts %d,%d)", what, cmx_dtype_name(dt),
           c->ka, c->kb);
  double K = (double)sa[na - 1] + 2;
  compare(name, build_mm, in, c, K);
  for (int i = 0; i < 3; i++) cmx_array_release(in[i]);
}

static void test_matmul_layouts(void) {
  static const struct {
    int na, nb;
    int64_t sa[4], sb[4];
    const char* what;
  } shapes[] = {
      {2, 2, {5, 7}, {7, 3}, "2d"},
      {2, 2, {65, 130}, {130, 33}, "odd sizes"},
      {3, 3, {4, 5, 7}, {4, 7, 3}, "batched"},
      {4, 3, {2, 1, 5, 7}, {3, 7, 3}, "broadcast batch"},
      {3, 2, {4, 5, 7}, {7, 3}, "batch folds into rows"},
      {2, 3, {5, 7}, {4, 7, 3}, "a broadcast over b's batch"},
      {4, 4, {3, 2, 5, 7}, {3, 2, 7, 6}, "two batch dims"},
      {1, 2, {7}, {7, 3}, "vector @ matrix"},
      {2, 1, {5, 7}, {7}, "matrix @ vector"},
      {1, 1, {7}, {7}, "dot"},
      {2, 2, {1, 1}, {1, 1}, "1x1"},
      {2, 2, {1, 7}, {7, 1}, "row @ column"},
      {2, 2, {0, 7}, {7, 3}, "empty rows"},
      {2, 2, {5, 0}, {0, 3}, "empty inner"},
      {2, 2, {5, 7}, {7, 0}, "empty columns"},
      {3, 3, {0, 5, 7}, {0, 7, 3}, "empty batch"},
      /* the matrix-vector kernels (gemv.c): vector rows, odd sizes, a
       * long k split over blocks */
      {1, 2, {300}, {300, 256}, "long vector @ matrix"},
      {2, 1, {257, 300}, {300}, "matrix @ long vector"},
      {2, 2, {1, 4096}, {4096, 24}, "row @ tall matrix"},
      {2, 2, {40, 1001}, {1001, 1}, "matrix @ column"},
  };
  mm_ctx c;
  memset(&c, 0, sizeof c);
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int d = 0; d < NFLOATS; d++)
      for (int ka = 0; ka < 6; ka++) {
        c.ka = ka;
        c.kb = (ka + (int)i) % 6;
        mm_case(shapes[i].what, k_floats[d], shapes[i].sa, shapes[i].na,
                shapes[i].sb, shapes[i].nb, &c, NULL, 0);
      }
}

static void test_addmm(void) {
  const int64_t sa[] = {6, 9}, sb[] = {9, 5}, sc[] = {6, 5}, row[] = {5};
  const int64_t ba[] = {3, 6, 9}, bc[] = {3, 6, 5};
  for (int d = 0; d < NFLOATS; d++) {
    cmx_dtype dt = k_floats[d];
    mm_ctx c = {L_CONTIG, L_TRANS, 2.0f, 0.5f, true, 0};
    mm_case("addmm", dt, sa, 2, sb, 2, &c, sc, 2);
    c.kc = 2; /* c transposed: copied into the output first */
    mm_case("addmm c transposed", dt, sa, 2, sb, 2, &c, sc, 2);
    c = (mm_ctx){L_TRANS, L_CONTIG, 1.5f, 1.0f, true, 1};
    mm_case("addmm bias row", dt, sa, 2, sb, 2, &c, row, 1);
    mm_case("addmm batched bias row", dt, ba, 3, sb, 2, &c, row, 1);
    c.beta = 2.0f;
    mm_case("addmm broadcast c, beta 2", dt, sa, 2, sb, 2, &c, row, 1);
    c = (mm_ctx){L_CONTIG, L_CONTIG, 1.0f, -1.0f, true, 0};
    mm_case("addmm batched c", dt, ba, 3, sb, 2, &c, bc, 3);
    const int64_t e0[] = {6, 0}, e1[] = {0, 5};
    c.beta = 1.0f;
    mm_case("addmm empty inner beta 1", dt, e0, 2, e1, 2, &c, sc, 2);
    c.beta = 0.0f;
    mm_case("addmm empty inner beta 0", dt, e0, 2, e1, 2, &c, sc, 2);
  }
}

/* beta == 0 ignores c, NaNs included. */
static void test_addmm_beta0_nan(void) {
  const int64_t sa[] = {4, 3}, sb[] = {3, 2}, sc[] = {4, 2};
  for (int dev = 1; dev < h_ndevices(); dev++) {
    cmx_stream s = h_stream(dev);
    cmx_array a = rand_array(CMX_FLOAT32, sa, 2, 0, 0),
              b = rand_array(CMX_FLOAT32, sb, 2, 0, 0), c = NULL, o = NULL;
    c = filled(sc, 2, NAN);
    OK(cmx_addmm(&o, c, a, b, 1.0f, 0.0f, s));
    int64_t n = 0;
    double* v = values(o, &n);
    CHECK(v != NULL && n == 8);
    bool finite = v != NULL;
    for (int64_t i = 0; v && i < n; i++) finite = finite && v[i] == v[i];
    CHECK_MSG(finite, "addmm beta 0 let c's NaN through on the gpu");
    free(v);
    cmx_array_release_all((cmx_array[]){a, b, c, o}, 4);
  }
}

/* float32 keeps full precision by default: 1 + 2^-12 is exact in float32
 * and rounds to 1 in TF32, so 64 such terms sum to 64 + 2^-6 only
 * without TF32. */
static void test_no_tf32(void) {
  const int64_t sh[] = {64, 64};
  for (int dev = 1; dev < h_ndevices(); dev++) {
    cmx_stream s = h_stream(dev);
    cmx_array a = NULL, b = NULL, o = NULL;
    a = filled(sh, 2, 1.0 + 1.0 / 4096);
    b = filled(sh, 2, 1.0);
    OK(cmx_matmul(&o, a, b, s));
    int64_t n = 0;
    double* v = values(o, &n);
    bool exact = v != NULL && n == 64 * 64;
    for (int64_t i = 0; exact && i < n; i++) exact = v[i] == 64.0 + 1.0 / 64;
    CHECK_MSG(exact, "float32 matmul on the gpu lost precision (TF32?): %.9g",
              v ? v[0] : 0.0);
    free(v);
    cmx_array_release_all((cmx_array[]){a, b, o}, 3);
  }
}

/* GatherMM: out[i] = a[lhs[i]] @ b[rhs[i]] (a's stack transposed or not). */
static cmx_array build_gmm(cmx_stream s, const cmx_array* in, const void* vc) {
  const mm_ctx* c = vc;
  cmx_array a = as_layout(in[0], c->ka, s), b = as_layout(in[1], c->kb, s);
  cmx_array out = NULL;
  cmx_status st = cmx_gather_mm(&out, a, b, in[2], in[3], false, s);
  cmx_array_release(a);
  cmx_array_release(b);
  return st == CMX_OK ? out : NULL;
}

static void test_gather_mm(void) {
  const int64_t sa[] = {3, 4, 5}, sb[] = {2, 5, 6}, si[] = {7}, s2[] = {2, 3};
  const int64_t lv[] = {0, 2, 1, 1, 0, 2, 2}, rv[] = {1, 0, 0, 1, 1, 0, 1};
  char name[96];
  for (int d = 0; d < NFLOATS - 1; d++) { /* real floats only */
    cmx_dtype dt = k_floats[d];
    cmx_array in[4] = {rand_array(dt, sa, 3, 0, 0), rand_array(dt, sb, 3, 0, 0),
                       index_array(lv, si, 1, CMX_UINT32),
                       index_array(rv, si, 1, CMX_UINT32)};
    for (int ka = 0; ka < 6; ka++) {
      mm_ctx c = {ka, (ka + 1) % 6, 1, 0, false, 0};
      snprintf(name, sizeof name, "gather_mm %s (layouts %d,%d)",
               cmx_dtype_name(dt), c.ka, c.kb);
      compare(name, build_gmm, in, &c, 7);
    }
    /* 2-d indices */
    cmx_array_release(in[2]);
    cmx_array_release(in[3]);
    in[2] = index_array(lv, s2, 2, CMX_UINT32);
    in[3] = index_array(rv, s2, 2, CMX_UINT32);
    mm_ctx c = {L_CONTIG, L_CONTIG, 1, 0, false, 0};
    snprintf(name, sizeof name, "gather_mm %s 2-d indices", cmx_dtype_name(dt));
    compare(name, build_gmm, in, &c, 7);
    cmx_array_release_all(in, 4);
  }
}

/* ---------------- gather and scatter ---------------- */

static const cmx_dtype k_all[] = {
    CMX_BOOL,     CMX_UINT8,   CMX_UINT16,  CMX_UINT32,   CMX_UINT64,
    CMX_INT8,     CMX_INT16,   CMX_INT32,   CMX_INT64,    CMX_FLOAT16,
    CMX_BFLOAT16, CMX_FLOAT32, CMX_FLOAT64, CMX_COMPLEX64};
#define NALL 14

static cmx_array data_of(cmx_dtype dt, const int64_t* shape, int nd) {
  return rand_array(dt, shape, nd, dt == CMX_BOOL ? 0 : -9,
                    dt == CMX_BOOL ? 1 : 9);
}

typedef struct {
  int kind; /* which op */
  int axis, mode;
} ix_ctx;

static cmx_array build_ix(cmx_stream s, const cmx_array* in, const void* vc) {
  const ix_ctx* c = vc;
  cmx_array out = NULL;
  cmx_status st = CMX_ERR_VALUE;
  typedef cmx_status (*scat_fn)(cmx_array*, cmx_array, const cmx_array*, int,
                                cmx_array, const int*, int, cmx_stream);
  static const scat_fn scat[] = {cmx_scatter, cmx_scatter_add, cmx_scatter_prod,
                                 cmx_scatter_max, cmx_scatter_min};
  switch (c->kind) {
    case 0: /* take along an axis */
      st = cmx_take(&out, in[0], in[1], &c->axis, s);
      break;
    case 1: { /* take with transposed indices */
      cmx_array t = NULL;
      OK(cmx_transpose(&t, in[1], (int[]){1, 0}, 2, s));
      st = cmx_take(&out, in[0], t, &c->axis, s);
      cmx_array_release(t);
      break;
    }
    case 2:
      st = cmx_take_along_axis(&out, in[0], in[1], &c->axis, s);
      break;
    case 3:
      st = cmx_put_along_axis(&out, in[0], in[1], in[2], &c->axis, s);
      break;
    case 4: /* scatter of single elements, two index arrays */
      st = scat[c->mode](&out, in[0], in + 1, 2, in[3], (int[]){0, 1}, 2, s);
      break;
    case 5: /* scatter of rows along axis 0 */
      st = scat[c->mode](&out, in[0], in + 1, 1, in[2], (int[]){0}, 1, s);
      break;
    case 6: /* gather of 2x3 blocks */
      st = cmx_gather(&out, in[0], in + 1, 2, (int[]){0, 1}, 2,
                      (int64_t[]){2, 3}, 2, s);
      break;
  }
  return st == CMX_OK ? out : NULL;
}

static void test_gather(void) {
  const int64_t sa[] = {10, 6}, emb[] = {50, 16};
  const int64_t iv[] = {3, -1, 0, 9, 3, -10, 7, 2};
  const int64_t i1[] = {8}, i2[] = {2, 4};
  static const cmx_dtype idts[] = {CMX_INT32, CMX_INT64, CMX_UINT8, CMX_INT16};
  char name[96];
  for (int d = 0; d < NALL; d++) {
    cmx_dtype dt = k_all[d];
    cmx_dtype idt = idts[d % 4];
    if (idt == CMX_UINT8) idt = CMX_INT8; /* the indices are negative */
    cmx_array a = data_of(dt, sa, 2), ix = index_array(iv, i1, 1, idt);
    cmx_array ix2 = index_array(iv, i2, 2, idt);
    for (int axis = 0; axis < 2; axis++) {
      ix_ctx c = {0, axis, 0};
      cmx_array in[2] = {a, axis ? ix2 : ix};
      /* axis 1 has 6 entries: only indices in [-6, 6) */
      if (axis == 1) {
        const int64_t v1[] = {3, -1, 0, 5, 3, -6, 1, 2};
        cmx_array_release(ix2);
        ix2 = index_array(v1, i2, 2, idt);
        in[1] = ix2;
      }
      snprintf(name, sizeof name, "take %s axis %d", cmx_dtype_name(dt), axis);
      compare(name, build_ix, in, &c, 0);
      c.kind = 1;
      snprintf(name, sizeof name, "take %s axis %d, transposed indices",
               cmx_dtype_name(dt), axis);
      cmx_array in2[2] = {a, ix2};
      compare(name, build_ix, in2, &c, 0);
    }
    /* an embedding lookup: 64-byte rows (16-byte vectors for 4+ bytes) */
    cmx_array e = data_of(dt, emb, 2);
    const int64_t ev[] = {49, 0, 7, 7, -50, 13, 21, 2};
    cmx_array eix = index_array(ev, i1, 1, CMX_INT32);
    ix_ctx c = {0, 0, 0};
    snprintf(name, sizeof name, "embedding %s", cmx_dtype_name(dt));
    compare(name, build_ix, (cmx_array[]){e, eix}, &c, 0);
    /* long rows (the rows kernel, a warp per row): 256 and 67 columns */
    for (int w = 0; w < 2; w++) {
      const int64_t sh[] = {50, w ? 67 : 256};
      cmx_array big = data_of(dt, sh, 2);
      snprintf(name, sizeof name, "embedding %s, rows of %lld",
               cmx_dtype_name(dt), (long long)sh[1]);
      compare(name, build_ix, (cmx_array[]){big, eix}, &c, 0);
      cmx_array_release(big);
    }
    /* blocks from two index arrays */
    const int64_t r0[] = {0, 8, -2}, r1[] = {3, 0, 1}, i3[] = {3};
    cmx_array g0 = index_array(r0, i3, 1, CMX_INT32),
              g1 = index_array(r1, i3, 1, CMX_INT64);
    c.kind = 6;
    snprintf(name, sizeof name, "gather blocks %s", cmx_dtype_name(dt));
    compare(name, build_ix, (cmx_array[]){a, g0, g1}, &c, 0);
    cmx_array_release_all((cmx_array[]){a, ix, ix2, e, eix, g0, g1}, 7);
  }
  /* empty indices */
  const int64_t z[] = {0};
  cmx_array a = data_of(CMX_FLOAT32, sa, 2),
            ie = index_array(iv, z, 1, CMX_INT32);
  ix_ctx c = {0, 0, 0};
  compare("take empty indices", build_ix, (cmx_array[]){a, ie}, &c, 0);
  cmx_array_release_all((cmx_array[]){a, ie}, 2);
}

static void test_along_axis(void) {
  const int64_t sa[] = {4, 5, 6}, si[] = {4, 3, 6};
  int64_t iv[72], uv[72];
  /* put_along_axis (last write wins) gets distinct indices per line */
  for (int i = 0; i < 72; i++) {
    iv[i] = (int64_t)((urand() + 1) * 5) - 5; /* [-5, 5) */
    uv[i] = i / 6 % 3 - (i % 2 ? 0 : 5);
  }
  char name[96];
  for (int d = 0; d < NALL; d++) {
    cmx_dtype dt = k_all[d];
    cmx_array a = data_of(dt, sa, 3), ix = index_array(iv, si, 3, CMX_INT32),
              ux = index_array(uv, si, 3, CMX_INT16), v = data_of(dt, si, 3);
    ix_ctx c = {2, 1, 0};
    snprintf(name, sizeof name, "take_along_axis %s", cmx_dtype_name(dt));
    compare(name, build_ix, (cmx_array[]){a, ix}, &c, 0);
    c.kind = 3;
    snprintf(name, sizeof name, "put_along_axis %s", cmx_dtype_name(dt));
    /* values [i/6%3] distinct per line of the axis: the rows of uv */
    compare(name, build_ix, (cmx_array[]){a, ux, v}, &c, 0);
    cmx_array_release_all((cmx_array[]){a, ix, ux, v}, 4);
  }
}

static void test_scatter_modes(void) {
  const int64_t sa[] = {6, 5}, i8s[] = {8}, us[] = {8, 1, 1}, rs[] = {8, 1, 5};
  /* duplicates: (1, 2) three times, (-1, 4) twice */
  const int64_t r0[] = {1, 1, 0, -1, 1, 5, 3, 2};
  const int64_t r1[] = {2, 2, 0, 4, -3, 4, 1, 0};
  const int64_t u0[] = {1, 1, 0, 5, 1, 5, 3, 2}; /* rows, duplicated */
  char name[96];
  static const char* const modes[] = {"none", "add", "prod", "max", "min"};
  for (int d = 0; d < NALL; d++) {
    cmx_dtype dt = k_all[d];
    cmx_array a = data_of(dt, sa, 2), ia = index_array(r0, i8s, 1, CMX_INT32),
              ib = index_array(r1, i8s, 1, CMX_INT64), u = data_of(dt, us, 3),
              ir = index_array(u0, i8s, 1, CMX_UINT32), ur = data_of(dt, rs, 3);
    /* distinct positions for mode none (last write wins on the cpu) */
    const int64_t q0[] = {0, 1, 2, 3, 4, 5, 0, 1},
                  q1[] = {0, 1, 2, 3, 4, 0, 4, 3};
    cmx_array qa = index_array(q0, i8s, 1, CMX_INT32),
              qb = index_array(q1, i8s, 1, CMX_INT32);
    for (int m = 0; m < 5; m++) {
      ix_ctx c = {4, 0, m};
      /* float sums in another order: a few ulps per term */
      double terms = dt == CMX_FLOAT16 || dt == CMX_BFLOAT16 ? 8 : 4;
      snprintf(name, sizeof name, "scatter %s %s elements", modes[m],
               cmx_dtype_name(dt));
      if (m == 0)
        compare(name, build_ix, (cmx_array[]){a, qa, qb, u}, &c, 0);
      else
        compare(name, build_ix, (cmx_array[]){a, ia, ib, u}, &c, terms);
      if (m == 0) continue;
      c.kind = 5;
      snprintf(name, sizeof name, "scatter %s %s rows", modes[m],
               cmx_dtype_name(dt));
      compare(name, build_ix, (cmx_array[]){a, ir, ur}, &c, terms);
      /* rows of 40 and 64 (the rows kernel; 16-byte vector sums) */
      for (int w = 0; w < 2; w++) {
        const int64_t sl[] = {6, w ? 64 : 40}, su[] = {8, 1, w ? 64 : 40};
        cmx_array al = data_of(dt, sl, 2), ul = data_of(dt, su, 3);
        snprintf(name, sizeof name, "scatter %s %s rows of %lld", modes[m],
                 cmx_dtype_name(dt), (long long)sl[1]);
        compare(name, build_ix, (cmx_array[]){al, ir, ul}, &c, terms);
        cmx_array_release_all((cmx_array[]){al, ul}, 2);
      }
    }
    cmx_array_release_all((cmx_array[]){a, ia, ib, u, ir, ur, qa, qb}, 8);
  }
}

/* Integer scatter-add with many duplicates is exact. */
static void test_scatter_add_exact(void) {
  enum { N = 100000 };
  int64_t* iv = malloc(N * sizeof(int64_t));
  for (int i = 0; i < N; i++) iv[i] = i % 7 - 3;
  const int64_t sh[] = {N}, sa[] = {7};
  static const cmx_dtype dts[] = {CMX_INT32, CMX_INT8, CMX_UINT16, CMX_INT64};
  for (int d = 0; d < 4; d++) {
    cmx_array a = data_of(dts[d], sa, 1),
              ix = index_array(iv, sh, 1, CMX_INT32),
              u = data_of(dts[d], sh, 1);
    ix_ctx c = {5, 0, 1};
    cmx_array u2 = NULL;
    OK(cmx_reshape(&u2, u, (int64_t[]){N, 1}, 2,
                   cmx_stream_on(cmx_device_cpu())));
    char name[64];
    snprintf(name, sizeof name, "scatter_add %s 100000 duplicates",
             cmx_dtype_name(dts[d]));
    compare(name, build_ix, (cmx_array[]){a, ix, u2}, &c, 0);
    cmx_array_release_all((cmx_array[]){a, ix, u, u2}, 4);
  }
  free(iv);
}

int main(void) {
  if (h_ndevices() < 2)
    printf("test_gpu_products: no gpu here; the cases run on the cpu alone\n");
  RUN(test_matmul_layouts);
  RUN(test_addmm);
  RUN(test_addmm_beta0_nan);
  RUN(test_no_tf32);
  RUN(test_gather_mm);
  RUN(test_gather);
  RUN(test_along_axis);
  RUN(test_scatter_modes);
  RUN(test_scatter_add_exact);
  return test_summary("test_gpu_products");
}
