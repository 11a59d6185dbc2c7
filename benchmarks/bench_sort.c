/* Sort benchmarks, each cmx figure next to a C baseline measured in the
 * same run:
 *
 *   sort 16M f32          cmx_sort vs qsort (float comparator), and vs a
 *                         memcpy of the same bytes (the floor of any sort)
 *   argsort 16M f32       cmx_argsort vs qsort of (value, index) pairs
 *   sort 4096 x 4096 f32  rows of 4096 along the last axis, and along
 *                         axis 0 (strided rows)
 *   partition 16M f32     kth = n / 2
 *   cumsum 16M f32        vs a plain C loop
 *
 * Inputs are uniform random float32 in [-1, 1). Every figure is the median
 * of several repetitions (cmx timings include building the node and
 * evaluating it; outputs are released each time). qsort is slow, so it
 * runs fewer times. NumPy's np.sort is measured separately (see the
 * report).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"
#include "cmx/cmx.h"

#define S CMX_STREAM_DEFAULT
#define N (16 * 1024 * 1024)

typedef struct {
  cmx_array a;
  int axis;
  int kind; /* 0 sort, 1 argsort, 2 partition, 3 cumsum */
  const float* src;
  float* buf;
  size_t n;
} ctx_t;

static void run_cmx(void* p) {
  ctx_t* c = p;
  cmx_array r = NULL;
  cmx_status st;
  switch (c->kind) {
    case 0:
      st = cmx_sort(&r, c->a, &c->axis, S);
      break;
    case 1:
      st = cmx_argsort(&r, c->a, &c->axis, S);
      break;
    case 2:
      st = cmx_partition(&r, c->a, (int)(c->n / 2), &c->axis, S);
      break;
    default:
      st = cmx_cumsum(&r, c->a, &c->axis, false, true, S);
      break;
  }
  if (st == CMX_OK) st = cmx_eval(&r, 1);
  if (st != CMX_OK) {
    fprintf(stderr, "cmx failed: %s\n", cmx_last_error());
    exit(1);
  }
  cmx_array_release(r);
}

static int cmp_float(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return x < y ? -1 : x > y;
}
static void run_qsort(void* p) {
  ctx_t* c = p;
  memcpy(c->buf, c->src, c->n * sizeof(float));
  qsort(c->buf, c->n, sizeof(float), cmp_float);
}

typedef struct {
  float v;
  uint32_t i;
} pair;
static int cmp_pair(const void* a, const void* b) {
  const pair *x = a, *y = b;
  if (x->v != y->v) return x->v < y->v ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}
static void run_qsort_pairs(void* p) {
  ctx_t* c = p;
  pair* q = (pair*)(void*)c->buf;
  for (size_t i = 0; i < c->n; i++) q[i] = (pair){c->src[i], (uint32_t)i};
  qsort(q, c->n, sizeof(pair), cmp_pair);
}

static void run_memcpy(void* p) {
  ctx_t* c = p;
  memcpy(c->buf, c->src, c->n * sizeof(float));
}

static void run_cumsum_c(void* p) {
  ctx_t* c = p;
  float acc = 0;
  for (size_t i = 0; i < c->n; i++) c->buf[i] = acc += c->src[i];
}

int main(void) {
  float* x = malloc(N * sizeof(float));
  float* buf = malloc(2 * (size_t)N * sizeof(float));
  uint64_t s = 12345;
  for (size_t i = 0; i < N; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1);
  }
  int64_t n = N, sq[2] = {4096, 4096};
  cmx_array a, a2;
  if (cmx_array_from_data(&a, x, &n, 1, CMX_FLOAT32) != CMX_OK ||
      cmx_array_from_data(&a2, x, sq, 2, CMX_FLOAT32) != CMX_OK)
    return 1;
  ctx_t c = {a, 0, 0, x, buf, N};

  double t_memcpy = median_time(run_memcpy, &c, 1, 9);
  double t_sort = median_time(run_cmx, &c, 1, 7);
  double t_qsort = median_time(run_qsort, &c, 0, 3);
  printf(
      "sort 16M f32:      cmx %8.1f ms   qsort %8.1f ms   (%.1fx faster; "
      "memcpy floor %.1f ms)\n",
      1e3 * t_sort, 1e3 * t_qsort, t_qsort / t_sort, 1e3 * t_memcpy);

  c.kind = 1;
  double t_arg = median_time(run_cmx, &c, 1, 5);
  double t_qp = median_time(run_qsort_pairs, &c, 0, 3);
  printf(
      "argsort 16M f32:   cmx %8.1f ms   qsort pairs %8.1f ms   (%.1fx "
      "faster)\n",
      1e3 * t_arg, 1e3 * t_qp, t_qp / t_arg);

  ctx_t c2 = {a2, 1, 0, x, buf, 4096};
  double t_rows = median_time(run_cmx, &c2, 1, 5);
  c2.axis = 0;
  double t_cols = median_time(run_cmx, &c2, 1, 5);
  printf("sort 4096x4096:    axis -1 %8.1f ms   axis 0 %8.1f ms\n",
         1e3 * t_rows, 1e3 * t_cols);

  c.kind = 2;
  double t_part = median_time(run_cmx, &c, 1, 7);
  printf("partition 16M f32: cmx %8.1f ms\n", 1e3 * t_part);

  c.kind = 3;
  double t_cs = median_time(run_cmx, &c, 1, 9);
  double t_csc = median_time(run_cumsum_c, &c, 1, 9);
  printf("cumsum 16M f32:    cmx %8.1f ms   C loop %8.1f ms\n", 1e3 * t_cs,
         1e3 * t_csc);

  cmx_array_release(a);
  cmx_array_release(a2);
  free(x);
  free(buf);
  return 0;
}
