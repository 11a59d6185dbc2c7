/* output_shapes, equal and hash of every built-in primitive, on graphs
 * built through the ops (and through vmap and vjp of them, whose nodes the
 * transform rules build):
 * - every lazy node's output_shapes gives the shapes its op gave it;
 * - equal and hash agree: a primitive equals itself, two nodes built the
 *   same way have equal parameters and equal hashes, and any two equal
 *   primitives seen anywhere hash alike;
 * - parameters that differ (another axis, dtype, offset ...) are not
 *   equal, for every primitive that has parameters;
 * - every primitive of src/primitives/list.h was checked at least once.
 * Copy has no public op: it is built with the internal cmx__copy. */
#include <unistd.h>

#include "compile/compile_internal.h"
#include "harness.h"
/* clang-format off */
#include "ops/ops_internal.h"
#include "distributed/distributed.h"
/* clang-format on */

#define S CMX_STREAM_DEFAULT
#define MAX_PRIMS 4096

static int g_seen[CMX__NUM_PRIMITIVES];   /* nodes checked */
static int g_differ[CMX__NUM_PRIMITIVES]; /* "different parameters" pairs */
static bool g_has_params[CMX__NUM_PRIMITIVES];
static cmx_primitive* g_prims[MAX_PRIMS]; /* every primitive seen, retained */
static int g_nprims;

static int builtin_id(const cmx_primitive* p) {
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  return cmx_builtin_primitive(vt->id) == vt ? vt->id : -1;
}

static bool shape_is(const cmx_shape* s, const int64_t* dims, int nd) {
  return s->ndim == nd &&
         (nd == 0 || !memcmp(s->dims, dims, (size_t)nd * sizeof *dims));
}

/* Checks one op: output_shapes against every output still alive, equal
 * and hash against itself; records its primitive. */
static void check_op(cmx__op* op) {
  const cmx_primitive* p = op->prim;
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  int id = builtin_id(p);
  if (id < 0) return;
  g_seen[id]++;
  if (cmx_primitive_params_size(p)) g_has_params[id] = true;
  cmx_shape* got = calloc((size_t)op->nout, sizeof *got);
  cmx_status st = vt->output_shapes(p, op->inputs, op->nin, got, op->nout);
  CHECK_MSG(st == CMX_OK, "%s: output_shapes failed: %s", vt->name,
            cmx_last_error());
  for (int i = 0; st == CMX_OK && i < op->nout; i++) {
    cmx_array o = op->outputs[i];
    const int64_t* dims = o ? o->dims : op->out_shapes[i];
    int nd = o ? o->ndim : op->out_ndims[i];
    char a[256], b[256];
    CHECK_MSG(shape_is(&got[i], dims, nd), "%s output %d: node %s, says %s",
              vt->name, i, cmx__shape_str(dims, nd, a, sizeof a),
              cmx__shape_str(got[i].dims, got[i].ndim, b, sizeof b));
  }
  free(got);
  CHECK_MSG(vt->equal(p, p) && cmx_primitive_equal(p, p),
            "%s is not equal to itself", vt->name);
  CHECK_MSG(vt->hash(p) == vt->hash(p) && vt->hash(p) == cmx_primitive_hash(p),
            "%s: unstable hash", vt->name);
  if (g_nprims < MAX_PRIMS) {
    cmx_primitive_retain(op->prim);
    g_prims[g_nprims++] = op->prim;
  }
}

/* Checks every op reachable from the lazy arrays a[0..n). */
static void check_graph(const cmx_array* a, int n) {
  cmx_array stack[MAX_PRIMS];
  cmx__op* done[MAX_PRIMS];
  int top = 0, ndone = 0;
  for (int i = 0; i < n && top < MAX_PRIMS; i++)
    if (a[i]) stack[top++] = a[i];
  while (top > 0) {
    cmx_array x = stack[--top];
    cmx__op* op = cmx__node_op(x);
    if (!op) continue;
    bool seen = false;
    for (int i = 0; i < ndone && !seen; i++) seen = done[i] == op;
    if (seen || ndone == MAX_PRIMS) continue;
    done[ndone++] = op;
    check_op(op);
    for (int i = 0; i < op->nin && top < MAX_PRIMS; i++)
      stack[top++] = op->inputs[i];
  }
}

/* The top primitives of two builds with the same parameters must be equal
 * and hash alike; with other parameters (differ) not equal. */
static void check_pair(const char* what, cmx_array x, cmx_array y,
                       bool differ) {
  const cmx_primitive *p = x ? cmx_array_primitive(x) : NULL,
                      *q = y ? cmx_array_primitive(y) : NULL;
  CHECK_MSG(p && q, "%s: not lazy nodes", what);
  if (!p || !q) return;
  CHECK_MSG(cmx_primitive_vt(p) == cmx_primitive_vt(q), "%s: %s vs %s", what,
            cmx_primitive_name(p), cmx_primitive_name(q));
  if (cmx_primitive_vt(p) != cmx_primitive_vt(q)) return;
  bool eq = cmx_primitive_equal(p, q);
  if (differ) {
    CHECK_MSG(!eq, "%s: other parameters, yet equal", what);
    int id = builtin_id(p);
    if (id >= 0) g_differ[id]++;
  } else {
    CHECK_MSG(eq, "%s: the same parameters, yet not equal", what);
    CHECK_MSG(cmx_primitive_hash(p) == cmx_primitive_hash(q),
              "%s: equal, yet different hashes", what);
  }
}

/* ---------------- cases ----------------
 * A case builds one op's result from its inputs; variant 1 changes the
 * top primitive's parameters (has_variant), variant 0 is built twice. */
typedef cmx_status (*build_fn)(cmx_array* out, const cmx_array* in, int v);

typedef struct {
  const char* name;
  build_fn build;
  int nin;
  int64_t shapes[4][4]; /* per input, ndims below */
  int ndims[4];
  cmx_dtype dtypes[4];
  unsigned flags; /* CASE_* */
} op_case;

enum {
  VARIANT = 1, /* variant 1 changes the parameters */
  NO_VMAP = 2, /* vmap does not apply to it */
  NO_VJP = 4,  /* nor vjp (integer outputs) */
  DISTINCT = 8 /* every build is a node of its own (never equal) */
};

static cmx_array make_input(const op_case* c, int i, int batch) {
  int64_t shape[8];
  int nd = c->ndims[i];
  int k = 0;
  if (batch) shape[k++] = batch;
  for (int d = 0; d < nd; d++) shape[k++] = c->shapes[i][d];
  cmx_dtype dt = c->dtypes[i] ? c->dtypes[i] : CMX_FLOAT32;
  h_tensor t = h_random(shape, k, dt, cmx_dtype_is_integer(dt) ? 0 : -1,
                        cmx_dtype_is_integer(dt) ? 2 : 1, 7 + (uint64_t)i);
  cmx_array a = h_array(&t, H_CONTIG);
  h_free(&t);
  return a;
}

typedef struct {
  const op_case* c;
} closure_ctx;

static cmx_status case_closure(void* payload, const cmx_array* in, int n,
                               cmx_array** outs, int* nout) {
  (void)n;
  const op_case* c = ((closure_ctx*)payload)->c;
  cmx_array r = NULL;
  cmx_status st = c->build(&r, in, 0);
  if (st != CMX_OK) return st;
  check_graph(&r, 1); /* inside the transform: tracer inputs, Identity */
  *outs = malloc(sizeof **outs);
  (*outs)[0] = r;
  *nout = 1;
  return CMX_OK;
}

static void run_case(const op_case* c) {
  cmx_array in[4] = {0};
  for (int i = 0; i < c->nin; i++) in[i] = make_input(c, i, 0);
  cmx_array r0 = NULL, r1 = NULL, r2 = NULL;
  cmx_status st = c->build(&r0, in, 0);
  CHECK_MSG(st == CMX_OK, "%s: %s", c->name, cmx_last_error());
  if (st == CMX_OK) {
    OK(c->build(&r1, in, 0));
    check_graph(&r0, 1);
    check_graph(&r1, 1);
    check_pair(c->name, r0, r1, (c->flags & DISTINCT));
    if ((c->flags & VARIANT)) {
      OK(c->build(&r2, in, 1));
      check_graph(&r2, 1);
      check_pair(c->name, r0, r2, true);
    }
  }
  closure_ctx ctx = {c};
  cmx_closure f = {case_closure, &ctx};
  if (!(c->flags & NO_VMAP) && c->nin > 0) {
    cmx_array bin[4] = {0};
    int axes[4] = {0, 0, 0, 0};
    for (int i = 0; i < c->nin; i++) bin[i] = make_input(c, i, 3);
    cmx_array* outs = NULL;
    int nout = 0;
    st = cmx_vmap(f, bin, c->nin, axes, NULL, 0, &outs, &nout);
    CHECK_MSG(st == CMX_OK, "vmap %s: %s", c->name, cmx_last_error());
    if (st == CMX_OK) check_graph(outs, nout);
    cmx_arrays_free(outs, nout);
    for (int i = 0; i < c->nin; i++) cmx_array_release(bin[i]);
  }
  if (!(c->flags & NO_VJP) && c->nin > 0 && r0) {
    /* Lazy primals: the transform stands an Identity node in for them. */
    cmx_array lazy[4] = {0}, ct = NULL, vj[4] = {0};
    for (int i = 0; i < c->nin; i++) OK(cmx_negative(&lazy[i], in[i], S));
    OK(cmx_ones_like(&ct, r0, S));
    st = cmx_vjp(f, lazy, c->nin, &ct, 1, NULL, NULL, vj);
    /* Integer index inputs take no derivative: gathers and scatters raise
     * (as MLX) when asked for one. */
    bool has_index = false;
    for (int i = 0; i < c->nin; i++)
      has_index |= !cmx_dtype_is_inexact(cmx_array_dtype(in[i]));
    if (st != CMX_OK && has_index)
      CHECK_MSG(strstr(cmx_last_error(), "with respect to indices"),
                "vjp %s: %s", c->name, cmx_last_error());
    else
      CHECK_MSG(st == CMX_OK, "vjp %s: %s", c->name, cmx_last_error());
    if (st == CMX_OK) check_graph(vj, c->nin);
    for (int i = 0; i < c->nin; i++)
      cmx_array_release(lazy[i]), cmx_array_release(vj[i]);
    cmx_array_release(ct);
  }
  cmx_array_release(r0), cmx_array_release(r1), cmx_array_release(r2);
  for (int i = 0; i < c->nin; i++) cmx_array_release(in[i]);
}

/* ---- builders ---- */
#define B(name) static cmx_status name(cmx_array* o, const cmx_array* in, int v)

