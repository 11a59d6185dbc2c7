/* A sweep over the CPU kernels looking for pathologically slow paths: each
 * primitive family on arrays of 1-4M elements in many layouts (every
 * reduced axis subset, middle axes, transposed, sliced and flipped inputs,
 * broadcasting), timed with 2 threads, printed as ns per element next to
 * the memcpy floor measured in the same run.
 *
 *   ./build/bench_sweep [filter] [reps]
 *
 * filter keeps the cases whose name contains it (e.g. "sum", "take");
 * reps fixes the number of timed runs (default: adaptive, best of 3-15);
 * "./build/bench_sweep 'sum (0,2)' 1" runs one case once, for callgrind.
 *
 *   ./build/bench_sweep --serve [filter]
 *
 * times nothing by itself: before each case it prints "CASE <name>" and
 * waits for commands on stdin, "t <n>" (time n runs, print "T <wall>
 * <cpu>": seconds of the best) or "n" (next case). scripts/sweep-compare.py
 * drives two such processes (an old and a new libcmx, the same cases in the
 * same order) in lockstep, so that each case's runs alternate between the
 * builds.
 *
 * ns/elem counts the larger of the elements read and written (a reduction
 * counts its input, a gather its output). A case more than 10x the memcpy
 * floor is flagged "<-- SLOW" unless it is compute-bound by nature
 * (transcendental functions, divisions, sorting, matrix products,
 * convolutions) or waits on memory latency (random gathers and scatters),
 * which are marked with the reason instead and compared by eye with their
 * siblings. Each figure is the best of several runs (the machine may be
 * shared): graph construction, output allocation and evaluation included.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"
#include "cmx/cmx.h"

#define S CMX_STREAM_DEFAULT
/* Gathers and scatters at random positions wait on memory latency (and,
 * across an outer axis, on the TLB), not bandwidth: not flagged either. */
#define RANDOM "random access"

static void die(const char* what) {
  fprintf(stderr, "bench_sweep: %s: %s\n", what, cmx_last_error());
  exit(1);
}

/* ---------------- inputs ---------------- */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 16);
}

static int64_t prod(const int64_t* s, int nd) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= s[i];
  return n;
}

/* Evaluated array of the given shape: uniform floats in [-1, 1) converted
 * to dt (integers: [0, 1000), bool: half true). */
static cmx_array rand_array(const int64_t* shape, int nd, cmx_dtype dt) {
  int64_t n = prod(shape, nd);
  cmx_array a = NULL, r = NULL;
  if (dt == CMX_INT32 || dt == CMX_BOOL || dt == CMX_UINT8) {
    int32_t* v = malloc((size_t)n * sizeof(int32_t));
    for (int64_t i = 0; i < n; i++)
      v[i] = (int32_t)(dt == CMX_BOOL ? rnd() % 2 : rnd() % 1000);
    if (cmx_array_from_data(&a, v, shape, nd, CMX_INT32) != CMX_OK) die("data");
    free(v);
  } else {
    float* v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = (float)rnd() / 2147483648.0f - 1.0f;
    if (cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT32) != CMX_OK)
      die("data");
    free(v);
  }
  if (cmx_array_dtype(a) == dt) return a;
  if (cmx_astype(&r, a, dt, S) != CMX_OK || cmx_array_eval(r) != CMX_OK)
    die("astype");
  cmx_array_release(a);
  return r;
}

/* Evaluated int32 indices in [0, hi) of the given shape. */
static cmx_array rand_index(const int64_t* shape, int nd, int64_t hi) {
  int64_t n = prod(shape, nd);
  int32_t* v = malloc((size_t)n * sizeof(int32_t));
  for (int64_t i = 0; i < n; i++) v[i] = (int32_t)(rnd() % (uint32_t)hi);
  cmx_array a = NULL;
  if (cmx_array_from_data(&a, v, shape, nd, CMX_INT32) != CMX_OK) die("index");
  free(v);
  return a;
}

/* An evaluated view (keeps the handle's strides: no copy). */
static cmx_array ev(cmx_array a) {
  if (!a || cmx_array_eval(a) != CMX_OK) die("view");
  return a;
}
static cmx_array transposed(cmx_array a, const int* perm) {
  cmx_array r = NULL;
  if (cmx_transpose(&r, a, perm, cmx_array_ndim(a), S) != CMX_OK)
    die("transpose");
  return ev(r);
}

/* ---------------- cases ---------------- */

typedef enum {
  K_UN,
  K_BIN,
  K_WHERE,
  K_ASTYPE,
  K_COPY,
  K_RED,
  K_ARG,
  K_VAR,
  K_SOFTMAX,
  K_SCAN,
  K_SORT,
  K_TAKE,
  K_TAKE_ALONG,
  K_PUT_ALONG,
  K_GATHER,
  K_SCATTER,
  K_CONCAT,
  K_PAD,
  K_SLICE_UPDATE,
  K_MATMUL,
  K_CONV,
  K_CONV_VJP
} kind_t;

typedef cmx_status (*un_fn)(cmx_array*, cmx_array, cmx_stream);
typedef cmx_status (*bin_fn)(cmx_array*, cmx_array, cmx_array, cmx_stream);
typedef cmx_status (*red_fn)(cmx_array*, cmx_array, const int*, int, bool,
                             cmx_stream);
typedef cmx_status (*arg_fn)(cmx_array*, cmx_array, const int*, bool,
                             cmx_stream);
typedef cmx_status (*scan_fn)(cmx_array*, cmx_array, const int*, bool, bool,
                              cmx_stream);
typedef cmx_status (*sort_fn)(cmx_array*, cmx_array, const int*, cmx_stream);
typedef cmx_status (*scat_fn)(cmx_array*, cmx_array, const cmx_array*, int,
                              cmx_array, const int*, int, cmx_stream);

typedef struct {
  kind_t kind;
  void (*fn)(void); /* the op, cast back by kind */
  cmx_array x, y, z;
  cmx_array idx[2];
  int nidx;
  int axes[8], naxes; /* naxes -1: NULL axes */
  bool flag;          /* keepdims, reverse, precise */
  bool flag2;         /* inclusive */
  int64_t p[12];      /* starts/stops/strides, slice sizes, conv params */
  cmx_dtype dt;
} op_t;

static const int* axes_of(const op_t* o) {
  return o->naxes < 0 ? NULL : o->axes;
}

/* conv2d(x, w) for vjp */
static cmx_status conv_fn(void* payload, const cmx_array* in, int nin,
                          cmx_array** outs, int* nout) {
  const op_t* o = payload;
  (void)nin;
  *outs = malloc(sizeof(cmx_array));
  *nout = 1;
  cmx_status st = cmx_conv2d(*outs, in[0], in[1], (int)o->p[0], (int)o->p[0],
                             (int)o->p[1], (int)o->p[1], 1, 1, 1, S);
  if (st != CMX_OK) {
    free(*outs);
    *outs = NULL;
    *nout = 0;
  }
  return st;
}

