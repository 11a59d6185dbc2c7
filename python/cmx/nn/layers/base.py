"""nn.Module: the base class of every layer, as ``mlx.nn.Module``.

A module *is* a dict: its arrays, lists, tuples, dicts and submodules are
the dict's items (reachable as attributes too), everything else is a plain
attribute. So ``model.state`` is the module itself, a tree of arrays that
``mx.eval`` and ``mx.compile(inputs=..., outputs=...)`` can walk and update
in place.
"""

import textwrap
from typing import Any, Callable, List, Optional, Tuple, Union

import cmx.core as mx
from cmx.utils import tree_flatten, tree_unflatten

__all__ = ["Module"]

# Values stored as dict items rather than plain attributes.
_TREE_TYPES = (mx.array, dict, list, tuple)


def _merge_tree(dst, new, strict: bool, replace, what: str) -> None:
    """Walks new (dicts and lists) alongside dst, putting new's value where
    replace(current, value) holds and descending into dst's dicts and lists
    elsewhere. With strict, names dst lacks and values that fit nowhere
    raise ValueError."""
    if isinstance(new, (dict, list)):
        items = new.items() if isinstance(new, dict) else enumerate(new)
        for k, v in items:
            if isinstance(new, dict) and k not in dst:
                if strict:
                    raise ValueError(f'Module does not have {what} named "{k}".')
                continue
            cur = dst[k]
            if replace(cur, v):
                dst[k] = v
            elif isinstance(cur, (dict, list)):
                _merge_tree(cur, v, strict, replace, what)
            elif strict:
                raise ValueError(f"Received invalid type: {type(v).__name__}.")
    elif strict:
        raise ValueError(f"Received invalid type: {type(new).__name__}.")