B(b_astype) {
  return cmx_astype(o, in[0], v ? CMX_INT32 : CMX_FLOAT16, S);
}
B(b_copy) {
  (void)v;
  size_t mark = cmx__scope_enter();
  return cmx__scope_exit(mark, cmx__copy(in[0], S), o);
}
B(b_arange) {
  (void)in;
  return cmx_arange(o, 0, v ? 5 : 7, 1, v ? CMX_INT32 : CMX_FLOAT32, S);
}
/* A lazy load (each load opens the file again: never equal). */
static char g_load_path[64]; /* removed by main */
B(b_load) {
  (void)in, (void)v;
  char* path = g_load_path;
  if (!path[0]) {
    snprintf(path, sizeof g_load_path, "/tmp/cmx_test_shapes_%d.npy",
             (int)getpid());
    cmx_array a = NULL;
    cmx_status st = cmx_arange(&a, 0, 6, 1, CMX_FLOAT32, S);
    if (st == CMX_OK) st = cmx_save(path, a);
    cmx_array_release(a);
    if (st != CMX_OK) return st;
  }
  cmx_status st = cmx_load_npy(o, path, S);
  return st;
}
B(b_linspace) {
  (void)in;
  return cmx_linspace(o, 0, 1, v ? 4 : 6, CMX_FLOAT32, S);
}
B(b_full) {
  (void)v;
  int64_t sh[2] = {4, 3};
  return cmx_full(o, sh, 2, in[0], CMX_DTYPE_AUTO, S);
}
B(b_eye) {
  (void)in;
  return cmx_eye(o, 3, v ? 5 : 4, v, CMX_FLOAT32, S);
}
B(b_tri) {
  (void)in;
  return cmx_tri(o, 4, 3, v ? -1 : 0, CMX_FLOAT32, S);
}
B(b_tril) {
  return cmx_tril(o, in[0], v ? 1 : 0, S);
}
B(b_triu) {
  return cmx_triu(o, in[0], v ? -1 : 0, S);
}
B(b_round) {
  return cmx_round(o, in[0], v ? 2 : 0, S);
}
B(b_where) {
  (void)v;
  cmx_array c = NULL;
  cmx_status st = cmx_greater(&c, in[0], in[1], S);
  if (st == CMX_OK) st = cmx_where(o, c, in[0], in[1], S);
  cmx_array_release(c);
  return st;
}
B(b_sum) {
  int ax = v ? 1 : 0;
  return cmx_sum(o, in[0], &ax, 1, v, S);
}
B(b_argmax) {
  int ax = v ? 1 : 0;
  return cmx_argmax(o, in[0], &ax, false, S);
}
B(b_logsumexp) {
  int ax = v ? 0 : 1;
  return cmx_logsumexp(o, in[0], &ax, 1, false, S);
}
B(b_softmax) {
  int ax = v ? 0 : 1;
  return cmx_softmax(o, in[0], &ax, 1, false, S);
}
B(b_var) {
  int ax = 1;
  return cmx_var(o, in[0], &ax, 1, true, v, S);
}
B(b_broadcast) {
  int64_t sh[3] = {2, v ? 5 : 4, 3};
  return cmx_broadcast_to(o, in[0], sh, 3, S);
}
B(b_transpose) {
  int p0[3] = {2, 0, 1}, p1[3] = {1, 2, 0};
  return cmx_transpose(o, in[0], v ? p1 : p0, 3, S);
}
B(b_squeeze) {
  int ax = v ? 2 : 0;
  return cmx_squeeze(o, in[0], &ax, 1, S);
}
B(b_expand_dims) {
  int ax = v ? 2 : 0;
  return cmx_expand_dims(o, in[0], &ax, 1, S);
}
B(b_slice) {
  int64_t st[2] = {0, v ? 1 : 0}, sp[2] = {2, 3}, step[2] = {1, v ? 1 : 2};
  return cmx_slice(o, in[0], st, sp, step, S);
}
B(b_as_strided) {
  int64_t sh[2] = {2, 2}, st[2] = {v ? 2 : 3, 1};
  return cmx_as_strided(o, in[0], sh, 2, st, 0, S);
}
B(b_reshape) {
  int64_t s0[2] = {3, 4}, s1[1] = {12};
  return cmx_reshape(o, in[0], v ? s1 : s0, v ? 1 : 2, S);
}
B(b_contiguous) {
  cmx_array t = NULL;
  cmx_status st = cmx_transpose(&t, in[0], NULL, 0, S);
  if (st == CMX_OK) st = cmx_contiguous(o, t, v, S);
  cmx_array_release(t);
  return st;
}
B(b_view) {
  return cmx_view(o, in[0], v ? CMX_UINT8 : CMX_INT16, S);
}
B(b_slice_update) {
  int64_t st[2] = {0, v ? 1 : 0}, sp[2] = {2, v ? 3 : 2};
  return cmx_slice_update(o, in[0], in[1], st, sp, NULL, S);
}
B(b_concatenate) {
  cmx_array ab[2] = {in[0], in[0]};
  return cmx_concatenate(o, ab, 2, v ? 0 : 1, S);
}
B(b_pad) {
  int ax[2] = {0, 1};
  int64_t lo[2] = {1, 0}, hi[2] = {0, v ? 1 : 2};
  return cmx_pad(o, in[0], ax, lo, hi, 2, NULL, CMX_PAD_CONSTANT, S);
}
B(b_diagonal) {
  return cmx_diagonal(o, in[0], v ? 1 : -1, 0, 1, S);
}
B(b_gather) {
  int ax = 0;
  int64_t sizes[2] = {1, v ? 2 : 3};
  return cmx_gather(o, in[0], &in[1], 1, &ax, 1, sizes, 2, S);
}
B(b_scatter) {
  int ax = 0;
  cmx_array u = NULL;
  int64_t sh[3] = {2, 1, 3};
  cmx_status st = cmx_ones(&u, sh, 3, CMX_FLOAT32, S);
  if (st == CMX_OK)
    st = v ? cmx_scatter_add(o, in[0], &in[1], 1, u, &ax, 1, S)
           : cmx_scatter(o, in[0], &in[1], 1, u, &ax, 1, S);
  cmx_array_release(u);
  return st;
}
B(b_take_along_axis) {
  int ax = v ? 0 : 1;
  return cmx_take_along_axis(o, in[0], in[1], &ax, S);
}
B(b_put_along_axis) {
  int ax = v ? 0 : 1;
  return cmx_put_along_axis(o, in[0], in[1], in[0], &ax, S);
}
B(b_sort) {
  int ax = v ? 0 : 1;
  return cmx_sort(o, in[0], &ax, S);
}
B(b_argsort) {
  int ax = v ? 0 : 1;
  return cmx_argsort(o, in[0], &ax, S);
}
B(b_partition) {
  int ax = 1;
  return cmx_partition(o, in[0], v ? 2 : 1, &ax, S);
}
B(b_argpartition) {
  int ax = 1;
  return cmx_argpartition(o, in[0], v ? 2 : 1, &ax, S);
}
B(b_searchsorted) {
  cmx_array srt = NULL;
  int ax = 0;
  cmx_status st = cmx_sort(&srt, in[0], &ax, S);
  if (st == CMX_OK) st = cmx_searchsorted(o, srt, in[1], v, S);
  cmx_array_release(srt);
  return st;
}
B(b_cumsum) {
  int ax = v ? 0 : 1;
  return cmx_cumsum(o, in[0], &ax, false, true, S);
}
B(b_random_bits) {
  (void)in;
  cmx_array k = NULL;
  int64_t sh[2] = {2, v ? 5 : 3};
  cmx_status st = cmx_random_key(&k, 3);
  if (st == CMX_OK) st = cmx_random_bits(o, sh, 2, 4, k, S);
  cmx_array_release(k);
  return st;
}
B(b_multivariate_normal) {
  (void)v;
  cmx_array k = NULL, mean = NULL, cov = NULL;
  int64_t n2 = 2, sh[1] = {4};
  cmx_status st = cmx_random_key(&k, 5);
  if (st == CMX_OK) st = cmx_zeros(&mean, &n2, 1, CMX_FLOAT32, S);
  if (st == CMX_OK) st = cmx_eye(&cov, 2, 2, 0, CMX_FLOAT32, S);
  (void)in;
  if (st == CMX_OK)
    st = cmx_random_multivariate_normal(o, mean, cov, sh, 1, CMX_FLOAT32, k, S);
  cmx_array_release(k), cmx_array_release(mean), cmx_array_release(cov);
  return st;
}
B(b_conv1d) {
  return cmx_conv1d(o, in[0], in[1], v ? 2 : 1, 1, 1, 1, S);
}
B(b_matmul) {
  (void)v;
  return cmx_matmul(o, in[0], in[1], S);
}
B(b_addmm) {
  return cmx_addmm(o, in[2], in[0], in[1], 1.0f, v ? 0.5f : 2.0f, S);
}
B(b_gather_mm) {
  return cmx_gather_mm(o, in[0], in[1], in[2], NULL, v, S);
}
B(b_segmented_mm) {
  (void)v;
  return cmx_segmented_mm(o, in[0], in[1], in[2], S);
}
B(b_hadamard) {
  float sc = v ? 0.5f : 0.25f;
  return cmx_hadamard_transform(o, in[0], &sc, S);
}
B(b_rms_norm) {
  return cmx_fast_rms_norm(o, in[0], in[1], v ? 1e-5f : 1e-6f, S);
}
B(b_layer_norm) {
  return cmx_fast_layer_norm(o, in[0], in[1], in[2], v ? 1e-5f : 1e-6f, S);
}
B(b_rope) {
  float base = 10000.f;
  return cmx_fast_rope(o, in[0], 4, v, &base, 1.0f, 2, NULL, NULL, S);
}
B(b_sdpa) {
  return cmx_fast_scaled_dot_product_attention(
      o, in[0], in[1], in[2], v ? 0.5f : 0.25f, "causal", NULL, NULL, S);
}
B(b_cross_entropy) {
  (void)v;
  return cmx_fast_cross_entropy(o, in[0], in[1], S);
}
/* The quantization builders quantize their float input first (bits 4, or
 * 8 for the variant). */
