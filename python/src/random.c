/* The cmx.core.random submodule over include/cmx/random.h, with
 * mlx.core.random's names, signatures and defaults.
 *
 * Global key state: MLX exposes it as `mx.random.state`, a list holding one
 * key that every call without `key=` splits, (state, sample) =
 * split(state). Here the split is done by libcmx's global state (on the
 * host, under its lock, so no lazy chain of keys builds up); the list is
 * kept in step: after each such call list[0] is replaced by an array of the
 * new state. When the user puts another key into the list (to restore a
 * saved state, say), the next call adopts it as libcmx's state first. */
#include "cmxpy.h"

#define FN(f) ((PyCFunction)(void (*)(void))(f))
#define KW (METH_VARARGS | METH_KEYWORDS)

static PyObject* g_state;      /* the `state` list */
static PyObject* g_state_item; /* the array object last stored in it */

/* ---------------- global key state ---------------- */
/* Puts libcmx's current key into state[0]; 0 or -1. */
static int state_publish(void) {
  cmx_array k = NULL;
  cmx_status st = cmx_random_state(&k);
  if (st != CMX_OK) return cmxpy_raise(st), -1;
  PyObject* o = cmxpy_wrap(k);
  if (!o) return -1;
  int rc;
  if (PyList_GET_SIZE(g_state)) {
    Py_INCREF(o); /* PyList_SetItem steals one, even when it fails */
    rc = PyList_SetItem(g_state, 0, o);
  } else {
    rc = PyList_Append(g_state, o);
  }
  if (rc < 0) {
    Py_DECREF(o);
    return -1;
  }
  Py_XSETREF(g_state_item, o);
  return 0;
}

/* Before a call that draws from the global state: when state[0] is not the
 * key we stored there, make libcmx adopt it. 0 or -1. */
static int state_adopt(void) {
  if (!PyList_Check(g_state) || PyList_GET_SIZE(g_state) < 1) {
    PyErr_SetString(PyExc_ValueError,
                    "[random] mx.random.state must be a list holding one key");
    return -1;
  }
  PyObject* cur = PyList_GET_ITEM(g_state, 0);
  if (cur == g_state_item) return 0;
  if (!CmxArray_Check(cur)) {
    PyErr_Format(PyExc_TypeError,
                 "[random] mx.random.state[0] must be a key array, got "
                 "%.100s",
                 Py_TYPE(cur)->tp_name);
    return -1;
  }
  cmx_array k = cmx_array_retain(CMXPY_ARR(cur));
  cmx_status st = cmxpy_eval(k);
  if (st == CMX_OK) st = cmx_random_set_state(k);
  cmx_array_release(k);
  if (st != CMX_OK) return cmxpy_raise(st), -1;
  Py_INCREF(cur);
  Py_XSETREF(g_state_item, cur);
  return 0;
}

/* While compile traces a function, state[0] may be a placeholder (the
 * state captured with inputs=/outputs=): the global key is then split
 * lazily, as MLX's KeySequence does, state[0] getting the new state and
 * *key the sample key. libcmx's own state adopts state[0] on the next
 * eager call. */
static int traced_key(cmx_array* key) {
  if (!PyList_Check(g_state) || PyList_GET_SIZE(g_state) < 1 ||
      !CmxArray_Check(PyList_GET_ITEM(g_state, 0))) {
    PyErr_SetString(PyExc_ValueError,
                    "[random] mx.random.state must be a list holding one key");
    return -1;
  }
  cmx_array cur = CMXPY_ARR(PyList_GET_ITEM(g_state, 0)), pair = NULL;
  cmx_array next = NULL;
  cmx_status st = cmx_random_split(&pair, cur, 2, CMX_STREAM_DEFAULT);
  if (st == CMX_OK)
    st = cmx_index_get(&next, pair, (cmx_index[]){cmx_index_int(0)}, 1,
                       CMX_STREAM_DEFAULT);
  if (st == CMX_OK)
    st = cmx_index_get(key, pair, (cmx_index[]){cmx_index_int(1)}, 1,
                       CMX_STREAM_DEFAULT);
  cmx_array_release(pair);
  if (st != CMX_OK) {
    cmx_array_release(next);
    return cmxpy_raise(st), -1;
  }
  PyObject* w = cmxpy_wrap(next);
  if (!w || PyList_SetItem(g_state, 0, w) < 0) return -1;
  return 0;
}

