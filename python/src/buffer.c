/* Interop: the buffer protocol (zero-copy memoryview and NumPy views of
 * evaluated arrays), __array__, and DLPack (__dlpack__, __dlpack_device__,
 * mx.from_dlpack).
 *
 * bfloat16 has no PEP 3118 format: exporting it as a buffer fails, so NumPy
 * falls back to __array__, which raises MLX's error unless a dtype is asked
 * for (then the values are converted through float32). */
#include "args.h"

/* ---------------- buffer protocol ---------------- */
typedef struct {
  cmx_array arr; /* keeps the data alive while the view exists */
  Py_ssize_t shape[CMX_MAX_NDIM];
  Py_ssize_t strides[CMX_MAX_NDIM];
  char format[4];
} view_info;

static const char* buffer_format(cmx_dtype t) {
  bool lp64 = sizeof(long) == 8;
  switch (t) {
    case CMX_BOOL:
      return "?";
    case CMX_UINT8:
      return "B";
    case CMX_UINT16:
      return "H";
    case CMX_UINT32:
      return "I";
    case CMX_UINT64:
      return lp64 ? "L" : "Q";
    case CMX_INT8:
      return "b";
    case CMX_INT16:
      return "h";
    case CMX_INT32:
      return "i";
    case CMX_INT64:
      return lp64 ? "l" : "q";
    case CMX_FLOAT16:
      return "e";
    case CMX_FLOAT32:
      return "f";
    case CMX_FLOAT64:
      return "d";
    case CMX_COMPLEX64:
      return "Zf";
    default:
      return NULL;
  }
}

