/* The argument parser of args.h: signatures compiled once at module
 * initialisation, calls matched against them with MLX's rules and
 * messages, arguments converted by annotation. */
#include "args.h"

#include <ctype.h>

/* ---------------- compiling signatures ---------------- */
/* Annotations (with any "None" alternative removed) and their kinds;
 * anything not listed is an object the body reads itself. */
static const struct {
  const char* ann;
  cmxpy_kind kind;
} kinds[] = {
    {"array", CMXPY_K_ARRAY},
    {"scalar | array", CMXPY_K_OPERAND},
    {"int", CMXPY_K_INT},
    {"float", CMXPY_K_FLOAT},
    {"bool", CMXPY_K_BOOL},
    {"str", CMXPY_K_STR},
    {"Dtype", CMXPY_K_DTYPE},
    {"Sequence[int]", CMXPY_K_INTS},
    {"int | Sequence[int]", CMXPY_K_INTS},
    {"int | tuple[int]", CMXPY_K_INTS},
    {"int | tuple[int, int]", CMXPY_K_INTS},
    {"int | tuple[int, int, int]", CMXPY_K_INTS},
    {"list[array]", CMXPY_K_ARRAYS},
    {"StreamOrDevice", CMXPY_K_STREAM},
    {"Device | DeviceType", CMXPY_K_DEVICE},
};

static void* raw_alloc(size_t n) {
  void* p = PyMem_RawCalloc(1, n ? n : 1);
  if (!p) PyErr_NoMemory();
  return p;
}

static char* raw_strndup(const char* s, size_t n) {
  char* d = raw_alloc(n + 1);
  if (d) memcpy(d, s, n);
  return d;
}

static char* trim(char* s) {
  while (isspace((unsigned char)*s)) s++;
  char* e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
  return s;
}

/* The position of the first c in s outside brackets and quotes, or NULL. */
static char* find_top(char* s, char c) {
  int depth = 0;
  char quote = 0;
  for (char* p = s; *p; p++) {
    if (quote) {
      if (*p == quote) quote = 0;
    } else if (*p == '\'' || *p == '"') {
      quote = *p;
    } else if (*p == '[' || *p == '(') {
      depth++;
    } else if (*p == ']' || *p == ')') {
      depth--;
    } else if (*p == c && depth == 0) {
      return p;
    }
  }
  return NULL;
}

/* The kind of an annotation; *nullable when one alternative (at the top
 * level: not "tuple[int | None]") is None. */
static cmxpy_kind kind_of(const char* ann, bool* nullable) {
  char all[256], rest_buf[256] = "";
  PyOS_snprintf(all, sizeof all, "%s", ann);
  *nullable = false;
  for (char* rest = all; rest;) {
    char* bar = find_top(rest, '|');
    if (bar) *bar = 0;
    char* alt = trim(rest);
    rest = bar ? bar + 1 : NULL;
    if (!strcmp(alt, "None")) {
      *nullable = true;
    } else if (strlen(rest_buf) + strlen(alt) + 4 < sizeof rest_buf) {
      if (*rest_buf) strcat(rest_buf, " | ");
      strcat(rest_buf, alt);
    }
  }
  if (!strncmp(rest_buf, "Literal[", 8)) return CMXPY_K_STR;
  for (size_t i = 0; i < CMXPY_COUNT(kinds); i++)
    if (!strcmp(rest_buf, kinds[i].ann)) return kinds[i].kind;
  return CMXPY_K_OBJECT;
}

/* The value of a default written in a signature. */
static PyObject* default_value(const char* text) {
  if (!strcmp(text, "None")) return Py_NewRef(Py_None);
  if (!strcmp(text, "True")) return Py_NewRef(Py_True);
  if (!strcmp(text, "False")) return Py_NewRef(Py_False);
  if (!strcmp(text, "[]")) return PyList_New(0);
  if (!strcmp(text, "()")) return PyTuple_New(0);
  size_t n = strlen(text);
  if (n >= 2 && (text[0] == '\'' || text[0] == '"'))
    return PyUnicode_FromStringAndSize(text + 1, (Py_ssize_t)n - 2);
  for (int t = 0; t < CMX_NUM_DTYPES; t++)
    if (!strcmp(text, cmx_dtype_name((cmx_dtype)t)))
      return cmxpy_dtype_object((cmx_dtype)t);
  char* end;
  PyObject* v = PyLong_FromString(text, &end, 10);
  if (v && !*end) return v;
  Py_XDECREF(v);
  PyErr_Clear();
  double d = PyOS_string_to_double(text, &end, NULL);
  if (!(d == -1.0 && PyErr_Occurred()) && !*end) return PyFloat_FromDouble(d);
  PyErr_Clear();
  PyErr_Format(PyExc_SystemError, "[args] unreadable default '%s'", text);
  return NULL;
}

/* Appends to a growing string buffer (process-lifetime allocations). */
typedef struct {
  char* s;
  size_t n, cap;
} strbuf;

static int sb_add(strbuf* b, const char* s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = 2 * (b->n + n + 1) + 64;
    char* p = PyMem_RawRealloc(b->s, cap);
    if (!p) return PyErr_NoMemory(), -1;
    b->s = p;
    b->cap = cap;
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = 0;
  return 0;
}
static int sb_str(strbuf* b, const char* s) {
  return sb_add(b, s, strlen(s));
}

/* Splits the n characters at s at top-level commas into trimmed copies;
 * returns their number or -1. */
static int split_items(const char* s, size_t n, char** items, int max) {
  char* all = raw_strndup(s, n);
  if (!all) return -1;
  int k = 0;
  for (char* rest = *trim(all) ? all : NULL; rest;) {
    char* comma = find_top(rest, ',');
    if (comma) *comma = 0;
    if (k == max || !(items[k] = raw_strndup(trim(rest), strlen(trim(rest))))) {
      if (k == max)
        PyErr_SetString(PyExc_SystemError, "[args] too many parameters");
      k = -1;
      break;
    }
    k++;
    rest = comma ? comma + 1 : NULL;
  }
  PyMem_RawFree(all);
  return k;
}

/* Reads one parameter "name: annotation = default" (or "*name...") into
 * p; *dflt gets the default's text (in item) or NULL. Modifies item. */
static int read_param(char* item, cmxpy_param* p, char** dflt) {
  char* eq = find_top(item, '=');
  *dflt = NULL;
  if (eq) *eq = 0, *dflt = trim(eq + 1);
  char* colon = find_top(item, ':');
  const char* ann = "object";
  if (colon) *colon = 0, ann = trim(colon + 1);
  char* name = trim(item);
  if (!strncmp(name, "**", 2))
    p->kwargs = true, name += 2;
  else if (*name == '*')
    p->varargs = true, name++;
  p->kind = kind_of(ann, &p->nullable);
  if (!(p->ann = raw_strndup(ann, strlen(ann)))) return -1;
  p->name = PyUnicode_InternFromString(name);
  p->cname = p->name ? PyUnicode_AsUTF8(p->name) : NULL;
  if (!p->cname) return -1;
  if (*dflt && !(p->dflt = default_value(*dflt))) return -1;
  return 0;
}

/* Compiles spec: its parameters, the signature shown in messages
 * ("name(a: array, ...) -> array") and the docstring with its text
 * signature. A method mirroring a function shows self for the function's
 * first parameter. */
