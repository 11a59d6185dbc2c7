"""Loss functions, as ``mlx.nn.losses``. Each takes ``reduction``:
``"none"`` (per element), ``"mean"`` or ``"sum"``."""

import math
from typing import Literal, Optional

import cmx.core as mx

__all__ = [
    "cross_entropy", "binary_cross_entropy", "l1_loss", "mse_loss", "nll_loss",
    "gaussian_nll_loss", "kl_div_loss", "smooth_l1_loss", "triplet_loss",
    "hinge_loss", "huber_loss", "log_cosh_loss", "cosine_similarity_loss",
    "margin_ranking_loss",
]

Reduction = Literal["none", "mean", "sum"]


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return mx.mean(loss)
    if reduction == "sum":
        return mx.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError("Invalid reduction. Must be 'none', 'mean', or 'sum'.")


def _weighted(loss, weights):
    if weights is None:
        return loss
    if tuple(weights.shape) != tuple(loss.shape):
        raise ValueError(
            f"Weights with shape {tuple(weights.shape)} is not the same as "
            f"output loss with shape {tuple(loss.shape)}."
        )
    return loss * weights


def _same_shape(a, b, what_a="predictions", what_b="targets"):
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(
            f"{what_a.capitalize()} shape {tuple(a.shape)} does not match "
            f"{what_b} shape {tuple(b.shape)}."
        )


def _fast_rows(logits, targets):
    """Whether mx.fast.cross_entropy computes this class-index loss:
    floating logits with a non-empty class axis, integer targets."""
    return (mx.issubdtype(logits.dtype, mx.floating)
            and mx.issubdtype(targets.dtype, mx.integer) and logits.ndim >= 1
            and logits.size > 0)


def cross_entropy(logits, targets, weights=None, axis: int = -1,
                  label_smoothing: float = 0.0, reduction: Reduction = "none"):
    r"""Cross entropy :math:`\log\sum_j e^{z_j} - z_y` of unnormalized
    ``logits`` ``z`` along ``axis`` (with probability targets ``t``:
    :math:`\log\sum_j e^{z_j} - \sum_j t_j z_j`, ``z`` shifted by its max).

    Args:
        logits (array): The unnormalized scores.
        targets (array): Class indices (one axis fewer than ``logits``) or
            class probabilities (the shape of ``logits``).
        weights (array, optional): Per-sample weights (the loss's shape).
        axis (int): The class axis. Default ``-1``.
        label_smoothing (float): In ``[0, 1)``: the target distribution
            becomes ``(1 - s) * target + s / classes``. Default ``0``.
        reduction (str): Default ``"none"``.

    Returns:
        array: The loss.
    """
    if label_smoothing < 0 or label_smoothing >= 1:
        raise ValueError(f"Label smoothing must in [0, 1), got {label_smoothing}.")
    probs = targets.ndim == logits.ndim
    ax = axis % logits.ndim
    if (not probs and label_smoothing == 0 and _fast_rows(logits, targets)
            and tuple(targets.shape) == tuple(logits.shape[:ax]) + tuple(logits.shape[ax + 1:])):
        # Class indices: the fused row kernel (one pass per row, float32
        # accumulation), its result in the logits' dtype as the composite's.
        rows = logits if ax == logits.ndim - 1 else mx.moveaxis(logits, ax, -1)
        loss = mx.fast.cross_entropy(rows, targets)
        if loss.dtype != logits.dtype:
            loss = loss.astype(logits.dtype)
        return _reduce(_weighted(loss, weights), reduction)
    # Shifted by the (constant) max: stable, and for probability targets
    # that do not sum to 1 the same value as MLX's.
    logits = logits - mx.stop_gradient(mx.max(logits, axis=axis, keepdims=True))
    if probs:
        if targets.shape[ax] != logits.shape[ax]:
            raise ValueError(
                f"Targets shape {tuple(targets.shape)} does not match logits "
                f"shape {tuple(logits.shape)} along axis {axis}."
            )
        score = mx.sum(logits * targets, axis=axis)
    else:
        expected = tuple(logits.shape[:ax]) + tuple(logits.shape[ax + 1:])
        if tuple(targets.shape) != expected:
            raise ValueError(
                f"Targets shape {tuple(targets.shape)} does not match logits "
                f"shape {tuple(logits.shape)}."
            )
        picked = mx.take_along_axis(logits, mx.expand_dims(targets, axis), axis=axis)
        score = mx.squeeze(picked, axis=axis)
    lse = mx.logsumexp(logits, axis=axis)
    if label_smoothing > 0:
        # -(1 - s) * z_y - s * mean_j z_j + logsumexp(z)
        loss = lse - (1 - label_smoothing) * score \
            - label_smoothing * mx.mean(logits, axis=axis)
    else:
        loss = lse - score
    return _reduce(_weighted(loss, weights), reduction)


