"""Shape rules of adaptive max pooling, fractional max pooling and the CTC loss.

The checks follow ATen's (AdaptiveMaxPooling2d.cpp, FractionalMaxPool2d.cpp/3d, LossCTC.cpp) in their
order, with their exception classes; each message names the op. The CTC checks that read values of
the lengths run here when the lengths are Python lists; given as tensors they are data, checked by the
decomposition on devices that hold values.
"""
from __future__ import annotations

from ember.core import dtype as _dt
from ember.core.errors import ArgumentValueError, DTypeError, ShapeError

from . import shape_rule
from .common import as_int, check_int_list, check_kernel_dtype, check_tensor, shape_of


def _check_nonempty(op, shape, first: int, name: str, tail: str) -> None:
    for i in range(first, len(shape)):
        if shape[i] == 0:
            raise ShapeError(f"{op.name}(): {name}(): Expected input to have non-zero size for non-batch dimensions, "
                             f"{tail.format(shape=list(shape), i=i)}")


def _ints(op, value, n: int, arg: str) -> tuple[int, ...]:
    """An `int[n]` argument: a list as given (its length checked by the caller), one int repeated n times."""
    if isinstance(value, (list, tuple)):
        return check_int_list(op, value, arg)
    return (as_int(op, value, arg),) * n


def _negative(op, out) -> None:
    bad = next((n for n in out if n < 0), None)
    if bad is not None:
        raise ArgumentValueError(f"{op.name}(): Trying to create tensor with negative dimension {bad}: {list(out)}")


# ---------------------------------------------------------------------------- adaptive max pooling
def _adaptive_max(op, self, output_size, nd: int):
    """((values spec), (indices spec)): the input's leading dims and `output_size`."""
    check_tensor(op, self, "input")
    sizes = _ints(op, output_size, nd, "output_size")
    shape = shape_of(self)
    if nd == 1:
        if len(shape) not in (2, 3):
            raise ShapeError(f"{op.name}(): Expected 2 to 3 dimensions, but got {len(shape)}-dimensional tensor for "
                             "argument #1 'self' (while checking arguments for adaptive_max_pool1d)")
        if len(sizes) != 1:
            raise ArgumentValueError(f"{op.name}(): adaptive_max_pool1d() argument 'output_size' should contain one "
                                     f"int (got {len(sizes)})")
        _check_nonempty(op, shape, 1, "adaptive_max_pool1d",
                        "but input has sizes {shape} with dimension {i} being empty")
    else:
        name = f"adaptive_max_pool{nd}d"
        if len(shape) not in (nd + 1, nd + 2):
            raise ShapeError(f"{op.name}(): {name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(shape)}")
        if len(sizes) != nd:
            raise ArgumentValueError(f"{op.name}(): {name}(): internal error: output_size.size() must be {nd}")
        _check_nonempty(op, shape, 1, name, "but input has sizes {shape} with dimension {i} being empty")
    out = shape[:-nd] + tuple(sizes)
    _negative(op, out)
    check_kernel_dtype(op, self._dtype)
    return ((out, self._dtype), (out, _dt.int64))


@shape_rule("adaptive_max_pool1d", reads=("dtypes",))
def adaptive_max_pool1d(op, self, output_size):
    return _adaptive_max(op, self, output_size, 1)


@shape_rule("adaptive_max_pool2d", reads=("dtypes",))
def adaptive_max_pool2d(op, self, output_size):
    return _adaptive_max(op, self, output_size, 2)


@shape_rule("adaptive_max_pool3d", reads=("dtypes",))
def adaptive_max_pool3d(op, self, output_size):
    return _adaptive_max(op, self, output_size, 3)


