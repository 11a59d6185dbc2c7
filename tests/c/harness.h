/* The table-driven op harness.
 *
 * Host tensors (h_tensor) hold values as doubles (plus imaginary parts for
 * complex64) with a dtype; h_array turns one into a cmx array in a chosen
 * memory layout (contiguous, column-major, strided with an offset), h_read
 * brings a cmx array back. Op tables run each op over the standard shapes,
 * every listed dtype and every layout, on every device (devices.h), and
 * compare against a plain double-precision reference rounded to the output
 * dtype; GPU results are also compared with the CPU's.
 *
 *   static void ref_exp(double re, double im, double* o, double* oi) {...}
 *   h_check_unary("exp", cmx_exp, ref_exp, H_FLOATS, out_float, -5, 5, 1);
 */
#ifndef CMX_TEST_HARNESS_H
#define CMX_TEST_HARNESS_H

#include <complex.h>

#include "core/internal.h"
#include "devices.h"
#include "test.h"

/* ---------------- host tensors ---------------- */
typedef struct {
  cmx_dtype dtype;
  int ndim;
  int64_t shape[CMX_MAX_NDIM];
  int64_t size;
  double* re;
  double* im;        /* NULL unless complex64 */
  void* raw;         /* h_read: the values as stored (row-major), else NULL */
  cmx_status status; /* h_read: how reading went */
} h_tensor;

static inline h_tensor h_alloc(const int64_t* shape, int ndim, cmx_dtype dt) {
  h_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.ndim = ndim;
  t.size = 1;
  for (int i = 0; i < ndim; i++) {
    t.shape[i] = shape[i];
    t.size *= shape[i];
  }
  t.re = calloc((size_t)(t.size ? t.size : 1), sizeof(double));
  if (dt == CMX_COMPLEX64)
    t.im = calloc((size_t)(t.size ? t.size : 1), sizeof(double));
  return t;
}

static inline void h_free(h_tensor* t) {
  free(t->re);
  free(t->im);
  free(t->raw);
  t->re = t->im = NULL;
  t->raw = NULL;
}

/* v rounded to a value of dtype dt (integers wrap modulo 2^bits as a C
 * conversion through int64 does; floats round to nearest). */
static inline double h_round_to(double v, cmx_dtype dt) {
  if (v != v) {
    if (cmx_dtype_is_inexact(dt)) return v;
    return 0;
  }
  int64_t i = (v >= 9.2e18 || v <= -9.2e18) ? 0 : (int64_t)v;
  switch (dt) {
    case CMX_BOOL:
      return v != 0;
    case CMX_UINT8:
      return (uint8_t)i;
    case CMX_UINT16:
      return (uint16_t)i;
    case CMX_UINT32:
      return (uint32_t)i;
    case CMX_UINT64:
      return v < 0 ? (double)(uint64_t)i : v;
    case CMX_INT8:
      return (int8_t)i;
    case CMX_INT16:
      return (int16_t)i;
    case CMX_INT32:
      return (int32_t)i;
    case CMX_INT64:
      return (double)i;
    case CMX_FLOAT16:
      return cmx_float16_to_float(cmx_float_to_float16((float)v));
    case CMX_BFLOAT16:
      return cmx_bfloat16_to_float(cmx_float_to_bfloat16((float)v));
    case CMX_FLOAT32:
    case CMX_COMPLEX64:
      return (float)v;
    default:
      return v;
  }
}

/* Writes value (re, im) as dtype dt at p. */
static inline void h_store(void* p, cmx_dtype dt, double re, double im) {
  double v = h_round_to(re, dt);
  switch (dt) {
    case CMX_BOOL:
      *(uint8_t*)p = v != 0;
      break;
    case CMX_UINT8:
      *(uint8_t*)p = (uint8_t)v;
      break;
    case CMX_UINT16:
      *(uint16_t*)p = (uint16_t)v;
      break;
    case CMX_UINT32:
      *(uint32_t*)p = (uint32_t)v;
      break;
    case CMX_UINT64:
      *(uint64_t*)p = (uint64_t)v;
      break;
    case CMX_INT8:
      *(int8_t*)p = (int8_t)v;
      break;
    case CMX_INT16:
      *(int16_t*)p = (int16_t)v;
      break;
    case CMX_INT32:
      *(int32_t*)p = (int32_t)v;
      break;
    case CMX_INT64:
      *(int64_t*)p = (int64_t)v;
      break;
    case CMX_FLOAT16:
      *(uint16_t*)p = cmx_float_to_float16((float)v);
      break;
    case CMX_BFLOAT16:
      *(uint16_t*)p = cmx_float_to_bfloat16((float)v);
      break;
    case CMX_FLOAT32:
      *(float*)p = (float)v;
      break;
    case CMX_FLOAT64:
      *(double*)p = v;
      break;
    case CMX_COMPLEX64:
      ((float*)p)[0] = (float)re;
      ((float*)p)[1] = (float)im;
      break;
    default:
      break;
  }
}

