/* The one pytree walker of cmx: lists, tuples and dicts (subclasses
 * included) are nodes, anything else is a leaf, as in MLX. It serves
 * eval / async_eval (the arrays of a tree) and, through private functions
 * of cmx.core, the transforms of cmx/_transforms.py:
 *
 *   _tree_flatten(tree, strict=True) -> (leaves, treedef)
 *       the array leaves, depth first (dicts in iteration order), and the
 *       tree's structure: a copy of its containers as plain lists, tuples
 *       and dicts, other leaves kept, each array replaced by a marker.
 *       strict: a leaf that is not an array is MLX's ValueError.
 *   _tree_unflatten(treedef, leaves, other=<kept>) -> tree
 *       the structure with its markers replaced, in order, by leaves (and
 *       every other leaf by `other` when given).
 *   _tree_fill(tree, leaves) -> (tree, records)
 *       tree with its array leaves replaced in order, lists and dicts
 *       updated in place (tuples rebuilt), as MLX's grad does so that a
 *       function sees and may assign into its argument containers; records
 *       lists (container, key, new, old) per replaced slot, for undoing.
 *   _tree_visit(tree, prefix, visit)
 *       visit(leaf, p) for each leaf with the matching node p of a prefix
 *       tree (a leaf of prefix applies to the whole subtree below it).
 *
 * No closures are made, so a transform's arrays are freed by reference
 * counting as soon as its results are dropped: nothing waits for the cycle
 * collector. */
#include "args.h"

typedef enum { COLLECT, FLATTEN, REBUILD, FILL, VISIT } walk_mode;

typedef struct {
  walk_mode mode;
  bool strict;       /* FLATTEN: only array leaves */
  PyObject* leaves;  /* COLLECT, FLATTEN: out; REBUILD, FILL: in (list) */
  Py_ssize_t next;   /* REBUILD, FILL: the next leaf to use */
  PyObject* other;   /* REBUILD: replaces non-array leaves (NULL: kept) */
  PyObject* records; /* FILL: out */
  PyObject* visit;   /* VISIT: the callback */
} walker;

/* Stands for an array in a tree structure. */
static PyObject* g_marker;

static const char not_only_arrays[] =
    "[tree_flatten] The argument should contain only arrays";
static const char not_a_prefix[] =
    "[tree_map] Additional input tree is not a valid prefix of the first "
    "tree.";

static PyObject* next_leaf(walker* w) {
  if (w->next >= PyList_GET_SIZE(w->leaves)) {
    PyErr_SetString(PyExc_ValueError,
                    "[tree_unflatten] Not enough leaves for the tree.");
    return NULL;
  }
  return Py_NewRef(PyList_GET_ITEM(w->leaves, w->next++));
}

/* A leaf: what takes its place in the result (new reference). */
static PyObject* walk_leaf(walker* w, PyObject* leaf, PyObject* prefix) {
  bool is_array = CmxArray_Check(leaf);
  switch (w->mode) {
    case COLLECT:
      if (is_array && PyList_Append(w->leaves, leaf) < 0) return NULL;
      return Py_NewRef(Py_None);
    case FLATTEN:
      if (is_array)
        return PyList_Append(w->leaves, leaf) < 0 ? NULL : Py_NewRef(g_marker);
      if (w->strict) {
        PyErr_SetString(PyExc_ValueError, not_only_arrays);
        return NULL;
      }
      return Py_NewRef(leaf);
    case REBUILD:
      if (leaf == g_marker) return next_leaf(w);
      return Py_NewRef(w->other ? w->other : leaf);
    case FILL:
      return is_array ? next_leaf(w) : Py_NewRef(leaf);
    case VISIT:
      return PyObject_CallFunctionObjArgs(w->visit, leaf, prefix, NULL);
  }
  return NULL;
}

static PyObject* walk(walker* w, PyObject* node, PyObject* prefix);

static PyObject* prefix_error(void) {
  PyErr_SetString(PyExc_ValueError, not_a_prefix);
  return NULL;
}

/* The prefix of child i (key: its dict key) of node, whose prefix is p;
 * borrowed, or NULL with MLX's error. */
