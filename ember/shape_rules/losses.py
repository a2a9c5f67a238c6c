"""Shape rules of losses, linear, cosine_similarity and scaled_dot_product_attention.

Losses take ATen's `reduction` enum (0 none, 1 mean, 2 sum): "none" keeps the elementwise
(or per-sample) shape, the others give a 0-d result. Checks that need the data (targets out
of range, probabilities outside [0, 1]) run in the decompositions, not here.
"""
from __future__ import annotations

from ember.core.errors import ArgumentListError, ArgumentTypeError, ArgumentValueError, DimensionError, DTypeError, \
    MissingKernelError, ShapeError
from ember.core import dtype as _dt
from ember.core.spec import TensorSpec
from ember.core.type_promotion import computation_dtype, promote_types, result_type

from . import shape_rule
from .common import NUMBER_TYPES, as_int, broadcast_shapes, check_int_list, check_kernel_dtype, check_tensor, \
    iterator_strides, type_name, with_layout, wrap_dim

def check_reduction(op, reduction) -> int:
    reduction = as_int(op, reduction, "reduction")
    if reduction not in (0, 1, 2):
        raise ArgumentValueError(f"{op.name}(): argument 'reduction' must be 0 (none), 1 (mean) or 2 (sum), "
                                 f"got {reduction}")
    return reduction


def _optional_tensor(op, value, arg):
    if value is not None:
        check_tensor(op, value, arg)
    return value


# ------------------------------------------------------------------ elementwise losses
# One rule per argument layout; the dtypes each kernel takes (and the kernel PyTorch's error
# names) come from the registry's `dtypes`.
def _loss_tensors(op, self, target, *optional):
    """The tensor arguments, checked: input, target and the optional (tensor, name) pairs given."""
    check_tensor(op, self, "input")
    check_tensor(op, target, "target")
    for t, arg in optional:
        _optional_tensor(op, t, arg)
    return [self, target] + [t for t, _ in optional if t is not None]


def _float_param(op, value, arg: str):
    if not isinstance(value, NUMBER_TYPES):
        raise ArgumentTypeError(f"{op.name}(): argument '{arg}' must be float, not {type(value).__name__}")
    return value


def _loss_spec(op, tensors, dtype, reduction, *, contiguous=False):
    """The broadcast elementwise result, or a 0-d one for the mean and sum reductions. `contiguous`:
    a composite in PyTorch (its result is a plain contiguous tensor)."""
    shape = broadcast_shapes(op, [t._data.shape for t in tensors])
    return _reduced(op, tensors, shape, dtype, reduction, contiguous)


def _reduced(op, tensors, shape, dtype, reduction, contiguous=False):
    if reduction != 0:
        return ((), dtype)
    if contiguous:
        return (shape, dtype)
    return with_layout(shape, dtype, iterator_strides(shape, tensors, [dtype] * len(tensors)))


@shape_rule("pointwise_loss", reads=("dtypes",))
def pointwise_loss(op, self, target, reduction=1):
    """mse_loss: elementwise, then reduced."""
    tensors = _loss_tensors(op, self, target)
    reduction = check_reduction(op, reduction)
    dtype = result_type(*tensors)
    check_kernel_dtype(op, dtype)
    return _loss_spec(op, tensors, dtype, reduction)


@shape_rule("l1_loss")
def l1_loss(op, self, target, reduction=1):
    tensors = _loss_tensors(op, self, target)
    reduction = check_reduction(op, reduction)
    dtype = result_type(*tensors)
    if not dtype.is_floating_point:
        raise DTypeError(f"{op.name}(): mean(): could not infer output dtype. Input dtype must be either a "
                         f"floating point or complex dtype. Got: {type_name(dtype)}")
    return _loss_spec(op, tensors, dtype, reduction)