static int compile(cmxpy_spec* s) {
  if (s->params) return 0;
  const cmxpy_spec* b = s->base;
  const char* sig = s->sig;
  for (const cmxpy_spec* x = b; x; x = x->base) {
    if (!sig) sig = x->sig;
    if (!s->impl) s->impl = x->impl;
    if (!s->data) s->data = x->data;
  }
  bool mirror = (s->flags & CMXPY_METHOD) && !s->sig;
  const char *open = strchr(sig, '('), *close = strrchr(sig, ')');
  char* items[CMXPY_MAX_PARAMS + 2];
  int n = open && close > open
              ? split_items(open + 1, (size_t)(close - open - 1), items,
                            CMXPY_MAX_PARAMS + 2)
              : -1;
  if (n < 0) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_SystemError, "[args] bad signature of %s", s->name);
    return -1;
  }
  s->params = raw_alloc(CMXPY_MAX_PARAMS * sizeof *s->params);
  strbuf shown = {0}, text = {0};
  int rc = !s->params || sb_str(&shown, s->name) < 0 ||
                   sb_str(&shown, "(") < 0 || sb_str(&text, s->name) < 0 ||
                   sb_str(&text, "(") < 0
               ? -1
               : 0;
  s->varargs = s->kwargs = -1;
  bool kwonly = false;
  for (int k = 0; k < n && !rc; k++) {
    const char* sep = k ? ", " : "";
    char* item = items[k];
    if (!strcmp(item, "/")) {
      for (int i = 0; i < s->nparams; i++) s->params[i].posonly = true;
      if (mirror && s->nparams == 1) continue; /* MLX shows none after self */
      rc = sb_str(&shown, sep) || sb_str(&shown, item) || sb_str(&text, sep) ||
           sb_str(&text, item);
      continue;
    }
    if (!strcmp(item, "*")) {
      kwonly = true;
      rc = sb_str(&shown, sep) || sb_str(&shown, item) || sb_str(&text, sep) ||
           sb_str(&text, item);
      continue;
    }
    if (s->nparams == CMXPY_MAX_PARAMS) {
      PyErr_Format(PyExc_SystemError, "[args] %s: too many parameters",
                   s->name);
      rc = -1;
      break;
    }
    cmxpy_param* p = &s->params[s->nparams];
    bool self = (s->flags & CMXPY_METHOD) && s->nparams == 0;
    rc = sb_str(&shown, sep) ||
         sb_str(&shown, mirror && self ? "self" : item) || sb_str(&text, sep);
    char* dflt;
    if (!rc) rc = read_param(item, p, &dflt);
    if (rc) break;
    if (self) p->kind = CMXPY_K_ARRAY, p->nullable = false, dflt = NULL;
    if (p->varargs) s->varargs = s->nparams, kwonly = true;
    if (p->kwargs) s->kwargs = s->nparams;
    p->kwonly = kwonly && !p->varargs && !p->kwargs;
    if (!kwonly) s->npos = s->nparams + 1;
    s->nparams++;
    rc = sb_str(&text, self         ? "$self"
                       : p->varargs ? "*"
                       : p->kwargs  ? "**"
                                    : "") ||
         (!self && sb_str(&text, p->cname)) ||
         (dflt && (sb_str(&text, "=") ||
                   /* inspect reads literals only: a dtype shows as None,
                    * which means the same */
                   sb_str(&text, cmxpy_is_dtype(p->dflt) ? "None" : dflt)));
  }
  for (int k = 0; k < n; k++) PyMem_RawFree(items[k]);
  char see[160];
  const char* doc = s->doc;
  if (!doc) {
    PyOS_snprintf(see, sizeof see, "See :func:`%s`.", b ? b->name : s->name);
    doc = see;
  }
  if (rc || sb_str(&shown, close) || sb_str(&text, ")\n--\n\n") ||
      sb_str(&text, doc))
    return -1;
  s->shown = shown.s;
  s->def = (PyMethodDef){s->name, (PyCFunction)(void (*)(void))s->py,
                         METH_FASTCALL | METH_KEYWORDS, text.s};
  return 0;
}

/* ---------------- messages ---------------- */
/* A type's name as nanobind prints it: builtins bare, others with their
 * module ("cmx.core.array", "numpy.ndarray"). */
