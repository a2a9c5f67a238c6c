"""BatchNorm1d/2d (torch.nn.modules.batchnorm): running statistics, momentum None = cumulative average."""
from __future__ import annotations

import ember
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d"]


class _NormBase(Module):
    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = Parameter(ember.empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(ember.empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if self.track_running_stats:
            self.register_buffer("running_mean", ember.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ember.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", ember.tensor(0, dtype=ember.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with ember.no_grad():
                self.running_mean.fill_(0)
                self.running_var.fill_(1)
                self.num_batches_tracked.fill_(0)

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, bias={use_bias}, "
                "track_running_stats={track_running_stats}".format(**self.__dict__, use_bias=self.bias is not None))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:       # checkpoints from before num_batches_tracked existed
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                                   and self.num_batches_tracked.device.type != "meta"
                                   else ember.tensor(0, dtype=ember.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        exponential_average_factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with ember.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:       # cumulative moving average
                exponential_average_factor = 1.0 / float(self.num_batches_tracked.item())
            else:
                exponential_average_factor = self.momentum
        bn_training = True if self.training else (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias, bn_training,
                            exponential_average_factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) input."""

    def _check_input_dim(self, input) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) input."""

    def _check_input_dim(self, input) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


# ------------------------------------------------------------------------------------ lazy
class _LazyNormBase(LazyModuleMixin, _NormBase):
    """num_features from the first input's dim 1; the parameters and running statistics wait for it."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = ember.tensor(0, dtype=ember.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """A BatchNorm1d whose num_features comes from its first input."""

    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """A BatchNorm2d whose num_features comes from its first input."""

    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """A BatchNorm3d whose num_features comes from its first input."""

    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim
