/* args.h: the one argument parser of the extension, driven by signatures
 * written as mlx.core shows them.
 *
 * A binding states its signature once, with MLX's parameter names,
 * defaults, positional-only (`/`) and keyword-only (`*`, `*args`) markers
 * and type annotations; its body receives the converted arguments:
 *
 *   CMXPY_DEF(reshape,
 *             "(a: array, /, shape: Sequence[int], *, "
 *             "stream: StreamOrDevice = None) -> array",
 *             "Reshape an array while preserving the size.") {
 *     return RET(cmx_reshape(OUT, ARR(0), INTS(1), STREAM));
 *   }
 *
 * The signature gives the text signature (inspect.signature), the
 * docstring's first line and MLX's TypeError for calls that do not fit:
 *
 *   reshape(): incompatible function arguments. The following argument
 *   types are supported:
 *       1. reshape(a: array, /, shape: Sequence[int], *, stream: ...) -> array
 *
 *   Invoked with types: cmx.core.array, str
 *   [reshape] argument 'shape' must be Sequence[int], not str
 *
 * Each annotation selects a converter (see cmxpy_kind); `X | None` also
 * takes None. Converted arrays belong to the call and are released after
 * the body returns. The body runs with A pointing at the call's values:
 * A->v[i] is parameter i (for a method, parameter 0 is self).
 *
 * Module functions, aliases and array methods each get their own spec
 * (the name is part of the messages) and a small trampoline made by the
 * macros below; cmxpy_add_functions / cmxpy_add_methods register them.
 */
#ifndef CMXPY_ARGS_H
#define CMXPY_ARGS_H

#include "cmxpy.h"

#define CMXPY_MAX_PARAMS 16

/* What an annotation converts to. */
typedef enum cmxpy_kind {
  CMXPY_K_OBJECT,  /* anything else: the object, unconverted */
  CMXPY_K_ARRAY,   /* "array": cmxpy_to_array */
  CMXPY_K_OPERAND, /* "scalar | array": kept; cmxpy_operands converts */
  CMXPY_K_INT,     /* "int": any integer, saturated to int64 and int32 */
  CMXPY_K_FLOAT,   /* "float" (ints too) */
  CMXPY_K_BOOL,    /* "bool": True, False or a NumPy bool */
  CMXPY_K_STR,     /* "str" or a Literal[...] of strings */
  CMXPY_K_DTYPE,   /* "Dtype" */
  CMXPY_K_INTS,    /* "Sequence[int]", "int | Sequence[int]", ... */
  CMXPY_K_ARRAYS,  /* "list[array]" (a list or tuple of array-likes) */
  CMXPY_K_STREAM,  /* "StreamOrDevice" */
  CMXPY_K_DEVICE   /* "Device | DeviceType" */
} cmxpy_kind;

/* One parameter, compiled from the signature. */
typedef struct cmxpy_param {
  PyObject* name;    /* interned str */
  const char* cname; /* UTF-8 of name */
  char* ann;         /* the annotation as written */
  cmxpy_kind kind;
  bool nullable;                         /* the annotation allows None */
  bool posonly, kwonly, varargs, kwargs; /* kwargs: **name */
  PyObject* dflt; /* the default's value, NULL when required */
} cmxpy_param;

/* A converted argument. Fields other than obj/given/none are filled by
 * the parameter's converter. */
typedef struct cmxpy_val {
  PyObject* obj;     /* the argument (borrowed) or the default; a tuple for
                      *args, a dict for **kwargs */
  bool given;        /* passed by the caller */
  bool none;         /* obj is None */
  cmx_array arr;     /* ARRAY, OPERAND (after cmxpy_operands): owned */
  int64_t i;         /* INT, saturated */
  int i32;           /* INT, saturated to int */
  bool exact;        /* INT: i holds the value exactly */
  double f;          /* FLOAT */
  bool b;            /* BOOL */
  cmx_dtype dtype;   /* DTYPE (None: CMX_DTYPE_AUTO) */
  cmx_device device; /* DEVICE */
  const char* str;   /* STR (UTF-8, borrowed from obj) */
  int n;             /* INTS, ARRAYS: count */
  cmx_array* arrays; /* ARRAYS: owned */
  int64_t ints[CMX_MAX_NDIM]; /* INTS */
  int axes[CMX_MAX_NDIM];     /* INTS, saturated to int */
} cmxpy_val;

