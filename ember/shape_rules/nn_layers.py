"""Shape rules of the nn layers: convolution, pooling, normalization, padding, upsampling.

Messages and exception classes follow ATen's checks (ConvUtils.h, Pool.h, Normalization.cpp,
PadNd.cpp, UpSample.h), so a bad call raises the class torch raises and names the op.
"""
from __future__ import annotations


from ember.core.errors import ArgumentValueError, DimensionError, DTypeError, MissingKernelError, ShapeError
from ember.core import dtype as _dt
from ember.core.layout import numel
from ember.core.spec import TensorSpec
from ember.core.type_promotion import promote_types

from . import shape_rule
from .common import as_int, check_int_list, check_kernel_dtype, check_tensor, shape_of, type_name, wrap_dim


def int_tuple(op, value, n: int, arg: str, *, allow_empty: bool = False) -> tuple[int, ...]:
    """An `int[n]` argument: one int, or a list of 1 or n ints, as a tuple of n ints."""
    vals = check_int_list(op, value, arg)
    if allow_empty and len(vals) == 0:
        return ()
    if len(vals) == 1:
        return vals * n
    if len(vals) != n:
        raise ArgumentValueError(f"{op.name}(): argument '{arg}' must be an int or a list of {n} ints, got {list(vals)}")
    return vals


def _check_float(op, t: TensorSpec, kernel: str) -> None:
    if not t._dtype.is_floating_point:
        raise MissingKernelError(f'{op.name}(): "{kernel}" not implemented for \'{type_name(t._dtype)}\'')


# ------------------------------------------------------------------------------ convolution
def conv_output_size(inp, k, s, p, d, transposed=False, out_pad=0) -> int:
    if transposed:
        return (inp - 1) * s - 2 * p + d * (k - 1) + out_pad + 1
    return (inp + 2 * p - d * (k - 1) - 1) // s + 1


