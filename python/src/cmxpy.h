/* cmxpy.h: shared declarations of the cmx.core extension (one C file per
 * area: module, errors, dtype, device, memory, convert, array, number,
 * buffer, indexing, tree, ops).
 *
 * The Python `array` object owns one cmx_array handle. Operations build new
 * handles through the C API (lazy) and wrap them; anything that reads data
 * evaluates with the GIL released. In-place forms (`a += b`, `a[i] = v`)
 * replace the handle inside the same Python object, so every Python
 * reference to that object sees the update, as in MLX.
 *
 * Functions and methods with arguments are declared with their MLX
 * signature and parsed by args.h.
 */
#ifndef CMXPY_H
#define CMXPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <stdint.h>

#include "cmx/cmx.h"

/* ---------------- module-wide ---------------- */
/* Sets the Python exception matching st (ValueError, TypeError, ...) with
 * cmx_last_error() as message; returns NULL. */
PyObject* cmxpy_raise(cmx_status st);
/* Makes Ctrl-C interrupt evals (see check_signals in util.c). */
void cmxpy_install_interrupt_check(void);
/* A status meaning "the Python exception is already set" (cmxpy_raise
 * leaves it alone). */
#define CMXPY_ERR_SET ((cmx_status)100)

/* A growing table of method definitions: cmxpy_defs_add appends the
 * entries of defs (up to one with ml_name NULL); returns 0 or -1
 * (MemoryError set). cmxpy_defs_finish NULL-terminates and returns the
 * table (owned forever: type and module tables live as long as the
 * process). */
typedef struct cmxpy_deflist {
  PyMethodDef* items;
  size_t n, cap;
} cmxpy_deflist;
int cmxpy_defs_add(cmxpy_deflist* l, const PyMethodDef* defs);
PyMethodDef* cmxpy_defs_finish(cmxpy_deflist* l);

/* ---------------- array object ---------------- */
typedef struct {
  PyObject_HEAD cmx_array arr; /* owned, never NULL once constructed */
  PyObject* weakrefs;
} CmxArrayObject;

extern PyTypeObject CmxArray_Type;
#define CmxArray_Check(o) PyObject_TypeCheck((o), &CmxArray_Type)
#define CMXPY_ARR(o) (((CmxArrayObject*)(o))->arr)

/* Wraps a (stealing the reference) in a new Python array. NULL a gives
 * NULL with no new exception. */
PyObject* cmxpy_wrap(cmx_array a);
/* st == CMX_OK: cmxpy_wrap(*out); else releases *out and raises. A
 * pointer, because callers write *out in the same expression:
 * cmxpy_result(cmx_exp(&out, a, s), &out). */
PyObject* cmxpy_result(cmx_status st, cmx_array* out);
/* cmxpy_result, except that a C type error (a bad dtype) is raised as
 * ValueError: MLX's C++ ops throw std::invalid_argument for those, so the
 * sort/scan, convolution and random bindings raise what mlx.core raises. */
PyObject* cmxpy_result_v(cmx_status st, cmx_array* out);
/* Replaces the handle of an array object (takes the reference of a). */
void cmxpy_array_replace(PyObject* self, cmx_array a);

/* ---------------- evaluation (GIL released) ---------------- */
cmx_status cmxpy_eval(cmx_array a);
cmx_status cmxpy_eval_many(const cmx_array* a, size_t n);
/* Evaluates and returns the host data pointer (GIL released meanwhile). */
cmx_status cmxpy_data(cmx_array a, const void** out);
/* An array sharing the memory of o when o is a CUDA DLPack producer (a
 * torch CUDA tensor, say: *handled true; NULL with an exception on
 * failure); else NULL with *handled false and no exception. */
cmx_array cmxpy_array_from_cuda_tensor(PyObject* o, bool* handled);
/* The array of any DLPack producer (an object with __dlpack__ and
 * __dlpack_device__; host tensors are copied, as MLX's array() does):
 * *handled false (NULL, no exception) when o is none. */
cmx_array cmxpy_array_from_dlpack_object(PyObject* o, bool* handled);

/* ---------------- dtypes ---------------- */
extern PyTypeObject CmxDtype_Type;
/* The Dtype object of t (new reference). */
PyObject* cmxpy_dtype_object(cmx_dtype t);
/* Dtype object -> cmx_dtype; TypeError (naming fname) otherwise. None gives
 * CMX_DTYPE_AUTO when allow_none. Returns 0 / -1. */
int cmxpy_dtype_arg(PyObject* o, cmx_dtype* out, bool allow_none,
                    const char* fname);
/* True when o is a Dtype object. */
bool cmxpy_is_dtype(PyObject* o);
/* The cmx_dtype of a Dtype object (cmxpy_is_dtype(o) must hold). */
cmx_dtype cmxpy_dtype_value(PyObject* o);

/* ---------------- devices and streams ---------------- */
/* None / Stream / Device / DeviceType -> cmx_stream. Returns 0 / -1. */
int cmxpy_stream_arg(PyObject* o, cmx_stream* out);
/* The same without raising: 0, or 1 when o is none of those. */
int cmxpy_stream_value(PyObject* o, cmx_stream* out);
/* Device / DeviceType -> cmx_device: 0, or 1 when o is neither. */
int cmxpy_device_value(PyObject* o, cmx_device* out);

/* ---------------- conversion ---------------- */
/* The mx.array(val, dtype) constructor (dtype CMX_DTYPE_AUTO: inferred).
 * Raises ValueError for values it cannot convert. */
cmx_array cmxpy_array_from_object(PyObject* o, cmx_dtype dtype);
/* One array argument of an op: arrays as they are, Python scalars as
 * MLX's default dtypes, array-likes converted. TypeError (naming fname)
 * for anything else. New reference or NULL. */
cmx_array cmxpy_to_array(PyObject* o, const char* fname);
/* Operand of a binary op whose partner has dtype `partner` (AUTO when the
 * partner is not an array): Python scalars become weak scalars (checked
 * against integer overflow as MLX), array-likes take the partner's dtype. */
cmx_array cmxpy_to_operand(PyObject* o, cmx_dtype partner, const char* fname);
/* Both operands of a binary op, weak typing applied as MLX's to_arrays. */
int cmxpy_to_operands(PyObject* a, PyObject* b, cmx_array* pa, cmx_array* pb,
                      const char* fname);
/* True for the objects cmxpy_to_operand accepts (arrays, scalars, objects
 * with __mlx_array__, buffers, lists and tuples). */
bool cmxpy_is_operand(PyObject* o);
/* True when o is a cmx array or has __mlx_array__. */
bool cmxpy_is_array_like(PyObject* o);
/* Python scalar of a size-1 array / nested list of an array. */
PyObject* cmxpy_item(cmx_array a);
PyObject* cmxpy_tolist(cmx_array a);
/* A Python scalar for the element at p of dtype t. */
PyObject* cmxpy_scalar_at(const void* p, cmx_dtype t);

/* ---------------- argument helpers ---------------- */
typedef struct cmxpy_axes {
  int v[CMX_MAX_NDIM];
  int n;
  bool all; /* axis=None */
} cmxpy_axes;
/* None (all), an int, or a sequence of ints. */
int cmxpy_axes_arg(PyObject* o, cmxpy_axes* out, const char* fname);
/* An int or a sequence of ints (a shape); writes up to CMX_MAX_NDIM. */
int cmxpy_shape_arg(PyObject* o, int64_t* shape, int* ndim, const char* fname);
/* Python int -> C int with a ValueError naming fname on overflow. */
int cmxpy_int_arg(PyObject* o, int* out, const char* fname, const char* arg);
int cmxpy_int64_arg(PyObject* o, int64_t* out, const char* fname,
                    const char* arg);