static int getbuffer(PyObject* self, Py_buffer* view, int flags) {
  memset(view, 0, sizeof *view);
  cmx_array a = CMXPY_ARR(self);
  cmx_dtype t = cmx_array_dtype(a);
  const char* fmt = buffer_format(t);
  if (!fmt) {
    PyErr_Format(PyExc_BufferError,
                 "%s arrays cannot be exported through the buffer protocol; "
                 "convert them first (a.astype(mx.float32)).",
                 cmx_dtype_name(t));
    return -1;
  }
  bool need_contig = (flags & PyBUF_STRIDES) != PyBUF_STRIDES ||
                     (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS ||
                     (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS;
  bool need_f = (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS &&
                (flags & PyBUF_ANY_CONTIGUOUS) != PyBUF_ANY_CONTIGUOUS;
  view_info* info = PyMem_RawCalloc(1, sizeof *info);
  if (!info) {
    PyErr_NoMemory();
    return -1;
  }
  info->arr = cmx_array_retain(a);
  const void* data;
  cmx_status st = cmxpy_data(info->arr, &data);
  bool readonly = false;
  if (st == CMX_OK && (need_contig || need_f) &&
      !cmx_array_is_row_contiguous(info->arr)) {
    /* A consumer that cannot take strides gets a contiguous copy, read-only
     * so that writes cannot silently miss the array. */
    if (need_f && cmx_array_ndim(a) > 1) {
      cmx_array_release(info->arr);
      PyMem_RawFree(info);
      PyErr_SetString(PyExc_BufferError, "array is not Fortran contiguous");
      return -1;
    }
    if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
      cmx_array_release(info->arr);
      PyMem_RawFree(info);
      PyErr_SetString(PyExc_BufferError,
                      "array is not contiguous: cannot export a writable "
                      "contiguous buffer");
      return -1;
    }
    cmx_array c = NULL;
    st = cmx_astype(&c, info->arr, t, CMX_STREAM_DEFAULT);
    cmx_array_release(info->arr);
    info->arr = c;
    if (st == CMX_OK) st = cmxpy_data(info->arr, &data);
    readonly = true;
  }
  if (st != CMX_OK) {
    cmx_array_release(info->arr);
    PyMem_RawFree(info);
    cmxpy_raise(st);
    return -1;
  }
  int nd = cmx_array_ndim(info->arr);
  const int64_t* shape = cmx_array_shape(info->arr);
  const int64_t* strides = cmx_array_strides(info->arr);
  size_t isz = cmx_dtype_size(t);
  for (int i = 0; i < nd; i++) {
    info->shape[i] = (Py_ssize_t)shape[i];
    info->strides[i] = (Py_ssize_t)(strides[i] * (int64_t)isz);
    if (strides[i] == 0 && shape[i] > 1) readonly = true; /* broadcast */
  }
  if (readonly && (flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
    cmx_array_release(info->arr);
    PyMem_RawFree(info);
    PyErr_SetString(PyExc_BufferError,
                    "a broadcast array cannot be exported as writable");
    return -1;
  }
  strcpy(info->format, fmt);
  view->obj = self;
  Py_INCREF(self);
  view->buf = (void*)data;
  view->len = (Py_ssize_t)cmx_array_nbytes(info->arr);
  view->itemsize = (Py_ssize_t)isz;
  view->readonly = readonly;
  view->ndim = nd;
  view->internal = info;
  if ((flags & PyBUF_FORMAT) == PyBUF_FORMAT) view->format = info->format;
  if ((flags & PyBUF_ND) == PyBUF_ND) view->shape = info->shape;
  if ((flags & PyBUF_STRIDES) == PyBUF_STRIDES) view->strides = info->strides;
  return 0;
}

static void releasebuffer(PyObject* self, Py_buffer* view) {
  (void)self;
  view_info* info = view->internal;
  if (info) {
    cmx_array_release(info->arr);
    PyMem_RawFree(info);
  }
}

PyBufferProcs cmxpy_buffer_procs = {getbuffer, releasebuffer};

/* ---------------- __array__ ---------------- */
CMXPY_DEF_METHOD(__array__, "(self, dtype: object = None, copy: object = None)",
                 "A NumPy array of the data (a view when possible).") {
  PyObject *self = OBJ(0), *dtype = OBJ(1), *copy = OBJ(2);
  PyObject* np = PyImport_ImportModule("numpy");
  if (!np) return NULL;
  PyObject* src = self;
  PyObject* tmp = NULL;
  if (cmx_array_dtype(CMXPY_ARR(self)) == CMX_BFLOAT16) {
    if (dtype == Py_None) {
      Py_DECREF(np);
      PyErr_SetString(PyExc_TypeError,
                      "bfloat16 arrays cannot be converted to NumPy.");
      return NULL;
    }
    cmx_array f = NULL;
    tmp = cmxpy_result(
        cmx_astype(&f, CMXPY_ARR(self), CMX_FLOAT32, CMX_STREAM_DEFAULT), &f);
    if (!tmp) {
      Py_DECREF(np);
      return NULL;
    }
    src = tmp;
  }
  PyObject* mv = PyMemoryView_FromObject(src);
  PyObject* r = mv ? PyObject_CallMethod(np, "asarray", "O", mv) : NULL;
  Py_XDECREF(mv);
  Py_XDECREF(tmp);
  if (r && (dtype != Py_None || copy == Py_True)) {
    PyObject* fn = PyObject_GetAttrString(np, "array");
    PyObject* pargs = Py_BuildValue("(O)", r);
    PyObject* kwargs = Py_BuildValue("{s:O,s:O}", "dtype", dtype, "copy", copy);
    PyObject* c =
        fn && pargs && kwargs ? PyObject_Call(fn, pargs, kwargs) : NULL;
    Py_XDECREF(fn);
    Py_XDECREF(pargs);
    Py_XDECREF(kwargs);
    Py_DECREF(r);
    r = c;
  }
  Py_DECREF(np);
  return r;
}

/* ---------------- DLPack ---------------- */
/* The DLPack ABI (v1.0), declared from the published specification. */
typedef struct {
  int32_t device_type;
  int32_t device_id;
} DLDevice;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor*);
} DLManagedTensor;
typedef struct {
  uint32_t major, minor;
} DLPackVersion;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned*);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6
};
enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };

/* What an exported tensor owns: the array and its shape/strides. */
typedef struct {
  cmx_array arr;
  int64_t shape[CMX_MAX_NDIM];
  int64_t strides[CMX_MAX_NDIM];
} dl_ctx;

static void dl_free_ctx(void* p) {
  dl_ctx* c = p;
  if (!c) return;
  cmx_array_release(c->arr); /* thread-safe; needs no GIL */
  free(c);
}
static void dl_delete(DLManagedTensor* t) {
  dl_free_ctx(t->manager_ctx);
  free(t);
}
static void dl_delete_v(DLManagedTensorVersioned* t) {
  dl_free_ctx(t->manager_ctx);
  free(t);
}

static void capsule_destructor(PyObject* cap) {
  /* Keeps an exception pending when the capsule dies (from_dlpack failing
   * after taking the tensor): only this function's own errors are cleared. */
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  if (PyCapsule_IsValid(cap, "dltensor")) {
    DLManagedTensor* t = PyCapsule_GetPointer(cap, "dltensor");
    if (t && t->deleter) t->deleter(t);
  } else if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
    DLManagedTensorVersioned* t =
        PyCapsule_GetPointer(cap, "dltensor_versioned");
    if (t && t->deleter) t->deleter(t);
  }
  PyErr_Clear();
  PyErr_Restore(type, value, tb);
}

static DLDataType dl_dtype(cmx_dtype t) {
  DLDataType d = {kDLFloat, (uint8_t)(cmx_dtype_size(t) * 8), 1};
  if (t == CMX_BOOL)
    d.code = kDLBool;
  else if (t >= CMX_UINT8 && t <= CMX_UINT64)
    d.code = kDLUInt;
  else if (t >= CMX_INT8 && t <= CMX_INT64)
    d.code = kDLInt;
  else if (t == CMX_BFLOAT16)
    d.code = kDLBfloat;
  else if (t == CMX_COMPLEX64)
    d.code = kDLComplex;
  return d;
}