static cmx_status quantized(cmx_array w, int v, cmx_array* q) {
  return cmx_quantize(&q[0], &q[1], &q[2], w, 32, v ? 8 : 4, NULL, S);
}
B(b_quantize) {
  cmx_array q[3] = {0};
  cmx_status st = quantized(in[0], v, q);
  *o = q[0];
  cmx_array_release(q[1]), cmx_array_release(q[2]);
  return st;
}
B(b_dequantize) {
  cmx_array q[3] = {0};
  cmx_status st = quantized(in[0], v, q);
  if (st == CMX_OK)
    st = cmx_dequantize(o, q[0], q[1], q[2], 32, v ? 8 : 4, NULL,
                        CMX_DTYPE_AUTO, S);
  for (int i = 0; i < 3; i++) cmx_array_release(q[i]);
  return st;
}
B(b_quantized_matmul) {
  cmx_array q[3] = {0};
  cmx_status st = quantized(in[1], v, q);
  if (st == CMX_OK)
    st = cmx_quantized_matmul(o, in[0], q[0], q[1], q[2], true, 32, v ? 8 : 4,
                              NULL, S);
  for (int i = 0; i < 3; i++) cmx_array_release(q[i]);
  return st;
}
/* Multi-output ops: output 0, the others released. */
static cmx_status first_of(cmx_status st, cmx_array* outs, int n,
                           cmx_array* o) {
  for (int i = 1; i < n; i++) cmx_array_release(outs[i]);
  *o = outs[0];
  return st;
}
B(b_lu_factor) {
  (void)v;
  cmx_array r[2] = {0};
  return first_of(cmx_linalg_lu_factor(&r[0], &r[1], in[0], S), r, 2, o);
}
B(b_qr) {
  (void)v;
  cmx_array r[2] = {0};
  return first_of(cmx_linalg_qr(&r[0], &r[1], in[0], S), r, 2, o);
}
B(b_svd) {
  cmx_array r[3] = {0};
  int n = 0;
  cmx_status st = cmx_linalg_svd(r, &n, in[0], v, S);
  if (!v) return (*o = r[0]), st;
  cmx_array_release(r[0]), cmx_array_release(r[2]);
  *o = r[1];
  return st;
}
B(b_inv) {
  return v ? cmx_linalg_tri_inv(o, in[0], false, S)
           : cmx_linalg_inv(o, in[0], S);
}
B(b_cholesky) {
  return cmx_linalg_cholesky(o, in[0], v, S);
}
B(b_eigh) {
  cmx_array r[2] = {0};
  return first_of(cmx_linalg_eigh(&r[0], &r[1], in[0], v ? "U" : "L", S), r, 2,
                  o);
}
B(b_eig) {
  cmx_array r[2] = {0};
  if (!v) return cmx_linalg_eigvals(o, in[0], S);
  return first_of(cmx_linalg_eig(&r[0], &r[1], in[0], S), r, 2, o);
}
B(b_solve) {
  (void)v;
  return cmx_linalg_solve(o, in[0], in[1], S);
}
B(b_solve_tri) {
  return cmx_linalg_solve_triangular(o, in[0], in[1], v, S);
}
B(b_fft) {
  int64_t n = 6;
  return v ? cmx_fft_rfft(o, in[0], &n, -1, NULL, S)
           : cmx_fft_fft(o, in[0], NULL, 0, "ortho", S);
}
/* Compiled: a fused region of two ops (exp, then multiply or, variant 1,
 * add), from compile (the kernel cache makes later builds cheap); payload
 * 2 is -(broadcast_to(x, S) * broadcast_to(y, S)) with a fixed S = (4, 2,
 * 3), a region whose shape is not the inputs' broadcast shape. */
static cmx_status fused_pair(void* payload, const cmx_array* in, int n,
                             cmx_array** out, int* nout) {
  (void)n;
  cmx_array e = NULL, r = NULL;
  cmx_status st = cmx_exp(&e, in[0], S);
  if (st == CMX_OK && *(const int*)payload == 2) {
    static const int64_t to[3] = {4, 2, 3};
    cmx_array b0 = NULL, b1 = NULL, m = NULL;
    st = cmx_broadcast_to(&b0, in[0], to, 3, S);
    if (st == CMX_OK) st = cmx_broadcast_to(&b1, in[1], to, 3, S);
    if (st == CMX_OK) st = cmx_multiply(&m, b0, b1, S);
    if (st == CMX_OK) st = cmx_negative(&r, m, S);
    cmx_array_release(b0);
    cmx_array_release(b1);
    cmx_array_release(m);
  } else if (st == CMX_OK)
    st = *(const int*)payload ? cmx_add(&r, e, in[1], S)
                              : cmx_multiply(&r, e, in[1], S);
  cmx_array_release(e);
  if (st != CMX_OK) return st;
  *out = malloc(sizeof **out);
  (*out)[0] = r;
  *nout = 1;
  return CMX_OK;
}
B(b_compiled) {
  static const int variants[3] = {0, 1, 2};
  cmx_compiled* cf = NULL;
  cmx_array* outs = NULL;
  int nout = 0;
  cmx_status st =
      cmx_compile(&cf, (cmx_closure){fused_pair, (void*)&variants[v]}, NULL);
  if (st == CMX_OK) st = cmx_compiled_call(cf, in, 2, &outs, &nout);
  /* The call's op runs the whole graph (src/compile/run.c): the region's
   * own op comes from replaying that graph op by op. */
  const cmx__cgraph* g =
      st == CMX_OK ? cmx__cplan_graph_of(cmx_array_primitive(outs[0])) : NULL;
  if (g && g->nin == 2 && g->nout == 1) {
    cmx_array r = NULL;
    st = cmx__cgraph_replay(g, in, &r);
    cmx_array_release(outs[0]);
    outs[0] = st == CMX_OK ? r : NULL;
  }
  if (st == CMX_OK) *o = outs[0];
  free(outs);
  cmx_compiled_release(cf);
  return st;
}
B(b_compiled_fixed) {
  (void)v;
  return b_compiled(o, in, 2);
}
/* Compiles fn, calls it on in (nin arrays), and replays the compiled graph
 * op by op (the call's op runs the whole graph: src/compile/run.c) to get
 * the op a fusion pass made; *o is its first output (nout outputs, at
 * most 2; the others released). Fails, naming tag, when that op is not of
 * vt (the pass did not fuse). */
