"""torch.nn.functional.dropout."""
from __future__ import annotations

import math

from ember._generated import functions as _F
from ember.core.errors import ArgumentListError

from .activation import _SELU_ALPHA, _SELU_SCALE

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero each element with probability p and scale the rest by 1 / (1 - p) while training."""
    if p < 0.0 or p > 1.0:
        raise ArgumentListError(f"dropout probability has to be between 0 and 1, but got {p}")
    out = _F.dropout(input, p, training)
    return _F.copy_(input, out) if inplace else out


def _feature_dropout(name: str, input, p: float, training: bool, inplace: bool, batched_dim: int):
    """Zero whole channels: one Bernoulli draw per (sample, channel), scaled by 1 / (1 - p)."""
    if p < 0.0 or p > 1.0:
        raise ArgumentListError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.dim() not in (batched_dim - 1, batched_dim):
        raise ArgumentListError(f"{name}: Expected {batched_dim - 1}D or {batched_dim}D input, but received a "
                                f"{input.dim()}D input.")
    if not training or p == 0:
        return input
    batched = input.dim() == batched_dim
    lead = 2 if batched else 1
    shape = tuple(input.shape[:lead]) + (1,) * (input.dim() - lead)
    if p == 1:
        out = _F.mul(input, 0.0)
    else:
        keep = _F.bernoulli(_F.full(shape, 1.0 - p, dtype=input.dtype, device=input.device))
        out = _F.mul(input, _F.div(keep, 1.0 - p))
    return _F.copy_(input, out) if inplace else out


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Channel dropout of (N, C, L) or (C, L) inputs."""
    return _feature_dropout("dropout1d", input, p, training, inplace, 3)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Channel dropout of (N, C, H, W) or (C, H, W) inputs."""
    return _feature_dropout("dropout2d", input, p, training, inplace, 4)


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Channel dropout of (N, C, D, H, W) or (C, D, H, W) inputs."""
    return _feature_dropout("dropout3d", input, p, training, inplace, 5)


_SELU_SATURATION = _SELU_ALPHA * _SELU_SCALE      # -(SELU's negative saturation value)


def _alpha_dropout(input, p: float, training: bool, inplace: bool, feature: bool):
    """Dropout keeping SELU's self-normalisation: a dropped value becomes SELU's saturation value, and the result
    is rescaled (by a) and shifted (by b) so the mean and variance stay (torch's formula)."""
    if p < 0.0 or p > 1.0:
        raise ArgumentListError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    if p == 1:
        out = _F.mul(input, 0.0)
    else:
        shape = (tuple(input.shape[:2]) + (1,) * (input.dim() - 2)) if feature else tuple(input.shape)
        keep = _F.bernoulli(_F.full(shape, 1.0 - p, dtype=input.dtype, device=input.device))
        a = 1.0 / math.sqrt((_SELU_SATURATION ** 2 * p + 1) * (1 - p))
        b = _F.add(_F.mul(_F.sub(keep, 1.0), _SELU_SATURATION * a), _SELU_SATURATION * a * p)
        out = _F.add(_F.mul(input, _F.mul(keep, a)), b)
    return _F.copy_(input, out) if inplace else out


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """alpha_dropout of whole channels: one draw per (sample, channel)."""
    return _alpha_dropout(input, p, training, inplace, True)