CMXPY_DEF_METHOD(__dlpack__,
                 "(self, /, *, stream: object = None, max_version: object = "
                 "None, dl_device: object = None, copy: object = None)",
                 "Export the array as a DLPack capsule (CPU memory, shared "
                 "with the array and read-only unless copy=True).") {
  PyObject *self = OBJ(0), *maxv = OBJ(2), *dev = OBJ(3), *copy = OBJ(4);
  /* Exported where the data is (the GPU for a GPU result), or on the
   * device dl_device asks for. A GPU export has finished computing (the
   * eval waited), so the consumer's stream needs no further ordering. */
  cmx_device where = {CMX_CPU, 0};
  if (dev != Py_None) {
    int dt, di;
    if (!PyArg_ParseTuple(dev, "ii", &dt, &di)) return NULL;
    if (dt == kDLCUDA && cmx_is_available((cmx_device){CMX_GPU, di})) {
      where = (cmx_device){CMX_GPU, di};
    } else if (dt != kDLCPU || di != 0) {
      PyErr_Format(PyExc_BufferError,
                   "[__dlpack__] cannot export to DLPack device (%d, %d)", dt,
                   di);
      return NULL;
    }
  } else {
    cmx_status st;
    cmx_array a0 = CMXPY_ARR(OBJ(0));
    Py_BEGIN_ALLOW_THREADS st = cmx_array_data_device(a0, &where);
    Py_END_ALLOW_THREADS if (st != CMX_OK) return cmxpy_raise(st);
  }
  bool versioned = false;
  if (maxv != Py_None) {
    int major = 0, minor = 0;
    if (!PyArg_ParseTuple(maxv, "ii", &major, &minor)) return NULL;
    versioned = major >= 1;
  }
  dl_ctx* ctx = calloc(1, sizeof *ctx);
  if (!ctx) return PyErr_NoMemory();
  cmx_array a = CMXPY_ARR(self);
  cmx_status st = CMX_OK;
  if (copy == Py_True)
    st = cmx_astype(&ctx->arr, a, cmx_array_dtype(a), CMX_STREAM_DEFAULT);
  else
    ctx->arr = cmx_array_retain(a);
  const void* data = NULL;
  if (st == CMX_OK && where.type == CMX_GPU) {
    void* p = NULL;
    Py_BEGIN_ALLOW_THREADS st = cmx_array_device_data(ctx->arr, where, &p);
    Py_END_ALLOW_THREADS data = p;
  } else if (st == CMX_OK) {
    st = cmxpy_data(ctx->arr, &data);
  }
  if (st != CMX_OK) {
    dl_free_ctx(ctx);
    return cmxpy_raise(st);
  }
  int nd = cmx_array_ndim(ctx->arr);
  memcpy(ctx->shape, cmx_array_shape(ctx->arr), (size_t)nd * sizeof(int64_t));
  memcpy(ctx->strides, cmx_array_strides(ctx->arr),
         (size_t)nd * sizeof(int64_t));
  DLDevice dl_dev = {where.type == CMX_GPU ? kDLCUDA : kDLCPU, where.index};
  DLTensor tensor = {
      (void*)data, dl_dev,       nd, dl_dtype(cmx_array_dtype(ctx->arr)),
      ctx->shape,  ctx->strides, 0};
  PyObject* cap;
  if (versioned) {
    DLManagedTensorVersioned* t = calloc(1, sizeof *t);
    if (!t) {
      dl_free_ctx(ctx);
      return PyErr_NoMemory();
    }
    t->version = (DLPackVersion){1, 0};
    t->manager_ctx = ctx;
    t->deleter = dl_delete_v;
    /* Shared memory is read-only (as MLX's export: arrays are values). */
    t->flags = copy == Py_True ? 2 /* IS_COPIED */ : 1 /* READ_ONLY */;
    t->dl_tensor = tensor;
    cap = PyCapsule_New(t, "dltensor_versioned", capsule_destructor);
    if (!cap) dl_delete_v(t);
  } else {
    DLManagedTensor* t = calloc(1, sizeof *t);
    if (!t) {
      dl_free_ctx(ctx);
      return PyErr_NoMemory();
    }
    t->dl_tensor = tensor;
    t->manager_ctx = ctx;
    t->deleter = dl_delete;
    cap = PyCapsule_New(t, "dltensor", capsule_destructor);
    if (!cap) dl_delete(t);
  }
  return cap;
}

CMXPY_DEF_METHOD(__dlpack_device__, "(self, /)",
                 "The DLPack device of the exported data: (1, 0) for the "
                 "CPU, (2, index) for a GPU (kDLCUDA) when the array's data "
                 "is there (a GPU result); evaluates the array.") {
  cmx_device where;
  cmx_status st;
  cmx_array a = CMXPY_ARR(OBJ(0));
  Py_BEGIN_ALLOW_THREADS st = cmx_array_data_device(a, &where);
  Py_END_ALLOW_THREADS if (st != CMX_OK) return cmxpy_raise(st);
  if (where.type == CMX_GPU) return Py_BuildValue("(ii)", kDLCUDA, where.index);
  return Py_BuildValue("(ii)", kDLCPU, 0);
}

