/* Array nodes: allocation, reference counting (iterative release), scalar
 * and data constructors, properties and host data access. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/layout.h"
#include "core/pool.h"

/* ---------------- shapes ---------------- */

int64_t cmx__shape_size(const int64_t* shape, int ndim) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) return -1;
    if (shape[i] == 0) return 0;
  }
  for (int i = 0; i < ndim; i++)
    if (__builtin_mul_overflow(n, shape[i], &n)) return -1;
  return n;
}

const char* cmx__shape_str(const int64_t* shape, int ndim, char* buf,
                           size_t size) {
  size_t k = 0;
  k += (size_t)snprintf(buf + k, size - k, "(");
  for (int i = 0; i < ndim && k < size; i++)
    k += (size_t)snprintf(buf + k, size - k, i ? ",%lld" : "%lld",
                          (long long)shape[i]);
  if (k < size) snprintf(buf + k, size - k, ")");
  return buf;
}

/* ---------------- nodes ---------------- */

_Thread_local const char* cmx__tl_public_op CMX__TLS_FAST;
static _Thread_local int64_t tl_fail_after CMX__TLS_FAST;

void cmx_debug_fail_after(int64_t n) {
  tl_fail_after = n > 0 ? n : 0;
}

cmx_array cmx__node_new(const char* op, const int64_t* shape, int ndim,
                        cmx_dtype dtype) {
  op = cmx__op_name(op);
  if (tl_fail_after > 0 && --tl_fail_after == 0)
    return CMX__FAIL(CMX_ERR_MEMORY,
                     "[%s] out of host memory (injected: cmx_debug_fail_after)",
                     op);
  if (ndim < 0 || ndim > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] arrays have at most %d dimensions, got %d", op,
                     CMX_MAX_NDIM, ndim);
  if (!cmx_dtype_valid((int)dtype))
    return CMX__FAIL(CMX_ERR_TYPE, "[%s] invalid dtype %d", op, (int)dtype);
  if (ndim > 0 && !shape)
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] shape is NULL", op);
  for (int i = 0; i < ndim; i++)
    if (shape[i] < 0)
      return CMX__FAIL(CMX_ERR_VALUE, "[%s] negative dimension %lld in shape",
                       op, (long long)shape[i]);
  /* NumPy's rule: the product of the non-zero dims, in bytes, fits in an
   * int64, so that every stride and byte offset of the array fits too,
   * those of an empty array with huge other dims included. */
  int64_t size = cmx__shape_size(shape, ndim);
  int64_t span = (int64_t)cmx_dtype_size(dtype);
  for (int i = 0; i < ndim; i++)
    if (shape[i] > 0 && __builtin_mul_overflow(span, shape[i], &span))
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[%s] shape is too large (size overflows)", op);
  cmx_array a = cmx__pool_alloc(cmx__node_bytes(ndim));
  if (!a) return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", op);
  atomic_init(&a->refcount, 1);
  a->dtype = dtype;
  a->ndim = ndim;
  a->size = size;
  a->weak = 0;
  a->flags = 0;
  a->tracer = 0;
  a->hist = NULL;
  a->depth = 0;
  atomic_init(&a->status, CMX__NODE_AVAILABLE);
  a->mark = 0;
  a->stream = -1;
  a->seq = 0;
  a->op = NULL;
  a->out_index = 0;
  a->buf = NULL;
  a->offset = 0;
  a->data_size = size;
  a->error = NULL;
  a->error_status = CMX_OK;
  memset(&a->weak_value, 0, sizeof a->weak_value);
  if (ndim) memcpy(a->dims, shape, (size_t)ndim * sizeof(int64_t));
  cmx__node_set_row_major(a);
  return a;
}

void cmx__node_set_row_major(cmx_array a) {
  cmx__row_major_strides(a->dims, a->ndim, CMX__STRIDES(a));
  cmx__node_update_flags(a);
}

void cmx__node_update_flags(cmx_array a) {
  const int64_t* sh = a->dims;
  const int64_t* st = CMX__STRIDES(a);
  bool row = true, col = true;
  uint64_t s = 1; /* unsigned: see cmx__row_major_strides */
  for (int i = a->ndim - 1; i >= 0; i--) {
    if (sh[i] != 1 && (uint64_t)st[i] != s) row = false;
    s *= (uint64_t)sh[i];
  }
  s = 1;
  for (int i = 0; i < a->ndim; i++) {
    if (sh[i] != 1 && (uint64_t)st[i] != s) col = false;
    s *= (uint64_t)sh[i];
  }
  if (a->size == 0) row = col = true;
  a->flags = (uint8_t)((row ? CMX__FLAG_ROW_CONTIG : 0) |
                       (col ? CMX__FLAG_COL_CONTIG : 0));
}