/* The key argument: None (NULL, the global state, adopted first) or an
 * array. *used_global tells the caller to publish the state afterwards. */
static int key_arg(PyObject* o, cmx_array* key, bool* used_global,
                   const char* fname) {
  *key = NULL;
  *used_global = o == Py_None && !cmx_compile_tracing();
  if (o == Py_None && cmx_compile_tracing()) return traced_key(key);
  if (o == Py_None) return state_adopt();
  *key = cmxpy_to_array(o, fname);
  return *key ? 0 : -1;
}

/* Finishes a sampler call: publishes the new global state when it was used
 * (also after an error: the state may have advanced), then wraps. */
static PyObject* finish(cmx_status st, cmx_array* out, cmx_array key,
                        bool used_global) {
  cmx_array_release(key);
  if (used_global && state_publish() < 0) {
    cmx_array_release(*out);
    *out = NULL;
    return NULL;
  }
  return cmxpy_result_v(st, out);
}

/* A shape argument; None gives *p = NULL when allow_none. */
static int shape_arg(PyObject* o, int64_t* shape, int* nd, const int64_t** p,
                     bool allow_none, const char* fname) {
  *nd = 0;
  *p = shape;
  if (!o) return 0;
  if (o == Py_None && allow_none) {
    *p = NULL;
    return 0;
  }
  return cmxpy_shape_arg(o, shape, nd, fname);
}

/* A scalar-or-array parameter (weak Python scalars); NULL when absent. */
static int param_arg(PyObject* o, cmx_array* out, const char* fname) {
  *out = NULL;
  if (!o || o == Py_None) return 0;
  *out = cmxpy_to_operand(o, CMX_DTYPE_AUTO, fname);
  return *out ? 0 : -1;
}

/* ---------------- keys ---------------- */
static int seed_arg(PyObject* o, uint64_t* seed, const char* fname) {
  if (PyBool_Check(o) || !PyIndex_Check(o)) {
    PyErr_Format(PyExc_TypeError, "[%s] seed must be an integer, got %.100s",
                 fname, Py_TYPE(o)->tp_name);
    return -1;
  }
  PyObject* i = PyNumber_Index(o);
  if (!i) return -1;
  unsigned long long v = PyLong_AsUnsignedLongLong(i);
  Py_DECREF(i);
  if (v == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "[%s] seed must be a non-negative integer below 2**64", fname);
    return -1;
  }
  *seed = v;
  return 0;
}

static PyObject* r_seed(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"seed", NULL};
  PyObject* so;
  uint64_t seed;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O:seed", kwlist, &so) ||
      seed_arg(so, &seed, "seed") < 0)
    return NULL;
  cmx_status st = cmx_random_seed(seed);
  if (st != CMX_OK) return cmxpy_raise(st);
  if (state_publish() < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* r_key(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"seed", NULL};
  PyObject* so;
  uint64_t seed;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O:key", kwlist, &so) ||
      seed_arg(so, &seed, "key") < 0)
    return NULL;
  cmx_array out = NULL;
  return cmxpy_result_v(cmx_random_key(&out, seed), &out);
}

static PyObject* r_split(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"key", "num", "stream", NULL};
  PyObject *ko, *so = Py_None;
  int num = 2;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iO:split", kwlist, &ko, &num,
                                   &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array k = cmxpy_to_array(ko, "split"), out = NULL;
  if (!k) return NULL;
  PyObject* r = cmxpy_result_v(cmx_random_split(&out, k, num, s), &out);
  cmx_array_release(k);
  return r;
}

/* ---------------- samplers ---------------- */
static PyObject* r_bits(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"shape", "width", "key", "stream", NULL};
  PyObject *sho = NULL, *ko = Py_None, *so = Py_None;
  int width = 4, nd;
  int64_t shape[CMX_MAX_NDIM];
  const int64_t* sp;
  cmx_stream s;
  cmx_array key, out = NULL;
  bool glob;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OiOO:bits", kwlist, &sho, &width,
                                   &ko, &so) ||
      shape_arg(sho, shape, &nd, &sp, false, "bits") < 0 ||
      cmxpy_stream_arg(so, &s) < 0 || key_arg(ko, &key, &glob, "bits") < 0)
    return NULL;
  return finish(cmx_random_bits(&out, sp, nd, width, key, s), &out, key, glob);
}

/* uniform and randint: (low, high, shape=[], dtype=..., key=None,
 * stream=None). */
