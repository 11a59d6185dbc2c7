/* How each primitive of an imported function is rebuilt: with the op that
 * makes it, from the parameters saved in the file (their size and ranges
 * checked here, everything else by the op itself) and the recorded output
 * types. An op may give an equivalent graph rather than the same primitive
 * (a Reduce rebuilt by the reduction op); the caller checks every result
 * against the recorded shapes and dtypes. */
#include <string.h>

#include "export/replay_internal.h"
#include "ops/ops_internal.h"
#include "primitives/conv.h"
#include "primitives/creation.h"
#include "primitives/elementwise.h"
#include "primitives/hadamard.h"
#include "primitives/matmul_gather.h"
#include "primitives/matmul.h"
#include "primitives/reduce.h"
#include "primitives/scan.h"
#include "primitives/sort.h"

#define OP "import_function"

bool cmx__replay_bad(const cmx__fn_op* op, const char* why) {
  cmx__error(CMX_ERR_VALUE, "[%s] malformed %s op: %s", OP, op->vt->name, why);
  return false;
}

static bool ok_count(const cmx__fn_op* op, int n) {
  return n >= 0 && n <= CMX_MAX_NDIM ? true
                                     : cmx__replay_bad(op, "bad axis count");
}

/* ---------------- element-wise ---------------- */
typedef cmx_array (*un_fn)(cmx_array, cmx_stream);
typedef cmx_array (*bin_fn)(cmx_array, cmx_array, cmx_stream);

static bool r_unary(const cmx__fn_op* op, const cmx__fn_value* rec,
                    const cmx_array* in, cmx_array* out, const void* f) {
  (void)rec;
  NEED(1, 1);
  NO_PARAMS;
  ONE(((un_fn)f)(in[0], S));
}

static bool r_binary(const cmx__fn_op* op, const cmx__fn_value* rec,
                     const cmx_array* in, cmx_array* out, const void* f) {
  (void)rec;
  NEED(2, 1);
  NO_PARAMS;
  ONE(((bin_fn)f)(in[0], in[1], S));
}

static bool r_identity(const cmx__fn_op* op, const cmx__fn_value* rec,
                       const cmx_array* in, cmx_array* out, const void* data) {
  UNUSED;
  NEED(1, 1);
  ONE(cmx__ref(in[0]));
}

static bool r_copy(const cmx__fn_op* op, const cmx__fn_value* rec,
                   const cmx_array* in, cmx_array* out, const void* data) {
  UNUSED;
  NEED(1, 1);
  ONE(cmx__copy(in[0], S));
}

static bool r_select(const cmx__fn_op* op, const cmx__fn_value* rec,
                     const cmx_array* in, cmx_array* out, const void* data) {
  UNUSED;
  NEED(3, 1);
  ONE(cmx__where(in[0], in[1], in[2], S));
}

static bool r_round(const cmx__fn_op* op, const cmx__fn_value* rec,
                    const cmx_array* in, cmx_array* out, const void* data) {
  UNUSED;
  NEED(1, 1);
  PARAMS(cmx__round_params, q);
  ONE(cmx__round(in[0], q.decimals, S));
}

static bool r_astype(const cmx__fn_op* op, const cmx__fn_value* rec,
                     const cmx_array* in, cmx_array* out, const void* data) {
  (void)data;
  NEED(1, 1);
  ONE(cmx__astype(in[0], rec[0].dtype, S));
}

static bool r_view(const cmx__fn_op* op, const cmx__fn_value* rec,
                   const cmx_array* in, cmx_array* out, const void* data) {
  (void)data;
  NEED(1, 1);
  ONE(cmx__view(in[0], rec[0].dtype, S));
}

/* ---------------- creation ---------------- */
static bool r_range(const cmx__fn_op* op, const cmx__fn_value* rec,
                    const cmx_array* in, cmx_array* out, const void* lin) {
  (void)in;
  NEED(0, 1);
  PARAMS(cmx__range_params, q);
  if (rec[0].ndim != 1) return cmx__replay_bad(op, "not 1-dimensional");
  if (lin)
    ONE(cmx__linspace(q.start, q.stop, rec[0].shape[0], rec[0].dtype, S));
  ONE(cmx__arange(q.start, q.stop, q.step, rec[0].dtype, S));
}

