/* The elementwise driver's tiled path (backend/cpu/elementwise.c): layouts
 * where an operand walks the inner dim with a large stride (transposed,
 * permuted, flipped, sliced views) at sizes that take the tiles, with
 * ragged edges, checked element by element against plain C. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/transpose_block.h"
#include "cmx/cmx.h"
#include "test.h"

static cmx_stream S = CMX_STREAM_DEFAULT;

/* a (R, C) float32 with a[i][j] = i * C + j, as a new array. */
static cmx_array iota2(int64_t r, int64_t c, float** data) {
  float* v = malloc((size_t)(r * c) * sizeof *v);
  for (int64_t i = 0; i < r * c; i++) v[i] = (float)i;
  int64_t sh[2] = {r, c};
  cmx_array a = NULL;
  cmx_array_from_data(&a, v, sh, 2, CMX_FLOAT32);
  *data = v;
  return a;
}

/* x.T + y for x (C, R) and y (R, C): out[i][j] = x[j][i] + y[i][j]. */
static void check_transposed_add(int64_t r, int64_t c) {
  float *xv, *yv;
  cmx_array x = iota2(c, r, &xv), y = iota2(r, c, &yv), xt = NULL, o = NULL;
  OK(cmx_transpose(&xt, x, NULL, 0, S));
  OK(cmx_add(&o, xt, y, S));
  const float* p = NULL;
  OK(cmx_array_data(o, (const void**)&p));
  int64_t bad = 0;
  for (int64_t i = 0; p && i < r; i++)
    for (int64_t j = 0; j < c; j++)
      bad += p[i * c + j] != xv[j * r + i] + yv[i * c + j];
  CHECK_MSG(p && bad == 0, "x.T + y (%lld, %lld): %lld wrong", (long long)r,
            (long long)c, (long long)bad);
  cmx_array_release_all((cmx_array[]){x, y, xt, o}, 4);
  free(xv);
  free(yv);
}

/* exp of a flipped transposed view, and where() with a transposed
 * condition: unary and ternary rows through the tiles. */
static void check_unary_ternary(int64_t r, int64_t c) {
  float* xv;
  cmx_array x = iota2(c, r, &xv), xt = NULL, f = NULL, neg = NULL, o = NULL;
  cmx_array half = NULL, cond = NULL, w = NULL;
  int ax = 1;
  OK(cmx_transpose(&xt, x, NULL, 0, S)); /* (r, c) */
  OK(cmx_flip(&f, xt, &ax, 1, S));       /* f[i][j] = x[c-1-j][i] */
  OK(cmx_negative(&neg, f, S));
  OK(cmx_array_from_double(&half, (double)(r * c) / 2, CMX_FLOAT32));
  OK(cmx_less(&cond, xt, half, S));
  OK(cmx_where(&w, cond, neg, xt, S));
  const float *pn = NULL, *pw = NULL;
  OK(cmx_array_data(neg, (const void**)&pn));
  OK(cmx_array_data(w, (const void**)&pw));
  int64_t bad = 0;
  for (int64_t i = 0; pn && pw && i < r; i++)
    for (int64_t j = 0; j < c; j++) {
      float xt_ij = xv[j * r + i], f_ij = xv[(c - 1 - j) * r + i];
      bad += pn[i * c + j] != -f_ij;
      bad += pw[i * c + j] != (xt_ij < (float)(r * c) / 2 ? -f_ij : xt_ij);
    }
  CHECK_MSG(pn && pw && bad == 0, "flip/where (%lld, %lld): %lld wrong",
            (long long)r, (long long)c, (long long)bad);
  cmx_array_release_all((cmx_array[]){x, xt, f, neg, o, half, cond, w}, 8);
  free(xv);
}

/* A 3-d permutation: out = a.transpose(2, 0, 1) * 2 for a (A, B, C). */
static void check_permuted(int64_t A, int64_t B, int64_t C) {
  int64_t n = A * B * C, sh[3] = {A, B, C};
  float* v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = (float)(i % 1000);
  cmx_array a = NULL, t = NULL, two = NULL, o = NULL;
  OK(cmx_array_from_data(&a, v, sh, 3, CMX_FLOAT32));
  int perm[3] = {2, 0, 1};
  OK(cmx_transpose(&t, a, perm, 3, S));
  OK(cmx_array_from_double(&two, 2.0, CMX_FLOAT32));
  OK(cmx_multiply(&o, t, two, S));
  const float* p = NULL;
  OK(cmx_array_data(o, (const void**)&p));
  int64_t bad = 0;
  for (int64_t k = 0; p && k < C; k++)
    for (int64_t i = 0; i < A; i++)
      for (int64_t j = 0; j < B; j++)
        bad += p[(k * A + i) * B + j] != 2 * v[(i * B + j) * C + k];
  CHECK_MSG(p && bad == 0, "permuted (%lld, %lld, %lld): %lld wrong",
            (long long)A, (long long)B, (long long)C, (long long)bad);
  cmx_array_release_all((cmx_array[]){a, t, two, o}, 4);
  free(v);
}

/* The (2, 1, 0) permutation copied: out[k][j][i] = a[i][j][k] (the outer
 * dim closest to the inner one in memory moves next to it). */
