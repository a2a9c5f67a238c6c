"""Shape rules of normalization, padding and upsampling (ATen's checks and messages)."""
from __future__ import annotations

import math

from ember.core.errors import ArgumentValueError, DimensionError, DTypeError, MissingKernelError, ShapeError
from ember.core import dtype as _dt

from . import shape_rule
from .common import as_int, check_int_list, check_tensor, shape_of, type_name, wrap_dim
from .nn_layers import _check_float

_LOWP = (_dt.float16, _dt.bfloat16)


# ---------------------------------------------------------------------------- normalization
def _check_channel_param(op, t, C, arg):
    if t is None:
        return
    check_tensor(op, t, arg)
    if shape_of(t) != (C,):
        raise ShapeError(f"{op.name}(): {arg} should contain {C} elements not {math.prod(shape_of(t))}")


def _check_parameter_dtypes(op, input, *params) -> None:
    """torch's cpu normalization kernels: the parameters (and running statistics) have the input's dtype, or all
    are float32 for a float16 or bfloat16 input (mixed precision); checked before the input's own dtype."""
    given = [p for p in params if p is not None]
    if not given:
        return
    if given[0]._dtype is not input._dtype:
        if input._dtype not in _LOWP:
            raise DTypeError(f"{op.name}(): mixed dtype (CPU): all inputs must share same datatype.")
        if any(p._dtype is not _dt.float32 for p in given):
            raise DTypeError(f"{op.name}(): mixed dtype (CPU): expect parameter to have scalar type of Float")
        return
    for p in given[1:]:
        if p._dtype is not input._dtype:
            raise DTypeError(f"{op.name}(): expected scalar type {type_name(input._dtype)} but found "
                             f"{type_name(p._dtype)}")


@shape_rule("native_batch_norm")
def native_batch_norm(op, input, weight, bias, running_mean, running_var, training, momentum, eps):
    return _batch_norm(op, input, weight, bias, running_mean, running_var, training, False)


def _batch_norm(op, input, weight, bias, running_mean, running_var, training, empty_batch_ok: bool):
    """batch_norm's checks and (output, saved mean, saved invstd); an empty input in training is refused by the
    native ops, and batch_norm (`empty_batch_ok`) returns an empty input as it is without checking the
    parameters, as torch's do."""
    check_tensor(op, input, "input")
    shape = shape_of(input)
    if len(shape) < 2:
        raise ShapeError(f"{op.name}(): Expected input to have at least 2 dimensions, but got input of size "
                         f"{list(shape)}")
    C = shape[1]
    if empty_batch_ok and math.prod(shape) == 0:
        return ((shape, input._dtype), ((C,), input._dtype), ((C,), input._dtype))
    for t, arg in ((weight, "weight"), (bias, "bias"), (running_mean, "running_mean"), (running_var, "running_var")):
        _check_channel_param(op, t, C, arg)
    if not training and (running_mean is None or running_var is None):
        raise ArgumentValueError(f"{op.name}(): running_mean and running_var must be defined in evaluation mode")
    _check_float(op, input, "batch_norm")              # batch norm checks the input's dtype first
    _check_parameter_dtypes(op, input, weight, bias, running_mean, running_var)
    if training and not empty_batch_ok and math.prod(shape) == 0:
        raise ArgumentValueError(f"{op.name}(): input tensor must have at least one element, but got input_sizes = "
                                 f"{list(shape)}")
    stat = bn_stat_dtype(input, weight, bias, running_mean, running_var)
    return ((shape, input._dtype), ((C,) if training else (0,), stat), ((C,) if training else (0,), stat))


def bn_stat_dtype(input, *params):
    """float32 for a float16/bfloat16 input with a float32 parameter (mixed), else the input's dtype."""
    if input._dtype in _LOWP and any(p is not None and p._dtype is _dt.float32 for p in params):
        return _dt.float32
    return input._dtype