static PyObject* type_name(PyObject* o) {
  PyTypeObject* t = Py_TYPE(o);
  if (strchr(t->tp_name, '.')) return PyUnicode_FromString(t->tp_name);
  PyObject* mod = PyObject_GetAttrString((PyObject*)t, "__module__");
  PyObject* r = NULL;
  if (mod && PyUnicode_Check(mod) &&
      PyUnicode_CompareWithASCIIString(mod, "builtins"))
    r = PyUnicode_FromFormat("%U.%s", mod, t->tp_name);
  else
    r = PyUnicode_FromString(t->tp_name);
  Py_XDECREF(mod);
  PyErr_Clear();
  return r;
}

/* Raises MLX's TypeError for a call that does not fit spec, with a last
 * line saying why (detail, may be NULL). */
static void incompatible(const cmxpy_spec* s, PyObject* self,
                         PyObject* const* args, Py_ssize_t nargs,
                         PyObject* kwnames, PyObject* detail) {
  PyObject* parts = PyList_New(0);
  bool method = s->flags & CMXPY_METHOD;
  Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = -(Py_ssize_t)method; parts && i < nargs; i++) {
    PyObject* t = type_name(i < 0 ? self : args[i]);
    if (!t || PyList_Append(parts, t) < 0) Py_CLEAR(parts);
    Py_XDECREF(t);
  }
  if (parts && nk) {
    PyObject* kws = PyList_New(0);
    for (Py_ssize_t j = 0; kws && j < nk; j++) {
      PyObject* t = type_name(args[nargs + j]);
      PyObject* e =
          t ? PyUnicode_FromFormat("%U: %U", PyTuple_GET_ITEM(kwnames, j), t)
            : NULL;
      if (!e || PyList_Append(kws, e) < 0) Py_CLEAR(kws);
      Py_XDECREF(t);
      Py_XDECREF(e);
    }
    PyObject* sep = PyUnicode_FromString(", ");
    PyObject* joined = kws && sep ? PyUnicode_Join(sep, kws) : NULL;
    PyObject* e =
        joined ? PyUnicode_FromFormat("kwargs = { %U }", joined) : NULL;
    if (!e || PyList_Append(parts, e) < 0) Py_CLEAR(parts);
    Py_XDECREF(kws), Py_XDECREF(sep), Py_XDECREF(joined), Py_XDECREF(e);
  }
  PyObject* sep = PyUnicode_FromString(", ");
  PyObject* types = parts && sep ? PyUnicode_Join(sep, parts) : NULL;
  Py_XDECREF(parts);
  Py_XDECREF(sep);
  if (!types) return; /* that error stands */
  PyObject* msg = PyUnicode_FromFormat(
      "%s(): incompatible function arguments. The following argument types "
      "are supported:\n    1. %s\n\nInvoked with types: %U",
      s->name, s->shown, types);
  Py_DECREF(types);
  if (msg && detail) {
    PyObject* full = PyUnicode_FromFormat("%U\n%U", msg, detail);
    Py_SETREF(msg, full);
  }
  if (msg) PyErr_SetObject(PyExc_TypeError, msg);
  Py_XDECREF(msg);
}

/* ---------------- converters ---------------- */
enum { CONV_OK = 0, CONV_FAIL = -1, CONV_TYPE = 1 };

static bool is_numpy_bool(PyObject* o) {
  const char* n = Py_TYPE(o)->tp_name;
  return !strcmp(n, "numpy.bool_") || !strcmp(n, "numpy.bool");
}

/* An integer: an int or an object with __index__ that is neither a float
 * nor a sequence (NumPy integer scalars, not NumPy arrays). */
static bool is_int_like(PyObject* o) {
  return PyLong_Check(o) ||
         (PyIndex_Check(o) && !PyFloat_Check(o) && !PySequence_Check(o));
}

/* An integer, saturated (Python ints have no bound). */
static int read_int(PyObject* o, int64_t* v, bool* exact) {
  PyObject* i = PyNumber_Index(o);
  if (!i) return CONV_FAIL;
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(i, &overflow);
  Py_DECREF(i);
  if (x == -1 && PyErr_Occurred()) return CONV_FAIL;
  *exact = !overflow;
  *v = overflow > 0 ? INT64_MAX : overflow < 0 ? INT64_MIN : (int64_t)x;
  return CONV_OK;
}

