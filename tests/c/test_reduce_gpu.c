/* Reductions, softmax and scans on the shapes that select the GPU
 * kernels' paths (src/backend/cuda/reduce.c, softmax.c, scan.c): rows of
 * 1 to 2^20 elements (warp and block rows, split passes), columns
 * (reduced axes outermost), mixed axes of 3-D arrays, full reductions of
 * 2^22 + 3 elements, transposed, sliced and broadcast inputs, scans of
 * long rows (the look-back tiles) and along outer axes.
 *
 * Each case runs on every device (harness.h's h_run_case). The expected
 * values come from a double-precision reference for sums, means,
 * max/min, all/any, argmax/argmin, cumsum and cummax; the other ops
 * (logsumexp, var, softmax, cumprod, logcumsumexp) are checked against
 * the CPU's result, whose kernels test_reduce.c and test_scan.c check
 * against references. GPU results must also match the CPU's: exactly for
 * integer, bool and index results, within the tolerance for floats.
 */
#include "harness.h"

#define S CMX_STREAM_DEFAULT

/* ---------------- the cases ---------------- */

typedef enum {
  OP_SUM,
  OP_MAX,
  OP_MIN,
  OP_MEAN,
  OP_ALL,
  OP_ANY,
  OP_PROD,
  OP_ARGMAX,
  OP_ARGMIN,
  OP_LSE,
  OP_VAR,
  OP_STD,
  OP_SOFTMAX,
  OP_CUMSUM,
  OP_CUMMAX,
  OP_CUMPROD,
  OP_LCSE,
  OP_CUMMIN,
  OP_NUM
} op_t;
static const char* const op_names[OP_NUM] = {
    "sum",     "max",    "min",    "mean",    "all",          "any",
    "prod",    "argmax", "argmin", "lse",     "var",          "std",
    "softmax", "cumsum", "cummax", "cumprod", "logcumsumexp", "cummin"};

enum { V_PLAIN, V_TRANSPOSED, V_SLICED, V_BCAST };
static const char* const view_names[] = {"contiguous", "transposed", "sliced",
                                         "broadcast"};

typedef struct {
  op_t op;
  const h_tensor* x;
  int view;
  int axes[CMX_MAX_NDIM], naxes; /* naxes < 0: all (NULL) */
  int ddof;
  bool reverse, inclusive;
  bool cpu_ref; /* checked against the CPU alone (NaN inputs) */
} case_t;

/* x as the case's view: plain; the transpose of x's reversed-axes
 * storage (same logical values, column-major memory); every other
 * element of a larger array; or a broadcast of its first row. */
static cmx_array make_input(const case_t* c, cmx_stream s) {
  const h_tensor* x = c->x;
  if (c->view == V_TRANSPOSED && x->ndim >= 2) return h_array(x, H_TRANSPOSED);
  if (c->view == V_SLICED) return h_array(x, H_STRIDED);
  cmx_array a = h_array(x, H_CONTIG);
  if (c->view == V_BCAST && x->ndim >= 2) {
    int64_t start[CMX_MAX_NDIM] = {0}, stop[CMX_MAX_NDIM];
    for (int d = 0; d < x->ndim; d++) stop[d] = x->shape[d];
    stop[0] = 1;
    cmx_array row = NULL, b = NULL;
    OK(cmx_slice(&row, a, start, stop, NULL, s));
    OK(cmx_broadcast_to(&b, row, x->shape, x->ndim, s));
    cmx_array_release(row);
    cmx_array_release(a);
    return b;
  }
  return a;
}