/* Builds the op's outputs (lazy) into r (up to 2). */
static cmx_status build(const op_t* o, cmx_array* r, int* nr) {
  *nr = 1;
  switch (o->kind) {
    case K_UN:
      return ((un_fn)o->fn)(r, o->x, S);
    case K_BIN:
      return ((bin_fn)o->fn)(r, o->x, o->y, S);
    case K_WHERE:
      return cmx_where(r, o->x, o->y, o->z, S);
    case K_ASTYPE:
      return cmx_astype(r, o->x, o->dt, S);
    case K_COPY:
      return cmx_contiguous(r, o->x, false, S);
    case K_RED:
      return ((red_fn)o->fn)(r, o->x, axes_of(o), o->naxes, o->flag, S);
    case K_ARG:
      return ((arg_fn)o->fn)(r, o->x, axes_of(o), o->flag, S);
    case K_VAR:
      return cmx_var(r, o->x, axes_of(o), o->naxes, o->flag, 0, S);
    case K_SOFTMAX:
      return cmx_softmax(r, o->x, axes_of(o), o->naxes, o->flag, S);
    case K_SCAN:
      return ((scan_fn)o->fn)(r, o->x, axes_of(o), o->flag, o->flag2, S);
    case K_SORT:
      if (!o->fn) return cmx_partition(r, o->x, (int)o->p[0], axes_of(o), S);
      if (o->fn == (void (*)(void))cmx_argpartition)
        return cmx_argpartition(r, o->x, (int)o->p[0], axes_of(o), S);
      return ((sort_fn)o->fn)(r, o->x, axes_of(o), S);
    case K_TAKE:
      return cmx_take(r, o->x, o->idx[0], axes_of(o), S);
    case K_TAKE_ALONG:
      return cmx_take_along_axis(r, o->x, o->idx[0], axes_of(o), S);
    case K_PUT_ALONG:
      return cmx_put_along_axis(r, o->x, o->idx[0], o->y, axes_of(o), S);
    case K_GATHER:
      return cmx_gather(r, o->x, o->idx, o->nidx, o->axes, o->naxes, o->p,
                        cmx_array_ndim(o->x), S);
    case K_SCATTER:
      return ((scat_fn)o->fn)(r, o->x, o->idx, o->nidx, o->y, o->axes, o->naxes,
                              S);
    case K_CONCAT: {
      cmx_array xs[2] = {o->x, o->y};
      return cmx_concatenate(r, xs, 2, o->axes[0], S);
    }
    case K_PAD:
      return cmx_pad(r, o->x, o->axes, o->p, o->p + 4, o->naxes, NULL,
                     CMX_PAD_CONSTANT, S);
    case K_SLICE_UPDATE:
      return cmx_slice_update(r, o->x, o->y, o->p, o->p + 4, o->p + 8, S);
    case K_MATMUL:
      return cmx_matmul(r, o->x, o->y, S);
    case K_CONV:
      if (o->flag)
        return cmx_conv_transpose2d(r, o->x, o->y, (int)o->p[0], (int)o->p[0],
                                    (int)o->p[1], (int)o->p[1], 1, 1, 0, 0, 1,
                                    S);
      return cmx_conv2d(r, o->x, o->y, (int)o->p[0], (int)o->p[0], (int)o->p[1],
                        (int)o->p[1], 1, 1, 1, S);
    case K_CONV_VJP: {
      cmx_closure f = {conv_fn, (void*)o};
      cmx_array prim[2] = {o->x, o->y};
      *nr = 2;
      return cmx_vjp(f, prim, 2, &o->z, 1, NULL, NULL, r);
    }
  }
  return CMX_ERR_VALUE;
}

/* ---------------- timing and report ---------------- */

static const char* g_filter;
static int g_reps;
static bool g_serve;   /* --serve: cases timed on request (see the top) */
static double g_floor; /* memcpy ns per float32 element */
static int g_flagged, g_run;

/* Seconds of one run of o (graph construction, output allocation and
 * evaluation); its outputs are left in r[0..*nr) for the caller. */
static double one_run(const op_t* o, cmx_array r[2], int* nr) {
  double t0 = now();
  if (build(o, r, nr) != CMX_OK || cmx_eval(r, (size_t)*nr) != CMX_OK)
    die("op");
  return now() - t0;
}

/* Seconds of the best run; *elems gets the larger of the elements read
 * and written. */
static double time_op(const op_t* o, int64_t* elems) {
  double best = 1e30, total = 0;
  int reps = g_reps > 0 ? g_reps : 15;
  for (int i = 0; i < reps + (g_reps > 0 ? 0 : 1); i++) {
    cmx_array r[2] = {NULL, NULL};
    int nr = 0;
    double t = one_run(o, r, &nr);
    if (i == 0) {
      int64_t m = 0;
      cmx_array ins[5] = {o->x, o->y, o->z, o->idx[0], o->idx[1]};
      for (int k = 0; k < 5; k++)
        if (ins[k] && cmx_array_size(ins[k]) > m) m = cmx_array_size(ins[k]);
      for (int k = 0; k < nr; k++)
        if (cmx_array_size(r[k]) > m) m = cmx_array_size(r[k]);
      *elems = m;
    }
    cmx_array_release_all(r, 2);
    if (g_reps > 0 || i > 0) { /* the first adaptive run warms up */
      if (t < best) best = t;
      total += t;
      if (g_reps <= 0 && i >= 3 && total > 0.15) break;
    }
  }
  return best;
}

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Best of n runs of o, in seconds of wall time (*cpu: the least process
 * CPU time of a run, all threads: less sensitive to other processes). */
static double best_of(const op_t* o, int n, double* cpu) {
  double best = 1e30;
  *cpu = 1e30;
  for (int i = 0; i < n; i++) {
    cmx_array r[2] = {NULL, NULL};
    int nr = 0;
    double c0 = cpu_now();
    double t = one_run(o, r, &nr);
    double c = cpu_now() - c0;
    cmx_array_release_all(r, 2);
    if (t < best) best = t;
    if (c < *cpu) *cpu = c;
  }
  return best;
}

/* --serve: offers the case and times it as the commands on stdin say. */
static void serve_case(const char* name, const op_t* o) {
  char line[64];
  printf("CASE %s\n", name);
  fflush(stdout);
  while (fgets(line, sizeof line, stdin)) {
    int n = 0;
    if (line[0] == 't' && sscanf(line + 1, "%d", &n) == 1 && n > 0) {
      double cpu, wall = best_of(o, n, &cpu);
      printf("T %.9f %.9f\n", wall, cpu);
      fflush(stdout);
    } else {
      return; /* "n" or anything else: the next case */
    }
  }
  exit(0); /* the driver went away */
}

/* Runs and prints one case. cb: why it is compute-bound (NULL: memory
 * bound, flagged past 10x the floor). flops: for products, to print
 * GFLOP/s as well. */
static void run_case(const char* name, const op_t* o, const char* cb,
                     double flops) {
  if (g_filter && !strstr(name, g_filter)) return;
  if (g_serve) {
    serve_case(name, o);
    return;
  }
  int64_t elems = 1;
  double t = time_op(o, &elems);
  double ns = t * 1e9 / (double)elems, ratio = ns / g_floor;
  g_run++;
  printf("%-46s %9.3f ms %8.3f ns/el %7.1fx", name, t * 1e3, ns, ratio);
  if (flops > 0) printf("  %6.1f GFLOP/s", flops / t * 1e-9);
  if (cb && !strcmp(cb, RANDOM))
    printf("  [%s]", cb);
  else if (cb)
    printf("  [compute-bound: %s]", cb);
  else if (ratio > 10) {
    printf("  <-- SLOW");
    g_flagged++;
  }
  printf("\n");
  fflush(stdout);
}

static double memcpy_floor(void) {
  size_t n = (size_t)4 << 20;
  float* a = malloc(n * sizeof(float));
  float* b = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) a[i] = (float)i, b[i] = 0;
  double best = 1e30;
  for (int r = 0; r < 15; r++) {
    double t0 = now();
    memcpy(b, a, n * sizeof(float));
    double t = now() - t0;
    if (t < best) best = t;
    a[r] = b[n - 1 - (size_t)r]; /* keep the copies observable */
  }
  free(a);
  free(b);
  return best * 1e9 / (double)n;
}

/* ---------------- families ---------------- */

static void fmt_axes(char* buf, size_t cap, const int* axes, int n) {
  size_t k = (size_t)snprintf(buf, cap, "(");
  for (int i = 0; i < n && k < cap; i++)
    k += (size_t)snprintf(buf + k, cap - k, i ? ",%d" : "%d", axes[i]);
  if (k < cap) snprintf(buf + k, cap - k, ")");
}
static void fmt_shape(char* buf, size_t cap, cmx_array a) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < cmx_array_ndim(a) && k < cap; i++)
    k += (size_t)snprintf(buf + k, cap - k, i ? "x%lld" : "%lld",
                          (long long)cmx_array_dim(a, i));
  if (k < cap) snprintf(buf + k, cap - k, "]");
}

