"""Function transforms with MLX's signatures and behaviour: grad,
value_and_grad, vjp, jvp, vmap, custom_function and checkpoint.

This layer handles pytrees (lists, tuples and dicts, nested), argnums and
argnames, auxiliary outputs, in_axes/out_axes trees and MLX's error
messages; the transforms themselves run in C on flat lists of arrays
(cmx.core._vjp, _jvp, _vmap, _value_and_grad, _custom_function,
_checkpoint, see python/src/transforms.c). cmx/__init__.py installs the
public functions on cmx.core.

Trees follow MLX: list, tuple and dict (subclasses included) are nodes,
anything else is a leaf; rebuilt trees are plain lists, tuples and dicts.
"""

import functools
from typing import Any, Callable, List, Optional, Sequence, Union

from . import core as _core

array = _core.array

_NOT_ONLY_ARRAYS = "[tree_flatten] The argument should contain only arrays"
_NOT_A_PREFIX = (
    "[tree_map] Additional input tree is not a valid prefix of the first tree."
)


# ---------------------------------------------------------------- trees


def _shape_str(shape):
    """A shape as MLX prints it in messages: (2,3), (4), ()."""
    return "(" + ",".join(str(d) for d in shape) + ")"


def _type_name(o):
    t = type(o)
    if t.__module__ == "builtins":
        return t.__qualname__
    return f"{t.__module__}.{t.__qualname__}"


def _flatten(tree, strict=True):
    """The array leaves of tree, depth first (dicts in iteration order),
    and its structure (plain lists, tuples and dicts; non-array leaves kept
    as they are), for _unflatten. With strict, a leaf that is not an array
    is a ValueError, as MLX's tree_flatten. One walker does every tree
    operation here (cmx.core._tree_*, python/src/tree.c); it makes no
    closures, so nothing here waits for the cycle collector."""
    return _core._tree_flatten(tree, strict)


def _unflatten(treedef, leaves):
    """The tree of structure treedef with new array leaves."""
    return _core._tree_unflatten(treedef, leaves)


def _fill(tree, values):
    """tree with its array leaves replaced, in order, by values. Lists and
    dicts are updated in place, as MLX does, so a function that assigns
    into its argument containers is seen by the caller; returns the tree
    and the records (container, key, new, old) of the slots given a new
    object, for _restore. Tuples are rebuilt."""
    return _core._tree_fill(tree, values)


def _restore(records):
    """Puts the original arrays back into the slots _fill used, except
    where the function stored something else meanwhile."""
    for container, key, new, old in reversed(records):
        try:
            if container[key] is new:
                container[key] = old
        except (IndexError, KeyError):
            pass


def _visit_prefix(tree, prefix, visit):
    """Calls visit(leaf, p) for each leaf of tree with the matching node of
    prefix, a prefix tree of tree (a leaf of prefix applies to the whole
    subtree below it), with MLX's errors for mismatched trees."""
    _core._tree_visit(tree, prefix, visit)


# ---------------------------------------------------------------- vjp / jvp


def _array_list(xs, op, what):
    if isinstance(xs, (list, tuple)) and all(isinstance(x, array) for x in xs):
        return list(xs)
    raise TypeError(f"[{op}] {what} must be a list of arrays.")


def _outputs_list(out, op):
    """fun's result as a list of arrays: an array or a list/tuple of
    arrays, as MLX's vjp and jvp accept."""
    if isinstance(out, array):
        return [out]
    if isinstance(out, (list, tuple)) and all(isinstance(o, array) for o in out):
        return list(out)
    raise TypeError(
        f"[{op}] The function must return an array or a list of arrays, "
        f"got {_type_name(out)}."
    )


def vjp(fun: Callable, primals: List[array], cotangents: List[array]):
    """Compute the vector-Jacobian product.

    Runs ``fun`` at ``primals`` and multiplies the ``cotangents`` (one per
    output of ``fun``) by its Jacobian.

    Args:
        fun (Callable): A function which takes a variable number of
            :class:`array` and returns a single :class:`array` or list of
            :class:`array`.
        primals (list(array)): A list of :class:`array` at which to
            evaluate the Jacobian.
        cotangents (list(array)): A list of :class:`array` which are the
            "vector" in the vector-Jacobian product. The ``cotangents``
            should be the same in number, shape, and type as the outputs
            of ``fun``.

    Returns:
        tuple(list(array), list(array)): The outputs of ``fun`` and the
        vector-Jacobian products, one per primal.
    """
    primals = _array_list(primals, "vjp", "primals")
    cotangents = _array_list(cotangents, "vjp", "cotangents")
    return _core._vjp(lambda xs: _outputs_list(fun(*xs), "vjp"), primals, cotangents)


