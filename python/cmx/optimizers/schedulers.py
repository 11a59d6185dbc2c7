"""Learning-rate schedules: functions of the step (an array) that give the
learning rate. Pass one as an optimizer's ``learning_rate``.

Example:
    >>> lr = optim.cosine_decay(1e-1, 1000)
    >>> opt = optim.SGD(learning_rate=lr)
"""

import math
from typing import Callable, List

import cmx.core as mx

__all__ = ["exponential_decay", "step_decay", "cosine_decay", "linear_schedule",
           "join_schedules"]


def exponential_decay(init: float, decay_rate: float) -> Callable:
    """``init * decay_rate ** step``."""
    return lambda step: init * (decay_rate**step)


def step_decay(init: float, decay_rate: float, step_size: int) -> Callable:
    """``init * decay_rate ** (step // step_size)``."""
    return lambda step: init * (decay_rate ** (step // step_size))


def cosine_decay(init: float, decay_steps: int, end: float = 0.0) -> Callable:
    """Half a cosine from ``init`` at step 0 to ``end`` at ``decay_steps``,
    then ``end``."""

    def schedule(step):
        s = mx.minimum(step, decay_steps)
        decay = 0.5 * (1.0 + mx.cos((math.pi / decay_steps) * s))
        return end + decay * (init - end)

    return schedule


def linear_schedule(init: float, end: float, steps: int) -> Callable:
    """From ``init`` at step 0 linearly to ``end`` at ``steps``, then ``end``."""
    if steps < 1:
        raise ValueError(f"steps must be greater than 0, but got {steps}.")

    def schedule(step):
        s = mx.minimum(step, steps)
        return s * ((end - init) / steps) + init

    return schedule


def join_schedules(schedules: List[Callable], boundaries: List[int]) -> Callable:
    """``schedules[0]`` until step ``boundaries[0]``, then ``schedules[1]``
    (counting its steps from the boundary), and so on."""
    if len(schedules) == 0:
        raise ValueError("Must provide at least 1 schedule.")
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(
            f"Received {len(boundaries)} boundaries but expected {len(schedules) - 1}."
        )

    def schedule(step):
        out = schedules[0](step)
        for b, fn in zip(boundaries, schedules[1:]):
            out = mx.where(step < b, out, fn(step - b))
        return out

    return schedule