static void elementwise(void) {
  int64_t n = 2 << 20, m2[2] = {1024, 2048};
  cmx_array x = rand_array(&n, 1, CMX_FLOAT32);
  cmx_array y = rand_array(&n, 1, CMX_FLOAT32);
  cmx_array xi = rand_array(&n, 1, CMX_INT32);
  cmx_array yi = rand_array(&n, 1, CMX_INT32);
  cmx_array xb = rand_array(&n, 1, CMX_BOOL);
  cmx_array yb = rand_array(&n, 1, CMX_BOOL);
  cmx_array xh = rand_array(&n, 1, CMX_FLOAT16);
  cmx_array M = rand_array(m2, 2, CMX_FLOAT32);
  int t2[2] = {1, 0};
  int64_t m2t[2] = {2048, 1024};
  cmx_array Mt = transposed(rand_array(m2t, 2, CMX_FLOAT32), t2);
  int64_t row[1] = {2048}, col[2] = {1024, 1}, orow[2] = {1, 2048};
  cmx_array vr = rand_array(row, 1, CMX_FLOAT32);
  cmx_array vc = rand_array(col, 2, CMX_FLOAT32);
  cmx_array vo = rand_array(orow, 2, CMX_FLOAT32);
  int64_t s3[3] = {64, 128, 256}, s3m[3] = {64, 1, 256};
  cmx_array X3 = rand_array(s3, 3, CMX_FLOAT32);
  cmx_array X3m = rand_array(s3m, 3, CMX_FLOAT32);
  cmx_array sc = NULL;
  cmx_array_from_double(&sc, 0.5, CMX_FLOAT32);
  struct {
    const char* name;
    un_fn f;
    const char* cb;
  } un[] = {{"abs", cmx_abs, NULL},
            {"negative", cmx_negative, NULL},
            {"square", cmx_square, NULL},
            {"sqrt", cmx_sqrt, NULL},
            {"rsqrt", cmx_rsqrt, NULL},
            {"floor", cmx_floor, NULL},
            {"sign", cmx_sign, NULL},
            {"isnan", cmx_isnan, NULL},
            {"exp", cmx_exp, "transcendental"},
            {"log", cmx_log, "transcendental"},
            {"sin", cmx_sin, "transcendental"},
            {"tanh", cmx_tanh, "transcendental"},
            {"sigmoid", cmx_sigmoid, "transcendental"},
            {"erf", cmx_erf, "transcendental"},
            {"erfinv", cmx_erfinv, "transcendental"},
            {"arctan", cmx_arctan, "transcendental"}};
  char name[128];
  for (size_t i = 0; i < sizeof un / sizeof un[0]; i++) {
    op_t o = {.kind = K_UN, .fn = (void (*)(void))un[i].f, .x = x};
    snprintf(name, sizeof name, "unary %s f32 [2M]", un[i].name);
    run_case(name, &o, un[i].cb, 0);
  }
  struct {
    const char* name;
    un_fn f;
    cmx_array x;
    const char* cb;
  } un2[] = {{"negative f32 transposed", cmx_negative, Mt, NULL},
             {"exp f32 transposed", cmx_exp, Mt, "transcendental"},
             {"negative f16", cmx_negative, xh, NULL},
             {"exp f16", cmx_exp, xh, "transcendental"},
             {"negative i32", cmx_negative, xi, NULL},
             {"abs i32", cmx_abs, xi, NULL},
             {"logical_not bool", cmx_logical_not, xb, NULL},
             {"sqrt i32 (-> f32)", cmx_sqrt, xi, NULL}};
  for (size_t i = 0; i < sizeof un2 / sizeof un2[0]; i++) {
    op_t o = {.kind = K_UN, .fn = (void (*)(void))un2[i].f, .x = un2[i].x};
    snprintf(name, sizeof name, "unary %s", un2[i].name);
    run_case(name, &o, un2[i].cb, 0);
  }
  struct {
    const char* name;
    bin_fn f;
    cmx_array a, b;
    const char* cb;
  } bin[] = {{"add f32 contiguous", cmx_add, x, y, NULL},
             {"add f32 scalar", cmx_add, x, sc, NULL},
             {"add f32 row bcast [1024x2048]+[2048]", cmx_add, M, vr, NULL},
             {"add f32 col bcast [1024x2048]+[1024x1]", cmx_add, M, vc, NULL},
             {"add f32 outer [1024x1]+[1x2048]", cmx_add, vc, vo, NULL},
             {"add f32 transposed + contiguous", cmx_add, Mt, M, NULL},
             {"add f32 transposed + transposed", cmx_add, Mt, Mt, NULL},
             {"add f32 transposed + row bcast", cmx_add, Mt, vr, NULL},
             {"add f32 middle bcast [64x1x256]", cmx_add, X3, X3m, NULL},
             {"multiply f32", cmx_multiply, x, y, NULL},
             {"divide f32", cmx_divide, x, y, NULL},
             {"maximum f32", cmx_maximum, x, y, NULL},
             {"minimum f32 scalar", cmx_minimum, x, sc, NULL},
             {"less f32", cmx_less, x, y, NULL},
             {"equal f32", cmx_equal, x, y, NULL},
             {"add i32", cmx_add, xi, yi, NULL},
             {"multiply i32", cmx_multiply, xi, yi, NULL},
             {"floor_divide i32", cmx_floor_divide, xi, yi, "integer division"},
             {"remainder i32", cmx_remainder, xi, yi, "integer division"},
             {"remainder f32", cmx_remainder, x, y, "fmod"},
             {"floor_divide f32", cmx_floor_divide, x, y, "two divisions"},
             {"power f32", cmx_power, x, y, "transcendental"},
             {"arctan2 f32", cmx_arctan2, x, y, "transcendental"},
             {"logaddexp f32", cmx_logaddexp, x, y, "transcendental"},
             {"logical_and bool", cmx_logical_and, xb, yb, NULL},
             {"bitwise_xor i32", cmx_bitwise_xor, xi, yi, NULL},
             {"left_shift i32", cmx_left_shift, xi, yi, NULL},
             {"add f16", cmx_add, xh, xh, NULL},
             {"add f32 + f16 (promote)", cmx_add, x, xh, NULL},
             {"add f32 + i32 (promote)", cmx_add, x, xi, NULL}};
  for (size_t i = 0; i < sizeof bin / sizeof bin[0]; i++) {
    op_t o = {.kind = K_BIN,
              .fn = (void (*)(void))bin[i].f,
              .x = bin[i].a,
              .y = bin[i].b};
    snprintf(name, sizeof name, "binary %s", bin[i].name);
    run_case(name, &o, bin[i].cb, 0);
  }
  /* Select */
  {
    op_t o = {.kind = K_WHERE, .x = xb, .y = x, .z = y};
    run_case("select where(bool, f32, f32)", &o, NULL, 0);
    o.z = sc;
    run_case("select where(bool, f32, scalar)", &o, NULL, 0);
    cmx_array cr = rand_array(row, 1, CMX_BOOL);
    op_t o2 = {.kind = K_WHERE, .x = cr, .y = M, .z = Mt};
    run_case("select where(row bcast, f32, f32 transposed)", &o2, NULL, 0);
    cmx_array_release(cr);
  }
  /* AsType */
  struct {
    const char* name;
    cmx_array a;
    cmx_dtype to;
  } ast[] = {{"f32 -> f16", x, CMX_FLOAT16},
             {"f32 -> bf16", x, CMX_BFLOAT16},
             {"f16 -> f32", xh, CMX_FLOAT32},
             {"f32 -> i32", x, CMX_INT32},
             {"i32 -> f32", xi, CMX_FLOAT32},
             {"f32 -> f64", x, CMX_FLOAT64},
             {"f32 -> bool", x, CMX_BOOL},
             {"bool -> f32", xb, CMX_FLOAT32},
             {"i32 -> i8", xi, CMX_INT8},
             {"f32 -> f32 (copy)", x, CMX_FLOAT32},
             {"f32 transposed -> f16", Mt, CMX_FLOAT16},
             {"f32 transposed -> f32", Mt, CMX_FLOAT32}};
  for (size_t i = 0; i < sizeof ast / sizeof ast[0]; i++) {
    op_t o = {.kind = K_ASTYPE, .x = ast[i].a, .dt = ast[i].to};
    snprintf(name, sizeof name, "astype %s", ast[i].name);
    run_case(name, &o, NULL, 0);
  }
  cmx_array all[] = {x, y, xi, yi, xb, xh, M, Mt, vr, vc, vo, X3, X3m, sc, yb};
  cmx_array_release_all(all, sizeof all / sizeof all[0]);
}

