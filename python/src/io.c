/* Saving and loading: mx.save, savez, savez_compressed, save_safetensors,
 * save_gguf and load, over cmx/io.h. `file` is a path (str or os.PathLike)
 * or a binary file object (saving goes through a temporary file, loading
 * reads the bytes; the format comes from `format` or the object's name).
 * GGUF metadata maps to Python as MLX does: strings to str, lists of
 * strings to list[str], numbers and lists of numbers to arrays. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "args.h"

static PyObject* raise_st(cmx_status st) {
  return cmxpy_raise(st);
}

/* ---------------- files ---------------- */
/* A path argument as bytes (new reference), or NULL with *is_file set when
 * o is a file object (has `attr`). */
static PyObject* path_bytes(PyObject* o, const char* attr, bool* is_file) {
  *is_file = false;
  if (PyUnicode_Check(o) || PyBytes_Check(o) ||
      PyObject_HasAttrString(o, "__fspath__")) {
    PyObject* b = NULL;
    if (!PyUnicode_FSConverter(o, &b)) return NULL;
    return b;
  }
  if (PyObject_HasAttrString(o, attr)) {
    *is_file = true;
    return NULL;
  }
  PyErr_Format(PyExc_TypeError,
               "file must be a path or a binary file object, got %.100s",
               Py_TYPE(o)->tp_name);
  return NULL;
}

typedef cmx_status (*save_fn)(const char* path, void* ctx);

/* Runs save(path) on a temporary file and copies its bytes into the file
 * object (the C savers append ext to the temporary name). */
static PyObject* save_to_object(PyObject* file, const char* ext, save_fn save,
                                void* ctx) {
  char tmpl[64];
  const char* dir = getenv("TMPDIR");
  PyOS_snprintf(tmpl, sizeof tmpl, "%s/cmxpyXXXXXX",
                dir && strlen(dir) < 40 ? dir : "/tmp");
  int fd = mkstemp(tmpl);
  if (fd < 0) return PyErr_SetFromErrno(PyExc_OSError);
  close(fd);
  char path[80];
  PyOS_snprintf(path, sizeof path, "%s%s", tmpl, ext);
  cmx_status st;
  Py_BEGIN_ALLOW_THREADS st = save(path, ctx);
  Py_END_ALLOW_THREADS unlink(tmpl);
  if (st != CMX_OK) {
    unlink(path);
    return raise_st(st);
  }
  PyObject* r = NULL;
  FILE* f = fopen(path, "rb");
  if (!f) {
    PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
  } else {
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    PyObject* data = n >= 0 ? PyBytes_FromStringAndSize(NULL, n) : NULL;
    if (data && fread(PyBytes_AS_STRING(data), 1, (size_t)n, f) == (size_t)n)
      r = PyObject_CallMethod(file, "write", "O", data);
    else if (data)
      PyErr_SetString(PyExc_OSError, "could not read the temporary file");
    Py_XDECREF(data);
    fclose(f);
  }
  unlink(path);
  if (!r) return NULL;
  Py_DECREF(r);
  Py_RETURN_NONE;
}

static PyObject* run_save(PyObject* file, const char* ext, save_fn save,
                          void* ctx) {
  bool is_file;
  PyObject* p = path_bytes(file, "write", &is_file);
  if (is_file) return save_to_object(file, ext, save, ctx);
  if (!p) return NULL;
  cmx_status st;
  const char* path = PyBytes_AS_STRING(p);
  Py_BEGIN_ALLOW_THREADS st = save(path, ctx);
  Py_END_ALLOW_THREADS Py_DECREF(p);
  if (st != CMX_OK) return raise_st(st);
  Py_RETURN_NONE;
}

