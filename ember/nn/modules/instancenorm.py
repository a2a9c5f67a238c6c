"""InstanceNorm1d/2d/3d (torch.nn.modules.instancenorm): each sample's channels normalised over their own
spatial positions; running statistics and affine parameters off unless asked, unbatched input taken. And
LocalResponseNorm (torch.nn.modules.normalization): each element normalised by its neighbouring channels."""
from __future__ import annotations

import warnings

from .. import functional as F
from .batchnorm import _LazyNormBase, _NormBase
from .module import Module

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class _InstanceNorm(_NormBase):
    spatial = 1                     # the spatial dimensions: an unbatched input has spatial + 1 dimensions

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input) -> None:
        if input.dim() not in (self.spatial + 1, self.spatial + 2):
            raise ValueError(f"expected {self.spatial + 1}D or {self.spatial + 2}D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - (self.spatial + 1)
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        unbatched = input.dim() == self.spatial + 1
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    spatial = 1


class InstanceNorm2d(_InstanceNorm):
    spatial = 2


class InstanceNorm3d(_InstanceNorm):
    spatial = 3


class LocalResponseNorm(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """An InstanceNorm1d whose num_features comes from its first input's dim 1 (torch's choice, also for an
    unbatched input); affine and running statistics on by default, as torch's lazy norms have them."""

    cls_to_become = InstanceNorm1d
    spatial = 1


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """An InstanceNorm2d whose num_features comes from its first input's dim 1."""

    cls_to_become = InstanceNorm2d
    spatial = 2


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """An InstanceNorm3d whose num_features comes from its first input's dim 1."""

    cls_to_become = InstanceNorm3d
    spatial = 3
