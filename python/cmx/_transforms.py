"""Function transforms with MLX's signatures: grad, value_and_grad, vjp,
jvp, vmap, custom_function and checkpoint.

This layer handles pytrees (lists, tuples, dicts of arrays), argnums and
argnames; the transforms themselves run in C on flat lists of arrays
(cmx.core._vjp, _jvp, _vmap, _value_and_grad, _custom_function,
_checkpoint). cmx/__init__.py installs these functions on cmx.core.
"""

import functools
from typing import Any, Callable, List, Optional, Sequence, Union

from . import core as _core

array = _core.array


# ---------------------------------------------------------------- trees


def _is_tree_node(x):
    return isinstance(x, (list, tuple, dict))


def _flatten(tree, what="argument", strict=True):
    """Leaves of tree (depth first) and a function rebuilding a tree of the
    same structure from new leaves. With strict, every leaf must be an
    array; otherwise non-array leaves are kept as constants."""
    leaves = []

    def walk(t):
        if isinstance(t, dict):
            keys = list(t.keys())
            subs = [walk(t[k]) for k in keys]
            return lambda it: {k: s(it) for k, s in zip(keys, subs)}
        if isinstance(t, (list, tuple)):
            subs = [walk(v) for v in t]
            kind = type(t)
            if kind is list:
                return lambda it: [s(it) for s in subs]
            if hasattr(t, "_fields"):  # namedtuple
                return lambda it: kind(*[s(it) for s in subs])
            return lambda it: kind(s(it) for s in subs)
        if isinstance(t, array):
            leaves.append(t)
            return lambda it: next(it)
        if strict:
            raise ValueError(
                f"[{what}] Leaves of the arguments to transform must be "
                f"arrays, got {type(t).__name__}."
            )
        return lambda it: t

    build = walk(tree)
    return leaves, lambda new: build(iter(new))


def _flatten_outputs(out, what):
    """Array leaves of a function's output tree (non-array leaves are not
    allowed, as in MLX)."""
    try:
        return _flatten(out, what)
    except ValueError:
        raise ValueError(
            f"[{what}] The function must return an array or a tree of "
            f"arrays, got {type(out).__name__}."
        ) from None


# ---------------------------------------------------------------- vjp / jvp


def vjp(fun: Callable, primals: List[array], cotangents: List[array]):
    """Compute the vector-Jacobian product.

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
        tuple(list(array), list(array)): the outputs of ``fun`` and the
        vector-Jacobian products.
    """
    primals = _as_array_list(primals, "vjp", "primals")
    cotangents = _as_array_list(cotangents, "vjp", "cotangents")

    def flat(args):
        out = fun(*args)
        return [out] if isinstance(out, array) else list(out)

    return _core._vjp(flat, primals, cotangents)


def jvp(fun: Callable, primals: List[array], tangents: List[array]):
    """Compute the Jacobian-vector product.

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
        tuple(list(array), list(array)): the outputs of ``fun`` and the
        Jacobian-vector products.
    """
    primals = _as_array_list(primals, "jvp", "primals")
    tangents = _as_array_list(tangents, "jvp", "tangents")

    def flat(args):
        out = fun(*args)
        return [out] if isinstance(out, array) else list(out)

    return _core._jvp(flat, primals, tangents)


def _as_array_list(xs, op, what):
    if not isinstance(xs, (list, tuple)):
        raise TypeError(f"[{op}] {what} must be a list of arrays.")
    for x in xs:
        if not isinstance(x, array):
            raise TypeError(
                f"[{op}] {what} must be a list of arrays, got "
                f"{type(x).__name__}."
            )
    return list(xs)


# ---------------------------------------------------------------- grad