/* cmx dtype of a DLPack dtype; complex128 reported as COMPLEX64 + *c128. */
static int dtype_from_dl(DLDataType d, bool* c128) {
  *c128 = false;
  if (d.lanes != 1) return -1;
  switch (d.code) {
    case kDLBool:
      return d.bits == 8 ? CMX_BOOL : -1;
    case kDLInt:
      return d.bits == 8    ? CMX_INT8
             : d.bits == 16 ? CMX_INT16
             : d.bits == 32 ? CMX_INT32
             : d.bits == 64 ? CMX_INT64
                            : -1;
    case kDLUInt:
      return d.bits == 8    ? CMX_UINT8
             : d.bits == 16 ? CMX_UINT16
             : d.bits == 32 ? CMX_UINT32
             : d.bits == 64 ? CMX_UINT64
                            : -1;
    case kDLFloat:
      return d.bits == 16   ? CMX_FLOAT16
             : d.bits == 32 ? CMX_FLOAT32
             : d.bits == 64 ? CMX_FLOAT64
                            : -1;
    case kDLBfloat:
      return d.bits == 16 ? CMX_BFLOAT16 : -1;
    case kDLComplex:
      if (d.bits == 128) *c128 = true;
      return d.bits == 64 || d.bits == 128 ? CMX_COMPLEX64 : -1;
  }
  return -1;
}

/* Hands an imported tensor back to its producer (cmx calls this when the
 * array's data is no longer used, on any thread). */
static void release_managed(void* p, bool versioned) {
  PyGILState_STATE g = PyGILState_Ensure();
  if (versioned) {
    DLManagedTensorVersioned* t = p;
    if (t->deleter) t->deleter(t);
  } else {
    DLManagedTensor* t = p;
    if (t->deleter) t->deleter(t);
  }
  PyGILState_Release(g);
}
static void release_v(void* p) {
  release_managed(p, true);
}
static void release_u(void* p) {
  release_managed(p, false);
}

/* A new array over a CUDA tensor's memory, without a copy (row-major
 * tensors only); it calls release(owner) when done with it. */
static cmx_array array_from_cuda(const DLTensor* t, void (*release)(void*),
                                 void* owner) {
  bool c128;
  int dt = dtype_from_dl(t->dtype, &c128);
  if (dt < 0 || c128 || t->ndim < 0 || t->ndim > CMX_MAX_NDIM) {
    PyErr_SetString(PyExc_TypeError, "[from_dlpack] unsupported dtype or rank");
    return NULL;
  }
  int64_t expect = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->strides && t->shape[i] != 1 && t->strides[i] != expect) {
      PyErr_SetString(PyExc_BufferError,
                      "[from_dlpack] only row-major (contiguous) CUDA tensors "
                      "are shared without a copy: call .contiguous() first");
      return NULL;
    }
    expect *= t->shape[i];
  }
  cmx_array out = NULL;
  cmx_status st = cmx_array_from_device_memory(
      &out, (char*)t->data + t->byte_offset,
      (cmx_device){CMX_GPU, t->device.device_id}, t->shape, t->ndim,
      (cmx_dtype)dt, release, owner);
  if (st != CMX_OK) {
    cmxpy_raise(st);
    return NULL;
  }
  return out;
}

