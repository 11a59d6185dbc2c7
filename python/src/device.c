/* Devices and streams: DeviceType (mx.cpu, mx.gpu), Device, Stream, the
 * `with mx.stream(...)` context, defaults, synchronize, device queries. */
#include <stdio.h>
#include <string.h>

#include "args.h"

static PyObject* g_devtype_type;
static PyObject* g_devtype[2]; /* DeviceType.cpu, DeviceType.gpu */

/* ---------------- Device ---------------- */
typedef struct {
  PyObject_HEAD cmx_device d;
} CmxDeviceObject;

typedef struct {
  PyObject_HEAD cmx_stream s; /* concrete (index >= 0) */
} CmxStreamObject;

static PyTypeObject CmxDevice_Type;
static PyTypeObject CmxStream_Type;

static int devtype_of(PyObject* o) {
  for (int i = 0; i < 2; i++)
    if (o == g_devtype[i]) return i;
  return -1;
}

static PyObject* device_object(cmx_device d) {
  CmxDeviceObject* o = PyObject_New(CmxDeviceObject, &CmxDevice_Type);
  if (o) o->d = d;
  return (PyObject*)o;
}

static PyObject* stream_object(cmx_stream s) {
  CmxStreamObject* o = PyObject_New(CmxStreamObject, &CmxStream_Type);
  if (o) o->s = s;
  return (PyObject*)o;
}

int cmxpy_device_value(PyObject* o, cmx_device* out) {
  if (PyObject_TypeCheck(o, &CmxDevice_Type)) {
    *out = ((CmxDeviceObject*)o)->d;
    return 0;
  }
  int t = devtype_of(o);
  if (t < 0) return 1;
  *out = (cmx_device){(cmx_device_type)t, 0};
  return 0;
}

static int tls_stream(PyObject* o, cmx_stream* out);

int cmxpy_stream_value(PyObject* o, cmx_stream* out) {
  cmx_device d;
  if (!o || o == Py_None) {
    *out = CMX_STREAM_DEFAULT;
  } else if (PyObject_TypeCheck(o, &CmxStream_Type)) {
    *out = ((CmxStreamObject*)o)->s;
  } else if (tls_stream(o, out) == 0) {
  } else if (cmxpy_device_value(o, &d) == 0) {
    *out = cmx_stream_on(d);
  } else {
    return 1;
  }
  return 0;
}

int cmxpy_stream_arg(PyObject* o, cmx_stream* out) {
  if (cmxpy_stream_value(o, out) == 0) return 0;
  PyErr_Format(PyExc_TypeError,
               "stream must be a Stream, a Device or None, got %.100s",
               Py_TYPE(o)->tp_name);
  return -1;
}

static const char* type_name(cmx_device_type t) {
  return t == CMX_GPU ? "gpu" : "cpu";
}

static PyObject* device_new(PyTypeObject* type, PyObject* args, PyObject* kw) {
  (void)type;
  static char* kwlist[] = {"type", "index", NULL};
  PyObject* t;
  int index = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i:Device", kwlist, &t, &index))
    return NULL;
  int dt = devtype_of(t);
  if (dt < 0) {
    PyErr_Format(PyExc_TypeError,
                 "[Device] type must be a DeviceType, got %.100s",
                 Py_TYPE(t)->tp_name);
    return NULL;
  }
  if (index < 0) {
    PyErr_SetString(PyExc_ValueError, "[Device] index must be non-negative");
    return NULL;
  }
  return device_object((cmx_device){(cmx_device_type)dt, index});
}

static PyObject* device_repr(PyObject* self) {
  cmx_device d = ((CmxDeviceObject*)self)->d;
  return PyUnicode_FromFormat("Device(%s, %d)", type_name(d.type), d.index);
}