def jvp(fun: Callable, primals: List[array], tangents: List[array]):
    """Compute the Jacobian-vector product.

    Runs ``fun`` at ``primals`` and multiplies its Jacobian by the
    ``tangents`` (one per primal).

    Args:
        fun (Callable): A function which takes a variable number of
            :class:`array` and returns a single :class:`array` or list of
            :class:`array`.
        primals (list(array)): A list of :class:`array` at which to
            evaluate the Jacobian.
        tangents (list(array)): A list of :class:`array` which are the
            "vector" in the Jacobian-vector product. The ``tangents``
            should be the same in number, shape, and type as the inputs of
            ``fun`` (i.e. the ``primals``).

    Returns:
        tuple(list(array), list(array)): The outputs of ``fun`` and the
        Jacobian-vector products, one per output.
    """
    primals = _array_list(primals, "jvp", "primals")
    tangents = _array_list(tangents, "jvp", "tangents")
    if len(primals) != len(tangents):
        raise ValueError("[jvp] Number of inputs does not match number of tangents.")
    for p, t in zip(primals, tangents):
        if p.shape != t.shape:
            raise ValueError("[jvp] Input shape does not match shape of tangent.")
    return _core._jvp(lambda xs: _outputs_list(fun(*xs), "jvp"), primals, tangents)


# ---------------------------------------------------------------- grad


def value_and_grad(
    fun: Callable,
    argnums: Optional[Union[int, Sequence[int]]] = None,
    argnames: Union[str, Sequence[str]] = [],
) -> Callable:
    """Returns a function which computes the value and gradient of ``fun``.

    The function passed to :func:`value_and_grad` should return either a
    scalar loss or a tuple whose first element is a scalar loss and whose
    other elements can be anything (auxiliary values, returned as they
    are and not differentiated).

    .. code-block:: python

        import cmx.core as mx

        def mse(params, inputs, targets):
            outputs = forward(params, inputs)
            return (outputs - targets).square().mean()

        # Returns lvalue, dlvalue/dparams
        lvalue, grads = mx.value_and_grad(mse)(params, inputs, targets)

        def lasso(params, inputs, targets, a=1.0, b=1.0):
            outputs = forward(params, inputs)
            mse = (outputs - targets).square().mean()
            l1 = mx.abs(outputs - targets).mean()
            return a * mse + b * l1, mse, l1

        (loss, mse, l1), grads = mx.value_and_grad(lasso)(params, inputs, targets)

    Args:
        fun (Callable): A function which takes a variable number of
            :class:`array` or trees of :class:`array` and returns a scalar
            output :class:`array` or a tuple the first element of which
            should be a scalar :class:`array`.
        argnums (int or list(int), optional): Specify the index (or indices)
            of the positional arguments of ``fun`` to compute the gradient
            with respect to. If neither ``argnums`` nor ``argnames`` are
            provided ``argnums`` defaults to ``0`` indicating ``fun``'s first
            argument.
        argnames (str or list(str), optional): Specify keyword arguments of
            ``fun`` to compute gradients with respect to. It defaults to [] so
            no gradients for keyword arguments by default.

    Returns:
        Callable: A function which returns a tuple where the first element
        is the output of `fun` and the second element is the gradients
        w.r.t. the loss.
    """
    run = _grad_fn(fun, argnums, argnames, "[value_and_grad]", False)

    @functools.wraps(fun)
    def value_and_grad_fn(*args, **kwargs):
        return run(args, kwargs)

    return value_and_grad_fn


