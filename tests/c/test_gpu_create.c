/* GPU kernels of creation (Arange, Linspace, Full, Eye, Tri, Tril, Triu),
 * RandomBits and the joins (Concatenate, Pad, SliceUpdate, View): every
 * case runs on a CPU stream and a GPU stream and the two results must be
 * identical bytes (same dtype and shape), for every dtype, empty and
 * size-1 dims, odd sizes and inputs of every layout (transposed, sliced
 * with negative steps, broadcast). Results of GPU kernels must also have
 * been computed there (only on the device until read).
 *
 * Without a GPU the cases are not run (test_gpu_create prints why);
 * CMX_TEST_REQUIRE_GPU=1 makes that a failure. The fake driver
 * (tests/c/fake_cuda) does not emulate these kernels.
 */
#include "gpu_util.h"
#include "ops/ops_internal.h"
#include "primitives/random.h"
#include "primitives/registry.h"

/* The device the GPU side runs on: the GPU, or the CPU when
 * CMX_TEST_SELF_CHECK=1 runs the cases' own logic on a machine without
 * one (a check of the test, not of the kernels). */
static cmx_device g_dev;
static bool g_self;
static inline cmx_stream dev(void) {
  return cmx_stream_on(g_dev);
}

static const cmx_dtype k_all[] = {
    CMX_BOOL,     CMX_UINT8,   CMX_UINT16,  CMX_UINT32,   CMX_UINT64,
    CMX_INT8,     CMX_INT16,   CMX_INT32,   CMX_INT64,    CMX_FLOAT16,
    CMX_BFLOAT16, CMX_FLOAT32, CMX_FLOAT64, CMX_COMPLEX64};
#define NALL ((int)(sizeof k_all / sizeof k_all[0]))

/* c (CPU) and g (GPU) evaluated: same dtype, shape and bytes; when
 * on_device, g's data only on the device (its kernel ran there).
 * Releases both. */
static bool agree(cmx_array c, cmx_array g, bool on_device, const char* what) {
  cmx_status sc = cmx_array_eval(c), sg = cmx_array_eval(g);
  bool ok = sc == CMX_OK && sg == CMX_OK;
  if (!ok) fprintf(stderr, "  %s: eval failed: %s\n", what, cmx_last_error());
  ok = ok && c->dtype == g->dtype && c->ndim == g->ndim;
  for (int d = 0; ok && d < c->ndim; d++) ok = c->dims[d] == g->dims[d];
  if (ok && on_device && !g_self && g->size > 0 && !device_only(g)) {
    fprintf(stderr, "  %s: the result was not made on the device\n", what);
    ok = false;
  }
  if (ok && !same_bytes(c, g)) {
    fprintf(stderr, "  %s: the GPU's bytes differ from the CPU's\n", what);
    ok = false;
  }
  CHECK_MSG(ok, "%s", what);
  cmx_array_release(c);
  cmx_array_release(g);
  return ok;
}

/* Both statuses fail (the op refused on both devices: counted) or both
 * succeed and agree (dev: the GPU's result must be made on the device). */
static int g_refused, g_compared;
#define BOTH_(call_c, call_g, what, dev)                                      \
  do {                                                                        \
    cmx_status sc_ = (call_c), sg_ = (call_g);                                \
    CHECK_MSG((sc_ == CMX_OK) == (sg_ == CMX_OK), "%s: cpu %d, gpu %d", what, \
              (int)sc_, (int)sg_);                                            \
    if (sc_ == CMX_OK && sg_ == CMX_OK) {                                     \
      g_compared++;                                                           \
      agree(c, g, dev, what);                                                 \
    } else {                                                                  \
      g_refused++;                                                            \
      if (g_self)                                                             \
        fprintf(stderr, "refused: %s: %s\n", what, cmx_last_error());         \
      cmx_array_release(c);                                                   \
      cmx_array_release(g);                                                   \
    }                                                                         \
    c = g = NULL;                                                             \
  } while (0)
#define BOTH(call_c, call_g, what) BOTH_(call_c, call_g, what, true)

/* A host array of dt with random values (shape, ndim). */
static cmx_array rnd_array(const int64_t* shape, int ndim, cmx_dtype dt) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  void* x = malloc((size_t)(n ? n : 1) * cmx_dtype_size(dt));
  fill(x, dt, n);
  cmx_array a = arr(x, shape, ndim, dt);
  free(x);
  return a;
}

/* ---------------- creation ---------------- */

