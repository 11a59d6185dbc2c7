/* The cmx.core.distributed submodule over include/cmx/distributed.h, with
 * mlx.core.distributed's names and signatures: Group, is_available, init,
 * all_sum, all_max, all_min, all_gather, sum_scatter, send, recv,
 * recv_like. Calls that talk to other processes (init, split) release the
 * GIL; the collectives are lazy and talk when evaluated. */
#include "cmxpy.h"

typedef struct {
  PyObject_HEAD cmx_group* g; /* owned */
} CmxGroupObject;

static PyTypeObject CmxGroup_Type;

static PyObject* group_object(cmx_group* g) { /* takes g */
  CmxGroupObject* o = PyObject_New(CmxGroupObject, &CmxGroup_Type);
  if (!o) {
    cmx_group_release(g);
    return NULL;
  }
  o->g = g;
  return (PyObject*)o;
}

static void group_dealloc(PyObject* self) {
  cmx_group_release(((CmxGroupObject*)self)->g);
  Py_TYPE(self)->tp_free(self);
}

static PyObject* group_rank(PyObject* self, PyObject* noargs) {
  (void)noargs;
  return PyLong_FromLong(cmx_group_rank(((CmxGroupObject*)self)->g));
}

static PyObject* group_size(PyObject* self, PyObject* noargs) {
  (void)noargs;
  return PyLong_FromLong(cmx_group_size(((CmxGroupObject*)self)->g));
}

static PyObject* group_split(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kws[] = {"color", "key", NULL};
  int color, key = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "i|i:split", kws, &color, &key))
    return NULL;
  cmx_group* out = NULL;
  cmx_status st;
  Py_BEGIN_ALLOW_THREADS st =
      cmx_group_split(&out, ((CmxGroupObject*)self)->g, color, key);
  Py_END_ALLOW_THREADS if (st != CMX_OK) return cmxpy_raise(st);
  return group_object(out);
}

static PyObject* group_repr(PyObject* self) {
  cmx_group* g = ((CmxGroupObject*)self)->g;
  return PyUnicode_FromFormat("Group(rank=%d, size=%d, backend='%s')",
                              cmx_group_rank(g), cmx_group_size(g),
                              cmx_group_backend(g));
}

static PyMethodDef group_methods[] = {
    {"rank", group_rank, METH_NOARGS, "The rank of this process in the group."},
    {"size", group_size, METH_NOARGS, "The number of processes in the group."},
    {"split", (PyCFunction)(void (*)(void))group_split,
     METH_VARARGS | METH_KEYWORDS,
     "split(color: int, key: int = -1) -> Group\n\nSplit the group: the "
     "processes passing the same color form a new group, ranked by key "
     "(their rank in this group when key is -1)."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject CmxGroup_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core.distributed.Group",
    .tp_basicsize = sizeof(CmxGroupObject),
    .tp_dealloc = group_dealloc,
    .tp_repr = group_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An object that holds a communication group of processes.",
    .tp_methods = group_methods,
};

/* The group argument: None (the default group) or a Group. */
static int group_arg(PyObject* o, cmx_group** g, const char* fname) {
  if (!o || o == Py_None) {
    *g = NULL;
    return 0;
  }
  if (!PyObject_TypeCheck(o, &CmxGroup_Type)) {
    PyErr_Format(PyExc_TypeError, "[%s] group must be a Group, got %s", fname,
                 Py_TYPE(o)->tp_name);
    return -1;
  }
  *g = ((CmxGroupObject*)o)->g;
  return 0;
}

static PyObject* is_available(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kws[] = {"backend", NULL};
  const char* backend = "any";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|s:is_available", kws, &backend))
    return NULL;
  return PyBool_FromLong(cmx_distributed_is_available(backend));
}

static PyObject* init(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kws[] = {"strict", "backend", "all_gather_factory", NULL};
  int strict = 0;
  const char* backend = "any";
  PyObject* factory = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|ps$O:init", kws, &strict,
                                   &backend, &factory))
    return NULL;
  if (factory != Py_None) {
    PyErr_SetString(PyExc_NotImplementedError,
                    "[init] all_gather_factory is not implemented in cmx");
    return NULL;
  }
  cmx_group* g = NULL;
  cmx_status st;
  Py_BEGIN_ALLOW_THREADS st = cmx_distributed_init(&g, strict, backend);
  Py_END_ALLOW_THREADS if (st != CMX_OK) return cmxpy_raise(st);
  return group_object(g);
}

typedef cmx_status (*coll_fn)(cmx_array*, cmx_array, cmx_group*, cmx_stream);

/* f(x, *, group=None, stream=None) */
static PyObject* collective(PyObject* args, PyObject* kw, const char* fname,
                            coll_fn fn) {
  static char* kws[] = {"x", "group", "stream", NULL};
  PyObject *xo, *go = Py_None, *so = Py_None;
  char fmt[64];
  snprintf(fmt, sizeof fmt, "O|$OO:%s", fname);
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kws, &xo, &go, &so))
    return NULL;
  cmx_group* g;
  cmx_stream s;
  if (group_arg(go, &g, fname) < 0 || cmxpy_stream_arg(so, &s) < 0) return NULL;
  cmx_array x = cmxpy_to_array(xo, fname);
  if (!x) return NULL;
  cmx_array out = NULL;
  cmx_status st = fn(&out, x, g, s);
  cmx_array_release(x);
  return cmxpy_result(st, &out);
}