cmx_array cmx__node_from_data(const char* op, const void* data,
                              const int64_t* shape, int ndim, cmx_dtype dt) {
  cmx_array a = cmx__node_new(op, shape, ndim, dt);
  if (!a) return NULL;
  size_t bytes = (size_t)a->size * cmx_dtype_size(dt);
  a->buf = cmx__buffer_alloc(bytes);
  if (!a->buf) {
    cmx_array_release(a);
    return NULL;
  }
  if (bytes) {
    if (!data) {
      cmx_array_release(a);
      return CMX__FAIL(CMX_ERR_VALUE, "[%s] data is NULL", op);
    }
    memcpy(a->buf->host, data, bytes);
  }
  return a;
}

/* ---------------- reference counting ---------------- */

cmx_array cmx_array_retain(cmx_array a) {
  if (a) atomic_fetch_add_explicit(&a->refcount, 1, memory_order_relaxed);
  return a;
}

/* A thread-local worklist turns the release of long chains into a loop:
 * freeing a node may drop its op, whose inputs may drop to zero, and so on. */
typedef struct {
  cmx_array* items;
  size_t n, cap;
  bool active;
} release_list;
static _Thread_local release_list tl_rel CMX__TLS_FAST;

static void node_free(cmx_array a);

/* Frees a thread's release worklist when the thread exits. */
static pthread_key_t g_rel_key;
static pthread_once_t g_rel_once = PTHREAD_ONCE_INIT;
static void rel_thread_exit(void* p) {
  (void)p;
  free(tl_rel.items);
  tl_rel.items = NULL;
  tl_rel.cap = tl_rel.n = 0;
}
static void rel_key_init(void) {
  pthread_key_create(&g_rel_key, rel_thread_exit);
}

static void push_dead(cmx_array a) {
  if (tl_rel.n == tl_rel.cap) {
    size_t cap = tl_rel.cap ? tl_rel.cap * 2 : 64;
    cmx_array* items = realloc(tl_rel.items, cap * sizeof *items);
    if (!items) { /* cannot defer: free now (recursion bounded by memory) */
      node_free(a);
      return;
    }
    if (!tl_rel.items) {
      pthread_once(&g_rel_once, rel_key_init);
      pthread_setspecific(g_rel_key, items);
    }
    tl_rel.items = items;
    tl_rel.cap = cap;
  }
  tl_rel.items[tl_rel.n++] = a;
}

void cmx_array_release(cmx_array a) {
  if (!a) return;
  if (atomic_fetch_sub_explicit(&a->refcount, 1, memory_order_acq_rel) != 1)
    return;
  push_dead(a);
  if (tl_rel.active) return;
  tl_rel.active = true;
  while (tl_rel.n) node_free(tl_rel.items[--tl_rel.n]);
  tl_rel.active = false;
  if (tl_rel.cap > 4096) {
    free(tl_rel.items);
    tl_rel.items = NULL;
    tl_rel.cap = 0;
  }
}

void cmx_array_release_all(cmx_array* arrays, size_t n) {
  if (!arrays) return;
  for (size_t i = 0; i < n; i++) cmx_array_release(arrays[i]);
}

static void op_lock(cmx__op* op) {
  while (atomic_flag_test_and_set_explicit(&op->lock, memory_order_acquire)) {
  }
}
static void op_unlock(cmx__op* op) {
  atomic_flag_clear_explicit(&op->lock, memory_order_release);
}

static void node_free(cmx_array a) {
  cmx__op* ops[2] = {a->op, a->hist};
  for (int k = 0; k < 2; k++) {
    cmx__op* op = ops[k];
    if (!op) continue;
    if (op->nout > 1) {
      op_lock(op);
      if (op->outputs[a->out_index] == a) op->outputs[a->out_index] = NULL;
      op_unlock(op);
    }
    cmx__op_release(op);
  }
  cmx__buffer_release(a->buf);
  cmx__node_fail(a, NULL, CMX_OK);
  cmx__pool_free(a, cmx__node_bytes(a->ndim));
}

