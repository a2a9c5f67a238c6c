"""Shape rules of random ops built on the Philox fills: bernoulli, multinomial, randperm, dropout, and the
Poisson, Gamma and binomial draws.

Checks that need the data (probabilities outside [0, 1], negative multinomial weights) run
in the decompositions.
"""
from __future__ import annotations

from ember.core.errors import (ArgumentListError, ArgumentTypeError, ArgumentValueError, DTypeError, MissingKernelError,
                                ShapeError)
from ember.core import dtype as _dt

from . import shape_rule
from .common import (NUMBER_TYPES, as_int, broadcast_shapes, check_dtype_arg, check_kernel_dtype,
                     check_no_internal_overlap, check_tensor, preserved_strides, type_name, with_layout)


def _like(self, dtype=None):
    return with_layout(tuple(self._data.shape), dtype or self._dtype, preserved_strides(self))


def _probability(op, p, arg: str = "p", what: str = "bernoulli_ expects p to be in [0, 1]"):
    if not isinstance(p, NUMBER_TYPES):
        raise ArgumentTypeError(f"{op.name}(): argument '{arg}' must be float, not {type(p).__name__}")
    if not 0.0 <= p <= 1.0:
        raise ArgumentValueError(f"{op.name}(): {what}, but got {arg}={p}")
    return p


@shape_rule("bernoulli")
def bernoulli(op, self, generator=None):
    check_tensor(op, self, "input")
    if not self._dtype.is_floating_point:
        raise MissingKernelError(f'{op.name}(): "bernoulli_tensor_cpu_p_" not implemented for '
                                 f"'{type_name(self._dtype)}'")
    return (tuple(self._data.shape), self._dtype)


@shape_rule("bernoulli_p")
def bernoulli_p(op, self, p=0.5, generator=None):
    check_tensor(op, self, "input")
    _probability(op, p)
    if op.inplace_of is not None or op.mutated:
        check_no_internal_overlap(op, self)
        return (self._data.shape, self._dtype)
    return (tuple(self._data.shape), self._dtype)


@shape_rule("multinomial")
def multinomial(op, self, num_samples, replacement=False, generator=None):
    check_tensor(op, self, "input")
    n = as_int(op, num_samples, "num_samples")
    shape = tuple(self._data.shape)
    if len(shape) not in (1, 2):
        raise ShapeError(f"{op.name}(): prob_dist must be 1 or 2 dim, got {len(shape)}")
    if not self._dtype.is_floating_point:
        raise DTypeError(f"{op.name}(): multinomial only supports floating-point dtypes for input, got: "
                         f"{type_name(self._dtype)}")
    if n <= 0:
        raise ArgumentValueError(f"{op.name}(): cannot sample n_sample <= 0 samples (num_samples={n})")
    if not replacement and n > shape[-1]:
        raise ArgumentValueError(f"{op.name}(): cannot sample n_sample > prob_dist.size(-1) samples without "
                                 f"replacement (num_samples={n}, categories={shape[-1]})")
    return (shape[:-1] + (n,), _dt.int64)


# the largest n whose values 0..n-1 a dtype holds exactly (PyTorch's randperm checks)
_RANDPERM_MAX = {"float16": 2049, "bfloat16": 257, "float32": 2 ** 24 + 1, "float64": 2 ** 53 + 1,
                 "uint8": 256, "int8": 128, "int16": 2 ** 15, "int32": 2 ** 31, "int64": 2 ** 63}


@shape_rule("randperm")
def randperm(op, n, generator=None, dtype=None, device=None, requires_grad=False):
    n = as_int(op, n, "n")
    check_dtype_arg(op, dtype)
    out = dtype or _dt.int64
    if n < 0:
        raise ArgumentValueError(f"{op.name}(): Trying to create tensor with negative dimension {n}: [{n}]")
    if out is _dt.bool:
        raise MissingKernelError(f'{op.name}(): "randperm" not implemented for \'Bool\'')
    if n > _RANDPERM_MAX[out.name]:
        raise ArgumentValueError(f"{op.name}(): n cannot be greater than {_RANDPERM_MAX[out.name]} for "
                                 f"{type_name(out)} type (got n={n})")
    return ((n,), out)


def _dropout_checks(op, input, p, train):
    check_tensor(op, input, "input")
    _probability(op, p, "p", "dropout probability has to be between 0 and 1")
    if train is not None and not isinstance(train, bool):
        raise ArgumentTypeError(f"{op.name}(): argument 'train' must be bool, not {type(train).__name__}")
    if (train or train is None) and not input._dtype.is_floating_point:
        raise DTypeError(f"{op.name}(): result type Float can't be cast to the desired output type "
                         f"{type_name(input._dtype)} (dropout in training needs a floating-point input)")


@shape_rule("dropout")
def dropout(op, input, p, train):
    _dropout_checks(op, input, p, train)
    return _like(input)


@shape_rule("dropout_noise")
def dropout_noise(op, input, p, generator=None):
    """(output, noise), both like a floating `input`."""
    _dropout_checks(op, input, p, True)
    return (_like(input), _like(input))


@shape_rule("native_dropout")
def native_dropout(op, input, p, train=None):
    _dropout_checks(op, input, p, train)
    # PyTorch's cpu kernel gives an empty input a mask of the input's dtype (its meta kernel: bool)
    mask_dtype = input._dtype if 0 in tuple(input._data.shape) else _dt.bool
    return (_like(input), _like(input, mask_dtype))


@shape_rule("poisson", reads=("dtypes",))
@shape_rule("standard_gamma", reads=("dtypes",))
def draw_like(op, self, generator=None):
    """A draw per element of `self` (its rate or concentration): its shape and dtype, a floating one."""
    check_tensor(op, self, "input")
    check_kernel_dtype(op, self._dtype)
    return (tuple(self._data.shape), self._dtype)


@shape_rule("standard_gamma_grad", reads=("dtypes",))
def standard_gamma_grad(op, self, output):
    check_tensor(op, self, "input")
    check_tensor(op, output, "output")
    if self._data.shape != output._data.shape or self._dtype is not output._dtype:
        raise ShapeError(f"{op.name}(): expected self and output of one shape and dtype, got {list(self._data.shape)} "
                         f"{type_name(self._dtype)} and {list(output._data.shape)} {type_name(output._dtype)}")
    check_kernel_dtype(op, self._dtype)
    return (tuple(self._data.shape), self._dtype)


@shape_rule("binomial", reads=("dtypes",))
def binomial(op, count, prob, generator=None):
    """A draw per element of `count` and `prob` broadcast, in their dtype. torch's checks in torch's order: each
    floating (ValueError), prob of count's dtype, then the kernel's dtypes (no half types)."""
    check_tensor(op, count, "count")
    check_tensor(op, prob, "prob")
    for name, t in (("count", count), ("prob", prob)):
        if not t._dtype.is_floating_point:
            raise ArgumentListError(f"{op.name}(): binomial only supports floating-point dtypes for {name}, got: "
                                    f"{type_name(t._dtype)}")
    if prob._dtype is not count._dtype:
        raise DTypeError(f"{op.name}(): Found dtype {type_name(prob._dtype)} but expected {type_name(count._dtype)} "
                         "(prob must have count's dtype)")
    check_kernel_dtype(op, count._dtype, " (count and prob must be float32 or float64)")
    return (broadcast_shapes(op, [tuple(count._data.shape), tuple(prob._data.shape)]), count._dtype)