static void check_reversed(int64_t A, int64_t B, int64_t C) {
  int64_t n = A * B * C, sh[3] = {A, B, C};
  float* v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = (float)i;
  cmx_array a = NULL, t = NULL, o = NULL;
  OK(cmx_array_from_data(&a, v, sh, 3, CMX_FLOAT32));
  int perm[3] = {2, 1, 0};
  OK(cmx_transpose(&t, a, perm, 3, S));
  OK(cmx_contiguous(&o, t, false, S));
  cmx_array neg = NULL;
  OK(cmx_negative(&neg, t, S));
  const float *p = NULL, *q = NULL;
  OK(cmx_array_data(o, (const void**)&p));
  OK(cmx_array_data(neg, (const void**)&q));
  int64_t bad = 0;
  for (int64_t k = 0; p && q && k < C; k++)
    for (int64_t j = 0; j < B; j++)
      for (int64_t i = 0; i < A; i++) {
        float want = v[(i * B + j) * C + k];
        bad += p[(k * B + j) * A + i] != want;
        bad += q[(k * B + j) * A + i] != -want;
      }
  CHECK_MSG(p && q && bad == 0, "reversed (%lld, %lld, %lld): %lld wrong",
            (long long)A, (long long)B, (long long)C, (long long)bad);
  cmx_array_release_all((cmx_array[]){a, t, o, neg}, 4);
  free(v);
}

static void test_tiles(void) {
  /* Ragged against the 16 x 256 tiles, below and above the thresholds. */
  int64_t shapes[][2] = {{100, 4096}, {17, 300},    {15, 1000},
                         {333, 129},  {1000, 1000}, {16, 256},
                         {40, 50},    {40, 2500},   {33, 1030}};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    check_transposed_add(shapes[i][0], shapes[i][1]);
    check_unary_ternary(shapes[i][0], shapes[i][1]);
  }
  check_permuted(33, 7, 300);
  check_permuted(5, 64, 130);
  check_reversed(40, 30, 50);
  check_reversed(3, 200, 129);
}

/* cmx__transpose_block against a plain loop for every item size, with
 * ragged edges, power-of-two and odd strides (the staged and direct
 * paths), and a negative source stride. Bytes of the destination outside
 * the block must stay untouched. */
static void check_block(int64_t rows, int64_t cols, int64_t dld, int64_t sld,
                        int64_t isz, bool neg_src) {
  int64_t ns = cols * llabs(sld) + rows + 8, nd = rows * dld + 8;
  unsigned char* src = malloc((size_t)(ns * isz));
  unsigned char* dst = malloc((size_t)(nd * isz));
  unsigned char* want = malloc((size_t)(nd * isz));
  for (int64_t i = 0; i < ns * isz; i++) src[i] = (unsigned char)(i * 7 + 3);
  memset(dst, 0xab, (size_t)(nd * isz));
  memset(want, 0xab, (size_t)(nd * isz));
  /* element (j, i) of the source at s0 + (j * sld + i) * isz */
  const unsigned char* s0 = neg_src ? src + (cols - 1) * -sld * isz : src;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      memcpy(want + (i * dld + j) * isz, s0 + (j * sld + i) * isz, (size_t)isz);
  cmx__transpose_block((char*)dst, dld, (const char*)s0, sld, rows, cols, isz);
  CHECK_MSG(memcmp(dst, want, (size_t)(nd * isz)) == 0,
            "transpose_block %lldx%lld dld %lld sld %lld isz %lld differs",
            (long long)rows, (long long)cols, (long long)dld, (long long)sld,
            (long long)isz);
  free(src);
  free(dst);
  free(want);
}

static void test_transpose_block(void) {
  int64_t dims[][2] = {{8, 8}, {16, 64}, {100, 37}, {3, 5}, {33, 130}, {1, 9}};
  int64_t sizes[] = {1, 2, 4, 8};
  for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
    for (size_t z = 0; z < 4; z++) {
      int64_t r = dims[d][0], c = dims[d][1], isz = sizes[z];
      check_block(r, c, c, r, isz, false); /* packed */
      check_block(r, c, 1024 / isz + c, r + 3, isz, false);
      check_block(r, c, 512 * (c / 512 + 1), 1024, isz, false); /* pow2 */
      check_block(r, c, c + 5, -(r + 2), isz, true); /* negative source */
    }
}

/* Transposed operands of every item size through the gathered tiles:
 * out = a.T + a.T (two gathered inputs) for int8, float16, float32,
 * float64 and complex64, checked element by element. */
