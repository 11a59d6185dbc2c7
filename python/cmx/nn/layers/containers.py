"""Sequential, the container layer."""

from .base import Module

__all__ = ["Sequential"]


class Sequential(Module):
    """Calls its modules (or any callables) in order, each on the previous
    one's output; they are kept in ``self.layers``.

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    """

    def __init__(self, *modules):
        super().__init__()
        self.layers = list(modules)

    def __call__(self, x):
        for m in self.layers:
            x = m(x)
        return x
