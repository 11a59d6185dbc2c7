"""MLX's graph export on cmx.core: export_function, import_function,
exporter (FunctionExporter) and export_to_dot, over the flat functions of
python/src/export.c (include/cmx/export.h).

A function is exported by tracing it once per call signature: its
positional inputs (arrays or pytrees of arrays, flattened) and keyword
inputs (arrays, by name). The file is cmx's own format (see
include/cmx/export.h), not MLX's ``.mlxfn``: files move between cmx
programs (Python or C), not between cmx and MLX.

install(core) is called once by cmx/__init__.py.
"""

from . import core as _core


def _leaves(args, what):
    leaves, _ = _core._tree_flatten(list(args), False)
    for x in leaves:
        if not isinstance(x, _core.array):
            raise ValueError(
                f"[{what}] Inputs must be arrays or trees of arrays, got "
                f"{type(x).__name__}.")
    return leaves


def _split_kwargs(kwargs, what):
    names = sorted(kwargs)
    for n in names:
        if not isinstance(kwargs[n], _core.array):
            raise ValueError(
                f"[{what}] Keyword argument {n} must be an array, got "
                f"{type(kwargs[n]).__name__}.")
    return names, [kwargs[n] for n in names]


def _flat_fun(fun, args, names, what):
    """fun as a function of a flat list of arrays (positional leaves, then
    keyword arrays in names' order) returning a list of arrays."""
    _, treedef = _core._tree_flatten(list(args), False)
    npos = len(_leaves(args, what))

    def flat(xs):
        pos = _core._tree_unflatten(treedef, list(xs[:npos]))
        kw = dict(zip(names, xs[npos:]))
        out = fun(*pos, **kw)
        if isinstance(out, _core.array):
            return [out]
        if isinstance(out, (list, tuple)) and all(
                isinstance(o, _core.array) for o in out):
            return list(out)
        raise ValueError(
            f"[{what}] Outputs can be either a single array, a tuple, or a "
            "list of arrays.")

    return flat


def _check_file(file, what):
    if not isinstance(file, str):
        import os

        if isinstance(file, os.PathLike):
            return os.fspath(file)
        raise TypeError(f"[{what}] file must be a str path, got "
                        f"{type(file).__name__}")
    return file


class FunctionExporter:
    """Exports several traces of one function to one file (made by
    :func:`exporter`): each call traces the function for the inputs given;
    :meth:`close` (or leaving the ``with`` block) writes the file."""

    def __init__(self, file, fun, shapeless=False, metadata=""):
        self._file = _check_file(file, "exporter")
        self._fun = fun
        self._shapeless = bool(shapeless)
        self._e = _core._exporter_new(self._file, metadata)
        self._closed = False

    def __call__(self, *args, **kwargs):
        if self._closed:
            raise RuntimeError("[exporter] The exporter is closed.")
        names, kws = _split_kwargs(kwargs, "export_function")
        _core._exporter_add(self._e, _flat_fun(self._fun, args, names,
                                                "export_function"),
                            _leaves(args, "export_function"), names, kws,
                            self._shapeless)

    def close(self):
        """Write the file (once)."""
        if not self._closed:
            self._closed = True
            _core._exporter_close(self._e)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.close()
        else:
            self._closed = True
        return False


def exporter(file, fun, *, shapeless=False):
    """Make a callable object to export multiple traces of a function to a
    file.

    Args:
        file (str): File path to export to.
        fun (Callable): The function to export.
        shapeless (bool, optional): Whether the traces run for inputs of
          other shapes (the same number of dimensions). Default: ``False``.

    Returns:
        FunctionExporter: call it with example inputs to add a trace; close
        it (or use it in a ``with`` block) to write the file.
    """
    return FunctionExporter(file, fun, shapeless)


def _describe(callback, fun, args, kwargs, shapeless):
    names, kws = _split_kwargs(kwargs, "export_function")
    items = []
    _core._export_visit(_flat_fun(fun, args, names, "export_function"),
                        _leaves(args, "export_function"), names, kws,
                        bool(shapeless), items)

    def entry(v):
        return (v[0], v[1], v[2])

    ins = [entry(i[3][0]) for i in items if i[0] == "input" and not i[1]]
    kwi = [(i[1],) + entry(i[3][0]) for i in items
           if i[0] == "input" and i[1]]
    callback({"type": "inputs", "inputs": ins})
    callback({"type": "keyword_inputs", "keywords": kwi})
    callback({"type": "outputs",
              "outputs": [entry(i[3][0]) for i in items if i[0] == "output"]})
    callback({"type": "constants",
              "constants": [(i[3][0][0], i[3][0][3]) for i in items
                            if i[0] == "constant"]})
    for i in items:
        if i[0] == "primitive":
            callback({"type": "primitive", "name": i[1],
                      "description": i[2],
                      "inputs": [entry(v) for v in i[3]],
                      "outputs": [entry(v) for v in i[4]],
                      "arguments": []})


def export_function(file, fun, *args, shapeless=False, **kwargs):
    """Export an array function to a file (or describe it to a callback).

    The function is traced once on the example inputs: the file holds its
    graph (each primitive and its parameters) and every array it reads
    that does not depend on the inputs (as constants). Load it with
    :func:`import_function`, in Python or from C (``cmx/export.h``).

    Args:
        file (str or Callable): File path to export to, or a callable that
          receives the trace item by item (dicts with a ``type`` of
          ``inputs``, ``keyword_inputs``, ``outputs``, ``constants`` and
          ``primitive``).
        fun (Callable): The function to export: arrays (or trees of
          arrays) in, an array or a tuple or list of arrays out.
        *args (array): Example positional inputs.
        shapeless (bool, optional): Whether the function may be called with
          inputs of other shapes (the same number of dimensions). Default:
          ``False``.
        **kwargs (array): Example keyword inputs.
    """
    if callable(file) and not isinstance(file, str):
        _describe(file, fun, args, kwargs, shapeless)
        return
    e = FunctionExporter(file, fun, shapeless)
    e(*args, **kwargs)
    e.close()


class _Imported:
    """A function loaded by :func:`import_function`: call it with arrays
    (positional, and keyword as exported); it returns a tuple of arrays."""

    def __init__(self, path):
        self._f = _core._import_function(path)
        self.metadata, self.traces = _core._imported_info(self._f)

    def __call__(self, *args, **kwargs):
        names, kws = _split_kwargs(kwargs, "import_function::call")
        return tuple(_core._imported_call(
            self._f, _leaves(args, "import_function::call"), names, kws))

    def __repr__(self):
        return f"<imported function with {self.traces} trace(s)>"


def import_function(file):
    """Import a function from a file written by :func:`export_function` or
    :func:`exporter`.

    Args:
        file (str): The file path.

    Returns:
        Callable: runs the first exported trace whose inputs match the call
        and returns a tuple of arrays.
    """
    return _Imported(_check_file(file, "import_function"))


def export_to_dot(file, *args, **kwargs):
    """Write the graph that computes the given arrays in Graphviz dot.

    Args:
        file (str or file-like): A path, or an object with ``write``.
        *args, **kwargs: Arrays (or trees of arrays) whose graph to write.
    """
    outs = _leaves(list(args) + list(kwargs.values()), "export_to_dot")
    dot = _core._export_to_dot(outs)
    if hasattr(file, "write"):
        file.write(dot)
        return
    with open(_check_file(file, "export_to_dot"), "w") as f:
        f.write(dot)


def install(core):
    for f in (export_function, import_function, exporter, export_to_dot):
        setattr(core, f.__name__, f)
    FunctionExporter.__module__ = core.__name__
    core.FunctionExporter = FunctionExporter
