"""Helpers the distributions share (torch.distributions.utils): broadcasting parameters, converting
between probabilities and logits, and a cached property."""
from __future__ import annotations

import numbers

import ember
from ember.nn import functional as F

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits"]


def broadcast_all(*values) -> tuple:
    """The values (tensors or numbers) as tensors broadcast to one shape; numbers take the first tensor's
    dtype and device (the default dtype when none is a tensor)."""
    if not all(isinstance(v, (ember.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(isinstance(v, ember.Tensor) for v in values):
        like = next((v for v in values if isinstance(v, ember.Tensor)), None)
        options = dict(dtype=like.dtype, device=like.device) if like is not None else dict(dtype=ember.get_default_dtype())
        values = tuple(v if isinstance(v, ember.Tensor) else ember.tensor(v, **options) for v in values)
    return tuple(ember.broadcast_tensors(*values))


def clamp_probs(probs):
    """Probabilities kept one machine epsilon away from 0 and 1."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary: bool = False):
    return ember.sigmoid(logits) if is_binary else F.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary: bool = False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


class lazy_property:
    """A property computed once per instance, on first use (then an ordinary attribute)."""

    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def sum_rightmost(value, dim: int):
    """`value` summed over its `dim` rightmost dimensions."""
    return value if dim == 0 else value.reshape(value.shape[:value.dim() - dim] + (-1,)).sum(-1)