class Module(dict):
    """The base class of neural network layers and models.

    Parameters are the arrays among the module's items (in nested dicts and
    lists too) whose names do not start with an underscore; submodules are
    the modules among its items. Subclasses set them as attributes in
    ``__init__`` and define ``__call__``.

    Example:
        >>> class MLP(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.layers = [nn.Linear(2, 8), nn.Linear(8, 1)]
        ...     def __call__(self, x):
        ...         return self.layers[1](nn.relu(self.layers[0](x)))
    """

    __call__: Callable

    def __init__(self):
        self._no_grad = set()
        self._training = True

    # ------------------------------------------------------------ attributes

    def __getattr__(self, key: str):
        if key in self:
            return self[key]
        raise AttributeError(
            f"{type(self).__name__!r} object has no attribute {key!r}"
        )

    def __setattr__(self, key: str, val: Any):
        if isinstance(val, _TREE_TYPES):
            if key in self.__dict__:
                del self.__dict__[key]
            self[key] = val
        else:
            if key in self:
                del self[key]
            super().__setattr__(key, val)

    def __delattr__(self, key: str):
        if key in self:
            del self[key]
        else:
            super().__delattr__(key)

    @property
    def training(self) -> bool:
        """Whether the module is in training mode (see :meth:`train`)."""
        return self._training

    @property
    def state(self) -> "Module":
        """The module's state: the module itself (a dict of its arrays and
        submodules). Unlike :meth:`parameters` this is a reference, so
        updating it updates the module; pass it to ``mx.compile`` as
        ``inputs``/``outputs``."""
        return self

    # ------------------------------------------------------------- printing

    def _extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = tree_flatten(self.children(), is_leaf=self.is_module)
        lines = [f"{type(self).__name__}({self._extra_repr()}"]
        for k, v in children:
            lines.append(textwrap.indent(f"({k}): {v!r}", "  "))
        if children:
            lines.append(")")
            return "\n".join(lines)
        return lines[0] + ")"

    # -------------------------------------------------------------- filters

    @staticmethod
    def is_module(value: Any) -> bool:
        return isinstance(value, Module)

    @staticmethod
    def valid_child_filter(module: "Module", key: str, value: Any) -> bool:
        return isinstance(value, (dict, list))

    @staticmethod
    def valid_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        return isinstance(value, (dict, list, mx.array)) and not key.startswith("_")

    @staticmethod
    def trainable_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        return (
            Module.valid_parameter_filter(module, key, value)
            and key not in module._no_grad
        )

    def filter_and_map(
        self,
        filter_fn: Callable[["Module", str, Any], bool],
        map_fn: Optional[Callable] = None,
        is_leaf_fn: Optional[Callable[["Module", str, Any], bool]] = None,
    ) -> dict:
        """A tree of the module's items that pass ``filter_fn``, with
        ``map_fn`` applied to the leaves.

        Args:
            filter_fn: ``filter_fn(module, key, value)`` keeps an item; keys
                of items nested in lists and dicts are dotted paths from the
                module (``layers.0``).
            map_fn: Applied to each kept leaf (default: identity).
            is_leaf_fn: ``is_leaf_fn(module, key, value)`` stops the descent
                (default: anything but modules, dicts and lists is a leaf).

        Returns:
            dict: The filtered tree; submodules become plain dicts.
        """
        map_fn = map_fn or (lambda x: x)
        if is_leaf_fn is None:

            def is_leaf_fn(m, k, v):
                return not isinstance(v, (Module, dict, list))

        def unwrap(module, key, value):
            if is_leaf_fn(module, key, value):
                return map_fn(value)
            if isinstance(value, Module):
                return value.filter_and_map(filter_fn, map_fn, is_leaf_fn)
            if isinstance(value, dict):
                out = {}
                for k, v in value.items():
                    path = f"{key}.{k}"
                    if filter_fn(module, path, v):
                        out[k] = unwrap(module, path, v)
                return out
            if isinstance(value, list):
                out = []
                for i, v in enumerate(value):
                    path = f"{key}.{i}"
                    if filter_fn(module, path, v):
                        out.append(unwrap(module, path, v))
                return out
            raise RuntimeError("[Module.filter_and_map] unexpected leaf type")

        return {
            k: unwrap(self, k, v) for k, v in self.items() if filter_fn(self, k, v)
        }

    # ---------------------------------------------------------------- trees

    def parameters(self) -> dict:
        """All parameters (arrays whose names do not start with ``_``) as a
        tree of dicts and lists mirroring the module."""
        return self.filter_and_map(self.valid_parameter_filter)

    def trainable_parameters(self) -> dict:
        """The parameters that are not frozen (see :meth:`freeze`)."""
        return self.filter_and_map(self.trainable_parameter_filter)

    def children(self) -> dict:
        """The direct submodules, in their dicts and lists."""
        return self.filter_and_map(
            self.valid_child_filter, is_leaf_fn=lambda m, k, v: isinstance(v, Module)
        )

    def leaf_modules(self) -> dict:
        """The submodules that have no submodules, in their dicts and lists."""

        def is_leaf(m, k, v):
            return isinstance(v, Module) and not tree_flatten(
                v.children(), is_leaf=self.is_module
            )

        return self.filter_and_map(self.valid_child_filter, is_leaf_fn=is_leaf)

    def apply_to_modules(self, apply_fn: Callable[[str, "Module"], Any]) -> "Module":
        """Calls ``apply_fn(path, module)`` on this module (path ``""``) and
        every submodule, depth first.

        Returns:
            The module itself.
        """
        stack = [("", self)]
        while stack:
            prefix, mod = stack.pop()
            apply_fn(prefix, mod)
            prefix = "." + prefix if prefix else ""
            stack.extend(tree_flatten(mod.children(), prefix=prefix, is_leaf=self.is_module))
        return self

    def named_modules(self) -> List[Tuple[str, "Module"]]:
        """``(path, module)`` for this module and all submodules, in the
        order of :meth:`apply_to_modules`."""
        out = []
        self.apply_to_modules(lambda k, m: out.append((k, m)))
        return out

    def modules(self) -> List["Module"]:
        """This module and all its submodules, in the order of
        :meth:`named_modules`."""
        return [m for _, m in self.named_modules()]

    def update(self, parameters: dict, strict: bool = True) -> "Module":
        """Replaces parameters with the arrays of ``parameters``, a tree like
        :meth:`parameters` that may hold only some of them.

        Args:
            parameters (dict): The new parameters.
            strict (bool): Raise ``ValueError`` for names the module lacks
                and for non-array replacements of arrays. Default ``True``.

        Returns:
            The module itself.
        """

        def replace(cur, v):
            return isinstance(cur, mx.array) and (isinstance(v, mx.array) or not strict)

        _merge_tree(self, parameters, strict, replace, "parameter")
        return self

    def update_modules(self, modules: dict, strict: bool = True) -> "Module":
        """Replaces submodules with those of ``modules``, a tree like
        :meth:`children` that may hold only some of them.

        Args:
            modules (dict): The new submodules.
            strict (bool): Raise ``ValueError`` for names the module lacks
                and for non-module replacements of modules. Default ``True``.

        Returns:
            The module itself.
        """

        def replace(cur, v):
            return isinstance(cur, Module) and isinstance(v, Module)

        _merge_tree(self, modules, strict, replace, "sub-module")
        return self

    def apply(
        self,
        map_fn: Callable[[mx.array], mx.array],
        filter_fn: Optional[Callable[["Module", str, Any], bool]] = None,
    ) -> "Module":
        """Replaces each parameter ``p`` (or each item passing ``filter_fn``)
        with ``map_fn(p)``.

        Returns:
            The module itself.
        """
        filter_fn = filter_fn or self.valid_parameter_filter
        return self.update(self.filter_and_map(filter_fn, map_fn))

    # ------------------------------------------------------ freeze and modes

    def _local_parameter_keys(self) -> List[str]:
        own = self.filter_and_map(
            lambda m, k, v: not isinstance(v, Module)
            and m.valid_parameter_filter(m, k, v)
        )
        return [k for k, _ in tree_flatten(own)]

    def _change_frozen(self, freeze: bool, recurse: bool, keys, strict: bool):
        if isinstance(keys, str):
            keys = [keys]

        def change(_, m):
            local = m._local_parameter_keys() if keys is None else list(keys)
            if strict:
                for k in local:
                    if k.split(".", 1)[0] not in m:
                        raise KeyError(f"Module doesn't contain member {k}.")
            if freeze:
                m._no_grad.update(local)
            else:
                m._no_grad.difference_update(local)

        if recurse:
            self.apply_to_modules(change)
        else:
            change("", self)
        return self

    def freeze(
        self,
        *,
        recurse: bool = True,
        keys: Optional[Union[str, List[str]]] = None,
        strict: bool = False,
    ) -> "Module":
        """Freezes parameters: :meth:`trainable_parameters` leaves them out
        (so ``nn.value_and_grad`` computes no gradient for them).

        Args:
            recurse (bool): Freeze the submodules' parameters too.
            keys (str or list[str], optional): The names to freeze (default:
                all of each module's own parameters).
            strict (bool): Raise ``KeyError`` for a name a module lacks.

        Returns:
            The module itself.
        """
        return self._change_frozen(True, recurse, keys, strict)

    def unfreeze(
        self,
        *,
        recurse: bool = True,
        keys: Optional[Union[str, List[str]]] = None,
        strict: bool = False,
    ) -> "Module":
        """Undoes :meth:`freeze` for ``keys`` (default: all parameters);
        arguments as :meth:`freeze`.

        Returns:
            The module itself.
        """
        return self._change_frozen(False, recurse, keys, strict)

    def train(self, mode: bool = True) -> "Module":
        """Sets training mode (``True``) or evaluation mode on this module
        and all submodules (Dropout and BatchNorm behave differently).

        Returns:
            The module itself.
        """

        def set_mode(_, m):
            m._training = mode

        return self.apply_to_modules(set_mode)

    def eval(self) -> "Module":
        """Sets evaluation mode: ``train(False)``."""
        return self.train(False)

    def set_dtype(
        self,
        dtype: mx.Dtype,
        predicate: Optional[Callable[[mx.Dtype], bool]] = lambda x: mx.issubdtype(
            x, mx.floating
        ),
    ) -> None:
        """Casts the parameters whose dtype passes ``predicate`` (default:
        the floating ones) to ``dtype``."""
        if predicate is None:
            self.apply(lambda x: x.astype(dtype))
        else:
            self.apply(lambda x: x.astype(dtype) if predicate(x.dtype) else x)

    # -------------------------------------------------------------- weights

    def load_weights(
        self,
        file_or_weights: Union[str, List[Tuple[str, mx.array]]],
        strict: bool = True,
    ) -> "Module":
        """Loads parameters from a ``.npz`` or ``.safetensors`` file, or from
        a list of ``(dotted name, array)`` pairs.

        Args:
            file_or_weights: A path or a list of pairs.
            strict (bool): Require exactly the model's parameters with the
                same shapes (``ValueError`` otherwise). Default ``True``.

        Returns:
            The module itself.
        """
        weights = file_or_weights
        if isinstance(weights, str):
            weights = list(mx.load(weights).items())
        else:
            weights = list(weights)
        if strict:
            new = dict(weights)
            cur = dict(tree_flatten(self.parameters()))
            extra = [k for k in new if k not in cur]
            if extra:
                raise ValueError(
                    f"Received {len(extra)} parameters not in model: \n"
                    + ",\n".join(sorted(extra))
                    + "."
                )
            missing = [k for k in cur if k not in new]
            if missing:
                raise ValueError(
                    f"Missing {len(missing)} parameters: \n"
                    + ",\n".join(sorted(missing))
                    + "."
                )
            for k, v in cur.items():
                w = new[k]
                if not isinstance(w, mx.array):
                    raise ValueError(
                        f"Expected mx.array but received {type(w)} for parameter {k}"
                    )
                if tuple(w.shape) != tuple(v.shape):
                    raise ValueError(
                        f"Expected shape {tuple(v.shape)} but received shape "
                        f"{tuple(w.shape)} for parameter {k}"
                    )
        if weights:
            self.update(tree_unflatten(weights), strict=False)
        return self

    def save_weights(self, file: str) -> None:
        """Saves the parameters to ``file``: ``.npz`` (``mx.savez``) or
        ``.safetensors``; another extension is a ``ValueError``."""
        params = dict(tree_flatten(self.parameters()))
        if file.endswith(".npz"):
            mx.savez(file, **params)
        elif file.endswith(".safetensors"):
            mx.save_safetensors(file, params)
        else:
            raise ValueError(
                f"Unsupported file extension for {file}. Use '.npz' or '.safetensors'."
            )