static cmx_status make(void* ctx, cmx_stream s, cmx_array* out) {
  const case_t* c = ctx;
  cmx_array a = make_input(c, s);
  const int* ax = c->naxes < 0 ? NULL : c->axes;
  int n = c->naxes < 0 ? 0 : c->naxes;
  cmx_status st;
  switch (c->op) {
    case OP_SUM:
      st = cmx_sum(out, a, ax, n, false, s);
      break;
    case OP_MAX:
      st = cmx_max(out, a, ax, n, false, s);
      break;
    case OP_MIN:
      st = cmx_min(out, a, ax, n, false, s);
      break;
    case OP_MEAN:
      st = cmx_mean(out, a, ax, n, false, s);
      break;
    case OP_ALL:
      st = cmx_all(out, a, ax, n, false, s);
      break;
    case OP_ANY:
      st = cmx_any(out, a, ax, n, false, s);
      break;
    case OP_PROD:
      st = cmx_prod(out, a, ax, n, false, s);
      break;
    case OP_ARGMAX:
      st = cmx_argmax(out, a, ax, false, s);
      break;
    case OP_ARGMIN:
      st = cmx_argmin(out, a, ax, false, s);
      break;
    case OP_LSE:
      st = cmx_logsumexp(out, a, ax, n, false, s);
      break;
    case OP_VAR:
      st = cmx_var(out, a, ax, n, false, c->ddof, s);
      break;
    case OP_STD:
      st = cmx_std(out, a, ax, n, false, c->ddof, s);
      break;
    case OP_SOFTMAX:
      st = cmx_softmax(out, a, ax, n, true, s);
      break;
    case OP_CUMSUM:
      st = cmx_cumsum(out, a, ax, c->reverse, c->inclusive, s);
      break;
    case OP_CUMMAX:
      st = cmx_cummax(out, a, ax, c->reverse, c->inclusive, s);
      break;
    case OP_CUMPROD:
      st = cmx_cumprod(out, a, ax, c->reverse, c->inclusive, s);
      break;
    case OP_CUMMIN:
      st = cmx_cummin(out, a, ax, c->reverse, c->inclusive, s);
      break;
    default:
      st = cmx_logcumsumexp(out, a, ax, c->reverse, c->inclusive, s);
  }
  cmx_array_release(a);
  return st;
}

/* The values the case's view holds (row-major, as a fresh tensor). */
static h_tensor view_values(const case_t* c) {
  h_tensor v = h_alloc(c->x->shape, c->x->ndim, c->x->dtype);
  int64_t row = c->x->ndim ? c->x->size / c->x->shape[0] : 1;
  for (int64_t i = 0; i < v.size; i++) {
    int64_t j = c->view == V_BCAST && c->x->ndim >= 2 ? i % row : i;
    v.re[i] = c->x->re[j];
    if (v.im) v.im[i] = c->x->im[j];
  }
  return v;
}

/* The smallest value of dtype dt (-inf for floats). */
static double lowest(cmx_dtype dt) {
  switch (dt) {
    case CMX_INT8:
      return INT8_MIN;
    case CMX_INT16:
      return INT16_MIN;
    case CMX_INT32:
      return INT32_MIN;
    case CMX_INT64:
      return (double)INT64_MIN;
    default:
      return cmx_dtype_is_inexact(dt) ? -INFINITY : 0;
  }
}