/* Copies a DLTensor into a new array (row-major). */
static cmx_array array_from_dl(const DLTensor* t) {
  bool c128;
  int dt = dtype_from_dl(t->dtype, &c128);
  if (dt < 0 || t->ndim < 0 || t->ndim > CMX_MAX_NDIM) {
    PyErr_SetString(PyExc_TypeError, "[from_dlpack] unsupported dtype or rank");
    return NULL;
  }
  if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost) {
    PyErr_SetString(PyExc_ValueError,
                    "[from_dlpack] only CPU (host) and CUDA tensors can be "
                    "imported");
    return NULL;
  }
  int nd = t->ndim;
  size_t src_isz = (size_t)(t->dtype.bits / 8);
  /* The shape is the producer's: checked, and the copy bounded by the
   * memory limit before it is made (a broadcast 2**31-element tensor
   * copied for 90 s before cmx refused it). */
  int64_t size = 1, bytes = 0;
  bool over = false;
  for (int i = 0; i < nd; i++)
    over |= t->shape[i] < 0 || __builtin_mul_overflow(size, t->shape[i], &size);
  over |= __builtin_mul_overflow(size, (int64_t)src_isz, &bytes);
  if (over) {
    PyErr_SetString(PyExc_ValueError, "[from_dlpack] the tensor is too large");
    return NULL;
  }
  if ((uint64_t)size * cmx_dtype_size((cmx_dtype)dt) > cmx_get_memory_limit()) {
    PyErr_Format(PyExc_MemoryError,
                 "[from_dlpack] a copy of %lld elements would exceed the "
                 "memory limit of %zu bytes",
                 (long long)size, cmx_get_memory_limit());
    return NULL;
  }
  char* buf = PyMem_RawMalloc(size > 0 ? (size_t)bytes : 1);
  if (!buf) {
    PyErr_NoMemory();
    return NULL;
  }
  const char* base = (const char*)t->data + t->byte_offset;
  if (size > 0) {
    int64_t idx[CMX_MAX_NDIM] = {0};
    int64_t rm[CMX_MAX_NDIM];
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
      rm[i] = s;
      s *= t->shape[i];
    }
    for (int64_t e = 0; e < size; e++) {
      int64_t off = 0;
      for (int i = 0; i < nd; i++)
        off += idx[i] * (t->strides ? t->strides[i] : rm[i]);
      memcpy(buf + (size_t)e * src_isz, base + off * (int64_t)src_isz, src_isz);
      for (int i = nd - 1; i >= 0 && ++idx[i] == t->shape[i]; i--) idx[i] = 0;
    }
    if (c128)
      for (int64_t i = 0; i < size; i++) {
        double re = ((double*)buf)[2 * i], im = ((double*)buf)[2 * i + 1];
        ((float*)buf)[2 * i] = (float)re;
        ((float*)buf)[2 * i + 1] = (float)im;
      }
  }
  cmx_array out = NULL;
  cmx_status st = cmx_array_from_data(&out, buf, t->shape, nd, (cmx_dtype)dt);
  PyMem_RawFree(buf);
  if (st != CMX_OK) {
    cmxpy_raise(st);
    return NULL;
  }
  return out;
}

/* The DLPack capsule of x (a capsule already, or x.__dlpack__(...)): a
 * CUDA producer is asked to order its work before the default stream of
 * the GPU its tensor is on. NULL with an exception set. */
static PyObject* dlpack_capsule(PyObject* x) {
  if (PyCapsule_CheckExact(x)) {
    Py_INCREF(x);
    return x;
  }
  PyObject* f = PyObject_GetAttrString(x, "__dlpack__");
  if (!f) return NULL;
  PyObject* kwargs = Py_BuildValue("{s:(ii)}", "max_version", 1, 0);
  PyObject* dd = PyObject_HasAttrString(x, "__dlpack_device__")
                     ? PyObject_CallMethod(x, "__dlpack_device__", NULL)
                     : NULL;
  PyErr_Clear();
  int dtype = 0, did = 0;
  if (dd && PyArg_ParseTuple(dd, "ii", &dtype, &did) && dtype == kDLCUDA &&
      cmx_is_available((cmx_device){CMX_GPU, did})) {
    void* h = NULL;
    cmx_stream s;
    if (cmx_default_stream(&s, (cmx_device){CMX_GPU, did}) == CMX_OK &&
        cmx_stream_native_handle(s, &h) == CMX_OK && h && kwargs) {
      PyObject* hs = PyLong_FromVoidPtr(h);
      if (!hs || PyDict_SetItemString(kwargs, "stream", hs) < 0)
        Py_CLEAR(kwargs);
      Py_XDECREF(hs);
    }
  }
  PyErr_Clear();
  Py_XDECREF(dd);
  PyObject* noargs = PyTuple_New(0);
  PyObject* cap = kwargs && noargs ? PyObject_Call(f, noargs, kwargs) : NULL;
  Py_XDECREF(kwargs);
  Py_XDECREF(noargs);
  if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear(); /* a producer without max_version */
    cap = PyObject_CallNoArgs(f);
  }
  Py_DECREF(f);
  return cap;
}