static void check_dtype_transposed(cmx_dtype dt, int64_t r, int64_t c) {
  int64_t n = r * c, sh[2] = {c, r};
  double* v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = (double)(i % 50);
  cmx_array a = NULL, a32 = NULL, at = NULL, o = NULL, of = NULL;
  cmx_array ct = NULL, cf = NULL; /* the transposing copy (shape_copy.c) */
  OK(cmx_array_from_data(&a, v, sh, 2, CMX_FLOAT64));
  OK(cmx_astype(&a32, a, dt, S));
  OK(cmx_transpose(&at, a32, NULL, 0, S)); /* (r, c), inner stride r */
  OK(cmx_add(&o, at, at, S));
  OK(cmx_astype(&of, o, CMX_FLOAT64, S));
  OK(cmx_contiguous(&ct, at, false, S));
  OK(cmx_astype(&cf, ct, CMX_FLOAT64, S));
  const double *p = NULL, *q = NULL;
  OK(cmx_array_data(of, (const void**)&p));
  OK(cmx_array_data(cf, (const void**)&q));
  int64_t bad = 0;
  for (int64_t i = 0; p && q && i < r; i++)
    for (int64_t j = 0; j < c; j++) {
      double want = 2 * v[j * r + i];
      bad += p[i * c + j] != want;
      bad += q[i * c + j] != v[j * r + i];
    }
  CHECK_MSG(p && q && bad == 0,
            "a.T + a.T / contiguous(a.T) dtype %d (%lld, %lld): %lld wrong",
            (int)dt, (long long)r, (long long)c, (long long)bad);
  cmx_array_release_all((cmx_array[]){a, a32, at, o, of, ct, cf}, 7);
  free(v);
}

/* contiguous() of a 4-d permutation (the strided copy's tile paths and
 * its dim reordering) for 1-, 4- and 8-byte items, against indices. */
static void check_perm_copy(const int64_t* sh, const int* perm, cmx_dtype dt) {
  int64_t n = sh[0] * sh[1] * sh[2] * sh[3];
  double* v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = (double)(i % 97);
  cmx_array a = NULL, ad = NULL, t = NULL, c = NULL, cf = NULL;
  OK(cmx_array_from_data(&a, v, sh, 4, CMX_FLOAT64));
  OK(cmx_astype(&ad, a, dt, S));
  OK(cmx_transpose(&t, ad, perm, 4, S));
  OK(cmx_contiguous(&c, t, false, S));
  OK(cmx_astype(&cf, c, CMX_FLOAT64, S));
  const double* p = NULL;
  OK(cmx_array_data(cf, (const void**)&p));
  int64_t st[4] = {sh[1] * sh[2] * sh[3], sh[2] * sh[3], sh[3], 1}, bad = 0;
  int64_t o[4] = {sh[perm[0]], sh[perm[1]], sh[perm[2]], sh[perm[3]]};
  int64_t k = 0;
  for (int64_t i0 = 0; p && i0 < o[0]; i0++)
    for (int64_t i1 = 0; i1 < o[1]; i1++)
      for (int64_t i2 = 0; i2 < o[2]; i2++)
        for (int64_t i3 = 0; i3 < o[3]; i3++, k++)
          bad += p[k] != v[i0 * st[perm[0]] + i1 * st[perm[1]] +
                           i2 * st[perm[2]] + i3 * st[perm[3]]];
  CHECK_MSG(p && bad == 0, "contiguous perm (%d,%d,%d,%d) dtype %d: %lld wrong",
            perm[0], perm[1], perm[2], perm[3], (int)dt, (long long)bad);
  cmx_array_release_all((cmx_array[]){a, ad, t, c, cf}, 5);
  free(v);
}

static void test_perm_copies(void) {
  int64_t sh[4] = {6, 40, 33, 48};
  int perms[][4] = {{3, 1, 2, 0}, {2, 1, 0, 3}, {3, 2, 1, 0},
                    {0, 3, 1, 2}, {1, 3, 2, 0}, {0, 2, 3, 1}};
  cmx_dtype dts[] = {CMX_UINT8, CMX_FLOAT32, CMX_FLOAT64};
  for (size_t i = 0; i < sizeof perms / sizeof *perms; i++)
    for (size_t d = 0; d < 3; d++) check_perm_copy(sh, perms[i], dts[d]);
  /* short source strides and blocks of 8-31 rows (NHWC <-> NCHW) */
  int64_t nhwc[4] = {5, 24, 20, 16}, small[4] = {3, 9, 11, 12};
  int to_nchw[4] = {0, 3, 1, 2}, to_nhwc[4] = {0, 2, 3, 1};
  for (size_t d = 0; d < 3; d++) {
    check_perm_copy(nhwc, to_nchw, dts[d]);
    check_perm_copy(nhwc, to_nhwc, dts[d]);
    check_perm_copy(small, to_nchw, dts[d]);
    check_perm_copy(small, perms[0], dts[d]);
  }
}

static void test_tile_dtypes(void) {
  cmx_dtype dts[] = {CMX_INT8, CMX_FLOAT16, CMX_FLOAT32, CMX_FLOAT64,
                     CMX_COMPLEX64};
  for (size_t i = 0; i < sizeof dts / sizeof *dts; i++) {
    check_dtype_transposed(dts[i], 100, 4096);
    check_dtype_transposed(dts[i], 37, 1030);
    check_dtype_transposed(dts[i], 512, 64);
    check_dtype_transposed(dts[i], 33, 33);
  }
}

int main(void) {
  RUN(test_tiles);
  RUN(test_transpose_block);
  RUN(test_tile_dtypes);
  RUN(test_perm_copies);
  return test_summary("test_ew_tiles");
}