def binary_cross_entropy(inputs, targets, weights=None, with_logits: bool = True,
                         reduction: Reduction = "mean"):
    r"""Binary cross entropy
    :math:`-(t \log p + (1 - t) \log(1 - p))`.

    Args:
        inputs (array): Logits (``with_logits``) or probabilities ``p``.
        targets (array): Targets in ``[0, 1]``.
        weights (array, optional): Per-element weights.
        with_logits (bool): ``inputs`` are logits (computed stably as
            ``softplus(x) - t x``). Default ``True``.
        reduction (str): Default ``"mean"``.

    Returns:
        array: The loss (log-probabilities clipped at ``-100``).
    """
    if tuple(inputs.shape) != tuple(targets.shape):
        raise ValueError(
            f"Inputs shape {tuple(inputs.shape)} does not match targets shape "
            f"{tuple(targets.shape)}."
        )
    if with_logits:
        loss = mx.logaddexp(0.0, inputs) - inputs * targets
    else:
        log_p = mx.maximum(mx.log(inputs), -100)
        log_q = mx.maximum(mx.log(1 - inputs), -100)
        loss = -(targets * log_p + (1 - targets) * log_q)
    return _reduce(_weighted(loss, weights), reduction)


def l1_loss(predictions, targets, reduction: Reduction = "mean"):
    """Mean absolute error :math:`|p - t|`. Default reduction ``"mean"``."""
    _same_shape(predictions, targets)
    return _reduce(mx.abs(predictions - targets), reduction)


def mse_loss(predictions, targets, reduction: Reduction = "mean"):
    """Mean squared error :math:`(p - t)^2`. Default reduction ``"mean"``."""
    _same_shape(predictions, targets)
    return _reduce(mx.square(predictions - targets), reduction)


def nll_loss(inputs, targets, axis: int = -1, reduction: Reduction = "none"):
    """Negative log likelihood ``-inputs[target]`` of log-probabilities
    along ``axis``. Default reduction ``"none"``."""
    picked = mx.take_along_axis(inputs, mx.expand_dims(targets, axis), axis=axis)
    return _reduce(-mx.squeeze(picked, axis=axis), reduction)


def gaussian_nll_loss(inputs, targets, vars, full: bool = False, eps: float = 1e-6,
                      reduction: Reduction = "mean"):
    r"""Gaussian negative log likelihood
    :math:`\frac12 (\log \sigma^2 + (t - \mu)^2 / \sigma^2)` (plus
    :math:`\frac12 \log 2\pi` with ``full``), ``vars`` clamped below at
    ``eps``. Default reduction ``"mean"``."""
    if tuple(inputs.shape) != tuple(targets.shape):
        raise ValueError(
            f"Inputs shape {tuple(inputs.shape)} does not match targets shape "
            f"{tuple(targets.shape)}."
        )
    if tuple(inputs.shape) != tuple(vars.shape):
        raise ValueError(
            f"Inputs shape {tuple(inputs.shape)} does not match vars shape "
            f"{tuple(vars.shape)}."
        )
    vars = mx.maximum(vars, eps)
    loss = 0.5 * (mx.log(vars) + mx.square(targets - inputs) / vars)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def kl_div_loss(inputs, targets, axis: int = -1, reduction: Reduction = "none"):
    r"""Kullback-Leibler divergence :math:`\sum e^t (t - x)` of
    log-probabilities ``inputs`` from log-probabilities ``targets`` along
    ``axis``. Default reduction ``"none"``."""
    return _reduce(mx.sum(mx.exp(targets) * (targets - inputs), axis=axis), reduction)


