/* mx.fast.cuda_kernel's primitive, CustomKernel: a CUDA kernel that
 * cmx/_fast_cuda.py generates from the user's source (one program per
 * template / input signature), launched on the primitive's gpu stream with
 * the user's grid and threadgroup. Written on the public extension API
 * (cmx/primitive.h, cmx/cuda.h), as any extension would be.
 *
 * Entry points (private; the Python class is the API):
 *   _cuda_kernel_apply(name, source, entry, inputs, specs, grid, block,
 *                      shared, output_shapes, output_dtypes, init, stream)
 *   _cuda_compile_check(name, source)
 *   _cuda_compile(name, source, arch=0, ptx=True) -> bytes
 * _cuda_kernel_apply takes three more optional arguments for
 * mx.fast.precompiled_cuda_kernel: image (PTX or CUBIN bytes: the kernel
 * `entry` is loaded from them, source only holds the init kernels),
 * scalars (a list of bytes: the values of SPEC_SCALAR parameters) and
 * fill_entry (the prefix of the init kernels, default entry).
 * specs lists the kernel's parameters in order as (kind, index): an
 * input's or output's device pointer, an input's shape (int[n]), strides
 * (long long[n], elements) or ndim (int), n = max(ndim, 1). */
#include <stdlib.h>
#include <string.h>

#include "cmx/cuda.h"
#include "extension.h"

enum {
  SPEC_IN = 0,
  SPEC_OUT,
  SPEC_SHAPE,
  SPEC_STRIDES,
  SPEC_NDIM,
  SPEC_SCALAR,
  SPEC_N
};

/* A scalar parameter of a precompiled kernel: its bytes as the kernel
 * takes them (bool 1, int32 4, float32 4). */
typedef struct ck_scalar {
  size_t size;
  unsigned char v[8];
} ck_scalar;

typedef struct ck_spec {
  int kind, index;
} ck_spec;

/* source: the generated program (cuda_kernel), or for a precompiled
 * kernel (image != NULL) the program of its init kernels ("" without
 * init). The init kernels are <fill_entry>_init<j>. */
typedef struct ck_params {
  char *name, *source, *entry, *fill_entry;
  char* image;
  size_t image_size;
  unsigned grid[3], block[3];
  size_t shared;
  int has_init;
  double init;
  int nspecs, nout, nscalars;
  ck_spec* specs;
  ck_scalar* scalars;
} ck_params;

static void ck_destroy(void* p) {
  ck_params* q = p;
  free(q->name);
  free(q->source);
  free(q->entry);
  free(q->fill_entry);
  free(q->image);
  free(q->specs);
  free(q->scalars);
}

static bool ck_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const ck_params *p = cmx_primitive_params(a), *q = cmx_primitive_params(b);
  return strcmp(p->entry, q->entry) == 0 && strcmp(p->source, q->source) == 0 &&
         memcmp(p->grid, q->grid, sizeof p->grid) == 0 &&
         memcmp(p->block, q->block, sizeof p->block) == 0 &&
         p->shared == q->shared && p->has_init == q->has_init &&
         (!p->has_init || p->init == q->init) && p->nspecs == q->nspecs &&
         p->nout == q->nout &&
         memcmp(p->specs, q->specs, (size_t)p->nspecs * sizeof *p->specs) ==
             0 &&
         p->image_size == q->image_size &&
         (!p->image_size || memcmp(p->image, q->image, p->image_size) == 0) &&
         p->nscalars == q->nscalars &&
         (!p->nscalars ||
          memcmp(p->scalars, q->scalars,
                 (size_t)p->nscalars * sizeof *p->scalars) == 0);
}

static uint64_t ck_hash(const cmx_primitive* a) {
  const ck_params* p = cmx_primitive_params(a);
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char* s = p->source; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  for (size_t i = 0; i < p->image_size; i++)
    h = (h ^ (unsigned char)p->image[i]) * 0x100000001b3ull;
  return h ^ ((uint64_t)p->grid[0] << 20) ^ p->block[0];
}

static void ck_print(const cmx_primitive* a, char* buf, size_t size) {
  const ck_params* p = cmx_primitive_params(a);
  snprintf(buf, size, "CustomKernel(%s)", p->name);
}