/* The message kept when there is no memory to copy a failure's own. */
static char g_oom_msg[] = "[eval] failed (out of memory recording why)";

void cmx__node_fail(cmx_array a, const char* msg, cmx_status status) {
  if (!msg) {
    if (a->error != g_oom_msg) free(a->error);
    a->error = NULL;
    a->error_status = CMX_OK;
    return;
  }
  if (a->error) return;
  a->error = strdup(msg);
  if (!a->error) a->error = g_oom_msg;
  a->error_status = status == CMX_OK ? CMX_ERR_RUNTIME : status;
}

void cmx__op_release(cmx__op* op) {
  if (atomic_fetch_sub_explicit(&op->refcount, 1, memory_order_acq_rel) != 1)
    return;
  cmx_primitive_release(op->prim);
  for (int i = 0; i < op->nin; i++) cmx_array_release(op->inputs[i]);
  cmx__op_free(op);
}

void cmx__op_free(cmx__op* op) {
  if (op->nout == 1)
    cmx__pool_free(op, cmx__op1_bytes(op->nin));
  else
    free(op);
}

/* Takes a strong reference to output i of op, or NULL when it died. */
cmx_array cmx__op_output(cmx__op* op, int i) {
  if (op->nout == 1) return cmx_array_retain(op->outputs[0]);
  op_lock(op);
  cmx_array a = op->outputs[i];
  if (a) {
    int64_t c = atomic_load_explicit(&a->refcount, memory_order_relaxed);
    while (c > 0 && !atomic_compare_exchange_weak(&a->refcount, &c, c + 1)) {
    }
    if (c == 0) a = NULL; /* dying: its free will clear the slot */
  }
  op_unlock(op);
  return a;
}

/* ---------------- constructors ---------------- */

cmx_status cmx_array_from_data(cmx_array* out, const void* data,
                               const int64_t* shape, int ndim,
                               cmx_dtype dtype) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[array] output pointer is NULL");
  *out = cmx__node_from_data("array", data, shape, ndim, dtype);
  return *out ? CMX_OK : cmx_last_status();
}

/* double to int64 without undefined behaviour: NaN gives 0, out-of-range
 * values saturate. */
static int64_t d2i(double d) {
  if (d != d) return 0;
  if (d >= 9223372036854775807.0) return INT64_MAX;
  if (d <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)d;
}
static uint64_t d2u(double d) {
  if (d != d || d <= 0) return d <= -1 ? (uint64_t)d2i(d) : 0;
  if (d >= 18446744073709551615.0) return UINT64_MAX;
  return (uint64_t)d;
}

void cmx__store_scalar(void* dst, cmx_dtype dt, int kind, cmx__scalar_value s) {
  double d = kind == 0   ? (double)s.i
             : kind == 1 ? (double)s.u
             : kind == 2 ? s.f
                         : s.c.re;
  int64_t i = kind == 0 ? s.i : kind == 1 ? (int64_t)s.u : d2i(d);
  switch (dt) {
    case CMX_BOOL:
      *(uint8_t*)dst = kind >= 2 ? d != 0 : i != 0;
      break;
    case CMX_UINT8:
      *(uint8_t*)dst = (uint8_t)i;
      break;
    case CMX_UINT16:
      *(uint16_t*)dst = (uint16_t)i;
      break;
    case CMX_UINT32:
      *(uint32_t*)dst = (uint32_t)i;
      break;
    case CMX_UINT64:
      *(uint64_t*)dst = kind == 1 ? s.u : kind >= 2 ? d2u(d) : (uint64_t)i;
      break;
    case CMX_INT8:
      *(int8_t*)dst = (int8_t)i;
      break;
    case CMX_INT16:
      *(int16_t*)dst = (int16_t)i;
      break;
    case CMX_INT32:
      *(int32_t*)dst = (int32_t)i;
      break;
    case CMX_INT64:
      *(int64_t*)dst = i;
      break;
    case CMX_FLOAT16:
      *(uint16_t*)dst = cmx_float_to_float16((float)d);
      break;
    case CMX_BFLOAT16:
      *(uint16_t*)dst = cmx_float_to_bfloat16((float)d);
      break;
    case CMX_FLOAT32:
      *(float*)dst = (float)d;
      break;
    case CMX_FLOAT64:
      *(double*)dst = d;
      break;
    case CMX_COMPLEX64: {
      float c[2] = {(float)d, kind == 3 ? (float)s.c.im : 0.0f};
      memcpy(dst, c, 8);
      break;
    }
    default:
      break;
  }
}