/* The reference in double for the ops that have one (false: none). */
static bool reference(const case_t* c, cmx_dtype odt, h_tensor* want) {
  op_t op = c->op;
  if (op == OP_LSE || op == OP_VAR || op == OP_STD || op == OP_SOFTMAX ||
      op == OP_CUMPROD || op == OP_LCSE || op == OP_PROD || op == OP_CUMMIN ||
      c->cpu_ref || c->x->dtype == CMX_COMPLEX64)
    return false;
  h_tensor v = view_values(c);
  int nd = v.ndim;
  bool red[CMX_MAX_NDIM] = {false};
  if (op == OP_CUMSUM || op == OP_CUMMAX) {
    int ax = c->axes[0] < 0 ? c->axes[0] + nd : c->axes[0];
    int64_t n = v.shape[ax], inner = 1;
    for (int d = ax + 1; d < nd; d++) inner *= v.shape[d];
    *want = h_alloc(v.shape, nd, odt);
    for (int64_t o = 0; o < v.size / (n * inner); o++)
      for (int64_t k = 0; k < inner; k++) {
        double acc = op == OP_CUMSUM ? 0 : -INFINITY;
        for (int64_t i = 0; i < n; i++) {
          int64_t p = c->reverse ? n - 1 - i : i;
          int64_t at = (o * n + p) * inner + k;
          double x = v.re[at], prev = acc;
          acc = op == OP_CUMSUM ? acc + x : (x > acc ? x : acc);
          want->re[at] = h_round_to(c->inclusive ? acc : prev, odt);
          if (!c->inclusive && i == 0 && op == OP_CUMMAX)
            want->re[at] = lowest(odt); /* the identity */
        }
      }
    h_free(&v);
    return true;
  }
  for (int i = 0; i < (c->naxes < 0 ? nd : c->naxes); i++)
    red[c->naxes < 0 ? i : (c->axes[i] + nd) % nd] = true;
  int64_t oshape[CMX_MAX_NDIM];
  int ond = 0;
  for (int d = 0; d < nd; d++)
    if (!red[d]) oshape[ond++] = v.shape[d];
  *want = h_alloc(oshape, ond, odt);
  double* best = calloc((size_t)(want->size ? want->size : 1), sizeof(double));
  int64_t* cnt = calloc((size_t)(want->size ? want->size : 1), sizeof(int64_t));
  for (int64_t i = 0; i < v.size; i++) {
    /* the output index (kept dims) and the position along the reduced
     * dims (row-major), from i's coordinates */
    int64_t rem = i, o = 0, om = 1, r = 0, rm = 1;
    for (int d = nd - 1; d >= 0; d--) {
      int64_t k = rem % v.shape[d];
      rem /= v.shape[d];
      if (red[d])
        r += k * rm, rm *= v.shape[d];
      else
        o += k * om, om *= v.shape[d];
    }
    double x = v.re[i], *w = &want->re[o];
    bool first = cnt[o]++ == 0;
    switch (op) {
      case OP_SUM:
      case OP_MEAN:
        *w += x;
        break;
      case OP_MAX:
        if (first || x > *w || x != x) *w = (*w != *w) ? *w : x;
        break;
      case OP_MIN:
        if (first || x < *w || x != x) *w = (*w != *w) ? *w : x;
        break;
      case OP_ALL:
        *w = (first ? 1 : *w) && x != 0;
        break;
      case OP_ANY:
        *w = *w || x != 0;
        break;
      case OP_ARGMAX:
      case OP_ARGMIN: {
        bool better = op == OP_ARGMAX ? x > best[o] : x < best[o];
        if (first || better) best[o] = x, *w = (double)r;
        break;
      }
      default:
        break;
    }
  }
  for (int64_t k = 0; k < want->size; k++) {
    if (op == OP_MEAN) want->re[k] /= (double)cnt[k];
    want->re[k] = h_round_to(want->re[k], odt);
  }
  free(best);
  free(cnt);
  h_free(&v);
  return true;
}

static double tolerance(op_t op, cmx_dtype odt) {
  double t = odt == CMX_FLOAT16    ? 1e-2
             : odt == CMX_BFLOAT16 ? 4e-2
             : odt == CMX_FLOAT64  ? 1e-9
                                   : 2e-4;
  if (!cmx_dtype_is_inexact(odt)) return 0;
  if (op == OP_VAR || op == OP_STD || op == OP_CUMPROD) t *= 4;
  return t;
}

static int g_fails;

static void run(case_t c) {
  if (!h_shard_take()) return; /* another process's case */
  char what[300], shs[128], axs[64] = "all";
  if (c.naxes >= 0) {
    int w = 0;
    axs[0] = 0;
    for (int i = 0; i < c.naxes; i++)
      w += snprintf(axs + w, sizeof axs - (size_t)w, "%s%d", i ? "," : "",
                    c.axes[i]);
  }
  snprintf(what, sizeof what, "%s %s %s %s axes=%s%s%s", op_names[c.op],
           cmx_dtype_name(c.x->dtype),
           cmx__shape_str(c.x->shape, c.x->ndim, shs, sizeof shs),
           view_names[c.view], axs, c.reverse ? " reverse" : "",
           c.op >= OP_CUMSUM && !c.inclusive ? " exclusive" : "");
  if (c.cpu_ref) strncat(what, " (nan, ties)", sizeof what - strlen(what) - 1);
  /* the CPU's result gives the output dtype (and the values when there
   * is no reference) */
  cmx_array r = NULL;
  if (make(&c, cmx_stream_on(cmx_device_cpu()), &r) != CMX_OK) {
    fprintf(stderr, "FAIL %s on cpu: %s\n", what, cmx_last_error());
    CHECK(false);
    g_fails++;
    return;
  }
  h_tensor cpu = h_read(r);
  cmx_array_release(r);
  h_tensor want;
  double tol = tolerance(c.op, cpu.dtype);
  if (!reference(&c, cpu.dtype, &want)) {
    want = cpu;
    memset(&cpu, 0, sizeof cpu);
  }
  g_fails += h_run_case(what, make, &c, &want, tol);
  h_free(&want);
  h_free(&cpu);
}

/* Random values in [lo, hi) (unsigned dtypes from 0). */
static h_tensor tensor(const int64_t* shape, int nd, cmx_dtype dt, double lo,
                       double hi, uint64_t seed) {
  if (dt == CMX_BOOL || (cmx_dtype_is_integer(dt) && !cmx_dtype_is_signed(dt)))
    lo = lo < 0 ? 0 : lo;
  return h_random(shape, nd, dt, lo, hi, seed);
}

/* ---------------- tests ---------------- */

/* Rows of 1 .. 2^20 over the last axis, and the same lengths as columns
 * (axis 0), for the plain reductions and arg reductions. */
static void test_rows_and_columns(void) {
  static const int64_t lens[] = {1, 7, 33, 1000, 4099, 65539, 1 << 20};
  static const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT16, CMX_INT32,
                                  CMX_UINT8,   CMX_INT64,   CMX_BFLOAT16};
  for (int li = 0; li < 7; li++)
    for (int di = 0; di < 6; di++) {
      int64_t L = lens[li], outer = L >= 65536 ? 3 : 37;
      cmx_dtype dt = dts[di];
      bool f = cmx_dtype_is_inexact(dt);
      int64_t sr[2] = {outer, L}, sc[2] = {L, outer};
      h_tensor xr = tensor(sr, 2, dt, f ? 0 : -50, f ? 1 : 50, 11 + li);
      h_tensor xc = tensor(sc, 2, dt, f ? 0 : -50, f ? 1 : 50, 17 + li);
      for (op_t op = OP_SUM; op <= OP_ARGMIN; op++) {
        if (op == OP_PROD) continue;
        run((case_t){op, &xr, V_PLAIN, {-1}, 1, 0, false, true, false});
        run((case_t){op, &xc, V_PLAIN, {0}, 1, 0, false, true, false});
      }
      h_free(&xr);
      h_free(&xc);
    }
}

/* Every dtype, every reduce kind, several axes sets of a 3-D array in
 * four views (contiguous, transposed, sliced, broadcast). */
static void test_axes_and_views(void) {
  static const int sets[][3] = {{0}, {1}, {2}, {0, 2}, {0, 1}, {1, 2}};
  static const int nsets[] = {1, 1, 1, 2, 2, 2};
  int64_t sh[3] = {6, 7, 300};
  for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++) {
    cmx_dtype dt = H_ALL[di];
    bool f = cmx_dtype_is_inexact(dt);
    h_tensor x = tensor(sh, 3, dt, f ? 0 : -20, f ? 1 : 20, 5 + di);
    h_tensor xp = tensor(sh, 3, dt, 0.995, 1.004, 9 + di);
    for (int v = 0; v < 4; v++)
      for (int si = 0; si <= 6; si++) {
        case_t c = {OP_SUM, &x,    v,    {0},  si == 6 ? -1 : nsets[si],
                    0,      false, true, false};
        if (si < 6) memcpy(c.axes, sets[si], sizeof sets[si]);
        for (op_t op = OP_SUM; op <= OP_PROD; op++) {
          if (op == OP_PROD && dt == CMX_COMPLEX64) continue;
          c.op = op;
          c.x = op == OP_PROD ? &xp : &x;
          run(c);
        }
        c.x = &x;
        if (cmx_dtype_is_floating(dt)) {
          c.op = OP_LSE;
          run(c);
          c.op = OP_SOFTMAX;
          run(c);
        }
        if (f) {
          c.op = OP_VAR;
          c.ddof = 1;
          run(c);
          c.op = OP_STD;
          c.ddof = 0;
          run(c);
        }
        if (c.naxes == 1 || c.naxes < 0) {
          c.op = OP_ARGMAX;
          run(c);
          c.op = OP_ARGMIN;
          run(c);
        }
      }
    h_free(&x);
    h_free(&xp);
  }
}

/* Full reductions of 2^22 + 3 elements (two passes), and arg reductions
 * with ties (a few distinct values: the first index must win). */
static void test_full_and_ties(void) {
  int64_t n = (1 << 22) + 3;
  h_tensor x = tensor(&n, 1, CMX_FLOAT32, 0, 1, 3);
  for (op_t op = OP_SUM; op <= OP_ARGMIN; op++)
    if (op != OP_PROD)
      run((case_t){op, &x, V_PLAIN, {0}, -1, 0, false, true, false});
  run((case_t){OP_LSE, &x, V_PLAIN, {0}, -1, 0, false, true, false});
  run((case_t){OP_VAR, &x, V_PLAIN, {0}, -1, 1, false, true, false});
  h_free(&x);
  int64_t sh[2] = {300, 4097};
  h_tensor t = tensor(sh, 2, CMX_INT8, 0, 3, 4);
  for (int v = 0; v < 3; v++)
    for (int ax = -1; ax < 2; ax++) {
      case_t c = {OP_ARGMAX, &t,    v,    {ax}, ax < 0 ? -1 : 1,
                  0,         false, true, false};
      run(c);
      c.op = OP_ARGMIN;
      run(c);
    }
  h_free(&t);
}

/* Softmax and logsumexp rows from 1 to 2^17 (warp rows, register blocks,
 * looped blocks), float16 to float64. */
static void test_softmax_rows(void) {
  static const int64_t lens[] = {1, 5, 32, 500, 777, 4096, 16385, 1 << 17};
  for (int li = 0; li < 8; li++)
    for (int di = 0; H_FLOATS[di] != CMX_NUM_DTYPES; di++) {
      int64_t sh[2] = {lens[li] > 5000 ? 3 : 65, lens[li]};
      h_tensor x = tensor(sh, 2, H_FLOATS[di], -8, 8, 21 + li);
      run((case_t){OP_SOFTMAX, &x, V_PLAIN, {1}, 1, 0, false, true, false});
      run((case_t){
          OP_SOFTMAX, &x, V_TRANSPOSED, {1}, 1, 0, false, true, false});
      run((case_t){OP_LSE, &x, V_PLAIN, {1}, 1, 0, false, true, false});
      h_free(&x);
    }
}

/* Scans: long rows (one tile, many tiles with look-back), many short
 * rows, outer axes, every direction, transposed inputs. */
static void test_scans(void) {
  static const int64_t lens[] = {1, 20, 33, 4096, 70001, 1 << 20};
  static const cmx_dtype dts[] = {CMX_FLOAT32, CMX_INT32, CMX_UINT8,
                                  CMX_FLOAT16, CMX_INT64, CMX_FLOAT64};
  for (int li = 0; li < 6; li++)
    for (int di = 0; di < 6; di++) {
      cmx_dtype dt = dts[di];
      bool f = cmx_dtype_is_inexact(dt);
      /* float16 sums stay below its largest value (65504) */
      double hi = dt == CMX_FLOAT16 ? 0.05 : f ? 1 : 9;
      int64_t L = lens[li], outer = L > 5000 ? 2 : 9;
      int64_t sr[2] = {outer, L}, sc[2] = {L, outer};
      h_tensor xr = tensor(sr, 2, dt, f ? 0 : -9, hi, 31 + li);
      h_tensor xc = tensor(sc, 2, dt, f ? 0 : -9, hi, 37 + li);
      for (int m = 0; m < 4; m++) {
        bool rev = m & 1, incl = !(m & 2);
        for (op_t op = OP_CUMSUM; op <= OP_CUMMAX; op++) {
          run((case_t){op, &xr, V_PLAIN, {1}, 1, 0, rev, incl, false});
          run((case_t){op, &xc, V_PLAIN, {0}, 1, 0, rev, incl, false});
          run((case_t){op, &xr, V_TRANSPOSED, {1}, 1, 0, rev, incl, false});
        }
        if (f && L <= 4096) {
          run((case_t){OP_LCSE, &xr, V_PLAIN, {1}, 1, 0, rev, incl, false});
          run((case_t){OP_CUMPROD, &xc, V_PLAIN, {0}, 1, 0, rev, incl, false});
        }
      }
      h_free(&xr);
      h_free(&xc);
    }
  /* 2^22 + 5 floats: about a thousand tiles chained by look-back */
  int64_t n = (1 << 22) + 5;
  h_tensor x = tensor(&n, 1, CMX_FLOAT32, 0, 1, 41);
  run((case_t){OP_CUMSUM, &x, V_PLAIN, {0}, 1, 0, false, true, false});
  run((case_t){OP_CUMMAX, &x, V_PLAIN, {0}, 1, 0, true, false, false});
  h_free(&x);
  int64_t ni = (1 << 21) + 1;
  h_tensor xi = tensor(&ni, 1, CMX_INT32, -1000, 1000, 43);
  run((case_t){OP_CUMSUM, &xi, V_PLAIN, {0}, 1, 0, true, true, false});
  h_free(&xi);
}