/* ---------------- named arrays ---------------- */
/* Adds name -> value (converted to an array) to m. */
static int add_named(cmx_named_arrays* m, PyObject* name, PyObject* value,
                     const char* fname) {
  if (!PyUnicode_Check(name)) {
    PyErr_Format(PyExc_TypeError, "[%s] array names must be str", fname);
    return -1;
  }
  const char* n = PyUnicode_AsUTF8(name);
  if (!n) return -1;
  cmx_array a = cmxpy_to_array(value, fname);
  if (!a) return -1;
  cmx_status st = cmx_named_arrays_set(m, n, a);
  cmx_array_release(a);
  if (st != CMX_OK) {
    raise_st(st);
    return -1;
  }
  return 0;
}

static cmx_named_arrays* named_from_dict(PyObject* d, const char* fname) {
  if (!PyDict_Check(d)) {
    PyErr_Format(PyExc_TypeError, "[%s] arrays must be a dict of str to array",
                 fname);
    return NULL;
  }
  cmx_named_arrays* m = NULL;
  cmx_status st = cmx_named_arrays_new(&m);
  if (st != CMX_OK) return raise_st(st), NULL;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(d, &pos, &k, &v))
    if (add_named(m, k, v, fname) < 0) {
      cmx_named_arrays_free(m);
      return NULL;
    }
  return m;
}

static PyObject* named_to_dict(const cmx_named_arrays* m) {
  PyObject* d = PyDict_New();
  size_t n = cmx_named_arrays_size(m);
  for (size_t i = 0; d && i < n; i++) {
    PyObject* v = cmxpy_wrap(cmx_array_retain(cmx_named_arrays_at(m, i)));
    if (!v || PyDict_SetItemString(d, cmx_named_arrays_name(m, i), v) < 0)
      Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

/* ---------------- metadata ---------------- */
static PyObject* meta_to_py(const cmx_meta_value* v) {
  cmx_meta_type t = cmx_meta_get_type(v);
  if (t == CMX_META_STRING) {
    const char* s;
    size_t len;
    cmx_status st = cmx_meta_get_string(v, &s, &len);
    if (st != CMX_OK) return raise_st(st);
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)len, "surrogateescape");
  }
  if (t == CMX_META_ARRAY && (cmx_meta_array_elem_type(v) == CMX_META_STRING ||
                              cmx_meta_array_elem_type(v) == CMX_META_ARRAY)) {
    size_t n = cmx_meta_array_length(v);
    PyObject* l = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; l && i < n; i++) {
      PyObject* e = meta_to_py(cmx_meta_array_item(v, i));
      if (!e)
        Py_CLEAR(l);
      else
        PyList_SET_ITEM(l, (Py_ssize_t)i, e);
    }
    return l;
  }
  cmx_array a = NULL;
  return cmxpy_result(cmx_meta_to_array(&a, v), &a);
}

