"""cmx.optimizers: optimizers, learning-rate schedules and gradient
clipping over cmx.core, mirroring ``mlx.optimizers``.

Example:
    >>> opt = optim.Adam(learning_rate=1e-3)
    >>> loss, grads = loss_and_grad(model, x, y)
    >>> opt.update(model, grads)
    >>> mx.eval(model.parameters(), opt.state)
"""

from .optimizers import *  # noqa: F401,F403
from .schedulers import *  # noqa: F401,F403