static bool r_full(const cmx__fn_op* op, const cmx__fn_value* rec,
                   const cmx_array* in, cmx_array* out, const void* data) {
  (void)data;
  NEED(1, 1);
  ONE(cmx__full(rec[0].shape, rec[0].ndim, in[0], rec[0].dtype, S));
}

static bool r_eye_tri(const cmx__fn_op* op, const cmx__fn_value* rec,
                      const cmx_array* in, cmx_array* out, const void* tri) {
  (void)in;
  NEED(0, 1);
  PARAMS(cmx__diag_params, q);
  if (rec[0].ndim != 2) return cmx__replay_bad(op, "not 2-dimensional");
  const int64_t* d = rec[0].shape;
  if (tri) ONE(cmx__tri(d[0], d[1], q.k, rec[0].dtype, S));
  ONE(cmx__eye(d[0], d[1], q.k, rec[0].dtype, S));
}

static bool r_tril_triu(const cmx__fn_op* op, const cmx__fn_value* rec,
                        const cmx_array* in, cmx_array* out, const void* f) {
  (void)rec;
  NEED(1, 1);
  PARAMS(cmx__diag_params, q);
  typedef cmx_array (*tr_fn)(cmx_array, int64_t, cmx_stream);
  ONE(((tr_fn)f)(in[0], q.k, S));
}

/* ---------------- reductions ---------------- */
static bool r_reduce(const cmx__fn_op* op, const cmx__fn_value* rec,
                     const cmx_array* in, cmx_array* out, const void* data) {
  (void)data;
  NEED(1, 1);
  PARAMS(cmx__reduce_params, q);
  typedef cmx_array (*red_fn)(cmx_array, const int*, int, bool, cmx_stream);
  static const red_fn fns[CMX__RED_NUM_KINDS] = {
      cmx__sum, cmx__prod, cmx__min, cmx__max, cmx__mean, cmx__all, cmx__any};
  if (q.kind < 0 || q.kind >= CMX__RED_NUM_KINDS)
    return cmx__replay_bad(op, "bad reduction kind");
  if (!ok_count(op, q.naxes)) return false;
  ONE(fns[q.kind](in[0], q.axes, q.naxes, rec[0].ndim == in[0]->ndim, S));
}

static bool r_argreduce(const cmx__fn_op* op, const cmx__fn_value* rec,
                        const cmx_array* in, cmx_array* out, const void* data) {
  (void)data;
  NEED(1, 1);
  PARAMS(cmx__argreduce_params, q);
  const int* axis = q.axis < 0 ? NULL : &q.axis;
  bool keep = axis && rec[0].ndim == in[0]->ndim;
  if (q.kind == CMX__ARG_MIN) ONE(cmx__argmin(in[0], axis, keep, S));
  if (q.kind == CMX__ARG_MAX) ONE(cmx__argmax(in[0], axis, keep, S));
  return cmx__replay_bad(op, "bad kind");
}

/* LogSumExp, Var and Softmax share one parameter struct. */
static bool r_axes_reduce(const cmx__fn_op* op, const cmx__fn_value* rec,
                          const cmx_array* in, cmx_array* out,
                          const void* which) {
  NEED(1, 1);
  PARAMS(cmx__axes_params, q);
  if (!ok_count(op, q.naxes)) return false;
  bool keep = rec[0].ndim == in[0]->ndim;
  switch (*(const char*)which) {
    case 'l':
      ONE(cmx__logsumexp(in[0], q.axes, q.naxes, keep, S));
    case 's':
      ONE(cmx__softmax(in[0], q.axes, q.naxes, q.precise != 0, S));
    default:
      if (q.sqrt) ONE(cmx__std(in[0], q.axes, q.naxes, keep, q.ddof, S));
      ONE(cmx__var(in[0], q.axes, q.naxes, keep, q.ddof, S));
  }
}