/* A 0-d array of dt holding scalar s; weak marks weak typing. */
cmx_array cmx__scalar_node(const char* op, cmx__scalar_value s, int kind,
                           cmx_dtype dt, bool weak) {
  unsigned char tmp[16] = {0};
  if (!cmx_dtype_valid((int)dt))
    return CMX__FAIL(CMX_ERR_TYPE, "[%s] invalid dtype %d", op, (int)dt);
  cmx__store_scalar(tmp, dt, kind, s);
  cmx_array a = cmx__node_from_data(op, tmp, NULL, 0, dt);
  if (a && weak) {
    a->weak = (uint8_t)(kind + 1); /* 1 int, 2 uint, 3 float, 4 complex */
    a->weak_value = s;
  }
  return a;
}

/* A weak scalar re-created as dtype dt from its exact value. */
cmx_array cmx__weak_cast(cmx_array a, cmx_dtype dt) {
  int kind = a->weak == 5 ? 0 : a->weak - 1; /* bool keeps its int value */
  return cmx__scalar_node("astype", a->weak_value, kind, dt, false);
}

#define SCALAR_CTOR(fn, T, kind, field, weakflag, dtarg, dtexpr)          \
  cmx_status fn(cmx_array* out, T v dtarg) {                              \
    if (!out)                                                             \
      return cmx__error(CMX_ERR_VALUE, "[array] output pointer is NULL"); \
    cmx__scalar_value s;                                                  \
    memset(&s, 0, sizeof s);                                              \
    s.field = v;                                                          \
    *out = cmx__scalar_node("array", s, kind, dtexpr, weakflag);          \
    return *out ? CMX_OK : cmx_last_status();                             \
  }
#define COMMA ,
SCALAR_CTOR(cmx_array_from_double, double, 2, f, false, COMMA cmx_dtype dt, dt)
SCALAR_CTOR(cmx_array_from_int64, int64_t, 0, i, false, COMMA cmx_dtype dt, dt)
SCALAR_CTOR(cmx_array_from_uint64, uint64_t, 1, u, false, COMMA cmx_dtype dt,
            dt)
SCALAR_CTOR(cmx_array_weak_int, int64_t, 0, i, true, , CMX_INT32)
SCALAR_CTOR(cmx_array_weak_float, double, 2, f, true, , CMX_FLOAT32)

cmx_status cmx_array_weak_bool(cmx_array* out, bool v) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[array] output pointer is NULL");
  cmx__scalar_value s = {.i = v};
  /* Python bools promote like bool arrays, which already give way to any
   * other dtype; they are marked weak so mixed-kind rules stay uniform. */
  *out = cmx__scalar_node("array", s, 0, CMX_BOOL, false);
  if (*out) {
    (*out)->weak = 5;
    (*out)->weak_value = s;
  }
  return *out ? CMX_OK : cmx_last_status();
}

cmx_status cmx_array_from_complex(cmx_array* out, float re, float im) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[array] output pointer is NULL");
  cmx__scalar_value s;
  s.c.re = re;
  s.c.im = im;
  *out = cmx__scalar_node("array", s, 3, CMX_COMPLEX64, false);
  return *out ? CMX_OK : cmx_last_status();
}

cmx_status cmx_array_weak_complex(cmx_array* out, double re, double im) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[array] output pointer is NULL");
  cmx__scalar_value s;
  s.c.re = re;
  s.c.im = im;
  *out = cmx__scalar_node("array", s, 3, CMX_COMPLEX64, true);
  return *out ? CMX_OK : cmx_last_status();
}

bool cmx_array_is_weak(cmx_array a) {
  return a && a->weak;
}

/* ---------------- properties ---------------- */