/* Arg reductions and scans of every dtype on rows of 1, 31, 1025 and
 * 2^20 + 3 elements: few distinct values (ties: the first index wins),
 * NaN in the second row of floats (it wins argmax and argmin and
 * propagates through cummax / cummin / cumsum), every scan kind and
 * direction; checked against the CPU (exact for indices, integers and
 * max / min). */
static void test_edges_every_dtype(void) {
  static const int64_t lens[] = {1, 31, 1025, (1 << 20) + 3};
  for (int li = 0; li < 4; li++)
    for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++) {
      cmx_dtype dt = H_ALL[di];
      bool f = cmx_dtype_is_inexact(dt), lng = li == 3;
      int64_t L = lens[li], sh[2] = {lng ? 2 : 5, L};
      /* halves in [-3, 3): ties everywhere; scans of sums in [0, 1) */
      h_tensor t = tensor(sh, 2, dt, -3, 3, 51 + li * 16 + di);
      h_tensor p = tensor(sh, 2, dt, 0, f ? (dt == CMX_FLOAT16 ? 0.05 : 1) : 9,
                          53 + li * 16 + di);
      for (int64_t i = 0; i < t.size; i++) {
        t.re[i] = floor(t.re[i] * 2) / 2;
        if (t.im) t.im[i] = floor(t.im[i] * 2) / 2;
        if (f && i >= L && (i - L) % 97 == 13) t.re[i] = p.re[i] = NAN;
      }
      for (op_t op = OP_ARGMAX; op <= OP_ARGMIN; op++)
        run((case_t){op, &t, V_PLAIN, {1}, 1, 0, false, true, true});
      for (int m = 0; m < 4; m++) {
        bool rev = m & 1, incl = !(m & 2);
        if (dt != CMX_COMPLEX64) {
          run((case_t){OP_CUMMAX, &t, V_PLAIN, {1}, 1, 0, rev, incl, true});
          run((case_t){OP_CUMMIN, &t, V_PLAIN, {1}, 1, 0, rev, incl, true});
        }
        if (dt != CMX_BOOL)
          run((case_t){OP_CUMSUM, &p, V_PLAIN, {1}, 1, 0, rev, incl, true});
        /* (complex products of 1025 halves overflow: inf / NaN parts) */
        if (!lng && dt != CMX_BOOL && (dt != CMX_COMPLEX64 || li < 2))
          run((case_t){OP_CUMPROD,
                       dt == CMX_COMPLEX64 || !f ? &t : &p,
                       V_PLAIN,
                       {1},
                       1,
                       0,
                       rev,
                       incl,
                       true});
        if (!lng && cmx_dtype_is_floating(dt))
          run((case_t){OP_LCSE, &t, V_PLAIN, {1}, 1, 0, rev, incl, true});
      }
      /* smaller tiles than the default (256 threads: more look-backs) */
      if (lng && (dt == CMX_FLOAT32 || dt == CMX_INT64)) {
        setenv("CMX_GPU_SCAN_THREADS", "256", 1);
        run((case_t){OP_CUMSUM, &p, V_PLAIN, {1}, 1, 0, false, true, true});
        run((case_t){OP_CUMMAX, &t, V_PLAIN, {1}, 1, 0, true, false, true});
        unsetenv("CMX_GPU_SCAN_THREADS");
      }
      h_free(&t);
      h_free(&p);
    }
}

int main(void) {
  RUN(test_edges_every_dtype);
  printf("test_edges_every_dtype done: %d failed so far\n", t_failed);
  fflush(stdout);
  RUN(test_rows_and_columns);
  RUN(test_axes_and_views);
  RUN(test_full_and_ties);
  RUN(test_softmax_rows);
  RUN(test_scans);
  return test_summary("test_reduce_gpu");
}
