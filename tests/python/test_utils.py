"""cmx.utils tree functions (semantics of mlx.utils)."""
from collections import namedtuple

import pytest

import cmx.core as mx
from cmx.utils import (
    tree_flatten,
    tree_map,
    tree_map_with_path,
    tree_merge,
    tree_reduce,
    tree_unflatten,
)


def test_tree_map():
    tree = {"a": [1, 2, (3, 4)], "b": 5}
    assert tree_map(lambda x: x * 10, tree) == {"a": [10, 20, (30, 40)], "b": 50}
    assert tree_map(lambda x, y: x + y, [1, {"k": 2}], [10, {"k": 20, "extra": 0}]) == [11, {"k": 22}]
    out = tree_map(lambda x: len(x), {"a": [1, 2], "b": [3]}, is_leaf=lambda x: isinstance(x, list))
    assert out == {"a": 2, "b": 1}
    assert isinstance(tree_map(lambda x: x, (1, 2)), tuple)
    P = namedtuple("P", "x y")
    assert tree_map(lambda v: v + 1, P(1, 2)) == P(2, 3)


def test_tree_map_with_arrays():
    params = {"w": mx.array([1.0, 2.0]), "b": [mx.array(3.0)]}
    doubled = tree_map(lambda x: x + x, params)
    assert doubled["w"].tolist() == [2.0, 4.0] and doubled["b"][0].item() == 6.0


def test_tree_map_with_path():
    seen = []
    tree = {"model": [{"w": 0, "b": 1}, {"w": 0, "b": 1}]}
    out = tree_map_with_path(lambda p, x: seen.append(p) or p, tree)
    assert seen == ["model.0.w", "model.0.b", "model.1.w", "model.1.b"]
    assert out == {"model": [{"w": "model.0.w", "b": "model.0.b"}, {"w": "model.1.w", "b": "model.1.b"}]}
    assert tree_map_with_path(lambda p, x: p, [5], path="root") == ["root.0"]


def test_tree_flatten_and_unflatten():
    assert tree_flatten([[[0]]]) == [("0.0.0", 0)]
    assert tree_flatten([[[0]]], ".hello") == [("hello.0.0.0", 0)]
    tree = {"a": [1, {"b": 2}], "c": 3}
    flat = tree_flatten(tree)
    assert flat == [("a.0", 1), ("a.1.b", 2), ("c", 3)]
    assert tree_unflatten(flat) == tree
    assert tree_flatten(tree, destination={}) == {"a.0": 1, "a.1.b": 2, "c": 3}
    assert tree_unflatten({"a.0": 1, "a.1.b": 2, "c": 3}) == tree
    assert tree_unflatten([("hello.world", 42)]) == {"hello": {"world": 42}}
    assert tree_unflatten([("", 7)]) == 7
    # gaps in list indices are filled with empty dicts, indices sort numerically
    assert tree_unflatten([("2", "x"), ("10", "y")])[2] == "x"
    assert tree_unflatten([("1", "x")]) == [{}, "x"]
    assert tree_flatten(5) == [("", 5)]
    assert tree_flatten({"a": [1, 2]}, is_leaf=lambda x: isinstance(x, list)) == [("a", [1, 2])]
    with pytest.raises(ValueError):
        tree_flatten([1], destination=5)


def test_tree_reduce():
    assert tree_reduce(lambda acc, x: acc + x, {"a": [1, 2, 3], "b": [4, 5]}, 0) == 15
    assert tree_reduce(lambda acc, x: acc * x, [2, (3, 4)]) == 24
    assert tree_reduce(max, {"a": [1, 9], "b": 3}) == 9
    assert tree_reduce(lambda a, x: a + len(x), {"p": [1, 2], "q": [3]}, 0,
                       is_leaf=lambda x: isinstance(x, list)) == 3
    total = tree_reduce(lambda acc, x: acc + x.sum() if hasattr(x, "sum") else acc + x,
                        [mx.array([1.0]), 2.0], 0.0)
    assert float(total) == 3.0


def test_tree_merge():
    assert tree_merge({"a": 1}, {"b": [2]}) == {"a": 1, "b": [2]}
    assert tree_merge({"a": {"x": 1}}, {"a": {"y": 2}}) == {"a": {"x": 1, "y": 2}}
    assert tree_merge([1, None], [None, 2]) == [1, 2]
    assert tree_merge({}, {"a": 1}) == {"a": 1}
    assert tree_merge(None, 3) == 3
    with pytest.raises(ValueError, match="no merge function"):
        tree_merge({"a": 1}, {"a": 2})
    assert tree_merge({"a": 1}, {"a": 2}, merge_fn=lambda x, y: x + y) == {"a": 3}


def test_eval_accepts_trees():
    a = mx.array([1.0]) + 1
    b = mx.array([2.0]) + 1
    mx.eval({"x": [a, (b, "leaf", 3)]}, None)
    mx.eval()
    assert a.item() == 2.0 and b.item() == 3.0
    mx.async_eval([a, {"k": b}])
    assert b.item() == 3.0