def grad(
    fun: Callable,
    argnums: Optional[Union[int, Sequence[int]]] = None,
    argnames: Union[str, Sequence[str]] = [],
) -> Callable:
    """Returns a function which computes the gradient of ``fun``.

    Args:
        fun (Callable): A function which takes a variable number of
            :class:`array` or trees of :class:`array` and returns
            a scalar output :class:`array`.
        argnums (int or list(int), optional): Specify the index (or indices)
            of the positional arguments of ``fun`` to compute the gradient
            with respect to. If neither ``argnums`` nor ``argnames`` are
            provided ``argnums`` defaults to ``0`` indicating ``fun``'s first
            argument.
        argnames (str or list(str), optional): Specify keyword arguments of
            ``fun`` to compute gradients with respect to. It defaults to [] so
            no gradients for keyword arguments by default.

    Returns:
        Callable: A function which has the same input arguments as ``fun`` and
        returns the gradient(s).
    """
    run = _grad_fn(fun, argnums, argnames, "[grad]", True)

    @functools.wraps(fun)
    def grad_fn(*args, **kwargs):
        return run(args, kwargs)[1]

    return grad_fn


def _argnums_argnames(argnums, argnames, tag):
    """argnums and argnames as MLX reads them: a sorted list of ints and a
    set of names; argnums defaults to [0] when neither is given."""
    if isinstance(argnames, str):
        names = {argnames}
    elif isinstance(argnames, (list, tuple, set, frozenset)) and all(
        isinstance(n, str) for n in argnames
    ):
        names = set(argnames)
    else:
        raise TypeError(
            f"{tag} argnames must be a str or a sequence of str, got "
            f"{_type_name(argnames)}."
        )
    if argnums is None:
        nums = [] if names else [0]
    elif isinstance(argnums, int):
        nums = [argnums]
    elif isinstance(argnums, (list, tuple)) and all(isinstance(a, int) for a in argnums):
        nums = list(argnums)
    else:
        raise TypeError(
            f"{tag} argnums must be an int or a sequence of ints, got "
            f"{_type_name(argnums)}."
        )
    if not nums and not names:
        raise ValueError(f"{tag} Gradient wrt no argument requested")
    nums.sort()
    if nums and nums[0] < 0:
        raise ValueError(
            f"{tag} Can't compute the gradient of negative argument index {nums[0]}"
        )
    for a, b in zip(nums, nums[1:]):
        if a == b:
            raise ValueError(f"{tag} Duplicate argument index {a} is not allowed.")
    return nums, names


def _check_value(out, tag, scalar_only):
    """MLX's checks of what a function being differentiated returned."""
    if isinstance(out, array):
        return
    if scalar_only:
        raise ValueError(
            f"{tag} The return value of the function whose gradient we want "
            f"to compute should be a scalar array; but {_type_name(out)} was "
            "returned."
        )
    if not isinstance(out, tuple):
        raise ValueError(
            f"{tag} The return value of the function whose gradient we want "
            "to compute should be either a scalar array or a tuple with the "
            "first value being a scalar array (Union[array, tuple[array, Any, "
            f"...]]); but {_type_name(out)} was returned."
        )
    if len(out) == 0:
        raise ValueError(
            f"{tag} The return value of the function whose gradient we want "
            "to compute should be either a scalar array or a non-empty tuple. "
            "The first value should be a scalar array and the rest can be "
            "anything. Instead, we got an empty tuple."
        )
    if not isinstance(out[0], array):
        raise ValueError(
            f"{tag} The return value of the function whose gradient we want "
            "to compute should be either a scalar array or a tuple with the "
            "first value being a scalar array (Union[array, tuple[array, Any, "
            "...]]); but it was a tuple with the first value being of type "
            f"{_type_name(out[0])} ."
        )