#define COLLECTIVE(name, doc)                                             \
  static PyObject* py_##name(PyObject* m, PyObject* args, PyObject* kw) { \
    (void)m;                                                              \
    return collective(args, kw, #name, cmx_distributed_##name);           \
  }
COLLECTIVE(all_sum, "")
COLLECTIVE(all_max, "")
COLLECTIVE(all_min, "")
COLLECTIVE(all_gather, "")
COLLECTIVE(sum_scatter, "")

static PyObject* py_send(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kws[] = {"x", "dst", "group", "stream", NULL};
  PyObject *xo, *go = Py_None, *so = Py_None;
  int dst;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "Oi|$OO:send", kws, &xo, &dst, &go,
                                   &so))
    return NULL;
  cmx_group* g;
  cmx_stream s;
  if (group_arg(go, &g, "send") < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array x = cmxpy_to_array(xo, "send");
  if (!x) return NULL;
  cmx_array out = NULL;
  cmx_status st = cmx_distributed_send(&out, x, dst, g, s);
  cmx_array_release(x);
  return cmxpy_result(st, &out);
}

static PyObject* py_recv(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kws[] = {"shape", "dtype", "src", "group", "stream", NULL};
  PyObject *sho, *dto, *go = Py_None, *so = Py_None;
  int src;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOi|$OO:recv", kws, &sho, &dto,
                                   &src, &go, &so))
    return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int ndim = 0;
  cmx_dtype dt;
  cmx_group* g;
  cmx_stream s;
  if (cmxpy_shape_arg(sho, shape, &ndim, "recv") < 0 ||
      cmxpy_dtype_arg(dto, &dt, false, "recv") < 0 ||
      group_arg(go, &g, "recv") < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array out = NULL;
  return cmxpy_result(cmx_distributed_recv(&out, shape, ndim, dt, src, g, s),
                      &out);
}

static PyObject* py_recv_like(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kws[] = {"x", "src", "group", "stream", NULL};
  PyObject *xo, *go = Py_None, *so = Py_None;
  int src;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "Oi|$OO:recv_like", kws, &xo, &src,
                                   &go, &so))
    return NULL;
  cmx_group* g;
  cmx_stream s;
  if (group_arg(go, &g, "recv_like") < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array x = cmxpy_to_array(xo, "recv_like");
  if (!x) return NULL;
  cmx_array out = NULL;
  cmx_status st = cmx_distributed_recv_like(&out, x, src, g, s);
  cmx_array_release(x);
  return cmxpy_result(st, &out);
}

#define KW METH_VARARGS | METH_KEYWORDS
#define FN(f) (PyCFunction)(void (*)(void))(f)
#define GS ", *, group: Group | None = None, stream: StreamOrDevice = None)"

static PyMethodDef functions[] = {
    {"is_available", FN(is_available), KW,
     "is_available(backend: str = 'any') -> bool\n\nCheck if a communication "
     "backend is available ('any', 'ring', 'mpi' or 'nccl')."},
    {"init", FN(init), KW,
     "init(strict: bool = False, backend: str = 'any', *, "
     "all_gather_factory: Callable | None = None) -> Group\n\nInitialize "
     "the communication backend and create the global communication group. "
     "Without a backend (and strict=False) the group of this process alone."},
    {"all_sum", FN(py_all_sum), KW,
     "all_sum(x: array" GS " -> array\n\nAll reduce sum: sum x over every "
     "process in the group."},
    {"all_max", FN(py_all_max), KW,
     "all_max(x: array" GS " -> array\n\nAll reduce max."},
    {"all_min", FN(py_all_min), KW,
     "all_min(x: array" GS " -> array\n\nAll reduce min."},
    {"all_gather", FN(py_all_gather), KW,
     "all_gather(x: array" GS " -> array\n\nGather x from every process and "
     "concatenate along the first axis."},
    {"sum_scatter", FN(py_sum_scatter), KW,
     "sum_scatter(x: array" GS " -> array\n\nSum x over the group and "
     "scatter the result: rank r gets part r of the first axis."},
    {"send", FN(py_send), KW,
     "send(x: array, dst: int" GS " -> array\n\nSend x to process dst; "
     "evaluate the result to send."},
    {"recv", FN(py_recv), KW,
     "recv(shape: Sequence[int], dtype: Dtype, src: int" GS
     " -> array\n\nReceive an array of the given shape and dtype from "
     "process src."},
    {"recv_like", FN(py_recv_like), KW,
     "recv_like(x: array, src: int" GS " -> array\n\nReceive an array with "
     "x's shape and dtype from process src."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef dist_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cmx.core.distributed",
    .m_doc =
        "cmx.core.distributed: communication between processes (as "
        "mlx.core.distributed) over the ring (TCP), MPI or NCCL.",
    .m_size = -1,
    .m_methods = functions,
};

int cmxpy_init_distributed(PyObject* m) {
  if (PyType_Ready(&CmxGroup_Type) < 0) return -1;
  PyObject* sub = PyModule_Create(&dist_module);
  if (!sub) return -1;
  Py_INCREF(&CmxGroup_Type);
  if (PyModule_AddObject(sub, "Group", (PyObject*)&CmxGroup_Type) < 0) {
    Py_DECREF(&CmxGroup_Type);
    Py_DECREF(sub);
    return -1;
  }
  return cmxpy_add_submodule(m, sub, "distributed", "cmx.core.distributed");
}