typedef cmx_status (*range_fn)(cmx_array*, cmx_array, cmx_array, const int64_t*,
                               int, cmx_dtype, cmx_array, cmx_stream);
static PyObject* call_range(PyObject* args, PyObject* kw, range_fn f,
                            const char* name, const char* fmt,
                            PyObject* def_low, PyObject* def_high) {
  static char* kwlist[] = {"low", "high",   "shape", "dtype",
                           "key", "stream", NULL};
  PyObject *lo = def_low, *hi = def_high, *sho = NULL, *dto = Py_None,
           *ko = Py_None, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &lo, &hi, &sho, &dto,
                                   &ko, &so))
    return NULL;
  int nd;
  int64_t shape[CMX_MAX_NDIM];
  const int64_t* sp;
  cmx_dtype t;
  cmx_stream s;
  if (shape_arg(sho, shape, &nd, &sp, false, name) < 0 ||
      cmxpy_dtype_arg(dto, &t, true, name) < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array l = NULL, h = NULL, key = NULL, out = NULL;
  bool glob = false;
  PyObject* r = NULL;
  if (param_arg(lo, &l, name) == 0 && param_arg(hi, &h, name) == 0 &&
      key_arg(ko, &key, &glob, name) == 0)
    r = finish(f(&out, l, h, sp, nd, t, key, s), &out, key, glob);
  cmx_array_release(l);
  cmx_array_release(h);
  return r;
}

static PyObject* r_uniform(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  PyObject *zero = PyLong_FromLong(0), *one = PyLong_FromLong(1);
  PyObject* r = zero && one
                    ? call_range(args, kw, cmx_random_uniform, "uniform",
                                 "|OOOOOO:uniform", zero, one)
                    : NULL;
  Py_XDECREF(zero);
  Py_XDECREF(one);
  return r;
}

static PyObject* r_randint(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_range(args, kw, cmx_random_randint, "randint", "OO|OOOO:randint",
                    NULL, NULL);
}

static PyObject* r_normal(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"shape", "dtype",  "loc", "scale",
                           "key",   "stream", NULL};
  PyObject *sho = NULL, *dto = Py_None, *lo = Py_None, *sco = Py_None,
           *ko = Py_None, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOO:normal", kwlist, &sho,
                                   &dto, &lo, &sco, &ko, &so))
    return NULL;
  int nd;
  int64_t shape[CMX_MAX_NDIM];
  const int64_t* sp;
  cmx_dtype t;
  cmx_stream s;
  if (shape_arg(sho, shape, &nd, &sp, false, "normal") < 0 ||
      cmxpy_dtype_arg(dto, &t, true, "normal") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array loc = NULL, scale = NULL, key = NULL, out = NULL;
  bool glob = false;
  PyObject* r = NULL;
  if (param_arg(lo, &loc, "normal") == 0 &&
      param_arg(sco, &scale, "normal") == 0 &&
      key_arg(ko, &key, &glob, "normal") == 0)
    r = finish(cmx_random_normal(&out, sp, nd, t, loc, scale, key, s), &out,
               key, glob);
  cmx_array_release(loc);
  cmx_array_release(scale);
  return r;
}

static PyObject* r_multivariate_normal(PyObject* m, PyObject* args,
                                       PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"mean", "cov",    "shape", "dtype",
                           "key",  "stream", NULL};
  PyObject *mo, *co, *sho = NULL, *dto = Py_None, *ko = Py_None, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOOO:multivariate_normal",
                                   kwlist, &mo, &co, &sho, &dto, &ko, &so))
    return NULL;
  int nd;
  int64_t shape[CMX_MAX_NDIM];
  const int64_t* sp;
  cmx_dtype t;
  cmx_stream s;
  if (shape_arg(sho, shape, &nd, &sp, false, "multivariate_normal") < 0 ||
      cmxpy_dtype_arg(dto, &t, true, "multivariate_normal") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array mean = cmxpy_to_array(mo, "multivariate_normal"), cov = NULL;
  cmx_array key = NULL, out = NULL;
  bool glob = false;
  PyObject* r = NULL;
  if (mean && (cov = cmxpy_to_array(co, "multivariate_normal")) &&
      key_arg(ko, &key, &glob, "multivariate_normal") == 0)
    r = finish(
        cmx_random_multivariate_normal(&out, mean, cov, sp, nd, t, key, s),
        &out, key, glob);
  cmx_array_release(mean);
  cmx_array_release(cov);
  return r;
}

