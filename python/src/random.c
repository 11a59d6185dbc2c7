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
#include "args.h"

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

/* A scalar-or-array parameter (weak Python scalars); NULL for None. */
static int param(cmxpy_args* A, int i) {
  return cmxpy_operand(A, i, CMX_DTYPE_AUTO);
}

/* While compile traces a function, state[0] may be a placeholder (the
 * state captured with inputs=/outputs=): the global key is then split
 * lazily, as MLX's KeySequence does, state[0] getting the new state and
 * *key the sample key (a new reference). libcmx's own state adopts
 * state[0] on the next eager call. */
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

/* The key argument (parameter i): None (the global state, adopted first;
 * split lazily while compile traces) or an array. *used_global tells the
 * caller to publish the state afterwards. */
static int key_arg(cmxpy_args* A, int i, bool* used_global) {
  *used_global = ISNONE(i) && !cmx_compile_tracing();
  if (ISNONE(i) && cmx_compile_tracing()) return traced_key(&A->v[i].arr);
  return *used_global ? state_adopt() : 0;
}

/* Finishes a sampler call: publishes the new global state when it was used
 * (also after an error: the state may have advanced), then wraps. */
static PyObject* finish(cmxpy_args* A, cmx_status st, bool used_global) {
  if (used_global && state_publish() < 0) {
    cmx_array_release(A->out);
    A->out = NULL;
    return NULL;
  }
  return RETV(st);
}

/* The shape argument i: NULL (None) or its values. */
#define SHAPE(i) (ISNONE(i) ? NULL : A->v[i].ints), A->v[i].n

/* ---------------- docs ---------------- */
#define KEY_DOC "    key (array, optional): A PRNG key. Default: ``None``.\n"
#define MULTIVARIATE_NORMAL_DOC                                              \
  "Generate jointly-normal random samples given a mean and covariance.\n\n"  \
  "The matrix ``cov`` must be positive semi-definite. The behavior is "      \
  "undefined if it is not. The only supported ``dtype`` is ``float32``.\n\n" \
  "Args:\n    mean (array): array of shape ``(..., n)``, the mean of the "   \
  "distribution.\n    cov (array): array of shape ``(..., n, n)``, the "     \
  "covariance matrix of the distribution. The batch shape ``...`` must "     \
  "be broadcast-compatible with that of ``mean``.\n    shape (list(int), "   \
  "optional): The output shape must be broadcast-compatible with "           \
  "``mean.shape[:-1]`` and ``cov.shape[:-2]``. If empty, the result "        \
  "shape is determined by broadcasting the batch shapes of ``mean`` and "    \
  "``cov``. Default: ``[]``.\n    dtype (Dtype, optional): The output "      \
  "type. Default: ``float32``.\n" KEY_DOC                                    \
  "\nReturns:\n    array: The output array of random values."
#define TRUNCATED_NORMAL_DOC                                               \
  "Generate values from a truncated normal distribution.\n\nThe values "   \
  "are sampled from the truncated normal distribution on the domain "      \
  "``(lower, upper)``. The bounds ``lower`` and ``upper`` can be scalars " \
  "or arrays and must be broadcastable to ``shape``.\n\nArgs:\n    lower " \
  "(scalar or array): Lower bound of the domain.\n    upper (scalar or "   \
  "array): Upper bound of the domain.\n    shape (list(int), optional): "  \
  "The shape of the output. Default: the broadcast shape of ``lower`` "    \
  "and ``upper``.\n    dtype (Dtype, optional): The data type of the "     \
  "output. Default: ``float32``.\n" KEY_DOC                                \
  "\nReturns:\n    array: The output array of random values."
#define CATEGORICAL_DOC                                                    \
  "Sample from a categorical distribution.\n\nThe values are sampled "     \
  "from the categorical distribution specified by the unnormalized "       \
  "values in ``logits``. Note, at most one of ``shape`` or "               \
  "``num_samples`` can be specified. If both are ``None``, the output "    \
  "has the same shape as ``logits`` with the ``axis`` dimension "          \
  "removed.\n\nArgs:\n    logits (array): The *unnormalized* categorical " \
  "distribution(s).\n    axis (int, optional): The axis which specifies "  \
  "the distribution. Default: ``-1``.\n    shape (list(int), optional): "  \
  "The shape of the output. This must be broadcast compatible with "       \
  "``logits.shape`` with the ``axis`` dimension removed. Default: "        \
  "``None``\n    num_samples (int, optional): The number of samples to "   \
  "draw from each of the categorical distributions in ``logits``. The "    \
  "output will have ``num_samples`` in the last dimension. Default: "      \
  "``None``.\n" KEY_DOC                                                    \
  "\nReturns:\n    array: The ``shape``-sized output array with type "     \
  "``uint32``."