static bool r_scan(const cmx__fn_op* op, const cmx__fn_value* rec,
                   const cmx_array* in, cmx_array* out, const void* data) {
  UNUSED;
  NEED(1, 1);
  PARAMS(cmx__scan_params, q);
  typedef cmx_array (*scan_fn)(cmx_array, const int*, bool, bool, cmx_stream);
  static const scan_fn fns[] = {cmx__cumsum, cmx__cumprod, cmx__cummax,
                                cmx__cummin, cmx__logcumsumexp};
  if (q.kind < 0 || q.kind > CMX__SCAN_LOGADDEXP)
    return cmx__replay_bad(op, "bad kind");
  ONE(fns[q.kind](in[0], &q.axis, q.reverse != 0, q.inclusive != 0, S));
}

/* ---------------- shape (the rest: replay_shape.c) ---------------- */
static bool r_broadcast(const cmx__fn_op* op, const cmx__fn_value* rec,
                        const cmx_array* in, cmx_array* out, const void* data) {
  (void)data;
  NEED(1, 1);
  ONE(cmx__broadcast_to(in[0], rec[0].shape, rec[0].ndim, S));
}

static bool r_reshape(const cmx__fn_op* op, const cmx__fn_value* rec,
                      const cmx_array* in, cmx_array* out, const void* data) {
  (void)data;
  NEED(1, 1);
  ONE(cmx__reshape(in[0], rec[0].shape, rec[0].ndim, S));
}

/* ---------------- sort ---------------- */
static bool r_sort(const cmx__fn_op* op, const cmx__fn_value* rec,
                   const cmx_array* in, cmx_array* out, const void* kind) {
  (void)rec;
  NEED(1, 1);
  PARAMS(cmx__sort_params, q);
  if (q.axis < -CMX_MAX_NDIM || q.axis > CMX_MAX_NDIM || q.kth < INT32_MIN ||
      q.kth > INT32_MAX)
    return cmx__replay_bad(op, "bad axis or kth");
  int axis = (int)q.axis, kth = (int)q.kth;
  switch (*(const char*)kind) {
    case 's':
      ONE(cmx__sort(in[0], &axis, S));
    case 'a':
      ONE(cmx__argsort(in[0], &axis, S));
    case 'p':
      ONE(cmx__partition(in[0], kth, &axis, S));
    default:
      ONE(cmx__argpartition(in[0], kth, &axis, S));
  }
}

static bool r_searchsorted(const cmx__fn_op* op, const cmx__fn_value* rec,
                           const cmx_array* in, cmx_array* out,
                           const void* data) {
  UNUSED;
  NEED(2, 1);
  PARAMS(cmx__searchsorted_params, q);
  ONE(cmx__searchsorted(in[0], in[1], q.right != 0, S));
}

/* ---------------- products, convolution, random, misc ---------------- */
static bool r_matmul(const cmx__fn_op* op, const cmx__fn_value* rec,
                     const cmx_array* in, cmx_array* out, const void* data) {
  UNUSED;
  NEED(2, 1);
  ONE(cmx__matmul(in[0], in[1], S));
}

static bool r_addmm(const cmx__fn_op* op, const cmx__fn_value* rec,
                    const cmx_array* in, cmx_array* out, const void* data) {
  UNUSED;
  NEED(3, 1);
  PARAMS(cmx__addmm_params, q);
  ONE(cmx__addmm(in[0], in[1], in[2], q.alpha, q.beta, S));
}