static PyObject* child_prefix(PyObject* node, PyObject* p, Py_ssize_t i,
                              PyObject* key) {
  bool p_seq = PyList_Check(p) || PyTuple_Check(p);
  if (key) {
    if (p_seq) return prefix_error();
    if (!PyDict_Check(p)) return p;
    PyObject* v = PyDict_GetItemWithError(p, key);
    if (!v && !PyErr_Occurred())
      PyErr_SetString(PyExc_ValueError,
                      "[tree_visit] Tree is not a valid prefix tree of the "
                      "first tree.");
    return v;
  }
  bool same = PyList_Check(node) ? PyList_Check(p) : PyTuple_Check(p);
  if (!same) return p_seq || PyDict_Check(p) ? prefix_error() : p;
  if (PySequence_Fast_GET_SIZE(p) != PySequence_Fast_GET_SIZE(node))
    return prefix_error();
  return PySequence_Fast_GET_ITEM(p, i);
}

/* Records that FILL put r where old was (container[key]). */
static int record(walker* w, PyObject* container, PyObject* key, PyObject* r,
                  PyObject* old) {
  PyObject* t = PyTuple_Pack(4, container, key, r, old);
  int rc = t ? PyList_Append(w->records, t) : -1;
  Py_XDECREF(t);
  return rc;
}

/* The tuple of the items of list `items` with the type of `like`, as MLX
 * rebuilds trees: tuple subclasses keep their type (a namedtuple through
 * its _make, others by calling the type with the items), while lists and
 * dicts become plain ones. */
static PyObject* rebuild_tuple(PyObject* like, PyObject* items) {
  if (PyTuple_CheckExact(like)) return PyList_AsTuple(items);
  PyObject* type = (PyObject*)Py_TYPE(like);
  PyObject* make = PyObject_HasAttrString(type, "_fields")
                       ? PyObject_GetAttrString(type, "_make")
                       : NULL;
  PyErr_Clear();
  PyObject* r = make ? PyObject_CallOneArg(make, items)
                     : PyObject_CallOneArg(type, items);
  Py_XDECREF(make);
  return r;
}

/* A list or tuple node. */
static PyObject* walk_seq(walker* w, PyObject* node, PyObject* prefix) {
  bool is_list = PyList_Check(node);
  bool in_place = w->mode == FILL && is_list;
  bool build =
      w->mode == FLATTEN || w->mode == REBUILD || (w->mode == FILL && !is_list);
  Py_ssize_t n = PySequence_Fast_GET_SIZE(node);
  PyObject* out = build ? PyList_New(n) : NULL;
  if (build && !out) return NULL;
  for (Py_ssize_t i = 0; i < n; i++) {
    if (i >= PySequence_Fast_GET_SIZE(node)) { /* changed by a callback */
      PyErr_SetString(PyExc_RuntimeError, "a tree changed while walked");
      goto fail;
    }
    PyObject* child = Py_NewRef(PySequence_Fast_GET_ITEM(node, i));
    PyObject* p = w->mode == VISIT ? child_prefix(node, prefix, i, NULL) : NULL;
    PyObject* r = w->mode != VISIT || p ? walk(w, child, p) : NULL;
    if (r && in_place && r != child) {
      PyObject* key = PyLong_FromSsize_t(i);
      if (!key || PyList_SetItem(node, i, Py_NewRef(r)) < 0 ||
          record(w, node, key, r, child) < 0)
        Py_CLEAR(r);
      Py_XDECREF(key);
    }
    Py_DECREF(child);
    if (!r) goto fail;
    if (build)
      PyList_SET_ITEM(out, i, r);
    else
      Py_DECREF(r);
  }
  if (!build) return Py_NewRef(in_place ? node : Py_None);
  if (is_list) return out;
  PyObject* t = rebuild_tuple(node, out);
  Py_DECREF(out);
  return t;
fail:
  Py_XDECREF(out);
  return NULL;
}

/* A dict node (its keys snapshot first: FILL assigns, callbacks may do
 * anything). */
static PyObject* walk_dict(walker* w, PyObject* node, PyObject* prefix) {
  bool build = w->mode == FLATTEN || w->mode == REBUILD;
  PyObject* keys = PyDict_Keys(node);
  PyObject* out = build ? PyDict_New() : NULL;
  if (!keys || (build && !out)) goto fail;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys); i++) {
    PyObject* key = PyList_GET_ITEM(keys, i);
    PyObject* child = PyDict_GetItemWithError(node, key);
    if (!child) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "a tree changed while walked");
      goto fail;
    }
    Py_INCREF(child);
    PyObject* p = w->mode == VISIT ? child_prefix(node, prefix, i, key) : NULL;
    PyObject* r = w->mode != VISIT || p ? walk(w, child, p) : NULL;
    if (r && w->mode == FILL && r != child &&
        (PyObject_SetItem(node, key, r) < 0 || record(w, node, key, r, child)))
      Py_CLEAR(r);
    Py_DECREF(child);
    if (!r || (build && PyDict_SetItem(out, key, r) < 0)) {
      Py_XDECREF(r);
      goto fail;
    }
    Py_DECREF(r);
  }
  Py_DECREF(keys);
  return build ? out : Py_NewRef(w->mode == FILL ? node : Py_None);