static PyObject* metadata_to_dict(const cmx_metadata* m) {
  PyObject* d = PyDict_New();
  size_t n = cmx_metadata_size(m);
  for (size_t i = 0; d && i < n; i++) {
    PyObject* v = meta_to_py(cmx_metadata_value(m, i));
    if (!v || PyDict_SetItemString(d, cmx_metadata_key(m, i), v) < 0)
      Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

/* A GGUF metadata value from str, list of str, or an array-like of
 * numbers (0-d or 1-d). */
static cmx_meta_value* meta_from_py(PyObject* o) {
  cmx_meta_value* v = NULL;
  cmx_status st;
  if (PyUnicode_Check(o)) {
    const char* s = PyUnicode_AsUTF8(o);
    if (!s) return NULL;
    st = cmx_meta_new_string(&v, s);
    return st == CMX_OK ? v : (raise_st(st), NULL);
  }
  if (PyList_Check(o) && PyList_GET_SIZE(o) > 0 &&
      PyUnicode_Check(PyList_GET_ITEM(o, 0))) {
    st = cmx_meta_new_array(&v, CMX_META_STRING);
    for (Py_ssize_t i = 0; st == CMX_OK && i < PyList_GET_SIZE(o); i++) {
      PyObject* e = PyList_GET_ITEM(o, i);
      const char* s = PyUnicode_Check(e) ? PyUnicode_AsUTF8(e) : NULL;
      if (!s) {
        cmx_meta_free(v);
        if (!PyErr_Occurred())
          PyErr_SetString(PyExc_TypeError,
                          "[save_gguf] lists in metadata must hold only str");
        return NULL;
      }
      cmx_meta_value* item = NULL;
      st = cmx_meta_new_string(&item, s);
      if (st == CMX_OK) st = cmx_meta_array_append(v, item);
    }
    if (st != CMX_OK) {
      cmx_meta_free(v);
      return raise_st(st), NULL;
    }
    return v;
  }
  if (PyList_Check(o) && PyList_GET_SIZE(o) == 0) { /* MLX: no strings */
    st = cmx_meta_new_array(&v, CMX_META_STRING);
    return st == CMX_OK ? v : (raise_st(st), NULL);
  }
  cmx_array a = cmxpy_to_array(o, "save_gguf");
  if (!a) return NULL;
  cmx_dtype dt = cmx_array_dtype(a);
  if (dt == CMX_FLOAT16 || dt == CMX_BFLOAT16 || dt == CMX_COMPLEX64) {
    /* GGUF has no such metadata type: a bad argument (MLX's ValueError) */
    PyErr_Format(PyExc_ValueError,
                 "[save_gguf] array type %s not supported for metadata.",
                 cmx_dtype_name(dt));
    cmx_array_release(a);
    return NULL;
  }
  Py_BEGIN_ALLOW_THREADS st = cmx_meta_from_array(&v, a);
  Py_END_ALLOW_THREADS cmx_array_release(a);
  return st == CMX_OK ? v : (raise_st(st), NULL);
}

/* safetensors (strings only) or gguf metadata from a dict. */
static cmx_metadata* metadata_from_dict(PyObject* d, bool gguf,
                                        const char* fname) {
  if (!PyDict_Check(d)) {
    PyErr_Format(PyExc_TypeError, "[%s] metadata must be a dict", fname);
    return NULL;
  }
  cmx_metadata* m = NULL;
  cmx_status st = cmx_metadata_new(&m);
  if (st != CMX_OK) return raise_st(st), NULL;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(d, &pos, &k, &v)) {
    const char* key = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
    if (!key) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "[%s] metadata keys must be str", fname);
      cmx_metadata_free(m);
      return NULL;
    }
    if (!gguf) {
      const char* s = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
      if (!s) {
        if (!PyErr_Occurred())
          PyErr_Format(PyExc_TypeError, "[%s] metadata values must be str",
                       fname);
        cmx_metadata_free(m);
        return NULL;
      }
      st = cmx_metadata_set_string(m, key, s);
    } else {
      cmx_meta_value* mv = meta_from_py(v);
      if (!mv) {
        cmx_metadata_free(m);
        return NULL;
      }
      st = cmx_metadata_set(m, key, mv);
    }
    if (st != CMX_OK) {
      cmx_metadata_free(m);
      return raise_st(st), NULL;
    }
  }
  return m;
}

/* ---------------- save functions ---------------- */
typedef struct {
  cmx_array a;
  cmx_named_arrays* arrays;
  cmx_metadata* metadata;
  bool compressed;
} save_ctx;

static cmx_status do_save(const char* path, void* p) {
  return cmx_save(path, ((save_ctx*)p)->a);
}
static cmx_status do_savez(const char* path, void* p) {
  save_ctx* c = p;
  return c->compressed ? cmx_savez_compressed(path, c->arrays)
                       : cmx_savez(path, c->arrays);
}
static cmx_status do_save_safetensors(const char* path, void* p) {
  save_ctx* c = p;
  return cmx_save_safetensors(path, c->arrays, c->metadata);
}
static cmx_status do_save_gguf(const char* path, void* p) {
  save_ctx* c = p;
  return cmx_save_gguf(path, c->arrays, c->metadata);
}