static cmx_status fused_by_pass(cmx_closure fn, const cmx_array* in, int nin,
                                int nout_want, const cmx_primitive_vtable* vt,
                                const char* tag, cmx_array* o) {
  cmx_compiled* cf = NULL;
  cmx_array* outs = NULL;
  int nout = 0;
  cmx_status st = cmx_compile(&cf, fn, NULL);
  if (st == CMX_OK) st = cmx_compiled_call(cf, in, nin, &outs, &nout);
  const cmx__cgraph* g =
      st == CMX_OK ? cmx__cplan_graph_of(cmx_array_primitive(outs[0])) : NULL;
  if (g && g->nin == nin && g->nout == nout_want && nout == nout_want) {
    cmx_array r[2] = {NULL, NULL};
    st = cmx__cgraph_replay(g, in, r);
    cmx_array_release_all(outs, (size_t)nout);
    for (int i = 0; i < nout; i++) outs[i] = st == CMX_OK ? r[i] : NULL;
  }
  const cmx_primitive* p = outs && outs[0] ? cmx_array_primitive(outs[0]) : NULL;
  if (st == CMX_OK && (!p || cmx_primitive_vt(p) != vt))
    st = cmx__error(CMX_ERR_RUNTIME, "%s: the pass did not fuse", tag);
  if (st == CMX_OK) {
    *o = outs[0];
    if (nout > 1) cmx_array_release_all(outs + 1, (size_t)nout - 1);
  } else if (outs) {
    cmx_array_release_all(outs, (size_t)nout);
  }
  free(outs);
  cmx_compiled_release(cf);
  return st;
}
/* AddRMSNorm has no op: compile's add_rms_norm pass makes it from
 * rms_norm(x + r, w) (eps 1e-5, variant 1: 1e-6); the graph is replayed op
 * by op, as b_compiled's, and y (the second output) returned. */
static cmx_status add_norm_fn(void* payload, const cmx_array* in, int n,
                              cmx_array** out, int* nout) {
  (void)n;
  cmx_array h = NULL, y = NULL;
  cmx_status st = cmx_add(&h, in[0], in[1], S);
  if (st == CMX_OK)
    st = cmx_fast_rms_norm(&y, h, in[2], *(const float*)payload, S);
  cmx_array_release(h);
  if (st != CMX_OK) return st;
  *out = malloc(sizeof **out);
  (*out)[0] = y;
  *nout = 1;
  return CMX_OK;
}
B(b_add_rms_norm) {
  static const float eps[2] = {1e-5f, 1e-6f};
  return fused_by_pass((cmx_closure){add_norm_fn, (void*)&eps[v]}, in, 3, 1,
                       &cmx__vt_AddRMSNorm, "add_rms_norm", o);
}
/* RoPEMulti has no op: compile's rope_multi pass makes it from two RoPEs
 * at one offset (the first 4 features of q (2, 3, 8) and k (2, 1, 8);
 * variant 1: traditional); the graph is replayed op by op, as
 * b_add_rms_norm's, and q's rotation (the first output) returned. */
static cmx_status rope_multi_fn(void* payload, const cmx_array* in, int n,
                                cmx_array** out, int* nout) {
  (void)n;
  bool trad = *(const int*)payload;
  float base = 10000.f;
  cmx_array a = NULL, b = NULL;
  cmx_status st = cmx_fast_rope(&a, in[0], 4, trad, &base, 1.0f, 3, NULL,
                                NULL, S);
  if (st == CMX_OK)
    st = cmx_fast_rope(&b, in[1], 4, trad, &base, 1.0f, 3, NULL, NULL, S);
  if (st != CMX_OK) {
    cmx_array_release_all((cmx_array[]){a, b}, 2);
    return st;
  }
  *out = malloc(2 * sizeof **out);
  (*out)[0] = a;
  (*out)[1] = b;
  *nout = 2;
  return CMX_OK;
}
B(b_rope_multi) {
  static const int trad[2] = {0, 1};
  return fused_by_pass((cmx_closure){rope_multi_fn, (void*)&trad[v]}, in, 2, 2,
                       &cmx__vt_RoPEMulti, "rope_multi", o);
}
/* QuantizedMatmulSwiGLU has no op: compile's qmm_swiglu pass makes it
 * from silu(y[..., :n]) * y[..., n:] with y a quantized product of one
 * row of x (in[0] (1, 64)) by in[1] (8, 64) quantized (bits 4, variant 1:
 * 8); the graph is replayed op by op, as b_add_rms_norm's. */
static cmx_status qmm_swiglu_fn(void* payload, const cmx_array* in, int n,
                                cmx_array** out, int* nout) {
  (void)n;
  int bits = *(const int*)payload;
  cmx_array q[3] = {0}, y = NULL, a = NULL, b = NULL, sg = NULL, t = NULL,
            o = NULL;
  int64_t s0[2] = {0, 0}, s1[2] = {1, 4}, s2[2] = {0, 4}, s3[2] = {1, 8},
          st1[2] = {1, 1};
  cmx_status st = cmx_quantize(&q[0], &q[1], &q[2], in[1], 32, bits, NULL, S);
  if (st == CMX_OK)
    st = cmx_quantized_matmul(&y, in[0], q[0], q[1], q[2], true, 32, bits,
                              NULL, S);
  if (st == CMX_OK) st = cmx_slice(&a, y, s0, s1, st1, S);
  if (st == CMX_OK) st = cmx_slice(&b, y, s2, s3, st1, S);
  if (st == CMX_OK) st = cmx_sigmoid(&sg, a, S);
  if (st == CMX_OK) st = cmx_multiply(&t, a, sg, S);
  if (st == CMX_OK) st = cmx_multiply(&o, t, b, S);
  cmx_array_release_all((cmx_array[]){q[0], q[1], q[2], y, a, b, sg, t}, 8);
  if (st != CMX_OK) return st;
  *out = malloc(sizeof **out);
  (*out)[0] = o;
  *nout = 1;
  return CMX_OK;
}
B(b_qmm_swiglu) {
  static const int bits[2] = {4, 8};
  return fused_by_pass((cmx_closure){qmm_swiglu_fn, (void*)&bits[v]}, in, 2, 1,
                       &cmx__vt_QuantizedMatmulSwiGLU, "qmm_swiglu", o);
}
/* AddRMSNormQuantizedMatmul has no op: compile's norm_qmm pass (opt-in:
 * CMX_COMPILE_NORM_QMV=1 while it traces) makes it
 * from rms_norm(x + r, w) (x (1, 64)) feeding a one-row quantized product
 * by in[3] (8, 64) quantized (bits 4, variant 1: 8); the graph is replayed
 * op by op, as b_add_rms_norm's, and the product (its second output)
 * returned. */