fail:
  Py_XDECREF(keys);
  Py_XDECREF(out);
  return NULL;
}

/* Walks node (prefix: its prefix node, VISIT only); returns what takes
 * its place in the result (new reference) or NULL with an exception. */
static PyObject* walk(walker* w, PyObject* node, PyObject* prefix) {
  bool seq = PyList_Check(node) || PyTuple_Check(node);
  if (!seq && !PyDict_Check(node)) return walk_leaf(w, node, prefix);
  if (Py_EnterRecursiveCall(" while walking a tree of arrays")) return NULL;
  PyObject* r = seq ? walk_seq(w, node, prefix) : walk_dict(w, node, prefix);
  Py_LeaveRecursiveCall();
  return r;
}

int cmxpy_tree_arrays(PyObject* tree, PyObject* list) {
  walker w = {.mode = COLLECT, .leaves = list};
  PyObject* r = walk(&w, tree, NULL);
  Py_XDECREF(r);
  return r ? 0 : -1;
}

/* ---------------- the Python entry points ---------------- */
CMXPY_DEF(_tree_flatten, "(tree: object, strict: bool = True)",
          "The array leaves of tree and its structure (see "
          "python/src/tree.c).") {
  walker w = {.mode = FLATTEN, .strict = FLAG(1), .leaves = PyList_New(0)};
  PyObject* def = w.leaves ? walk(&w, OBJ(0), NULL) : NULL;
  PyObject* r = def ? PyTuple_Pack(2, w.leaves, def) : NULL;
  Py_XDECREF(def);
  Py_XDECREF(w.leaves);
  return r;
}

/* The leaves argument as a list (new reference). */
static PyObject* leaf_list(PyObject* o) {
  if (PyList_CheckExact(o)) return Py_NewRef(o);
  return PySequence_List(o);
}

CMXPY_DEF(_tree_unflatten,
          "(treedef: object, leaves: object, other: object = None)",
          "The tree of a structure made by _tree_flatten with new leaves.") {
  walker w = {.mode = REBUILD,
              .leaves = leaf_list(OBJ(1)),
              .other = GIVEN(2) ? OBJ(2) : NULL};
  PyObject* r = w.leaves ? walk(&w, OBJ(0), NULL) : NULL;
  Py_XDECREF(w.leaves);
  return r;
}

CMXPY_DEF(_tree_fill, "(tree: object, leaves: object)",
          "tree with its array leaves replaced in place, and the records "
          "of the slots replaced.") {
  walker w = {
      .mode = FILL, .leaves = leaf_list(OBJ(1)), .records = PyList_New(0)};
  PyObject* t = w.leaves && w.records ? walk(&w, OBJ(0), NULL) : NULL;
  PyObject* r = t ? PyTuple_Pack(2, t, w.records) : NULL;
  Py_XDECREF(t);
  Py_XDECREF(w.leaves);
  Py_XDECREF(w.records);
  return r;
}

CMXPY_DEF(_tree_visit, "(tree: object, prefix: object, visit: object)",
          "Calls visit(leaf, p) for each leaf of tree and its node p of the "
          "prefix tree.") {
  walker w = {.mode = VISIT, .visit = OBJ(2)};
  PyObject* r = walk(&w, OBJ(0), OBJ(1));
  if (!r) return NULL;
  Py_DECREF(r);
  Py_RETURN_NONE;
}

static cmxpy_spec* const tree_functions[] = {
    &spec__tree_flatten, &spec__tree_unflatten, &spec__tree_fill,
    &spec__tree_visit};

int cmxpy_init_tree(PyObject* m) {
  PyObject* builtins = PyEval_GetBuiltins(); /* borrowed */
  PyObject* object = builtins ? PyDict_GetItemString(builtins, "object") : NULL;
  g_marker = object ? PyObject_CallNoArgs(object) : NULL;
  if (!g_marker) return -1;
  return cmxpy_add_functions(m, tree_functions, CMXPY_COUNT(tree_functions));
}