static bool r_conv(const cmx__fn_op* op, const cmx__fn_value* rec,
                   const cmx_array* in, cmx_array* out, const void* data) {
  UNUSED;
  NEED(2, 1);
  PARAMS(cmx__conv_params, q);
  if (q.nsp < 1 || q.nsp > CMX__CONV_MAX_SPATIAL)
    return cmx__replay_bad(op, "bad rank");
  int st[CMX__CONV_MAX_SPATIAL], lo[CMX__CONV_MAX_SPATIAL],
      hi[CMX__CONV_MAX_SPATIAL], kd[CMX__CONV_MAX_SPATIAL],
      id[CMX__CONV_MAX_SPATIAL];
  for (int i = 0; i < q.nsp; i++) {
    int64_t v[5] = {q.stride[i], q.pad_lo[i], q.pad_hi[i], q.kernel_dilation[i],
                    q.input_dilation[i]};
    for (int k = 0; k < 5; k++)
      if (v[k] < INT32_MIN || v[k] > INT32_MAX)
        return cmx__replay_bad(op, "bad size");
    st[i] = (int)v[0], lo[i] = (int)v[1], hi[i] = (int)v[2];
    kd[i] = (int)v[3], id[i] = (int)v[4];
  }
  ONE(cmx__conv_general(in[0], in[1], st, q.nsp, lo, q.nsp, hi, q.nsp, kd,
                        q.nsp, id, q.nsp, q.groups, q.flip != 0, S));
}

static bool r_depends(const cmx__fn_op* op, const cmx__fn_value* rec,
                      const cmx_array* in, cmx_array* out, const void* data) {
  UNUSED;
  NO_PARAMS;
  if (op->nout < 1 || op->nin < op->nout)
    return cmx__replay_bad(op, "wrong inputs");
  return cmx__depends(out, in, op->nout, in + op->nout, op->nin - op->nout, S);
}

/* A custom function's outputs are its fun's (the inputs after the
 * primals); its transforms are not saved, as MLX. */
static bool r_custom(const cmx__fn_op* op, const cmx__fn_value* rec,
                     const cmx_array* in, cmx_array* out, const void* data) {
  UNUSED;
  if (op->nout < 1 || op->nin < op->nout)
    return cmx__replay_bad(op, "wrong inputs");
  for (int i = 0; i < op->nout; i++)
    if (!(out[i] = cmx__ref(in[op->nin - op->nout + i]))) return false;
  return true;
}

static bool r_hadamard(const cmx__fn_op* op, const cmx__fn_value* rec,
                       const cmx_array* in, cmx_array* out, const void* data) {
  UNUSED;
  NEED(1, 1);
  PARAMS(cmx__hadamard_params, q);
  if (q.transpose) return cmx__replay_bad(op, "transposed transform");
  float scale = (float)q.scale;
  ONE(cmx__hadamard_transform(in[0], &scale, S));
}

static bool r_gather_mm(const cmx__fn_op* op, const cmx__fn_value* rec,
                        const cmx_array* in, cmx_array* out, const void* data) {
  UNUSED;
  NEED(4, 1);
  PARAMS(cmx__gather_mm_params, q);
  (void)q; /* sortedness is a speed hint */
  ONE(cmx__gather_mm(in[0], in[1], in[2], in[3], false, S));
}

static bool r_segmented_mm(const cmx__fn_op* op, const cmx__fn_value* rec,
                           const cmx_array* in, cmx_array* out,
                           const void* data) {
  UNUSED;
  NEED(3, 1);
  ONE(cmx__segmented_mm(in[0], in[1], in[2], S));
}

/* ---------------- the table ---------------- */
typedef struct {
  const char* name;
  cmx__replay_fn fn;
  const void* data;
} entry;