static cmx_status norm_qmm_fn(void* payload, const cmx_array* in, int n,
                              cmx_array** out, int* nout) {
  (void)n;
  int bits = *(const int*)payload;
  cmx_array q[3] = {0}, h = NULL, y = NULL, o = NULL;
  cmx_status st = cmx_add(&h, in[0], in[1], S);
  if (st == CMX_OK) st = cmx_fast_rms_norm(&y, h, in[2], 1e-5f, S);
  if (st == CMX_OK)
    st = cmx_quantize(&q[0], &q[1], &q[2], in[3], 32, bits, NULL, S);
  if (st == CMX_OK)
    st = cmx_quantized_matmul(&o, y, q[0], q[1], q[2], true, 32, bits, NULL,
                              S);
  cmx_array_release_all((cmx_array[]){q[0], q[1], q[2], h, y}, 5);
  if (st != CMX_OK) return st;
  *out = malloc(sizeof **out);
  (*out)[0] = o;
  *nout = 1;
  return CMX_OK;
}
B(b_norm_qmm) {
  static const int bits[2] = {4, 8};
  /* the pass is opt-in (read at each trace) */
  const char* was = getenv("CMX_COMPILE_NORM_QMV");
  char* keep = was ? strdup(was) : NULL;
  setenv("CMX_COMPILE_NORM_QMV", "1", 1);
  cmx_status st = fused_by_pass(
      (cmx_closure){norm_qmm_fn, (void*)&bits[v]}, in, 4, 1,
      &cmx__vt_AddRMSNormQuantizedMatmul, "norm_qmm", o);
  if (keep)
    setenv("CMX_COMPILE_NORM_QMV", keep, 1);
  else
    unsetenv("CMX_COMPILE_NORM_QMV");
  free(keep);
  return st;
}
B(b_depends) {
  (void)v;
  cmx_array outs[2] = {0}, dep = NULL;
  cmx_status st = cmx_exp(&dep, in[1], S);
  if (st == CMX_OK) st = cmx_depends(outs, in, 1, &dep, 1, S);
  cmx_array_release(dep);
  *o = outs[0];
  return st;
}

/* A custom function of one input: fun = sin, no rules. */
static cmx_status cf_sin(void* pl, const cmx_array* in, int n, cmx_array** out,
                         int* nout) {
  (void)pl, (void)n;
  *out = malloc(sizeof **out);
  *nout = 1;
  return cmx_sin(&(*out)[0], in[0], S);
}
B(b_custom) {
  (void)v;
  cmx_custom_function cf = {.fun = {cf_sin, NULL}};
  cmx_array* outs = NULL;
  int n = 0;
  cmx_status st = cmx_custom_function_apply(&cf, in, 1, &outs, &n);
  *o = st == CMX_OK ? outs[0] : NULL;
  free(outs);
  return st;
}

/* Collectives need a group of more than one process: a group of 2 whose
 * backend is never called (these graphs are built, never evaluated). */
static const cmx__dist_backend g_nobackend = {.name = "none"};
static cmx_group* g_pairs[2];     /* released by main */
static cmx_group* pair_v(int v) { /* two groups: other parameters */
  if (!g_pairs[v]) g_pairs[v] = cmx__group_new(&g_nobackend, NULL, 0, 2);
  return g_pairs[v];
}
static cmx_group* pair(void) {
  return pair_v(0);
}
B(b_all_reduce) {
  return (v ? cmx_distributed_all_max : cmx_distributed_all_sum)(o, in[0],
                                                                 pair(), S);
}
B(b_all_gather) {
  return cmx_distributed_all_gather(o, in[0], pair_v(v), S);
}
B(b_sum_scatter) {
  return cmx_distributed_sum_scatter(o, in[0], pair_v(v), S);
}
B(b_send) {
  (void)v;
  return cmx_distributed_send(o, in[0], 1, pair(), S);
}
B(b_recv) {
  (void)in;
  int64_t shape[2] = {2, 3};
  return cmx_distributed_recv(o, shape, v ? 1 : 2, CMX_FLOAT32, 1, pair(), S);
}