#define PERMUTATION_DOC                                                   \
  "Generate a random permutation or permute the entries of an array.\n\n" \
  "Args:\n    x (int or array, optional): If an integer is provided a "   \
  "random permutation of ``mx.arange(x)`` is returned. Otherwise the "    \
  "entries of ``x`` along the given axis are randomly permuted.\n    "    \
  "axis (int, optional): The axis to permute along. Default: "            \
  "``0``.\n" KEY_DOC                                                      \
  "\nReturns:\n    array: The generated random permutation or randomly "  \
  "permuted input array."

/* ---------------- keys ---------------- */
static int seed_arg(PyObject* o, uint64_t* seed, const char* fname) {
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

CMXPY_DEF(seed, "(seed: int) -> None",
          "Seed the global PRNG.\n\nArgs:\n    seed (int): Seed for the "
          "global PRNG.") {
  uint64_t seed;
  if (seed_arg(OBJ(0), &seed, "seed") < 0) return NULL;
  cmx_status st = cmx_random_seed(seed);
  if (st != CMX_OK) return cmxpy_raise(st);
  if (state_publish() < 0) return NULL;
  Py_RETURN_NONE;
}

CMXPY_DEF(key, "(seed: int) -> array",
          "Get a PRNG key from a seed.\n\nArgs:\n    seed (int): Seed for "
          "the PRNG.\n\nReturns:\n    array: The PRNG key array.") {
  uint64_t seed;
  if (seed_arg(OBJ(0), &seed, "key") < 0) return NULL;
  return RETV(cmx_random_key(OUT, seed));
}

CMXPY_DEF(split,
          "(key: array, num: int = 2, stream: StreamOrDevice = None) -> array",
          "Split a PRNG key into sub keys.\n\nArgs:\n    key (array): Input "
          "key to split.\n    num (int, optional): Number of sub keys. "
          "Default: ``2``.\n\nReturns:\n    array: The array of sub keys "
          "with ``num`` as its first dimension.") {
  return RETV(cmx_random_split(OUT, ARR(0), INT(1), STREAM));
}

/* ---------------- samplers ---------------- */
#define KEY_STREAM \
  "key: array | None = None, stream: StreamOrDevice = None) -> array"

CMXPY_DEF(bits, "(shape: Sequence[int] = [], width: int = 4, " KEY_STREAM,
          "Generate an array of random bits.\n\nArgs:\n    shape (list(int), "
          "optional): Shape of the output. Default: ``()``.\n    width "
          "(int, optional): The bit width of each element (1, 2 or 4 bytes: "
          "uint8, uint16, uint32). Default: ``4``.\n" KEY_DOC
          "\nReturns:\n    array: An array of random integers.") {
  bool glob;
  if (key_arg(A, 2, &glob) < 0) return NULL;
  return finish(A, cmx_random_bits(OUT, SHAPE(0), INT(1), ARR(2), STREAM),
                glob);
}

/* uniform and randint: (low, high, shape=[], dtype=..., key=None,
 * stream=None). */
typedef cmx_status (*range_fn)(cmx_array*, cmx_array, cmx_array, const int64_t*,
                               int, cmx_dtype, cmx_array, cmx_stream);
static PyObject* range(cmxpy_args* A) {
  bool glob;
  if (param(A, 0) < 0 || param(A, 1) < 0 || key_arg(A, 4, &glob) < 0)
    return NULL;
  return finish(
      A,
      DATA(range_fn)(OUT, ARR(0), ARR(1), SHAPE(2), DTYPE(3), ARR(4), STREAM),
      glob);
}
CMXPY_FN(
    uniform,
    "(low: scalar | array = 0, high: scalar | array = 1, shape: "
    "Sequence[int] = [], dtype: Dtype | None = float32, " KEY_STREAM,
    range, cmx_random_uniform,
    "Generate uniformly distributed random numbers.\n\nThe values are "
    "sampled uniformly in the half-open interval ``[low, high)``. The lower "
    "and upper bound can be scalars or arrays and must be broadcastable to "
    "``shape``.\n\nArgs:\n    low (scalar or array, optional): Lower bound "
    "of the distribution. Default: ``0``.\n    high (scalar or array, "
    "optional): Upper bound of the distribution. Default: ``1``.\n    shape "
    "(list(int), optional): Shape of the output. Default: ``()``.\n    "
    "dtype (Dtype, optional): Type of the output. Default: "
    "``float32``.\n" KEY_DOC
    "\nReturns:\n    array: The output array random values.")
CMXPY_FN(
    randint,
    "(low: scalar | array, high: scalar | array, shape: Sequence[int] = [], "
    "dtype: Dtype | None = int32, " KEY_STREAM,
    range, cmx_random_randint,
    "Generate random integers from the given interval.\n\nThe values are "
    "sampled with equal probability from the integers in half-open "
    "interval ``[low, high)``. The lower and upper bound can be scalars or "
    "arrays and must be broadcastable to ``shape``.\n\nArgs:\n    low "
    "(scalar or array): Lower bound of the interval.\n    high (scalar or "
    "array): Upper bound of the interval.\n    shape (list(int), optional): "
    "Shape of the output. Default: ``()``.\n    dtype (Dtype, optional): "
    "Type of the output. Default: ``int32``.\n" KEY_DOC
    "\nReturns:\n    array: The array of random integers.")

CMXPY_DEF(normal,
          "(shape: Sequence[int] = [], dtype: Dtype | None = float32, loc: "
          "scalar | array | None = None, scale: scalar | array | None = "
          "None, " KEY_STREAM,
          "Generate normally distributed random numbers.\n\nArgs:\n    "
          "shape (list(int), optional): Shape of the output. Default: "
          "``()``.\n    dtype (Dtype, optional): Type of the output. "
          "Default: ``float32``.\n    loc (scalar or array, optional): Mean "
          "of the distribution. Default: ``0``.\n    scale (scalar or array, "
          "optional): Standard deviation of the distribution. Default: "
          "``1``.\n" KEY_DOC
          "\nReturns:\n    array: The output array of random values.") {
  bool glob;
  if (param(A, 2) < 0 || param(A, 3) < 0 || key_arg(A, 4, &glob) < 0)
    return NULL;
  return finish(A,
                cmx_random_normal(OUT, SHAPE(0), DTYPE(1), ARR(2), ARR(3),
                                  ARR(4), STREAM),
                glob);
}

CMXPY_DEF(multivariate_normal,
          "(mean: array, cov: array, shape: Sequence[int] = [], dtype: Dtype "
          "| None = float32, " KEY_STREAM,
          MULTIVARIATE_NORMAL_DOC) {
  bool glob;
  if (key_arg(A, 4, &glob) < 0) return NULL;
  return finish(A,
                cmx_random_multivariate_normal(OUT, ARR(0), ARR(1), SHAPE(2),
                                               DTYPE(3), ARR(4), STREAM),
                glob);
}

CMXPY_DEF(
    bernoulli,
    "(p: scalar | array = 0.5, shape: Sequence[int] | None = None, " KEY_STREAM,
    "Generate Bernoulli random values.\n\nThe values are sampled from "
    "the bernoulli distribution with parameter ``p``. The parameter "
    "``p`` can be a :obj:`float` or :obj:`array` and must be "
    "broadcastable to ``shape``.\n\nArgs:\n    p (float or array, "
    "optional): Parameter of the Bernoulli distribution. Default: "
    "``0.5``.\n    shape (list(int), optional): Shape of the output. "
    "Default: ``p.shape``.\n" KEY_DOC
    "\nReturns:\n    array: The array of random booleans.") {
  bool glob;
  if (param(A, 0) < 0 || key_arg(A, 2, &glob) < 0) return NULL;
  return finish(A, cmx_random_bernoulli(OUT, ARR(0), SHAPE(1), ARR(2), STREAM),
                glob);
}

CMXPY_DEF(
    truncated_normal,
    "(lower: scalar | array, upper: scalar | array, shape: "
    "Sequence[int] | None = None, dtype: Dtype | None = float32, " KEY_STREAM,
    TRUNCATED_NORMAL_DOC) {
  bool glob;
  if (param(A, 0) < 0 || param(A, 1) < 0 || key_arg(A, 4, &glob) < 0)
    return NULL;
  return finish(A,
                cmx_random_truncated_normal(OUT, ARR(0), ARR(1), SHAPE(2),
                                            DTYPE(3), ARR(4), STREAM),
                glob);
}

CMXPY_DEF(
    gumbel,
    "(shape: Sequence[int] = [], dtype: Dtype | None = float32, " KEY_STREAM,
    "Sample from the standard Gumbel distribution.\n\nThe values are "
    "sampled from a standard Gumbel distribution which CDF "
    "``exp(-exp(-x))``.\n\nArgs:\n    shape (list(int)): The shape of "
    "the output.\n    dtype (Dtype, optional): The data type of the "
    "output. Default: ``float32``.\n" KEY_DOC
    "\nReturns:\n    array: The :class:`array` with shape ``shape`` "
    "and distributed according to the Gumbel distribution.") {
  bool glob;
  if (key_arg(A, 2, &glob) < 0) return NULL;
  return finish(A, cmx_random_gumbel(OUT, SHAPE(0), DTYPE(1), ARR(2), STREAM),
                glob);
}

CMXPY_DEF(laplace,
          "(shape: Sequence[int] = [], dtype: Dtype | None = float32, loc: "
          "float = 0.0, scale: float = 1.0, " KEY_STREAM,
          "Sample numbers from a Laplace distribution.\n\nArgs:\n    shape "
          "(list(int), optional): Shape of the output. Default: ``()``.\n"
          "    dtype (Dtype, optional): Type of the output. Default: "
          "``float32``.\n    loc (float, optional): Mean of the "
          "distribution. Default: ``0.0``.\n    scale (float, optional): The "
          "scale \"b\" of the Laplace distribution. Default: ``1.0``.\n" KEY_DOC
          "\nReturns:\n    array: The output array of random values.") {
  bool glob;
  if (key_arg(A, 4, &glob) < 0) return NULL;
  return finish(A,
                cmx_random_laplace(OUT, SHAPE(0), DTYPE(1), FLT(2), FLT(3),
                                   ARR(4), STREAM),
                glob);
}

CMXPY_DEF(categorical,
          "(logits: array, axis: int = -1, shape: Sequence[int] | None = "
          "None, num_samples: int | None = None, " KEY_STREAM,
          CATEGORICAL_DOC) {
  if (!ISNONE(2) && !ISNONE(3)) {
    PyErr_SetString(PyExc_ValueError,
                    "[categorical] At most one of shape or num_samples can "
                    "be specified.");
    return NULL;
  }
  bool glob;
  if (key_arg(A, 4, &glob) < 0) return NULL;
  cmx_status st = !ISNONE(3) ? cmx_random_categorical_n(OUT, ARR(0), INT(1),
                                                        I64(3), ARR(4), STREAM)
                             : cmx_random_categorical(OUT, ARR(0), INT(1),
                                                      SHAPE(2), ARR(4), STREAM);
  return finish(A, st, glob);
}

CMXPY_DEF(permutation, "(x: int | array, axis: int = 0, " KEY_STREAM,
          PERMUTATION_DOC) {
  PyObject* xo = OBJ(0);
  /* An int (Python or NumPy integer scalar) asks for a permutation of
   * arange(x); anything else is an array to shuffle. */
  bool is_int = false;
  int64_t n = 0;
  if (!PyBool_Check(xo) && !CmxArray_Check(xo) && PyIndex_Check(xo)) {
    PyObject* i = PyNumber_Index(xo);
    is_int = i != NULL;
    Py_XDECREF(i);
    PyErr_Clear(); /* e.g. a NumPy array of several integers */
  }
  if (is_int) {
    if (cmxpy_int64_arg(xo, &n, "permutation", "x") < 0) return NULL;
  } else if (!(ARR(0) = cmxpy_to_array(xo, "permutation"))) {
    return NULL;
  }
  bool glob;
  if (key_arg(A, 2, &glob) < 0) return NULL;
  return finish(
      A,
      is_int ? cmx_random_permutation_n(OUT, n, ARR(2), STREAM)
             : cmx_random_permutation(OUT, ARR(0), INT(1), ARR(2), STREAM),
      glob);
}

static cmxpy_spec* const random_functions[] = {&spec_seed,
                                               &spec_key,
                                               &spec_split,
                                               &spec_bits,
                                               &spec_uniform,
                                               &spec_normal,
                                               &spec_multivariate_normal,
                                               &spec_randint,
                                               &spec_bernoulli,
                                               &spec_truncated_normal,
                                               &spec_gumbel,
                                               &spec_categorical,
                                               &spec_laplace,
                                               &spec_permutation};

static struct PyModuleDef random_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cmx.core.random",
    .m_doc =
        "cmx.core.random: functionality related to random number "
        "generation (threefry2x32 keys, as mlx.core.random).",
    .m_size = -1,
};

int cmxpy_init_random(PyObject* m) {
  PyObject* sub = PyModule_Create(&random_module);
  if (!sub) return -1;
  if (cmxpy_add_functions(sub, random_functions,
                          CMXPY_COUNT(random_functions)) < 0) {
    Py_DECREF(sub);
    return -1;
  }
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