static PyObject* device_richcompare(PyObject* a, PyObject* b, int op) {
  if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
  cmx_device da = ((CmxDeviceObject*)a)->d, db;
  bool eq = cmxpy_device_value(b, &db) == 0 && cmx_device_equal(da, db);
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t device_hash(PyObject* self) {
  cmx_device d = ((CmxDeviceObject*)self)->d;
  return (Py_hash_t)d.type * 1000003 + d.index + 1;
}

static PyObject* device_get_type(PyObject* self, void* c) {
  (void)c;
  PyObject* t = g_devtype[((CmxDeviceObject*)self)->d.type];
  Py_INCREF(t);
  return t;
}

static PyGetSetDef device_getset[] = {
    {"type", device_get_type, NULL, "The device's :obj:`DeviceType`.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject CmxDevice_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core.Device",
    .tp_basicsize = sizeof(CmxDeviceObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Device(type, index=0)\n--\n\nA device to run operations on.",
    .tp_new = device_new,
    .tp_repr = device_repr,
    .tp_richcompare = device_richcompare,
    .tp_hash = device_hash,
    .tp_getset = device_getset,
};

/* ---------------- Stream ---------------- */
static PyObject* stream_repr(PyObject* self) {
  cmx_stream s = ((CmxStreamObject*)self)->s;
  return PyUnicode_FromFormat("Stream(Device(%s, %d), %d)",
                              type_name(s.device.type), s.device.index,
                              s.index);
}

static PyObject* stream_richcompare(PyObject* a, PyObject* b, int op) {
  if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
  bool eq =
      PyObject_TypeCheck(b, &CmxStream_Type) &&
      cmx_stream_equal(((CmxStreamObject*)a)->s, ((CmxStreamObject*)b)->s);
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t stream_hash(PyObject* self) {
  return (Py_hash_t)((CmxStreamObject*)self)->s.index + 7;
}

static PyObject* stream_get_device(PyObject* self, void* c) {
  (void)c;
  return device_object(((CmxStreamObject*)self)->s.device);
}

static PyObject* stream_get_index(PyObject* self, void* c) {
  (void)c;
  return PyLong_FromLong(((CmxStreamObject*)self)->s.index);
}

static PyGetSetDef stream_getset[] = {
    {"device", stream_get_device, NULL, "The stream's :obj:`Device`.", NULL},
    {"index", stream_get_index, NULL, "The stream's index.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject CmxStream_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core.Stream",
    .tp_basicsize = sizeof(CmxStreamObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A stream for running operations on a given device.",
    .tp_repr = stream_repr,
    .tp_richcompare = stream_richcompare,
    .tp_hash = stream_hash,
    .tp_getset = stream_getset,
};

/* ---------------- ThreadLocalStream ----------------
 * MLX's stream that is a different stream in each thread: each thread
 * that uses it gets its own new stream of the device, made on first use
 * and kept in the thread's state dict under (the object's key). */
typedef struct {
  PyObject_HEAD cmx_device d;
  long key; /* unique per object: the index shown by repr */
} CmxThreadLocalStreamObject;

static long g_tls_count;

static PyTypeObject CmxThreadLocalStream_Type;

static PyObject* tls_repr(PyObject* self) {
  CmxThreadLocalStreamObject* t = (CmxThreadLocalStreamObject*)self;
  return PyUnicode_FromFormat("ThreadLocalStream(Device(%s, %d), %ld)",
                              type_name(t->d.type), t->d.index, t->key);
}

static PyObject* tls_get_device(PyObject* self, void* c) {
  (void)c;
  return device_object(((CmxThreadLocalStreamObject*)self)->d);
}

static PyGetSetDef tls_getset[] = {
    {"device", tls_get_device, NULL, "The stream's :obj:`Device`.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject CmxThreadLocalStream_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core.ThreadLocalStream",
    .tp_basicsize = sizeof(CmxThreadLocalStreamObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "A stream that will be unique per thread and can be used to "
        "run operations on a given device.",
    .tp_repr = tls_repr,
    .tp_getset = tls_getset,
};

/* The calling thread's stream of a ThreadLocalStream: 0, or 1 when o is
 * not one. A stream that cannot be made falls back to the device's
 * default stream (the error then shows where the stream is used). */
static int tls_stream(PyObject* o, cmx_stream* out) {
  if (!PyObject_TypeCheck(o, &CmxThreadLocalStream_Type)) return 1;
  CmxThreadLocalStreamObject* t = (CmxThreadLocalStreamObject*)o;
  *out = cmx_stream_on(t->d);
  PyObject* dict = PyThreadState_GetDict(); /* borrowed */
  PyObject* key = dict ? Py_BuildValue("(sl)", "cmx.tls", t->key) : NULL;
  PyObject* v = key ? PyDict_GetItemWithError(dict, key) : NULL;
  if (v && PyTuple_Check(v) && PyTuple_GET_SIZE(v) == 3) {
    out->index = (int)PyLong_AsLong(PyTuple_GET_ITEM(v, 0));
    out->device.type = (cmx_device_type)PyLong_AsLong(PyTuple_GET_ITEM(v, 1));
    out->device.index = (int)PyLong_AsLong(PyTuple_GET_ITEM(v, 2));
  } else if (key && !PyErr_Occurred()) {
    cmx_stream s;
    if (cmx_new_stream(&s, t->d) == CMX_OK) {
      *out = s;
      PyObject* r =
          Py_BuildValue("(iii)", s.index, (int)s.device.type, s.device.index);
      if (!r || PyDict_SetItem(dict, key, r) < 0) PyErr_Clear();
      Py_XDECREF(r);
    }
  }
  PyErr_Clear();
  Py_XDECREF(key);
  return 0;
}

/* ---------------- StreamContext ---------------- */
typedef struct {
  PyObject_HEAD cmx_stream target; /* stream, or device's default */
  int depth;                       /* entries not yet exited */
  cmx_device saved_device[8];
  cmx_stream saved_stream[8];
} CmxStreamContextObject;

static PyObject* ctx_new(PyTypeObject* type, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"s", NULL};
  PyObject* s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O:StreamContext", kwlist, &s))
    return NULL;
  if (s == Py_None) {
    PyErr_SetString(PyExc_RuntimeError,
                    "[StreamContext] Invalid argument, please specify a "
                    "stream or device.");
    return NULL;
  }
  cmx_stream st;
  if (cmxpy_stream_arg(s, &st) < 0) return NULL;
  CmxStreamContextObject* self =
      (CmxStreamContextObject*)type->tp_alloc(type, 0);
  if (self) self->target = st;
  return (PyObject*)self;
}

static PyObject* ctx_enter(PyObject* o, PyObject* unused) {
  (void)unused;
  CmxStreamContextObject* self = (CmxStreamContextObject*)o;
  if (self->depth >= 8) {
    PyErr_SetString(PyExc_RuntimeError,
                    "[StreamContext] the same context is entered too often");
    return NULL;
  }
  cmx_stream target;
  cmx_status st = cmx_stream_resolve(&target, self->target);
  if (st != CMX_OK) return cmxpy_raise(st);
  cmx_device prev_dev = cmx_default_device();
  cmx_stream prev_stream;
  st = cmx_default_stream(&prev_stream, target.device);
  if (st == CMX_OK) st = cmx_set_default_device(target.device);
  if (st == CMX_OK) st = cmx_set_default_stream(target);
  if (st != CMX_OK) {
    cmx_set_default_device(prev_dev);
    return cmxpy_raise(st);
  }
  self->saved_device[self->depth] = prev_dev;
  self->saved_stream[self->depth] = prev_stream;
  self->depth++;
  Py_RETURN_NONE;
}

static PyObject* ctx_exit(PyObject* o, PyObject* args) {
  (void)args;
  CmxStreamContextObject* self = (CmxStreamContextObject*)o;
  if (self->depth > 0) {
    self->depth--;
    cmx_set_default_stream(self->saved_stream[self->depth]);
    cmx_set_default_device(self->saved_device[self->depth]);
  }
  Py_RETURN_FALSE;
}

static PyMethodDef ctx_methods[] = {{"__enter__", ctx_enter, METH_NOARGS, NULL},
                                    {"__exit__", ctx_exit, METH_VARARGS, NULL},
                                    {NULL, NULL, 0, NULL}};

static PyTypeObject CmxStreamContext_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core.StreamContext",
    .tp_basicsize = sizeof(CmxStreamContextObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "StreamContext(s)\n--\n\nA context manager for setting the "
        "current device and stream.\n\nSee :func:`stream` for usage.",
    .tp_new = ctx_new,
    .tp_methods = ctx_methods,
};

/* ---------------- functions ---------------- */
#define DEVICE_SIG "(device: Device | DeviceType)"

CMXPY_DEF(default_device, "() -> Device", "Get the default device.") {
  (void)A;
  return device_object(cmx_default_device());
}

/* None or the exception of a failed status. */
static PyObject* none_or_raise(cmx_status st) {
  if (st != CMX_OK) return cmxpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject* stream_or_raise(cmx_status st, cmx_stream s) {
  return st == CMX_OK ? stream_object(s) : cmxpy_raise(st);
}

CMXPY_DEF(set_default_device, DEVICE_SIG " -> None",
          "Set the default device (of the calling thread).") {
  return none_or_raise(cmx_set_default_device(A->v[0].device));
}

CMXPY_DEF(default_stream, DEVICE_SIG " -> Stream",
          "Get the device's default stream.") {
  cmx_stream s;
  return stream_or_raise(cmx_default_stream(&s, A->v[0].device), s);
}

CMXPY_DEF(set_default_stream, "(stream: Stream) -> None",
          "Set the default stream.\n\n"
          "This will make the given stream the default for the stream's "
          "device. It will not change the default device.\n\n"
          "Args:\n    stream (Stream): Stream to make the default.") {
  if (!PyObject_TypeCheck(OBJ(0), &CmxStream_Type)) {
    PyErr_Format(PyExc_TypeError,
                 "[set_default_stream] expected a Stream, got %.100s",
                 Py_TYPE(OBJ(0))->tp_name);
    return NULL;
  }
  return none_or_raise(cmx_set_default_stream(((CmxStreamObject*)OBJ(0))->s));
}

CMXPY_DEF(new_stream, DEVICE_SIG " -> Stream",
          "Make a new stream on the given device.") {
  cmx_stream s;
  return stream_or_raise(cmx_new_stream(&s, A->v[0].device), s);
}

CMXPY_DEF(new_thread_local_stream, DEVICE_SIG " -> ThreadLocalStream",
          "Make a new thread local stream on the given device: each thread "
          "that uses it runs its work on a stream of its own.") {
  cmx_device d = A->v[0].device;
  if (!cmx_is_available(d)) {
    PyErr_Format(PyExc_ValueError,
                 "[new_thread_local_stream] device %s:%d "
                 "is not available",
                 type_name(d.type), d.index);
    return NULL;
  }
  CmxThreadLocalStreamObject* o =
      PyObject_New(CmxThreadLocalStreamObject, &CmxThreadLocalStream_Type);
  if (o) {
    o->d = d;
    o->key = g_tls_count++;
  }
  return (PyObject*)o;
}

CMXPY_DEF(new_thread_unsafe_stream, DEVICE_SIG " -> Stream",
          "Make a new stream on the given device that any thread may use "
          "(cmx's streams all may: the same as :func:`new_stream`).") {
  cmx_stream s;
  return stream_or_raise(cmx_new_stream(&s, A->v[0].device), s);
}

CMXPY_DEF(clear_streams, "() -> None",
          "Finish the work of every stream and make each device's first "
          "stream the calling thread's default again.") {
  (void)A;
  cmx_status st;
  Py_BEGIN_ALLOW_THREADS st = cmx_synchronize_all();
  Py_END_ALLOW_THREADS if (st != CMX_OK) return cmxpy_raise(st);
  for (int t = 0; t < 2; t++) {
    cmx_device d = {(cmx_device_type)t, 0};
    if (cmx_is_available(d)) cmx_set_default_stream((cmx_stream){0, d});
  }
  Py_RETURN_NONE;
}

CMXPY_DEF(stream, "(s: Stream | Device | DeviceType) -> StreamContext",
          "Create a context manager to set the default device and stream.\n\n"
          "Args:\n    s: The :obj:`Stream` or :obj:`Device` to set as the "
          "default.\n\n"
          "Returns:\n    A context manager that sets the default device and "
          "stream.\n\n"
          "Example:\n\n    .. code-block::python\n\n      import cmx.core as "
          "mx\n\n      with mx.stream(mx.cpu):\n          # Operations here "
          "use mx.cpu by default.\n          pass") {
  return PyObject_CallOneArg((PyObject*)&CmxStreamContext_Type, OBJ(0));
}

CMXPY_DEF(synchronize, "(stream: StreamOrDevice = None) -> None",
          "Synchronize with the given stream.\n\n"
          "Args:\n    stream (Stream, optional): The stream to synchronize "
          "with. If ``None`` then the default stream of the default device "
          "is used. Default: ``None``.") {
  cmx_status st;
  Py_BEGIN_ALLOW_THREADS st = cmx_synchronize(STREAM);
  Py_END_ALLOW_THREADS return none_or_raise(st);
}

CMXPY_DEF(is_available, DEVICE_SIG " -> bool",
          "Whether the device can run work here (a GPU needs a CUDA driver "
          "and device).") {
  return PyBool_FromLong(cmx_is_available(A->v[0].device));
}

CMXPY_DEF(device_count, DEVICE_SIG " -> int",
          "The number of devices of the given type (a Device or "
          "DeviceType).") {
  return PyLong_FromLong(cmx_device_count(A->v[0].device.type));
}

CMXPY_DEF(device_info, "(device: Device | DeviceType | None = None) -> dict",
          "A dict describing the device (default: the default device): "
          "device_name, architecture (the CPU's machine name, e.g. x86_64, "
          "or the GPU's sm_<compute capability>, e.g. sm_90), device_index, "
          "device_count, memory_size (bytes: host memory for the CPU, the "
          "card's memory for a GPU), free_memory, "
          "max_recommended_working_set_size (as memory_size); for a GPU also "
          "compute_capability ((major, minor)) and sm_count.") {
  cmx_device d = ISNONE(0) ? cmx_default_device() : A->v[0].device;
  cmx_device_info info;
  cmx_status st;
  Py_BEGIN_ALLOW_THREADS st = cmx_device_get_info(d, &info);
  Py_END_ALLOW_THREADS if (st != CMX_OK) return cmxpy_raise(st);
  PyObject* r = Py_BuildValue(
      "{s:s,s:s,s:i,s:i,s:K,s:K,s:K}", "device_name", info.name, "architecture",
      info.architecture, "device_index", d.index, "device_count",
      cmx_device_count(d.type), "memory_size",
      (unsigned long long)info.memory_size, "free_memory",
      (unsigned long long)info.free_memory, "max_recommended_working_set_size",
      (unsigned long long)info.memory_size);
  if (!r || d.type != CMX_GPU) return r;
  PyObject* cc = Py_BuildValue("(ii)", info.compute_major, info.compute_minor);
  PyObject* sm = PyLong_FromLong(info.sm_count);
  if (!cc || !sm || PyDict_SetItemString(r, "compute_capability", cc) < 0 ||
      PyDict_SetItemString(r, "sm_count", sm) < 0)
    Py_CLEAR(r);
  Py_XDECREF(cc);
  Py_XDECREF(sm);
  return r;
}

static cmxpy_spec* const device_functions[] = {&spec_default_device,
                                               &spec_set_default_device,
                                               &spec_default_stream,
                                               &spec_set_default_stream,
                                               &spec_new_stream,
                                               &spec_stream,
                                               &spec_synchronize,
                                               &spec_is_available,
                                               &spec_device_count,
                                               &spec_device_info,
                                               &spec_new_thread_local_stream,
                                               &spec_new_thread_unsafe_stream,
                                               &spec_clear_streams};

int cmxpy_init_device(PyObject* m) {
  if (PyType_Ready(&CmxDevice_Type) < 0 || PyType_Ready(&CmxStream_Type) < 0 ||
      PyType_Ready(&CmxStreamContext_Type) < 0 ||
      PyType_Ready(&CmxThreadLocalStream_Type) < 0)
    return -1;
  PyObject* enum_mod = PyImport_ImportModule("enum");
  if (!enum_mod) return -1;
  g_devtype_type = PyObject_CallMethod(enum_mod, "Enum", "s[(si)(si)]",
                                       "DeviceType", "cpu", 0, "gpu", 1);
  /* repr as MLX's: DeviceType.cpu (the Enum's str) */
  PyObject* base = PyObject_GetAttrString(enum_mod, "Enum");
  PyObject* as_str = base ? PyObject_GetAttrString(base, "__str__") : NULL;
  Py_XDECREF(base);
  Py_DECREF(enum_mod);
  int bad = !g_devtype_type || !as_str ||
            PyObject_SetAttrString(g_devtype_type, "__repr__", as_str) < 0;
  Py_XDECREF(as_str);
  if (bad) return -1;
  PyObject* modname = PyModule_GetNameObject(m);
  if (!modname) return -1;
  int rc = PyObject_SetAttrString(g_devtype_type, "__module__", modname);
  Py_DECREF(modname);
  PyObject* doc = PyUnicode_FromString(
      "The kind of a device: cpu or gpu (exported as mx.cpu and mx.gpu; "
      "usable wherever a Device is, meaning index 0).");
  if (!rc)
    rc = doc ? PyObject_SetAttrString(g_devtype_type, "__doc__", doc) : -1;
  Py_XDECREF(doc);
  if (rc < 0) return -1;
  static const char* names[2] = {"cpu", "gpu"};
  for (int i = 0; i < 2; i++) {
    g_devtype[i] = PyObject_GetAttrString(g_devtype_type, names[i]);
    if (!g_devtype[i]) return -1;
    Py_INCREF(g_devtype[i]);
    if (PyModule_AddObject(m, names[i], g_devtype[i]) < 0) return -1;
  }
  Py_INCREF(g_devtype_type);
  if (PyModule_AddObject(m, "DeviceType", g_devtype_type) < 0) return -1;
  PyTypeObject* types[] = {&CmxDevice_Type, &CmxStream_Type,
                           &CmxStreamContext_Type, &CmxThreadLocalStream_Type};
  const char* tnames[] = {"Device", "Stream", "StreamContext",
                          "ThreadLocalStream"};
  for (int i = 0; i < 4; i++) {
    Py_INCREF(types[i]);
    if (PyModule_AddObject(m, tnames[i], (PyObject*)types[i]) < 0) return -1;
  }
  return cmxpy_add_functions(m, device_functions,
                             CMXPY_COUNT(device_functions));
}

/* For the C API capsule (capi.c). */
PyObject* cmxpy_stream_object(cmx_stream s) {
  return stream_object(s);
}
PyTypeObject* cmxpy_stream_type(void) {
  return &CmxStream_Type;
}