#define F32 CMX_FLOAT32
#define I32 CMX_INT32
#define U32 CMX_UINT32
/* clang-format off */
static const op_case CASES[] = {
    {"astype", b_astype, 1, {{2, 3}}, {2}, {F32}, VARIANT},
    {"copy", b_copy, 1, {{2, 3}}, {2}, {F32}, 0},
    {"arange", b_arange, 0, {{0}}, {0}, {0}, VARIANT},
    {"linspace", b_linspace, 0, {{0}}, {0}, {0}, VARIANT},
    {"load", b_load, 0, {{0}}, {0}, {0}, DISTINCT},
    {"full", b_full, 1, {{3}}, {1}, {F32}, 0},
    {"eye", b_eye, 0, {{0}}, {0}, {0}, VARIANT},
    {"tri", b_tri, 0, {{0}}, {0}, {0}, VARIANT},
    {"tril", b_tril, 1, {{3, 4}}, {2}, {F32}, VARIANT},
    {"triu", b_triu, 1, {{3, 4}}, {2}, {F32}, VARIANT},
    {"round", b_round, 1, {{2, 3}}, {2}, {F32}, VARIANT},
    {"where", b_where, 2, {{2, 3}, {3}}, {2, 1}, {F32, F32}, 0},
    {"sum", b_sum, 1, {{2, 3}}, {2}, {F32}, VARIANT},
    {"argmax", b_argmax, 1, {{2, 3}}, {2}, {F32}, VARIANT | NO_VJP},
    {"logsumexp", b_logsumexp, 1, {{2, 3}}, {2}, {F32}, VARIANT},
    {"softmax", b_softmax, 1, {{2, 3}}, {2}, {F32}, VARIANT},
    {"var", b_var, 1, {{2, 3}}, {2}, {F32}, VARIANT},
    {"broadcast_to", b_broadcast, 1, {{3}}, {1}, {F32}, VARIANT},
    {"transpose", b_transpose, 1, {{2, 3, 4}}, {3}, {F32}, VARIANT},
    {"squeeze", b_squeeze, 1, {{1, 3, 1}}, {3}, {F32}, VARIANT},
    {"expand_dims", b_expand_dims, 1, {{2, 3}}, {2}, {F32}, VARIANT},
    {"slice", b_slice, 1, {{3, 4}}, {2}, {F32}, VARIANT},
    {"as_strided", b_as_strided, 1, {{3, 4}}, {2}, {F32}, VARIANT},
    {"reshape", b_reshape, 1, {{2, 6}}, {2}, {F32}, VARIANT},
    {"contiguous", b_contiguous, 1, {{2, 3}}, {2}, {F32}, VARIANT},
    {"view", b_view, 1, {{2, 4}}, {2}, {I32}, VARIANT | NO_VJP},
    {"slice_update", b_slice_update, 2, {{3, 4}, {2, 2}}, {2, 2}, {F32, F32}, VARIANT},
    {"concatenate", b_concatenate, 1, {{2, 3}}, {2}, {F32}, VARIANT},
    {"pad", b_pad, 1, {{2, 3}}, {2}, {F32}, VARIANT},
    {"diagonal", b_diagonal, 1, {{3, 4}}, {2}, {F32}, VARIANT},
    {"gather", b_gather, 2, {{3, 4}, {2}}, {2, 1}, {F32, I32}, VARIANT},
    {"scatter", b_scatter, 2, {{3, 3}, {2}}, {2, 1}, {F32, I32}, VARIANT},
    {"take_along_axis", b_take_along_axis, 2, {{3, 3}, {3, 3}}, {2, 2}, {F32, I32}, VARIANT},
    {"put_along_axis", b_put_along_axis, 2, {{3, 3}, {3, 3}}, {2, 2}, {F32, I32}, VARIANT},
    {"sort", b_sort, 1, {{3, 4}}, {2}, {F32}, VARIANT},
    {"argsort", b_argsort, 1, {{3, 4}}, {2}, {F32}, VARIANT | NO_VJP},
    {"partition", b_partition, 1, {{3, 4}}, {2}, {F32}, VARIANT},
    {"argpartition", b_argpartition, 1, {{3, 4}}, {2}, {F32}, VARIANT | NO_VJP},
    {"searchsorted", b_searchsorted, 2, {{5}, {2, 3}}, {1, 2}, {F32, F32}, VARIANT | NO_VJP},
    {"cumsum", b_cumsum, 1, {{2, 3}}, {2}, {F32}, VARIANT},
    {"random_bits", b_random_bits, 0, {{0}}, {0}, {0}, VARIANT},
    {"multivariate_normal", b_multivariate_normal, 0, {{0}}, {0}, {0}, 0},
    {"conv1d", b_conv1d, 2, {{2, 8, 3}, {4, 3, 3}}, {3, 3}, {F32, F32}, VARIANT},
    {"matmul", b_matmul, 2, {{2, 3, 4}, {4, 5}}, {3, 2}, {F32, F32}, 0},
    {"addmm", b_addmm, 3, {{2, 3}, {3, 4}, {2, 4}}, {2, 2, 2}, {F32, F32, F32}, VARIANT},
    {"gather_mm", b_gather_mm, 3, {{3, 2, 4}, {4, 5}, {2}}, {3, 2, 1}, {F32, F32, U32}, VARIANT | NO_VJP},
    {"segmented_mm", b_segmented_mm, 3, {{2, 4}, {4, 3}, {3, 2}}, {2, 2, 2}, {F32, F32, U32}, NO_VJP},
    {"hadamard_transform", b_hadamard, 1, {{3, 8}}, {2}, {F32}, VARIANT},
    {"rms_norm", b_rms_norm, 2, {{2, 8}, {8}}, {2, 1}, {F32, F32}, VARIANT},
    {"add_rms_norm", b_add_rms_norm, 3, {{2, 8}, {2, 8}, {8}}, {2, 2, 1}, {F32, F32, F32}, VARIANT},
    {"layer_norm", b_layer_norm, 3, {{2, 8}, {8}, {8}}, {2, 1, 1}, {F32, F32, F32}, VARIANT},
    {"rope", b_rope, 1, {{2, 3, 8}}, {3}, {F32}, VARIANT},
    {"rope_multi", b_rope_multi, 2, {{2, 3, 8}, {2, 1, 8}}, {3, 3}, {F32, F32}, VARIANT},
    {"sdpa", b_sdpa, 3, {{1, 2, 3, 4}, {1, 1, 5, 4}, {1, 1, 5, 4}}, {4, 4, 4}, {F32, F32, F32}, VARIANT},
    {"cross_entropy", b_cross_entropy, 2, {{2, 5}, {2}}, {2, 1}, {F32, I32}, 0},
    {"quantize", b_quantize, 1, {{2, 64}}, {2}, {F32}, VARIANT | NO_VJP},
    {"dequantize", b_dequantize, 1, {{2, 64}}, {2}, {F32}, VARIANT | NO_VJP},
    {"quantized_matmul", b_quantized_matmul, 2, {{3, 64}, {8, 64}}, {2, 2}, {F32, F32}, VARIANT | NO_VJP},
    {"qmm_swiglu", b_qmm_swiglu, 2, {{1, 64}, {8, 64}}, {2, 2}, {F32, F32}, VARIANT | NO_VJP},
    {"norm_qmm", b_norm_qmm, 4, {{1, 64}, {1, 64}, {64}, {8, 64}}, {2, 2, 1, 2}, {F32, F32, F32, F32}, VARIANT | NO_VJP},
    {"lu_factor", b_lu_factor, 1, {{3, 3}}, {2}, {F32}, 0},
    {"qr", b_qr, 1, {{4, 3}}, {2}, {F32}, 0},
    {"svd", b_svd, 1, {{3, 3}}, {2}, {F32}, VARIANT},
    {"inv", b_inv, 1, {{3, 3}}, {2}, {F32}, VARIANT},
    {"cholesky", b_cholesky, 1, {{3, 3}}, {2}, {F32}, VARIANT},
    {"eigh", b_eigh, 1, {{3, 3}}, {2}, {F32}, VARIANT},
    {"eig", b_eig, 1, {{3, 3}}, {2}, {F32}, VARIANT | NO_VJP},
    {"solve", b_solve, 2, {{3, 3}, {3, 2}}, {2, 2}, {F32, F32}, 0},
    {"solve_triangular", b_solve_tri, 2, {{3, 3}, {3, 2}}, {2, 2}, {F32, F32}, VARIANT},
    {"fft", b_fft, 1, {{2, 5}}, {2}, {F32}, VARIANT},
    {"compiled", b_compiled, 2, {{2, 3}, {3}}, {2, 1}, {F32, F32}, VARIANT},
    {"compiled_fixed", b_compiled_fixed, 2, {{2, 3}, {3}}, {2, 1}, {F32, F32}, 0},
    {"depends", b_depends, 2, {{2, 3}, {3}}, {2, 1}, {F32, F32}, 0},
    {"custom_function", b_custom, 1, {{2, 3}}, {2}, {F32}, VARIANT | DISTINCT},
    {"all_sum", b_all_reduce, 1, {{2, 3}}, {2}, {F32}, VARIANT},
    {"all_gather", b_all_gather, 1, {{2, 3}}, {2}, {F32}, VARIANT},
    {"sum_scatter", b_sum_scatter, 1, {{4, 3}}, {2}, {F32}, VARIANT | NO_VJP},
    {"send", b_send, 1, {{2, 3}}, {2}, {F32}, DISTINCT | NO_VMAP | NO_VJP},
    {"recv", b_recv, 0, {{0}}, {0}, {0}, DISTINCT},
};
/* clang-format on */

/* Every unary and binary elementwise op (through the op lists of
 * cmx/ops.h), on float32 and, where float32 is refused, int32 inputs. */
static cmx_status try_unary(cmx_status (*fn)(cmx_array*, cmx_array, cmx_stream),
                            cmx_array* o, cmx_array f, cmx_array i) {
  cmx_status st = fn(o, f, S);
  return st == CMX_OK ? st : fn(o, i, S);
}
static cmx_status try_binary(cmx_status (*fn)(cmx_array*, cmx_array, cmx_array,
                                              cmx_stream),
                             cmx_array* o, const cmx_array* f,
                             const cmx_array* i) {
  cmx_status st = fn(o, f[0], f[1], S);
  return st == CMX_OK ? st : fn(o, i[0], i[1], S);
}

static void test_elementwise(void) {
  int64_t s23[2] = {2, 3}, s3[1] = {3};
  h_tensor tf = h_random(s23, 2, CMX_FLOAT32, 0.1, 0.9, 1);
  h_tensor tf3 = h_random(s3, 1, CMX_FLOAT32, 0.1, 0.9, 2);
  h_tensor ti = h_random(s23, 2, CMX_INT32, 0, 3, 3);
  h_tensor ti3 = h_random(s3, 1, CMX_INT32, 0, 3, 4);
  cmx_array f[2] = {h_array(&tf, H_CONTIG), h_array(&tf3, H_CONTIG)};
  cmx_array i[2] = {h_array(&ti, H_TRANSPOSED), h_array(&ti3, H_CONTIG)};
  cmx_array r = NULL, again = NULL;
#define UNARY_CASE(name)                                          \
  r = again = NULL;                                               \
  OK(try_unary(cmx_##name, &r, f[0], i[0]));                      \
  OK(try_unary(cmx_##name, &again, f[0], i[0]));                  \
  check_graph(&r, 1);                                             \
  if (cmx_array_primitive(r)) check_pair(#name, r, again, false); \
  cmx_array_release(r), cmx_array_release(again);
  CMX__UNARY_OPS(UNARY_CASE)
#undef UNARY_CASE
#define BINARY_CASE(name)                   \
  r = again = NULL;                         \
  OK(try_binary(cmx_##name, &r, f, i));     \
  OK(try_binary(cmx_##name, &again, f, i)); \
  check_graph(&r, 1);                       \
  check_pair(#name, r, again, false);       \
  cmx_array_release(r), cmx_array_release(again);
  CMX__BINARY_OPS(BINARY_CASE)
#undef BINARY_CASE
  /* complex inputs for the complex-only paths (conjugate, real, imag) */
  cmx_array z = NULL;
  OK(cmx_astype(&z, f[0], CMX_COMPLEX64, S));
  cmx_status (*cfn[3])(cmx_array*, cmx_array, cmx_stream) = {
      cmx_conjugate, cmx_real, cmx_imag};
  for (int k = 0; k < 3; k++) {
    r = NULL;
    OK(cfn[k](&r, z, S));
    check_graph(&r, 1);
    cmx_array_release(r);
  }
  cmx_array_release(z);
  for (int k = 0; k < 2; k++) cmx_array_release(f[k]), cmx_array_release(i[k]);
  h_free(&tf), h_free(&tf3), h_free(&ti), h_free(&ti3);
}

static void test_cases(void) {
  for (size_t k = 0; k < sizeof CASES / sizeof *CASES; k++) {
    int f0 = t_failed;
    run_case(&CASES[k]);
    if (t_failed != f0) fprintf(stderr, "  in case %s\n", CASES[k].name);
  }
}

/* Any two equal primitives (same kind) hash alike; equality is
 * symmetric. */
static void test_consistency(void) {
  long pairs = 0, equal_pairs = 0;
  for (int a = 0; a < g_nprims; a++)
    for (int b = a + 1; b < g_nprims; b++) {
      const cmx_primitive *p = g_prims[a], *q = g_prims[b];
      if (cmx_primitive_vt(p) != cmx_primitive_vt(q)) continue;
      pairs++;
      bool eq = cmx_primitive_equal(p, q);
      CHECK_MSG(eq == cmx_primitive_equal(q, p), "%s: equal not symmetric",
                cmx_primitive_name(p));
      if (!eq) continue;
      equal_pairs++;
      CHECK_MSG(cmx_primitive_hash(p) == cmx_primitive_hash(q),
                "%s: equal, yet different hashes", cmx_primitive_name(p));
    }
  CHECK(pairs > 100 && equal_pairs > 10);
}

static void test_coverage(void) {
  for (int id = 0; id < CMX__NUM_PRIMITIVES; id++) {
    const char* name = cmx_builtin_primitive(id)->name;
    CHECK_MSG(g_seen[id] > 0, "%s was never built", name);
    CHECK_MSG(!g_has_params[id] || g_differ[id] > 0,
              "%s has parameters but no case changes them", name);
  }
}

int main(void) {
  RUN(test_elementwise);
  RUN(test_cases);
  RUN(test_consistency);
  RUN(test_coverage);
  for (int i = 0; i < g_nprims; i++) cmx_primitive_release(g_prims[i]);
  cmx_group_release(g_pairs[0]), cmx_group_release(g_pairs[1]);
  if (g_load_path[0]) unlink(g_load_path);
  return test_summary("test_primitive_shapes");
}