/* Reads the value of dtype dt at p. */
static inline void h_load(const void* p, cmx_dtype dt, double* re, double* im) {
  *im = 0;
  switch (dt) {
    case CMX_UINT64:
      *re = (double)*(const uint64_t*)p;
      break;
    case CMX_INT64:
      *re = (double)*(const int64_t*)p;
      break;
    case CMX_COMPLEX64:
      *re = ((const float*)p)[0];
      *im = ((const float*)p)[1];
      break;
    default:
      *re = cmx__load_double(p, dt);
  }
}

/* splitmix64 */
static inline uint64_t h_rand_u64(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static inline double h_rand_unit(uint64_t* s) {
  return (double)(h_rand_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Random values representable in dt: integers uniform in [lo, hi] (clamped
 * to the dtype's range), bool 0/1, floats uniform in [lo, hi). */
static inline h_tensor h_random(const int64_t* shape, int ndim, cmx_dtype dt,
                                double lo, double hi, uint64_t seed) {
  h_tensor t = h_alloc(shape, ndim, dt);
  uint64_t s = seed * 7919 + 17;
  if (cmx_dtype_is_integer(dt) && !cmx_dtype_is_signed(dt) && lo < 0) lo = 0;
  for (int64_t i = 0; i < t.size; i++) {
    double u = h_rand_unit(&s);
    if (dt == CMX_BOOL)
      t.re[i] = u < 0.5;
    else if (cmx_dtype_is_integer(dt))
      t.re[i] = h_round_to(floor(lo + u * (hi - lo + 1)), dt);
    else
      t.re[i] = h_round_to(lo + u * (hi - lo), dt);
    if (t.im) t.im[i] = h_round_to(lo + h_rand_unit(&s) * (hi - lo), dt);
  }
  return t;
}

/* ---------------- layouts ---------------- */
typedef enum {
  H_CONTIG = 0,     /* row-major */
  H_TRANSPOSED = 1, /* column-major storage (ndim >= 2) */
  H_STRIDED = 2,    /* every other element of a bigger buffer, offset 1 */
  H_NUM_LAYOUTS
} h_layout;
static const char* const h_layout_names[] = {"contiguous", "transposed",
                                             "strided"};

/* A view node over storage_elems elements of storage. */
static inline cmx_array h_node_strided(const void* storage,
                                       int64_t storage_elems,
                                       const int64_t* shape, int ndim,
                                       const int64_t* strides, int64_t offset,
                                       cmx_dtype dt) {
  cmx_array base =
      cmx__node_from_data("harness", storage, &storage_elems, 1, dt);
  cmx_array a = cmx__node_new("harness", shape, ndim, dt);
  if (!base || !a) {
    cmx_array_release(base);
    cmx_array_release(a);
    return NULL;
  }
  a->buf = cmx__buffer_retain(base->buf);
  a->offset = offset;
  a->data_size = storage_elems - offset;
  if (ndim) memcpy(CMX__STRIDES(a), strides, (size_t)ndim * sizeof(int64_t));
  cmx__node_update_flags(a);
  cmx_array_release(base);
  return a;
}

/* A new cmx array holding t's values in the given layout (layouts that do
 * not apply to t's rank fall back to contiguous). */
static inline cmx_array h_array(const h_tensor* t, h_layout layout) {
  size_t isz = cmx_dtype_size(t->dtype);
  int64_t strides[CMX_MAX_NDIM], storage, offset = 0;
  if (layout == H_TRANSPOSED && t->ndim >= 2) {
    int64_t s = 1;
    for (int d = 0; d < t->ndim; d++) {
      strides[d] = s;
      s *= t->shape[d] ? t->shape[d] : 1;
    }
    storage = t->size;
  } else if (layout == H_STRIDED && t->ndim >= 1) {
    int64_t s = 2;
    for (int d = t->ndim - 1; d >= 0; d--) {
      strides[d] = s;
      s *= t->shape[d] ? t->shape[d] : 1;
    }
    storage = 2 * t->size + 1;
    offset = 1;
  } else {
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
      strides[d] = s;
      s *= t->shape[d] ? t->shape[d] : 1;
    }
    storage = t->size;
  }
  if (storage < 1) storage = 1;
  char* buf = calloc((size_t)storage, isz);
  int64_t idx[CMX_MAX_NDIM] = {0};
  for (int64_t k = 0; k < t->size; k++) {
    int64_t off = offset;
    for (int d = 0; d < t->ndim; d++) off += idx[d] * strides[d];
    h_store(buf + off * (int64_t)isz, t->dtype, t->re[k], t->im ? t->im[k] : 0);
    for (int d = t->ndim - 1; d >= 0; d--) {
      if (++idx[d] < t->shape[d]) break;
      idx[d] = 0;
    }
  }
  cmx_array a = h_node_strided(buf, storage, t->shape, t->ndim, strides, offset,
                               t->dtype);
  free(buf);
  return a;
}

/* Evaluates a and reads it back (row-major), keeping the stored bytes in
 * raw (h_free frees them). On failure the tensor has size -1 and its
 * status says why. */
static inline h_tensor h_read_raw(cmx_array a) {
  h_tensor t =
      h_alloc(cmx_array_shape(a), cmx_array_ndim(a), cmx_array_dtype(a));
  size_t isz = cmx_dtype_size(t.dtype);
  char* buf = malloc((size_t)(t.size ? t.size : 1) * isz);
  t.status = cmx_array_copy_to(a, buf, (size_t)t.size * isz);
  if (t.status != CMX_OK) {
    t.size = -1;
    free(buf);
    return t;
  }
  for (int64_t i = 0; i < t.size; i++) {
    double im;
    h_load(buf + i * (int64_t)isz, t.dtype, &t.re[i], &im);
    if (t.im) t.im[i] = im;
  }
  t.raw = buf;
  return t;
}

/* The same without the stored bytes (callers may free re and im alone). */
static inline h_tensor h_read(cmx_array a) {
  h_tensor t = h_read_raw(a);
  free(t.raw);
  t.raw = NULL;
  return t;
}

/* Default relative tolerance of a dtype's results. */
static inline double h_tol(cmx_dtype dt) {
  switch (dt) {
    case CMX_FLOAT16:
      return 2e-3;
    case CMX_BFLOAT16:
      return 1.6e-2;
    case CMX_FLOAT32:
    case CMX_COMPLEX64:
      return 4e-6;
    case CMX_FLOAT64:
      return 1e-13;
    default:
      return 0;
  }
}

static inline bool h_value_close(double g, double w, double rtol, double atol) {
  if (w != w) return g != g;
  if (isinf(w)) return g == w;
  if (g != g || isinf(g)) return false;
  return fabs(g - w) <= atol + rtol * fabs(w);
}

/* Compares got against want (dtype, shape, values). Prints the first
 * mismatch with `what` as context and returns false on any difference. */
static inline bool h_close(const h_tensor* got, const h_tensor* want,
                           double rtol, double atol, const char* what) {
  if (got->size < 0) {
    fprintf(stderr, "FAIL %s: evaluation failed: %s\n", what, cmx_last_error());
    return false;
  }
  if (got->dtype != want->dtype) {
    fprintf(stderr, "FAIL %s: dtype %s, want %s\n", what,
            cmx_dtype_name(got->dtype), cmx_dtype_name(want->dtype));
    return false;
  }
  bool same = got->ndim == want->ndim;
  for (int d = 0; same && d < got->ndim; d++)
    same = got->shape[d] == want->shape[d];
  if (!same) {
    char a[256], b[256];
    fprintf(stderr, "FAIL %s: shape %s, want %s\n", what,
            cmx__shape_str(got->shape, got->ndim, a, sizeof a),
            cmx__shape_str(want->shape, want->ndim, b, sizeof b));
    return false;
  }
  for (int64_t i = 0; i < got->size; i++) {
    bool ok = h_value_close(got->re[i], want->re[i], rtol, atol);
    if (ok && got->im) ok = h_value_close(got->im[i], want->im[i], rtol, atol);
    if (!ok) {
      fprintf(stderr,
              "FAIL %s: element %lld: got %.17g%+.17gj, want %.17g%+.17gj\n",
              what, (long long)i, got->re[i], got->im ? got->im[i] : 0.0,
              want->re[i], want->im ? want->im[i] : 0.0);
      return false;
    }
  }
  return true;
}

/* ---------------- standard shapes and dtypes ---------------- */
typedef struct {
  int ndim;
  int64_t dims[4];
} h_shape;

static const h_shape h_shapes[] = {
    {0, {0}},          {1, {1}},       {1, {7}},       {1, {0}},
    {2, {3, 4}},       {3, {4, 1, 5}}, {3, {2, 0, 3}}, {3, {3, 5, 7}},
    {4, {2, 3, 4, 5}}, {2, {33, 65}},  {1, {70001}}};
#define H_NUM_SHAPES ((int)(sizeof h_shapes / sizeof h_shapes[0]))

/* Shape pairs that broadcast. */
static const h_shape h_bcast_pairs[][2] = {
    {{2, {3, 4}}, {1, {4}}},  {{2, {3, 1}}, {2, {1, 4}}},
    {{0, {0}}, {2, {3, 4}}},  {{3, {2, 3, 4}}, {2, {3, 1}}},
    {{2, {0, 3}}, {1, {3}}},  {{3, {5, 1, 3}}, {3, {1, 4, 1}}},
    {{1, {70001}}, {0, {0}}}, {{1, {1}}, {2, {2, 9}}}};
#define H_NUM_BCAST ((int)(sizeof h_bcast_pairs / sizeof h_bcast_pairs[0]))

static const cmx_dtype H_ALL[] = {
    CMX_BOOL,     CMX_UINT8,   CMX_UINT16,  CMX_UINT32,    CMX_UINT64,
    CMX_INT8,     CMX_INT16,   CMX_INT32,   CMX_INT64,     CMX_FLOAT16,
    CMX_BFLOAT16, CMX_FLOAT32, CMX_FLOAT64, CMX_COMPLEX64, CMX_NUM_DTYPES};
static const cmx_dtype H_REAL[] = {
    CMX_BOOL,     CMX_UINT8,   CMX_UINT16,  CMX_UINT32,    CMX_UINT64,
    CMX_INT8,     CMX_INT16,   CMX_INT32,   CMX_INT64,     CMX_FLOAT16,
    CMX_BFLOAT16, CMX_FLOAT32, CMX_FLOAT64, CMX_NUM_DTYPES};
static const cmx_dtype H_NUMERIC[] = {
    CMX_UINT8,   CMX_UINT16,  CMX_UINT32,    CMX_UINT64,    CMX_INT8,
    CMX_INT16,   CMX_INT32,   CMX_INT64,     CMX_FLOAT16,   CMX_BFLOAT16,
    CMX_FLOAT32, CMX_FLOAT64, CMX_COMPLEX64, CMX_NUM_DTYPES};
static const cmx_dtype H_INTS[] = {CMX_UINT8,  CMX_UINT16, CMX_UINT32,
                                   CMX_UINT64, CMX_INT8,   CMX_INT16,
                                   CMX_INT32,  CMX_INT64,  CMX_NUM_DTYPES};
static const cmx_dtype H_FLOATS[] = {CMX_FLOAT16, CMX_BFLOAT16, CMX_FLOAT32,
                                     CMX_FLOAT64, CMX_NUM_DTYPES};
/* Lists end with CMX_NUM_DTYPES. */

/* ---------------- one case on every device ---------------- */

/* Set by a test around ops that both backends compute correctly rounded
 * (add, subtract, multiply ...): their GPU results must then equal the
 * CPU's bit for bit in every dtype, not only in integer and bool ones. */
static bool h_devices_exact;

/* Makes a case's result on stream s (a new reference in *out). */
typedef cmx_status (*h_make_fn)(void* ctx, cmx_stream s, cmx_array* out);

/* Runs case `what` on every device: the result must match want within
 * rtol (relative and absolute) everywhere, and each GPU's must match the
 * CPU's: exactly for integer and bool results, exact cases (rtol 0) and
 * h_devices_exact, else within 2 rtol. GPU cases that cannot run are
 * counted (devices.h). Returns the number of failing devices. */
static inline int h_run_case(const char* what, h_make_fn make, void* ctx,
                             const h_tensor* want, double rtol) {
  int fails = 0;
  h_tensor cpu;
  memset(&cpu, 0, sizeof cpu);
  cpu.size = -1;
  for (int dev = 0; dev < h_ndevices(); dev++) {
    char where[300], dname[32];
    snprintf(where, sizeof where, "%s on %s", what,
             h_device_name(dev, dname, sizeof dname));
    cmx_array r = NULL;
    cmx_status st = make(ctx, h_stream(dev), &r);
    bool ok;
    if (st != CMX_OK) {
      if (dev > 0 && h_gpu_skip_notimpl(st, cmx_last_error(), where)) continue;
      fprintf(stderr, "FAIL %s: %s\n", where, cmx_last_error());
      ok = false;
    } else if (dev > 0 && h_gpu_skip_missing(&r, 1, where)) {
      cmx_array_release(r);
      continue;
    } else {
      h_tensor got = h_read_raw(r);
      /* The kernel's own status (reads say CMX_ERR_RUNTIME). */
      if (dev > 0 && got.size < 0 && r->error &&
          h_gpu_skip_notimpl(r->error_status, r->error, where)) {
        h_free(&got);
        cmx_array_release(r);
        continue;
      }
      ok = h_close(&got, want, rtol, rtol, where);
      if (ok && dev > 0 && cpu.size >= 0) {
        bool exact =
            h_devices_exact || rtol == 0 || !cmx_dtype_is_inexact(got.dtype);
        if (exact) {
          ok = h_same_bits(got.raw, cpu.raw, got.size, got.dtype);
          if (!ok)
            fprintf(stderr, "FAIL %s: differs from the cpu's result\n", where);
        } else {
          ok = h_close(&got, &cpu, 2 * rtol, 2 * rtol, where);
        }
      }
      if (dev == 0)
        cpu = got;
      else
        h_free(&got);
    }
    CHECK(ok);
    fails += !ok;
    cmx_array_release(r);
  }
  h_free(&cpu);
  return fails;
}

/* ---------------- op tables ---------------- */
typedef cmx_status (*h_unary_fn)(cmx_array*, cmx_array, cmx_stream);
typedef cmx_status (*h_binary_fn)(cmx_array*, cmx_array, cmx_array, cmx_stream);
/* Reference of one element: input (re, im) -> output (*ore, *oim). */
typedef void (*h_ref1)(double re, double im, double* ore, double* oim);
typedef void (*h_ref2)(double are, double aim, double bre, double bim,
                       double* ore, double* oim);
/* The output dtype of an op for input dtype dt. */
typedef cmx_dtype (*h_out_dtype)(cmx_dtype dt);

/* An op applied to prepared inputs, for h_run_case. */
typedef struct {
  h_unary_fn fn;
  cmx_array a, b;
  h_binary_fn fn2;
} h_op_case;
static inline cmx_status h_make_unary(void* ctx, cmx_stream s, cmx_array* out) {
  h_op_case* c = ctx;
  return c->fn(out, c->a, s);
}
static inline cmx_status h_make_binary(void* ctx, cmx_stream s,
                                       cmx_array* out) {
  h_op_case* c = ctx;
  return c->fn2(out, c->a, c->b, s);
}

static inline cmx_dtype h_same_dtype(cmx_dtype dt) {
  return dt;
}
/* Integer and bool inputs give float32 (transcendental ops). */
static inline cmx_dtype h_float_dtype(cmx_dtype dt) {
  return cmx_dtype_is_inexact(dt) ? dt : CMX_FLOAT32;
}
static inline cmx_dtype h_bool_dtype(cmx_dtype dt) {
  (void)dt;
  return CMX_BOOL;
}

/* ---------------- shards ---------------- */

/* This process's shard i of *nshards: CMX_TEST_SHARD=i/n (CMakeLists.txt
 * runs the longest table tests as n processes; on a GPU each group of
 * cases compiles its own kernels, so n processes compile at once), else
 * shard 0 of 1. Read once. */
static inline int h_shard_of(int* nshards) {
  static int shard = -1, n = 1;
  if (shard < 0) {
    const char* e = getenv("CMX_TEST_SHARD");
    int i = 0, k = 1;
    if (e && sscanf(e, "%d/%d", &i, &k) == 2 && k > 0 && i >= 0 && i < k) {
      shard = i;
      n = k;
    } else {
      shard = 0;
      n = 1;
    }
  }
  *nshards = n;
  return shard;
}
/* Whether this process takes the next group of cases (an (op, dtype) group
 * of the op tables, a case of test_reduce_gpu): the groups are counted in
 * the program's fixed order and shard i takes those whose count is i mod
 * n, so every group runs in exactly one shard (every group unsharded). */
static inline bool h_shard_take(void) {
  static int count = 0;
  int n, i = h_shard_of(&n);
  return count++ % n == i;
}

/* Whether this process runs the cases outside the groups (shard 0, or no
 * CMX_TEST_SHARD): a test's main() guards them with it. */
static inline bool h_shard_main(void) {
  int n;
  return h_shard_of(&n) == 0;
}

/* Checks a unary op over every standard shape, dtype in `dtypes` and layout
 * with inputs uniform in [lo, hi); the tolerance is h_tol(out) * tol_scale.
 * Returns the number of failing cases. */
static inline int h_check_unary(const char* name, h_unary_fn fn, h_ref1 ref,
                                const cmx_dtype* dtypes, h_out_dtype outdt,
                                double lo, double hi, double tol_scale) {
  int fails = 0;
  for (int di = 0; dtypes[di] != CMX_NUM_DTYPES; di++) {
    if (!h_shard_take()) continue;
    cmx_dtype dt = dtypes[di], odt = outdt(dt);
    double rtol = h_tol(odt) * tol_scale;
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      h_tensor x = h_random(sh->dims, sh->ndim, dt, lo, hi, (uint64_t)si + 1);
      h_tensor want = h_alloc(sh->dims, sh->ndim, odt);
      for (int64_t i = 0; i < x.size; i++) {
        double ore = 0, oim = 0;
        ref(x.re[i], x.im ? x.im[i] : 0, &ore, &oim);
        want.re[i] = h_round_to(ore, odt);
        if (want.im) want.im[i] = h_round_to(oim, odt);
      }
      for (int l = 0; l < H_NUM_LAYOUTS; l++) {
        if (l == H_TRANSPOSED && sh->ndim < 2) continue;
        if (l == H_STRIDED && sh->ndim < 1) continue;
        char what[256], shs[128];
        snprintf(what, sizeof what, "%s %s %s %s", name, cmx_dtype_name(dt),
                 cmx__shape_str(sh->dims, sh->ndim, shs, sizeof shs),
                 h_layout_names[l]);
        h_op_case c = {.fn = fn, .a = h_array(&x, (h_layout)l)};
        fails += h_run_case(what, h_make_unary, &c, &want, rtol);
        cmx_array_release(c.a);
      }
      h_free(&x);
      h_free(&want);
    }
  }
  return fails;
}

/* Checks a binary op with both operands of dtype dt over every standard
 * shape (same shapes, each in every layout) and every broadcasting pair.
 * Inputs: a uniform in [alo, ahi), b uniform in [blo, bhi). */
static inline int h_check_binary(const char* name, h_binary_fn fn, h_ref2 ref,
                                 const cmx_dtype* dtypes, h_out_dtype outdt,
                                 double alo, double ahi, double blo, double bhi,
                                 double tol_scale) {
  int fails = 0;
  for (int di = 0; dtypes[di] != CMX_NUM_DTYPES; di++) {
    if (!h_shard_take()) continue;
    cmx_dtype dt = dtypes[di], odt = outdt(dt);
    double rtol = h_tol(odt) * tol_scale;
    for (int ci = 0; ci < H_NUM_SHAPES + H_NUM_BCAST; ci++) {
      const h_shape* sa = ci < H_NUM_SHAPES
                              ? &h_shapes[ci]
                              : &h_bcast_pairs[ci - H_NUM_SHAPES][0];
      const h_shape* sb = ci < H_NUM_SHAPES
                              ? &h_shapes[ci]
                              : &h_bcast_pairs[ci - H_NUM_SHAPES][1];
      h_tensor x = h_random(sa->dims, sa->ndim, dt, alo, ahi, (uint64_t)ci + 1);
      h_tensor y =
          h_random(sb->dims, sb->ndim, dt, blo, bhi, (uint64_t)ci + 1001);
      int64_t osh[CMX_MAX_NDIM];
      int ond = sa->ndim > sb->ndim ? sa->ndim : sb->ndim;
      for (int d = 0; d < ond; d++) {
        int da = d - (ond - sa->ndim), db = d - (ond - sb->ndim);
        int64_t ea = da < 0 ? 1 : sa->dims[da], eb = db < 0 ? 1 : sb->dims[db];
        osh[d] = ea == 1 ? eb : ea;
      }
      h_tensor want = h_alloc(osh, ond, odt);
      int64_t idx[CMX_MAX_NDIM] = {0};
      for (int64_t k = 0; k < want.size; k++) {
        int64_t ia = 0, ib = 0;
        for (int d = 0; d < ond; d++) {
          int da = d - (ond - sa->ndim), db = d - (ond - sb->ndim);
          if (da >= 0)
            ia = ia * sa->dims[da] + (sa->dims[da] == 1 ? 0 : idx[d]);
          if (db >= 0)
            ib = ib * sb->dims[db] + (sb->dims[db] == 1 ? 0 : idx[d]);
        }
        double ore = 0, oim = 0;
        ref(x.re[ia], x.im ? x.im[ia] : 0, y.re[ib], y.im ? y.im[ib] : 0, &ore,
            &oim);
        want.re[k] = h_round_to(ore, odt);
        if (want.im) want.im[k] = h_round_to(oim, odt);
        for (int d = ond - 1; d >= 0; d--) {
          if (++idx[d] < osh[d]) break;
          idx[d] = 0;
        }
      }
      for (int l = 0; l < H_NUM_LAYOUTS; l++) {
        int maxnd = sa->ndim > sb->ndim ? sa->ndim : sb->ndim;
        if (l == H_TRANSPOSED && maxnd < 2) continue;
        if (l == H_STRIDED && maxnd < 1) continue;
        char what[256], s1[128], s2[128];
        snprintf(what, sizeof what, "%s %s %s,%s %s", name, cmx_dtype_name(dt),
                 cmx__shape_str(sa->dims, sa->ndim, s1, sizeof s1),
                 cmx__shape_str(sb->dims, sb->ndim, s2, sizeof s2),
                 h_layout_names[l]);
        h_op_case c = {
            .fn2 = fn,
            .a = h_array(&x, (h_layout)l),
            .b = h_array(&y, l == H_TRANSPOSED ? H_CONTIG : (h_layout)l)};
        fails += h_run_case(what, h_make_binary, &c, &want, rtol);
        cmx_array_release(c.a);
        cmx_array_release(c.b);
      }
      h_free(&x);
      h_free(&y);
      h_free(&want);
    }
  }
  return fails;
}

/* ---------------- small helpers ---------------- */
/* A contiguous array of dtype dt holding the doubles v (converted). */
static inline cmx_array h_from_doubles(const double* v, const int64_t* shape,
                                       int nd, cmx_dtype dt) {
  h_tensor t = h_alloc(shape, nd, dt);
  for (int64_t i = 0; i < t.size; i++) t.re[i] = v[i];
  cmx_array a = h_array(&t, H_CONTIG);
  h_free(&t);
  return a;
}

/* Checks r against want (rounded to want's dtype) within rtol = atol =
 * tol; releases r. */
static inline void h_expect(cmx_array r, h_tensor* want, double tol,
                            const char* what) {
  if (!r) return;
  for (int64_t i = 0; i < want->size; i++) {
    want->re[i] = h_round_to(want->re[i], want->dtype);
    if (want->im) want->im[i] = h_round_to(want->im[i], want->dtype);
  }
  h_tensor g = h_read(r);
  CHECK_MSG(h_close(&g, want, tol, tol, what), "%s", what);
  h_free(&g);
  cmx_array_release(r);
}

#endif