static void test_ranges(void) {
  static const double ar[][3] = {{0, 10, 1},
                                 {-3.5, 7.25, 0.37},
                                 {5, -5, -0.3},
                                 {0, 100003, 1},
                                 {1e9, 1e9 + 257, 1.1},
                                 {-200, 300, 3},
                                 {0.1, 0.1, 1},
                                 {2, 3, 5}};
  static const double ls[][3] = {{-1, 3, 1001},      {0, 1, 1},
                                 {0, 1, 0},          {5, -7, 77},
                                 {1e-3, 1e5, 65537}, {-300, 300, 4099}};
  char what[96];
  for (int t = 0; t < NALL; t++) {
    cmx_dtype dt = k_all[t];
    cmx_array c = NULL, g = NULL;
    for (size_t i = 0; i < sizeof ar / sizeof ar[0]; i++) {
      snprintf(what, sizeof what, "arange(%g, %g, %g) %s", ar[i][0], ar[i][1],
               ar[i][2], cmx_dtype_name(dt));
      BOTH(cmx_arange(&c, ar[i][0], ar[i][1], ar[i][2], dt, cpu()),
           cmx_arange(&g, ar[i][0], ar[i][1], ar[i][2], dt, dev()), what);
    }
    for (size_t i = 0; i < sizeof ls / sizeof ls[0]; i++) {
      snprintf(what, sizeof what, "linspace(%g, %g, %g) %s", ls[i][0], ls[i][1],
               ls[i][2], cmx_dtype_name(dt));
      BOTH(cmx_linspace(&c, ls[i][0], ls[i][1], (int64_t)ls[i][2], dt, cpu()),
           cmx_linspace(&g, ls[i][0], ls[i][1], (int64_t)ls[i][2], dt, dev()),
           what);
    }
  }
}

static void test_eye_tri(void) {
  static const int64_t nm[][2] = {{7, 5}, {1, 1}, {0, 3}, {4, 0}, {33, 65}};
  static const int64_t ks[] = {-40, -8, -1, 0, 2, 6, 70};
  char what[96];
  for (int t = 0; t < NALL; t++) {
    cmx_dtype dt = k_all[t];
    cmx_array c = NULL, g = NULL;
    for (size_t i = 0; i < sizeof nm / sizeof nm[0]; i++)
      for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) {
        int64_t n = nm[i][0], m = nm[i][1], k = ks[j];
        snprintf(what, sizeof what, "eye(%lld, %lld, %lld) %s", (long long)n,
                 (long long)m, (long long)k, cmx_dtype_name(dt));
        BOTH(cmx_eye(&c, n, m, k, dt, cpu()), cmx_eye(&g, n, m, k, dt, dev()),
             what);
        snprintf(what, sizeof what, "tri(%lld, %lld, %lld) %s", (long long)n,
                 (long long)m, (long long)k, cmx_dtype_name(dt));
        BOTH(cmx_tri(&c, n, m, k, dt, cpu()), cmx_tri(&g, n, m, k, dt, dev()),
             what);
      }
  }
}

static void test_tril_triu(void) {
  static const int64_t ks[] = {-9, -2, 0, 1, 4, 9};
  char what[96];
  for (int t = 0; t < NALL; t++) {
    cmx_dtype dt = k_all[t];
    /* a stack (3, 6, 5) read transposed from (5, 6, 3), a (1, 1) matrix
     * and an empty stack */
    cmx_array base = rnd_array((int64_t[]){5, 6, 3}, 3, dt), tr = NULL;
    OK(cmx_transpose(&tr, base, (int[]){2, 1, 0}, 3, cpu()));
    cmx_array one = rnd_array((int64_t[]){1, 1}, 2, dt);
    cmx_array empty = rnd_array((int64_t[]){2, 0, 4}, 3, dt);
    cmx_array ins[3] = {tr, one, empty};
    for (int a = 0; a < 3; a++)
      for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) {
        cmx_array c = NULL, g = NULL;
        snprintf(what, sizeof what, "tril input %d k %lld %s", a,
                 (long long)ks[j], cmx_dtype_name(dt));
        BOTH(cmx_tril(&c, ins[a], ks[j], cpu()),
             cmx_tril(&g, ins[a], ks[j], dev()), what);
        snprintf(what, sizeof what, "triu input %d k %lld %s", a,
                 (long long)ks[j], cmx_dtype_name(dt));
        BOTH(cmx_triu(&c, ins[a], ks[j], cpu()),
             cmx_triu(&g, ins[a], ks[j], dev()), what);
      }
    cmx_array_release_all((cmx_array[]){base, tr, one, empty}, 4);
  }
}