int cmx_array_ndim(cmx_array a) {
  return a ? a->ndim : 0;
}
const int64_t* cmx_array_shape(cmx_array a) {
  return a ? a->dims : NULL;
}
int64_t cmx_array_dim(cmx_array a, int i) {
  if (!a) return 0;
  if (i < 0) i += a->ndim;
  return (i < 0 || i >= a->ndim) ? 0 : a->dims[i];
}
int64_t cmx_array_size(cmx_array a) {
  return a ? a->size : 0;
}
size_t cmx_array_itemsize(cmx_array a) {
  return a ? cmx_dtype_size(a->dtype) : 0;
}
size_t cmx_array_nbytes(cmx_array a) {
  return a ? (size_t)a->size * cmx_dtype_size(a->dtype) : 0;
}
cmx_dtype cmx_array_dtype(cmx_array a) {
  return a ? a->dtype : CMX_BOOL;
}

cmx_stream cmx_array_stream(cmx_array a) {
  if (a && a->op) return a->op->prim->stream;
  cmx__stream* s = a ? cmx__stream_get(a->stream) : NULL;
  if (s) return (cmx_stream){s->index, s->device};
  cmx_stream out = CMX_STREAM_DEFAULT;
  cmx_stream_resolve(&out, cmx_stream_on(cmx_device_cpu()));
  return out;
}

const int64_t* cmx_array_strides(cmx_array a) {
  return a ? CMX__STRIDES(a) : NULL;
}

const cmx_primitive* cmx_array_primitive(cmx_array a) {
  return (a && a->op) ? a->op->prim : NULL;
}

const cmx_array* cmx_array_inputs(cmx_array a, int* n) {
  if (!a || !a->op) {
    if (n) *n = 0;
    return NULL;
  }
  if (n) *n = a->op->nin;
  return a->op->inputs;
}

bool cmx_array_is_lazy(cmx_array a) {
  return a && a->op;
}

bool cmx_array_is_available(cmx_array a) {
  if (!a || a->op) return false;
  if (atomic_load_explicit(&a->status, memory_order_acquire) ==
      CMX__NODE_AVAILABLE)
    return true;
  return cmx__stream_done(a->stream, a->seq);
}

cmx_status cmx_array_buffer_size(cmx_array a, size_t* out) {
  *out = 0;
  if (!a || a->op)
    return cmx__error(CMX_ERR_VALUE,
                      "[get_array_buffer_size] Arrays must be evaluated "
                      "before querying buffer size.");
  cmx_status st = cmx_array_eval(a);
  if (st != CMX_OK) return st;
  *out = a->buf ? a->buf->size : 0;
  return CMX_OK;
}

/* ---------------- data access ---------------- */

cmx_status cmx__node_host(cmx_array a, void** out) {
  if (a->tracer == CMX__PLACEHOLDER)
    return cmx__error(CMX_ERR_VALUE, "%s", cmx__placeholder_msg);
  cmx_status st = cmx__node_wait(a);
  if (st != CMX_OK) return st;
  if (!a->buf) return cmx__error(CMX_ERR_RUNTIME, "[eval] array has no data");
  st = cmx__buffer_to_host(a->buf);
  if (st != CMX_OK) return st;
  *out = cmx__node_ptr(a);
  return CMX_OK;
}

cmx_status cmx_array_data(cmx_array a, const void** out) {
  if (!a) return cmx__error(CMX_ERR_VALUE, "[data] argument is a null array");
  if (!out) return cmx__error(CMX_ERR_VALUE, "[data] output pointer is NULL");
  return cmx__node_host(a, (void**)out);
}

bool cmx_array_is_row_contiguous(cmx_array a) {
  if (!a || cmx__node_wait(a) != CMX_OK) return false;
  return a->flags & CMX__FLAG_ROW_CONTIG;
}

bool cmx_kernel_is_contiguous(cmx_array a) {
  return a->flags & CMX__FLAG_ROW_CONTIG;
}

/* Copies a strided array into dst in row-major order, element by element
 * size (used for reading data out; kernels have faster paths). */
static void copy_rowmajor(char* dst, const char* src, const int64_t* shape,
                          const int64_t* strides, int ndim, size_t isz) {
  int64_t idx[CMX_MAX_NDIM] = {0};
  int64_t n = cmx__shape_size(shape, ndim);
  const char* p = src;
  for (int64_t k = 0; k < n; k++) {
    memcpy(dst + (size_t)k * isz, p, isz);
    for (int d = ndim - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) {
        p += strides[d] * (int64_t)isz;
        break;
      }
      p -= (shape[d] - 1) * strides[d] * (int64_t)isz;
      idx[d] = 0;
    }
  }
}

