"""Utilities for Python trees (nested lists, tuples and dicts), as
``mlx.utils``.

A *tree* is any nesting of :class:`list`, :class:`tuple` and :class:`dict`;
everything else is a leaf (unless ``is_leaf`` says otherwise). Paths name
leaves with dot notation: ``{"a": [x, y]}`` has leaves ``a.0`` and ``a.1``.
"""
from collections import defaultdict
from itertools import zip_longest
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

__all__ = [
    "tree_map",
    "tree_map_with_path",
    "tree_flatten",
    "tree_unflatten",
    "tree_reduce",
    "tree_merge",
]


def _is_node(tree: Any) -> bool:
    return isinstance(tree, (list, tuple, dict))


def tree_map(
    fn: Callable, tree: Any, *rest: Any, is_leaf: Optional[Callable] = None
) -> Any:
    """Applies ``fn`` to the leaves of ``tree`` and returns a tree of the
    same structure with the results.

    If ``rest`` is given, every tree in it must have at least the structure
    of ``tree``; their corresponding leaves are passed as extra positional
    arguments to ``fn`` (like :func:`itertools.starmap`).

    Args:
        fn (callable): The function that processes the leaves.
        tree (Any): The main Python tree.
        rest (tuple[Any]): Extra trees iterated together with ``tree``.
        is_leaf (callable, optional): Returns ``True`` for objects that are
            leaves even though they are lists, tuples or dicts.

    Returns:
        A Python tree with the new values returned by ``fn``.

    Example:
        >>> tree_map(lambda x: x * 2, {"a": [1, 2], "b": 3})
        {'a': [2, 4], 'b': 6}
    """
    if is_leaf is not None and is_leaf(tree):
        return fn(tree, *rest)
    if isinstance(tree, (list, tuple)):
        children = [
            tree_map(fn, child, *(r[i] for r in rest), is_leaf=is_leaf)
            for i, child in enumerate(tree)
        ]
        return type(tree)(children) if not _is_namedtuple(tree) else type(tree)(*children)
    if isinstance(tree, dict):
        return {
            k: tree_map(fn, child, *(r[k] for r in rest), is_leaf=is_leaf)
            for k, child in tree.items()
        }
    return fn(tree, *rest)


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def tree_map_with_path(
    fn: Callable,
    tree: Any,
    *rest: Any,
    is_leaf: Optional[Callable] = None,
    path: Optional[Any] = None,
) -> Any:
    """Like :func:`tree_map`, but ``fn`` receives the dot-separated path of
    each leaf as its first argument.

    Args:
        fn (callable): Called as ``fn(path, leaf, *rest_leaves)``.
        tree (Any): The main Python tree.
        rest (tuple[Any]): Extra trees iterated together with ``tree``.
        is_leaf (callable, optional): Returns ``True`` for leaves.
        path (str, optional): Prefix of the paths.

    Returns:
        A Python tree with the new values returned by ``fn``.

    Example:
        >>> tree = {"model": [{"w": 0, "b": 1}, {"w": 0, "b": 1}]}
        >>> _ = tree_map_with_path(lambda path, _: print(path), tree)
        model.0.w
        model.0.b
        model.1.w
        model.1.b
    """
    if is_leaf is not None and is_leaf(tree):
        return fn(path, tree, *rest)
    prefix = f"{path}." if path else ""
    if isinstance(tree, (list, tuple)):
        children = [
            tree_map_with_path(
                fn, child, *(r[i] for r in rest), is_leaf=is_leaf, path=f"{prefix}{i}"
            )
            for i, child in enumerate(tree)
        ]
        return type(tree)(children) if not _is_namedtuple(tree) else type(tree)(*children)
    if isinstance(tree, dict):
        return {
            k: tree_map_with_path(
                fn, child, *(r[k] for r in rest), is_leaf=is_leaf, path=f"{prefix}{k}"
            )
            for k, child in tree.items()
        }
    return fn(path, tree, *rest)