static void test_full(void) {
  char what[96];
  for (int t = 0; t < NALL; t++) {
    cmx_dtype dt = k_all[t];
    cmx_array c = NULL, g = NULL;
    cmx_array v = rnd_array(NULL, 0, dt);
    cmx_array row = rnd_array((int64_t[]){1, 37}, 2, dt);
    static const int64_t shapes[][3] = {
        {3, 41, 37}, {1, 1, 1}, {2, 0, 37}, {1, 1000, 37}};
    /* (a size-1 output may take the value's own buffer) */
    for (int i = 0; i < 4; i++) {
      snprintf(what, sizeof what, "full scalar shape %d %s", i,
               cmx_dtype_name(dt));
      BOTH_(cmx_full(&c, shapes[i], 3, v, dt, cpu()),
            cmx_full(&g, shapes[i], 3, v, dt, dev()), what, i != 1);
      snprintf(what, sizeof what, "full row shape %d %s", i,
               cmx_dtype_name(dt));
      BOTH_(cmx_full(&c, shapes[i], 3, row, dt, cpu()),
            cmx_full(&g, shapes[i], 3, row, dt, dev()), what, i != 1);
      snprintf(what, sizeof what, "zeros %d %s", i, cmx_dtype_name(dt));
      BOTH_(cmx_zeros(&c, shapes[i], 3, dt, cpu()),
            cmx_zeros(&g, shapes[i], 3, dt, dev()), what, i != 1);
      snprintf(what, sizeof what, "ones %d %s", i, cmx_dtype_name(dt));
      BOTH_(cmx_ones(&c, shapes[i], 3, dt, cpu()),
            cmx_ones(&g, shapes[i], 3, dt, dev()), what, i != 1);
    }
    cmx_array_release_all((cmx_array[]){v, row}, 2);
  }
}

/* ---------------- RandomBits ---------------- */

static void test_random_bits(void) {
  static const int64_t shapes[][3] = {
      {0, 1, 1},    {1, 1, 1}, {3, 1, 1},
      {5, 1, 1},    {7, 1, 1}, {2, 3, 5},
      {1001, 1, 1}, {3, 1, 7}, {(1 << 20) + 3, 1, 1}};
  static const int ndims[] = {1, 1, 1, 1, 1, 3, 1, 3, 1};
  static const int widths[] = {1, 2, 4};
  char what[96];
  cmx_array keys[3] = {NULL, NULL, NULL}, two = NULL;
  OK(cmx_random_key(&keys[0], 0));
  OK(cmx_random_key(&keys[1], 0x123456789abcull));
  OK(cmx_random_split(&two, keys[1], 2, cpu()));
  /* a key read with a stride: column 1 of the (2, 2) split */
  keys[2] = view(two, (int64_t[]){2}, (int64_t[]){2}, 1, 1);
  for (int k = 0; k < 3; k++)
    for (size_t s = 0; s < sizeof ndims / sizeof ndims[0]; s++)
      for (int w = 0; w < 3; w++) {
        cmx_array c = NULL, g = NULL;
        snprintf(what, sizeof what, "bits key %d shape %d width %d", k, (int)s,
                 widths[w]);
        BOTH(
            cmx_random_bits(&c, shapes[s], ndims[s], widths[w], keys[k], cpu()),
            cmx_random_bits(&g, shapes[s], ndims[s], widths[w], keys[k], dev()),
            what);
      }
  /* Batched keys (what vmap makes): (3, 2) contiguous and (3, 2) read
   * transposed from (2, 3), blocks of odd byte counts. */
  uint32_t kv[6] = {0, 0, 1, 1, 0xabcdef01u, 77};
  cmx_array kb = arr(kv, (int64_t[]){3, 2}, 2, CMX_UINT32);
  cmx_array kt = view(kb, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 2, 0);
  static const int64_t ms[] = {3, 5, 1, 7, 0, 1001, 4096};
  for (int kk = 0; kk < 2; kk++)
    for (int w = 0; w < 3; w++)
      for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
        int width = widths[w];
        cmx__random_bits_params q = {
            .width = width, .ndim = 1, .shape = {ms[mi]}};
        int64_t shape[2] = {3, ms[mi]};
        const int64_t* shp[1] = {shape};
        int nd = 2;
        cmx_dtype dt = width == 4   ? CMX_UINT32
                       : width == 2 ? CMX_UINT16
                                    : CMX_UINT8;
        cmx_array c = NULL, g = NULL, in = kk ? kt : kb;
        cmx_primitive* pc =
            cmx_primitive_new(&cmx__vt_RandomBits, &q, sizeof q, cpu());
        cmx_primitive* pg =
            cmx_primitive_new(&cmx__vt_RandomBits, &q, sizeof q, dev());
        snprintf(what, sizeof what, "batched bits keys %d width %d m %lld", kk,
                 width, (long long)ms[mi]);
        BOTH(cmx_primitive_apply(&c, 1, pc, &in, 1, shp, &nd, &dt),
             cmx_primitive_apply(&g, 1, pg, &in, 1, shp, &nd, &dt), what);
      }
  cmx_array_release_all((cmx_array[]){keys[0], keys[1], keys[2], two, kb, kt},
                        6);
}