/* The array of a DLPack capsule, consuming it: CUDA tensors are shared,
 * others copied. */
static cmx_array array_from_capsule(PyObject* cap) {
  cmx_array a = NULL;
  if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
    DLManagedTensorVersioned* t =
        PyCapsule_GetPointer(cap, "dltensor_versioned");
    if (t->version.major > 1) {
      PyErr_SetString(PyExc_BufferError,
                      "[from_dlpack] unsupported DLPack version");
      return NULL;
    }
    PyCapsule_SetName(cap, "used_dltensor_versioned");
    if (t->dl_tensor.device.device_type == kDLCUDA) {
      a = array_from_cuda(&t->dl_tensor, release_v, t);
      if (a) return a; /* the array owns t now */
    } else {
      a = array_from_dl(&t->dl_tensor);
    }
    if (t->deleter) t->deleter(t);
  } else if (PyCapsule_IsValid(cap, "dltensor")) {
    DLManagedTensor* t = PyCapsule_GetPointer(cap, "dltensor");
    PyCapsule_SetName(cap, "used_dltensor");
    if (t->dl_tensor.device.device_type == kDLCUDA) {
      a = array_from_cuda(&t->dl_tensor, release_u, t);
      if (a) return a;
    } else {
      a = array_from_dl(&t->dl_tensor);
    }
    if (t->deleter) t->deleter(t);
  } else {
    PyErr_SetString(PyExc_TypeError,
                    "[from_dlpack] expected an object with __dlpack__ or a "
                    "DLPack capsule that was not consumed yet");
  }
  return a;
}

cmx_array cmxpy_array_from_cuda_tensor(PyObject* o, bool* handled) {
  *handled = false;
  if (!PyObject_HasAttrString(o, "__dlpack_device__") ||
      !PyObject_HasAttrString(o, "__dlpack__"))
    return NULL;
  PyObject* dd = PyObject_CallMethod(o, "__dlpack_device__", NULL);
  int dtype = 0, did = 0;
  bool cuda =
      dd && PyArg_ParseTuple(dd, "ii", &dtype, &did) && dtype == kDLCUDA;
  Py_XDECREF(dd);
  PyErr_Clear();
  if (!cuda) return NULL;
  return cmxpy_array_from_dlpack_object(o, handled);
}

cmx_array cmxpy_array_from_dlpack_object(PyObject* o, bool* handled) {
  *handled = false;
  if (!PyObject_HasAttrString(o, "__dlpack_device__") ||
      !PyObject_HasAttrString(o, "__dlpack__"))
    return NULL;
  *handled = true;
  PyObject* cap = dlpack_capsule(o);
  if (!cap) return NULL;
  cmx_array a = array_from_capsule(cap);
  Py_DECREF(cap);
  return a;
}

CMXPY_DEF(from_dlpack,
          "(x: object, /, *, device: object = None, copy: object = None) -> "
          "array",
          "Create an array from an object supporting DLPack (or a DLPack "
          "capsule). CUDA tensors (row-major) share their memory with the "
          "array, ordered after the producer's queued work; others are "
          "copied.\n\n"
          "Args:\n    x: An object with ``__dlpack__``.\n\n"
          "Returns:\n    array: The new array.") {
  PyObject* cap = dlpack_capsule(OBJ(0));
  if (!cap) return NULL;
  cmx_array a = array_from_capsule(cap);
  Py_DECREF(cap);
  return cmxpy_wrap(a);
}

int cmxpy_init_buffer(PyObject* m, cmxpy_deflist* array_methods) {
  static cmxpy_spec* const functions[] = {&spec_from_dlpack};
  static cmxpy_spec* const methods[] = {&spec_m___array__, &spec_m___dlpack__,
                                        &spec_m___dlpack_device__};
  return CMXPY_ADD_AREA(m, functions, array_methods, methods);
}