# -------------------------------------------------------------------------- fractional max pooling
def _fractional(op, self, kernel_size, output_size, random_samples, nd: int):
    check_tensor(op, self, "input")
    check_tensor(op, random_samples, "random_samples")
    kernel = _ints(op, kernel_size, nd, "kernel_size")
    sizes = _ints(op, output_size, nd, "output_size")
    name = f"fractional_max_pool{nd}d"
    where = "fractional_max_pool2d()" if nd == 2 else "fractional_max_pool3d_out()"
    what = "a single Int or tuple of Ints" if nd == 2 else "a single Int or tuple of three Ints"
    if len(kernel) != nd:
        raise ArgumentValueError(f"{op.name}(): {name}: kernel_size must either be {what}")
    if len(sizes) != nd:
        raise ArgumentValueError(f"{op.name}(): {name}: output_size must either be {what}")
    shape = shape_of(self)
    if len(shape) not in (nd + 1, nd + 2):
        raise ShapeError(f"{op.name}(): {where}: Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(shape)}")
    _check_nonempty(op, shape, 1, where[:-2], "but got{shape} with dimension {i} being empty.")
    batch = shape[0] if len(shape) == nd + 2 else 1
    planes = shape[-nd - 1]
    dims = ("height", "width") if nd == 2 else ("time", "height", "width")
    strict = nd == 3                    # ATen's 3-d check is strict, its 2-d one is not
    for d in range(nd):
        if sizes[d] + kernel[d] - 1 > shape[-nd + d] - strict:
            raise ArgumentValueError(f"{op.name}(): {where}: pool {dims[d]} {kernel[d]} too large relative to input "
                                     f"{dims[d]} {shape[-nd + d]}")
    samples = shape_of(random_samples)
    if len(samples) != 3:
        raise ShapeError(f"{op.name}(): Expect _random_samples to have 3 dimensions, got {len(samples)}")
    if samples[0] < batch:
        raise ShapeError(f"{op.name}(): Expect _random_samples.size(0) no less then input batch size.")
    if samples[1] != planes:
        raise ShapeError(f"{op.name}(): Expect _random_samples.size(1) equals to input channel size.")
    if samples[2] != nd:
        raise ShapeError(f"{op.name}(): Expect _random_samples.size(2) equals to {nd}; got {samples[2]}.")
    if random_samples._dtype is not self._dtype:
        raise DTypeError(f"{op.name}(): Expect _random_samples to have the same dtype as input")
    if min(kernel) < 1:                 # torch's kernel pools empty windows into -inf
        raise ArgumentValueError(f"{op.name}(): {name}: kernel_size must be greater than zero, but got {list(kernel)}")
    out = shape[:-nd] + tuple(sizes)
    _negative(op, out)
    check_kernel_dtype(op, self._dtype)
    return ((out, self._dtype), (out, _dt.int64))


@shape_rule("fractional_max_pool2d", reads=("dtypes",))
def fractional_max_pool2d(op, self, kernel_size, output_size, random_samples):
    return _fractional(op, self, kernel_size, output_size, random_samples, 2)


@shape_rule("fractional_max_pool3d", reads=("dtypes",))
def fractional_max_pool3d(op, self, kernel_size, output_size, random_samples):
    return _fractional(op, self, kernel_size, output_size, random_samples, 3)


# ------------------------------------------------------------------------------------ CTC loss
_FROM = "(while checking arguments for ctc_loss_allocate_outputs)"


def _ctc_common(op, log_probs, targets, blank):
    """(batch, batched): log_probs (T, N, C) or unbatched (T, C), targets 1-d to 3-d, blank a label."""
    check_tensor(op, log_probs, "log_probs")
    check_tensor(op, targets, "targets")
    blank = as_int(op, blank, "blank")
    check_kernel_dtype(op, log_probs._dtype)           # torch's kernel dtypes come before its checks
    shape = shape_of(log_probs)
    if 0 in shape:
        raise ShapeError(f"{op.name}(): log_probs tensor must not be empty")
    batched = len(shape) == 3
    rank = len(shape) + (0 if batched else 1)
    if rank != 3:
        raise ShapeError(f"{op.name}(): Expected 3-dimensional tensor, but got {rank}-dimensional tensor for "
                         f"argument #1 'log_probs' {_FROM}")
    if not 1 <= len(shape_of(targets)) <= 2:
        raise ShapeError(f"{op.name}(): Expected 1 to 2 dimensions, but got {len(shape_of(targets))}-dimensional "
                         f"tensor for argument #2 'targets' {_FROM}")
    if not 0 <= blank < shape[-1]:
        raise ArgumentValueError(f"{op.name}(): blank must be in label range")
    return (shape[1] if batched else 1), batched