static void copies(void) {
  int64_t s2[2] = {1024, 2048}, s3[3] = {64, 128, 256},
          s4[4] = {32, 64, 64, 16};
  cmx_array M = rand_array(s2, 2, CMX_FLOAT32);
  cmx_array X3 = rand_array(s3, 3, CMX_FLOAT32);
  cmx_array X4 = rand_array(s4, 4, CMX_FLOAT32);
  int64_t sn4[2] = {524288, 4};
  cmx_array N4 = rand_array(sn4, 2, CMX_FLOAT32);
  char name[128], ax[32];
  int t2[2] = {1, 0};
  op_t o = {.kind = K_COPY, .x = transposed(M, t2)};
  run_case("copy transpose 2-d [1024x2048]", &o, NULL, 0);
  cmx_array_release(o.x);
  int perms3[5][3] = {{0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int i = 0; i < 5; i++) {
    o.x = transposed(X3, perms3[i]);
    fmt_axes(ax, sizeof ax, perms3[i], 3);
    snprintf(name, sizeof name, "copy transpose 3-d %s", ax);
    run_case(name, &o, NULL, 0);
    cmx_array_release(o.x);
  }
  int perms4[4][4] = {{0, 3, 1, 2}, {0, 2, 3, 1}, {3, 1, 2, 0}, {1, 0, 3, 2}};
  for (int i = 0; i < 4; i++) {
    o.x = transposed(X4, perms4[i]);
    fmt_axes(ax, sizeof ax, perms4[i], 4);
    snprintf(name, sizeof name, "copy transpose 4-d [32x64x64x16] %s", ax);
    run_case(name, &o, NULL, 0);
    cmx_array_release(o.x);
  }
  /* slices */
  struct {
    const char* name;
    cmx_array a;
    int64_t start[3], stop[3], step[3];
  } sl[] = {
      {"slice 2-d [:, ::2]", M, {0, 0}, {1024, 2048}, {1, 2}},
      {"slice 2-d [::2, :]", M, {0, 0}, {1024, 2048}, {2, 1}},
      {"slice 2-d [:, 1:-1]", M, {0, 1}, {1024, 2047}, {1, 1}},
      {"slice 2-d [524288x4][:, 1:3]", N4, {0, 1}, {524288, 3}, {1, 1}},
      {"slice 3-d [:, :, ::3]", X3, {0, 0, 0}, {64, 128, 256}, {1, 1, 3}},
      {"slice 3-d [:, 1:-1, 1:-1]", X3, {0, 1, 1}, {64, 127, 255}, {1, 1, 1}},
      {"slice 3-d [::-1-ish step -2]",
       X3,
       {63, 0, 0},
       {-65, 128, 256},
       {-2, 1, 1}}};
  for (size_t i = 0; i < sizeof sl / sizeof sl[0]; i++) {
    cmx_array v = NULL;
    if (cmx_slice(&v, sl[i].a, sl[i].start, sl[i].stop, sl[i].step, S) !=
        CMX_OK)
      die("slice");
    o.x = ev(v);
    snprintf(name, sizeof name, "copy %s", sl[i].name);
    run_case(name, &o, NULL, 0);
    cmx_array_release(v);
  }
  /* flips */
  int fl[4][3] = {{2}, {0}, {1}, {0, 1, 2}};
  int nfl[4] = {1, 1, 1, 3};
  for (int i = 0; i < 4; i++) {
    cmx_array v = NULL;
    if (cmx_flip(&v, X3, fl[i], nfl[i], S) != CMX_OK) die("flip");
    o.x = ev(v);
    fmt_axes(ax, sizeof ax, fl[i], nfl[i]);
    snprintf(name, sizeof name, "copy flip 3-d %s", ax);
    run_case(name, &o, NULL, 0);
    cmx_array_release(v);
  }
  /* broadcast materialised */
  {
    int64_t r[1] = {2048}, c[2] = {1024, 1};
    cmx_array vr = rand_array(r, 1, CMX_FLOAT32),
              vc = rand_array(c, 2, CMX_FLOAT32);
    cmx_array b = NULL;
    cmx_broadcast_to(&b, vr, s2, 2, S);
    o.x = ev(b);
    run_case("copy broadcast row -> [1024x2048]", &o, NULL, 0);
    cmx_array_release(b);
    cmx_broadcast_to(&b, vc, s2, 2, S);
    o.x = ev(b);
    run_case("copy broadcast col -> [1024x2048]", &o, NULL, 0);
    cmx_array_release(b);
    cmx_array_release(vr);
    cmx_array_release(vc);
  }
  cmx_array_release_all((cmx_array[]){M, X3, X4, N4}, 4);
}

typedef struct {
  const char* name;
  red_fn f;
  bool boolean; /* takes the bool input */
} red_kind;

static const red_kind g_red[] = {
    {"sum", cmx_sum, false}, {"prod", cmx_prod, false}, {"min", cmx_min, false},
    {"max", cmx_max, false}, {"mean", cmx_mean, false}, {"all", cmx_all, true},
    {"any", cmx_any, true}};
#define NRED ((int)(sizeof g_red / sizeof g_red[0]))

/* Every non-empty axis subset of x (nd dims) for the kinds in mask. */
static void reduce_subsets(const char* label, cmx_array xf, cmx_array xb,
                           unsigned kinds, bool keep) {
  int nd = cmx_array_ndim(xf);
  char name[128], ax[32], sh[48];
  fmt_shape(sh, sizeof sh, xf);
  for (int k = 0; k < NRED; k++) {
    if (!(kinds >> k & 1)) continue;
    for (unsigned m = 1; m < (1u << nd); m++) {
      op_t o = {.kind = K_RED,
                .fn = (void (*)(void))g_red[k].f,
                .x = g_red[k].boolean ? xb : xf,
                .flag = keep};
      for (int d = 0; d < nd; d++)
        if (m >> d & 1) o.axes[o.naxes++] = d;
      fmt_axes(ax, sizeof ax, o.axes, o.naxes);
      snprintf(name, sizeof name, "%s %s %s%s %s", g_red[k].name, label, sh, ax,
               keep ? " keep" : "");
      run_case(name, &o, NULL, 0);
    }
  }
}

static void reductions(void) {
  int64_t s3[3] = {64, 128, 256}, s4[4] = {16, 32, 64, 64};
  int64_t k3[3][3] = {{2, 1024, 1024}, {1024, 2, 1024}, {1024, 1024, 2}};
  int64_t s4c[4] = {32, 64, 64, 16}, s3b[3] = {3, 5, 140000};
  cmx_array X3 = rand_array(s3, 3, CMX_FLOAT32);
  cmx_array B3 = rand_array(s3, 3, CMX_BOOL);
  cmx_array X4 = rand_array(s4, 4, CMX_FLOAT32);
  cmx_array B4 = rand_array(s4, 4, CMX_BOOL);
  reduce_subsets("f32", X3, B3, 0x7f, false);
  reduce_subsets("f32", X4, B4, 0x7f, false);
  /* other dtypes: integer and half sums, keepdims */
  cmx_array I3 = rand_array(s3, 3, CMX_INT32);
  cmx_array H3 = rand_array(s3, 3, CMX_FLOAT16);
  reduce_subsets("i32", I3, B3, 0x0f, false);
  reduce_subsets("f16", H3, B3, 0x19, false);
  reduce_subsets("f32", X3, B3, 0x09, true);
  cmx_array_release_all((cmx_array[]){I3, H3}, 2);
  /* skinny shapes (a 2 in each position) and long rows */
  for (int i = 0; i < 3; i++) {
    cmx_array a = rand_array(k3[i], 3, CMX_FLOAT32);
    cmx_array b = rand_array(k3[i], 3, CMX_BOOL);
    reduce_subsets("f32", a, b, 0x49, false);
    cmx_array_release(a);
    cmx_array_release(b);
  }
  {
    cmx_array a = rand_array(s3b, 3, CMX_FLOAT32);
    reduce_subsets("f32", a, a, 0x09, false);
    cmx_array_release(a);
  }
  /* NHWC with 16 channels */
  {
    cmx_array a = rand_array(s4c, 4, CMX_FLOAT32);
    reduce_subsets("f32", a, a, 0x09, false);
    cmx_array_release(a);
  }
  /* transposed inputs */
  {
    int p3[3] = {2, 0, 1}, p3b[3] = {1, 2, 0}, p4[4] = {0, 3, 1, 2};
    int64_t s3t[3] = {256, 64, 128}, s3u[3] = {128, 256, 64};
    cmx_array a = transposed(rand_array(s3t, 3, CMX_FLOAT32), (int[]){1, 2, 0});
    cmx_array b = transposed(rand_array(s3t, 3, CMX_BOOL), (int[]){1, 2, 0});
    (void)p3;
    reduce_subsets("f32 T(1,2,0)", a, b, 0x49, false);
    cmx_array_release(a);
    cmx_array_release(b);
    a = transposed(rand_array(s3u, 3, CMX_FLOAT32), (int[]){2, 0, 1});
    (void)p3b;
    reduce_subsets("f32 T(2,0,1)", a, a, 0x09, false);
    cmx_array_release(a);
    int64_t s4t[4] = {16, 64, 64, 32};
    a = transposed(rand_array(s4t, 4, CMX_FLOAT32), p4);
    reduce_subsets("f32 NHWC->NCHW", a, a, 0x09, false);
    cmx_array_release(a);
  }
  /* 2x2 max pooling written as reshape + max */
  {
    int64_t s6[6] = {32, 14, 2, 14, 2, 64};
    cmx_array a = rand_array(s6, 6, CMX_FLOAT32);
    op_t o = {.kind = K_RED,
              .fn = (void (*)(void))cmx_max,
              .x = a,
              .axes = {2, 4},
              .naxes = 2};
    run_case("max pool2x2 [32x14x2x14x2x64](2,4)", &o, NULL, 0);
    o.fn = (void (*)(void))cmx_mean;
    run_case("mean pool2x2 [32x14x2x14x2x64](2,4)", &o, NULL, 0);
    cmx_array_release(a);
  }
  /* full reduction */
  {
    op_t o = {
        .kind = K_RED, .fn = (void (*)(void))cmx_sum, .x = X3, .naxes = -1};
    run_case("sum f32 [64x128x256] all (NULL)", &o, NULL, 0);
  }
  /* ArgReduce over each axis */
  arg_fn af[2] = {cmx_argmin, cmx_argmax};
  const char* an[2] = {"argmin", "argmax"};
  char name[128], sh[48];
  cmx_array srcs[6];
  int nsrc = 0;
  srcs[nsrc++] = X3;
  srcs[nsrc++] = X4;
  for (int i = 0; i < 3; i++) srcs[nsrc++] = rand_array(k3[i], 3, CMX_FLOAT32);
  srcs[nsrc++] = transposed(X3, (int[]){2, 0, 1});
  for (int s = 0; s < nsrc; s++) {
    fmt_shape(sh, sizeof sh, srcs[s]);
    for (int f = 0; f < 2; f++)
      for (int d = 0; d < cmx_array_ndim(srcs[s]); d++) {
        op_t o = {.kind = K_ARG,
                  .fn = (void (*)(void))af[f],
                  .x = srcs[s],
                  .axes = {d},
                  .naxes = 1};
        snprintf(name, sizeof name, "%s f32 %s%s axis %d", an[f], sh,
                 s == nsrc - 1 ? " T(2,0,1)" : "", d);
        run_case(name, &o, NULL, 0);
      }
  }
  {
    op_t o = {
        .kind = K_ARG, .fn = (void (*)(void))cmx_argmax, .x = X3, .naxes = -1};
    run_case("argmax f32 [64x128x256] flattened", &o, NULL, 0);
  }
  for (int s = 2; s < nsrc; s++) cmx_array_release(srcs[s]);
  /* short rows (classifier outputs, RGB pixels): [N x L] over each axis */
  {
    int64_t ls[3] = {2, 3, 10};
    for (int i = 0; i < 3; i++) {
      int64_t sh2[2] = {(3 << 20) / ls[i] / 2 * 2, ls[i]};
      cmx_array a = rand_array(sh2, 2, CMX_FLOAT32);
      char sh2s[48];
      fmt_shape(sh2s, sizeof sh2s, a);
      for (int d = 0; d < 2; d++) {
        op_t o = {.kind = K_RED, .x = a, .axes = {d}, .naxes = 1};
        const struct {
          const char* n;
          kind_t k;
          void (*f)(void);
          const char* cb;
        } sr[] = {{"sum", K_RED, (void (*)(void))cmx_sum, NULL},
                  {"max", K_RED, (void (*)(void))cmx_max, NULL},
                  {"argmax", K_ARG, (void (*)(void))cmx_argmax, NULL},
                  {"logsumexp", K_RED, (void (*)(void))cmx_logsumexp, "exp"},
                  {"softmax", K_SOFTMAX, NULL, "exp"},
                  {"var", K_VAR, NULL, NULL}};
        for (size_t k = 0; k < sizeof sr / sizeof sr[0]; k++) {
          o.kind = sr[k].k;
          o.fn = sr[k].f;
          snprintf(name, sizeof name, "%s f32 short %s axis %d", sr[k].n, sh2s,
                   d);
          run_case(name, &o, sr[k].cb, 0);
        }
      }
      cmx_array_release(a);
    }
  }
  /* LogSumExp, Softmax, Var */
  int64_t k2[2][3] = {{1024, 2, 1024}, {1024, 1024, 2}};
  cmx_array xs[4] = {X3, transposed(X3, (int[]){2, 0, 1}),
                     rand_array(k2[0], 3, CMX_FLOAT32),
                     rand_array(k2[1], 3, CMX_FLOAT32)};
  const char* xl[4] = {"", " T(2,0,1)", "", ""};
  for (int s = 0; s < 4; s++) {
    fmt_shape(sh, sizeof sh, xs[s]);
    for (int d = 0; d <= 3; d++) {
      op_t o = {.kind = K_RED,
                .fn = (void (*)(void))cmx_logsumexp,
                .x = xs[s],
                .axes = {d},
                .naxes = d == 3 ? -1 : 1};
      char ax[16];
      if (d == 3)
        snprintf(ax, sizeof ax, "all");
      else
        snprintf(ax, sizeof ax, "axis %d", d);
      snprintf(name, sizeof name, "logsumexp f32 %s%s %s", sh, xl[s], ax);
      run_case(name, &o, "exp", 0);
      o.kind = K_SOFTMAX;
      o.flag = false;
      snprintf(name, sizeof name, "softmax f32 %s%s %s", sh, xl[s], ax);
      run_case(name, &o, "exp", 0);
      o.kind = K_VAR;
      snprintf(name, sizeof name, "var f32 %s%s %s", sh, xl[s], ax);
      run_case(name, &o, NULL, 0);
    }
  }
  {
    op_t o = {.kind = K_VAR, .x = X3, .axes = {0, 2}, .naxes = 2};
    run_case("var f32 [64x128x256] axes (0,2)", &o, NULL, 0);
    o.kind = K_SOFTMAX;
    run_case("softmax f32 [64x128x256] axes (0,2)", &o, "exp", 0);
  }
  for (int s = 1; s < 4; s++) cmx_array_release(xs[s]);
  cmx_array_release_all((cmx_array[]){X3, B3, X4, B4}, 4);
}

static void scans(void) {
  int64_t s3[3] = {64, 128, 256}, k3[2][3] = {{2, 1024, 1024}, {1024, 1024, 2}};
  cmx_array xs[4] = {rand_array(s3, 3, CMX_FLOAT32), NULL,
                     rand_array(k3[0], 3, CMX_FLOAT32),
                     rand_array(k3[1], 3, CMX_FLOAT32)};
  xs[1] = transposed(xs[0], (int[]){2, 0, 1});
  cmx_array xi = rand_array(s3, 3, CMX_INT32);
  struct {
    const char* name;
    scan_fn f;
    const char* cb;
  } sk[] = {{"cumsum", cmx_cumsum, NULL},
            {"cumprod", cmx_cumprod, NULL},
            {"cummax", cmx_cummax, NULL},
            {"cummin", cmx_cummin, NULL},
            {"logcumsumexp", cmx_logcumsumexp, "exp/log"}};
  char name[128], sh[48];
  for (int s = 0; s < 4; s++) {
    fmt_shape(sh, sizeof sh, xs[s]);
    for (size_t k = 0; k < sizeof sk / sizeof sk[0]; k++)
      for (int d = 0; d < 3; d++)
        for (int rev = 0; rev < 2; rev++) {
          if (s > 0 && k > 0 && k != 2) continue; /* cumsum, cummax there */
          op_t o = {.kind = K_SCAN,
                    .fn = (void (*)(void))sk[k].f,
                    .x = xs[s],
                    .axes = {d},
                    .naxes = 1,
                    .flag = rev,
                    .flag2 = true};
          snprintf(name, sizeof name, "%s f32 %s%s axis %d%s", sk[k].name, sh,
                   s == 1 ? " T(2,0,1)" : "", d, rev ? " reverse" : "");
          run_case(name, &o, sk[k].cb, 0);
        }
  }
  for (int d = 0; d < 3; d++) {
    op_t o = {.kind = K_SCAN,
              .fn = (void (*)(void))cmx_cumsum,
              .x = xi,
              .axes = {d},
              .naxes = 1,
              .flag2 = false};
    snprintf(name, sizeof name, "cumsum i32 [64x128x256] axis %d exclusive", d);
    run_case(name, &o, NULL, 0);
  }
  {
    op_t o = {.kind = K_SCAN,
              .fn = (void (*)(void))cmx_cumsum,
              .x = xs[0],
              .naxes = -1,
              .flag2 = true};
    run_case("cumsum f32 [64x128x256] flattened", &o, NULL, 0);
  }
  cmx_array_release_all(xs, 4);
  cmx_array_release(xi);
}

static void sorts(void) {
  int64_t s3[3] = {64, 128, 256}, k3[3] = {1024, 1024, 2},
          k3b[3] = {2, 1024, 1024};
  cmx_array xs[4] = {rand_array(s3, 3, CMX_FLOAT32), NULL,
                     rand_array(k3, 3, CMX_FLOAT32),
                     rand_array(k3b, 3, CMX_FLOAT32)};
  xs[1] = transposed(xs[0], (int[]){2, 0, 1});
  char name[128], sh[48];
  for (int s = 0; s < 4; s++) {
    fmt_shape(sh, sizeof sh, xs[s]);
    for (int k = 0; k < 4; k++)
      for (int d = 0; d < 3; d++) {
        op_t o = {.kind = K_SORT, .x = xs[s], .axes = {d}, .naxes = 1};
        o.p[0] = cmx_array_dim(xs[s], d) / 2;
        const char* nm[4] = {"sort", "argsort", "partition", "argpartition"};
        void (*fs[4])(void) = {(void (*)(void))cmx_sort,
                               (void (*)(void))cmx_argsort, NULL,
                               (void (*)(void))cmx_argpartition};
        o.fn = fs[k];
        snprintf(name, sizeof name, "%s f32 %s%s axis %d", nm[k], sh,
                 s == 1 ? " T(2,0,1)" : "", d);
        run_case(name, &o, k < 2 ? "n log n" : "selection", 0);
      }
  }
  cmx_array_release_all(xs, 4);
  /* short contiguous rows: [32768x64], [209715x10], [1048576x2] */
  int64_t sr[3][2] = {{32768, 64}, {209715, 10}, {1048576, 2}};
  for (int i = 0; i < 3; i++) {
    cmx_array a = rand_array(sr[i], 2, CMX_FLOAT32);
    fmt_shape(sh, sizeof sh, a);
    op_t o = {.kind = K_SORT,
              .fn = (void (*)(void))cmx_sort,
              .x = a,
              .axes = {1},
              .naxes = 1};
    snprintf(name, sizeof name, "sort f32 short %s axis 1", sh);
    run_case(name, &o, "n log n", 0);
    o.fn = (void (*)(void))cmx_argsort;
    snprintf(name, sizeof name, "argsort f32 short %s axis 1", sh);
    run_case(name, &o, "n log n", 0);
    cmx_array_release(a);
  }
}

static void indexing(void) {
  int64_t s2[2] = {4096, 512}, s3[3] = {64, 128, 256};
  cmx_array M = rand_array(s2, 2, CMX_FLOAT32);
  cmx_array X3 = rand_array(s3, 3, CMX_FLOAT32);
  char name[128];
  /* take */
  {
    int64_t n1 = 4096, n2 = 2 << 20, n1k = 1024;
    cmx_array i0 = rand_index(&n1, 1, 4096), i1 = rand_index(&n1k, 1, 512);
    cmx_array iflat = rand_index(&n2, 1, 4096 * 512);
    op_t o = {.kind = K_TAKE, .x = M, .idx = {i0}, .axes = {0}, .naxes = 1};
    run_case("take rows [4096x512] axis 0 (4096 idx)", &o, NULL, 0);
    o.idx[0] = i1;
    o.axes[0] = 1;
    run_case("take cols [4096x512] axis 1 (1024 idx)", &o, NULL, 0);
    o.idx[0] = iflat;
    o.naxes = -1;
    run_case("take flattened (2M random idx)", &o, RANDOM, 0);
    int64_t n3 = 32;
    cmx_array i3 = rand_index(&n3, 1, 128);
    o.x = X3;
    o.idx[0] = i3;
    o.axes[0] = 1;
    o.naxes = 1;
    run_case("take [64x128x256] axis 1 (32 idx)", &o, NULL, 0);
    cmx_array i4 = rand_index(&n1, 1, 256);
    o.idx[0] = i4;
    o.axes[0] = 2;
    run_case("take [64x128x256] axis 2 (4096 idx)", &o, NULL, 0);
    /* gather of elements by two index arrays (a[i, j]) */
    cmx_array gi = rand_index(&n2, 1, 4096), gj = rand_index(&n2, 1, 512);
    op_t g = {.kind = K_GATHER,
              .x = M,
              .idx = {gi, gj},
              .nidx = 2,
              .axes = {0, 1},
              .naxes = 2,
              .p = {1, 1}};
    run_case("gather a[i, j] 2M elements of [4096x512]", &g, RANDOM, 0);
    g.nidx = 1;
    g.naxes = 1;
    g.idx[0] = i0;
    g.p[0] = 1, g.p[1] = 512;
    run_case("gather rows slice (1, 512) x 4096", &g, NULL, 0);
    cmx_array_release_all((cmx_array[]){i0, i1, iflat, i3, i4, gi, gj}, 7);
  }
  /* take_along_axis / put_along_axis on each axis */
  for (int d = 0; d < 3; d++) {
    cmx_array idx = rand_index(s3, 3, s3[d]);
    cmx_array vals = rand_array(s3, 3, CMX_FLOAT32);
    op_t o = {.kind = K_TAKE_ALONG,
              .x = X3,
              .idx = {idx},
              .axes = {d},
              .naxes = 1,
              .y = vals};
    snprintf(name, sizeof name, "take_along_axis [64x128x256] axis %d", d);
    run_case(name, &o, RANDOM, 0);
    o.kind = K_PUT_ALONG;
    snprintf(name, sizeof name, "put_along_axis [64x128x256] axis %d", d);
    run_case(name, &o, RANDOM, 0);
    cmx_array_release(idx);
    cmx_array_release(vals);
  }
  {
    /* take_along_axis with a size-1 index axis (argmax-style picks) */
    int64_t si[3] = {64, 128, 1}, s1[3] = {64, 1, 256};
    cmx_array idx = rand_index(si, 3, 256), idx1 = rand_index(s1, 3, 128);
    op_t o = {
        .kind = K_TAKE_ALONG, .x = X3, .idx = {idx}, .axes = {2}, .naxes = 1};
    run_case("take_along_axis [64x128x256] axis 2 idx [64x128x1]", &o, NULL, 0);
    o.idx[0] = idx1;
    o.axes[0] = 1;
    run_case("take_along_axis [64x128x256] axis 1 idx [64x1x256]", &o, NULL, 0);
    cmx_array_release(idx);
    cmx_array_release(idx1);
  }
  /* scatter / scatter_add with repeated indices */
  {
    int64_t n1 = 4096, n2 = 2 << 20, sb[2] = {64, 512}, su[3] = {4096, 1, 512};
    cmx_array rows = rand_index(&n1, 1, 64);
    cmx_array upd = rand_array(su, 3, CMX_FLOAT32);
    cmx_array tgt = rand_array(sb, 2, CMX_FLOAT32);
    op_t o = {.kind = K_SCATTER,
              .fn = (void (*)(void))cmx_scatter_add,
              .x = tgt,
              .idx = {rows},
              .nidx = 1,
              .y = upd,
              .axes = {0},
              .naxes = 1};
    run_case("scatter_add rows 4096 x 512 into 64 rows", &o, NULL, 0);
    o.fn = (void (*)(void))cmx_scatter;
    run_case("scatter rows 4096 x 512 into 64 rows", &o, NULL, 0);
    o.fn = (void (*)(void))cmx_scatter_max;
    run_case("scatter_max rows 4096 x 512 into 64 rows", &o, NULL, 0);
    int64_t nb = 1000, su1[2] = {2 << 20, 1};
    cmx_array bins = rand_array(&nb, 1, CMX_FLOAT32);
    cmx_array bi = rand_index(&n2, 1, 1000);
    cmx_array bu = rand_array(su1, 2, CMX_FLOAT32);
    op_t b = {.kind = K_SCATTER,
              .fn = (void (*)(void))cmx_scatter_add,
              .x = bins,
              .idx = {bi},
              .nidx = 1,
              .y = bu,
              .axes = {0},
              .naxes = 1};
    run_case("scatter_add 2M elements into 1000 bins", &b, RANDOM, 0);
    int64_t nbig = 2 << 20;
    cmx_array big = rand_array(&nbig, 1, CMX_FLOAT32);
    cmx_array bi2 = rand_index(&n2, 1, 2 << 20);
    b.x = big;
    b.idx[0] = bi2;
    run_case("scatter_add 2M elements into 2M (random)", &b, RANDOM, 0);
    b.fn = (void (*)(void))cmx_scatter;
    run_case("scatter 2M elements into 2M (random)", &b, RANDOM, 0);
    /* a[i, j] += u: two index arrays */
    cmx_array gi = rand_index(&n2, 1, 4096), gj = rand_index(&n2, 1, 512);
    int64_t su2[3] = {2 << 20, 1, 1};
    cmx_array u2 = rand_array(su2, 3, CMX_FLOAT32);
    op_t c = {.kind = K_SCATTER,
              .fn = (void (*)(void))cmx_scatter_add,
              .x = M,
              .idx = {gi, gj},
              .nidx = 2,
              .y = u2,
              .axes = {0, 1},
              .naxes = 2};
    run_case("scatter_add a[i, j] 2M into [4096x512]", &c, RANDOM, 0);
    cmx_array_release_all(
        (cmx_array[]){rows, upd, tgt, bins, bi, bu, big, bi2, gi, gj, u2}, 11);
  }
  /* put_along_axis with repeated indices into a small axis */
  {
    int64_t si[3] = {64, 128, 256}, st[3] = {64, 8, 256};
    cmx_array t = rand_array(st, 3, CMX_FLOAT32);
    cmx_array idx = rand_index(si, 3, 8);
    cmx_array v = rand_array(si, 3, CMX_FLOAT32);
    op_t o = {.kind = K_PUT_ALONG,
              .x = t,
              .idx = {idx},
              .y = v,
              .axes = {1},
              .naxes = 1};
    run_case("put_along_axis repeated [64x8x256] <- [64x128x256]", &o, NULL, 0);
    cmx_array_release_all((cmx_array[]){t, idx, v}, 3);
  }
  cmx_array_release(M);
  cmx_array_release(X3);
}

static void joins(void) {
  int64_t s3[3] = {64, 128, 256}, s4[4] = {32, 64, 64, 16};
  cmx_array X = rand_array(s3, 3, CMX_FLOAT32);
  cmx_array Y = rand_array(s3, 3, CMX_FLOAT32);
  cmx_array X4 = rand_array(s4, 4, CMX_FLOAT32);
  char name[128];
  for (int d = 0; d < 3; d++) {
    op_t o = {.kind = K_CONCAT, .x = X, .y = Y, .axes = {d}};
    snprintf(name, sizeof name, "concatenate 2 x [64x128x256] axis %d", d);
    run_case(name, &o, NULL, 0);
  }
  {
    cmx_array Xt = transposed(X, (int[]){0, 2, 1});
    cmx_array Yt = transposed(Y, (int[]){0, 2, 1});
    op_t o = {.kind = K_CONCAT, .x = Xt, .y = Yt, .axes = {2}};
    run_case("concatenate 2 transposed axis 2", &o, NULL, 0);
    cmx_array_release(Xt);
    cmx_array_release(Yt);
  }
  for (int d = 0; d < 3; d++) {
    op_t o = {.kind = K_PAD, .x = X, .axes = {d}, .naxes = 1};
    o.p[0] = 1, o.p[4] = 2;
    snprintf(name, sizeof name, "pad [64x128x256] axis %d (1, 2)", d);
    run_case(name, &o, NULL, 0);
  }
  {
    op_t o = {.kind = K_PAD, .x = X4, .axes = {1, 2}, .naxes = 2};
    o.p[0] = o.p[1] = o.p[4] = o.p[5] = 1;
    run_case("pad NHWC [32x64x64x16] H,W by 1", &o, NULL, 0);
    cmx_array X4c = transposed(X4, (int[]){0, 3, 1, 2});
    o.x = X4c;
    o.axes[0] = 2, o.axes[1] = 3;
    run_case("pad NCHW view [32x16x64x64] H,W by 1", &o, NULL, 0);
    cmx_array_release(X4c);
  }
  /* slice_update */
  {
    int64_t su[3] = {64, 126, 256}, sv[3] = {64, 128, 128},
            sw[3] = {64, 64, 256};
    cmx_array U = rand_array(su, 3, CMX_FLOAT32);
    cmx_array V = rand_array(sv, 3, CMX_FLOAT32);
    cmx_array W = rand_array(sw, 3, CMX_FLOAT32);
    op_t o = {.kind = K_SLICE_UPDATE,
              .x = X,
              .y = U,
              .p = {0, 1, 0, 0, 64, 127, 256, 0, 1, 1, 1, 0}};
    run_case("slice_update [:, 1:-1, :] of [64x128x256]", &o, NULL, 0);
    op_t o2 = {.kind = K_SLICE_UPDATE,
               .x = X,
               .y = V,
               .p = {0, 0, 0, 0, 64, 128, 256, 0, 1, 1, 2, 0}};
    run_case("slice_update [:, :, ::2] of [64x128x256]", &o2, NULL, 0);
    op_t o3 = {.kind = K_SLICE_UPDATE,
               .x = X,
               .y = W,
               .p = {0, 0, 0, 0, 64, 128, 256, 0, 1, 2, 1, 0}};
    run_case("slice_update [:, ::2, :] of [64x128x256]", &o3, NULL, 0);
    cmx_array_release_all((cmx_array[]){U, V, W}, 3);
  }
  cmx_array_release_all((cmx_array[]){X, Y, X4}, 3);
}

static void products(void) {
  int64_t n = 1024, sq[2] = {n, n}, sq2[2] = {2 * n, 2 * n};
  cmx_array A = rand_array(sq, 2, CMX_FLOAT32);
  cmx_array B = rand_array(sq, 2, CMX_FLOAT32);
  cmx_array At = transposed(A, (int[]){1, 0});
  cmx_array Bt = transposed(B, (int[]){1, 0});
  cmx_array big = rand_array(sq2, 2, CMX_FLOAT32);
  cmx_array As = NULL;
  int64_t st0[2] = {0, 0}, st1[2] = {2 * n, 2 * n}, step[2] = {2, 2};
  cmx_slice(&As, big, st0, st1, step, S);
  As = ev(As);
  double fl = 2.0 * (double)n * (double)n * (double)n;
  struct {
    const char* name;
    cmx_array a, b;
  } mm[] = {{"matmul 1024^3 f32 A @ B", A, B},
            {"matmul 1024^3 f32 A.T @ B", At, B},
            {"matmul 1024^3 f32 A @ B.T", A, Bt},
            {"matmul 1024^3 f32 A.T @ B.T", At, Bt},
            {"matmul 1024^3 f32 A[::2, ::2] @ B", As, B}};
  for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++) {
    op_t o = {.kind = K_MATMUL, .x = mm[i].a, .y = mm[i].b};
    run_case(mm[i].name, &o, "n^3 products", fl);
  }
  /* batched and small */
  {
    int64_t sa[3] = {64, 128, 256}, sb[2] = {256, 128};
    int64_t ss[3] = {32768, 8, 8}, sv[1] = {256};
    cmx_array a = rand_array(sa, 3, CMX_FLOAT32),
              b = rand_array(sb, 2, CMX_FLOAT32);
    cmx_array s1 = rand_array(ss, 3, CMX_FLOAT32),
              s2 = rand_array(ss, 3, CMX_FLOAT32);
    cmx_array v = rand_array(sv, 1, CMX_FLOAT32);
    op_t o = {.kind = K_MATMUL, .x = a, .y = b};
    run_case("matmul [64x128x256] @ [256x128] bcast", &o, "products",
             2.0 * 64 * 128 * 256 * 128);
    cmx_array at = transposed(a, (int[]){0, 2, 1});
    cmx_array bt = transposed(b, (int[]){1, 0});
    op_t o1 = {.kind = K_MATMUL, .x = bt, .y = at};
    run_case("matmul [128x256] @ [64x256x128] (T views)", &o1, "products",
             2.0 * 64 * 128 * 256 * 128);
    op_t o2 = {.kind = K_MATMUL, .x = s1, .y = s2};
    run_case("matmul 32768 x (8x8 @ 8x8)", &o2, "products", 2.0 * 32768 * 512);
    cmx_array s2t = transposed(s2, (int[]){0, 2, 1});
    op_t o3 = {.kind = K_MATMUL, .x = s1, .y = s2t};
    run_case("matmul 32768 x (8x8 @ (8x8).T)", &o3, "products",
             2.0 * 32768 * 512);
    op_t o4 = {.kind = K_MATMUL, .x = a, .y = v};
    run_case("matmul [64x128x256] @ [256] (matvec)", &o4, NULL, 0);
    cmx_array_release_all((cmx_array[]){a, b, s1, s2, v, at, bt, s2t}, 8);
  }
  cmx_array_release_all((cmx_array[]){A, B, At, Bt, big, As}, 6);
}