/* Fills output j with the init value (the program's <entry>_init<j>). */
static cmx_status fill(const ck_params* q, cmx_array out, int j, uint64_t ptr) {
  char entry[300];
  snprintf(entry, sizeof entry, "%s_init%d", q->fill_entry, j);
  const cmx_cuda_kernel* k;
  cmx_status st = cmx_cuda_kernel_get(&k, q->name, q->source, entry);
  if (st != CMX_OK) return st;
  long long n = cmx_array_size(out);
  long long blocks = (n + 255) / 256;
  if (blocks > 65535) blocks = 65535;
  cmx_cuda_cfg cfg = {{(unsigned)blocks, 1, 1}, {256, 1, 1}, 0};
  double v = q->init;
  const void* args[3] = {&ptr, &n, &v};
  const size_t sizes[3] = {8, 8, 8};
  return n ? cmx_cuda_launch(q->name, k, &cfg, args, sizes, 3) : CMX_OK;
}

static cmx_status ck_gpu(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)nin;
  const ck_params* q = cmx_primitive_params(p);
  const cmx_cuda_kernel* k;
  cmx_status st = q->image
                      ? cmx_cuda_kernel_get_image(&k, q->name, q->image,
                                                  q->image_size, q->entry)
                      : cmx_cuda_kernel_get(&k, q->name, q->source, q->entry);
  if (st != CMX_OK) return st;
  uint64_t optr[CMX_MAX_NDIM];
  for (int j = 0; j < nout && st == CMX_OK; j++) {
    st = cmx_kernel_alloc(out[j]);
    optr[j] = st == CMX_OK ? cmx_kernel_device_ptr(out[j]) : 0;
    if (st == CMX_OK && q->has_init) st = fill(q, out[j], j, optr[j]);
  }
  if (st != CMX_OK) return st;
  /* The parameters' values, packed one after another (8-byte aligned). */
  enum { MAXP = 32 };
  if (q->nspecs > MAXP)
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[cuda_kernel] %s has %d parameters; at most %d",
                            q->name, q->nspecs, MAXP);
  static _Thread_local _Alignas(8) unsigned char store[MAXP][CMX_MAX_NDIM * 8];
  const void* args[MAXP];
  size_t sizes[MAXP];
  for (int i = 0; i < q->nspecs; i++) {
    const ck_spec* s = &q->specs[i];
    unsigned char* dst = store[i];
    args[i] = dst;
    if (s->kind == SPEC_SCALAR) {
      memcpy(dst, q->scalars[s->index].v, 8);
      sizes[i] = q->scalars[s->index].size;
      continue;
    }
    cmx_array a = s->kind == SPEC_OUT ? out[s->index] : in[s->index];
    int nd = cmx_array_ndim(a), n = nd > 0 ? nd : 1;
    switch (s->kind) {
      case SPEC_IN:
      case SPEC_OUT: {
        uint64_t ptr =
            s->kind == SPEC_OUT ? optr[s->index] : cmx_kernel_device_ptr(a);
        if (!ptr && cmx_array_size(a) > 0)
          return cmx_kernel_error(CMX_ERR_RUNTIME,
                                  "[cuda_kernel] %s: input %d is not on the "
                                  "gpu",
                                  q->name, s->index);
        memcpy(dst, &ptr, 8);
        sizes[i] = 8;
        break;
      }
      case SPEC_SHAPE:
        for (int d = 0; d < n; d++) {
          int v = nd ? (int)cmx_array_shape(a)[d] : 1;
          memcpy(dst + d * sizeof v, &v, sizeof v);
        }
        sizes[i] = (size_t)n * sizeof(int);
        break;
      case SPEC_STRIDES:
        for (int d = 0; d < n; d++) {
          long long v = nd ? (long long)cmx_array_strides(a)[d] : 1;
          memcpy(dst + d * sizeof v, &v, sizeof v);
        }
        sizes[i] = (size_t)n * sizeof(long long);
        break;
      default: /* SPEC_NDIM */
        memcpy(dst, &nd, sizeof nd);
        sizes[i] = sizeof(int);
        break;
    }
  }
  cmx_cuda_cfg cfg = {
      {0, 0, 0}, {q->block[0], q->block[1], q->block[2]}, q->shared};
  /* grid counts threads (as metal_kernel's): blocks cover it, a block no
   * larger than the grid along each axis. */
  for (int d = 0; d < 3; d++) {
    if (cfg.block[d] > q->grid[d] && q->grid[d] > 0) cfg.block[d] = q->grid[d];
    cfg.grid[d] =
        cfg.block[d] ? (q->grid[d] + cfg.block[d] - 1) / cfg.block[d] : 0;
  }
  st = cmx_cuda_launch(q->name, k, &cfg, args, sizes, q->nspecs);
  for (int j = 0; j < nout && st == CMX_OK; j++)
    cmx_kernel_mark_device_written(out[j]);
  return st;
}

static const cmx_primitive_vtable ck_vt = {.name = "CustomKernel",
                                           .flags = CMX_PRIM_EXTERNAL,
                                           .id = -1,
                                           .eval_gpu = ck_gpu,
                                           .equal = ck_equal,
                                           .hash = ck_hash,
                                           .print = ck_print,
                                           .destroy = ck_destroy};

