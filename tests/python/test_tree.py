"""The one pytree walker (python/src/tree.c): flatten to array leaves and
a structure, unflatten, in-place fill with undo records, prefix visits,
and eval over trees."""
import collections

import pytest

import cmx.core as mx

Point = collections.namedtuple("Point", "x y")


class MyDict(dict):
    pass


def test_flatten_unflatten_round_trip():
    a, b, c = mx.array(1), mx.array(2), mx.array(3)
    tree = {"w": [a, (b, "tag", 4)], "z": MyDict(k=c), "n": None}
    leaves, treedef = mx._tree_flatten(tree, False)
    assert leaves[0] is a and leaves[1] is b and leaves[2] is c and len(leaves) == 3
    new = [mx.array(10), mx.array(20), mx.array(30)]
    out = mx._tree_unflatten(treedef, new)
    assert out["w"][0] is new[0] and out["w"][1][0] is new[1]
    assert out["w"][1][1:] == ("tag", 4) and out["n"] is None
    assert type(out["z"]) is dict and out["z"]["k"] is new[2]  # plain containers
    assert type(out["w"][1]) is tuple
    # The structure keeps no array: the leaves can be freed independently.
    assert all(not isinstance(v, mx.array) for v in _all_leaves(treedef))


def _all_leaves(t):
    if isinstance(t, (list, tuple)):
        return [x for v in t for x in _all_leaves(v)]
    if isinstance(t, dict):
        return [x for v in t.values() for x in _all_leaves(v)]
    return [t]


def test_flatten_strict_and_subclasses():
    with pytest.raises(ValueError, match=r"\[tree_flatten\] The argument should contain only arrays"):
        mx._tree_flatten([mx.array(1), 2], True)
    p = Point(mx.array(1), mx.array(2))
    leaves, d = mx._tree_flatten(p, True)
    assert len(leaves) == 2
    # MLX keeps tuple subclasses (namedtuples through _make).
    assert type(mx._tree_unflatten(d, leaves)) is Point
    with pytest.raises(ValueError, match="Not enough leaves"):
        mx._tree_unflatten(d, leaves[:1])


def test_unflatten_other_replaces_non_array_leaves():
    leaves, d = mx._tree_flatten([mx.array(1), "x", {"k": 3}], False)
    assert mx._tree_unflatten(d, [7], None) == [7, None, {"k": None}]


def test_fill_updates_lists_and_dicts_in_place():
    a, b, c = mx.array(1), mx.array(2), mx.array(3)
    inner = [a, b]
    tree = {"l": inner, "t": (c, 5)}
    new = [mx.array(10), mx.array(20), mx.array(30)]
    out, records = mx._tree_fill(tree, new)
    assert out is tree and tree["l"] is inner and inner[0] is new[0]
    assert tree["t"][0] is new[2] and tree["t"][1] == 5  # tuple rebuilt
    assert {(id(r[0]), r[1]) for r in records} == {(id(inner), 0), (id(inner), 1), (id(tree), "t")}


def test_visit_prefix():
    seen = []
    tree = {"a": [mx.array(1), mx.array(2)], "b": mx.array(3)}
    mx._tree_visit(tree, {"a": 0, "b": [1]}, lambda leaf, p: seen.append(p))
    assert seen == [0, 0, [1]]
    with pytest.raises(ValueError, match="not a valid prefix"):
        mx._tree_visit([mx.array(1)], [0, 1], lambda leaf, p: None)
    with pytest.raises(ValueError, match="prefix tree"):
        mx._tree_visit({"a": mx.array(1)}, {"b": 0}, lambda leaf, p: None)
    with pytest.raises(ZeroDivisionError):
        mx._tree_visit([mx.array(1)], 0, lambda leaf, p: 1 / 0)


def test_eval_walks_trees():
    x = mx.array(1.0) + 1
    y = mx.array(2.0) * 3
    mx.eval({"a": [x, "skip", (y, None)]}, 5)
    assert x.item() == 2.0 and y.item() == 6.0
    deep = x
    for _ in range(100):
        deep = [deep]
    mx.eval(deep)
