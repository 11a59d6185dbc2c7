/* cmxpy.h: shared declarations of the cmx.core extension (one C file per
 * area: module, errors, dtype, device, memory, convert, array, number,
 * buffer, indexing, ops).
 *
 * The Python `array` object owns one cmx_array handle. Operations build new
 * handles through the C API (lazy) and wrap them; anything that reads data
 * evaluates with the GIL released. In-place forms (`a += b`, `a[i] = v`)
 * replace the handle inside the same Python object, so every Python
 * reference to that object sees the update, as in MLX.
 *
 * Optional C symbols: the op families of include/cmx/ops.h (and printing)
 * are referenced weakly (see weak.h). A function or method whose C op is not
 * in the linked libcmx is simply not registered, so the bindings follow
 * whatever libcmx provides without edits or link failures.
 */
#ifndef CMXPY_H
#define CMXPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <stdint.h>

#include "cmx/cmx.h"
#include "weak.h"

/* ---------------- module-wide ---------------- */
/* Sets the Python exception matching st (ValueError, TypeError, ...) with
 * cmx_last_error() as message; returns NULL. */
PyObject* cmxpy_raise(cmx_status st);
/* Makes Ctrl-C interrupt evals (see check_signals in util.c). */
void cmxpy_install_interrupt_check(void);
/* Raises NotImplementedError naming the missing C function; returns NULL. */
PyObject* cmxpy_missing(const char* cfunc);
/* A status meaning "the Python exception is already set" (cmxpy_raise
 * leaves it alone). */
#define CMXPY_ERR_SET ((cmx_status)100)
/* cmx_astype, or CMXPY_ERR_SET with NotImplementedError when libcmx lacks
 * it. */
cmx_status cmxpy_astype(cmx_array* out, cmx_array a, cmx_dtype t, cmx_stream s);

/* A method or function and the C symbol it needs: registered only when
 * `needs` is not NULL (CMXPY_ALWAYS for entries that need nothing optional,
 * or the weak address of the C op, NULL when libcmx lacks it). */
extern const char cmxpy_always[1];
#define CMXPY_ALWAYS ((const void*)cmxpy_always)
typedef struct cmxpy_def {
  PyMethodDef def;
  const void* needs;
} cmxpy_def;
/* Appends the entries of defs (up to one with ml_name NULL) whose symbol
 * is linked to a growing table;
 * returns 0 or -1 (MemoryError set). `cmxpy_defs_finish` NULL-terminates and
 * returns the table (owned forever; type and module tables live as long as
 * the process). */
typedef struct cmxpy_deflist {
  PyMethodDef* items;
  size_t n, cap;
} cmxpy_deflist;
int cmxpy_defs_add(cmxpy_deflist* l, const cmxpy_def* defs);
PyMethodDef* cmxpy_defs_finish(cmxpy_deflist* l);
/* Records a missing optional symbol by name (for cmx.core._unavailable). */
void cmxpy_note_missing(const char* name);
PyObject* cmxpy_unavailable_list(void);

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
/* Args with self prepended when self is an array (method call), else args
 * itself; new reference. Lets one C function serve mx.f(a, ...) and
 * a.f(...). */
PyObject* cmxpy_method_args(PyObject* self, PyObject* args);

int cmxpy_init_array(PyObject* m);

/* ---------------- evaluation (GIL released) ---------------- */
cmx_status cmxpy_eval(cmx_array a);
cmx_status cmxpy_eval_many(const cmx_array* a, size_t n);
/* Evaluates and returns the host data pointer (GIL released meanwhile). */
cmx_status cmxpy_data(cmx_array a, const void** out);

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
int cmxpy_init_dtype(PyObject* m);

/* ---------------- devices and streams ---------------- */
/* None / Stream / Device / DeviceType -> cmx_stream. Returns 0 / -1. */
int cmxpy_stream_arg(PyObject* o, cmx_stream* out);
int cmxpy_init_device(PyObject* m);
int cmxpy_init_memory(PyObject* m);
/* Flat transform entry points (_vjp, _jvp, ...; transforms.c). */
int cmxpy_init_transforms(PyObject* m);

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

/* ---------------- areas ---------------- */
int cmxpy_init_number(PyTypeObject* t);
int cmxpy_init_buffer(PyObject* m);
extern PyBufferProcs cmxpy_buffer_procs;
/* Methods of array defined in the areas (each ends with an entry whose
 * def.ml_name is NULL). */
extern const cmxpy_def cmxpy_buffer_methods[];
extern const cmxpy_def cmxpy_number_methods[];
extern const cmxpy_def cmxpy_shape_methods[];
/* Adds the array methods of the op tables (after cmxpy_init_ops). */
int cmxpy_ops_array_methods(cmxpy_deflist* l);
extern const cmxpy_def cmxpy_index_methods[];
int cmxpy_init_ops(PyObject* m);
int cmxpy_init_ops_shape(PyObject* m);
int cmxpy_init_ops_create(PyObject* m);
int cmxpy_init_ops_compose(PyObject* m);
int cmxpy_init_ops_misc(PyObject* m);
/* Sort/scan family (ops_sort.c), convolutions (ops_conv.c) and the
 * cmx.core.random submodule (random.c). */
int cmxpy_init_ops_sort(PyObject* m);
int cmxpy_init_ops_conv(PyObject* m);
int cmxpy_init_random(PyObject* m);
/* The scan methods of array (cumsum, ..., logcumsumexp). */
extern const cmxpy_def cmxpy_scan_methods[];
int cmxpy_init_io(PyObject* m);
int cmxpy_init_indexing(PyObject* m);
PyObject* cmxpy_getitem(PyObject* self, PyObject* key);
int cmxpy_setitem(PyObject* self, PyObject* key, PyObject* value);
/* Row i of a (a[i]) as a new reference (used by iteration). */
cmx_array cmxpy_index_int(cmx_array a, int64_t i);

#endif