def _grad_fn(fun, argnums, argnames, tag, scalar_only):
    """The body shared by grad and value_and_grad: run(args, kwargs) ->
    (value, gradients) with MLX's structure of both."""
    if not callable(fun):
        raise TypeError(f"{tag} fun must be callable, got {_type_name(fun)}.")
    nums, names = _argnums_argnames(argnums, argnames, tag)

    def run(args, kwargs):
        if nums and nums[-1] >= len(args):
            raise ValueError(
                f"{tag} Can't compute the gradient of argument index {nums[-1]} "
                f"because the function is called with only {len(args)} "
                "positional arguments."
            )
        for n in names:
            if n not in kwargs:
                given = "".join(f"{k}," for k in kwargs)
                raise ValueError(
                    f"{tag} Can't compute the gradient of keyword argument "
                    f"'{n}' because the function is called with the following "
                    f"keyword arguments {{{given}}}"
                )
        # The differentiated trees: positional ones in argnums order, then
        # keyword ones in the order the call passed them (as MLX).
        keys = [k for k in kwargs if k in names]
        trees = [args[i] for i in nums] + [kwargs[k] for k in keys]
        counts, leaves, defs = [], [], []
        for t in trees:
            ls, d = _flatten(t, strict=True)
            counts.append(len(ls))
            leaves += ls
            defs.append(d)
        box = {}

        def flat(xs):
            records = []
            a = list(args)
            kw = dict(kwargs)
            slots = [(a, i) for i in nums] + [(kw, k) for k in keys]
            pos = 0
            for (container, key), c in zip(slots, counts):
                container[key], recs = _fill(container[key], xs[pos : pos + c])
                records += recs
                pos += c
            try:
                out = fun(*a, **kw)
            finally:
                _restore(records)
            _check_value(out, tag, scalar_only)
            outs, box["def"] = _flatten(out, strict=False)
            loss = outs[0]
            if loss.ndim != 0:
                raise ValueError(
                    f"{tag} The function to differentiate must return a "
                    f"scalar (a 0-d array), but its output has shape "
                    f"{_shape_str(loss.shape)}: gradients are taken of a "
                    "scalar loss. Reduce the output first (e.g. with "
                    "mx.sum or mx.mean), or use mx.vjp with a cotangent of "
                    "the output's shape."
                )
            return outs

        outs, grads = _core._value_and_grad(flat, leaves)
        value = _unflatten(box["def"], outs)
        parts, k = [], 0
        for c, d in zip(counts, defs):
            parts.append(_unflatten(d, grads[k : k + c]))
            k += c
        if len(nums) == 1:
            positional = parts[0]
        elif nums:
            positional = tuple(parts[: len(nums)])
        else:
            positional = None
        if not names:
            return value, positional
        named = {k: g for k, g in zip(keys, parts[len(nums) :])}
        return value, (positional, named)

    return run


# ---------------------------------------------------------------- vmap


def _flat_axes(tree, axes, output):
    """axes (an int, None, or a prefix tree of tree) as one axis per array
    leaf of tree (None: not mapped), checked against each leaf's rank as
    MLX does; output axes may also name the position after the last."""
    flat = []
    saw_tuple = False
    extra = 1 if output else 0
    where = " output " if output else " "

    def axis_of(a, x):
        nd = x.ndim + extra
        ax = a + nd if a < 0 else a
        if ax < 0 or ax >= nd:
            raise IndexError(
                f"[vmap] Invalid{where}vectorization axis {ax} for array with "
                f"shape {_shape_str(x.shape)}"
            )
        return ax

    def visit(x, a):
        nonlocal saw_tuple
        if not isinstance(x, array):
            raise ValueError("[vmap] The arguments should contain only arrays")
        if a is None:
            flat.append(None)
        elif isinstance(a, int):
            flat.append(axis_of(a, x))
        elif isinstance(a, tuple):
            # MLX also takes a one-element tuple as the axis of an array.
            saw_tuple = True
            if len(a) == 1 and a[0] is None:
                flat.append(None)
            elif len(a) == 1 and isinstance(a[0], int):
                flat.append(axis_of(a[0], x))
            else:
                raise ValueError("[vmap] axis must be int or None.")
        else:
            raise ValueError("[vmap] axis must be int or None.")

    _visit_prefix(tree, axes, visit)
    if saw_tuple and not isinstance(tree, array):
        raise ValueError("[vmap] axis must be int or None.")
    return flat


def _plain_axes(args, in_axes):
    """The flat in_axes of array arguments when they need no tree handling
    (every argument an array, in_axes an int, None or a tuple of one int or
    None per argument, each axis in range), else None: the general path
    then checks everything and raises MLX's errors."""
    n = len(args)
    if type(in_axes) is tuple:
        if len(in_axes) != n or n == 1:  # MLX's 1-tuple form: general path
            return None
        axes = list(in_axes)
    elif in_axes is None or type(in_axes) is int:
        axes = [in_axes] * n
    else:
        return None
    for x, a in zip(args, axes):
        if type(x) is not array:
            return None
        if a is not None and (type(a) is not int or not -x.ndim <= a < x.ndim):
            return None
    return axes