def tree_flatten(
    tree: Any,
    prefix: str = "",
    is_leaf: Optional[Callable] = None,
    destination: Optional[Union[List[Tuple[str, Any]], Dict[str, Any]]] = None,
) -> Union[List[Tuple[str, Any]], Dict[str, Any]]:
    """Flattens a Python tree to a list of ``(path, leaf)`` pairs.

    Paths use dot notation; the first character of ``prefix`` is dropped
    (so ``prefix=".hello"`` names leaves ``hello.…``).

    Args:
        tree (Any): The Python tree to be flattened.
        prefix (str): A prefix for the keys; its first character is always
            discarded.
        is_leaf (callable, optional): Returns ``True`` for leaves.
        destination (list or dict, optional): Where to put the pairs (a dict
            maps paths to leaves). Default: a new list.

    Returns:
        The ``destination`` with the flat representation of the tree.

    Example:
        >>> tree_flatten([[[0]]])
        [('0.0.0', 0)]
        >>> tree_flatten([[[0]]], ".hello")
        [('hello.0.0.0', 0)]
    """
    if destination is None:
        destination = []
    if isinstance(destination, dict):
        add = destination.__setitem__
    elif isinstance(destination, list):
        add = lambda k, v: destination.append((k, v))  # noqa: E731
    else:
        raise ValueError("Destination should be either a list or a dictionary or None")

    def walk(node: Any, path: str) -> None:
        if is_leaf is None or not is_leaf(node):
            if isinstance(node, (list, tuple)):
                for i, child in enumerate(node):
                    walk(child, f"{path}.{i}")
                return
            if isinstance(node, dict):
                for k, child in node.items():
                    walk(child, f"{path}.{k}")
                return
        add(path[1:], node)

    walk(tree, prefix)
    return destination


def tree_unflatten(tree: Union[List[Tuple[str, Any]], Dict[str, Any]]) -> Any:
    """Recreates a Python tree from its flat representation.

    Levels whose keys are all integers become lists (gaps are filled with
    empty dicts), other levels become dicts.

    Args:
        tree (list[tuple[str, Any]] or dict[str, Any]): The flat
            representation, as returned by :func:`tree_flatten`.

    Returns:
        A Python tree.

    Example:
        >>> tree_unflatten([("hello.world", 42)])
        {'hello': {'world': 42}}
    """
    items = list(tree.items()) if isinstance(tree, dict) else list(tree)
    if len(items) == 1 and items[0][0] == "":
        return items[0][1]
    if not items:
        return {}

    children: Dict[str, list] = defaultdict(list)
    for key, value in items:
        head, _, tail = key.partition(".")
        children[head].append((tail, value))

    if all(k.isdigit() for k in children):
        result: list = []
        for i, k in sorted((int(k), k) for k in children):
            result.extend({} for _ in range(i - len(result)))
            result.append(tree_unflatten(children[k]))
        return result
    return {k: tree_unflatten(v) for k, v in children.items()}


def tree_reduce(
    fn: Callable, tree: Any, initializer: Any = None, is_leaf: Optional[Callable] = None
) -> Any:
    """Reduces the leaves of a tree with ``fn(accumulator, leaf)``.

    Args:
        fn (callable): Takes the accumulator and a leaf, returns the new
            accumulator.
        tree (Any): The Python tree to reduce.
        initializer (Any, optional): The starting value; without it the
            first leaf starts the reduction.
        is_leaf (callable, optional): Returns ``True`` for leaves.

    Returns:
        Any: The accumulated value.

    Example:
        >>> tree_reduce(lambda acc, x: acc + x, {"a": [1, 2, 3], "b": [4, 5]}, 0)
        15
    """
    if is_leaf is not None and is_leaf(tree):
        return tree if initializer is None else fn(initializer, tree)
    acc = initializer
    if isinstance(tree, (list, tuple)):
        for item in tree:
            acc = tree_reduce(fn, item, acc, is_leaf)
        return acc
    if isinstance(tree, dict):
        for item in tree.values():
            acc = tree_reduce(fn, item, acc, is_leaf)
        return acc
    return tree if acc is None else fn(acc, tree)


def tree_merge(tree_a: Any, tree_b: Any, merge_fn: Optional[Callable] = None) -> Any:
    """Merges two trees into one holding the leaves of both: a deep
    ``dict.update``. Empty containers and ``None`` count as missing.

    Args:
        tree_a (Any): The first Python tree.
        tree_b (Any): The second Python tree.
        merge_fn (callable, optional): Merges two leaves found at the same
            place; without it such a clash raises ``ValueError``.

    Returns:
        The merged tree.

    Example:
        >>> tree_merge({"a": 1}, {"b": [2]})
        {'a': 1, 'b': [2]}
    """
    if _is_node(tree_a) and len(tree_a) == 0:
        tree_a = None
    if _is_node(tree_b) and len(tree_b) == 0:
        tree_b = None
    if tree_a is None:
        return tree_b
    if tree_b is None:
        return tree_a
    if isinstance(tree_a, (list, tuple)) and isinstance(tree_b, (list, tuple)):
        return type(tree_a)(
            tree_merge(a, b, merge_fn) for a, b in zip_longest(tree_a, tree_b)
        )
    if isinstance(tree_a, dict) and isinstance(tree_b, dict):
        keys = list(tree_a.keys()) + [k for k in tree_b.keys() if k not in tree_a]
        return {k: tree_merge(tree_a.get(k), tree_b.get(k), merge_fn) for k in keys}
    if merge_fn is None:
        raise ValueError(
            "Trees contain elements at the same locations but no merge "
            "function was provided"
        )
    return merge_fn(tree_a, tree_b)