/* The samplers built on RandomBits run on the GPU: the integer and bool
 * ones give the CPU's values exactly. */
static void test_samplers(void) {
  cmx_array key = NULL, lo = NULL, hi = NULL, pr = NULL;
  OK(cmx_random_key(&key, 42));
  OK(cmx_array_from_double(&lo, -5, CMX_INT32));
  OK(cmx_array_from_double(&hi, 1000, CMX_INT32));
  OK(cmx_array_from_double(&pr, 0.3, CMX_FLOAT32));
  int64_t shape[2] = {33, 77};
  cmx_array c = NULL, g = NULL;
  BOTH(cmx_random_randint(&c, lo, hi, shape, 2, CMX_INT32, key, cpu()),
       cmx_random_randint(&g, lo, hi, shape, 2, CMX_INT32, key, dev()),
       "randint");
  BOTH(cmx_random_bernoulli(&c, pr, shape, 2, key, cpu()),
       cmx_random_bernoulli(&g, pr, shape, 2, key, dev()), "bernoulli");
  BOTH(cmx_random_uniform(&c, NULL, NULL, shape, 2, CMX_FLOAT32, key, cpu()),
       cmx_random_uniform(&g, NULL, NULL, shape, 2, CMX_FLOAT32, key, dev()),
       "uniform");
  cmx_array_release_all((cmx_array[]){key, lo, hi, pr}, 4);
}

/* ---------------- joins ---------------- */

/* Element sizes 1, 2, 4, 8 and complex64. */
static const cmx_dtype k_sizes[] = {CMX_BOOL,  CMX_INT8,    CMX_FLOAT16,
                                    CMX_INT32, CMX_FLOAT64, CMX_COMPLEX64};
#define NSIZES ((int)(sizeof k_sizes / sizeof k_sizes[0]))

/* Four (4, 5, 6) inputs of dt: contiguous, transposed from (6, 5, 4),
 * read backwards on every axis, and one row broadcast. */
static void layouts(cmx_dtype dt, cmx_array out[4], cmx_array keep[3]) {
  keep[0] = rnd_array((int64_t[]){4, 5, 6}, 3, dt);
  keep[1] = rnd_array((int64_t[]){6, 5, 4}, 3, dt);
  keep[2] = rnd_array((int64_t[]){1, 1, 6}, 3, dt);
  out[0] = cmx_array_retain(keep[0]);
  out[1] = view(keep[1], (int64_t[]){4, 5, 6}, (int64_t[]){1, 4, 20}, 3, 0);
  out[2] =
      view(keep[0], (int64_t[]){4, 5, 6}, (int64_t[]){-30, -6, -1}, 3, 119);
  out[3] = NULL;
  OK(cmx_broadcast_to(&out[3], keep[2], (int64_t[]){4, 5, 6}, 3, cpu()));
}