static int saturate_int(int64_t v) {
  return v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v;
}

static int conv_ints(const cmxpy_spec* s, const cmxpy_param* p, PyObject* o,
                     cmxpy_val* v) {
  bool exact;
  if (is_int_like(o)) {
    if (read_int(o, &v->ints[0], &exact) < 0) return CONV_FAIL;
    v->n = 1;
  } else {
    if (PyUnicode_Check(o) || PyBytes_Check(o) || !PySequence_Check(o))
      return CONV_TYPE;
    PyObject* seq = PySequence_Fast(o, "");
    if (!seq) return PyErr_Clear(), CONV_TYPE;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int rc = CONV_OK;
    if (n > CMX_MAX_NDIM) {
      PyErr_Format(PyExc_ValueError, "[%s] %s has too many dimensions (%zd)",
                   s->name, p->cname, n);
      rc = CONV_FAIL;
    }
    for (Py_ssize_t i = 0; rc == CONV_OK && i < n; i++) {
      PyObject* e = PySequence_Fast_GET_ITEM(seq, i);
      rc = is_int_like(e) ? read_int(e, &v->ints[i], &exact) : CONV_TYPE;
      if (rc == CONV_OK && !exact) {
        PyErr_Format(PyExc_ValueError, "[%s] %s is too large", s->name,
                     p->cname);
        rc = CONV_FAIL;
      }
    }
    Py_DECREF(seq);
    if (rc != CONV_OK) return rc;
    v->n = (int)n;
  }
  for (int i = 0; i < v->n; i++) v->axes[i] = saturate_int(v->ints[i]);
  return CONV_OK;
}

static int conv_arrays(const cmxpy_spec* s, PyObject* o, cmxpy_val* v) {
  if (PyUnicode_Check(o) || PyBytes_Check(o)) return CONV_TYPE;
  /* Too long a sequence fails before it is copied into a list (an array
   * of 2**31 rows made 2**31 objects first) */
  Py_ssize_t len = PyList_Check(o) || PyTuple_Check(o) ? 0 : PyObject_Length(o);
  if (len < 0) PyErr_Clear();
  if (len > INT_MAX) {
    PyErr_Format(PyExc_ValueError, "[%s] too many arrays", s->name);
    return CONV_FAIL;
  }
  PyObject* seq = PySequence_Fast(o, "");
  if (!seq) return PyErr_Clear(), CONV_TYPE;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  int rc = CONV_OK;
  if (n > INT_MAX) {
    PyErr_Format(PyExc_ValueError, "[%s] too many arrays", s->name);
    rc = CONV_FAIL;
  } else if (!(v->arrays =
                   PyMem_RawCalloc((size_t)(n ? n : 1), sizeof *v->arrays))) {
    PyErr_NoMemory();
    rc = CONV_FAIL;
  }
  for (Py_ssize_t i = 0; rc == CONV_OK && i < n; i++, v->n++)
    if (!(v->arrays[i] =
              cmxpy_to_array(PySequence_Fast_GET_ITEM(seq, i), s->name)))
      rc = CONV_FAIL;
  Py_DECREF(seq);
  return rc;
}

