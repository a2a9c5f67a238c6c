"""Shape rules of the rest of PyTorch's core ATen nn ops: the backward ops (pooling,
convolution, layer and group norm), the `_native_batch_norm_legit*` variants, col2im/im2col
and the 3-d pooling and padding ops (ATen's checks, shared with the 1-d/2-d rules).

A backward op checks that `grad_output` has the shape its forward op gives for `self`, and
returns `self`'s spec; multi-output backward ops return None for outputs their
`output_mask` leaves out.
"""
from __future__ import annotations

from ember.core.errors import ArgumentValueError, DimensionError, MissingKernelError, ShapeError
from ember.core import dtype as _dt
from ember.core.spec import TensorSpec

from . import shape_rule
from .common import check_int_list, check_kernel_dtype, check_tensor, shape_of, type_name
from .nn_layers import (_adaptive, adaptive_avg_pool2d, avg_pool2d, conv_spec, int_tuple,
                        max_pool2d_with_indices, pool_geometry)
from .nn_norm_pad import (_batch_norm, _check_channel_param, _mode_pad, native_batch_norm, native_group_norm,
                          native_layer_norm)


def _check_grad(op, grad, expected, arg="grad_output"):
    check_tensor(op, grad, arg)
    if shape_of(grad) != tuple(expected):
        raise ShapeError(f"{op.name}(): Expected {arg} of size {list(expected)}, but got {arg} of size "
                         f"{list(shape_of(grad))}")


def _mask(op, output_mask):
    if isinstance(output_mask, (list, tuple)) and len(output_mask) == 3:
        a, b, c = output_mask
        if a.__class__ is bool and b.__class__ is bool and c.__class__ is bool:
            return [a, b, c]
    raise ArgumentValueError(f"{op.name}(): argument 'output_mask' must be a list of 3 bools, got {output_mask!r}")


def _masked(mask, specs):
    """The three specs, None where the mask leaves the gradient out."""
    return (specs[0] if mask[0] else None, specs[1] if mask[1] else None, specs[2] if mask[2] else None)


# ----------------------------------------------------------------------------------- pooling
@shape_rule("max_pool3d_with_indices", reads=("dtypes",))
def max_pool3d_with_indices(op, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    out = pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode, nd=3)
    check_kernel_dtype(op, self._dtype)
    return ((out, self._dtype), (out, _dt.int64))


