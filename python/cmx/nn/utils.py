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
    distributed group. With a single process (and today, always: cmx has no
    multi-process backend yet) the gradients are returned unchanged.

    Returns:
        The averaged gradients (the same tree).
    """
    dist = getattr(mx, "distributed", None)
    if dist is None:
        return gradients
    group = group or dist.init()
    n = group.size()
    if n == 1:
        return gradients
    from cmx.utils import tree_map

    def avg(g):
        dt = g.dtype
        if communication_type is not None:
            g = g.astype(communication_type)
        return (dist.all_sum(g, group=group) / n).astype(dt)

    return tree_map(avg, gradients)