#define E(name, fn, data) \
  { #name, fn, (const void*)(data) }
static const entry k_entries[] = {
    E(AsType, r_astype, 0),
    E(Copy, r_copy, 0),
    E(Arange, r_range, 0),
    E(Linspace, r_range, 1),
    E(Full, r_full, 0),
    E(Eye, r_eye_tri, 0),
    E(Tri, r_eye_tri, 1),
    E(Tril, r_tril_triu, cmx__tril),
    E(Triu, r_tril_triu, cmx__triu),
    E(Round, r_round, 0),
    E(Identity, r_identity, 0),
    E(Select, r_select, 0),
    E(Reduce, r_reduce, 0),
    E(ArgReduce, r_argreduce, 0),
    E(LogSumExp, r_axes_reduce, "l"),
    E(Softmax, r_axes_reduce, "s"),
    E(Var, r_axes_reduce, "v"),
    E(Broadcast, r_broadcast, 0),
    E(Transpose, cmx__replay_transpose, 0),
    E(Squeeze, cmx__replay_squeeze_expand, 0),
    E(ExpandDims, cmx__replay_squeeze_expand, 1),
    E(Slice, cmx__replay_slice, 0),
    E(AsStrided, cmx__replay_as_strided, 0),
    E(Reshape, r_reshape, 0),
    E(Contiguous, cmx__replay_contiguous, 0),
    E(View, r_view, 0),
    E(SliceUpdate, cmx__replay_slice_update, 0),
    E(Concatenate, cmx__replay_concatenate, 0),
    E(Pad, cmx__replay_pad, 0),
    E(Gather, cmx__replay_gather, 0),
    E(Scatter, cmx__replay_scatter, 0),
    E(GatherAxis, cmx__replay_axis_index, 0),
    E(ScatterAxis, cmx__replay_axis_index, 1),
    E(Sort, r_sort, "s"),
    E(ArgSort, r_sort, "a"),
    E(Partition, r_sort, "p"),
    E(ArgPartition, r_sort, "q"),
    E(SearchSorted, r_searchsorted, 0),
    E(Scan, r_scan, 0),
    E(RandomBits, cmx__replay_random_bits, 0),
    E(Convolution, r_conv, 0),
    E(Matmul, r_matmul, 0),
    E(AddMM, r_addmm, 0),
    E(Depends, r_depends, 0),
    E(CustomTransforms, r_custom, 0),
    E(Diagonal, cmx__replay_diagonal, 0),
    E(Hadamard, r_hadamard, 0),
    E(GatherMM, r_gather_mm, 0),
    E(SegmentedMM, r_segmented_mm, 0),
};

/* Element-wise primitives are rebuilt by the op of the same name
 * (ignoring case and underscores: ArcSin by arcsin, LogicalNot by
 * logical_not). */
typedef struct {
  const char* name;
  const void* fn;
} named_op;
#define U(name) {#name, (const void*)cmx__##name},
static const named_op k_unary[] = {CMX__UNARY_OPS(U)};
static const named_op k_binary[] = {CMX__BINARY_OPS(U)};
#undef U

static bool same_name(const char* prim, const char* op) {
  for (;; prim++, op++) {
    if (*op == '_') op++;
    char a = *prim >= 'A' && *prim <= 'Z' ? (char)(*prim - 'A' + 'a') : *prim;
    if (a != *op) return false;
    if (!a) return true;
  }
}

static bool lookup(const cmx_primitive_vtable* vt, entry* e) {
  for (size_t i = 0; i < sizeof k_entries / sizeof *k_entries; i++)
    if (!strcmp(vt->name, k_entries[i].name)) {
      *e = k_entries[i];
      return true;
    }
  for (size_t i = 0; i < sizeof k_unary / sizeof *k_unary; i++)
    if (same_name(vt->name, k_unary[i].name)) {
      *e = (entry){vt->name, r_unary, k_unary[i].fn};
      return true;
    }
  for (size_t i = 0; i < sizeof k_binary / sizeof *k_binary; i++)
    if (same_name(vt->name, k_binary[i].name)) {
      *e = (entry){vt->name, r_binary, k_binary[i].fn};
      return true;
    }
  return false;
}

bool cmx__fn_exportable(const cmx_primitive_vtable* vt) {
  entry e;
  return vt->id >= 0 && lookup(vt, &e);
}

const cmx_primitive_vtable* cmx__fn_primitive(const char* name, size_t len) {
  int n = cmx_builtin_primitive_count();
  for (int i = 0; i < n; i++) {
    const cmx_primitive_vtable* vt = cmx_builtin_primitive(i);
    if (strlen(vt->name) == len && !memcmp(vt->name, name, len)) return vt;
  }
  return NULL;
}

bool cmx__fn_replay(const cmx__fn_op* op, const cmx__fn_value* rec,
                    const cmx_array* in, cmx_array* out) {
  entry e;
  if (!lookup(op->vt, &e))
    return cmx__replay_bad(op, "this primitive cannot be rebuilt");
  return e.fn(op, rec, in, out, e.data);
}
