"""compile with MLX's signature and behaviour: trees of arrays and
constants as arguments, captured implicit inputs and outputs, recompiling
on the triggers MLX documents.

The tracing, graph passes, kernel generation and the trace cache are C
(include/cmx/compile.h through cmx.core._compiled, python/src/compile.c);
this layer flattens arguments into arrays plus a key of everything else
(tree structure, constant values), swaps captured state for the trace's
placeholders, and rebuilds output trees. cmx/__init__.py installs compile
on cmx.core.
"""

import functools
import weakref
from typing import Any, Callable, Optional

from . import core as _core
from ._transforms import _fill, _flatten, _restore, _unflatten

array = _core.array

_CONSTANTS = (type(None), bool, int, float, complex, str)
_array_keys = {}  # number of arguments -> the key of an arrays-only call


def _bad_argument(t):
    return ValueError(
        "[compile] Function arguments must be trees of arrays or "
        "constants (floats, ints, or strings), but received type "
        f"{type(t).__module__}.{type(t).__qualname__}."
    )


def _flatten_args(tree):
    """The array leaves of (args, kwargs), a function rebuilding it from
    new leaves, and the bytes of its structure and constants (the trace
    key). Runs on every call: the key is a join of short tokens (dict keys
    and constants length-prefixed, so no two trees share one), and the
    rebuilding function walks the tree only when a trace needs it."""
    leaves, toks = [], []
    _walk_args(tree, leaves, toks)
    return leaves, (lambda new: _rebuild(tree, iter(new))), "".join(toks).encode()


def _walk_args(t, leaves, toks):
    """_flatten_args's walk: appends t's arrays to leaves and its key's
    tokens to toks. A module-level function, not a closure over itself:
    that cycle (the closure holding leaves) kept every call's input arrays
    alive until Python's cycle collector ran, so a buffer the caller
    dropped could not be given to a later op (the LLM decoding step's
    in-place cache writes copied the whole cache)."""
    if isinstance(t, array):
        leaves.append(t)
        toks.append("A")
    elif isinstance(t, (list, tuple)):
        toks.append("L[" if isinstance(t, list) else "T[")
        for v in t:
            _walk_args(v, leaves, toks)
        toks.append("]")
    elif isinstance(t, dict):
        toks.append("D[")
        for k, v in t.items():
            r = repr(k)
            toks.append(f"K{len(r)}:{r}")
            _walk_args(v, leaves, toks)
        toks.append("]")
    elif isinstance(t, _CONSTANTS):
        r = repr(t)
        toks.append(f"C{type(t).__name__}{len(r)}:{r}")
    else:
        raise _bad_argument(t)


def _rebuild(t, it):
    """tree t with its arrays replaced, in order, by the items of it."""
    if isinstance(t, array):
        return next(it)
    if isinstance(t, list):
        return [_rebuild(v, it) for v in t]
    if isinstance(t, tuple):
        return tuple([_rebuild(v, it) for v in t])
    if isinstance(t, dict):
        return {k: _rebuild(v, it) for k, v in t.items()}
    return t


def _state_leaves(tree):
    """The arrays of a captured state tree (lists, tuples, dicts)."""
    return _flatten(tree, strict=False)[0] if tree is not None else []