def _ctc_spec(op, log_probs, batch, batched, reduction):
    reduction = as_int(op, reduction, "reduction")
    check_kernel_dtype(op, log_probs._dtype)
    if reduction in (1, 2) or not batched:
        return ((), log_probs._dtype)
    return ((batch,), log_probs._dtype)


def check_ctc_lengths(op, targets_shape, input_lengths, target_lengths, max_input: int, batch: int) -> None:
    """Torch's value checks of the lengths (lists of ints) against the targets and the input's length."""
    if len(input_lengths) != batch:
        raise ShapeError(f"{op.name}(): input_lengths must be of size batch_size")
    if len(target_lengths) != batch:
        raise ShapeError(f"{op.name}(): target_lengths must be of size batch_size")
    for n in target_lengths:
        if n < 0:
            raise ArgumentValueError(f"{op.name}(): Expected target_lengths to have value at least 0, but got value "
                                     f"{n} {_FROM}")
    if len(targets_shape) == 1:
        if targets_shape[0] != sum(target_lengths):
            raise ShapeError(f"{op.name}(): Expected tensor to have size {sum(target_lengths)} at dimension 0, but got "
                             f"size {targets_shape[0]} for argument #2 'targets' {_FROM}")
    else:
        if targets_shape[0] != batch:
            raise ShapeError(f"{op.name}(): Expected tensor to have size {batch} at dimension 0, but got size "
                             f"{targets_shape[0]} for argument #2 'targets' {_FROM}")
        longest = max(target_lengths, default=0)
        if targets_shape[1] < longest:
            raise ShapeError(f"{op.name}(): Expected tensor to have size at least {longest} at dimension 1, but got "
                             f"size {targets_shape[1]} for argument #2 'targets' {_FROM}")
    for n in input_lengths:
        if n < 0:
            raise ArgumentValueError(f"{op.name}(): Expected input_lengths to have value at least 0, but got value "
                                     f"{n} {_FROM}")
        if n > max_input:
            raise ArgumentValueError(f"{op.name}(): Expected input_lengths to have value at most {max_input}, but got "
                                     f"value {n} {_FROM}")


@shape_rule("ctc_loss_intlist", reads=("dtypes",))
def ctc_loss_intlist(op, log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
                     zero_infinity=False):
    batch, batched = _ctc_common(op, log_probs, targets, blank)
    il = check_int_list(op, input_lengths, "input_lengths")
    tl = check_int_list(op, target_lengths, "target_lengths")
    check_ctc_lengths(op, shape_of(targets), il, tl, shape_of(log_probs)[0], batch)
    return _ctc_spec(op, log_probs, batch, batched, reduction)


@shape_rule("ctc_loss_tensor", reads=("dtypes",))
def ctc_loss_tensor(op, log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
                    zero_infinity=False):
    check_tensor(op, input_lengths, "input_lengths")
    check_tensor(op, target_lengths, "target_lengths")
    for t, arg in ((input_lengths, "input_lengths"), (target_lengths, "target_lengths")):
        if t._dtype.is_floating_point or t._dtype is _dt.bool:
            raise DTypeError(f"{op.name}(): {arg} must be integral")
    batch, batched = _ctc_common(op, log_probs, targets, blank)
    for t, arg in ((input_lengths, "input_lengths"), (target_lengths, "target_lengths")):
        if len(shape_of(t)) > 1 or (shape_of(t)[0] if shape_of(t) else 1) != batch:
            raise ShapeError(f"{op.name}(): {arg} must be of size batch_size")
    return _ctc_spec(op, log_probs, batch, batched, reduction)