CMXPY_DEF(save, "(file: object, arr: array) -> None",
          "Save the array to a binary file in ``.npy`` format (the "
          "extension is appended when missing).\n\n"
          "Args:\n    file (str or file object): File to which the array is "
          "saved.\n    arr (array): Array to be saved.") {
  save_ctx c = {.a = ARR(1)};
  return run_save(OBJ(0), ".npy", do_save, &c);
}

/* savez / savez_compressed: positional arrays are arr_0, arr_1, ... */
static PyObject* savez(cmxpy_args* A) {
  bool compressed = A->spec->data != NULL;
  const char* fname = A->spec->name;
  save_ctx c = {.compressed = compressed};
  cmx_status st = cmx_named_arrays_new(&c.arrays);
  if (st != CMX_OK) return raise_st(st);
  int rc = 0;
  PyObject *args = OBJ(1), *kw = OBJ(2);
  for (Py_ssize_t i = 0; !rc && i < PyTuple_GET_SIZE(args); i++) {
    PyObject* name = PyUnicode_FromFormat("arr_%zd", i);
    rc =
        name ? add_named(c.arrays, name, PyTuple_GET_ITEM(args, i), fname) : -1;
    Py_XDECREF(name);
  }
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (!rc && PyDict_Next(kw, &pos, &k, &v))
    rc = add_named(c.arrays, k, v, fname);
  PyObject* r = rc ? NULL : run_save(OBJ(0), ".npz", do_savez, &c);
  cmx_named_arrays_free(c.arrays);
  return r;
}
#define SAVEZ_SIG "(file: object, *args, **kwargs) -> None"
CMXPY_SPEC_FULL(savez, "savez", SAVEZ_SIG,
                "Save several arrays to a binary file in uncompressed "
                "``.npz`` format (positional arrays are named arr_0, arr_1, "
                "...).\n\nExample:\n    >>> x = mx.ones((10, 10))\n    >>> "
                "mx.savez('model.npz', x, weight=x)",
                savez, NULL, 0, NULL)
CMXPY_SPEC_FULL(savez_compressed, "savez_compressed", SAVEZ_SIG,
                "Save several arrays to a binary file in compressed ``.npz`` "
                "format (see :func:`savez`).",
                savez, (const void*)1, 0, NULL)

/* save_safetensors / save_gguf (data: non-NULL for gguf). */
static PyObject* save_dict(cmxpy_args* A) {
  bool gguf = A->spec->data != NULL;
  const char* fname = A->spec->name;
  save_ctx c = {0};
  if (!(c.arrays = named_from_dict(OBJ(1), fname))) return NULL;
  if (!ISNONE(2) && !(c.metadata = metadata_from_dict(OBJ(2), gguf, fname))) {
    cmx_named_arrays_free(c.arrays);
    return NULL;
  }
  PyObject* r = run_save(OBJ(0), gguf ? ".gguf" : ".safetensors",
                         gguf ? do_save_gguf : do_save_safetensors, &c);
  cmx_named_arrays_free(c.arrays);
  cmx_metadata_free(c.metadata);
  return r;
}
CMXPY_SPEC_FULL(save_safetensors, "save_safetensors",
                "(file: object, arrays: dict[str, array], metadata: dict[str, "
                "str] | None = None) -> None",
                "Save a dict of arrays to the ``.safetensors`` format, with "
                "optional str -> str metadata.\n\nExample:\n    >>> x = "
                "mx.ones((10, 10))\n    >>> "
                "mx.save_safetensors('model.safetensors', {'weight': x})",
                save_dict, NULL, 0, NULL)
CMXPY_SPEC_FULL(save_gguf, "save_gguf",
                "(file: object, arrays: dict[str, array], metadata: dict[str, "
                "array | str | list[str]] | None = None) -> None",
                "Save a dict of arrays to the ``.gguf`` format. Metadata "
                "values may be str, list of str, or arrays (0-d or 1-d) of "
                "numbers.",
                save_dict, (const void*)1, 0, NULL)