def vmap(fun: Callable, in_axes: object = 0, out_axes: object = 0) -> Callable:
    """Returns a vectorized version of ``fun``.

    Args:
        fun (Callable): A function which takes a variable number of
            :class:`array` or a tree of :class:`array` and returns
            a variable number of :class:`array` or a tree of :class:`array`.
        in_axes (int, optional): An integer or a valid prefix tree of the
            inputs to ``fun`` where each node specifies the vmapped axis. If
            the value is ``None`` then the corresponding input(s) are not
            vmapped. Defaults to ``0``.
        out_axes (int, optional): An integer or a valid prefix tree of the
            outputs of ``fun`` where each node specifies the vmapped axis.
            If the value is ``None`` then the corresponding output(s) are
            not vmapped: they must not depend on a vmapped input (a
            ValueError otherwise) and come back as ``fun`` computed them.
            Outputs that do not depend on a vmapped input but get an
            integer axis are repeated along it. Defaults to ``0``.

    Returns:
        Callable: The vectorized function.
    """
    if not callable(fun):
        raise TypeError(f"[vmap] fun must be callable, got {_type_name(fun)}.")

    @functools.wraps(fun)
    def vmap_fn(*args):
        # Plain array arguments skip the tree machinery (a few microseconds
        # a call, which matters for small vmapped functions).
        axes = _plain_axes(args, in_axes)
        if axes is not None:
            inputs, args_def = list(args), None
        else:
            inputs, args_def = _flatten(args, strict=True)
            axes = _flat_axes(args[0] if len(args) == 1 else args, in_axes, False)
            sizes = [x.shape[a] for x, a in zip(inputs, axes) if a is not None]
            for s in sizes:
                if s != sizes[-1]:
                    raise ValueError(
                        f"[vmap] Inconsistent axis sizes: {s} and {sizes[-1]}."
                    )
        box = {}

        def flat(xs):
            out = fun(*(xs if args_def is None else _unflatten(args_def, xs)))
            box["out"] = out
            if type(out) is array:  # a single array: no tree to rebuild
                box["def"] = None
                return [out]
            leaves, box["def"] = _flatten(out, strict=True)
            return leaves

        # The C vmap returns each output with its batch axis first, or with
        # none when it does not depend on a mapped input (told apart by
        # rank against the traced output); the out_axes tree is read
        # against the traced outputs and the axes placed here.
        outs = _core._vmap(flat, inputs, axes, [])
        traced = [box["out"]] if box["def"] is None else None
        if traced is not None and type(out_axes) is int:
            o, a = outs[0], out_axes
            if o.ndim == traced[0].ndim + 1 and -o.ndim <= a < o.ndim:
                return o if a in (0, -o.ndim) else _core.moveaxis(o, 0, a)
        if traced is None:
            traced = _flatten(box["out"], strict=True)[0]
        oaxes = _flat_axes(box["out"], out_axes, True)
        size = next(x.shape[a] for x, a in zip(inputs, axes) if a is not None)
        for i, a in enumerate(oaxes):
            batched = outs[i].ndim == traced[i].ndim + 1
            if a is None:
                if batched:
                    raise ValueError(
                        "[vmap] out_axes is None for an output that depends "
                        "on a vectorized input."
                    )
            elif not batched:  # repeated along the new axis
                e = _core.expand_dims(outs[i], a)
                shape = list(e.shape)
                shape[a] = size
                outs[i] = _core.broadcast_to(e, shape)
            elif a != 0:
                outs[i] = _core.moveaxis(outs[i], 0, a)
        return outs[0] if box["def"] is None else _unflatten(box["def"], outs)

    return vmap_fn


# ---------------------------------------------------------------- custom