class _CompiledFunction:
    """A function compiled by :func:`compile` (callable like it)."""

    def __init__(self, fun, inputs, outputs, shapeless):
        # First: update_wrapper copies fun's __dict__ into self's, and a
        # function wrapping a compiled one (grad(compile(f)): grad's
        # functools.wraps copied the compiled function's attributes) would
        # bring that one's _fun and _handle, making this the inner
        # compiled function (compile(grad(compile(f))) returned f's value).
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._inputs = inputs
        self._outputs = outputs
        self._calls = []  # (rebuild, n_explicit) of calls being traced
        name = getattr(fun, "__qualname__", None) or repr(fun)
        # The handle reaches self weakly: no cycle, so the function's traces
        # go as soon as the compiled function does.
        ref = weakref.ref(self)
        self._handle = _core._compiled(
            lambda xs: ref()._trace(xs), id(fun), shapeless, name
        )

    def _trace(self, placeholders):
        """Runs fun on placeholders (the explicit inputs, then the captured
        ones): the outputs' arrays then the captured outputs' arrays. The
        output tree and its size go with the trace (its aux)."""
        rebuild, n = self._calls[-1]
        if rebuild is None:  # arrays only
            args, kwargs = tuple(placeholders[:n]), {}
        else:
            args, kwargs = rebuild(placeholders[:n])
        records = []
        if self._inputs is not None:
            _, records = _fill(self._inputs, placeholders[n:])
        try:
            out = self._fun(*args, **kwargs)
            leaves, treedef = _flatten(out, strict=False)
            captured = _state_leaves(self._outputs)
        finally:
            _restore(records)
        _core._compile_set_aux((treedef, len(leaves)))
        return leaves + captured

    def __call__(self, *args, **kwargs):
        if not _core._compile_enabled():
            return self._fun(*args, **kwargs)
        if not kwargs and all(type(a) is array for a in args):
            # The common call, arrays only: the key _flatten_args would make
            # (rebuilt by _trace when it traces: nothing made per call).
            leaves = list(args)
            key = _array_keys.get(len(args))
            if key is None:
                key = _array_keys[len(args)] = (
                    b"T[T[" + b"A" * len(args) + b"]D[]]")
            rebuild = None
        else:
            leaves, rebuild, key = _flatten_args((args, kwargs))
        self._calls.append((rebuild, len(leaves)))
        if self._inputs is not None:  # the captured state (_state_leaves)
            leaves += _core._tree_flatten(self._inputs, False)[0]
        try:
            outs, aux = self._handle.call(leaves, key)
        finally:
            self._calls.pop()
        treedef, n = aux
        if self._outputs is not None:
            _core._tree_fill(self._outputs, outs[n:])
        return _core._tree_unflatten(treedef, outs[:n])

    def __get__(self, obj, objtype=None):
        # Compiled methods bind like functions.
        if obj is None:
            return self
        return functools.partial(self, obj)


def compile(
    fun: Callable,
    inputs: Optional[Any] = None,
    outputs: Optional[Any] = None,
    shapeless: bool = False,
) -> Callable:
    """Compile ``fun``: the result computes what ``fun`` computes, from a
    graph traced once per input signature, simplified, and with its
    elementwise work fused into generated kernels.

    Args:
        fun (Callable): the function; its arguments are arrays, trees
          (lists, tuples, dicts) of arrays, and constants (None, bool, int,
          float, complex, str), and it returns arrays or trees of arrays.
        inputs (list or dict, optional): state ``fun`` reads besides its
          arguments (e.g. a model's parameters, ``mx.random.state``): a
          tree whose arrays are passed to the traced graph as inputs on
          every call, so changes to them are seen. Default: ``None``.
        outputs (list or dict, optional): state ``fun`` updates (a tree of
          arrays): after every call its arrays are replaced, in place, by
          the values the function stored there. Default: ``None``.
        shapeless (bool, optional): reuse a trace when input shapes change
          (with the same number of dimensions). Shapes are then derived
          again on every call; a graph that fixed a shape while traced
          (a reshape to literal sizes) fails when they no longer fit.
          Default: ``False``.

    Returns:
        Callable: the compiled function, called like ``fun``.

    A trace is made on the first call and again when the number of array
    arguments, the dtype or shape (ndim when ``shapeless``) of one, or the
    value or structure of the other arguments changes. Arrays ``fun`` reads
    from elsewhere are constants of the trace. Setting
    ``CMX_COMPILE_EXPLAIN=1`` logs each trace and why it happened.
    """
    return _CompiledFunction(fun, inputs, outputs, shapeless)
