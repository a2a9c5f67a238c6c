"""Shape rules of float_power (a float64 pointwise result) and of the scans logcumsumexp, cummax and cummin."""
from __future__ import annotations

from ember.core import dtype as _dt
from ember.core.errors import MissingKernelError

from . import shape_rule
from .common import check_tensor, type_name, wrap_dim
from .pointwise import pointwise


@shape_rule("float_power")
def float_power(op, self, exponent):
    """The operands' broadcast shape and layout, and float64 whatever their dtypes."""
    spec = pointwise(op, self, exponent)
    return (spec[0], _dt.float64) + tuple(spec[2:])


def _scan(op, self, dim):
    check_tensor(op, self, "input")
    wrap_dim(op, dim, len(self._data.shape))


@shape_rule("logcumsumexp")
def logcumsumexp(op, self, dim):
    """The input's shape and floating dtype (torch's kernel has no integer or bool form), contiguous."""
    _scan(op, self, dim)
    if not self._dtype.is_floating_point:
        raise MissingKernelError(f'{op.name}(): "logcumsumexp_out_cpu" not implemented for \'{type_name(self._dtype)}\'')
    return (tuple(self._data.shape), self._dtype)


@shape_rule("cummax")
def cummax(op, self, dim):
    """cummax and cummin: (values in the input's dtype, int64 indices), each of the input's shape, contiguous."""
    _scan(op, self, dim)
    shape = tuple(self._data.shape)
    return ((shape, self._dtype), (shape, _dt.int64))