static PyObject* r_bernoulli(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"p", "shape", "key", "stream", NULL};
  PyObject *po = NULL, *sho = Py_None, *ko = Py_None, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOO:bernoulli", kwlist, &po,
                                   &sho, &ko, &so))
    return NULL;
  int nd;
  int64_t shape[CMX_MAX_NDIM];
  const int64_t* sp;
  cmx_stream s;
  if (shape_arg(sho, shape, &nd, &sp, true, "bernoulli") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array p = NULL, key = NULL, out = NULL;
  bool glob = false;
  PyObject* half = po ? NULL : PyFloat_FromDouble(0.5);
  PyObject* r = NULL;
  if ((po || half) && param_arg(po ? po : half, &p, "bernoulli") == 0 &&
      key_arg(ko, &key, &glob, "bernoulli") == 0)
    r = finish(cmx_random_bernoulli(&out, p, sp, nd, key, s), &out, key, glob);
  Py_XDECREF(half);
  cmx_array_release(p);
  return r;
}

static PyObject* r_truncated_normal(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"lower", "upper",  "shape", "dtype",
                           "key",   "stream", NULL};
  PyObject *lo, *hi, *sho = Py_None, *dto = Py_None, *ko = Py_None,
                     *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOOO:truncated_normal", kwlist,
                                   &lo, &hi, &sho, &dto, &ko, &so))
    return NULL;
  int nd;
  int64_t shape[CMX_MAX_NDIM];
  const int64_t* sp;
  cmx_dtype t;
  cmx_stream s;
  if (shape_arg(sho, shape, &nd, &sp, true, "truncated_normal") < 0 ||
      cmxpy_dtype_arg(dto, &t, true, "truncated_normal") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array l = NULL, h = NULL, key = NULL, out = NULL;
  bool glob = false;
  PyObject* r = NULL;
  if (param_arg(lo, &l, "truncated_normal") == 0 &&
      param_arg(hi, &h, "truncated_normal") == 0 &&
      key_arg(ko, &key, &glob, "truncated_normal") == 0)
    r = finish(cmx_random_truncated_normal(&out, l, h, sp, nd, t, key, s), &out,
               key, glob);
  cmx_array_release(l);
  cmx_array_release(h);
  return r;
}

static PyObject* r_gumbel(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"shape", "dtype", "key", "stream", NULL};
  PyObject *sho = NULL, *dto = Py_None, *ko = Py_None, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOO:gumbel", kwlist, &sho, &dto,
                                   &ko, &so))
    return NULL;
  int nd;
  int64_t shape[CMX_MAX_NDIM];
  const int64_t* sp;
  cmx_dtype t;
  cmx_stream s;
  cmx_array key, out = NULL;
  bool glob;
  if (shape_arg(sho, shape, &nd, &sp, false, "gumbel") < 0 ||
      cmxpy_dtype_arg(dto, &t, true, "gumbel") < 0 ||
      cmxpy_stream_arg(so, &s) < 0 || key_arg(ko, &key, &glob, "gumbel") < 0)
    return NULL;
  return finish(cmx_random_gumbel(&out, sp, nd, t, key, s), &out, key, glob);
}

static PyObject* r_laplace(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"shape", "dtype",  "loc", "scale",
                           "key",   "stream", NULL};
  PyObject *sho = NULL, *dto = Py_None, *ko = Py_None, *so = Py_None;
  double loc = 0.0, scale = 1.0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOddOO:laplace", kwlist, &sho,
                                   &dto, &loc, &scale, &ko, &so))
    return NULL;
  int nd;
  int64_t shape[CMX_MAX_NDIM];
  const int64_t* sp;
  cmx_dtype t;
  cmx_stream s;
  cmx_array key, out = NULL;
  bool glob;
  if (shape_arg(sho, shape, &nd, &sp, false, "laplace") < 0 ||
      cmxpy_dtype_arg(dto, &t, true, "laplace") < 0 ||
      cmxpy_stream_arg(so, &s) < 0 || key_arg(ko, &key, &glob, "laplace") < 0)
    return NULL;
  return finish(cmx_random_laplace(&out, sp, nd, t, loc, scale, key, s), &out,
                key, glob);
}