static int dims3(PyObject* o, unsigned* v, const char* what) {
  if (!PyArg_ParseTuple(o, "III", &v[0], &v[1], &v[2])) {
    PyErr_Format(PyExc_ValueError,
                 "[cuda_kernel] %s must be a tuple of 3 positive ints", what);
    return -1;
  }
  return 0;
}

static PyObject* fail_params(ck_params* q, cmx_array* ins, int nin) {
  ck_destroy(q);
  for (int i = 0; i < nin; i++) cmx_array_release(ins[i]);
  return NULL;
}

static PyObject* ck_apply(PyObject* self, PyObject* args) {
  (void)self;
  const char *name, *source, *entry;
  PyObject *inputs, *specs, *grid, *block, *oshapes, *odtypes, *init, *so;
  PyObject *image = Py_None, *scalars = NULL;
  const char* fill_entry = NULL;
  Py_ssize_t shared;
  if (!PyArg_ParseTuple(args, "sssO!O!OOnO!O!OO|OO!z:_cuda_kernel_apply", &name,
                        &source, &entry, &PyList_Type, &inputs, &PyList_Type,
                        &specs, &grid, &block, &shared, &PyList_Type, &oshapes,
                        &PyList_Type, &odtypes, &init, &so, &image,
                        &PyList_Type, &scalars, &fill_entry))
    return NULL;
  if (image != Py_None && !PyBytes_Check(image)) {
    PyErr_SetString(PyExc_TypeError, "[cuda_kernel] image must be bytes");
    return NULL;
  }
  int nscalars = scalars ? (int)PyList_GET_SIZE(scalars) : 0;
  int nin = (int)PyList_GET_SIZE(inputs), nout = (int)PyList_GET_SIZE(oshapes);
  if (nin > CMX_MAX_NDIM || nout > CMX_MAX_NDIM || nout < 1 ||
      PyList_GET_SIZE(odtypes) != nout) {
    PyErr_SetString(PyExc_ValueError,
                    "[cuda_kernel] between 1 and 32 outputs (with as many "
                    "shapes as dtypes) and at most 32 inputs");
    return NULL;
  }
  cmx_stream s;
  if (cmxpy_stream_arg(so, &s) < 0) return NULL;
  ck_params q = {0};
  cmx_array ins[CMX_MAX_NDIM] = {0};
  q.name = strdup(name);
  q.source = strdup(source);
  q.entry = strdup(entry);
  q.fill_entry = strdup(fill_entry ? fill_entry : entry);
  q.nspecs = (int)PyList_GET_SIZE(specs);
  q.nout = nout;
  q.nscalars = nscalars;
  q.specs = calloc((size_t)q.nspecs + 1, sizeof *q.specs);
  q.scalars = calloc((size_t)nscalars + 1, sizeof *q.scalars);
  q.shared = (size_t)(shared < 0 ? 0 : shared);
  if (!q.name || !q.source || !q.entry || !q.fill_entry || !q.specs ||
      !q.scalars) {
    PyErr_NoMemory();
    return fail_params(&q, ins, 0);
  }
  if (image != Py_None) {
    q.image_size = (size_t)PyBytes_GET_SIZE(image);
    q.image = malloc(q.image_size + 1);
    if (!q.image) {
      PyErr_NoMemory();
      return fail_params(&q, ins, 0);
    }
    memcpy(q.image, PyBytes_AS_STRING(image), q.image_size);
    q.image[q.image_size] = 0;
  }
  for (int i = 0; i < nscalars; i++) {
    PyObject* b = PyList_GET_ITEM(scalars, i);
    Py_ssize_t n = PyBytes_Check(b) ? PyBytes_GET_SIZE(b) : 0;
    if (n < 1 || n > 8) {
      PyErr_SetString(PyExc_ValueError,
                      "[cuda_kernel] a scalar is 1 to 8 bytes");
      return fail_params(&q, ins, 0);
    }
    q.scalars[i].size = (size_t)n;
    memcpy(q.scalars[i].v, PyBytes_AS_STRING(b), (size_t)n);
  }
  if (dims3(grid, q.grid, "grid") < 0 ||
      dims3(block, q.block, "threadgroup") < 0)
    return fail_params(&q, ins, 0);
  if (init != Py_None) {
    q.has_init = 1;
    q.init = PyFloat_AsDouble(init);
    if (PyErr_Occurred()) return fail_params(&q, ins, 0);
  }
  for (int i = 0; i < q.nspecs; i++) {
    ck_spec* sp = &q.specs[i];
    if (!PyArg_ParseTuple(PyList_GET_ITEM(specs, i), "ii", &sp->kind,
                          &sp->index) ||
        sp->kind < 0 || sp->kind >= SPEC_N || sp->index < 0 ||
        sp->index >= (sp->kind == SPEC_OUT      ? nout
                      : sp->kind == SPEC_SCALAR ? nscalars
                                                : nin)) {
      PyErr_Clear();
      PyErr_SetString(PyExc_ValueError, "[cuda_kernel] bad parameter list");
      return fail_params(&q, ins, 0);
    }
  }
  for (int i = 0; i < nin; i++) {
    ins[i] = cmxpy_to_array(PyList_GET_ITEM(inputs, i), "cuda_kernel");
    if (!ins[i]) return fail_params(&q, ins, i);
  }
  int64_t shapes[CMX_MAX_NDIM][CMX_MAX_NDIM];
  const int64_t* sp[CMX_MAX_NDIM];
  int ndims[CMX_MAX_NDIM];
  cmx_dtype dts[CMX_MAX_NDIM];
  for (int j = 0; j < nout; j++) {
    sp[j] = shapes[j];
    if (cmxpy_shape_arg(PyList_GET_ITEM(oshapes, j), shapes[j], &ndims[j],
                        "cuda_kernel") < 0 ||
        cmxpy_dtype_arg(PyList_GET_ITEM(odtypes, j), &dts[j], false,
                        "cuda_kernel") < 0)
      return fail_params(&q, ins, nin);
  }
  cmx_primitive* p = cmx_primitive_new(&ck_vt, &q, sizeof q, s);
  if (!p) {
    fail_params(&q, ins, nin);
    return cmxpy_raise(cmx_last_status());
  }
  /* q's strings now belong to p. */
  cmx_array outs[CMX_MAX_NDIM] = {0};
  cmx_status st = cmx_primitive_apply(outs, nout, p, ins, nin, sp, ndims, dts);
  for (int i = 0; i < nin; i++) cmx_array_release(ins[i]);
  if (st != CMX_OK) return cmxpy_raise(st);
  PyObject* list = PyList_New(nout);
  for (int j = 0; j < nout; j++) {
    PyObject* o = list ? cmxpy_wrap(outs[j]) : NULL;
    if (!o) {
      for (int k = list ? j + 1 : j; k < nout; k++) cmx_array_release(outs[k]);
      Py_XDECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, j, o);
  }
  return list;
}