/* Converts o for parameter p into v. */
static int convert(cmxpy_args* A, const cmxpy_param* p, PyObject* o,
                   cmxpy_val* v) {
  const cmxpy_spec* s = A->spec;
  if (o == Py_None && p->kind != CMXPY_K_STREAM && p->kind != CMXPY_K_OBJECT) {
    if (!p->nullable) return CONV_TYPE;
    if (p->kind == CMXPY_K_DTYPE)
      v->dtype = p->dflt && cmxpy_is_dtype(p->dflt) ? cmxpy_dtype_value(p->dflt)
                                                    : CMX_DTYPE_AUTO;
    return CONV_OK;
  }
  switch (p->kind) {
    case CMXPY_K_OBJECT:
    case CMXPY_K_OPERAND:
      return CONV_OK;
    case CMXPY_K_ARRAY:
      return (v->arr = cmxpy_to_array(o, s->name)) ? CONV_OK : CONV_FAIL;
    case CMXPY_K_INT:
      if (!is_int_like(o)) return CONV_TYPE;
      if (read_int(o, &v->i, &v->exact) < 0) return CONV_FAIL;
      v->i32 = saturate_int(v->i);
      return CONV_OK;
    case CMXPY_K_FLOAT:
      if (PyUnicode_Check(o) || PyBytes_Check(o) || PyComplex_Check(o))
        return CONV_TYPE;
      v->f = PyFloat_AsDouble(o);
      if (v->f == -1.0 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return CONV_FAIL;
        PyErr_Clear();
        return CONV_TYPE;
      }
      return CONV_OK;
    case CMXPY_K_BOOL:
      if (o == Py_True || o == Py_False || is_numpy_bool(o)) {
        int t = PyObject_IsTrue(o);
        if (t < 0) return CONV_FAIL;
        v->b = t;
        return CONV_OK;
      }
      return CONV_TYPE;
    case CMXPY_K_STR:
      if (!PyUnicode_Check(o)) return CONV_TYPE;
      return (v->str = PyUnicode_AsUTF8(o)) ? CONV_OK : CONV_FAIL;
    case CMXPY_K_DTYPE:
      if (!cmxpy_is_dtype(o)) return CONV_TYPE;
      v->dtype = cmxpy_dtype_value(o);
      return CONV_OK;
    case CMXPY_K_INTS:
      return conv_ints(s, p, o, v);
    case CMXPY_K_ARRAYS:
      return conv_arrays(s, o, v);
    case CMXPY_K_STREAM:
      return cmxpy_stream_value(o, &A->stream) ? CONV_TYPE : CONV_OK;
    case CMXPY_K_DEVICE:
      return cmxpy_device_value(o, &v->device) ? CONV_TYPE : CONV_OK;
  }
  return CONV_TYPE;
}

/* ---------------- calls ---------------- */
static void release_values(cmxpy_args* A) {
  for (int i = 0; i < A->n; i++) {
    cmxpy_val* v = &A->v[i];
    cmx_array_release(v->arr);
    if (v->arrays) {
      cmx_array_release_all(v->arrays, (size_t)v->n);
      PyMem_RawFree(v->arrays);
    }
    if (A->spec->params[i].varargs || A->spec->params[i].kwargs)
      Py_XDECREF(v->obj);
  }
  cmx_array_release(A->out);
}

/* The index of the parameter named key, or -1. */
static int find_param(const cmxpy_spec* s, PyObject* key) {
  for (int k = 0; k < s->nparams; k++)
    if (s->params[k].name == key) return k; /* interned: the usual case */
  for (int k = 0; k < s->nparams; k++)
    if (!PyUnicode_Compare(s->params[k].name, key)) return k;
  return -1;
}

/* The n objects at a as a tuple (new reference). */
static PyObject* tuple_of(PyObject* const* a, Py_ssize_t n) {
  PyObject* t = PyTuple_New(n > 0 ? n : 0);
  for (Py_ssize_t i = 0; t && i < n; i++)
    PyTuple_SET_ITEM(t, i, Py_NewRef(a[i]));
  return t;
}

/* Matches the call's arguments to the parameters: slot[k] gets the object
 * of parameter k (NULL: not given), *extra the keywords for **kwargs.
 * Returns NULL, or why the call does not fit (new reference). */
