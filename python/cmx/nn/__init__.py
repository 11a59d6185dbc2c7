"""cmx.nn: neural network layers, losses and initializers over cmx.core,
mirroring ``mlx.nn``.

Example:
    >>> import cmx.core as mx
    >>> import cmx.nn as nn
    >>> model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    >>> loss_and_grad = nn.value_and_grad(model, lambda m, x: m(x).sum())
"""

from . import init, losses  # noqa: F401
from .layers import *  # noqa: F401,F403
from . import utils  # noqa: F401
from .utils import average_gradients, value_and_grad  # noqa: F401