@shape_rule("smooth_l1_loss", reads=("dtypes",))
def smooth_l1_loss(op, self, target, reduction=1, beta=1.0):
    tensors = _loss_tensors(op, self, target)
    reduction = check_reduction(op, reduction)
    if not _float_param(op, beta, "beta") >= 0:      # NaN too, as torch
        raise ArgumentValueError(f"{op.name}(): smooth_l1_loss does not support negative values for beta "
                                 f"(got beta={beta}).")
    dtype = result_type(*tensors)
    check_kernel_dtype(op, dtype)
    return _loss_spec(op, tensors, dtype, reduction)


@shape_rule("huber_loss", reads=("dtypes",))
def huber_loss(op, self, target, reduction=1, delta=1.0):
    tensors = _loss_tensors(op, self, target)
    reduction = check_reduction(op, reduction)
    if not _float_param(op, delta, "delta") > 0:         # NaN too, as torch's check reads it
        raise ArgumentValueError(f"{op.name}(): huber_loss does not support non-positive values for delta "
                                 f"(got delta={delta}).")
    dtype = result_type(*tensors)
    if self._dtype.is_floating_point:
        dtype = self._dtype                       # PyTorch's huber_loss keeps the input's dtype
    check_kernel_dtype(op, dtype)
    return _loss_spec(op, tensors, dtype, reduction)


@shape_rule("binary_cross_entropy", reads=("dtypes",))
def binary_cross_entropy(op, self, target, weight=None, reduction=1):
    tensors = _loss_tensors(op, self, target, (weight, "weight"))
    reduction = check_reduction(op, reduction)
    dtype = result_type(*tensors)
    for t, arg in ((target, "target"), (weight, "weight")):      # before the kernel's dtypes, as torch
        if t is not None and t._dtype is not self._dtype:
            raise DTypeError(f"{op.name}(): expected {arg} to have the input's dtype {type_name(self._dtype)}, "
                             f"but got {type_name(t._dtype)}")
    check_kernel_dtype(op, dtype)
    # the op broadcasts (torch's kernel resizes its input-shaped output to the broadcast shape); the size check
    # is nn.functional's
    shape = broadcast_shapes(op, [t._data.shape for t in tensors])
    return _reduced(op, tensors, shape, dtype, reduction)


@shape_rule("binary_cross_entropy_with_logits", reads=("dtypes",))
def binary_cross_entropy_with_logits(op, self, target, weight=None, pos_weight=None, reduction=1):
    tensors = _loss_tensors(op, self, target, (weight, "weight"), (pos_weight, "pos_weight"))
    reduction = check_reduction(op, reduction)
    dtype = result_type(*tensors)
    check_kernel_dtype(op, dtype)
    shape = broadcast_shapes(op, [t._data.shape for t in tensors])
    if tuple(shape) != tuple(target._data.shape):
        # torch's composite writes the result into a target-shaped temporary (the size check is nn.functional's)
        raise ShapeError(f"{op.name}(): output with shape {list(target._data.shape)} doesn't match the broadcast "
                         f"shape {list(shape)}")
    return _reduced(op, tensors, shape, dtype, reduction, contiguous=True)   # a composite in PyTorch


@shape_rule("kl_div")
def kl_div(op, self, target, reduction=1, log_target=False):
    tensors = _loss_tensors(op, self, target)
    reduction = check_reduction(op, reduction)
    dtype = result_type(*tensors)
    integral = next((t for t in tensors if not t._dtype.is_floating_point), None)     # either operand, as torch
    if integral is not None:
        raise DTypeError(f"{op.name}(): kl_div: Integral inputs not supported (input dtype "
                         f"{type_name(integral._dtype)}).")
    return _loss_spec(op, tensors, dtype, reduction, contiguous=True)        # a composite in PyTorch