static void test_concatenate(void) {
  char what[96];
  for (int t = 0; t < NSIZES; t++) {
    cmx_dtype dt = k_sizes[t];
    cmx_array in[4], keep[3];
    layouts(dt, in, keep);
    cmx_array e0 = rnd_array((int64_t[]){0, 5, 6}, 3, dt);
    for (int axis = -1; axis < 3; axis++) {
      cmx_array c = NULL, g = NULL;
      snprintf(what, sizeof what, "concatenate 4 layouts axis %d %s", axis,
               cmx_dtype_name(dt));
      BOTH(cmx_concatenate(&c, in, 4, axis, cpu()),
           cmx_concatenate(&g, in, 4, axis, dev()), what);
      snprintf(what, sizeof what, "stack axis %d %s", axis, cmx_dtype_name(dt));
      BOTH(cmx_stack(&c, in, 4, axis, cpu()), cmx_stack(&g, in, 4, axis, dev()),
           what);
    }
    cmx_array two[3] = {in[2], e0, in[1]}, c = NULL, g = NULL;
    snprintf(what, sizeof what, "concatenate with empty %s",
             cmx_dtype_name(dt));
    BOTH(cmx_concatenate(&c, two, 3, 0, cpu()),
         cmx_concatenate(&g, two, 3, 0, dev()), what);
    cmx_array_release_all(in, 4);
    cmx_array_release_all(keep, 3);
    cmx_array_release(e0);
  }
  /* long bands, sizes not multiples of a vector */
  cmx_array a = rnd_array((int64_t[]){1001, 257}, 2, CMX_FLOAT32);
  cmx_array b = rnd_array((int64_t[]){1001, 3}, 2, CMX_FLOAT32);
  cmx_array c = NULL, g = NULL;
  BOTH(cmx_concatenate(&c, (cmx_array[]){a, b, a}, 3, 1, cpu()),
       cmx_concatenate(&g, (cmx_array[]){a, b, a}, 3, 1, dev()),
       "concatenate long rows");
  cmx_array_release_all((cmx_array[]){a, b}, 2);
}

static void test_pad(void) {
  char what[96];
  for (int t = 0; t < NSIZES; t++) {
    cmx_dtype dt = k_sizes[t];
    cmx_array in[4], keep[3];
    layouts(dt, in, keep);
    cmx_array val = rnd_array(NULL, 0, dt);
    static const int axes[3] = {0, 1, 2};
    static const int64_t lows[][3] = {{1, 0, 2}, {0, 0, 0}, {3, 7, 1}};
    static const int64_t highs[][3] = {{2, 3, 0}, {0, 0, 1}, {0, 1, 9}};
    for (int l = 0; l < 4; l++)
      for (int p = 0; p < 3; p++)
        for (int mode = 0; mode < 2; mode++) {
          cmx_array c = NULL, g = NULL;
          snprintf(what, sizeof what, "pad layout %d widths %d mode %d %s", l,
                   p, mode, cmx_dtype_name(dt));
          BOTH(cmx_pad(&c, in[l], axes, lows[p], highs[p], 3, val,
                       (cmx_pad_mode)mode, cpu()),
               cmx_pad(&g, in[l], axes, lows[p], highs[p], 3, val,
                       (cmx_pad_mode)mode, dev()),
               what);
        }
    cmx_array e = rnd_array((int64_t[]){0, 3}, 2, dt), c = NULL, g = NULL;
    BOTH(cmx_pad(&c, e, axes, (int64_t[]){2, 1}, (int64_t[]){1, 0}, 2, val,
                 CMX_PAD_CONSTANT, cpu()),
         cmx_pad(&g, e, axes, (int64_t[]){2, 1}, (int64_t[]){1, 0}, 2, val,
                 CMX_PAD_CONSTANT, dev()),
         "pad of an empty array");
    cmx_array_release_all(in, 4);
    cmx_array_release_all(keep, 3);
    cmx_array_release_all((cmx_array[]){val, e}, 2);
  }
}

