"""Tensor-parallel layers over an ``mx.distributed`` group, as
``mlx.nn.layers.distributed``.

An :class:`AllToShardedLinear` keeps this rank's rows of the weight (a
slice of the output features) and takes the full input; a
:class:`ShardedToAllLinear` keeps this rank's columns (a slice of the input
features) and sums the partial products over the group, so a pair of them
splits a block with one collective in the forward pass (and one, in the
first layer, in the backward pass). ``segments`` shards a fused weight
(QKV: ``segments=3``) segment by segment.
"""

import math
from functools import lru_cache
from typing import Callable, Optional, Union

import cmx.core as mx
from .base import Module

__all__ = ["AllToShardedLinear", "ShardedToAllLinear",
           "QuantizedAllToShardedLinear", "QuantizedShardedToAllLinear",
           "shard_linear", "shard_inplace", "sum_gradients"]


@lru_cache
def sum_gradients(group):
    """The identity in the forward pass whose vjp sums the cotangent over
    ``group`` (the input of an all-to-sharded layer is replicated, so its
    gradient is the sum of every rank's part)."""
    if group.size() == 1:
        return lambda x: x

    @mx.custom_function
    def f(x):
        return x

    @f.vjp
    def f_vjp(x, dx, _):
        return mx.distributed.all_sum(dx, group=group)

    return f


def _group(group):
    return group or mx.distributed.init()