/* A tuple of the shape. */
PyObject* cmxpy_shape_tuple(const int64_t* shape, int ndim);

/* ---------------- trees ---------------- */
/* Appends the arrays of a tree (lists, tuples, dicts; other leaves are
 * ignored) to list; 0 or -1 (tree.c, the one pytree walker). */
int cmxpy_tree_arrays(PyObject* tree, PyObject* list);

/* ---------------- areas ----------------
 * Each adds its functions to the module m; those taking array_methods
 * append the array's methods to it (the type is made ready last, by
 * cmxpy_init_array). */
int cmxpy_init_dtype(PyObject* m);
int cmxpy_init_device(PyObject* m);
int cmxpy_init_memory(PyObject* m);
int cmxpy_init_tree(PyObject* m);
int cmxpy_init_ops(PyObject* m, cmxpy_deflist* array_methods);
int cmxpy_init_ops_shape(PyObject* m, cmxpy_deflist* array_methods);
int cmxpy_init_ops_create(PyObject* m);
int cmxpy_init_ops_compose(PyObject* m);
int cmxpy_init_ops_misc(PyObject* m);
int cmxpy_init_ops_linalg_extra(PyObject* m, cmxpy_deflist* array_methods);
int cmxpy_init_ops_sort(PyObject* m, cmxpy_deflist* array_methods);
int cmxpy_init_ops_conv(PyObject* m);
int cmxpy_init_random(PyObject* m); /* the cmx.core.random submodule */
int cmxpy_init_fast(PyObject* m);   /* the cmx.core.fast submodule */
int cmxpy_init_ops_quantized(PyObject* m);
int cmxpy_init_io(PyObject* m);
/* The cmx.core.linalg and cmx.core.fft submodules (linalg.c, fft.c). */
int cmxpy_init_linalg(PyObject* m);
int cmxpy_init_fft(PyObject* m);
/* The cmx.core.distributed submodule (distributed.c). */
int cmxpy_init_distributed(PyObject* m);
/* Adds sub to m as attribute name and to sys.modules as full; 0 or -1. */
int cmxpy_add_submodule(PyObject* m, PyObject* sub, const char* name,
                        const char* full);
int cmxpy_init_buffer(PyObject* m, cmxpy_deflist* array_methods);
extern PyBufferProcs cmxpy_buffer_procs;
int cmxpy_init_number(cmxpy_deflist* array_methods);
int cmxpy_init_indexing(PyObject* m);
int cmxpy_init_array(PyObject* m, cmxpy_deflist* array_methods);
/* Flat transform entry points (_vjp, _jvp, ...; transforms.c). */
int cmxpy_init_transforms(PyObject* m);
int cmxpy_init_compile(PyObject* m); /* compile.c */
PyObject* cmxpy_getitem(PyObject* self, PyObject* key);
int cmxpy_setitem(PyObject* self, PyObject* key, PyObject* value);
/* MLX's matrix_transpose (and array.mT): the last two axes swapped;
 * ValueError below 2 dimensions. */
PyObject* cmxpy_matrix_transpose(cmx_array a, cmx_stream s);
/* MLX names that are small helpers (compat.c). */
int cmxpy_init_compat(PyObject* m);
/* Graph export (export.c). */
int cmxpy_init_export(PyObject* m);
/* A cmx_closure_fn whose payload is a Python callable from a list of
 * arrays to a list of arrays (transforms.c). */
cmx_status cmxpy_call_closure(void* fun, const cmx_array* in, int nin,
                              cmx_array** outputs, int* nout);
/* After a C call that ran cmxpy_call_closure: None when st is CMX_OK,
 * else NULL with the callable's exception (else the cmx error) raised. */
PyObject* cmxpy_closure_result(cmx_status st);
/* Row i of a (a[i]) as a new reference (used by iteration). */
cmx_array cmxpy_index_int(cmx_array a, int64_t i);
/* A double as a float without undefined behaviour (out of range: inf). */
float cmxpy_float(double d);

#endif