static void test_slice_update(void) {
  static const int64_t starts[][3] = {
      {0, 0, 0}, {1, 4, 5}, {3, 0, 1}, {0, 2, 0}};
  static const int64_t stops[][3] = {
      {4, 5, 6}, {3, -6, -7}, {-5, 5, 6}, {4, 3, 6}};
  static const int64_t steps[][3] = {
      {1, 1, 1}, {1, -2, -3}, {-1, 2, 2}, {3, 1, 5}};
  char what[96];
  for (int t = 0; t < NSIZES; t++) {
    cmx_dtype dt = k_sizes[t];
    cmx_array in[4], keep[3];
    layouts(dt, in, keep);
    for (int r = 0; r < 4; r++) {
      /* the region's shape, from a CPU slice */
      cmx_array region = NULL;
      OK(cmx_slice(&region, in[0], starts[r], stops[r], steps[r], cpu()));
      cmx_array upd = rnd_array(region->dims, region->ndim, dt), upt = NULL;
      /* the update also transposed (and its transpose back) */
      int perm[3] = {2, 1, 0};
      cmx_array tmp = rnd_array(
          (int64_t[]){region->dims[2], region->dims[1], region->dims[0]}, 3,
          dt);
      OK(cmx_transpose(&upt, tmp, perm, 3, cpu()));
      cmx_array scal = rnd_array(NULL, 0, dt);
      cmx_array ups[3] = {upd, upt, scal};
      for (int s = 0; s < 4; s++)
        for (int u = 0; u < 3; u++) {
          cmx_array c = NULL, g = NULL;
          snprintf(what, sizeof what, "slice_update region %d src %d upd %d %s",
                   r, s, u, cmx_dtype_name(dt));
          /* (region 0 is all of src: the op returns the update) */
          BOTH_(cmx_slice_update(&c, in[s], ups[u], starts[r], stops[r],
                                 steps[r], cpu()),
                cmx_slice_update(&g, in[s], ups[u], starts[r], stops[r],
                                 steps[r], dev()),
                what, r != 0);
        }
      cmx_array_release_all((cmx_array[]){region, upd, upt, tmp, scal}, 5);
    }
    /* a donated source: a GPU result nothing else holds */
    cmx_array one = NULL, src = NULL, c = NULL, g = NULL, src_c = NULL;
    OK(cmx_array_from_double(&one, 1, dt));
    OK(cmx_add(&src, in[0], one, dev()));
    OK(cmx_add(&src_c, in[0], one, cpu()));
    cmx_array upd = rnd_array((int64_t[]){2, 5, 6}, 3, dt);
    OK(cmx_slice_update(&g, src, upd, starts[0], (int64_t[]){2, 5, 6}, steps[0],
                        dev()));
    OK(cmx_slice_update(&c, src_c, upd, starts[0], (int64_t[]){2, 5, 6},
                        steps[0], cpu()));
    cmx_array_release_all((cmx_array[]){src, src_c}, 2);
    agree(c, g, true, "slice_update of a donated source");
    cmx_array_release_all(in, 4);
    cmx_array_release_all(keep, 3);
    cmx_array_release_all((cmx_array[]){one, upd}, 2);
  }
}

static void test_view(void) {
  char what[96];
  for (int t = 0; t < NALL; t++)
    for (int u = 0; u < NALL; u++) {
      cmx_dtype from = k_all[t], to = k_all[u];
      cmx_array in[4], keep[3];
      layouts(from, in, keep);
      for (int l = 0; l < 4; l++) {
        cmx_array c = NULL, g = NULL;
        snprintf(what, sizeof what, "view layout %d %s -> %s", l,
                 cmx_dtype_name(from), cmx_dtype_name(to));
        cmx_status sc = cmx_view(&c, in[l], to, cpu());
        cmx_status sg = cmx_view(&g, in[l], to, dev());
        CHECK_MSG((sc == CMX_OK) == (sg == CMX_OK), "%s", what);
        /* a view shares the input's (host) buffer: not device-only */
        if (sc == CMX_OK && sg == CMX_OK)
          agree(c, g, false, what);
        else
          cmx_array_release_all((cmx_array[]){c, g}, 2);
      }
      cmx_array_release_all(in, 4);
      cmx_array_release_all(keep, 3);
    }
}

int main(void) {
  if (!gpu_test_begin("test-gpu-create")) return 1;
  const char* self = getenv("CMX_TEST_SELF_CHECK");
  g_self = self && !strcmp(self, "1");
  g_dev = g_self ? cmx_device_cpu() : cmx_device_gpu();
  if (g_self || (g_gpu && g_nvrtc && !getenv("CMX_TEST_FAKE_DRIVER"))) {
    CASE(test_ranges);
    CASE(test_eye_tri);
    CASE(test_tril_triu);
    CASE(test_full);
    CASE(test_random_bits);
    CASE(test_samplers);
    CASE(test_concatenate);
    CASE(test_pad);
    CASE(test_slice_update);
    CASE(test_view);
    printf("%d cases compared, %d refused by both devices\n", g_compared,
           g_refused);
  } else {
    printf("gpu: unavailable, GPU cases not run (%s)\n",
           g_gpu ? "no NVRTC" : cmx__gpu_unavailable_reason());
    CHECK_MSG(!gpu_test_required(),
              "CMX_TEST_REQUIRE_GPU is set but the GPU is unavailable");
  }
  gpu_test_end();
  return test_summary("test_gpu_create");
}
