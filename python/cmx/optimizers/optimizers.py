"""Optimizers, as ``mlx.optimizers``.

An optimizer's ``state`` is a plain dict: ``"step"`` (a uint64 array),
its hyperparameters that can be scheduled (``"learning_rate"`` ...) as
arrays, and per parameter a dict of arrays (``"v"``, ``"m"`` ...) at the
parameter's place in the model's tree. Updates replace the entries of that
dict in place, so ``mx.eval(opt.state)`` and
``mx.compile(..., inputs=state, outputs=state)`` see them.
"""

from typing import Callable, List, Optional, Tuple, Union

import cmx.core as mx
from cmx.utils import tree_flatten, tree_map, tree_merge, tree_reduce, tree_unflatten

__all__ = ["Optimizer", "SGD", "RMSprop", "Adagrad", "AdaDelta", "Adam", "AdamW",
           "Adamax", "Lion", "Adafactor", "MultiOptimizer", "clip_grad_norm"]

Schedule = Union[float, Callable[[mx.array], mx.array]]


def _skeleton(tree):
    """An empty dict at each leaf of tree: where a parameter's state goes."""
    return tree_map(lambda _: {}, tree)


def _merge_structure(params, state):
    """Adds to state (in place where it is a dict) empty per-parameter dicts
    for the parameters of params it lacks; returns the merged state."""
    if isinstance(params, (list, tuple)):
        merged = list(state) if isinstance(state, (list, tuple)) else []
        for i, p in enumerate(params):
            if i < len(merged):
                merged[i] = _merge_structure(p, merged[i])
            else:
                merged.append(_skeleton(p))
        return type(params)(merged)
    if isinstance(params, dict):
        for k, p in params.items():
            state[k] = _merge_structure(p, state[k]) if k in state else _skeleton(p)
        return state
    return state