/* ---------------- load ---------------- */
CMXPY_DEF(load,
          "(file: object, /, format: str | None = None, return_metadata: bool "
          "= False, *, stream: StreamOrDevice = None)",
          "Load array(s) from a binary file (``.npy``, ``.npz``, "
          "``.safetensors`` or ``.gguf``; the format comes from the "
          "extension unless given).\n\n"
          "Returns:\n    array or dict: A single array for ``.npy``, else a "
          "dict of names to arrays; with return_metadata, a (dict, metadata) "
          "tuple (safetensors and gguf only).") {
  PyObject* fo = OBJ(0);
  const char* format = STR(1);
  bool want_meta = FLAG(2);
  cmx_stream s = STREAM;
  bool is_file;
  PyObject* p = path_bytes(fo, "read", &is_file);
  if (!p && !is_file) return NULL;
  cmx_loaded res = {0};
  cmx_status st;
  if (!is_file) {
    const char* path = PyBytes_AS_STRING(p);
    Py_BEGIN_ALLOW_THREADS st = cmx_load(&res, path, format, want_meta, s);
    Py_END_ALLOW_THREADS Py_DECREF(p);
  } else {
    /* A file object: its bytes, and the format from its name if needed. */
    PyObject* name = NULL;
    PyObject* ext = NULL;
    if (!format) {
      name = PyObject_GetAttrString(fo, "name");
      if (!name || !PyUnicode_Check(name)) {
        Py_XDECREF(name);
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError,
                        "[load] Could not infer file format from extension");
        return NULL;
      }
      Py_ssize_t dot =
          PyUnicode_FindChar(name, '.', 0, PyUnicode_GET_LENGTH(name), -1);
      ext = dot >= 0
                ? PyUnicode_Substring(name, dot + 1, PyUnicode_GET_LENGTH(name))
                : NULL;
      format = ext ? PyUnicode_AsUTF8(ext) : NULL;
      if (!format) {
        Py_DECREF(name);
        Py_XDECREF(ext);
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError,
                        "[load] Could not infer file format from extension");
        return NULL;
      }
    }
    PyObject* data = PyObject_CallMethod(fo, "read", NULL);
    if (!data || !PyBytes_Check(data)) {
      if (data)
        PyErr_SetString(PyExc_TypeError, "[load] read() must return bytes");
      Py_XDECREF(data);
      Py_XDECREF(name);
      Py_XDECREF(ext);
      return NULL;
    }
    const char* buf = PyBytes_AS_STRING(data);
    size_t len = (size_t)PyBytes_GET_SIZE(data);
    Py_BEGIN_ALLOW_THREADS st =
        cmx_load_bytes(&res, buf, len, format, want_meta, s);
    Py_END_ALLOW_THREADS Py_DECREF(data);
    Py_XDECREF(name);
    Py_XDECREF(ext);
  }
  if (st != CMX_OK) return raise_st(st);
  PyObject* out = res.array ? cmxpy_wrap(cmx_array_retain(res.array))
                            : named_to_dict(res.arrays);
  if (out && want_meta) {
    PyObject* meta =
        res.metadata ? metadata_to_dict(res.metadata) : PyDict_New();
    PyObject* t = meta ? PyTuple_Pack(2, out, meta) : NULL;
    Py_XDECREF(meta);
    Py_DECREF(out);
    out = t;
  }
  cmx_loaded_clear(&res);
  return out;
}

static cmxpy_spec* const io_functions[] = {&spec_save,
                                           &spec_savez,
                                           &spec_savez_compressed,
                                           &spec_save_safetensors,
                                           &spec_save_gguf,
                                           &spec_load};

int cmxpy_init_io(PyObject* m) {
  return cmxpy_add_functions(m, io_functions, CMXPY_COUNT(io_functions));
}