def _check_class_target(op, self, target, weight, allow_probs=False, nll_2d=False):
    """nll_loss/cross_entropy with class indices: target is input without the class dimension.
    `nll_2d`: nll_loss's own errors (a batch size mismatch is a ShapeError)."""
    shape, tshape = tuple(self._data.shape), tuple(target._data.shape)
    if allow_probs and not self._dtype.is_floating_point:     # cross_entropy's log_softmax runs first
        raise MissingKernelError(f'{op.name}(): "log_softmax_lastdim_kernel_impl" not implemented for '
                                 f'\'{type_name(self._dtype)}\'')
    if len(shape) == 0:
        raise ShapeError(f"{op.name}(): input tensor should be 1D or 2D (got a 0-d input)")
    if target._dtype not in (_dt.int64, _dt.uint8):
        raise DTypeError(f"{op.name}(): expected target dtype to be Long or Byte, but got "
                         f"{type_name(target._dtype)}")
    classes = shape[1] if len(shape) >= 2 else shape[0]
    if len(shape) == 1:
        if len(tshape) > 1 or (len(tshape) == 1 and tshape[0] != 1):
            raise ShapeError(f"{op.name}(): 0D or 1D target tensor expected, multi-target not supported "
                             f"(target shape {list(tshape)})")
    else:
        if len(tshape) == 0 or tshape[0] != shape[0]:
            got = tshape[0] if tshape else "a 0-d target"
            if nll_2d and not tshape:       # torch's kernel reads the target's size 0
                raise DimensionError(f"{op.name}(): Dimension specified as 0 but tensor has no dimensions "
                                     "(argument 'target')")
            if nll_2d:
                raise ShapeError(f"{op.name}(): size mismatch (got input: {list(shape)}, target: {list(tshape)}): "
                                 f"batch_size {shape[0]} != {got}")
            raise ArgumentListError(f"{op.name}(): Expected input batch_size ({shape[0]}) to match target "
                                    f"batch_size ({got}).")
        if len(shape) == 2 and len(tshape) != 1:
            raise ShapeError(f"{op.name}(): 0D or 1D target tensor expected, multi-target not supported "
                             f"(target shape {list(tshape)})")
        if len(shape) > 2 and tshape != shape[:1] + shape[2:]:
            raise ShapeError(f"{op.name}(): expected target of shape {list(shape[:1] + shape[2:])} for input of "
                             f"shape {list(shape)}, but got target of shape {list(tshape)}")
    if weight is not None and (weight._data.ndim != 1 or weight._data.shape[0] != classes):
        raise ShapeError(f"{op.name}(): weight tensor should be defined either for all {classes} classes or no "
                         f"classes but got weight tensor of shape: {list(weight._data.shape)}")
    if not self._dtype.is_floating_point:        # nll_loss's kernel, once the shapes are checked
        raise MissingKernelError(f'{op.name}(): "nll_loss_out_frame" not implemented for \'{type_name(self._dtype)}\'')
    if weight is not None and weight._dtype is not self._dtype:
        raise DTypeError(f"{op.name}(): expected weight to have dtype {type_name(self._dtype)}, but got "
                         f"{type_name(weight._dtype)}")
    return shape[:1] + shape[2:] if len(shape) >= 2 else ()


def _nll_args(op, self, target, weight, reduction, ignore_index) -> int:
    check_tensor(op, self, "input")
    check_tensor(op, target, "target")
    _optional_tensor(op, weight, "weight")
    reduction = check_reduction(op, reduction)
    as_int(op, ignore_index, "ignore_index")
    return reduction


@shape_rule("nll_loss")
def nll_loss(op, self, target, weight=None, reduction=1, ignore_index=-100):
    """nll_loss: a 1-D or 2-D input."""
    reduction = _nll_args(op, self, target, weight, reduction, ignore_index)
    if self._data.ndim > 2:
        raise ShapeError(f"{op.name}(): input tensor should be 1D or 2D (got {self._data.ndim}-D; nll_loss_nd "
                         "takes more dimensions)")
    out = _check_class_target(op, self, target, weight, nll_2d=True)
    return (out if reduction == 0 else (), self._dtype)