class custom_function:
    """Set up a function for custom gradient and vmap definitions.

    This class is meant to be used as a function decorator. Instances are
    callables that behave identically to the wrapped function. However, when
    a function transformation is used (e.g. computing gradients using
    :func:`value_and_grad`) then the functions defined via
    :meth:`custom_function.vjp`, :meth:`custom_function.jvp` and
    :meth:`custom_function.vmap` are used instead of the default
    transformation.

    Note, all custom transformations are optional. Undefined transformations
    fall back to the default behaviour.

    Example:

      .. code-block:: python

          import cmx.core as mx

          @mx.custom_function
          def f(x, y):
              return mx.sin(x) * y

          @f.vjp
          def f_vjp(primals, cotangent, output):
              x, y = primals
              return cotangent * mx.cos(x) * y, cotangent * mx.sin(x)

          @f.jvp
          def f_jvp(primals, tangents):
              x, y = primals
              dx, dy = tangents
              return dx * mx.cos(x) * y + dy * mx.sin(x)

          @f.vmap
          def f_vmap(inputs, axes):
              x, y = inputs
              ax, ay = axes
              if ay != ax and ax is not None:
                  y = y.swapaxes(ay, ax)
              return mx.sin(x) * y, (ax or ay)

    All ``custom_function`` instances behave as pure functions. Namely, any
    variables captured will be treated as constants and no gradients will be
    computed with respect to the captured arrays. For instance:

      .. code-block:: python

          def g(x, y):
              @mx.custom_function
              def f(x):
                  return x * y

              @f.vjp
              def f_vjp(x, dx, fx):
                  # Only x, dx and fx: nothing with respect to y
                  raise ValueError("Abort!")

              return f(x)

          x = mx.array(2.0)
          y = mx.array(3.0)
          print(g(x, y))                      # array(6, dtype=float32)
          print(mx.grad(g)(x, y))             # raises ValueError("Abort!")
          print(mx.grad(g, argnums=1)(x, y))  # array(0, dtype=float32)
    """

    def __init__(self, f: Callable):
        functools.update_wrapper(self, f)
        self._fun = f
        self._vjp = None
        self._jvp = None
        self._vmap = None

    def vjp(self, f: Callable):
        """Define a custom vjp for the wrapped function.

        The vjp function takes three arguments:

        - *primals*: A pytree that contains all the positional arguments to
          the function. It could be a single array, a tuple of arrays or a
          full blown tuple of dicts of arrays etc.
        - *cotangents*: A pytree that matches the structure of the output
          but contains the cotangents (usually the gradients of the loss
          function with respect to the outputs).
        - *outputs*: The outputs of the function to be used to avoid
          recomputing them for the gradient computation.

        Keyword arguments of the call are passed on to it. The vjp function
        should return the same pytree structure as the primals but
        containing the corresponding computed cotangents.
        """
        self._vjp = f
        return self

    def jvp(self, f: Callable):
        """Define a custom jvp for the wrapped function.

        The jvp function takes two arguments:

        - *primals*: A pytree that contains all the positional arguments to
          the function. It could be a single array, a tuple of arrays or a
          full blown tuple of dicts of arrays etc.
        - *tangents*: A pytree that matches the structure of the inputs but
          instead contains the gradients wrt to each input. Tangents could
          be ``None`` if some inputs don't have an associated gradient.

        The jvp function should return the same pytree structure as the
        outputs of the function but containing the tangents.
        """
        self._jvp = f
        return self

    def vmap(self, f: Callable):
        """Define a custom vectorization transformation for the wrapped
        function.

        The vmap function takes two arguments:

        - *inputs*: A pytree that contains all the positional arguments to
          the function. It could be a single array, a tuple of arrays or a
          full blown tuple of dicts of arrays etc.
        - *axes*: A pytree that matches the structure of the inputs but
          instead contains the vectorization axis for each input or
          ``None`` if an input is not vectorized.

        The vmap function should return the outputs of the original
        function but vectorized over the provided axes. It should also
        return a pytree with the vectorization axes of each output. If some
        outputs are no longer vectorized, then their vectorization axis
        should be ``None``.
        """
        self._vmap = f
        return self

    def __call__(self, *args, **kwargs):
        if self._vjp is None and self._jvp is None and self._vmap is None:
            return self._fun(*args, **kwargs)
        leaves, in_def = _flatten((args, kwargs), strict=False)
        n = len(leaves)
        box = {}

        def call(xs):
            a, kw = _unflatten(in_def, xs)
            outs, box["out"] = _flatten(self._fun(*a, **kw), strict=True)
            return outs

        rules = [None, None, None]
        if self._vjp is not None:
            rules[0] = functools.partial(self._run_vjp, in_def, n, box)
        if self._jvp is not None:
            rules[1] = functools.partial(self._run_jvp, in_def, n)
        if self._vmap is not None:
            rules[2] = functools.partial(self._run_vmap, in_def)
        outs = _core._custom_function(call, *rules, leaves)
        return _unflatten(box["out"], outs)

    def _run_vjp(self, in_def, n, box, xs):
        # xs: the n primals, then the cotangents and the outputs.
        a, kw = _unflatten(in_def, xs[:n])
        m = (len(xs) - n) // 2
        cots = _unflatten(box["out"], xs[n : n + m])
        outs = _unflatten(box["out"], xs[n + m :])
        res = self._vjp(a[0] if len(a) == 1 else a, cots, outs, **kw)
        vjps, _ = _flatten(res, strict=False)
        # Arrays among the keyword arguments get no cotangent from a vjp
        # written for the positional ones: zeros.
        if len(vjps) < n and len(vjps) == len(_flatten(a, strict=False)[0]):
            vjps += [_core.zeros_like(x) for x in xs[len(vjps) : n]]
        return vjps

    def _run_jvp(self, in_def, n, xs):
        # xs: the n primals, then n tangents (zeros where none was given;
        # _custom_jvp_argnums says which were given).
        a, kw = _unflatten(in_def, xs[:n])
        if kw:
            raise ValueError(
                "[custom jvp] Function should only accept positional arguments"
            )
        given = set(_core._custom_jvp_argnums())
        it = iter(range(n))

        def tangent(x):
            i = next(it)
            return xs[n + i] if i in given else None

        tans = _map_arrays(a, tangent)
        res = self._jvp(a[0], tans[0]) if len(a) == 1 else self._jvp(a, tans)
        return _flatten(res, strict=False)[0]

    def _run_vmap(self, in_def, xs):
        a, kw = _unflatten(in_def, xs)
        if kw:
            raise ValueError(
                "[custom vmap] Function should only accept positional arguments"
            )
        it = iter(_core._custom_vmap_axes())
        axes = _map_arrays(a, lambda x: next(it))
        res = self._vmap(a[0], axes[0]) if len(a) == 1 else self._vmap(a, axes)
        if not isinstance(res, tuple) or len(res) != 2:
            raise ValueError(
                "[custom vmap] Vmap function should return a tuple with 2 items."
            )
        outs, oaxes = [], []

        def visit(o, ax):
            if not isinstance(o, array):
                return
            if ax is not None and not isinstance(ax, int):
                raise ValueError(
                    "[custom vmap] The vectorization axes should be ints or None."
                )
            outs.append(o)
            oaxes.append(-1 if ax is None else ax)

        _visit_prefix(res[0], res[1], visit)
        return outs + [array(ax, dtype=_core.int32) for ax in oaxes]


def _map_arrays(tree, f):
    """tree with each array leaf x replaced by f(x) (called in leaf order)
    and every other leaf by None (plain containers)."""
    leaves, treedef = _flatten(tree, strict=False)
    return _core._tree_unflatten(treedef, [f(x) for x in leaves], None)


def checkpoint(fun: Callable) -> Callable:
    """Returns a gradient checkpointed version of ``fun``: it computes the
    same outputs, but a gradient through it recomputes ``fun``'s
    intermediate values in the backward pass instead of keeping them from
    the forward pass, trading compute for memory.

    Args:
        fun (Callable): A function which takes arrays or trees of arrays
            (and any other arguments) and returns arrays or trees of
            arrays.

    Returns:
        Callable: A function with the same signature and outputs as ``fun``.
    """

    @functools.wraps(fun)
    def checkpointed(*args, **kwargs):
        leaves, in_def = _flatten((args, kwargs), strict=False)
        box = {}

        def call(xs):
            a, kw = _unflatten(in_def, xs)
            outs, box["out"] = _flatten(fun(*a, **kw), strict=False)
            return outs

        outs = _core._checkpoint(call, leaves)
        return _unflatten(box["out"], outs)

    return checkpointed