def smooth_l1_loss(predictions, targets, beta: float = 1.0,
                   reduction: Reduction = "mean"):
    r"""Smooth L1: :math:`0.5 d^2 / \beta` where :math:`d = |p - t| < \beta`,
    else :math:`d - 0.5 \beta`. Default reduction ``"mean"``."""
    _same_shape(predictions, targets)
    d = mx.abs(predictions - targets)
    loss = mx.where(d < beta, 0.5 * mx.square(d) / beta, d - 0.5 * beta)
    return _reduce(loss, reduction)


def triplet_loss(anchors, positives, negatives, axis: int = -1, p: int = 2,
                 margin: float = 1.0, eps: float = 1e-6,
                 reduction: Reduction = "none"):
    r"""Triplet margin loss
    :math:`\max(\|a - p\| - \|a - n\| + \text{margin}, 0)` with
    :math:`\|v\| = \sqrt{\sum v^p + \epsilon}` along ``axis``. Default
    reduction ``"none"``."""

    def dist(a, b):
        return mx.sqrt(mx.sum(mx.power(a - b, p), axis=axis) + eps)

    loss = mx.maximum(dist(anchors, positives) - dist(anchors, negatives) + margin, 0)
    return _reduce(loss, reduction)


def hinge_loss(inputs, targets, reduction: Reduction = "none"):
    r"""Hinge loss :math:`\max(1 - x t, 0)` for targets in ``{-1, 1}``.
    Default reduction ``"none"``."""
    return _reduce(mx.maximum(1 - inputs * targets, 0), reduction)


def huber_loss(inputs, targets, delta: float = 1.0, reduction: Reduction = "none"):
    r"""Huber loss: :math:`\frac12 e^2` for :math:`|e| \le \delta`, else
    :math:`\delta (|e| - \frac12 \delta)`, :math:`e = x - t`. Default
    reduction ``"none"``."""
    a = mx.abs(inputs - targets)
    quad = mx.minimum(a, delta)
    return _reduce(0.5 * mx.square(quad) + delta * (a - quad), reduction)


def log_cosh_loss(inputs, targets, reduction: Reduction = "none"):
    r""":math:`\log\cosh(x - t)`, computed stably as
    :math:`\mathrm{logaddexp}(e, -e) - \log 2`. Default reduction ``"none"``."""
    e = inputs - targets
    return _reduce(mx.logaddexp(e, -e) - math.log(2), reduction)


def cosine_similarity_loss(x1, x2, axis: int = 1, eps: float = 1e-8,
                           reduction: Reduction = "none"):
    r"""Cosine similarity :math:`x_1 \cdot x_2 / \max(\|x_1\| \|x_2\|, \epsilon)`
    along ``axis``. Default reduction ``"none"``."""
    n1 = mx.sqrt(mx.sum(mx.square(x1), axis=axis))
    n2 = mx.sqrt(mx.sum(mx.square(x2), axis=axis))
    loss = mx.sum(x1 * x2, axis=axis) / mx.maximum(n1 * n2, eps)
    return _reduce(loss, reduction)


def margin_ranking_loss(inputs1, inputs2, targets, margin: float = 0.0,
                        reduction: Reduction = "none"):
    r"""Margin ranking loss :math:`\max(-y (x_1 - x_2) + \text{margin}, 0)`
    for targets ``y`` in ``{-1, 1}``. Default reduction ``"none"``."""
    if not (tuple(inputs1.shape) == tuple(inputs2.shape) == tuple(targets.shape)):
        raise ValueError(
            f"The shapes of the arguments do not match. The provided shapes are "
            f"inputs1.shape={tuple(inputs1.shape)}, inputs2.shape="
            f"{tuple(inputs2.shape)}, and targets.shape={tuple(targets.shape)}."
        )
    loss = mx.maximum(-targets * (inputs1 - inputs2) + margin, 0)
    return _reduce(loss, reduction)