@shape_rule("nll_loss_nd")
def nll_loss_nd(op, self, target, weight=None, reduction=1, ignore_index=-100):
    """nll_loss_nd: any input of at least one dimension (N, C, d1, ...)."""
    reduction = _nll_args(op, self, target, weight, reduction, ignore_index)
    out = _check_class_target(op, self, target, weight)
    return (out if reduction == 0 else (), self._dtype)


@shape_rule("nll_loss_backward")
def nll_loss_backward(op, grad_output, target, weight, self_size, reduction, ignore_index):
    """nll_loss_nd's gradient: shaped `self_size`, of grad_output's (floating) dtype; grad_output holds
    one value (mean, sum) or one per target (none), and target is `self_size` without the class dim."""
    check_tensor(op, grad_output, "grad_output")
    check_tensor(op, target, "target")
    _optional_tensor(op, weight, "weight")
    size = check_int_list(op, self_size, "self_size")
    reduction = check_reduction(op, reduction)
    as_int(op, ignore_index, "ignore_index")
    dtype = grad_output._dtype
    if not dtype.is_floating_point or (weight is not None and weight._dtype is not dtype):
        raise DTypeError(f"{op.name}(): expected a floating-point grad_output and a weight of its dtype, got "
                         f"{type_name(dtype)}" + (f" and {type_name(weight._dtype)}" if weight is not None else ""))
    if target._dtype not in (_dt.int64, _dt.uint8):
        raise DTypeError(f"{op.name}(): expected target dtype to be Long or Byte, but got {type_name(target._dtype)}")
    if not size:
        raise ShapeError(f"{op.name}(): self_size must have at least one dimension, got []")
    per_target = size[:1] + size[2:] if len(size) >= 2 else ()
    tshape, gshape = tuple(target._data.shape), tuple(grad_output._data.shape)
    if tshape != per_target and not (len(size) == 1 and tshape == (1,)):
        raise ShapeError(f"{op.name}(): expected target of shape {list(per_target)} for self_size {list(size)}, "
                         f"but got target of shape {list(tshape)}")
    if gshape != (per_target if reduction == 0 else ()):
        raise ShapeError(f"{op.name}(): expected grad_output of shape {list(per_target if reduction == 0 else ())}, "
                         f"but got {list(gshape)}")
    classes = size[1] if len(size) >= 2 else size[0]
    if weight is not None and tuple(weight._data.shape) != (classes,):
        raise ShapeError(f"{op.name}(): weight tensor should be defined either for all {classes} classes or no "
                         f"classes but got weight tensor of shape: {list(weight._data.shape)}")
    return (size, dtype)