@shape_rule("max_pool3d", reads=("dtypes",))
def max_pool3d(op, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return max_pool3d_with_indices(op, self, kernel_size, stride, padding, dilation, ceil_mode)[0]


@shape_rule("avg_pool3d")
def avg_pool3d(op, self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    check_tensor(op, self, "input")
    out = pool_geometry(op, self, kernel_size, stride, padding, 1, ceil_mode, nd=3)
    if divisor_override is not None and divisor_override == 0:
        raise ArgumentValueError(f"{op.name}(): divisor must be not zero (argument 'divisor_override')")
    _check_avg3d_dtype(op, self, "avg_pool3d_out_frame")
    return (out, self._dtype)


def _check_avg3d_dtype(op, t, kernel):
    """PyTorch's cpu avg_pool3d kernels are float32/float64 only."""
    if t._dtype not in (_dt.float32, _dt.float64):
        raise MissingKernelError(f'{op.name}(): "{kernel}" not implemented for \'{type_name(t._dtype)}\'')


@shape_rule("adaptive_avg_pool3d")
def adaptive_avg_pool3d(op, self, output_size):
    return _adaptive(op, self, output_size, 3)


def _pool_backward(forward_rule):
    def rule(op, grad_output, self, *args):
        out = forward_rule(op, self, *args)
        _check_grad(op, grad_output, out[0])
        if grad_output._dtype is not self._dtype:
            raise ShapeError(f"{op.name}(): expected grad_output of dtype {self._dtype}, got {grad_output._dtype}")
        return (shape_of(self), self._dtype)
    return rule


_AVG2 = _pool_backward(avg_pool2d)
_AVG3 = _pool_backward(lambda op, self, *args: (_check_avg3d_dtype(op, self, "avg_pool3d_backward_out_frame"),
                                                avg_pool3d(op, self, *args))[1])
_ADA2, _ADA3 = _pool_backward(adaptive_avg_pool2d), _pool_backward(adaptive_avg_pool3d)


@shape_rule("avg_pool2d_backward")
def avg_pool2d_backward(op, grad_output, self, *args):
    return _AVG2(op, grad_output, self, *args)


@shape_rule("avg_pool3d_backward")
def avg_pool3d_backward(op, grad_output, self, *args):
    return _AVG3(op, grad_output, self, *args)


def _dim_check(op, t, need, nd):
    """ATen indexes dim -need (IndexError) before its own checks."""
    r = len(shape_of(t))
    if r < need:
        raise DimensionError(f"{op.name}(): Dimension out of range (expected to be in range of "
                             f"[{-max(r, 1)}, {max(r, 1) - 1}], but got {nd})")


@shape_rule("_adaptive_avg_pool2d_backward")
def _adaptive_avg_pool2d_backward(op, grad_output, self):
    return _ADA2(op, grad_output, self, tuple(shape_of(grad_output)[-2:]))


@shape_rule("_adaptive_avg_pool3d_backward")
def _adaptive_avg_pool3d_backward(op, grad_output, self):
    _dim_check(op, grad_output, 4, -4)
    return _ADA3(op, grad_output, self, tuple(shape_of(grad_output)[-3:]))


def _max_backward(forward_rule):
    def rule(op, grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
        out = forward_rule(op, self, kernel_size, stride, padding, dilation, ceil_mode)[0][0]
        _check_grad(op, grad_output, out)
        _check_grad(op, indices, out, "indices")
        if indices._dtype is not _dt.int64:
            raise ShapeError(f"{op.name}(): expected indices of dtype int64, got {indices._dtype}")
        return (shape_of(self), self._dtype)
    return rule


_MAX2, _MAX3 = _max_backward(max_pool2d_with_indices), _max_backward(max_pool3d_with_indices)


@shape_rule("max_pool2d_with_indices_backward")
def max_pool2d_with_indices_backward(op, *args):
    return _MAX2(op, *args)


@shape_rule("max_pool3d_with_indices_backward")
def max_pool3d_with_indices_backward(op, *args):
    return _MAX3(op, *args)


# ------------------------------------------------------------------------------- convolution
@shape_rule("convolution_backward")
def convolution_backward(op, grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                         output_padding, groups, output_mask):
    check_tensor(op, input, "input")
    check_tensor(op, weight, "weight")
    mask = _mask(op, output_mask)
    out = conv_spec(op, shape_of(input), input, weight, None, stride, padding, dilation, transposed, output_padding,
                    groups)
    _check_grad(op, grad_output, out[0])
    bias = (shape_of(weight)[1] * groups if transposed else shape_of(weight)[0],)
    if bias_sizes is not None:
        bias = check_int_list(op, bias_sizes, "bias_sizes")
    return _masked(mask, ((shape_of(input), input._dtype), (shape_of(weight), weight._dtype),
                          (bias, grad_output._dtype)))


# ----------------------------------------------------------------------------------- linear
@shape_rule("linear_backward")
def linear_backward(op, self, grad_output, weight, output_mask):
    """torch's linear_backward with `self` (the input) and `weight` optional: the weight's gradient
    needs the input, the input's needs the weight. Without the weight, the weight's shape follows
    from the input and grad_output (a 1-D weight drops the feature dim); without both, the bias's
    gradient keeps grad_output's last dim (the engine sums it to the bias's shape)."""
    mask = _mask(op, output_mask)
    # tensors tested inline (a training step's backward calls this per linear layer): check_tensor
    # and _check_grad run only to name what is wrong
    if not isinstance(grad_output, TensorSpec):
        check_tensor(op, grad_output, "grad_output")
    gshape, dtype = tuple(grad_output._data.shape), grad_output._dtype
    for t, arg, k, what in ((self, "self", 1, "weight's"), (weight, "weight", 0, "input's")):
        if t is None:
            if mask[k]:
                raise ArgumentValueError(f"{op.name}(): argument '{arg}' is needed for the {what} gradient "
                                         f"(output_mask[{k}] is True), but got None")
            continue
        if not isinstance(t, TensorSpec):
            check_tensor(op, t, arg)
        if t._dtype is not dtype:
            raise ArgumentValueError(f"{op.name}(): expected {arg} to have dtype {type_name(dtype)} (grad_output's), "
                                     f"but got {type_name(t._dtype)}")
    in_shape = tuple(self._data.shape) if self is not None else None
    if weight is not None:
        wshape = tuple(weight._data.shape)
        if len(wshape) not in (1, 2):
            raise ShapeError(f"{op.name}(): weight must be 1-D or 2-D, but got a {len(wshape)}-D tensor")
    elif in_shape is not None:
        if not in_shape:
            raise ShapeError(f"{op.name}(): input must have at least 1 dimension, but got a 0-d tensor")
        wshape = in_shape[-1:] if len(gshape) == len(in_shape) - 1 else gshape[-1:] + in_shape[-1:]
    else:
        wshape = None
    if wshape is not None:
        if in_shape is None:
            in_shape = gshape + wshape if len(wshape) == 1 else gshape[:-1] + wshape[1:]
        if not in_shape or in_shape[-1] != wshape[-1]:
            raise ShapeError(f"{op.name}(): input and weight shapes cannot be multiplied ({list(in_shape)} and "
                             f"{list(wshape)})")
        if gshape != in_shape[:-1] + wshape[:-1]:
            _check_grad(op, grad_output, in_shape[:-1] + wshape[:-1])
    bias = wshape[:-1] if wshape is not None else gshape[-1:]
    return _masked(mask, ((in_shape, dtype), (wshape, dtype), (bias, dtype)))


# ----------------------------------------------------------------------------- normalization
@shape_rule("native_layer_norm_backward")
def native_layer_norm_backward(op, grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask):
    mask = _mask(op, output_mask)
    specs = native_layer_norm(op, input, normalized_shape, weight, bias)
    _check_grad(op, grad_out, shape_of(input), "grad_out")
    axis = len(shape_of(input)) - len(check_int_list(op, normalized_shape, "normalized_shape"))
    stat = tuple(specs[1][0])
    for t, arg in ((mean, "mean"), (rstd, "rstd")):      # (*outer, 1, ..., 1) as returned, or (*outer)
        check_tensor(op, t, arg)
        if shape_of(t) not in (stat, stat[:axis]):
            raise ShapeError(f"{op.name}(): Expected {arg} of size {list(stat)}, but got {list(shape_of(t))}")
    ns = shape_of(input)[axis:]
    return _masked(mask, ((shape_of(input), input._dtype), (ns, (weight if weight is not None else input)._dtype),
                          (ns, (bias if bias is not None else input)._dtype)))


@shape_rule("native_batch_norm_backward")
def native_batch_norm_backward(op, grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train,
                               eps, output_mask):
    """The forward's checks (the statistics it normalised with must be there: the saved ones when `train`, the
    running ones otherwise), grad_out of the input's size; the input's gradient in its dtype, the weight's
    and bias's in the weight's (the input's without one), as torch's."""
    mask = _mask(op, output_mask)
    _batch_norm(op, input, weight, None, running_mean, running_var, train, False)
    C = shape_of(input)[1]
    if train:
        for t, arg in ((save_mean, "save_mean"), (save_invstd, "save_invstd")):
            if t is None:
                raise ArgumentValueError(f"{op.name}(): {arg} must be defined in training mode")
            _check_channel_param(op, t, C, arg)
    _check_grad(op, grad_out, shape_of(input), "grad_out")
    param = (weight if weight is not None else input)._dtype
    return _masked(mask, ((shape_of(input), input._dtype), ((C,), param), ((C,), param)))


@shape_rule("native_group_norm_backward")
def native_group_norm_backward(op, grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask):
    mask = _mask(op, output_mask)
    specs = native_group_norm(op, input, weight, None, N, C, HxW, group, 0.0)
    _check_grad(op, grad_out, shape_of(input), "grad_out")
    for t, arg in ((mean, "mean"), (rstd, "rstd")):
        _check_grad(op, t, specs[1][0], arg)
    c = (shape_of(input)[1],)
    w_dtype = (weight if weight is not None else input)._dtype
    return _masked(mask, ((shape_of(input), input._dtype), (c, w_dtype), (c, input._dtype)))


@shape_rule("_native_batch_norm_legit")
def _native_batch_norm_legit(op, input, weight, bias, running_mean, running_var, training, momentum, eps):
    check_tensor(op, input, "input")
    _dim_check(op, input, 2, 1)
    check_tensor(op, running_mean, "running_mean")
    check_tensor(op, running_var, "running_var")
    return native_batch_norm(op, input, weight, bias, running_mean, running_var, training, momentum, eps)


@shape_rule("_native_batch_norm_legit_no_stats")
def _native_batch_norm_legit_no_stats(op, input, weight, bias, training, momentum, eps):
    check_tensor(op, input, "input")
    _dim_check(op, input, 2, 1)
    if not training:
        raise ArgumentValueError(f"{op.name}(): running_mean and running_var must be defined in evaluation mode "
                                 "(training=False needs the overload with running statistics)")
    return native_batch_norm(op, input, weight, bias, None, None, training, momentum, eps)


@shape_rule("_native_batch_norm_legit_no_training")
def _native_batch_norm_legit_no_training(op, input, weight, bias, running_mean, running_var, momentum, eps):
    check_tensor(op, input, "input")
    _dim_check(op, input, 2, 1)
    check_tensor(op, running_mean, "running_mean")
    check_tensor(op, running_var, "running_var")
    return native_batch_norm(op, input, weight, bias, running_mean, running_var, False, momentum, eps)


# --------------------------------------------------------------------------- col2im / im2col
def _fold_params(op, kernel_size, dilation, padding, stride):
    kernel = int_tuple(op, kernel_size, 2, "kernel_size")
    dilation = int_tuple(op, dilation, 2, "dilation")
    padding = int_tuple(op, padding, 2, "padding")
    stride = int_tuple(op, stride, 2, "stride")
    for vals, arg, ok in ((kernel, "kernel", lambda v: v > 0), (dilation, "dilation", lambda v: v > 0),
                          (padding, "padding", lambda v: v >= 0), (stride, "stride", lambda v: v > 0)):
        if not all(ok(v) for v in vals):
            what = "non-negative" if arg == "padding" else "greater than zero"
            raise ArgumentValueError(f"{op.name}(): {arg} should be {what}, but got {arg}_height: {vals[0]} "
                                     f"{arg}_width: {vals[1]} (argument '{arg if arg != 'kernel' else 'kernel_size'}')")
    return kernel, dilation, padding, stride


def blocks(size, kernel, dilation, padding, stride) -> tuple[int, int]:
    """The number of sliding blocks along each of the two spatial dims."""
    return tuple((size[i] + 2 * padding[i] - (dilation[i] * (kernel[i] - 1) + 1)) // stride[i] + 1 for i in range(2))


@shape_rule("col2im")
def col2im(op, self, output_size, kernel_size, dilation, padding, stride):
    check_tensor(op, self, "input")
    out = int_tuple(op, output_size, 2, "output_size")
    kernel, dilation, padding, stride = _fold_params(op, kernel_size, dilation, padding, stride)
    shape = shape_of(self)
    if len(shape) not in (2, 3) or (len(shape) == 3 and shape[1] == 0) or shape[-1] == 0 and len(shape) == 2:
        raise ShapeError(f"{op.name}(): Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size "
                         f"and non-zero dimensions for input, but got: {list(shape)}")
    rows = shape[-2]
    kk = kernel[0] * kernel[1]
    if rows % kk:
        raise ShapeError(f"{op.name}(): Expected size of input's dimension 1 to be divisible by the product of "
                         f"kernel_size, but got input.size(1)={rows} and kernel_size=({kernel[0]}, {kernel[1]})")
    nb = blocks(out, kernel, dilation, padding, stride)
    if nb[0] < 1 or nb[1] < 1 or shape[-1] != nb[0] * nb[1]:
        raise ShapeError(f"{op.name}(): Given output_size=({out[0]}, {out[1]}), kernel_size=({kernel[0]}, "
                         f"{kernel[1]}), dilation=({dilation[0]}, {dilation[1]}), padding=({padding[0]}, "
                         f"{padding[1]}), stride=({stride[0]}, {stride[1]}), expected size of input's dimension 2 "
                         f"to match the calculated number of sliding blocks {nb[0]} * {nb[1]} = {nb[0] * nb[1]}, "
                         f"but got input.size(2)={shape[-1]}.")
    return (shape[:-2] + (rows // kk,) + out, self._dtype)


@shape_rule("im2col")
def im2col(op, self, kernel_size, dilation, padding, stride):
    check_tensor(op, self, "input")
    kernel, dilation, padding, stride = _fold_params(op, kernel_size, dilation, padding, stride)
    shape = shape_of(self)
    _dim_check(op, self, 3, 2)
    if len(shape) not in (3, 4) or any(n == 0 for n in shape[-3:]):
        raise ShapeError(f"{op.name}(): Expected 3D or 4D (batch mode) tensor for input with possibly 0 batch size "
                         f"and non-zero dimensions for input, but got: {list(shape)}")
    nb = blocks(shape[-2:], kernel, dilation, padding, stride)
    if nb[0] < 1 or nb[1] < 1:
        raise ShapeError(f"{op.name}(): Given input with spatial size ({shape[-2]}, {shape[-1]}), kernel_size="
                         f"({kernel[0]}, {kernel[1]}), dilation=({dilation[0]}, {dilation[1]}), padding=("
                         f"{padding[0]}, {padding[1]}), calculated shape of the array of sliding blocks as "
                         f"({nb[0]}, {nb[1]}), but its components must be at least one.")
    return (shape[:-3] + (shape[-3] * kernel[0] * kernel[1], nb[0] * nb[1]), self._dtype)


# ----------------------------------------------------------------------------------- padding
@shape_rule("reflection_pad3d")
def reflection_pad3d(op, self, padding):
    return _mode_pad(op, self, padding, 3, "reflect")


@shape_rule("replication_pad3d")
def replication_pad3d(op, self, padding):
    return _mode_pad(op, self, padding, 3, "replicate")