@shape_rule("batch_norm")
def batch_norm(op, input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return _batch_norm(op, input, weight, bias, running_mean, running_var, training, True)[0]


@shape_rule("native_layer_norm")
def native_layer_norm(op, input, normalized_shape, weight=None, bias=None, eps=1e-5, *rest):
    check_tensor(op, input, "input")
    ns = check_int_list(op, normalized_shape, "normalized_shape")
    shape = shape_of(input)
    if not ns:
        raise ArgumentValueError(f"{op.name}(): Expected normalized_shape to be at least 1-dimensional, i.e., "
                                 f"containing at least one element, but got normalized_shape = {list(ns)}")
    for t, arg in ((weight, "weight"), (bias, "bias")):
        if t is not None:
            check_tensor(op, t, arg)
            if shape_of(t) != ns:
                raise ShapeError(f"{op.name}(): Expected {arg} to be of same shape as normalized_shape, but got "
                                 f"{arg} of shape {list(shape_of(t))} and normalized_shape = {list(ns)}")
    if len(shape) < len(ns) or shape[len(shape) - len(ns):] != ns:
        raise ShapeError(f"{op.name}(): Given normalized_shape={list(ns)}, expected input with shape "
                         f"[*, {', '.join(map(str, ns))}], but got input of size{list(shape)}")
    _check_parameter_dtypes(op, input, weight, bias)
    _check_float(op, input, "LayerNormKernelImpl")
    stat = shape[:len(shape) - len(ns)] + (1,) * len(ns)
    return ((shape, input._dtype), (stat, input._dtype), (stat, input._dtype))


@shape_rule("layer_norm")
def layer_norm(op, input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return native_layer_norm(op, input, normalized_shape, weight, bias, eps)[0]


def _group_checks(op, input, weight, bias, group):
    check_tensor(op, input, "input")
    shape = shape_of(input)
    if len(shape) < 2:
        raise ShapeError(f"{op.name}(): Expected at least 2 dimensions for input tensor but received {len(shape)}")
    group = as_int(op, group, "num_groups")
    C = shape[1]
    if group <= 0 or C % group:
        raise ShapeError(f"{op.name}(): Expected number of channels in input to be divisible by num_groups, but got "
                         f"input of shape {list(shape)} and num_groups={group}")
    for t, arg in ((weight, "weight"), (bias, "bias")):
        if t is not None:
            check_tensor(op, t, arg)
            if shape_of(t) != (C,):
                raise ShapeError(f"{op.name}(): Expected {arg} to be a vector of size equal to the number of channels "
                                 f"in input, but got {arg} of shape {list(shape_of(t))} and input of shape "
                                 f"{list(shape)}")
    _check_parameter_dtypes(op, input, weight, bias)
    _check_float(op, input, "GroupNormKernelImpl")
    return shape, group


@shape_rule("native_group_norm")
def native_group_norm(op, input, weight, bias, N, C, HxW, group, eps):
    shape, group = _group_checks(op, input, weight, bias, group)
    if (as_int(op, N, "N"), as_int(op, C, "C"), as_int(op, HxW, "HxW")) != (shape[0], shape[1],
                                                                         math.prod(shape[2:])):
        raise ShapeError(f"{op.name}(): N, C and HxW ({N}, {C}, {HxW}) do not match the input of size {list(shape)}")
    return ((shape, input._dtype), ((shape[0], group), input._dtype), ((shape[0], group), input._dtype))


@shape_rule("group_norm")
def group_norm(op, input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    check_tensor(op, input, "input")
    rank = len(shape_of(input))
    if rank == 0:                       # the op reads the batch and channel sizes first (nn.functional checks)
        raise DimensionError(f"{op.name}(): Dimension specified as 0 but tensor has no dimensions")
    if rank == 1:
        wrap_dim(op, 1, 1)
    shape, _ = _group_checks(op, input, weight, bias, num_groups)
    return (shape, input._dtype)


# ---------------------------------------------------------------------------------- padding
@shape_rule("constant_pad_nd")
def constant_pad_nd(op, self, pad, value=0):
    check_tensor(op, self, "input")
    pad = check_int_list(op, pad, "pad")
    shape = list(shape_of(self))
    if len(pad) % 2:
        raise ArgumentValueError(f"{op.name}(): Length of pad must be even but instead it equals {len(pad)}")
    if len(pad) // 2 > len(shape):
        raise ArgumentValueError(f"{op.name}(): Length of pad should be no more than twice the number of dimensions "
                                 f"of the input. Pad length is {len(pad)} while the input has {len(shape)} dimensions.")
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        new = shape[d] + pad[2 * i] + pad[2 * i + 1]
        if new < 0:
            raise ArgumentValueError(f"{op.name}(): The input size {shape[d]}, plus negative padding {pad[2 * i]} and "
                                     f"{pad[2 * i + 1]} resulted in a negative output size, which is invalid. Check "
                                     f"dimension {d} of your input.")
        shape[d] = new
    return (tuple(shape), self._dtype)


def _mode_pad(op, self, pad, nd, mode):
    """reflection/replication padding of the last `nd` dims (input nd + 1 or nd + 2 dims)."""
    check_tensor(op, self, "input")
    pad = check_int_list(op, pad, "padding")
    shape = shape_of(self)
    if len(pad) != 2 * nd:
        raise ArgumentValueError(f"{op.name}(): padding size is expected to be {2 * nd}, but got: {len(pad)}")
    if len(shape) not in (nd + 1, nd + 2) or any(n == 0 for n in shape[1:]):
        raise ShapeError(f"{op.name}(): Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with possibly 0 batch "
                         f"size and other non-zero dimensions for input, but got: {list(shape)}")
    out = list(shape)
    for i in range(nd):
        d = len(shape) - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if mode == "reflect" and (lo >= shape[d] or hi >= shape[d]):
            raise ArgumentValueError(f"{op.name}(): Argument #4: Padding size should be less than the corresponding "
                                     f"input dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                                     f"{list(shape)}")
        if mode == "circular" and (lo > shape[d] or hi > shape[d]):
            raise ArgumentValueError(f"{op.name}(): Padding value causes wrapping around more than once.")
        out[d] = shape[d] + lo + hi
        if out[d] < 1:
            raise ArgumentValueError(f"{op.name}(): input (W: {shape[d]}) is too small. Calculated output W: "
                                     f"{out[d]} (argument 'padding')")
    return (tuple(out), self._dtype)


@shape_rule("reflection_pad1d")
def reflection_pad1d(op, self, padding):
    return _mode_pad(op, self, padding, 1, "reflect")


@shape_rule("reflection_pad2d")
def reflection_pad2d(op, self, padding):
    return _mode_pad(op, self, padding, 2, "reflect")


@shape_rule("replication_pad1d")
def replication_pad1d(op, self, padding):
    return _mode_pad(op, self, padding, 1, "replicate")


@shape_rule("replication_pad2d")
def replication_pad2d(op, self, padding):
    return _mode_pad(op, self, padding, 2, "replicate")


@shape_rule("pad")
def pad(op, self, pad, mode="constant", value=None):
    check_tensor(op, self, "input")
    pad = check_int_list(op, pad, "pad")
    ndim = len(shape_of(self))
    if mode not in ("constant", "reflect", "replicate", "circular"):        # torch checks the mode first
        raise MissingKernelError(f"{op.name}(): Unrecognised padding mode {mode}")
    if len(pad) % 2:
        raise ArgumentValueError(f"{op.name}(): Padding length must be divisible by 2")
    if len(pad) > 2 * ndim:
        raise ArgumentValueError(f"{op.name}(): Padding length should be less than or equal to two times the input "
                                 f"dimension but got padding length {len(pad)} and input of dimension {ndim}")
    if mode == "constant":
        return constant_pad_nd(op, self, pad, 0 if value is None else value)
    if value is not None and value != 0:
        raise ArgumentValueError(f'{op.name}(): Padding mode "{mode}" doesn\'t take in value argument')
    nd = len(pad) // 2
    if nd not in (1, 2, 3) or ndim not in (nd + 1, nd + 2):
        raise MissingKernelError(f"{op.name}(): Only 2D, 3D, 4D, 5D padding with non-constant padding are supported "
                                 "for now")
    return _mode_pad(op, self, pad, nd, mode)


# ------------------------------------------------------------------------------- upsampling
def _upsample(op, self, output_size, nd, kernel):
    check_tensor(op, self, "input")
    shape = shape_of(self)
    sizes = check_int_list(op, output_size, "output_size")
    if len(sizes) != nd:
        raise ArgumentValueError(f"{op.name}(): It is expected output_size equals to {nd}, but got size {len(sizes)}")
    if len(shape) != nd + 2 or any(n == 0 for n in shape[1:]):
        raise ShapeError(f"{op.name}(): Non-empty {nd + 2}D data tensor expected but got a tensor with sizes "
                         f"{list(shape)}")
    if any(s <= 0 for s in sizes):
        raise ArgumentValueError(f"{op.name}(): Input and output sizes should be greater than 0, but got input "
                                 f"{list(shape[2:])} output {list(sizes)}")
    if kernel and not self._dtype.is_floating_point:
        raise MissingKernelError(f'{op.name}(): "{kernel}" not implemented for \'{type_name(self._dtype)}\'')
    if self._dtype is _dt.bool:
        raise MissingKernelError(f'{op.name}(): "upsample_nearest{nd}d" not implemented for \'Bool\'')
    return (shape[:2] + tuple(sizes), self._dtype)


def _vec_size(op, input, output_size, scale_factors, nd):
    check_tensor(op, input, "input")
    if (output_size is None) == (scale_factors is None):
        raise ArgumentValueError(f"{op.name}(): Must specify exactly one of output_size and scale_factors")
    if output_size is not None:
        return output_size
    sf = list(scale_factors)
    if len(sf) == 1:
        sf = sf * nd
    if len(sf) != nd:
        raise ArgumentValueError(f"{op.name}(): scale_factors must have {nd} elements, got {len(sf)}")
    shape = shape_of(input)
    if len(shape) != nd + 2:
        raise ShapeError(f"{op.name}(): Non-empty {nd + 2}D data tensor expected but got a tensor with sizes "
                         f"{list(shape)}")
    return [int(shape[2 + i] * sf[i]) for i in range(nd)]


_BILINEAR = "upsample_bilinear2d_channels_last"


@shape_rule("upsample_nearest1d")
def upsample_nearest1d(op, self, output_size, scales=None):
    return _upsample(op, self, output_size, 1, None)


@shape_rule("upsample_nearest2d")
def upsample_nearest2d(op, self, output_size, scales_h=None, scales_w=None):
    return _upsample(op, self, output_size, 2, None)


@shape_rule("upsample_bilinear2d")
def upsample_bilinear2d(op, self, output_size, align_corners, scales_h=None, scales_w=None):
    return _upsample(op, self, output_size, 2, _BILINEAR)


@shape_rule("upsample_nearest1d_vec")
def upsample_nearest1d_vec(op, input, output_size, scale_factors):
    return _upsample(op, input, _vec_size(op, input, output_size, scale_factors, 1), 1, None)


@shape_rule("upsample_nearest2d_vec")
def upsample_nearest2d_vec(op, input, output_size, scale_factors):
    return _upsample(op, input, _vec_size(op, input, output_size, scale_factors, 2), 2, None)


@shape_rule("upsample_bilinear2d_vec")
def upsample_bilinear2d_vec(op, input, output_size, align_corners, scale_factors):
    return _upsample(op, input, _vec_size(op, input, output_size, scale_factors, 2), 2, _BILINEAR)