def _split_points(n, segments):
    if isinstance(segments, int):
        if n % segments:
            raise ValueError(f"[shard] axis of size {n} does not split into "
                             f"{segments} segments")
        return [n * i // segments for i in range(1, segments)]
    return list(segments)


def _shard(w, axis, group, segments=1):
    """This rank's part of w along axis, taken from every segment."""
    n, r = group.size(), group.rank()
    parts = mx.split(w, _split_points(w.shape[axis], segments), axis=axis) \
        if segments != 1 else [w]
    out = []
    for p in parts:
        size = p.shape[axis]
        if size % n:
            raise ValueError(f"[shard] axis {axis} of size {size} is not "
                             f"divisible by the group size {n}")
        k = size // n
        idx = [slice(None)] * p.ndim
        idx[axis] = slice(r * k, (r + 1) * k)
        out.append(p[tuple(idx)])
    return mx.concatenate(out, axis=axis) if len(out) > 1 else out[0]


def _check_div(what, n, size):
    if n % size:
        raise ValueError(f"[{what}] {n} is not divisible by the group size "
                         f"{size}")


class _ShardedLinear(Module):
    """A Linear layer's shard: all-to-sharded layers keep rows of the
    weight (the output features), sharded-to-all ones its columns."""

    _SHARDING = ""

    def __init__(self, input_dims, output_dims, bias, group):
        super().__init__()
        scale = math.sqrt(1.0 / input_dims)
        self.group = _group(group)
        n = self.group.size()
        rows = self._SHARDING == "all-to-sharded"
        _check_div(type(self).__name__, output_dims if rows else input_dims,
                   n)
        shape = ((output_dims // n, input_dims) if rows
                 else (output_dims, input_dims // n))
        self.weight = mx.random.uniform(-scale, scale, shape)
        if bias:
            self.bias = mx.random.uniform(-scale, scale,
                                          (output_dims // n if rows
                                           else output_dims,))

    def _extra_repr(self) -> str:
        out, inp = self.weight.shape
        n = self.group.size()
        if self._SHARDING == "all-to-sharded":
            out *= n
        else:
            inp *= n
        return f"input_dims={inp}, output_dims={out}, bias={'bias' in self}"

    @classmethod
    def from_linear(cls, linear_layer: Module, *, segments=1, group=None):
        """This rank's shard of ``linear_layer`` (``segments``: the number
        of fused parts of its weight, each sharded on its own)."""
        group = _group(group)
        out, inp = linear_layer.weight.shape
        layer = cls(inp, out, "bias" in linear_layer, group)
        layer.update(_unflatten(_shard_params(
            linear_layer.parameters(), cls._SHARDING, group, segments)))
        return layer


class AllToShardedLinear(_ShardedLinear):
    """Each process applies its rows of the affine map, so the output is
    sharded over the group along its last axis; the input gradient is
    summed over the group.

    Args:
        input_dims (int), output_dims (int), bias (bool): As Linear.
        group (mx.distributed.Group, optional): Default: the global group.
    """

    _SHARDING = "all-to-sharded"

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group=None):
        super().__init__(input_dims, output_dims, bias, group)

    def __call__(self, x):
        x = sum_gradients(self.group)(x)
        if "bias" in self:
            return mx.addmm(self["bias"], x, self["weight"].T)
        return x @ self["weight"].T


class ShardedToAllLinear(_ShardedLinear):
    """Each process applies its columns of the affine map to its slice of
    the input features; the partial results are summed over the group, so
    every process gets the full output.

    Args:
        input_dims (int), output_dims (int), bias (bool): As Linear.
        group (mx.distributed.Group, optional): Default: the global group.
    """

    _SHARDING = "sharded-to-all"

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group=None):
        super().__init__(input_dims, output_dims, bias, group)

    def __call__(self, x):
        x = mx.distributed.all_sum(x @ self["weight"].T, group=self.group)
        if "bias" in self:
            x = x + self["bias"]
        return x


class _QuantizedSharded(Module):
    def __init__(self, group, group_size, bits, mode):
        super().__init__()
        self.group = _group(group)
        self.group_size = group_size
        self.bits = bits
        self.mode = mode

    def unfreeze(self, *args, **kwargs):
        super().unfreeze(*args, **kwargs)
        self.freeze(recurse=False)
        return self

    def _qmm(self, x):
        return mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                   biases=self["biases"], transpose=True,
                                   group_size=self.group_size, bits=self.bits)

    @classmethod
    def _from(cls, layer, sharding, segments, group):
        group = _group(group)
        q = cls.__new__(cls)
        _QuantizedSharded.__init__(q, group, layer.group_size, layer.bits,
                                   getattr(layer, "mode", "affine"))
        for k, v in _shard_params(layer.parameters(), sharding, group,
                                  segments).items():
            setattr(q, k, v)
        q.freeze()
        return q


class QuantizedAllToShardedLinear(_QuantizedSharded):
    """AllToShardedLinear with this rank's rows quantized (frozen)."""

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group_size: int = 64, bits: int = 4, group=None,
                 mode: str = "affine"):
        super().__init__(group, group_size, bits, mode)
        n = self.group.size()
        _check_div("QuantizedAllToShardedLinear", output_dims, n)
        scale = math.sqrt(1.0 / input_dims)
        w = mx.random.uniform(-scale, scale, (output_dims // n, input_dims))
        self.weight, self.scales, self.biases = mx.quantize(w, group_size,
                                                            bits)
        if bias:
            self.bias = mx.zeros((output_dims // n,))
        self.freeze()

    def __call__(self, x):
        y = self._qmm(sum_gradients(self.group)(x))
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_quantized_linear(cls, quantized_linear_layer: Module, *,
                              segments=1, group=None):
        return cls._from(quantized_linear_layer, "all-to-sharded", segments,
                         group)


class QuantizedShardedToAllLinear(_QuantizedSharded):
    """ShardedToAllLinear with this rank's columns quantized (frozen)."""

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group_size: int = 64, bits: int = 4, group=None,
                 mode: str = "affine"):
        super().__init__(group, group_size, bits, mode)
        n = self.group.size()
        _check_div("QuantizedShardedToAllLinear", input_dims, n)
        scale = math.sqrt(1.0 / input_dims)
        w = mx.random.uniform(-scale, scale, (output_dims, input_dims // n))
        self.weight, self.scales, self.biases = mx.quantize(w, group_size,
                                                            bits)
        if bias:
            self.bias = mx.zeros((output_dims,))
        self.freeze()

    def __call__(self, x):
        y = mx.distributed.all_sum(self._qmm(x), group=self.group)
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_quantized_linear(cls, quantized_linear_layer: Module, *,
                              segments=1, group=None):
        return cls._from(quantized_linear_layer, "sharded-to-all", segments,
                         group)


def _flatten(tree, prefix=""):
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _flatten(v, f"{prefix}{k}.")
    elif isinstance(tree, (list, tuple)):
        for i, v in enumerate(tree):
            yield from _flatten(v, f"{prefix}{i}.")
    else:
        yield prefix[:-1], tree


def _rule(sharding, segments):
    """A string sharding as a callable (path, weight) -> (axis, segments):
    all-to-sharded splits weights' and biases' output axis (0 / -1);
    sharded-to-all splits weights' input axis (-1) and keeps the bias."""
    if callable(sharding):
        return sharding
    if sharding not in ("all-to-sharded", "sharded-to-all"):
        raise ValueError(f"[shard] sharding must be 'all-to-sharded' or "
                         f"'sharded-to-all', got {sharding!r}")

    def rule(path, w):
        name = path.rsplit(".", 1)[-1]
        if sharding == "all-to-sharded":
            return (0 if w.ndim > 1 else -1), segments
        if name == "bias" or w.ndim < 2:
            return None
        return -1, segments

    return rule


def _shard_params(params, sharding, group, segments=1):
    """The flat {path: sharded array} of a parameter tree."""
    rule = _rule(sharding, segments)
    out = {}
    for path, w in _flatten(params):
        if not isinstance(w, mx.array):
            continue
        r = rule(path, w)
        if r is None:
            out[path] = w
            continue
        axis, segs = (r, 1) if isinstance(r, int) else (r[0], r[1])
        out[path] = _shard(w, axis, group, segs)
    return out


def _unflatten(flat):
    tree = {}
    for path, v in flat.items():
        node = tree
        keys = path.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = v

    def fix(t):  # dicts with keys 0..n-1 are lists
        if isinstance(t, dict):
            t = {k: fix(v) for k, v in t.items()}
            if t and all(k.isdigit() for k in t):
                return [t[str(i)] for i in range(len(t))]
        return t

    return fix(tree)


def shard_inplace(module: Module, sharding: Union[str, Callable], *,
                  segments=1, group=None):
    """Shard ``module``'s parameters in place: ``sharding`` is
    'all-to-sharded', 'sharded-to-all', or a callable taking (path, weight)
    and returning None (keep), an axis, or (axis, segments). The module's
    code does not change: for communication to happen, it must do it."""
    group = _group(group)
    module.update(_unflatten(_shard_params(module.parameters(), sharding,
                                           group, segments)))
    return module


def shard_linear(module: Module, sharding: str, *, segments=1, group=None):
    """A new sharded layer from a Linear or QuantizedLinear ``module``
    (which is left unchanged): 'all-to-sharded' gives an
    (Quantized)AllToShardedLinear, 'sharded-to-all' a
    (Quantized)ShardedToAllLinear."""
    from .quantized import QuantizedLinear

    quantized = isinstance(module, QuantizedLinear)
    kinds = {
        ("all-to-sharded", False): AllToShardedLinear.from_linear,
        ("sharded-to-all", False): ShardedToAllLinear.from_linear,
        ("all-to-sharded", True):
            QuantizedAllToShardedLinear.from_quantized_linear,
        ("sharded-to-all", True):
            QuantizedShardedToAllLinear.from_quantized_linear,
    }
    if (sharding, quantized) not in kinds:
        raise ValueError(f"[shard_linear] sharding must be 'all-to-sharded' "
                         f"or 'sharded-to-all', got {sharding!r}")
    return kinds[(sharding, quantized)](module, segments=segments,
                                        group=group)