static PyObject* ck_check(PyObject* self, PyObject* args) {
  (void)self;
  const char *name, *source;
  int arch = 0;
  if (!PyArg_ParseTuple(args, "ss|i:_cuda_compile_check", &name, &source,
                        &arch))
    return NULL;
  cmx_status st;
  Py_BEGIN_ALLOW_THREADS st = cmx_cuda_compile_check(name, source, arch);
  Py_END_ALLOW_THREADS if (st != CMX_OK) return cmxpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject* ck_compile(PyObject* self, PyObject* args) {
  (void)self;
  const char *name, *source;
  int arch = 0, ptx = 1;
  if (!PyArg_ParseTuple(args, "ss|ip:_cuda_compile", &name, &source, &arch,
                        &ptx))
    return NULL;
  cmx_status st;
  void* image = NULL;
  size_t size = 0;
  Py_BEGIN_ALLOW_THREADS st =
      cmx_cuda_compile(name, source, arch, ptx, &image, &size);
  Py_END_ALLOW_THREADS if (st != CMX_OK) return cmxpy_raise(st);
  PyObject* r = PyBytes_FromStringAndSize(image, (Py_ssize_t)size);
  free(image);
  return r;
}

static PyObject* ck_nvrtc(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  return PyBool_FromLong(cmx_cuda_nvrtc_available());
}

static PyMethodDef k_defs[] = {
    {"_cuda_kernel_apply", ck_apply, METH_VARARGS,
     "The CustomKernel primitive of mx.fast.cuda_kernel (private)."},
    {"_cuda_compile_check", ck_check, METH_VARARGS,
     "Compiles CUDA source with NVRTC without a GPU; raises RuntimeError "
     "with NVRTC's log (private)."},
    {"_cuda_compile", ck_compile, METH_VARARGS,
     "Compiles CUDA source with NVRTC to PTX (ptx=True) or a CUBIN and "
     "returns its bytes (private; for precompiled_cuda_kernel's tests)."},
    {"_cuda_nvrtc_available", ck_nvrtc, METH_NOARGS,
     "Whether NVRTC can be loaded (private)."},
    {NULL, NULL, 0, NULL}};

int cmxpy_init_fast_cuda(PyObject* m) {
  return PyModule_AddFunctions(m, k_defs);
}