static PyObject* match(const cmxpy_spec* s, PyObject* self,
                       PyObject* const* args, Py_ssize_t nargs,
                       PyObject* kwnames, PyObject** slot, PyObject** extra) {
  const bool method = s->flags & CMXPY_METHOD;
  Py_ssize_t npos = nargs + method;
  if (method) slot[0] = self;
  for (Py_ssize_t i = method; i < npos && i < s->npos; i++)
    slot[i] = args[i - method];
  if (npos > s->npos && s->varargs < 0)
    return PyUnicode_FromFormat(
        "[%s] takes %d positional arguments but %zd "
        "were given",
        s->name, s->npos - method, nargs);
  Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t j = 0; j < nk; j++) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, j);
    int k = find_param(s, key);
    const cmxpy_param* p = k >= 0 ? &s->params[k] : NULL;
    bool named = p && !p->varargs && !p->kwargs;
    if (!named && s->kwargs >= 0) {
      if ((!*extra && !(*extra = PyDict_New())) ||
          PyDict_SetItem(*extra, key, args[nargs + j]) < 0)
        return NULL;
      continue;
    }
    if (!named)
      return PyUnicode_FromFormat("[%s] unexpected keyword argument '%U'",
                                  s->name, key);
    if (p->posonly)
      return PyUnicode_FromFormat(
          "[%s] argument '%U' cannot be given by keyword", s->name, key);
    if (slot[k])
      return PyUnicode_FromFormat("[%s] argument '%U' given twice", s->name,
                                  key);
    slot[k] = args[nargs + j];
  }
  return NULL;
}

PyObject* cmxpy_call(cmxpy_spec* s, PyObject* self, PyObject* const* args,
                     Py_ssize_t nargs, PyObject* kwnames) {
  cmxpy_args A;
  A.spec = s;
  A.self = self;
  A.args = args;
  A.nargs = nargs;
  A.kwnames = kwnames;
  A.stream = CMX_STREAM_DEFAULT;
  A.out = NULL;
  A.n = 0;
  PyObject* slot[CMXPY_MAX_PARAMS] = {NULL};
  PyObject *extra = NULL, *r = NULL;
  PyObject* detail = match(s, self, args, nargs, kwnames, slot, &extra);
  if (PyErr_Occurred()) goto done;
  for (int k = 0; !detail && k < s->nparams; k++) {
    const cmxpy_param* p = &s->params[k];
    cmxpy_val* v = &A.v[k];
    v->arr = NULL;
    v->arrays = NULL;
    v->str = NULL;
    v->n = 0;
    v->given = slot[k] != NULL || p->varargs || p->kwargs;
    if (p->kwargs) {
      v->obj = extra ? extra : PyDict_New();
      extra = NULL;
    } else if (p->varargs) {
      Py_ssize_t from = s->npos - (s->flags & CMXPY_METHOD);
      v->obj = tuple_of(args + from, nargs - from);
    } else {
      v->obj = slot[k] ? slot[k] : p->dflt;
      if (!v->obj)
        detail = PyUnicode_FromFormat("[%s] missing argument '%s'", s->name,
                                      p->cname);
    }
    if (!v->obj) break;
    A.n = k + 1;
    v->none = v->obj == Py_None;
  }
  if (detail) {
    incompatible(s, self, args, nargs, kwnames, detail);
    goto done;
  }
  if (A.n < s->nparams) goto done; /* no memory */
  for (int k = 0; k < s->nparams; k++) {
    const cmxpy_param* p = &s->params[k];
    int rc = p->varargs && p->kind == CMXPY_K_ARRAY
                 ? conv_arrays(s, A.v[k].obj, &A.v[k])
             : p->varargs || p->kwargs ? CONV_OK
                                       : convert(&A, p, A.v[k].obj, &A.v[k]);
    if (rc == CONV_TYPE) cmxpy_type_error(&A, k);
    if (rc != CONV_OK) goto done;
  }
  r = s->impl(&A);
done:
  Py_XDECREF(detail);
  Py_XDECREF(extra);
  release_values(&A);
  return r;
}

/* The TypeError of cmxpy_type_error for object o given as argument i. */
static PyObject* type_error_of(cmxpy_args* A, int i, PyObject* o) {
  const cmxpy_spec* s = A->spec;
  PyObject* t = type_name(o);
  PyObject* detail =
      t ? PyUnicode_FromFormat("[%s] argument '%s' must be %s, not %U", s->name,
                               s->params[i].cname, s->params[i].ann, t)
        : NULL;
  Py_XDECREF(t);
  if (detail) incompatible(s, A->self, A->args, A->nargs, A->kwnames, detail);
  Py_XDECREF(detail);
  return NULL;
}