cmx_status cmx_array_copy_to(cmx_array a, void* dst, size_t capacity) {
  if (!a)
    return cmx__error(CMX_ERR_VALUE, "[copy_to] argument is a null array");
  size_t need = cmx_array_nbytes(a);
  if (capacity < need)
    return cmx__error(CMX_ERR_VALUE,
                      "[copy_to] destination holds %zu bytes, need %zu",
                      capacity, need);
  void* p = NULL;
  cmx_status st = cmx__node_host(a, &p);
  if (st != CMX_OK) return st;
  if (!need) return CMX_OK;
  if (!dst) return cmx__error(CMX_ERR_VALUE, "[copy_to] destination is NULL");
  if (a->flags & CMX__FLAG_ROW_CONTIG)
    memcpy(dst, p, need);
  else
    copy_rowmajor(dst, p, a->dims, CMX__STRIDES(a), a->ndim,
                  cmx_dtype_size(a->dtype));
  return CMX_OK;
}

static cmx_status item_ptr(cmx_array a, const char* op, void** p) {
  if (!a) return cmx__error(CMX_ERR_VALUE, "[%s] argument is a null array", op);
  if (a->size != 1)
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] item can only be called on arrays of size 1", op);
  return cmx__node_host(a, p);
}

/* Reads element p of dtype dt as double / int64 / complex. */
double cmx__load_double(const void* p, cmx_dtype dt) {
  switch (dt) {
    case CMX_BOOL:
      return *(const uint8_t*)p != 0;
    case CMX_UINT8:
      return *(const uint8_t*)p;
    case CMX_UINT16:
      return *(const uint16_t*)p;
    case CMX_UINT32:
      return *(const uint32_t*)p;
    case CMX_UINT64:
      return (double)*(const uint64_t*)p;
    case CMX_INT8:
      return *(const int8_t*)p;
    case CMX_INT16:
      return *(const int16_t*)p;
    case CMX_INT32:
      return *(const int32_t*)p;
    case CMX_INT64:
      return (double)*(const int64_t*)p;
    case CMX_FLOAT16:
      return cmx_float16_to_float(*(const uint16_t*)p);
    case CMX_BFLOAT16:
      return cmx_bfloat16_to_float(*(const uint16_t*)p);
    case CMX_FLOAT32:
      return *(const float*)p;
    case CMX_FLOAT64:
      return *(const double*)p;
    case CMX_COMPLEX64:
      return ((const float*)p)[0];
    default:
      return 0;
  }
}

cmx_status cmx_array_item_double(cmx_array a, double* out) {
  void* p = NULL;
  cmx_status st = item_ptr(a, "item", &p);
  if (st != CMX_OK) return st;
  if (out) *out = cmx__load_double(p, a->dtype);
  return CMX_OK;
}

cmx_status cmx_array_item_int64(cmx_array a, int64_t* out) {
  void* p = NULL;
  cmx_status st = item_ptr(a, "item", &p);
  if (st != CMX_OK) return st;
  if (!out) return CMX_OK;
  switch (a->dtype) {
    case CMX_UINT64:
      *out = (int64_t) * (const uint64_t*)p;
      break;
    case CMX_INT64:
      *out = *(const int64_t*)p;
      break;
    default: {
      *out = d2i(cmx__load_double(p, a->dtype));
    }
  }
  return CMX_OK;
}

cmx_status cmx_array_item_bool(cmx_array a, bool* out) {
  void* p = NULL;
  cmx_status st = item_ptr(a, "item", &p);
  if (st != CMX_OK) return st;
  if (!out) return CMX_OK;
  if (a->dtype == CMX_COMPLEX64)
    *out = ((float*)p)[0] != 0 || ((float*)p)[1] != 0;
  else if (a->dtype == CMX_INT64 || a->dtype == CMX_UINT64)
    *out = *(const int64_t*)p != 0;
  else
    *out = cmx__load_double(p, a->dtype) != 0;
  return CMX_OK;
}

cmx_status cmx_array_item_complex(cmx_array a, cmx_complex64_t* out) {
  void* p = NULL;
  cmx_status st = item_ptr(a, "item", &p);
  if (st != CMX_OK) return st;
  if (!out) return CMX_OK;
  if (a->dtype == CMX_COMPLEX64)
    memcpy(out, p, 8);
  else {
    out->re = (float)cmx__load_double(p, a->dtype);
    out->im = 0;
  }
  return CMX_OK;
}

void cmx_free(void* p) {
  free(p);
}