static PyObject* r_categorical(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"logits", "axis",   "shape", "num_samples",
                           "key",    "stream", NULL};
  PyObject *lo, *sho = Py_None, *no = Py_None, *ko = Py_None, *so = Py_None;
  int axis = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iOOOO:categorical", kwlist, &lo,
                                   &axis, &sho, &no, &ko, &so))
    return NULL;
  if (sho != Py_None && no != Py_None) {
    PyErr_SetString(PyExc_ValueError,
                    "[categorical] At most one of shape or num_samples can "
                    "be specified.");
    return NULL;
  }
  int nd;
  int64_t shape[CMX_MAX_NDIM], num = 0;
  const int64_t* sp;
  cmx_stream s;
  if (shape_arg(sho, shape, &nd, &sp, true, "categorical") < 0 ||
      (no != Py_None &&
       cmxpy_int64_arg(no, &num, "categorical", "num_samples") < 0) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array logits = cmxpy_to_array(lo, "categorical"), key = NULL, out = NULL;
  bool glob = false;
  PyObject* r = NULL;
  if (logits && key_arg(ko, &key, &glob, "categorical") == 0) {
    cmx_status st =
        no != Py_None
            ? cmx_random_categorical_n(&out, logits, axis, num, key, s)
            : cmx_random_categorical(&out, logits, axis, sp, nd, key, s);
    r = finish(st, &out, key, glob);
  }
  cmx_array_release(logits);
  return r;
}

static PyObject* r_permutation(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"x", "axis", "key", "stream", NULL};
  PyObject *xo, *ko = Py_None, *so = Py_None;
  int axis = 0;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iOO:permutation", kwlist, &xo,
                                   &axis, &ko, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array x = NULL, key = NULL, out = NULL;
  bool glob = false;
  int64_t n = 0;
  /* An int (Python or NumPy integer scalar) asks for a permutation of
   * arange(x); anything else is an array to shuffle. */
  bool is_int = false;
  if (!PyBool_Check(xo) && !CmxArray_Check(xo) && PyIndex_Check(xo)) {
    PyObject* i = PyNumber_Index(xo);
    is_int = i != NULL;
    Py_XDECREF(i);
    PyErr_Clear(); /* e.g. a NumPy array of several integers */
  }
  if (is_int) {
    if (cmxpy_int64_arg(xo, &n, "permutation", "x") < 0) return NULL;
  } else if (!(x = cmxpy_to_array(xo, "permutation"))) {
    return NULL;
  }
  PyObject* r = NULL;
  if (key_arg(ko, &key, &glob, "permutation") == 0)
    r = finish(is_int ? cmx_random_permutation_n(&out, n, key, s)
                      : cmx_random_permutation(&out, x, axis, key, s),
               &out, key, glob);
  cmx_array_release(x);
  return r;
}

/* ---------------- the submodule ---------------- */
#define SIG_TAIL "key=None, stream=None)\n--\n\n"
#define KEY_DOC "    key (array, optional): A PRNG key. Default: ``None``.\n"

