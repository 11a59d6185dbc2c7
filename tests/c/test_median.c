/* median and count_nonzero over axis sets (none, one, several, negative,
 * all, an empty list), keepdims on and off, every dtype and three layouts.
 * median's reference gathers each reduced slice in double, sorts it, and
 * takes the middle element or the mean of the two middle ones (NaN when
 * the slice holds one: NumPy's last sorted element), rounded to the result
 * dtype (float32 for integers and bool). count_nonzero's reference counts
 * elements with a nonzero real or imaginary part (NaN counts, -0.0 does not).
 */
#include "harness.h"

#define S CMX_STREAM_DEFAULT

typedef struct {
  int naxes; /* -1: NULL (all axes) */
  int axes[3];
} axes_t;

/* Output position of flat input index i: the kept coordinates. Writes
 * reduced[d] flags from the normalised axes. */
static void norm_axes(const axes_t* ax, int nd, bool* reduced) {
  for (int d = 0; d < nd; d++) reduced[d] = ax->naxes < 0;
  for (int i = 0; i < ax->naxes; i++)
    reduced[ax->axes[i] < 0 ? ax->axes[i] + nd : ax->axes[i]] = true;
}

static int cmp_dbl(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Complex values sort by (real, imag): pairs. */
static int cmp_pair(const void* a, const void* b) {
  const double *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Reference results: median (which = 0) or count_nonzero (which = 1). */
static h_tensor reference(int which, const h_tensor* x, const axes_t* ax,
                          bool keepdims) {
  bool reduced[CMX_MAX_NDIM];
  norm_axes(ax, x->ndim, reduced);
  int64_t osh[CMX_MAX_NDIM], ksh[CMX_MAX_NDIM];
  int ond = 0;
  int64_t count = 1, outs = 1;
  for (int d = 0; d < x->ndim; d++) {
    ksh[d] = reduced[d] ? 1 : x->shape[d];
    if (!reduced[d]) osh[ond++] = x->shape[d];
    if (reduced[d])
      count *= x->shape[d];
    else
      outs *= x->shape[d];
  }
  cmx_dtype odt = which                            ? CMX_INT32
                  : cmx_dtype_is_inexact(x->dtype) ? x->dtype
                                                   : CMX_FLOAT32;
  h_tensor w = keepdims ? h_alloc(ksh, x->ndim, odt) : h_alloc(osh, ond, odt);
  double* vals = malloc(sizeof(double) * 2 * (size_t)(count + 1));
  int64_t* fill = calloc((size_t)(outs + 1), sizeof(int64_t));
  double** slices = malloc(sizeof(double*) * (size_t)(outs + 1));
  for (int64_t o = 0; o < outs; o++)
    slices[o] = malloc(sizeof(double) * 2 * (size_t)(count + 1));
  /* distribute every element to its output slot */
  int64_t idx[CMX_MAX_NDIM] = {0};
  for (int64_t i = 0; i < x->size; i++) {
    int64_t o = 0;
    for (int d = 0; d < x->ndim; d++)
      if (!reduced[d]) o = o * x->shape[d] + idx[d];
    double* sl = slices[o] + 2 * fill[o]++;
    sl[0] = x->re[i];
    sl[1] = x->im ? x->im[i] : 0;
    for (int d = x->ndim - 1; d >= 0; d--) {
      if (++idx[d] < x->shape[d]) break;
      idx[d] = 0;
    }
  }
  for (int64_t o = 0; o < outs; o++) {
    double* sl = slices[o];
    if (which) {
      int64_t c = 0;
      for (int64_t k = 0; k < count; k++)
        c += sl[2 * k] != 0 || sl[2 * k + 1] != 0;
      w.re[o] = (double)c;
      continue;
    }
    bool nan = false;
    for (int64_t k = 0; k < count; k++)
      nan |= sl[2 * k] != sl[2 * k] || sl[2 * k + 1] != sl[2 * k + 1];
    double re, im = 0;
    if (nan && x->im) {
      /* NumPy returns the slice's last sorted element: complex NaN classes
       * order imag NaN (by real) < real NaN (by imag) < both */
      int best = -1;
      re = im = 0;
      for (int64_t k = 0; k < count; k++) {
        double r0 = sl[2 * k], i0 = sl[2 * k + 1];
        int c = (r0 != r0) * 2 + (i0 != i0);
        double key = c == 1 ? r0 : c == 2 ? i0 : 0;
        double cur = best == 1 ? re : best == 2 ? im : 0;
        if (c > best || (c == best && c > 0 && key > cur)) {
          best = c;
          re = r0;
          im = i0;
        }
      }
    } else if (nan) {
      re = im = NAN;
    } else if (x->im) {
      qsort(sl, (size_t)count, 2 * sizeof(double), cmp_pair);
      int64_t a = (count - 1) / 2, b = count / 2;
      re = (sl[2 * a] + sl[2 * b]) / 2;
      im = (sl[2 * a + 1] + sl[2 * b + 1]) / 2;
    } else {
      for (int64_t k = 0; k < count; k++) vals[k] = sl[2 * k];
      qsort(vals, (size_t)count, sizeof(double), cmp_dbl);
      re = (vals[(count - 1) / 2] + vals[count / 2]) / 2;
    }
    w.re[o] = h_round_to(re, odt);
    if (w.im) w.im[o] = nan && !x->im ? 0 : h_round_to(im, odt);
  }
  for (int64_t o = 0; o < outs; o++) free(slices[o]);
  free(slices);
  free(fill);
  free(vals);
  return w;
}

static const axes_t axes_list[] = {{-1, {0}},     {1, {0}},     {1, {-1}},
                                   {2, {0, 2}},   {2, {-1, 1}}, {0, {0}},
                                   {3, {2, 0, 1}}};
#define N_AXES ((int)(sizeof axes_list / sizeof axes_list[0]))

static void run(int which) {
  const h_shape shapes[] = {{3, {3, 4, 5}}, {3, {2, 6, 1}}, {3, {4, 1, 7}},
                            {3, {2, 0, 3}}, {3, {1, 1, 1}}, {3, {9, 2, 40}}};
  for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++) {
    cmx_dtype dt = H_ALL[di];
    for (int si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++) {
      const h_shape* sh = &shapes[si];
      h_tensor x = h_random(sh->dims, 3, dt, -3, 3, 7 + si * 5 + di);
      for (int64_t i = 0; i < x.size; i++) { /* ties and zeros */
        if (cmx_dtype_is_inexact(dt)) x.re[i] = h_round_to(floor(x.re[i]), dt);
        if (cmx_dtype_is_inexact(dt) && i % 29 == 5) x.re[i] = -0.0;
        if (cmx_dtype_is_inexact(dt) && si % 2 && i % 31 == 3) x.re[i] = NAN;
        if (x.im && i % 3 == 0) x.im[i] = 0;
      }
      for (int ai = 0; ai < N_AXES; ai++) {
        const axes_t* ax = &axes_list[ai];
        bool reduced[3];
        norm_axes(ax, 3, reduced);
        int64_t count = 1;
        for (int d = 0; d < 3; d++)
          if (reduced[d]) count *= sh->dims[d];
        for (int kd = 0; kd < 2; kd++) {
          for (int lay = 0; lay < H_NUM_LAYOUTS; lay++) {
            char what[160], ss[64];
            snprintf(what, sizeof what, "%s %s %s axes#%d keepdims=%d %s",
                     which ? "count_nonzero" : "median", cmx_dtype_name(dt),
                     cmx__shape_str(sh->dims, 3, ss, sizeof ss), ai, kd,
                     h_layout_names[lay]);
            cmx_array a = h_array(&x, (h_layout)lay), r = NULL;
            const int* axp = ax->naxes < 0 ? NULL : ax->axes;
            int nax = ax->naxes < 0 ? 0 : ax->naxes;
            cmx_status st = which ? cmx_count_nonzero(&r, a, axp, nax, kd, S)
                                  : cmx_median(&r, a, axp, nax, kd, S);
            if (!which && count == 0) {
              CHECK_MSG(st == CMX_ERR_VALUE &&
                            strstr(cmx_last_error(), "[median] Cannot"),
                        "%s: %s", what, cmx_last_error());
            } else {
              CHECK_MSG(st == CMX_OK, "%s: %s", what, cmx_last_error());
              h_tensor want = reference(which, &x, ax, kd);
              h_tensor g = h_read(r);
              double tol = h_tol(want.dtype);
              CHECK(h_close(&g, &want, tol, tol, what));
              h_free(&g);
              h_free(&want);
            }
            cmx_array_release(a);
            cmx_array_release(r);
          }
        }
      }
      h_free(&x);
    }
  }
}

static void test_median(void) {
  run(0);
}
static void test_count_nonzero(void) {
  run(1);
}

static void test_cases(void) {
  /* huge values: the mean of the middle two must not overflow */
  float v[4] = {3e38f, 3.2e38f, -1.0f, 3.4e38f};
  int64_t n = 4;
  cmx_array a, r;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_FLOAT32));
  OK(cmx_median(&r, a, NULL, 0, false, S));
  float g = 0;
  CHECK(cmx_array_ndim(r) == 0);
  OK(cmx_array_copy_to(r, &g, sizeof g));
  CHECK(fabsf(g - 3.1e38f) < 1e32f);
  cmx_array_release_all((cmx_array[]){a, r}, 2);
  /* errors name the op */
  int64_t sh[2] = {2, 3};
  OK(cmx_zeros(&a, sh, 2, CMX_INT32, S));
  r = NULL;
  FAILS(cmx_median(&r, a, (int[]){2}, 1, false, S), CMX_ERR_INDEX,
        "[median] axis 2 is out of bounds");
  FAILS(cmx_median(&r, a, (int[]){0, -2}, 2, false, S), CMX_ERR_VALUE,
        "[median] received duplicate axis");
  FAILS(cmx_count_nonzero(&r, a, (int[]){-3}, 1, false, S), CMX_ERR_INDEX,
        "[count_nonzero] axis -3 is out of bounds");
  CHECK(r == NULL);
  OK(cmx_count_nonzero(&r, a, NULL, 0, true, S));
  CHECK(cmx_array_dtype(r) == CMX_INT32 && cmx_array_ndim(r) == 2);
  cmx_array_release_all((cmx_array[]){a, r}, 2);
}

int main(void) {
  RUN(test_median);
  RUN(test_count_nonzero);
  RUN(test_cases);
  return test_summary("test_median");
}