struct cmxpy_spec;

/* One call: the spec, the values, the stream argument and a result slot. */
typedef struct cmxpy_args {
  const struct cmxpy_spec* spec;
  /* the call as made (for messages) */
  PyObject* self;
  PyObject* const* args;
  Py_ssize_t nargs;
  PyObject* kwnames;
  cmx_stream stream; /* the StreamOrDevice argument (default stream) */
  cmx_array out;     /* result slot for RET / OUT */
  int n;             /* number of values */
  cmxpy_val v[CMXPY_MAX_PARAMS];
} cmxpy_args;

typedef PyObject* (*cmxpy_impl)(cmxpy_args* A);
typedef PyObject* (*cmxpy_fastcall)(PyObject*, PyObject* const*, Py_ssize_t,
                                    PyObject*);

/* The flags of a spec. */
enum {
  CMXPY_METHOD = 1, /* an array method: self is parameter 0 */
};

typedef struct cmxpy_spec {
  const char* name;  /* Python name */
  const char* sig;   /* "(a: array, ...) -> array"; NULL: the base's */
  const char* doc;   /* body of the docstring; NULL: "See :func:`name`." */
  cmxpy_impl impl;   /* NULL: the base's */
  cmxpy_fastcall py; /* the trampoline */
  const void* data;  /* for shared bodies: e.g. the C op */
  int flags;         /* CMXPY_METHOD */
  /* The function this one mirrors: sig, impl and data left NULL are
   * taken from it (or its base); a method's parameter 0 becomes self. */
  const struct cmxpy_spec* base;
  /* compiled by cmxpy_add_functions / cmxpy_add_methods */
  cmxpy_param* params;
  int nparams, npos; /* npos: parameters that take positional arguments */
  int varargs;       /* index of *args, or -1 */
  int kwargs;        /* index of **kwargs, or -1 */
  char* shown;       /* "name(a: array, ...) -> array" for messages */
  PyMethodDef def;
} cmxpy_spec;

/* Parses the call against spec and runs its body. */
PyObject* cmxpy_call(cmxpy_spec* spec, PyObject* self, PyObject* const* args,
                     Py_ssize_t nargs, PyObject* kwnames);

/* Compiles the specs and adds them to module m as functions; returns 0 or
 * -1 with an exception. The specs must live as long as the process. */
int cmxpy_add_functions(PyObject* m, cmxpy_spec* const* specs, size_t n);
/* Compiles the specs (CMXPY_METHOD) and appends their method definitions
 * to l (see cmxpy_defs_add); 0 or -1. */
int cmxpy_add_methods(cmxpy_deflist* l, cmxpy_spec* const* specs, size_t n);
/* Both: the functions of an area to m, its methods to l; 0 or -1. */
#define CMXPY_ADD_AREA(m, functions, l, methods)                        \
  (cmxpy_add_functions((m), (functions), CMXPY_COUNT(functions)) < 0 || \
           cmxpy_add_methods((l), (methods), CMXPY_COUNT(methods)) < 0  \
       ? -1                                                             \
       : 0)

/* Converts the operands i and j ("scalar | array") together, with MLX's
 * weak typing of Python scalars (see cmxpy_to_operands); 0 or -1. */
int cmxpy_operands(cmxpy_args* A, int i, int j);
/* Converts operand i against an array of dtype partner (AUTO: none); None
 * leaves it NULL when the parameter is nullable. 0 or -1. */
int cmxpy_operand(cmxpy_args* A, int i, cmx_dtype partner);

/* Converts o, given for parameter i, into *into as an int list (as "int |
 * Sequence[int]"; into NULL: value i itself); 0, or -1 with an exception
 * (MLX's TypeError when o is not one). */
int cmxpy_convert_ints(cmxpy_args* A, int i, PyObject* o, cmxpy_val* into);
/* Converts o into value i as a list of arrays (as "list[array]"); 0, or
 * -1 with an exception. */
int cmxpy_convert_arrays(cmxpy_args* A, int i, PyObject* o);
/* Raises MLX's TypeError for the call, saying that argument i has the
 * wrong type; returns NULL. */
PyObject* cmxpy_type_error(cmxpy_args* A, int i);

/* Wraps A->out when st is CMX_OK, else raises (see cmxpy_result); the
 * slot is empty afterwards. */
PyObject* cmxpy_ret(cmxpy_args* A, cmx_status st);
/* cmxpy_ret with C type errors raised as ValueError (cmxpy_result_v). */
PyObject* cmxpy_retv(cmxpy_args* A, cmx_status st);
/* A list of the n arrays in outs (takes them; st != CMX_OK releases them
 * and raises). */
PyObject* cmxpy_list(cmx_status st, cmx_array* outs, int n);

/* ---- accessors for bodies (A is the body's argument) ---- */
#define ARR(k) (A->v[k].arr)
#define INT(k) (A->v[k].i32)
#define I64(k) (A->v[k].i)
#define FLT(k) (A->v[k].f)
#define FLAG(k) (A->v[k].b)
#define DTYPE(k) (A->v[k].dtype)
#define STR(k) (A->v[k].str)
#define OBJ(k) (A->v[k].obj)
#define GIVEN(k) (A->v[k].given)
#define ISNONE(k) (A->v[k].none)
/* Two C arguments: values and count (NULL, 0 for None). */
#define INTS(k) (A->v[k].none ? NULL : A->v[k].ints), A->v[k].n
#define AXES(k) (A->v[k].none ? NULL : A->v[k].axes), A->v[k].n
#define ARRAYS(k) A->v[k].arrays, A->v[k].n
/* An optional int: NULL for None, else a pointer to the value. */
#define OPT_INT(k) (A->v[k].none ? NULL : &A->v[k].i32)
#define STREAM (A->stream)
#define OUT (&A->out)
#define RET(st) cmxpy_ret(A, (st))
#define RETV(st) cmxpy_retv(A, (st))
/* The C op of a spec made for a shared body. */
#define DATA(T) ((T)A->spec->data)

/* ---- declaring bindings ----
 * CMXPY_SPEC_FULL(id, pyname, sig, doc, impl, data, flags, base) defines
 * the spec `spec_<id>` and its trampoline; the others are shorthands. */
#define CMXPY_SPEC_FULL(id, pyname, sig_, doc_, impl_, data_, flags_, base_) \
  static PyObject* py_##id(PyObject*, PyObject* const*, Py_ssize_t,          \
                           PyObject*);                                       \
  static cmxpy_spec spec_##id = {.name = pyname,                             \
                                 .sig = sig_,                                \
                                 .doc = doc_,                                \
                                 .impl = impl_,                              \
                                 .py = py_##id,                              \
                                 .data = data_,                              \
                                 .flags = flags_,                            \
                                 .base = base_};                             \
  static PyObject* py_##id(PyObject* self, PyObject* const* args,            \
                           Py_ssize_t nargs, PyObject* kwnames) {            \
    return cmxpy_call(&spec_##id, self, args, nargs, kwnames);               \
  }

/* A function id whose body impl is shared by several functions; the C op
 * cop is its data (DATA() in the body). */
#define CMXPY_FN(id, sig, impl, cop, doc) \
  CMXPY_SPEC_FULL(id, #id, sig, doc, impl, (const void*)(cop), 0, NULL)

/* A function named id whose body follows the macro. */
#define CMXPY_DEF(id, sig, doc)                                \
  static PyObject* impl_##id(cmxpy_args* A);                   \
  CMXPY_SPEC_FULL(id, #id, sig, doc, impl_##id, NULL, 0, NULL) \
  static PyObject* impl_##id(cmxpy_args* A)

/* Another name for the function of spec_<id> (its own spec: messages name
 * it). */
#define CMXPY_ALIAS(alias, id, doc) \
  CMXPY_SPEC_FULL(alias, #alias, NULL, doc, NULL, NULL, 0, &spec_##id)

/* The array method m_<id> mirroring the function of spec_<id>: self is
 * its first parameter. */
#define CMXPY_METHOD_OF(id) \
  CMXPY_SPEC_FULL(m_##id, #id, NULL, NULL, NULL, NULL, CMXPY_METHOD, &spec_##id)

/* A method with its own signature ("(self, ...)") and body. */
#define CMXPY_DEF_METHOD(id, sig, doc)                                    \
  static PyObject* impl_m_##id(cmxpy_args* A);                            \
  CMXPY_SPEC_FULL(m_##id, #id, sig, doc, impl_m_##id, NULL, CMXPY_METHOD, \
                  NULL)                                                   \
  static PyObject* impl_m_##id(cmxpy_args* A)

#define CMXPY_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#endif
