"""nn.value_and_grad, nn.utils.checkpoint and nn.utils.average_gradients."""

from functools import wraps
from typing import Any, Callable, Optional

import cmx.core as mx

from .layers.base import Module

__all__ = ["value_and_grad", "checkpoint", "average_gradients"]


def value_and_grad(model: Module, fn: Callable):
    """Wraps ``fn(*args, **kwargs)`` so that calling the result returns
    ``(fn's value, gradients)``, the gradients being taken with respect to
    ``model.trainable_parameters()`` (a tree of the same structure).

    ``fn`` reads the parameters through the model: the wrapper installs the
    differentiated copies in the model while ``fn`` runs.

    Args:
        model (Module): The module whose trainable parameters are
            differentiated.
        fn (callable): The function to differentiate, usually a loss taking
            the model and data.

    Returns:
        callable: ``(*args, **kwargs) -> (value, grads)``.
    """
    return _over_trainable(model, fn, mx.value_and_grad)


def _over_trainable(module: Module, fn: Callable, transform: Callable):
    """fn(*args) made a function of module's trainable parameters, passed
    through transform, and called with the module's current ones."""

    def inner(params, *args, **kwargs):
        module.update(params)
        return fn(*args, **kwargs)

    transformed = transform(inner)

    @wraps(fn)
    def wrapped(*args, **kwargs):
        return transformed(module.trainable_parameters(), *args, **kwargs)

    return wrapped


def checkpoint(module: Module, fn: Optional[Callable] = None):
    """Wraps ``fn`` (default: ``module.__call__``) so that its activations
    are recomputed in the backward pass instead of being kept (``mx.checkpoint``
    over the module's trainable parameters).

    Returns:
        callable: Same signature as ``fn``.
    """
    if fn is None:
        fn = module.__call__
    return _over_trainable(module, fn, mx.checkpoint)


def average_gradients(gradients: Any, group: Any = None,
                      all_reduce_size: int = 32 * 1024**2,
                      communication_type: Optional[mx.Dtype] = None,
                      communication_stream: Any = None):
    """Averages ``gradients`` (a tree of arrays) over the processes of a
    distributed group (the global group when ``group`` is None), as MLX's.

    Small arrays are flattened and concatenated into buckets of up to
    ``all_reduce_size`` bytes, one ``all_sum`` per bucket (0 or less: one
    per array). ``communication_type`` casts the gradients for the
    communication (back to their dtype after). With one process the
    gradients are returned unchanged.

    Returns:
        The averaged gradients (the same tree).
    """
    from cmx.utils import tree_flatten, tree_map, tree_unflatten

    dist = mx.distributed
    group = group or dist.init()
    n = group.size()
    if n == 1:
        return gradients
    stream = communication_stream

    def all_sum(x):
        kw = {"group": group}
        if stream is not None:
            kw["stream"] = stream
        return dist.all_sum(x, **kw)

    def average(x):
        dt = x.dtype
        if communication_type is not None:
            x = x.astype(communication_type)
        return (all_sum(x) / n).astype(dt)

    if all_reduce_size <= 0:
        return tree_map(average, gradients)
    leaves = tree_flatten(gradients)
    if not leaves:
        return gradients
    keys = [k for k, _ in leaves]
    values = [v for _, v in leaves]
    dtype = values[0].dtype
    if any(v.dtype != dtype for v in values):  # mixed dtypes: one by one
        return tree_map(average, gradients)
    comm = communication_type or dtype
    itemsize = comm.size
    out = [None] * len(values)
    start = 0
    while start < len(values):  # buckets of consecutive leaves
        end, nbytes = start, 0
        while end < len(values) and (end == start or nbytes + values[end].size
                                     * itemsize <= all_reduce_size):
            nbytes += values[end].size * itemsize
            end += 1
        flat = mx.concatenate([v.reshape(-1) for v in values[start:end]])
        flat = average(flat)
        offsets = []
        o = 0
        for v in values[start:end - 1]:
            o += v.size
            offsets.append(o)
        for i, part in zip(range(start, end), mx.split(flat, offsets)):
            out[i] = part.reshape(values[i].shape)
        start = end
    return tree_unflatten(list(zip(keys, out)))