def value_and_grad(
    fun: Callable,
    argnums: Optional[Union[int, Sequence[int]]] = None,
    argnames: Union[str, Sequence[str]] = [],
):
    """Returns a function which computes the value and gradient of ``fun``.

    The function passed to :func:`value_and_grad` should return either
    a scalar loss or a tuple in which the first element is a scalar
    loss and the remaining elements can be anything (auxiliary outputs,
    passed through without gradients).

    Args:
        fun (Callable): A function which takes a variable number of
            :class:`array` or trees of :class:`array` and returns
            a scalar output :class:`array` or a tuple the first element
            of which should be a scalar :class:`array`.
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
    return _make_grad(fun, argnums, argnames, "value_and_grad", value=True)


def grad(
    fun: Callable,
    argnums: Optional[Union[int, Sequence[int]]] = None,
    argnames: Union[str, Sequence[str]] = [],
):
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
    return _make_grad(fun, argnums, argnames, "grad", value=False)


def _make_grad(fun, argnums, argnames, op, value):
    if not callable(fun):
        raise TypeError(f"[{op}] fun must be callable.")
    if isinstance(argnames, str):
        argnames = [argnames]
    argnames = list(argnames or [])
    if argnums is None:
        nums = [] if argnames else [0]
    elif isinstance(argnums, int):
        nums = [argnums]
    else:
        nums = list(argnums)
        for a in nums:
            if not isinstance(a, int):
                raise TypeError(f"[{op}] argnums must be an int or a sequence of ints.")
    if len(set(nums)) != len(nums):
        raise ValueError(f"[{op}] Duplicate argument index in argnums.")
    if not nums and not argnames:
        raise ValueError(f"[{op}] Must specify at least one argument.")
    inner = _grad_impl(fun, nums, argnames, op)

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        value_out, gpos, named = inner(args, kwargs)
        # As MLX: one positional argnum gives its gradient alone, several a
        # tuple, none None; argnames add a dict: (positional, {name: grad}).
        if len(gpos) == 1:
            positional = gpos[0]
        elif gpos:
            positional = tuple(gpos)
        else:
            positional = None
        g = (positional, named) if argnames else positional
        return (value_out, g) if value else g

    return wrapper


def _grad_impl(fun, nums, argnames, op):
    def run(args, kwargs):
        nargs = len(args)
        pos = []
        for a in nums:
            b = a + nargs if a < 0 else a
            if b < 0 or b >= nargs:
                raise ValueError(
                    f"[{op}] Invalid argument {a} for function with {nargs} "
                    "positional arguments."
                )
            pos.append(b)
        for n in argnames:
            if n not in kwargs:
                raise ValueError(
                    f"[{op}] Can't compute the gradient of argument '{n}': "
                    "it was not passed as a keyword argument."
                )
        trees = [args[a] for a in pos] + [kwargs[n] for n in argnames]
        leaves, rebuild = _flatten(trees, op)
        box = {}

        def flat(xs):
            new = rebuild(xs)
            a = list(args)
            for k, i in enumerate(pos):
                a[i] = new[k]
            kw = dict(kwargs)
            for k, n in enumerate(argnames):
                kw[n] = new[len(pos) + k]
            out = fun(*a, **kw)
            if isinstance(out, array):
                loss, aux = out, None
            elif (
                isinstance(out, (tuple, list))
                and len(out) > 0
                and isinstance(out[0], array)
            ):
                loss, aux = out[0], out[1:]
                box["kind"] = type(out)
            else:
                raise ValueError(
                    f"[{op}] The return value of the function whose gradient "
                    "we want to compute should be either a scalar array or a "
                    "tuple with the first value being a scalar array "
                    "(Union[array, Tuple[array, Any, ...]]); but "
                    f"{type(out).__name__} was returned."
                )
            if loss.size != 1:
                raise ValueError(
                    f"[{op}] The return value of the function whose gradient "
                    "we want to compute should be a scalar array; but an "
                    f"array with shape {tuple(loss.shape)} was returned."
                )
            if aux is None:
                return [loss]
            aux_leaves, aux_rebuild = _flatten(list(aux), op, strict=False)
            box["aux"] = aux_rebuild
            return [loss] + aux_leaves

        outs, grads = _core._value_and_grad(flat, leaves)
        g = rebuild(grads)
        if "kind" in box:
            aux = box["aux"](outs[1:])
            value_out = box["kind"]([outs[0], *aux]) if box["kind"] is list else tuple([outs[0], *aux])
        else:
            value_out = outs[0]
        named = {n: g[len(pos) + k] for k, n in enumerate(argnames)}
        return value_out, g[: len(pos)], named

    return run


# ---------------------------------------------------------------- vmap


def _axes_for(spec, tree, what):
    """Broadcast an axis spec (int, None, or a tree prefix) over tree's
    array leaves; returns the list of axes."""
    if spec is None or isinstance(spec, int):
        leaves, _ = _flatten(tree, "vmap")
        return [spec] * len(leaves)
    if isinstance(spec, (list, tuple)):
        if not isinstance(tree, (list, tuple)) or len(tree) != len(spec):
            raise ValueError(
                f"[vmap] The {what} tree does not match the structure of the "
                "inputs."
            )
        out = []
        for s, t in zip(spec, tree):
            out += _axes_for(s, t, what)
        return out
    if isinstance(spec, dict):
        if not isinstance(tree, dict) or set(spec) != set(tree):
            raise ValueError(
                f"[vmap] The {what} tree does not match the structure of the "
                "inputs."
            )
        out = []
        for k in tree:
            out += _axes_for(spec[k], tree[k], what)
        return out
    raise ValueError(f"[vmap] Invalid {what}: {spec!r}.")


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
            Defaults to ``0``.

    Returns:
        Callable: The vectorized function.
    """
    if not callable(fun):
        raise TypeError("[vmap] fun must be callable.")

    @functools.wraps(fun)
    def wrapper(*args):
        args = list(args)
        spec = in_axes
        if isinstance(spec, (list, tuple)) and not isinstance(spec, int):
            if len(spec) != len(args):
                raise ValueError(
                    f"[vmap] The number of in_axes ({len(spec)}) does not "
                    f"match the number of arguments ({len(args)})."
                )
        leaves, rebuild = _flatten(args, "vmap")
        axes = _axes_for(spec, args, "in_axes") if not isinstance(spec, (list, tuple)) else _axes_for(list(spec), args, "in_axes")
        box = {}

        def flat(xs):
            out = fun(*rebuild(xs))
            out_leaves, out_rebuild = _flatten_outputs(out, "vmap")
            box["rebuild"] = out_rebuild
            box["tree"] = out
            return out_leaves

        # The outputs' structure is known only after tracing: pass a
        # single out axis when out_axes is an int.
        if isinstance(out_axes, int):
            oax = [out_axes]
            outs = _core._vmap(flat, leaves, axes, oax)
        else:
            # Trace once for the structure, then map with per-leaf axes.
            probe = {}

            def flat_probe(xs):
                res = flat(xs)
                probe["n"] = len(res)
                return res

            _ = _core._vmap(flat_probe, leaves, axes, [0])
            oax = _axes_for(out_axes, box["tree"], "out_axes")
            if any(a is None for a in oax):
                raise ValueError("[vmap] out_axes may not be None.")
            outs = _core._vmap(flat, leaves, axes, oax)
        return box["rebuild"](outs)

    return wrapper


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
    computed with respect to the captured arrays.
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

        The vjp function should return the same pytree structure as the
        primals but containing the corresponding computed cotangents.
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
        return a pytree with the vectorized axes for each output. If some
        outputs are no longer vectorized, then their vectorized axis should
        be ``None``.
        """
        self._vmap = f
        return self

    def __call__(self, *args, **kwargs):
        leaves, rebuild = _flatten(list(args), "custom_function")
        box = {}

        def fun(xs):
            out = self._fun(*rebuild(xs), **kwargs)
            ol, orebuild = _flatten_outputs(out, "custom_function")
            box["out"] = orebuild
            box["single"] = isinstance(out, array)
            return ol

        n = len(leaves)

        def unflat_out(xs):
            r = box["out"](xs)
            return r

        vjp_fn = None
        if self._vjp is not None:

            def vjp_fn(xs):
                prim = rebuild(xs[:n])
                m = (len(xs) - n) // 2
                cots = unflat_out(xs[n : n + m])
                outs = unflat_out(xs[n + m :])
                p = prim[0] if len(prim) == 1 else tuple(prim)
                res = self._vjp(p if len(prim) != 1 else tuple(prim), cots, outs)
                if isinstance(res, array):
                    res = (res,)
                rl, _ = _flatten(list(res), "custom_function.vjp")
                if len(rl) != n:
                    raise ValueError(
                        "[custom_function] The vjp function should return "
                        "one cotangent per primal."
                    )
                return rl

        jvp_fn = None
        if self._jvp is not None:

            def jvp_fn(xs):
                prim = rebuild(xs[:n])
                tans = rebuild(xs[n:])
                res = self._jvp(tuple(prim), tuple(tans))
                rl, _ = _flatten(res if not isinstance(res, array) else [res], "custom_function.jvp")
                return rl

        vmap_fn = None
        if self._vmap is not None:

            def vmap_fn(xs):
                axes = _core._custom_vmap_axes()
                outs, oaxes = self._vmap(tuple(rebuild(xs)), tuple(axes))
                ol, _ = _flatten(outs if not isinstance(outs, array) else [outs], "custom_function.vmap")
                if isinstance(oaxes, (int, type(None))):
                    oaxes = [oaxes]
                oaxes = [-1 if a is None else a for a in oaxes]
                return ol + [array(a, dtype=_core.int32) for a in oaxes]

        outs = _core._custom_function(fun, vjp_fn, jvp_fn, vmap_fn, leaves)
        return box["out"](outs)


def checkpoint(fun: Callable) -> Callable:
    """Returns a gradient checkpointed version of ``fun``: the backward
    pass recomputes ``fun``'s intermediate values from its inputs instead
    of keeping them, trading compute for memory.

    Args:
        fun (Callable): A function which takes arrays or trees of arrays
            and returns arrays or trees of arrays.

    Returns:
        Callable: A function with the same signature and outputs as ``fun``.
    """

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        leaves, rebuild = _flatten(list(args), "checkpoint")
        box = {}

        def flat(xs):
            out = fun(*rebuild(xs), **kwargs)
            ol, orebuild = _flatten_outputs(out, "checkpoint")
            box["out"] = orebuild
            return ol

        outs = _core._checkpoint(flat, leaves)
        return box["out"](outs)

    return wrapper