static PyMethodDef random_methods[] = {
    {"seed", FN(r_seed), KW,
     "seed(seed)\n--\n\nSeed the global PRNG.\n\nArgs:\n    seed (int): Seed "
     "for the global PRNG."},
    {"key", FN(r_key), KW,
     "key(seed)\n--\n\nGet a PRNG key from a seed.\n\nArgs:\n    seed (int): "
     "Seed for the PRNG.\n\nReturns:\n    array: The PRNG key array."},
    {"split", FN(r_split), KW,
     "split(key, num=2, stream=None)\n--\n\nSplit a PRNG key into sub keys."
     "\n\nArgs:\n    key (array): Input key to split.\n    num (int, "
     "optional): Number of sub keys. Default: ``2``.\n\nReturns:\n    array: "
     "The array of sub keys with ``num`` as its first dimension."},
    {"bits", FN(r_bits), KW,
     "bits(shape=[], width=4, " SIG_TAIL
     "Generate an array of random bits.\n\nArgs:\n    shape (list(int), "
     "optional): Shape of the output. Default: ``()``.\n    width (int, "
     "optional): The bit width of each element (1, 2 or 4 bytes: uint8, "
     "uint16, uint32). Default: ``4``.\n" KEY_DOC
     "\nReturns:\n    array: An array of random integers."},
    {"uniform", FN(r_uniform), KW,
     "uniform(low=0, high=1, shape=[], dtype=None, " SIG_TAIL
     "Generate uniformly distributed random numbers.\n\nThe values are "
     "sampled uniformly in the half-open interval ``[low, high)``. The lower "
     "and upper bound can be scalars or arrays and must be broadcastable to "
     "``shape``.\n\nArgs:\n    low (scalar or array, optional): Lower bound "
     "of the distribution. Default: ``0``.\n    high (scalar or array, "
     "optional): Upper bound of the distribution. Default: ``1``.\n    shape "
     "(list(int), optional): Shape of the output. Default: ``()``.\n    "
     "dtype (Dtype, optional): Type of the output. Default: "
     "``float32``.\n" KEY_DOC
     "\nReturns:\n    array: The output array random values."},
    {"normal", FN(r_normal), KW,
     "normal(shape=[], dtype=None, loc=None, scale=None, " SIG_TAIL
     "Generate normally distributed random numbers.\n\nArgs:\n    shape "
     "(list(int), optional): Shape of the output. Default: ``()``.\n    "
     "dtype (Dtype, optional): Type of the output. Default: ``float32``.\n"
     "    loc (scalar or array, optional): Mean of the distribution. "
     "Default: ``0``.\n    scale (scalar or array, optional): Standard "
     "deviation of the distribution. Default: ``1``.\n" KEY_DOC
     "\nReturns:\n    array: The output array of random values."},
    {"multivariate_normal", FN(r_multivariate_normal), KW,
     "multivariate_normal(mean, cov, shape=[], dtype=None, " SIG_TAIL
     "Generate jointly-normal random samples given a mean and covariance.\n\n"
     "The matrix ``cov`` must be positive semi-definite. The behavior is "
     "undefined if it is not. The only supported ``dtype`` is ``float32``.\n\n"
     "Args:\n    mean (array): array of shape ``(..., n)``, the mean of the "
     "distribution.\n    cov (array): array of shape ``(..., n, n)``, the "
     "covariance matrix of the distribution. The batch shape ``...`` must "
     "be broadcast-compatible with that of ``mean``.\n    shape (list(int), "
     "optional): The output shape must be broadcast-compatible with "
     "``mean.shape[:-1]`` and ``cov.shape[:-2]``. If empty, the result "
     "shape is determined by broadcasting the batch shapes of ``mean`` and "
     "``cov``. Default: ``[]``.\n    dtype (Dtype, optional): The output "
     "type. Default: ``float32``.\n" KEY_DOC
     "\nReturns:\n    array: The output array of random values."},
    {"randint", FN(r_randint), KW,
     "randint(low, high, shape=[], dtype=None, " SIG_TAIL
     "Generate random integers from the given interval.\n\nThe values are "
     "sampled with equal probability from the integers in half-open "
     "interval ``[low, high)``. The lower and upper bound can be scalars or "
     "arrays and must be broadcastable to ``shape``.\n\nArgs:\n    low "
     "(scalar or array): Lower bound of the interval.\n    high (scalar or "
     "array): Upper bound of the interval.\n    shape (list(int), optional): "
     "Shape of the output. Default: ``()``.\n    dtype (Dtype, optional): "
     "Type of the output. Default: ``int32``.\n" KEY_DOC
     "\nReturns:\n    array: The array of random integers."},
    {"bernoulli", FN(r_bernoulli), KW,
     "bernoulli(p=0.5, shape=None, " SIG_TAIL
     "Generate Bernoulli random values.\n\nThe values are sampled from the "
     "bernoulli distribution with parameter ``p``. The parameter ``p`` can "
     "be a :obj:`float` or :obj:`array` and must be broadcastable to "
     "``shape``.\n\nArgs:\n    p (float or array, optional): Parameter of "
     "the Bernoulli distribution. Default: ``0.5``.\n    shape (list(int), "
     "optional): Shape of the output. Default: ``p.shape``.\n" KEY_DOC
     "\nReturns:\n    array: The array of random booleans."},
    {"truncated_normal", FN(r_truncated_normal), KW,
     "truncated_normal(lower, upper, shape=None, dtype=None, " SIG_TAIL
     "Generate values from a truncated normal distribution.\n\nThe values "
     "are sampled from the truncated normal distribution on the domain "
     "``(lower, upper)``. The bounds ``lower`` and ``upper`` can be scalars "
     "or arrays and must be broadcastable to ``shape``.\n\nArgs:\n    lower "
     "(scalar or array): Lower bound of the domain.\n    upper (scalar or "
     "array): Upper bound of the domain.\n    shape (list(int), optional): "
     "The shape of the output. Default: the broadcast shape of ``lower`` "
     "and ``upper``.\n    dtype (Dtype, optional): The data type of the "
     "output. Default: ``float32``.\n" KEY_DOC
     "\nReturns:\n    array: The output array of random values."},
    {"gumbel", FN(r_gumbel), KW,
     "gumbel(shape=[], dtype=None, " SIG_TAIL
     "Sample from the standard Gumbel distribution.\n\nThe values are "
     "sampled from a standard Gumbel distribution which CDF "
     "``exp(-exp(-x))``.\n\nArgs:\n    shape (list(int)): The shape of the "
     "output.\n    dtype (Dtype, optional): The data type of the output. "
     "Default: ``float32``.\n" KEY_DOC
     "\nReturns:\n    array: The :class:`array` with shape ``shape`` and "
     "distributed according to the Gumbel distribution."},
    {"categorical", FN(r_categorical), KW,
     "categorical(logits, axis=-1, shape=None, num_samples=None, " SIG_TAIL
     "Sample from a categorical distribution.\n\nThe values are sampled "
     "from the categorical distribution specified by the unnormalized "
     "values in ``logits``. Note, at most one of ``shape`` or "
     "``num_samples`` can be specified. If both are ``None``, the output "
     "has the same shape as ``logits`` with the ``axis`` dimension "
     "removed.\n\nArgs:\n    logits (array): The *unnormalized* categorical "
     "distribution(s).\n    axis (int, optional): The axis which specifies "
     "the distribution. Default: ``-1``.\n    shape (list(int), optional): "
     "The shape of the output. This must be broadcast compatible with "
     "``logits.shape`` with the ``axis`` dimension removed. Default: "
     "``None``\n    num_samples (int, optional): The number of samples to "
     "draw from each of the categorical distributions in ``logits``. The "
     "output will have ``num_samples`` in the last dimension. Default: "
     "``None``.\n" KEY_DOC
     "\nReturns:\n    array: The ``shape``-sized output array with type "
     "``uint32``."},
    {"laplace", FN(r_laplace), KW,
     "laplace(shape=[], dtype=None, loc=0.0, scale=1.0, " SIG_TAIL
     "Sample numbers from a Laplace distribution.\n\nArgs:\n    shape "
     "(list(int), optional): Shape of the output. Default: ``()``.\n    "
     "dtype (Dtype, optional): Type of the output. Default: ``float32``.\n"
     "    loc (float, optional): Mean of the distribution. Default: "
     "``0.0``.\n    scale (float, optional): The scale \"b\" of the Laplace "
     "distribution. Default: ``1.0``.\n" KEY_DOC
     "\nReturns:\n    array: The output array of random values."},
    {"permutation", FN(r_permutation), KW,
     "permutation(x, axis=0, " SIG_TAIL
     "Generate a random permutation or permute the entries of an array.\n\n"
     "Args:\n    x (int or array, optional): If an integer is provided a "
     "random permutation of ``mx.arange(x)`` is returned. Otherwise the "
     "entries of ``x`` along the given axis are randomly permuted.\n    "
     "axis (int, optional): The axis to permute along. Default: "
     "``0``.\n" KEY_DOC
     "\nReturns:\n    array: The generated random permutation or randomly "
     "permuted input array."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef random_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cmx.core.random",
    .m_doc =
        "cmx.core.random: functionality related to random number "
        "generation (threefry2x32 keys, as mlx.core.random).",
    .m_size = -1,
    .m_methods = random_methods,
};

int cmxpy_init_random(PyObject* m) {
  PyObject* sub = PyModule_Create(&random_module);
  if (!sub) return -1;
  g_state = PyList_New(0);
  if (!g_state || state_publish() < 0) {
    Py_DECREF(sub);
    return -1;
  }
  Py_INCREF(g_state);
  if (PyModule_AddObject(sub, "state", g_state) < 0) {
    Py_DECREF(g_state);
    Py_DECREF(sub);
    return -1;
  }
  Py_INCREF(sub);
  if (PyModule_AddObject(m, "random", sub) < 0) {
    Py_DECREF(sub);
    Py_DECREF(sub);
    return -1;
  }
  /* `import cmx.core.random` finds it too. */
  PyObject* mods = PyImport_GetModuleDict();
  int rc = PyDict_SetItemString(mods, "cmx.core.random", sub);
  Py_DECREF(sub);
  return rc;
}