class Optimizer:
    """The base class of the optimizers. Subclasses define
    ``init_single(parameter, state)`` (fills a parameter's state dict) and
    ``apply_single(gradient, parameter, state)`` (returns the new
    parameter, updating the state dict).

    Args:
        schedulers (dict, optional): Hyperparameter name -> schedule.
    """

    def __init__(self, schedulers=None):
        self._initialized = False
        self._state = {"step": mx.array(0, mx.uint64)}
        self._schedulers = dict(schedulers or {})

    def update(self, model, gradients: dict) -> None:
        """Applies ``gradients`` (a tree like ``model.trainable_parameters()``)
        to ``model``'s parameters, in place."""
        model.update(self.apply_gradients(gradients, model))

    def init(self, parameters: dict) -> None:
        """Creates the state of the parameters in ``parameters`` that have
        none yet (called by the first update; call it yourself to read or
        load the state before training)."""
        _merge_structure(parameters, self._state)

        def fill(p, s):
            if not s:
                self.init_single(p, s)
            return s

        tree_map(fill, parameters, self._state)
        self._initialized = True

    # The per-parameter state arrays, zeros like the parameter at first.
    _state_names: Tuple[str, ...] = ()

    def init_single(self, parameter: mx.array, state: dict) -> None:
        for name in self._state_names:
            state[name] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        raise NotImplementedError

    def apply_gradients(self, gradients: dict, parameters: dict) -> dict:
        """The updated parameters (a tree like ``gradients``), without
        assigning them; advances the step and the schedules.

        Args:
            gradients (dict): The gradients.
            parameters (dict): The current parameters (a superset tree).
        """
        if not self._initialized:
            self.init(gradients)
        for name, schedule in self._schedulers.items():
            self._state[name] = schedule(self.step)
        self._state["step"] = self.step + 1
        return tree_map(self.apply_single, gradients, parameters, self._state)

    @property
    def state(self) -> dict:
        """The optimizer's state dict (a reference)."""
        return self._state

    @state.setter
    def state(self, state: dict) -> None:
        self._initialized = False
        self._state = state

    @property
    def step(self) -> mx.array:
        """The number of updates applied so far (a uint64 array)."""
        return self._state["step"]

    @property
    def learning_rate(self) -> mx.array:
        return self._state["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, mx.array]) -> None:
        self._state["learning_rate"] = mx.array(learning_rate)

    def _maybe_schedule(self, name: str, value: Schedule) -> None:
        """Stores a hyperparameter in the state: an array, or the value of
        a schedule (called again at every update)."""
        if callable(value):
            self._schedulers[name] = value
            self._state[name] = value(self.step)
        else:
            self._state[name] = mx.array(value)

    def _lr(self, gradient):
        return self.learning_rate.astype(gradient.dtype)

    def _rms_step(self, gradient, parameter, v):
        """parameter - lr * gradient / (sqrt(v) + eps)."""
        return parameter - self._lr(gradient) * gradient / (mx.sqrt(v) + self.eps)


class SGD(Optimizer):
    r"""Stochastic gradient descent with momentum:

    .. math::
        v &\leftarrow \mu v + (1 - \tau) (g + \lambda w) \\
        w &\leftarrow w - \eta (g + \mu v \text{ if nesterov else } v)

    Args:
        learning_rate (float or schedule): :math:`\eta`.
        momentum (float): :math:`\mu`. Default ``0``.
        weight_decay (float): :math:`\lambda` (L2). Default ``0``.
        dampening (float): :math:`\tau`. Default ``0``.
        nesterov (bool): Nesterov momentum (needs momentum and no
            dampening). Default ``False``.
    """

    _state_names = ("v",)

    def __init__(self, learning_rate: Schedule, momentum: float = 0.0,
                 weight_decay: float = 0.0, dampening: float = 0.0,
                 nesterov: bool = False):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening.")
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.dampening = dampening
        self.nesterov = nesterov

    def apply_single(self, gradient, parameter, state):
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        lr = self._lr(gradient)
        if self.momentum <= 0:
            return parameter - lr * gradient
        v = self.momentum * state["v"]
        v = v + (1 - self.dampening) * gradient if self.dampening > 0 else v + gradient
        state["v"] = v
        update = gradient + self.momentum * v if self.nesterov else v
        return parameter - lr * update


class RMSprop(Optimizer):
    r"""RMSprop: :math:`v \leftarrow \alpha v + (1 - \alpha) g^2`,
    :math:`w \leftarrow w - \eta g / (\sqrt{v} + \epsilon)`.

    Args:
        learning_rate (float or schedule): :math:`\eta`.
        alpha (float): The smoothing constant. Default ``0.99``.
        eps (float): Default ``1e-8``.
    """

    _state_names = ("v",)

    def __init__(self, learning_rate: Schedule, alpha: float = 0.99, eps: float = 1e-8):
        super().__init__()
        if alpha < 0.0:
            raise ValueError(f"RMSprop alpha should be >=0, {alpha} was provided instead")
        if eps < 0.0:
            raise ValueError(f"RMSprop epsilon should be >0, {eps} was provided instead")
        self._maybe_schedule("learning_rate", learning_rate)
        self.alpha = alpha
        self.eps = eps

    def apply_single(self, gradient, parameter, state):
        state["v"] = self.alpha * state["v"] + (1 - self.alpha) * mx.square(gradient)
        return self._rms_step(gradient, parameter, state["v"])


class Adagrad(Optimizer):
    r"""Adagrad: :math:`v \leftarrow v + g^2`,
    :math:`w \leftarrow w - \eta g / (\sqrt{v} + \epsilon)`.

    Args:
        learning_rate (float or schedule): :math:`\eta`.
        eps (float): Default ``1e-8``.
    """

    _state_names = ("v",)

    def __init__(self, learning_rate: Schedule, eps: float = 1e-8):
        super().__init__()
        if eps < 0.0:
            raise ValueError(f"Epsilon value should be >=0, {eps} was provided instead")
        self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps

    def apply_single(self, gradient, parameter, state):
        state["v"] = state["v"] + mx.square(gradient)
        return self._rms_step(gradient, parameter, state["v"])


class AdaDelta(Optimizer):
    r"""AdaDelta:

    .. math::
        v &\leftarrow \rho v + (1 - \rho) g^2 \\
        \Delta &= g \sqrt{u + \epsilon} / \sqrt{v + \epsilon} \\
        u &\leftarrow \rho u + (1 - \rho) \Delta^2 \\
        w &\leftarrow w - \eta \Delta

    Args:
        learning_rate (float or schedule): :math:`\eta`.
        rho (float): Default ``0.9``.
        eps (float): Default ``1e-6``.
    """

    _state_names = ("v", "u")

    def __init__(self, learning_rate: Schedule, rho: float = 0.9, eps: float = 1e-6):
        super().__init__()
        if rho < 0.0:
            raise ValueError(f"AdaDelta rho should be >=0, {rho} was provided instead")
        if eps < 0.0:
            raise ValueError(f"AdaDelta epsilon should be >0, {eps} was provided instead")
        self._maybe_schedule("learning_rate", learning_rate)
        self.rho = rho
        self.eps = eps

    def apply_single(self, gradient, parameter, state):
        rho, eps = self.rho, self.eps
        v = rho * state["v"] + (1 - rho) * mx.square(gradient)
        d = mx.sqrt(state["u"] + eps) / mx.sqrt(v + eps) * gradient
        u = rho * state["u"] + (1 - rho) * mx.square(d)
        state["v"] = v
        state["u"] = u
        return parameter - self._lr(gradient) * d


class Adam(Optimizer):
    r"""Adam:

    .. math::
        m &\leftarrow \beta_1 m + (1 - \beta_1) g \\
        v &\leftarrow \beta_2 v + (1 - \beta_2) g^2 \\
        w &\leftarrow w - \eta \, m / (\sqrt{v} + \epsilon)

    With ``bias_correction``, :math:`m` and :math:`v` are divided by
    :math:`1 - \beta^t` first.

    Args:
        learning_rate (float or schedule): :math:`\eta`.
        betas (list[float]): :math:`(\beta_1, \beta_2)`. Default
            ``[0.9, 0.999]``.
        eps (float): Default ``1e-8``.
        bias_correction (bool): Default ``False``.
    """

    _state_names = ("m", "v")

    def __init__(self, learning_rate: Schedule, betas: List[float] = [0.9, 0.999],
                 eps: float = 1e-8, bias_correction: bool = False):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.eps = eps
        self.bias_correction = bias_correction

    def apply_single(self, gradient, parameter, state):
        lr = self._lr(gradient)
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = b2 * state["v"] + (1 - b2) * mx.square(gradient)
        state["m"] = m
        state["v"] = v
        if self.bias_correction:
            t = self.step
            c1 = (lr / (1 - b1**t)).astype(gradient.dtype)
            c2 = mx.rsqrt(1 - b2**t).astype(gradient.dtype)
            return parameter - (c1 * m) / (mx.sqrt(v) * c2 + self.eps)
        return parameter - lr * m / (mx.sqrt(v) + self.eps)


class AdamW(Adam):
    r"""Adam with decoupled weight decay: first
    :math:`w \leftarrow w (1 - \eta \lambda)`, then the Adam update.

    Args:
        learning_rate, betas, eps, bias_correction: As :class:`Adam`.
        weight_decay (float): :math:`\lambda`. Default ``0.01``.
    """

    def __init__(self, learning_rate: Schedule, betas: List[float] = [0.9, 0.999],
                 eps: float = 1e-8, weight_decay: float = 0.01,
                 bias_correction: bool = False):
        super().__init__(learning_rate, betas, eps, bias_correction)
        self.weight_decay = weight_decay

    def apply_single(self, gradient, parameter, state):
        lr = self._lr(gradient)
        return super().apply_single(gradient, parameter * (1 - lr * self.weight_decay),
                                    state)


class Adamax(Adam):
    r"""Adamax (Adam with the infinity norm):
    :math:`v \leftarrow \max(\beta_2 v, |g|)`,
    :math:`w \leftarrow w - \eta \, m / (v + \epsilon)`.

    Args:
        learning_rate (float or schedule): :math:`\eta`.
        betas (list[float]): Default ``[0.9, 0.999]``.
        eps (float): Default ``1e-8``.
    """

    def __init__(self, learning_rate: Schedule, betas: List[float] = [0.9, 0.999],
                 eps: float = 1e-8):
        super().__init__(learning_rate, betas, eps)
        if not 0.0 <= eps:
            raise ValueError(f"Epsilon value should be >=0, {eps} was provided instead")

    def apply_single(self, gradient, parameter, state):
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = mx.maximum(b2 * state["v"], mx.abs(gradient))
        state["m"] = m
        state["v"] = v
        return parameter - self._lr(gradient) * m / (v + self.eps)


class Lion(Optimizer):
    r"""Lion: :math:`c = \beta_1 m + (1 - \beta_1) g`,
    :math:`m \leftarrow \beta_2 m + (1 - \beta_2) g`,
    :math:`w \leftarrow w (1 - \eta\lambda) - \eta \operatorname{sign}(c)`.

    Args:
        learning_rate (float or schedule): :math:`\eta`.
        betas (list[float]): Default ``[0.9, 0.99]``.
        weight_decay (float): :math:`\lambda`. Default ``0``.
    """

    _state_names = ("m",)

    def __init__(self, learning_rate: Schedule, betas: List[float] = [0.9, 0.99],
                 weight_decay: float = 0.0):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.weight_decay = weight_decay

    def apply_single(self, gradient, parameter, state):
        lr = self._lr(gradient)
        b1, b2 = self.betas
        c = b1 * state["m"] + (1 - b1) * gradient
        state["m"] = b2 * state["m"] + (1 - b2) * gradient
        if self.weight_decay > 0:
            parameter = (1 - lr * self.weight_decay) * parameter
        return parameter - lr * mx.sign(c)


class Adafactor(Optimizer):
    r"""Adafactor (Shazeer and Stern, 2018): Adam-like steps whose second
    moment of matrices is kept factored as row and column averages.

    Args:
        learning_rate (float or schedule, optional): Used when
            ``relative_step`` is ``False``.
        eps (tuple[float, float]): Added to the squared gradient, and the
            floor of the parameter scale. Default ``(1e-30, 1e-3)``.
        clip_threshold (float): Clips the update's RMS. Default ``1.0``.
        decay_rate (float): The second moment's decay exponent. Default ``-0.8``.
        beta_1 (float, optional): Keep a first moment with this decay.
        weight_decay (float): Default ``0``.
        scale_parameter (bool): Scale the step by the parameter's RMS.
            Default ``True``.
        relative_step (bool): Step size ``min(1e-2, 1/sqrt(t))`` (ignoring
            ``learning_rate``). Default ``True``.
        warmup_init (bool): With ``relative_step``, ``min(1e-6 t, 1/sqrt(t))``.
            Default ``False``.
    """

    def __init__(self, learning_rate: Optional[Schedule] = None,
                 eps: Tuple[float, float] = (1e-30, 1e-3), clip_threshold: float = 1.0,
                 decay_rate: float = -0.8, beta_1: Optional[float] = None,
                 weight_decay: float = 0.0, scale_parameter: bool = True,
                 relative_step: bool = True, warmup_init: bool = False):
        super().__init__()
        if learning_rate is not None:
            self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps
        self.clip_threshold = clip_threshold
        self.decay_rate = decay_rate
        self.beta_1 = beta_1
        self.weight_decay = weight_decay
        self.scale_parameter = scale_parameter
        self.relative_step = relative_step
        self.warmup_init = warmup_init

    def init_single(self, parameter, state):
        if parameter.ndim >= 2:
            shape = tuple(parameter.shape)
            state["exp_avg_sq_row"] = mx.zeros(shape[:-1], dtype=parameter.dtype)
            state["exp_avg_sq_col"] = mx.zeros(shape[:-2] + shape[-1:], dtype=parameter.dtype)
        else:
            state["exp_avg_sq"] = mx.zeros_like(parameter)
        if self.beta_1 is not None:
            state["exp_avg"] = mx.zeros_like(parameter)

    @staticmethod
    def _rms(x):
        return mx.sqrt(mx.mean(mx.square(x)))

    def _step_size(self, step, parameter_rms):
        if self.relative_step:
            floor = 1e-6 * step if self.warmup_init else 1e-2
            size = mx.minimum(floor, mx.rsqrt(step))
        else:
            size = self.learning_rate
        if self.scale_parameter:
            return mx.maximum(self.eps[1], parameter_rms) * size
        return size

    def apply_single(self, gradient, parameter, state):
        step = self.step
        lr = self._step_size(step, self._rms(parameter)).astype(gradient.dtype)
        beta_2 = 1.0 - mx.power(step, self.decay_rate).astype(gradient.dtype)
        sq = mx.square(gradient) + self.eps[0]
        if gradient.ndim >= 2:
            row = beta_2 * state["exp_avg_sq_row"] + (1 - beta_2) * mx.mean(sq, axis=-1)
            col = beta_2 * state["exp_avg_sq_col"] + (1 - beta_2) * mx.mean(sq, axis=-2)
            state["exp_avg_sq_row"] = row
            state["exp_avg_sq_col"] = col
            r = mx.rsqrt(row / mx.mean(row, axis=-1, keepdims=True))
            c = mx.rsqrt(col)
            update = mx.expand_dims(r, -1) * mx.expand_dims(c, -2) * gradient
        else:
            v = beta_2 * state["exp_avg_sq"] + (1 - beta_2) * sq
            state["exp_avg_sq"] = v
            update = mx.rsqrt(v) * gradient
        update = update / mx.maximum(1.0, self._rms(update) / self.clip_threshold)
        update = lr * update
        if self.beta_1 is not None:
            update = self.beta_1 * state["exp_avg"] + (1 - self.beta_1) * update
            state["exp_avg"] = update
        if self.weight_decay != 0:
            parameter = parameter + parameter * (-self.weight_decay * lr)
        return parameter - update


class MultiOptimizer(Optimizer):
    """Routes each parameter to one of several optimizers: the first whose
    filter accepts ``filter(path, gradient)``, else the last optimizer.
    The state is ``{"states": [each optimizer's state]}``.

    Args:
        optimizers (list[Optimizer]): The optimizers.
        filters (list[callable]): One fewer than the optimizers.
    """

    def __init__(self, optimizers, filters: list = []):
        super().__init__()
        self._state = {}
        if len(filters) != len(optimizers) - 1:
            raise ValueError(
                f"Given {len(filters)} filters but {len(optimizers) - 1} needed."
            )
        self.optimizers = optimizers
        self.filters = list(filters) + [lambda *args, **kwargs: True]

    def _split(self, tree):
        parts = [[] for _ in self.optimizers]
        for path, g in tree_flatten(tree):
            for i, f in enumerate(self.filters):
                if f(path, g):
                    parts[i].append((path, g))
                    break
        return [tree_unflatten(p) for p in parts]

    def init(self, parameters: dict) -> None:
        for opt, part in zip(self.optimizers, self._split(parameters)):
            opt.init(part)

    def apply_gradients(self, gradients: dict, parameters: dict) -> dict:
        out = {}
        for opt, part in zip(self.optimizers, self._split(gradients)):
            out = tree_merge(out, opt.apply_gradients(part, parameters))
        return out

    @property
    def state(self) -> dict:
        return {"states": [o.state for o in self.optimizers]}

    @state.setter
    def state(self, state: dict) -> None:
        if "states" not in state or len(state["states"]) != len(self.optimizers):
            raise ValueError("Invalid state provided")
        for o, s in zip(self.optimizers, state["states"]):
            o.state = s

    @property
    def learning_rate(self):
        return self.optimizers[0].learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        for o in self.optimizers:
            o.learning_rate = learning_rate


def clip_grad_norm(grads, max_norm: float):
    """Scales ``grads`` (a tree of arrays) so their global L2 norm is at
    most ``max_norm``.

    Returns:
        tuple: ``(clipped gradients, the norm before clipping)``.
    """
    sq = tree_reduce(lambda acc, g: acc + mx.sum(mx.square(g)), grads, 0.0)
    total = mx.sqrt(sq)
    factor = mx.minimum(max_norm / (total + 1e-6), 1.0)
    return tree_map(lambda g: g * factor, grads), total