@shape_rule("cross_entropy")
def cross_entropy(op, self, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    if not (isinstance(self, TensorSpec) and isinstance(target, TensorSpec) and (weight is None or isinstance(weight, TensorSpec))):
        check_tensor(op, self, "input")             # the error names the argument
        check_tensor(op, target, "target")
        _optional_tensor(op, weight, "weight")
    reduction = check_reduction(op, reduction)
    as_int(op, ignore_index, "ignore_index")
    if not isinstance(label_smoothing, NUMBER_TYPES):
        raise ArgumentTypeError(f"{op.name}(): argument 'label_smoothing' must be float, not "
                                f"{type(label_smoothing).__name__}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentValueError(f"{op.name}(): label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if target._dtype.is_floating_point:
        shape = tuple(self._data.shape)
        if not self._dtype.is_floating_point:
            raise MissingKernelError(f'{op.name}(): "log_softmax_lastdim_kernel_impl" not implemented for '
                                     f"'{type_name(self._dtype)}'")
        if ignore_index != -100:
            raise ArgumentValueError(f"{op.name}(): ignore_index is not supported for floating point target "
                                     f"(got ignore_index={ignore_index})")
        if tuple(target._data.shape) != shape:
            raise ShapeError(f"{op.name}(): class-probability target of shape {list(target._data.shape)} must have "
                             f"the input's shape {list(shape)}")
        if len(shape) == 0:
            raise ShapeError(f"{op.name}(): input tensor should be 1D or 2D (got a 0-d input)")
        if target._dtype is not self._dtype:
            raise DTypeError(f"{op.name}(): expected target to have dtype {type_name(self._dtype)}, but got "
                             f"{type_name(target._dtype)}")
        classes = shape[1] if len(shape) >= 2 else shape[0]
        if weight is not None and (weight._data.ndim != 1 or weight._data.shape[0] != classes):
            raise ShapeError(f"{op.name}(): weight tensor should be defined either for all {classes} classes or no "
                             f"classes but got weight tensor of shape: {list(weight._data.shape)}")
        out = shape[:1] + shape[2:] if len(shape) >= 2 else ()
    else:
        out = _check_class_target(op, self, target, weight, allow_probs=True)
    return (out if reduction == 0 else (), self._dtype)


@shape_rule("cross_entropy_indices")
def cross_entropy_indices(op, self, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    """(loss, logsumexp): cross_entropy's loss and the logsumexp of `self` along the class dim, in float32
    for float16/bfloat16 logits (as a flash attention's), else in the logits' dtype."""
    shape = tuple(self._data.shape)
    rows = shape[:1] + shape[2:] if len(shape) >= 2 else ()
    return (cross_entropy(op, self, target, weight, reduction, ignore_index, label_smoothing),
            (rows, computation_dtype(self._dtype)))


@shape_rule("linear")
def linear(op, input, weight, bias=None):
    if not (isinstance(input, TensorSpec) and isinstance(weight, TensorSpec) and (bias is None or isinstance(bias, TensorSpec))):
        check_tensor(op, input, "input")            # the error names the argument
        check_tensor(op, weight, "weight")
        _optional_tensor(op, bias, "bias")
    ishape, wshape = tuple(input._data.shape), tuple(weight._data.shape)
    if len(wshape) > 2 or len(wshape) == 0:
        raise ShapeError(f"{op.name}(): weight must be 1-D or 2-D, but got a {len(wshape)}-D tensor")
    if len(ishape) == 0:
        raise ShapeError(f"{op.name}(): input must have at least 1 dimension, but got a 0-d tensor")
    if input._dtype is not weight._dtype:
        raise DTypeError(f"{op.name}(): expected input and weight to have the same dtype, but got: "
                         f"{type_name(input._dtype)} != {type_name(weight._dtype)}")
    if ishape[-1] != wshape[-1]:
        raise ShapeError(f"{op.name}(): input and weight shapes cannot be multiplied ({list(ishape)} and "
                         f"{list(wshape)}: in_features {ishape[-1]} != {wshape[-1]})")
    out = ishape[:-1] + wshape[:-1]
    if bias is not None:
        if bias._dtype is not input._dtype:
            raise DTypeError(f"{op.name}(): expected bias to have dtype {type_name(input._dtype)}, but got "
                             f"{type_name(bias._dtype)}")
        if len(wshape) == 1 and bias._data.ndim > 0 and len(ishape) > 1:
            raise ShapeError(f"{op.name}(): a 1-D weight needs a 0-d bias, got bias of shape "
                             f"{list(bias._data.shape)}")
        bshape = tuple(bias._data.shape)
        if bshape != out[-1:] and broadcast_shapes(op, [bshape, out]) != out:   # (out_features,): broadcasts
            raise ShapeError(f"{op.name}(): bias of shape {list(bshape)} does not broadcast to the "
                             f"output shape {list(out)}")
    return (out, input._dtype)


@shape_rule("cosine_similarity")
def cosine_similarity(op, x1, x2, dim=1, eps=1e-8):
    check_tensor(op, x1, "x1")
    check_tensor(op, x2, "x2")
    if not isinstance(eps, NUMBER_TYPES):
        raise ArgumentTypeError(f"{op.name}(): argument 'eps' must be float, not {type(eps).__name__}")
    common = result_type(x1, x2)
    if not common.is_floating_point:
        raise DTypeError(f"{op.name}(): expected common dtype to be floating point, yet common dtype is "
                         f"{type_name(common)}")
    # torch normalises each operand in its own dtype (an integer one in the common dtype) after broadcasting
    # them, so their product promotes as two full tensors: float16 with a float32 0-d gives float32
    dtype = promote_types(*(t._dtype if t._dtype.is_floating_point else common for t in (x1, x2)))
    shape = broadcast_shapes(op, [tuple(x1._data.shape), tuple(x2._data.shape)])
    d = wrap_dim(op, dim, len(shape))
    return (tuple(s for i, s in enumerate(shape) if i != d), dtype)


def _sdpa_shapes(op, query, key, value, enable_gqa):
    q, k, v = (tuple(t._data.shape) for t in (query, key, value))
    if len(q) < 2 or len(k) < 2 or len(v) < 2:
        raise ShapeError(f"{op.name}(): Expected query, key, and value to all be at least 2 dimensional, but got "
                         f"query.dim: {len(q)} key.dim: {len(k)} and value.dim: {len(v)} instead.")
    if q[-1] != k[-1]:
        raise ShapeError(f"{op.name}(): query and key must have the same embedding size, got {q[-1]} and {k[-1]}")
    if k[-2] != v[-2]:
        raise ShapeError(f"{op.name}(): key and value must have the same sequence length, got {k[-2]} and {v[-2]}")
    kb, vb = k[:-2], v[:-2]
    if enable_gqa and len(q) >= 3 and len(k) >= 3 and len(v) >= 3 and k[-3] != q[-3]:
        if k[-3] == 0 or q[-3] % k[-3] or v[-3] == 0 or q[-3] % v[-3]:
            raise ShapeError(f"{op.name}(): Number of heads in key and value must divide the number of heads in "
                             f"query (query {q[-3]}, key {k[-3]}, value {v[-3]})")
        kb, vb = kb[:-1] + (q[-3],), vb[:-1] + (q[-3],)
    batch = broadcast_shapes(op, [q[:-2], kb, vb])
    return batch, q[-2], k[-2], v[-1]


@shape_rule("scaled_dot_product_attention")
def scaled_dot_product_attention(op, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    for t, arg in ((query, "query"), (key, "key"), (value, "value")):
        check_tensor(op, t, arg)
    _optional_tensor(op, attn_mask, "attn_mask")
    if not (query._dtype is key._dtype is value._dtype):
        raise DTypeError(f"{op.name}(): Expected query, key, and value to have the same dtype, but got query.dtype: "
                         f"{type_name(query._dtype)} key.dtype: {type_name(key._dtype)} and value.dtype: "
                         f"{type_name(value._dtype)} instead.")
    if not query._dtype.is_floating_point:
        raise DTypeError(f"{op.name}(): expected a floating-point query, key and value, got "
                         f"{type_name(query._dtype)}")
    if not isinstance(dropout_p, NUMBER_TYPES) or not 0.0 <= dropout_p <= 1.0:
        raise ArgumentValueError(f"{op.name}(): dropout_p must be a probability in [0, 1], got {dropout_p!r}")
    batch, L, S, Ev = _sdpa_shapes(op, query, key, value, enable_gqa)
    if attn_mask is not None:
        if is_causal:
            raise ArgumentValueError(f"{op.name}(): Explicit attn_mask should not be set when is_causal=True")
        if attn_mask._dtype is not _dt.bool and attn_mask._dtype is not query._dtype:
            raise DTypeError(f"{op.name}(): Expected attn_mask dtype to be bool or float or to match query dtype, "
                             f"but got attn_mask.dtype: {type_name(attn_mask._dtype)} and query.dtype: "
                             f"{type_name(query._dtype)} instead.")
        full = batch + (L, S)
        if broadcast_shapes(op, [tuple(attn_mask._data.shape), full]) != full:
            raise ShapeError(f"{op.name}(): attn_mask of shape {list(attn_mask._data.shape)} does not broadcast to "
                             f"the attention weights' shape {list(full)}")
    return (batch + (L, Ev), query._dtype)