@shape_rule("convolution")
def convolution(op, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    check_tensor(op, input, "input")
    check_tensor(op, weight, "weight")
    return conv_spec(op, shape_of(input), input, weight, bias, stride, padding, dilation, transposed, output_padding,
                     groups)


#: conv_spec's results by their arguments' shapes, dtypes and values: a training step asks for each layer's spec
#: three times (the wrapper, convolution, its backward), about 10 us each; errors are never stored
_CONV_SPECS: dict = {}
_CONV_SPECS_MAX = 256


def _hashable(v):
    return tuple(v) if isinstance(v, list) else v


def conv_spec(op, x, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """The output spec of a convolution of an input of shape `x` (batched) with `weight`."""
    if not (isinstance(input, TensorSpec) and isinstance(weight, TensorSpec)
            and (bias is None or isinstance(bias, TensorSpec)) and groups.__class__ is int
            and all(n.__class__ is int for n in x)):        # symbolic sizes (an export's) are not keys
        return _conv_spec(op, x, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    try:
        key = (x, shape_of(weight), None if bias is None else (shape_of(bias), bias._dtype), input._dtype,
               weight._dtype, _hashable(stride), _hashable(padding), _hashable(dilation), transposed,
               _hashable(output_padding), groups)
        spec = _CONV_SPECS.get(key)
    except TypeError:                   # an unhashable argument: checked (and refused) by the rule itself
        key = spec = None
    if spec is None:
        spec = _conv_spec(op, x, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
        if key is not None:
            if len(_CONV_SPECS) >= _CONV_SPECS_MAX:
                _CONV_SPECS.clear()
            _CONV_SPECS[key] = spec
    return spec


def _conv_spec(op, x, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    w = shape_of(weight)
    nd = len(w) - 2
    if nd < 1:
        raise ShapeError(f"{op.name}(): weight should have at least three dimensions, got weight of size {list(w)}")
    if len(x) != len(w):
        raise ShapeError(f"{op.name}(): Expected {len(w)}-dimensional input for {len(w)}-dimensional weight "
                         f"{list(w)}, but got {len(x)}-dimensional input of size {list(x)} instead")
    stride = int_tuple(op, stride, nd, "stride")
    padding = int_tuple(op, padding, nd, "padding")
    dilation = int_tuple(op, dilation, nd, "dilation")
    output_padding = int_tuple(op, output_padding, nd, "output_padding")
    groups = as_int(op, groups, "groups")
    if any(s <= 0 for s in stride):
        raise ArgumentValueError(f"{op.name}(): non-positive stride is not supported (argument 'stride')")
    if any(p < 0 for p in padding):
        raise ArgumentValueError(f"{op.name}(): negative padding is not supported (argument 'padding')")
    if any(p < 0 for p in output_padding):
        raise ArgumentValueError(f"{op.name}(): negative output_padding is not supported")
    if any(d <= 0 for d in dilation):
        raise ArgumentValueError(f"{op.name}(): dilation should be greater than zero (argument 'dilation')")
    if groups <= 0:
        raise ArgumentValueError(f"{op.name}(): non-positive groups is not supported (argument 'groups')")
    if bias is not None:
        check_tensor(op, bias, "bias")
    if w[0] < groups:
        raise ShapeError(f"{op.name}(): Given groups={groups}, expected weight to be at least {groups} at "
                         f"dimension 0, but got weight of size {list(w)} instead")
    if transposed:
        if x[1] != w[0]:
            raise ShapeError(f"{op.name}(): Given transposed=1, weight of size {list(w)}, expected input{list(x)} "
                             f"to have {w[0]} channels, but got {x[1]} channels instead (argument 'input')")
        if w[0] % groups:
            raise ShapeError(f"{op.name}(): Given groups={groups}, expected weight to be divisible by {groups} at "
                             f"dimension 0, but got weight of size {list(w)} instead")
        out_c = w[1] * groups
        if any(op_ >= s and op_ >= d for op_, s, d in zip(output_padding, stride, dilation)):
            raise ArgumentValueError(f"{op.name}(): output padding must be smaller than either stride or dilation, "
                                     f"but got output_padding={list(output_padding)}, stride={list(stride)}, "
                                     f"dilation={list(dilation)}")
    else:
        if w[0] % groups:
            raise ShapeError(f"{op.name}(): Given groups={groups}, expected weight to be divisible by {groups} at "
                             f"dimension 0, but got weight of size {list(w)} instead")
        if x[1] != w[1] * groups:
            raise ShapeError(f"{op.name}(): Given groups={groups}, weight of size {list(w)}, expected input{list(x)} "
                             f"to have {w[1] * groups} channels, but got {x[1]} channels instead (argument 'input')")
        out_c = w[0]
        padded = [n + 2 * p for n, p in zip(x[2:], padding)]
        eff = [d * (k - 1) + 1 for k, d in zip(w[2:], dilation)]
        if any(e > n for e, n in zip(eff, padded)):
            raise ShapeError(f"{op.name}(): Calculated padded input size per channel: "
                             f"({' x '.join(map(str, padded))}). Kernel size: ({' x '.join(map(str, eff))}). "
                             "Kernel size can't be greater than actual input size")
    if bias is not None and (len(shape_of(bias)) != 1 or shape_of(bias)[0] != out_c):
        raise ShapeError(f"{op.name}(): Given weight of size {list(w)}, expected bias to be 1-dimensional with "
                         f"{out_c} elements, but got bias of size {list(shape_of(bias))} instead")
    out_dtype = _conv_dtype(op, numel(x) > 0, input, weight, bias, transposed, any(d > 1 for d in dilation))
    if not numel(x) and x[0] and x[1]:
        raise ShapeError(f"{op.name}(): Only zero batch or zero channel inputs are supported, but got input shape: "
                         f"{list(x)}")
    spatial = tuple(conv_output_size(n, k, s, p, d, transposed, o)
                    for n, k, s, p, d, o in zip(x[2:], w[2:], stride, padding, dilation, output_padding))
    if any(n <= 0 for n in spatial) and numel(x):
        raise ShapeError(f"{op.name}(): Given input size per channel: {list(x[2:])}, calculated output size per "
                         f"channel: {list(spatial)}. Output size is too small")
    return ((x[0], out_c) + spatial, out_dtype)


def _conv_dtype(op, nonempty: bool, input, weight, bias, transposed: bool, dilated: bool) -> _dt.dtype:
    """A convolution's result dtype, once its shapes are checked. torch's kernels check the input's dtype (those
    without an integer kernel: transposed and dilated ones, and every bool), then the weight's and the bias's; an
    empty input reaches only the bias's check, and its result is the weight times zero (promoted) for a
    convolution, the input's dtype for a transposed one."""
    if nonempty:
        if input._dtype is _dt.bool or transposed or dilated:
            kernel = "slow_conv_transpose2d_cpu" if transposed else "slow_conv_dilated<>" if dilated else "slow_conv2d_cpu"
            _check_float(op, input, kernel)
        if input._dtype is not weight._dtype:
            raise DTypeError(f"{op.name}(): Input type ({type_name(input._dtype)}) and weight type "
                             f"({type_name(weight._dtype)}) should be the same")
    if bias is not None and bias._dtype is not input._dtype:
        raise DTypeError(f"{op.name}(): Input type ({type_name(input._dtype)}) and bias type "
                         f"({type_name(bias._dtype)}) should be the same")
    if nonempty:
        _check_float(op, input, "slow_conv2d_cpu")
        return input._dtype
    return input._dtype if transposed else promote_types(input._dtype, weight._dtype)


def conv_unbatched(op, input, weight, nd: int) -> bool:
    """Whether conv{nd}d gets an unbatched input (nd + 1 dims); errors for other ranks."""
    check_tensor(op, input, "input")
    check_tensor(op, weight, "weight")
    r = len(shape_of(input))
    if r not in (nd + 1, nd + 2):
        raise ShapeError(f"{op.name}(): Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                         f"{op.name.split('.')[0]}, but got input of size: {list(shape_of(input))}")
    return r == nd + 1


def _conv_wrapper(nd: int, transposed: bool, string_padding: bool = False):
    def rule(op, input, weight, bias=None, stride=1, padding=0, *rest):
        unbatched = conv_unbatched(op, input, weight, nd)
        if transposed:
            output_padding, groups, dilation = (list(rest) + [0, 1, 1][len(rest):])[:3]
        else:
            dilation, groups = (list(rest) + [1, 1][len(rest):])[:2]
            output_padding = 0
        if string_padding or isinstance(padding, str):     # the overloads bind alike: either may get a str
            if padding not in ("same", "valid"):
                raise ArgumentValueError(f"{op.name}(): Invalid padding string: '{padding}'")
            if padding == "same" and any(s != 1 for s in int_tuple(op, stride, nd, "stride")):
                raise ArgumentValueError(f"{op.name}(): padding='same' is not supported for strided convolutions")
            pad = 0
        else:
            pad = padding
        x = (1,) + shape_of(input) if unbatched else shape_of(input)
        if padding == "same" and len(shape_of(weight)) == nd + 2:       # as the decomposition pads: see same_padding
            pad, extra = same_padding(shape_of(weight)[2:], int_tuple(op, dilation, nd, "dilation"))
            x = x[:2] + tuple(n + e for n, e in zip(x[2:], extra))
        spec = conv_spec(op, x, input, weight, bias, stride, pad, dilation, transposed, output_padding, groups)
        return (spec[0][1:] if unbatched else spec[0], spec[1])
    return rule


def same_padding(kernel, dilation) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """padding="same" as (zeros on both sides, one more zero on the right) per spatial dimension: each
    dimension gets dilation * (kernel - 1) zeros in all, the odd one on the right, as torch pads."""
    total = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return tuple(t // 2 for t in total), tuple(t % 2 for t in total)


_CONV1D, _CONV2D = _conv_wrapper(1, False), _conv_wrapper(2, False)
_CONV1D_PAD, _CONV2D_PAD = _conv_wrapper(1, False, True), _conv_wrapper(2, False, True)
_CONV_T1D, _CONV_T2D = _conv_wrapper(1, True), _conv_wrapper(2, True)
_CONV3D, _CONV3D_PAD, _CONV_T3D = _conv_wrapper(3, False), _conv_wrapper(3, False, True), _conv_wrapper(3, True)


@shape_rule("conv1d")
def conv1d(op, *args):
    return _CONV1D(op, *args)


@shape_rule("conv2d")
def conv2d(op, *args):
    return _CONV2D(op, *args)


@shape_rule("conv1d_padding")
def conv1d_padding(op, *args):
    return _CONV1D_PAD(op, *args)


@shape_rule("conv2d_padding")
def conv2d_padding(op, *args):
    return _CONV2D_PAD(op, *args)


@shape_rule("conv_transpose1d")
def conv_transpose1d(op, *args):
    return _CONV_T1D(op, *args)


@shape_rule("conv_transpose2d")
def conv_transpose2d(op, *args):
    return _CONV_T2D(op, *args)


@shape_rule("conv3d")
def conv3d(op, *args):
    return _CONV3D(op, *args)


@shape_rule("conv3d_padding")
def conv3d_padding(op, *args):
    return _CONV3D_PAD(op, *args)


@shape_rule("conv_transpose3d")
def conv_transpose3d(op, *args):
    return _CONV_T3D(op, *args)


# ---------------------------------------------------------------------------------- pooling
def pool_output_size(n, k, s, p, d, ceil_mode) -> int:
    """ATen's pooling_output_shape (the last window must start inside the left-padded input)."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_param(op, value, n, arg, what, *, allow_empty=False):
    vals = check_int_list(op, value, arg)
    if allow_empty and not vals:
        return None
    if len(vals) not in (1, n):
        name = op.name.split(".")[0]
        raise ArgumentValueError(f"{op.name}(): {name}: {arg} must {what}")
    return vals * n if len(vals) == 1 else vals


def pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode, nd=2, *, check_pad=True):
    """(batch dims, channels, spatial in, kernel, stride, padding, dilation, spatial out) after ATen's checks."""
    check_tensor(op, self, "input")
    n_word = {1: "one", 2: "two", 3: "three"}[nd]
    kernel = _pool_param(op, kernel_size, nd, "kernel_size", f"either be a single int, or a tuple of {n_word} ints")
    stride = _pool_param(op, stride, nd, "stride", f"either be omitted, a single int, or a tuple of {n_word} ints",
                         allow_empty=True) or kernel
    padding = _pool_param(op, padding, nd, "padding", f"either be a single int, or a tuple of {n_word} ints")
    dilation = _pool_param(op, dilation, nd, "dilation", f"either be a single int, or a tuple of {n_word} ints")
    shape = shape_of(self)
    if len(shape) not in (nd + 1, nd + 2) or any(n == 0 for n in shape[-nd - 1:]) and len(shape) == nd + 1 or \
            (len(shape) == nd + 2 and any(n == 0 for n in shape[1:])):
        raise ShapeError(f"{op.name}(): Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim batch "
                         f"size for input, but got: {list(shape)} (argument 'input')")
    if any(k <= 0 for k in kernel):
        raise ArgumentValueError(f"{op.name}(): kernel_size should be greater than zero, but got {list(kernel)}")
    if any(s <= 0 for s in stride):
        raise ArgumentValueError(f"{op.name}(): stride should be greater than zero, but got {list(stride)}")
    if any(d <= 0 for d in dilation):
        raise ArgumentValueError(f"{op.name}(): dilation should be greater than zero, but got {list(dilation)}")
    if check_pad and any(p < 0 or p > k // 2 for p, k in zip(padding, kernel)):
        raise ArgumentValueError(f"{op.name}(): pad should be at most half of effective kernel size, but got "
                                 f"padding={list(padding)}, kernel_size={list(kernel)} (argument 'padding')")
    spatial = shape[-nd:]
    out = tuple(pool_output_size(n, k, s, p, d, ceil_mode)
                for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation))
    if any(o < 1 for o in out):
        raise ShapeError(f"{op.name}(): Given input size: ({'x'.join(map(str, shape[-nd - 1:]))}). Calculated output "
                         f"size: ({'x'.join(map(str, shape[-nd - 1:-nd] + out))}). Output size is too small")
    return shape[:-nd] + out


@shape_rule("max_pool2d_with_indices", reads=("dtypes",))
def max_pool2d_with_indices(op, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    out = pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode)
    check_kernel_dtype(op, self._dtype)
    return ((out, self._dtype), (out, _dt.int64))


@shape_rule("max_pool2d", reads=("dtypes",))
def max_pool2d(op, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return max_pool2d_with_indices(op, self, kernel_size, stride, padding, dilation, ceil_mode)[0]


@shape_rule("max_pool1d", reads=("dtypes",))
def max_pool1d(op, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    out = pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode, nd=1)
    check_kernel_dtype(op, self._dtype)
    return (out, self._dtype)


def _avg_dtype_check(op, self):
    if self._dtype is _dt.bool or self._dtype is _dt.uint8:
        raise MissingKernelError(f'{op.name}(): "{op.name.split(".")[0]}" not implemented for '
                                 f"'{type_name(self._dtype)}'")


@shape_rule("avg_pool2d")
def avg_pool2d(op, self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    check_tensor(op, self, "input")
    if len(shape_of(self)) < 3:          # ATen reads input.size(-3) first
        raise DimensionError(f"{op.name}(): Dimension out of range (expected to be in range of "
                             f"[{-max(len(shape_of(self)), 1)}, {max(len(shape_of(self)), 1) - 1}], but got -3)")
    out = pool_geometry(op, self, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and as_int(op, divisor_override, "divisor_override") == 0:
        raise ArgumentValueError(f"{op.name}(): divisor must be not zero (argument 'divisor_override')")
    _avg_dtype_check(op, self)
    return (out, self._dtype)


@shape_rule("avg_pool1d")
def avg_pool1d(op, self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    out = pool_geometry(op, self, kernel_size, stride, padding, 1, ceil_mode, nd=1)
    _avg_dtype_check(op, self)
    return (out, self._dtype)


def _adaptive(op, self, output_size, nd):
    check_tensor(op, self, "input")
    shape = shape_of(self)
    name = op.name.split(".")[0].lstrip("_")
    sizes = check_int_list(op, output_size, "output_size")
    if not isinstance(output_size, (tuple, list)):          # an int[nd]: one int stands for nd of them
        sizes *= nd
    if len(sizes) != nd:
        raise ArgumentValueError(f"{op.name}(): {name}: output_size must be {nd}")
    if len(shape) not in (nd + 1, nd + 2):
        raise ShapeError(f"{op.name}(): {name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(shape)} "
                         "(argument 'input')")
    # torch checks every dimension but the first (batched or not) in 3-d; in 2-d (and 1-d, pooled as 2-d with a
    # height of 1) only the pooled ones
    for i in range(1 if nd == 3 else len(shape) - nd, len(shape)):
        if shape[i] == 0:
            raise ShapeError(f"{op.name}(): {name}(): Expected input to have non-zero size for non-batch "
                             f"dimensions, but input has sizes {list(shape)} with dimension {i} being empty")
    if any(s < 0 for s in sizes):
        raise ArgumentValueError(f"{op.name}(): {name}: elements of output_size must be greater than or equal to 0 "
                                 f"but received {list(sizes)}")
    _check_float(op, self, name)
    return (shape[:-nd] + tuple(sizes), self._dtype)


@shape_rule("_adaptive_avg_pool2d")
def adaptive_avg_pool2d(op, self, output_size):
    return _adaptive(op, self, output_size, 2)


def is_global_pool(output_size) -> bool:
    """Whether a 2-d adaptive pooling's output size is 1 x 1 (an int stands for both)."""
    return output_size == 1 or isinstance(output_size, (list, tuple)) and list(output_size) == [1, 1]


@shape_rule("adaptive_avg_pool2d")
def adaptive_avg_pool2d_public(op, self, output_size):
    """torch's adaptive_avg_pool2d: to 1 x 1 it is the mean over the last two dims (any rank from 2 on, mean's
    checks); otherwise _adaptive_avg_pool2d."""
    if not is_global_pool(output_size):
        return adaptive_avg_pool2d(op, self, output_size)
    check_tensor(op, self, "input")
    shape = shape_of(self)
    wrap_dim(op, -2, len(shape))
    if not self._dtype.is_floating_point:
        raise DTypeError(f"{op.name}(): mean(): could not infer output dtype. Input dtype must be either a floating "
                         f"point or complex dtype. Got: {type_name(self._dtype)}")
    return (shape[:-2] + (1, 1), self._dtype)


@shape_rule("adaptive_avg_pool1d")
def adaptive_avg_pool1d(op, self, output_size):
    return _adaptive(op, self, output_size, 1)


# ------------------------------------------------------------------------------ max unpooling
def _max_unpool(nd: int):
    def rule(op, self, indices, output_size, stride=None, padding=None):
        """(N, C, *output_size) or unbatched (C, *output_size): torch's checks, in its order."""
        check_tensor(op, self, "input")
        check_tensor(op, indices, "indices")
        sizes = check_int_list(op, output_size, "output_size")
        output_size = sizes if isinstance(output_size, (tuple, list)) else sizes * nd     # an int[nd]: one int
        if len(output_size) != nd:
            what = "three elements (depth, height, width)" if nd == 3 else "two elements (height, width)"
            raise ShapeError(f"{op.name}(): There should be exactly {what} in output_size, but got "
                             f"{len(output_size)} elements.")
        bad = next((i for i, n in enumerate(output_size) if n < 0), None)
        if bad is not None:
            raise ArgumentValueError(f"{op.name}(): max_unpooling{nd}d(): output_size must contain non-negative "
                                     f"spatial dimensions, but got output_size[{bad}]={output_size[bad]}")
        shape = shape_of(self)
        if len(shape) not in (nd + 1, nd + 2):
            raise ShapeError(f"{op.name}(): Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor, "
                             f"but got a tensor with {len(shape)} dimensions.")
        if indices._dtype is not _dt.int64:
            raise DTypeError(f"{op.name}(): elements in indices should be type int64 but got: "
                             f"{type_name(indices._dtype)}")
        if shape_of(indices) != shape:
            raise ShapeError(f"{op.name}(): Expected shape of indices to be same as that of the input tensor "
                             f"({list(shape)}) but got indices tensor with shape: {list(shape_of(indices))}")
        if nd == 3:                 # the 3-d op takes the pooling's stride and padding, which torch checks
            stride, padding = (check_int_list(op, v, name) * (1 if isinstance(v, (tuple, list)) else 3)
                               for v, name in ((stride, "stride"), (padding, "padding")))   # an int: 3 of them
            for name, values in (("stride", stride), ("padding", padding)):
                if len(values) != 3:
                    raise ShapeError(f"{op.name}(): There should be exactly three elements (depth, height, width) in "
                                     f"{name}, but got: {len(values)} elements.")
            if min(stride) <= 0:
                raise ArgumentValueError(f"{op.name}(): strides should be greater than zero, but got stride: "
                                         f"{list(stride)}")
        check_kernel_dtype(op, self._dtype)
        return (tuple(shape[:-nd]) + tuple(output_size), self._dtype)
    return rule


_UNPOOL2D, _UNPOOL3D = _max_unpool(2), _max_unpool(3)


@shape_rule("max_unpool2d", reads=("dtypes",))
def max_unpool2d(op, *args):
    return _UNPOOL2D(op, *args)


@shape_rule("max_unpool3d", reads=("dtypes",))
def max_unpool3d(op, *args):
    return _UNPOOL3D(op, *args)