PyObject* cmxpy_type_error(cmxpy_args* A, int i) {
  return type_error_of(A, i, A->v[i].obj);
}

int cmxpy_convert_ints(cmxpy_args* A, int i, PyObject* o, cmxpy_val* into) {
  cmxpy_val* v = into ? into : &A->v[i];
  v->none = false;
  int rc = conv_ints(A->spec, &A->spec->params[i], o, v);
  if (rc == CONV_TYPE) type_error_of(A, i, o);
  return rc == CONV_OK ? 0 : -1;
}

int cmxpy_convert_arrays(cmxpy_args* A, int i, PyObject* o) {
  cmxpy_val* v = &A->v[i];
  if (v->arrays) { /* converted before: start again */
    cmx_array_release_all(v->arrays, (size_t)v->n);
    PyMem_RawFree(v->arrays);
    v->arrays = NULL;
  }
  v->n = 0;
  int rc = conv_arrays(A->spec, o, v);
  if (rc == CONV_TYPE) type_error_of(A, i, o);
  return rc == CONV_OK ? 0 : -1;
}

/* ---------------- registration ---------------- */
/* Finished method tables live for the whole process. */
static int compile_all(cmxpy_spec* const* specs, size_t n, PyMethodDef** defs) {
  *defs = PyMem_RawCalloc(n + 1, sizeof **defs);
  if (!*defs) return PyErr_NoMemory(), -1;
  for (size_t i = 0; i < n; i++) {
    if (compile(specs[i]) < 0) return -1;
    (*defs)[i] = specs[i]->def;
  }
  return 0;
}

int cmxpy_add_functions(PyObject* m, cmxpy_spec* const* specs, size_t n) {
  PyMethodDef* defs;
  if (compile_all(specs, n, &defs) < 0) return -1;
  return PyModule_AddFunctions(m, defs);
}

int cmxpy_add_methods(cmxpy_deflist* l, cmxpy_spec* const* specs, size_t n) {
  PyMethodDef* defs;
  if (compile_all(specs, n, &defs) < 0) return -1;
  int rc = cmxpy_defs_add(l, defs);
  PyMem_RawFree(defs); /* copied into l */
  return rc;
}

/* ---------------- helpers for bodies ---------------- */
int cmxpy_operands(cmxpy_args* A, int i, int j) {
  return cmxpy_to_operands(A->v[i].obj, A->v[j].obj, &A->v[i].arr, &A->v[j].arr,
                           A->spec->name);
}

int cmxpy_operand(cmxpy_args* A, int i, cmx_dtype partner) {
  cmxpy_val* v = &A->v[i];
  if (v->none && A->spec->params[i].nullable) return 0;
  v->arr = cmxpy_to_operand(v->obj, partner, A->spec->name);
  return v->arr ? 0 : -1;
}

PyObject* cmxpy_ret(cmxpy_args* A, cmx_status st) {
  PyObject* r = cmxpy_result(st, &A->out);
  A->out = NULL;
  return r;
}

PyObject* cmxpy_retv(cmxpy_args* A, cmx_status st) {
  PyObject* r = cmxpy_result_v(st, &A->out);
  A->out = NULL;
  return r;
}

PyObject* cmxpy_list(cmx_status st, cmx_array* outs, int n) {
  if (st != CMX_OK) {
    cmx_array_release_all(outs, (size_t)n);
    return cmxpy_raise(st);
  }
  PyObject* l = PyList_New(n);
  for (int i = 0; i < n; i++) {
    PyObject* o = l ? cmxpy_wrap(outs[i]) : (cmx_array_release(outs[i]), NULL);
    if (l && !o) Py_CLEAR(l);
    if (l) PyList_SET_ITEM(l, i, o);
  }
  return l;
}