static void convs(void) {
  /* a small CNN: LeNet-like layers on MNIST-size inputs and a ResNet-like
   * 3x3 layer */
  struct {
    const char* name;
    int64_t x[4], w[4];
    int stride, pad;
  } cv[] = {
      {"conv 5x5 [256x28x28x1] -> 6", {256, 28, 28, 1}, {6, 5, 5, 1}, 1, 0},
      {"conv 5x5 [256x12x12x6] -> 16", {256, 12, 12, 6}, {16, 5, 5, 6}, 1, 0},
      {"conv 3x3 [32x32x32x16] -> 32 pad 1",
       {32, 32, 32, 16},
       {32, 3, 3, 16},
       1,
       1},
      {"conv 3x3 s2 [32x32x32x32] -> 64 pad 1",
       {32, 32, 32, 32},
       {64, 3, 3, 32},
       2,
       1},
      {"conv 1x1 [32x32x32x64] -> 64", {32, 32, 32, 64}, {64, 1, 1, 64}, 1, 0}};
  char name[160];
  for (size_t i = 0; i < sizeof cv / sizeof cv[0]; i++) {
    cmx_array x = rand_array(cv[i].x, 4, CMX_FLOAT32);
    cmx_array w = rand_array(cv[i].w, 4, CMX_FLOAT32);
    op_t o = {.kind = K_CONV, .x = x, .y = w, .p = {cv[i].stride, cv[i].pad}};
    /* output size for flops */
    int64_t ho = (cv[i].x[1] + 2 * cv[i].pad - cv[i].w[1]) / cv[i].stride + 1;
    int64_t wo = (cv[i].x[2] + 2 * cv[i].pad - cv[i].w[2]) / cv[i].stride + 1;
    double fl = 2.0 * (double)(cv[i].x[0] * ho * wo * cv[i].w[0] * cv[i].w[1] *
                               cv[i].w[2] * cv[i].w[3]);
    run_case(cv[i].name, &o, "products", fl);
    int64_t so[4] = {cv[i].x[0], ho, wo, cv[i].w[0]};
    cmx_array ct = rand_array(so, 4, CMX_FLOAT32);
    o.kind = K_CONV_VJP;
    o.z = ct;
    snprintf(name, sizeof name, "vjp %s", cv[i].name);
    run_case(name, &o, "products", 3 * fl);
    if (cv[i].stride == 1) {
      /* conv_transpose of the output back to the input size; the weight
       * as (C_in, K, K, C_out) */
      int64_t wt[4] = {cv[i].w[3], cv[i].w[1], cv[i].w[2], cv[i].w[0]};
      cmx_array w2 = rand_array(wt, 4, CMX_FLOAT32);
      op_t t = {
          .kind = K_CONV, .x = ct, .y = w2, .flag = true, .p = {1, cv[i].pad}};
      snprintf(name, sizeof name, "conv_transpose of %s", cv[i].name);
      run_case(name, &t, "products", fl);
      cmx_array_release(w2);
    }
    cmx_array_release_all((cmx_array[]){x, w, ct}, 3);
  }
}

int main(int argc, char** argv) {
  setenv("CMX_NUM_THREADS", "2", 0);
  if (argc > 1 && !strcmp(argv[1], "--serve")) {
    g_serve = true;
    argv++, argc--;
  }
  g_filter = argc > 1 && argv[1][0] ? argv[1] : NULL;
  g_reps = argc > 2 ? atoi(argv[2]) : 0;
  g_floor = memcpy_floor();
  printf(
      "bench_sweep: CMX_NUM_THREADS=%s, memcpy floor %.3f ns per float32 "
      "element (16 MB)\n",
      getenv("CMX_NUM_THREADS"), g_floor);
  printf("%-46s %12s %14s %8s\n", "case", "time", "per element", "floor");
  elementwise();
  copies();
  reductions();
  scans();
  sorts();
  indexing();
  joins();
  products();
  convs();
  printf("%d cases, %d flagged (> 10x the memcpy floor, not compute-bound)\n",
         g_run, g_flagged);
  return 0;
}
